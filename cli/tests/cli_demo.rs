//! `drainpipe demo` as a process: exit code 0 and a report that shows each step.

mod cli_support;

use cli_support::*;

#[test]
fn the_demo_runs_every_step_and_exits_zero() {
    let done = run(&mut drainpipe(&["demo"]), b"", 120);
    assert_eq!(done.code(), 0, "{}\n{}", done.stdout, done.stderr);
    let report = &done.stdout;
    for expected in [
        "1. The hazard",
        "stdout backpressure observed (large id=1)",
        "the write has not finished",
        "2. The fix",
        "the 8 MiB response arrived whole",
        "limit 1 MiB: that request failed",
        "answered the next request in",
        "3. Cancellation during output",
        "a second request answered",
        "4. Session metrics",
        "late responses dropped",
        "Every step behaved as expected",
    ] {
        assert!(
            report.contains(expected),
            "missing {expected:?} in:\n{report}"
        );
    }
    assert!(!report.contains("FAIL"), "{report}");
    assert!(
        !report.contains('\u{1b}'),
        "no colour codes when stdout is not a terminal"
    );
    assert!(
        report.lines().count() < 40,
        "short enough to read: {report}"
    );
    assert!(
        done.elapsed.as_secs() < 30,
        "finishes in seconds: {:?}",
        done.elapsed
    );
}

#[test]
fn the_demo_fails_when_a_step_misbehaves() {
    // A low limit above the response: the rejection step cannot happen.
    let done = run(
        &mut drainpipe(&["demo", "--response", "64KiB", "--low-limit", "1MiB"]),
        b"",
        120,
    );
    assert_eq!(done.code(), 1, "{}", done.stdout);
    assert!(done.stdout.contains("FAIL"), "{}", done.stdout);
    assert!(
        done.stdout.contains("Some step did not behave"),
        "{}",
        done.stdout
    );
}
