//! Property tests of the event-stream framer (bolero; random inputs under
//! plain `cargo test`, coverage guided under `cargo bolero`): the same
//! events under any chunking, the reference parser's events under any
//! chunking and any mix of CRLF, LF and CR line ends.

use drainpipe_framer::sse::SseConfig;
use drainpipe_framer::testing::sse::{SseOutcome, reference_sse, run_sse, sse_outcomes};

/// Pieces that lines are made of: field names, colons and spaces, JSON
/// tokens and whole messages as the SDKs send them, NUL, a BOM, broken
/// UTF-8. Random bytes alone almost never form a field.
const PIECES: &[&[u8]] = &[
    b"data",
    b"data:",
    b"data: ",
    b"id: ",
    b"id:",
    b"event: message",
    b"retry: ",
    b"retry: 1500",
    b":",
    b": ping",
    b" ",
    b"x",
    b"7",
    b"\0",
    b"\xEF\xBB\xBF",
    b"\xc3\xa9",
    b"\xf0\x9f",
    b"\xff",
    b"{",
    b"}",
    b"[1]",
    b"\"",
    b"\"id\":",
    b"\"result\":",
    b",",
    b"{\"result\":{},\"jsonrpc\":\"2.0\",\"id\":1}",
    b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32000}}",
    b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}",
    b"{\"a\":[[[[1]]]]}",
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
];

fn config(selector: u8) -> SseConfig {
    let max = [0, 1, 8, 16, 40, 64, 4096][usize::from(selector % 7)];
    SseConfig::default()
        .with_max_event_bytes(max)
        .with_max_depth(if selector & 0x10 != 0 { 2 } else { 128 })
}

fn lengths(raw: &[u8]) -> Vec<usize> {
    raw.iter().map(|&b| usize::from(b % 17)).collect()
}

/// Lines from a recipe: a byte below 8 ends the line (blank lines come
/// from two in a row), any other picks a piece.
fn lines(recipe: &[u8]) -> Vec<Vec<u8>> {
    let mut lines = vec![Vec::new()];
    for &r in recipe {
        if r < 8 {
            lines.push(Vec::new());
        } else {
            let piece = PIECES[usize::from(r) % PIECES.len()];
            lines.last_mut().unwrap().extend_from_slice(piece);
        }
    }
    lines
}

/// The lines joined with the line end each `ends` byte picks (CRLF, LF or
/// CR, cycled; LF when none). A CR before an empty line ended by LF would
/// make one CRLF of two line ends, so that line ends in CR too. The last
/// line has a line end only if `ended`.
fn join(lines: &[Vec<u8>], ends: &[u8], ended: bool) -> Vec<u8> {
    let mut body = Vec::new();
    let mut picks = ends.iter().cycle();
    let mut after_cr = false;
    for (n, line) in lines.iter().enumerate() {
        body.extend_from_slice(line);
        if n + 1 == lines.len() && !ended {
            break;
        }
        let mut end: &[u8] = match picks.next().map(|p| p % 3) {
            Some(0) => b"\r\n",
            Some(2) => b"\r",
            _ => b"\n",
        };
        if after_cr && line.is_empty() && end == b"\n" {
            end = b"\r";
        }
        after_cr = end == b"\r";
        body.extend_from_slice(end);
    }
    body
}

/// The outcomes without their stream offsets, which the line ends move.
fn without_offsets(outcomes: Vec<SseOutcome>) -> Vec<SseOutcome> {
    outcomes
        .into_iter()
        .map(|outcome| match outcome {
            SseOutcome::Message(mut m) => {
                m.offset = 0;
                SseOutcome::Message(m)
            }
            SseOutcome::Malformed(mut m) => {
                m.offset = 0;
                SseOutcome::Malformed(m)
            }
            SseOutcome::NotJson(mut m) => {
                m.offset = 0;
                SseOutcome::NotJson(m)
            }
            SseOutcome::Comment { .. } => SseOutcome::Comment { offset: 0 },
            SseOutcome::Oversize { last_event_id, .. } => SseOutcome::Oversize {
                offset: 0,
                last_event_id,
            },
            SseOutcome::Discarded {
                len,
                at_eof,
                last_event_id,
                envelope,
                ..
            } => SseOutcome::Discarded {
                offset: 0,
                len,
                at_eof,
                last_event_id,
                envelope,
            },
            SseOutcome::Truncated { len, .. } => SseOutcome::Truncated { offset: 0, len },
            other => other,
        })
        .collect()
}

#[test]
fn any_chunking_gives_the_same_events() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u8>, Vec<u8>, u8, bool)>()
        .for_each(|(recipe, ends, splits, selector, eof)| {
            let body = join(&lines(recipe), ends, *selector & 0x40 == 0);
            let config = config(*selector);
            let whole = run_sse(config, &body, &[], *eof);
            assert_eq!(run_sse(config, &body, &lengths(splits), *eof), whole);
            assert_eq!(run_sse(config, &body, &[1], *eof), whole);
        });
}

#[test]
fn every_split_and_line_end_gives_the_reference_events() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u8>, Vec<u8>, u8, bool)>()
        .for_each(|(recipe, ends, splits, selector, eof)| {
            let lines = lines(recipe);
            let ended = *selector & 0x40 == 0;
            let config = config(*selector);
            let body = join(&lines, ends, ended);
            let events = run_sse(config, &body, &lengths(splits), *eof);
            let outcomes = sse_outcomes(&events);
            assert_eq!(outcomes, reference_sse(&config, &body, *eof));
            // With LF everywhere the events are the same but for where
            // they stand in the stream.
            let lf = join(&lines, &[], ended);
            assert_eq!(
                without_offsets(outcomes),
                without_offsets(sse_outcomes(&run_sse(config, &lf, &[1], *eof)))
            );
        });
}

#[test]
fn raw_bytes_give_the_reference_events() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u8>, u8, bool)>()
        .for_each(|(body, splits, selector, eof)| {
            let config = config(*selector);
            let events = run_sse(config, body, &lengths(splits), *eof);
            assert_eq!(sse_outcomes(&events), reference_sse(&config, body, *eof));
        });
}

#[test]
fn an_oversize_event_costs_the_limit_and_the_next_one_is_read() {
    // A body far past the limit in one event, then a small answer: the
    // framer holds no more than the limit and reads the answer.
    let huge = [
        &b"id: 41\ndata: {\"result\":\""[..],
        &vec![b'x'; 1 << 20],
        b"\",\"jsonrpc\":\"2.0\",\"id\":2}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":0}\n\n",
    ]
    .concat();
    let config = SseConfig::default().with_max_event_bytes(4096);
    for split in [&[][..], &[1000], &[4093, 7]] {
        let outcomes = sse_outcomes(&run_sse(config, &huge, split, true));
        assert_eq!(outcomes, reference_sse(&config, &huge, true));
        assert!(
            matches!(
                &outcomes[..],
                [
                    SseOutcome::Oversize { .. },
                    SseOutcome::Discarded { envelope: Some(_), .. },
                    SseOutcome::Message(m),
                ] if m.last_event_id == b"41"
            ),
            "{outcomes:?}"
        );
    }
}
