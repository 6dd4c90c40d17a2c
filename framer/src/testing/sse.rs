//! The reference event-stream parser: deliberately simple, whole body at
//! once, and the helpers that hold [`SseFramer`] to it.
//!
//! It reads the WHATWG rules straight: strip a whole BOM, cut the body into
//! lines at CRLF, LF or CR, read each line's field with `split` and
//! `strip_prefix`, and judge each event's data with `serde_json` and
//! `core::str::from_utf8` instead of the streaming validator. It is slow
//! and obviously right; the framer must agree with it on every body, every
//! chunking and every choice of line ends (see [`SseOutcome`] for what
//! "agree" means).

use alloc::vec;
use alloc::vec::Vec;

use super::naive::{nesting_depth, serde_accepts};
use super::{OwnedEnvelope, serde_envelope};
use crate::sse::{OwnedSseEvent, OwnedSseMessage, SseConfig, SseFramer, SseStats};

/// What the reference predicts of one event: everything but what only a
/// streaming parser knows (the envelope recorded before a limit or an
/// error, and an error's kind and position; the table tests pin those).
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum SseOutcome {
    Message(OwnedSseMessage),
    /// As the message, without its envelope.
    Malformed(OwnedSseMessage),
    NotJson(OwnedSseMessage),
    Comment {
        offset: u64,
    },
    Retry {
        millis: u64,
    },
    Oversize {
        offset: u64,
        last_event_id: Vec<u8>,
    },
    /// `envelope` set when the data was well formed but for its size.
    Discarded {
        offset: u64,
        len: u64,
        at_eof: bool,
        last_event_id: Vec<u8>,
        envelope: Option<OwnedEnvelope>,
    },
    Truncated {
        offset: u64,
        len: u64,
    },
}

/// Reduces framer events to [`SseOutcome`]s.
pub fn sse_outcomes(events: &[OwnedSseEvent]) -> Vec<SseOutcome> {
    events
        .iter()
        .map(|event| match event.clone() {
            OwnedSseEvent::Message(m) => SseOutcome::Message(m),
            OwnedSseEvent::Malformed { mut message, .. } => {
                message.envelope = OwnedEnvelope::default();
                SseOutcome::Malformed(message)
            }
            OwnedSseEvent::NotJson(m) => SseOutcome::NotJson(m),
            OwnedSseEvent::Comment { offset } => SseOutcome::Comment { offset },
            OwnedSseEvent::Retry { millis } => SseOutcome::Retry { millis },
            OwnedSseEvent::Oversize {
                offset,
                last_event_id,
                ..
            } => SseOutcome::Oversize {
                offset,
                last_event_id,
            },
            OwnedSseEvent::Discarded {
                offset,
                len,
                at_eof,
                last_event_id,
                envelope,
                well_formed,
            } => SseOutcome::Discarded {
                offset,
                len,
                at_eof,
                last_event_id,
                envelope: well_formed.then_some(envelope),
            },
            OwnedSseEvent::Truncated { offset, len, .. } => SseOutcome::Truncated { offset, len },
        })
        .collect()
}

/// Runs `body` through a fresh [`SseFramer`], pushed in the given chunk
/// lengths (cycled; a zero length pushes an empty chunk), then finishes it
/// if `eof`. Panics if the memory bound is ever broken.
pub fn run_sse(config: SseConfig, body: &[u8], lengths: &[usize], eof: bool) -> Vec<OwnedSseEvent> {
    let mut framer = SseFramer::new(config);
    let mut events = Vec::new();
    let mut rest = body;
    let mut cycle = lengths.iter().cycle();
    let mut step = 0;
    while !rest.is_empty() {
        step += 1;
        // Only zero lengths: push the rest whole.
        let stuck = step > body.len() * 2 + 16;
        let n = match cycle.next() {
            Some(&n) if !stuck => n.min(rest.len()),
            _ => rest.len(),
        };
        let (chunk, tail) = rest.split_at(n);
        framer.push(chunk, |event| events.push(event.into()));
        assert_sse_memory_bound(&framer, config);
        rest = tail;
    }
    assert_eq!(framer.position(), body.len() as u64);
    if eof {
        framer.finish(|event| events.push(event.into()));
        assert_sse_memory_bound(&framer, config);
    }
    assert_stats_agree(&framer, &events, body.len());
    events
}

/// Panics unless the framer's counters say what its events say.
fn assert_stats_agree(framer: &SseFramer, events: &[OwnedSseEvent], pushed: usize) {
    let mut want = SseStats::default();
    for event in events {
        match event {
            OwnedSseEvent::Message(m) => {
                want.messages += 1;
                want.largest_event = want.largest_event.max(m.len);
            }
            OwnedSseEvent::NotJson(m) => {
                want.not_json += 1;
                want.largest_event = want.largest_event.max(m.len);
            }
            OwnedSseEvent::Malformed { message, .. } => {
                want.malformed += 1;
                want.largest_event = want.largest_event.max(message.len);
            }
            OwnedSseEvent::Comment { .. } => want.comments += 1,
            OwnedSseEvent::Oversize { .. } => want.oversize += 1,
            OwnedSseEvent::Discarded { len, .. } => want.oversize_bytes_dropped += len,
            OwnedSseEvent::Truncated { .. } => want.truncated += 1,
            OwnedSseEvent::Retry { .. } => {}
        }
    }
    want.bytes_in = pushed as u64;
    let stats = *framer.stats();
    want.buffered_high_water = stats.buffered_high_water;
    assert_eq!(stats, want, "counters against events");
}

/// Panics if `framer` holds more than its limit allows: the event being
/// read within twice the limit (once for data, type and ids; past the
/// limit, ids only), the last event id within it.
pub fn assert_sse_memory_bound(framer: &SseFramer, config: SseConfig) {
    let max = config.max_event_bytes();
    assert!(
        framer.buffered() <= max.saturating_mul(2),
        "holds {} bytes for a limit of {max}",
        framer.buffered()
    );
    assert!(framer.last_event_id().len() <= max);
    assert!(framer.stats().buffered_high_water <= max.saturating_mul(2) as u64);
}

/// Where a body's lines lie: (offset, content, ended by a line end).
fn body_lines(body: &[u8]) -> Vec<(u64, &[u8], bool)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let rest = &body[at..];
        match rest.iter().position(|&b| b == b'\r' || b == b'\n') {
            Some(end) => {
                out.push((at as u64, &rest[..end], true));
                let crlf = rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n');
                at += end + if crlf { 2 } else { 1 };
            }
            None => {
                out.push((at as u64, rest, false));
                at = body.len();
            }
        }
    }
    out
}

/// The event being read by the reference.
#[derive(Default)]
struct Pending {
    start: Option<u64>,
    len: u64,
    discarding: bool,
    has_data: bool,
    data: Vec<u8>,
    event_type: Vec<u8>,
    id: Option<Vec<u8>>,
}

/// The outcomes the reference predicts for `body`, ended by EOF if `eof`.
pub fn reference_sse(config: &SseConfig, body: &[u8], eof: bool) -> Vec<SseOutcome> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    if !eof && !body.is_empty() && BOM.starts_with(body) && body.len() < BOM.len() {
        return Vec::new(); // undecided: maybe a BOM, maybe the first line
    }
    let skip = if body.starts_with(BOM) { 3 } else { 0 };
    let max = config.max_event_bytes() as u64;
    let mut out = Vec::new();
    let mut last_event_id = Vec::new();
    let mut event = Pending::default();
    for (offset, line, ended) in body_lines(&body[skip..]) {
        let offset = offset + skip as u64;
        if line.is_empty() {
            if let Some(start) = event.start {
                dispatch(config, &mut event, start, &mut last_event_id, &mut out);
            }
            event = Pending::default();
            continue;
        }
        event.start.get_or_insert(offset);
        let before = event.len;
        event.len += line.len() as u64;
        let crossing = !event.discarding && event.len > max;
        let oversize = |event: &mut Pending, out: &mut Vec<SseOutcome>| {
            event.discarding = true;
            out.push(SseOutcome::Oversize {
                offset: event.start.unwrap(),
                last_event_id: event.id.clone().unwrap_or_else(|| last_event_id.clone()),
            });
        };
        if line[0] == b':' {
            // The comment is seen at its first byte, the limit at the byte
            // that passes it: whichever comes first is reported first.
            if crossing && before == max {
                oversize(&mut event, &mut out);
            }
            out.push(SseOutcome::Comment { offset });
            if crossing && !event.discarding {
                oversize(&mut event, &mut out);
            }
            continue;
        }
        if crossing {
            oversize(&mut event, &mut out);
        }
        if !ended {
            continue; // a partial last line is never read
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                if event.has_data {
                    event.data.push(b'\n');
                }
                event.has_data = true;
                event.data.extend_from_slice(value);
            }
            b"event" => event.event_type = value.to_vec(),
            b"id" if !value.contains(&0) && value.len() as u64 <= max => {
                event.id = Some(value.to_vec())
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let millis = value.iter().fold(0u64, |n, d| {
                    n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                out.push(SseOutcome::Retry { millis });
            }
            _ => {}
        }
    }
    if eof && let Some(offset) = event.start {
        out.push(if event.discarding {
            SseOutcome::Discarded {
                offset,
                len: event.len,
                at_eof: true,
                last_event_id,
                envelope: None,
            }
        } else {
            SseOutcome::Truncated {
                offset,
                len: event.len,
            }
        });
    }
    out
}

/// A blank line ended the event that started at `start`.
fn dispatch(
    config: &SseConfig,
    event: &mut Pending,
    start: u64,
    last_event_id: &mut Vec<u8>,
    out: &mut Vec<SseOutcome>,
) {
    if let Some(id) = event.id.take() {
        *last_event_id = id;
    }
    let first = event
        .data
        .iter()
        .find(|&&b| !matches!(b, b' ' | b'\t' | b'\n'))
        .copied();
    let looks_like_json = matches!(first, Some(b'{' | b'[' | b'"'));
    let valid = looks_like_json
        && first == Some(b'{')
        && core::str::from_utf8(&event.data).is_ok()
        && nesting_depth(&event.data) <= config.max_depth() as usize
        && serde_accepts(&event.data);
    if event.discarding {
        out.push(SseOutcome::Discarded {
            offset: start,
            len: event.len,
            at_eof: false,
            last_event_id: last_event_id.clone(),
            envelope: valid.then(|| serde_envelope(&event.data)),
        });
        return;
    }
    if !event.has_data {
        return;
    }
    let message = |envelope| OwnedSseMessage {
        offset: start,
        len: event.len,
        event_type: event.event_type.clone(),
        data: event.data.clone(),
        last_event_id: last_event_id.clone(),
        envelope,
    };
    out.push(if valid {
        SseOutcome::Message(message(serde_envelope(&event.data)))
    } else if looks_like_json {
        SseOutcome::Malformed(message(OwnedEnvelope::default()))
    } else {
        SseOutcome::NotJson(message(OwnedEnvelope::default()))
    });
}

/// Pieces that lines are made of: field names, colons and spaces, JSON
/// tokens and whole messages as the SDKs send them, NUL, a BOM, broken
/// UTF-8. Random bytes alone almost never form a field.
pub const PIECES: &[&[u8]] = &[
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

/// Lines from a recipe: a byte below 8 ends the line (blank lines come
/// from two in a row), any other picks a piece.
pub fn recipe_lines(recipe: &[u8]) -> Vec<Vec<u8>> {
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
pub fn join_lines(lines: &[Vec<u8>], ends: &[u8], ended: bool) -> Vec<u8> {
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
pub fn without_offsets(outcomes: Vec<SseOutcome>) -> Vec<SseOutcome> {
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

/// A small set of limits a selector byte picks from: event limits around
/// the pieces' sizes (0 to 4096 bytes), depth 2 or 128.
pub fn sse_config(selector: u8) -> SseConfig {
    let max = [0, 1, 8, 16, 40, 64, 4096][usize::from(selector % 7)];
    SseConfig::default()
        .with_max_event_bytes(max)
        .with_max_depth(if selector & 0x10 != 0 { 2 } else { 128 })
}

/// The properties on one body made of `lines` (see [`join_lines`]):
/// pushed whole, one byte at a time and in `lengths`, the same events;
/// those events are the reference's; with LF line ends everywhere, the
/// same events but for their offsets. Panics otherwise, or if the memory
/// bound is broken.
pub fn check_lines(
    config: SseConfig,
    lines: &[Vec<u8>],
    ends: &[u8],
    ended: bool,
    lengths: &[usize],
    eof: bool,
) {
    let body = join_lines(lines, ends, ended);
    let whole = run_sse(config, &body, &[], eof);
    assert_eq!(
        run_sse(config, &body, &[1], eof),
        whole,
        "one byte at a time"
    );
    assert_eq!(
        run_sse(config, &body, lengths, eof),
        whole,
        "in {lengths:?}"
    );
    let outcomes = sse_outcomes(&whole);
    assert_eq!(
        outcomes,
        reference_sse(&config, &body, eof),
        "the reference"
    );
    let lf = join_lines(lines, &[], ended);
    assert_eq!(
        without_offsets(outcomes),
        without_offsets(sse_outcomes(&run_sse(config, &lf, lengths, eof))),
        "with LF line ends"
    );
}

/// Any bytes, pushed in `lengths`: the reference's events.
pub fn check_bytes(config: SseConfig, body: &[u8], lengths: &[usize], eof: bool) {
    let events = run_sse(config, body, lengths, eof);
    assert_eq!(sse_outcomes(&events), reference_sse(&config, body, eof));
}

/// What [`crate::sse::SseRelay`] reports of one event or line, reduced to
/// what the framer also reports: dispatched events with their data
/// reassembled, cut-off events, comments and retries.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum RelayOutcome {
    /// An event with data, at its blank line. `verdict`: 0 message, 1 not
    /// JSON, 2 malformed. `envelope` only for a message.
    Dispatched {
        data: Vec<u8>,
        event_type: Option<Vec<u8>>,
        last_event_id: Vec<u8>,
        len: u64,
        verdict: u8,
        envelope: Option<OwnedEnvelope>,
    },
    CutOff {
        len: u64,
    },
    Comment,
    Retry {
        millis: u64,
    },
}

/// Runs `body` through a [`crate::sse::SseRelay`] in `lengths` and
/// through an [`SseFramer`] with no event limit, and panics unless they
/// agree on every event: the relay's data pieces, joined, are the framer's
/// data; ids, types, lengths, verdicts and envelopes are the same. Also
/// panics if a relayed data piece holds a line end.
pub fn check_relay(body: &[u8], lengths: &[usize], eof: bool) {
    use crate::sse::{RelayEvent, SseRelay};
    let limit = body.len() + 1;
    let config = SseConfig::default().with_max_event_bytes(limit);
    let mut want = Vec::new();
    for event in run_sse(config, body, lengths, eof) {
        let dispatched = |m: OwnedSseMessage, verdict: u8| RelayOutcome::Dispatched {
            event_type: (m.event_type.len() <= crate::sse::MAX_EVENT_TYPE_BYTES)
                .then_some(m.event_type),
            data: m.data,
            last_event_id: m.last_event_id,
            len: m.len,
            verdict,
            envelope: (verdict == 0).then_some(m.envelope),
        };
        want.push(match event {
            OwnedSseEvent::Message(m) => dispatched(m, 0),
            OwnedSseEvent::NotJson(m) => dispatched(m, 1),
            OwnedSseEvent::Malformed { message, .. } => dispatched(message, 2),
            OwnedSseEvent::Comment { .. } => RelayOutcome::Comment,
            OwnedSseEvent::Retry { millis } => RelayOutcome::Retry { millis },
            OwnedSseEvent::Truncated { len, .. } => RelayOutcome::CutOff { len },
            other => panic!("no limit, yet {other:?}"),
        });
    }
    let mut relay = SseRelay::new(crate::Config::DEFAULT_MAX_DEPTH, limit);
    let mut got = Vec::new();
    let mut data = Vec::new();
    let mut on = |event: RelayEvent<'_>| match event {
        RelayEvent::Data(piece) => {
            assert!(
                !piece.contains(&b'\n') && !piece.contains(&b'\r'),
                "{piece:?}"
            );
            data.extend_from_slice(piece);
        }
        RelayEvent::DataBreak => data.push(b'\n'),
        RelayEvent::Type(_) => {}
        RelayEvent::Comment => got.push(RelayOutcome::Comment),
        RelayEvent::Retry { millis } => got.push(RelayOutcome::Retry { millis }),
        RelayEvent::End(end) => {
            let data = core::mem::take(&mut data);
            if !end.complete {
                got.push(RelayOutcome::CutOff { len: end.len });
            } else if end.has_data {
                let verdict = match end.invalid {
                    None => 0,
                    Some(None) => 1,
                    Some(Some(_)) => 2,
                };
                got.push(RelayOutcome::Dispatched {
                    data,
                    event_type: (!end.event_type_cut).then(|| end.event_type.to_vec()),
                    last_event_id: end.last_event_id.to_vec(),
                    len: end.len,
                    verdict,
                    envelope: (verdict == 0).then(|| OwnedEnvelope::from(end.envelope)),
                });
            }
        }
    };
    let mut rest = body;
    let mut cycle = lengths.iter().cycle();
    let mut step = 0;
    while !rest.is_empty() {
        step += 1;
        let n = match cycle.next() {
            Some(&n) if step <= body.len() * 2 + 16 => n.min(rest.len()),
            _ => rest.len(),
        };
        let (chunk, tail) = rest.split_at(n);
        relay.push(chunk, &mut on);
        rest = tail;
    }
    if eof {
        relay.finish(&mut on);
    }
    assert_eq!(got, want, "the relay against the framer");
}
