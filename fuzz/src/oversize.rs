//! Streams built around the transport limit, and the exact events each line
//! must produce.
//!
//! Every line is planned with a length relative to the limit (exactly at, one
//! under, one over, far over), so the interesting boundary is hit on every
//! input instead of by luck. The oracle is written from the line plans alone,
//! not from the reference framer: a valid message at or under the limit is a
//! frame byte for byte; a line over it is exactly one `Oversize` (carrying the
//! request id if the id ended before the limit) and one `Discarded` with the
//! whole line's length and the id wherever it stood (the framer follows the
//! line to its end); and the line after it is framed normally.

use arbitrary::Arbitrary;
use drainpipe_framer::Config;
use drainpipe_framer::testing::{
    OwnedEnvelope, OwnedEvent, OwnedId, outcomes, reference_outcomes, run_split,
};

use crate::case::{SplitMode, split_lengths};

/// Caps the stream so one input stays fast to run (a line may still be far
/// over the limit).
const MAX_STREAM_BYTES: usize = 64 << 10;

/// A line's length relative to the limit, in bytes of content (without the
/// line ending).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Size {
    /// Exactly `max_frame_bytes`.
    AtLimit,
    /// `max_frame_bytes - 1`.
    OneUnder,
    /// `max_frame_bytes + 1`.
    OneOver,
    /// This many bytes under the limit (at least the shortest line of its kind).
    Under(u8),
    /// `max_frame_bytes + 1 + n % 1024`.
    Over(u16),
}

impl Size {
    fn bytes(self, limit: usize) -> usize {
        match self {
            Size::AtLimit => limit,
            Size::OneUnder => limit.saturating_sub(1),
            Size::OneOver => limit + 1,
            Size::Under(n) => limit.saturating_sub(usize::from(n)),
            Size::Over(n) => limit + 1 + usize::from(n % 1024),
        }
    }
}

/// What a message's string value is filled with, so the limit can fall
/// inside a multibyte character or an escape.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Fill {
    /// `x`.
    Ascii,
    /// `é` (2 bytes).
    TwoByte,
    /// `😀` (4 bytes).
    FourByte,
    /// `\"`, `\\` and `\u00e9` escapes.
    Escapes,
}

impl Fill {
    fn unit(self, i: usize) -> &'static [u8] {
        match self {
            Fill::Ascii => b"x",
            Fill::TwoByte => "é".as_bytes(),
            Fill::FourByte => "😀".as_bytes(),
            Fill::Escapes => [&br#"\""#[..], br"\\", br"\u00e9"][i % 3],
        }
    }
}

/// One planned line.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum LinePlan {
    /// A valid response `{"id":N,"result":"…"}` (or `{ … }` if the size is
    /// too small for that), optionally ended by `\r\n`.
    Message {
        /// The request id.
        id: u8,
        /// Its length.
        size: Size,
        /// What pads it to that length.
        fill: Fill,
        /// End it with `\r\n` instead of `\n`.
        crlf: bool,
    },
    /// A stray log line (does not start like JSON).
    Log {
        /// Its length.
        size: Size,
    },
    /// Spaces and tabs only.
    Blank {
        /// Its length.
        size: Size,
    },
    /// A message that never closes: `{"id":N,"result":"xxxx` (or a prefix).
    Broken {
        /// The request id.
        id: u8,
        /// Its length.
        size: Size,
    },
}

/// One input of the `oversize_recovery` target.
#[derive(Arbitrary, Clone, Debug)]
pub struct OversizeInput {
    /// `max_frame_bytes`.
    pub limit: u8,
    /// JSON validation on.
    pub validate_json: bool,
    /// How the stream is cut (see [`SplitMode`]; the value is taken mod 8).
    pub split: u8,
    /// Seed of random cuts.
    pub split_seed: u8,
    /// Whether the last line has its newline (otherwise it ends at EOF).
    pub final_newline: bool,
    /// The lines.
    pub lines: Vec<LinePlan>,
}

/// The events one line must produce, in the detail the plan determines.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expected {
    Nothing,
    Frame {
        offset: u64,
        bytes: Vec<u8>,
        id: Option<u8>,
    },
    NotProtocol {
        offset: u64,
        line: Vec<u8>,
    },
    /// Rejected: `oversize` says whether the rejection must be `Oversize`
    /// (else `Malformed`); `id` is the id an `Oversize` must carry,
    /// `whole_id` the one its `Discarded` must carry, and `well_formed`
    /// what that `Discarded` says of the line.
    Rejected {
        offset: u64,
        len: u64,
        at_eof: bool,
        oversize: bool,
        looks_like_json: bool,
        id: Option<u8>,
        whole_id: Option<u8>,
        well_formed: bool,
    },
    Truncated {
        offset: u64,
        len: u64,
    },
}

/// A built stream with what every line must produce.
#[derive(Debug)]
pub struct Built {
    /// The bytes pushed.
    pub stream: Vec<u8>,
    config: Config,
    expected: Vec<Expected>,
}

fn id_prefix(id: u8) -> Vec<u8> {
    format!("{{\"id\":{id},").into_bytes()
}

/// `{"id":N,"result":"` + filler + `"}`, or `{` + spaces + `}` when `len`
/// is too small to hold the id. Returns the line and whether it has the id.
fn message(id: u8, len: usize, fill: Fill) -> (Vec<u8>, bool) {
    let mut line = id_prefix(id);
    line.extend_from_slice(br#""result":""#);
    if len < line.len() + 2 {
        let mut small = vec![b'{'];
        small.resize(len.max(2) - 1, b' ');
        small.push(b'}');
        return (small, false);
    }
    let mut i = 0;
    while line.len() + 2 < len {
        let unit = fill.unit(i);
        i += 1;
        if line.len() + unit.len() + 2 <= len {
            line.extend_from_slice(unit);
        } else {
            line.push(b'x');
        }
    }
    line.extend_from_slice(br#""}"#);
    (line, true)
}

impl OversizeInput {
    /// Builds the stream and the expectations.
    pub fn build(&self) -> Built {
        let limit = usize::from(self.limit);
        let config = Config::default()
            .with_max_frame_bytes(limit)
            .with_json_validation(self.validate_json);
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (n, plan) in self.lines.iter().enumerate() {
            if stream.len() > MAX_STREAM_BYTES {
                break;
            }
            let last = n + 1 == self.lines.len();
            let at_eof = last && !self.final_newline;
            let offset = stream.len() as u64;
            let (content, crlf, kind) = match *plan {
                LinePlan::Message {
                    id,
                    size,
                    fill,
                    crlf,
                } => {
                    let (line, has_id) = message(id, size.bytes(limit), fill);
                    (line, crlf, Kind::Message(has_id.then_some(id)))
                }
                LinePlan::Log { size } => {
                    let mut line = b"log: ".to_vec();
                    line.resize(size.bytes(limit).max(1), b'.');
                    line.truncate(size.bytes(limit).max(1));
                    (line, false, Kind::Log)
                }
                LinePlan::Blank { size } => {
                    let line = (0..size.bytes(limit))
                        .map(|i| if i % 3 == 2 { b'\t' } else { b' ' })
                        .collect();
                    (line, false, Kind::Blank)
                }
                LinePlan::Broken { id, size } => {
                    let mut line = id_prefix(id);
                    line.extend_from_slice(br#""result":""#);
                    let len = size.bytes(limit).max(1);
                    line.resize(len.max(line.len()), b'x');
                    line.truncate(len);
                    (line, false, Kind::Broken(id))
                }
            };
            // A `\r` before EOF (no newline) would be content: only add it
            // where a newline follows.
            let crlf = crlf && !at_eof;
            let len = content.len() as u64 + u64::from(crlf);
            let over = content.len() > limit;
            let id_before_limit =
                |id: u8| (self.validate_json && id_prefix(id).len() <= limit).then_some(id);
            expected.push(match kind {
                _ if over => Expected::Rejected {
                    offset,
                    len,
                    at_eof,
                    oversize: true,
                    // Only bytes before the limit are looked at: with a
                    // limit of 0 not even the `{` is.
                    looks_like_json: matches!(kind, Kind::Message(_) | Kind::Broken(_))
                        && limit > 0,
                    id: match kind {
                        Kind::Message(Some(id)) | Kind::Broken(id) => id_before_limit(id),
                        _ => None,
                    },
                    // The id is first in every line: recorded once its
                    // comma has passed, wherever the limit fell.
                    whole_id: match kind {
                        Kind::Message(Some(id)) | Kind::Broken(id)
                            if self.validate_json && content.len() >= id_prefix(id).len() =>
                        {
                            Some(id)
                        }
                        _ => None,
                    },
                    // A message is valid JSON; a broken line is a valid
                    // prefix, which counts only when the stream ends in it.
                    well_formed: self.validate_json
                        && match kind {
                            Kind::Message(_) => true,
                            Kind::Broken(_) => at_eof,
                            _ => false,
                        },
                },
                Kind::Blank => Expected::Nothing,
                Kind::Message(_) | Kind::Log | Kind::Broken(_) if at_eof => {
                    Expected::Truncated { offset, len }
                }
                Kind::Message(id) => Expected::Frame {
                    offset,
                    bytes: content.clone(),
                    id: if self.validate_json { id } else { None },
                },
                Kind::Log => Expected::NotProtocol {
                    offset,
                    line: content.clone(),
                },
                Kind::Broken(_) if !self.validate_json => Expected::Frame {
                    offset,
                    bytes: content.clone(),
                    id: None,
                },
                Kind::Broken(id) => Expected::Rejected {
                    offset,
                    len,
                    at_eof: false,
                    oversize: false,
                    looks_like_json: true,
                    id: None,
                    whole_id: (content.len() >= id_prefix(id).len()).then_some(id),
                    well_formed: false,
                },
            });
            stream.extend_from_slice(&content);
            if crlf {
                stream.push(b'\r');
            }
            if !at_eof {
                stream.push(b'\n');
            }
        }
        Built {
            stream,
            config,
            expected,
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Message(Option<u8>),
    Log,
    Blank,
    Broken(u8),
}

/// The `oversize_recovery` property.
pub fn check_oversize(input: &OversizeInput) {
    let built = input.build();
    let mode = SplitMode::from_bits(input.split & 0b111);
    let lengths = split_lengths(&built.stream, mode, input.split_seed);
    // `run_split` asserts the memory bound after every push.
    let (events, stats) = run_split(built.config, &built.stream, &lengths, true);
    let mut rest = &events[..];
    for line in &built.expected {
        rest = expect_line(line, rest, &events);
    }
    assert!(
        rest.is_empty(),
        "events left over after the last line: {rest:?}"
    );
    let planned_oversize = built
        .expected
        .iter()
        .filter(|e| matches!(e, Expected::Rejected { oversize: true, .. }))
        .count();
    assert_eq!(
        stats.oversize, planned_oversize as u64,
        "one oversize count per oversize line"
    );
    // The reference framer agrees on the outcomes, too.
    assert_eq!(
        outcomes(&events),
        reference_outcomes(&built.config, &built.stream, true)
    );
}

/// Checks the events of one line at the front of `events`; returns the rest.
fn expect_line<'e>(
    line: &Expected,
    events: &'e [OwnedEvent],
    all: &[OwnedEvent],
) -> &'e [OwnedEvent] {
    let fail = |what: &str| -> ! {
        panic!(
            "{what}: expected {line:?}, got {:?}\nall events: {all:?}",
            events.first()
        )
    };
    match line {
        Expected::Nothing => events,
        Expected::Frame { offset, bytes, id } => match events.first() {
            Some(OwnedEvent::Frame {
                offset: o,
                bytes: b,
                envelope,
            }) if o == offset && b == bytes => {
                if id_of(envelope) != *id {
                    fail("frame envelope id");
                }
                &events[1..]
            }
            _ => fail("a valid message at or under the limit must be framed"),
        },
        Expected::NotProtocol { offset, line } => match events.first() {
            Some(OwnedEvent::NotProtocol { offset: o, line: l }) if o == offset && l == line => {
                &events[1..]
            }
            _ => fail("log line"),
        },
        Expected::Truncated { offset, len } => match events.first() {
            Some(OwnedEvent::Truncated {
                offset: o, len: l, ..
            }) if o == offset && l == len => &events[1..],
            _ => fail("line cut by EOF"),
        },
        Expected::Rejected {
            offset,
            len,
            at_eof,
            oversize,
            looks_like_json,
            id,
            whole_id,
            well_formed,
        } => {
            match (events.first(), *oversize) {
                (
                    Some(OwnedEvent::Oversize {
                        offset: o,
                        looks_like_json: j,
                        envelope,
                    }),
                    true,
                ) if o == offset => {
                    if j != looks_like_json {
                        fail("looks_like_json");
                    }
                    if id_of(envelope) != *id {
                        fail(
                            "an id that ended before the limit must be reported with the Oversize",
                        );
                    }
                }
                (Some(OwnedEvent::Malformed { offset: o, .. }), false) if o == offset => {}
                _ => fail("exactly one rejection per rejected line"),
            }
            match events.get(1) {
                Some(OwnedEvent::Discarded {
                    offset: o,
                    len: l,
                    at_eof: e,
                    envelope,
                    well_formed: w,
                }) if o == offset && l == len && e == at_eof => {
                    if id_of(envelope) != *whole_id {
                        fail("the Discarded must carry the line's id wherever it stood");
                    }
                    if w != well_formed {
                        fail("well_formed");
                    }
                    &events[2..]
                }
                other => {
                    panic!("expected Discarded for {line:?}, got {other:?}\nall events: {all:?}")
                }
            }
        }
    }
}

fn id_of(envelope: &OwnedEnvelope) -> Option<u8> {
    match &envelope.id {
        Some(OwnedId::Number(n)) => core::str::from_utf8(n).ok()?.parse().ok(),
        _ => None,
    }
}
