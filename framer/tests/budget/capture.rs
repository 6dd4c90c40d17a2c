//! Bounded capture: counters, bounds and character boundaries.

use super::*;

fn check_capture(input: &[u8], cuts: &[u16], budget: usize) {
    let mut capture = Capture::new(budget);
    let mut rest = input;
    for &cut in cuts {
        let (chunk, tail) = rest.split_at(usize::from(cut).min(rest.len()));
        capture.write(chunk);
        rest = tail;
    }
    capture.write(rest);
    let report = capture.report();
    assert_eq!(report.seen, input.len() as u64);
    assert_eq!(
        report.kept + report.dropped,
        report.seen,
        "counters do not add up"
    );
    assert!(report.kept <= budget as u64);
    assert_eq!(report.truncated, input.len() > budget);
    assert_eq!(report.truncated, capture.truncated());
    let head = capture.head().to_vec();
    let tail = capture.tail();
    assert_eq!((head.len() + tail.len()) as u64, report.kept);
    assert!(input.starts_with(&head) && input.ends_with(&tail));
    if report.truncated {
        // At most one cut character at each end is given up.
        assert!(
            report.kept + 6 >= budget as u64,
            "kept {} of budget {budget}",
            report.kept
        );
    } else {
        assert_eq!([head.as_slice(), tail.as_slice()].concat(), input);
    }
    if std::str::from_utf8(input).is_ok() {
        assert!(
            std::str::from_utf8(&head).is_ok(),
            "head splits a character"
        );
        assert!(
            std::str::from_utf8(&tail).is_ok(),
            "tail splits a character"
        );
    }
    let parts = capture.into_parts();
    assert_eq!((parts.head, parts.tail, parts.report), (head, tail, report));
}

#[test]
fn capture_table() {
    let emoji = "😀".repeat(100);
    let mixed = "aé€😀".repeat(50);
    for input in [
        &b""[..],
        b"short",
        emoji.as_bytes(),
        mixed.as_bytes(),
        &[0xFF; 300],
    ] {
        for budget in [
            0,
            1,
            2,
            3,
            4,
            5,
            7,
            8,
            9,
            63,
            64,
            65,
            input.len().saturating_sub(1),
            input.len(),
            input.len() + 1,
        ] {
            for cuts in [&[][..], &[1, 1, 1], &[3, 5, 7, 11, 13]] {
                check_capture(input, cuts, budget);
            }
        }
    }
    let mut capture = Capture::with_head(10, 2);
    capture.write(b"0123456789abc");
    assert_eq!(
        (capture.head(), capture.tail().as_slice()),
        (&b"01"[..], &b"56789abc"[..])
    );
    let mut capture = Capture::new(10);
    capture.write(b"0123456789");
    assert_eq!(capture.report().to_string(), "kept all 10 bytes");
    assert!(!capture.truncated());
    assert_eq!(capture.render(), "0123456789");
    capture.write(b"X");
    assert_eq!(capture.render(), "01234\n[… 1 bytes omitted …]\n6789X");
    assert_eq!(
        capture.report().to_string(),
        "kept 10 of 11 bytes (1 dropped)"
    );
}

#[test]
fn capture_keeps_draining_gigabytes_in_bounded_memory() {
    let mut capture = Capture::new(4096);
    let chunk = vec![b'y'; 1 << 16];
    for _ in 0..(1 << 14) {
        capture.write(&chunk); // 1 GiB in all
    }
    let report = capture.report();
    assert_eq!(report.seen, 1 << 30);
    assert_eq!(report.kept, 4096);
    assert_eq!(report.dropped, (1 << 30) - 4096);
}

#[test]
fn property_capture_counters_add_up() {
    let seen = [AtomicUsize::new(0), AtomicUsize::new(0)];
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u16>, u16, bool)>()
        .for_each(|(bytes, cuts, budget, utf8)| {
            let input = if *utf8 {
                text_from(bytes).into_bytes()
            } else {
                bytes.clone()
            };
            let cuts: Vec<u16> = cuts.iter().map(|c| c % 64).collect();
            let budget = usize::from(*budget) % 300;
            check_capture(&input, &cuts, budget);
            seen[usize::from(input.len() > budget)].fetch_add(1, Ordering::Relaxed);
        });
    assert_both_outcomes("captures", &seen);
}
