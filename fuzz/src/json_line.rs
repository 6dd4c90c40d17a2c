//! One line through the framer against `serde_json` and `core::str::from_utf8`.
//!
//! Input layout: byte 0 is the depth limit (`b % 129`), byte 1 where the
//! line is cut in two for a second push (`b · len / 256`), and the rest up to
//! the first `\n` is the line. Seed files are `[128, cut] ++ line`.

use drainpipe_framer::testing::{OwnedEvent, run_split, serde_envelope};
use drainpipe_framer::{Config, JsonErrorKind};
use serde::Deserialize;
use serde::de::IgnoredAny;

/// Header bytes before the line.
pub const HEADER_BYTES: usize = 2;

/// What the oracle says must happen to a line.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Blank,
    NotProtocol,
    Frame,
    Rejected,
}

/// The `json_validation` property, with validation on and off.
pub fn check_json_line(data: &[u8]) {
    let (depth, cut, line) = match data {
        [depth, cut, rest @ ..] => (u32::from(*depth) % 129, usize::from(*cut), rest),
        _ => return,
    };
    let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
    let cut = cut * line.len() / 256;
    let mut stream = line.to_vec();
    stream.push(b'\n');
    for validate in [true, false] {
        let config = Config::default()
            .with_max_depth(depth)
            .with_json_validation(validate);
        let (events, _) = run_split(config, &stream, &[], true);
        let (cut_events, _) = run_split(config, &stream, &[cut, usize::MAX], true);
        assert_eq!(
            events, cut_events,
            "cutting the line at {cut} changed its events"
        );
        check_line_events(line, validate, depth, &events);
    }
}

fn check_line_events(line: &[u8], validate: bool, depth: u32, events: &[OwnedEvent]) {
    let content = line.strip_suffix(b"\r").unwrap_or(line);
    let verdict = verdict(content, validate, depth);
    match (&verdict, events) {
        (Verdict::Blank, []) => {}
        (Verdict::NotProtocol, [OwnedEvent::NotProtocol { line: l, offset: 0 }])
            if l == content => {}
        (
            Verdict::Frame,
            [
                OwnedEvent::Frame {
                    bytes,
                    envelope,
                    offset: 0,
                },
            ],
        ) if bytes == content => {
            if validate {
                assert_eq!(
                    *envelope,
                    serde_envelope(content),
                    "envelope differs from serde_json's view"
                );
            }
        }
        (
            Verdict::Rejected,
            [
                OwnedEvent::Malformed {
                    error, offset: 0, ..
                },
                OwnedEvent::Discarded {
                    offset: 0,
                    len,
                    at_eof: false,
                    well_formed: false,
                    ..
                },
            ],
        ) if *len == line.len() as u64 => {
            assert!(
                error.at <= line.len() as u64,
                "error position {} past the line",
                error.at
            );
            if !validate {
                assert_eq!(
                    error.kind,
                    JsonErrorKind::InvalidUtf8,
                    "without validation only UTF-8 is checked"
                );
            }
            if error.kind == JsonErrorKind::InvalidUtf8 {
                assert!(
                    core::str::from_utf8(content).is_err(),
                    "InvalidUtf8 on valid UTF-8"
                );
            }
        }
        _ => panic!(
            "oracle says {verdict:?} (validation {validate}, depth {depth}) for {:?}\nframer: {events:?}",
            String::from_utf8_lossy(line)
        ),
    }
}

fn verdict(content: &[u8], validate: bool, depth: u32) -> Verdict {
    let Some(&first) = content
        .iter()
        .find(|&&b| !matches!(b, b' ' | b'\t' | b'\r'))
    else {
        return Verdict::Blank;
    };
    if !matches!(first, b'{' | b'[' | b'"') {
        return Verdict::NotProtocol;
    }
    let Ok(text) = core::str::from_utf8(content) else {
        return Verdict::Rejected;
    };
    if !validate {
        return Verdict::Frame;
    }
    if first != b'{' || max_nesting(content) > depth as usize {
        return Verdict::Rejected;
    }
    // Depth is bounded by the scan above (at most 128), so the recursive
    // parser cannot overflow the stack.
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    match IgnoredAny::deserialize(&mut de).and_then(|_| de.end()) {
        Ok(()) => Verdict::Frame,
        Err(_) => Verdict::Rejected,
    }
}

/// The deepest nesting of brackets outside strings. Equal to the JSON
/// nesting depth for valid JSON, which is the only case where it decides
/// anything (invalid JSON is rejected either way).
pub fn max_nesting(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'{' | b'[') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b'}' | b']') => depth = depth.saturating_sub(1),
            (false, _, _) => {}
        }
    }
    deepest
}
