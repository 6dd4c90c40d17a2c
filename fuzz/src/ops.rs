//! Operation sequences: `push`, `finish`, `reset` and `stats` in any order,
//! checked against a model after every step.
//!
//! The model keeps the bytes pushed since the last `finish` or `reset` (a
//! *segment*), the events seen since the last `reset`, and a ledger of
//! rejections. After each operation it checks the memory bound, the counters
//! against the events, that every rejection is closed by exactly one
//! `Discarded` before anything else happens, and that borrowed frames really
//! point into the chunk just pushed. At the end of each segment the events
//! are compared with the reference framer's outcomes for that segment.

use arbitrary::Arbitrary;
use drainpipe_framer::testing::{
    Outcome, OwnedEvent, assert_memory_bound, outcomes, reference_outcomes,
};
use drainpipe_framer::{Config, Event, Framer};

/// Stops one input from pushing more than this (the memory bound is what is
/// under test, not the machine's RAM).
const MAX_PUSHED_BYTES: usize = 1 << 20;

/// A piece of a chunk, chosen so that short op lists reach interesting states
/// (lines at the limit, code points and `\r\n` cut across pushes).
#[derive(Arbitrary, Clone, Debug)]
pub enum Piece {
    /// A complete response line `{"id":N,"result":"x…"}\n`.
    Message {
        /// Its id.
        id: u8,
        /// Bytes of `x` in the result.
        pad: u8,
    },
    /// The start of a response, up to the opening quote of its result.
    Open {
        /// Its id.
        id: u8,
    },
    /// `x` bytes.
    Filler {
        /// How many.
        len: u8,
    },
    /// Filler that brings the current line to `max_frame_bytes + delta`
    /// bytes (nothing if it is already longer).
    ToLimit {
        /// Offset from the limit.
        delta: i8,
    },
    /// `"}`: closes what [`Piece::Open`] started.
    Close,
    /// `\n`.
    Newline,
    /// `\r`.
    Cr,
    /// `\r\n`.
    CrLf,
    /// A log line's text (no newline).
    Log,
    /// The first two bytes of `😀`.
    HalfCodePoint,
    /// The last two bytes of `😀`.
    OtherHalf,
    /// Any bytes.
    Raw(Vec<u8>),
}

/// One operation on the framer.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// Push one chunk made of these pieces.
    Push(Vec<Piece>),
    /// Push an empty chunk.
    PushEmpty,
    /// End the stream.
    Finish,
    /// Forget the stream.
    Reset,
    /// Read the counters (must not change anything).
    Stats,
}

/// One input of the `operations` target.
#[derive(Arbitrary, Clone, Debug)]
pub struct OpsInput {
    /// `max_frame_bytes`, unless `default_limit`.
    pub limit: u8,
    /// Use the 4 MiB default limit.
    pub default_limit: bool,
    /// `max_depth` is `depth % 8` (shallow, so the depth limit is hit).
    pub depth: u8,
    /// JSON validation on.
    pub validate_json: bool,
    /// The operations.
    pub ops: Vec<Op>,
}

/// Which rejection a pending `Discarded` belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rejection {
    Oversize,
    Malformed,
}

/// What the model expects, kept alongside the framer.
#[derive(Debug, Default)]
struct Model {
    /// Bytes since the last finish or reset.
    segment: Vec<u8>,
    /// Stream offset of `segment[0]`.
    segment_base: u64,
    /// Events since the last finish or reset.
    segment_events: Vec<OwnedEvent>,
    /// Bytes pushed since the last reset.
    pushed: u64,
    /// Lines ended (by a newline, or by `finish` if non-empty) since reset.
    lines_ended: u64,
    /// A rejected line still waiting for its `Discarded`.
    pending: Option<(u64, Rejection)>,
    frames: u64,
    largest_frame: u64,
    oversize: u64,
    oversize_dropped: u64,
    malformed: u64,
    malformed_dropped: u64,
    not_protocol: u64,
    truncated: u64,
    discarded: u64,
}

impl Model {
    /// Bytes of the current (unfinished) line.
    fn current_line_len(&self, extra: &[u8]) -> usize {
        match extra.iter().rposition(|&b| b == b'\n') {
            Some(p) => extra.len() - p - 1,
            None => {
                let in_segment = self
                    .segment
                    .iter()
                    .rev()
                    .take_while(|&&b| b != b'\n')
                    .count();
                in_segment + extra.len()
            }
        }
    }

    fn record(&mut self, event: OwnedEvent, limit: usize) {
        let position = self.segment_base + self.segment.len() as u64;
        let offset = match &event {
            OwnedEvent::Frame { offset, .. }
            | OwnedEvent::Oversize { offset, .. }
            | OwnedEvent::Malformed { offset, .. }
            | OwnedEvent::Discarded { offset, .. }
            | OwnedEvent::NotProtocol { offset, .. }
            | OwnedEvent::Truncated { offset, .. } => *offset,
        };
        assert!(
            offset >= self.segment_base && offset <= position,
            "event offset {offset} outside the segment"
        );
        if let Some(prev) = self.segment_events.last() {
            assert!(
                offset >= offset_of(prev),
                "events out of stream order: {prev:?} then {event:?}"
            );
        }
        match &event {
            OwnedEvent::Oversize { .. } | OwnedEvent::Malformed { .. } => {
                assert_eq!(
                    self.pending, None,
                    "a second rejection before the first was discarded: {event:?}"
                );
                let why = if matches!(event, OwnedEvent::Oversize { .. }) {
                    self.oversize += 1;
                    Rejection::Oversize
                } else {
                    self.malformed += 1;
                    Rejection::Malformed
                };
                self.pending = Some((offset, why));
            }
            OwnedEvent::Discarded { len, .. } => {
                let Some((at, why)) = self.pending.take() else {
                    panic!("Discarded without a rejection: {event:?}");
                };
                assert_eq!(at, offset, "Discarded for another line than the rejection");
                match why {
                    Rejection::Oversize => self.oversize_dropped += len,
                    Rejection::Malformed => self.malformed_dropped += len,
                }
                self.discarded += 1;
            }
            other => {
                assert_eq!(
                    self.pending, None,
                    "{other:?} before the rejected line was discarded"
                );
                match other {
                    OwnedEvent::Frame { bytes, .. } => {
                        assert!(
                            bytes.len() <= limit,
                            "a frame of {} bytes passed the limit {limit}",
                            bytes.len()
                        );
                        self.frames += 1;
                        self.largest_frame = self.largest_frame.max(bytes.len() as u64);
                    }
                    OwnedEvent::NotProtocol { .. } => self.not_protocol += 1,
                    OwnedEvent::Truncated { .. } => self.truncated += 1,
                    _ => {}
                }
            }
        }
        self.segment_events.push(event);
    }

    /// The counters must be exactly what the events say.
    fn check_stats(&self, framer: &Framer) {
        let stats = framer.stats();
        assert_eq!(stats.bytes_in, self.pushed, "bytes_in");
        assert_eq!(framer.position(), self.pushed, "position");
        assert_eq!(stats.frames, self.frames, "frames");
        assert_eq!(stats.largest_frame, self.largest_frame, "largest_frame");
        assert_eq!(stats.oversize, self.oversize, "oversize");
        assert_eq!(stats.malformed, self.malformed, "malformed");
        assert_eq!(
            stats.oversize_bytes_dropped, self.oversize_dropped,
            "oversize_bytes_dropped"
        );
        assert_eq!(
            stats.malformed_bytes_dropped, self.malformed_dropped,
            "malformed_bytes_dropped"
        );
        assert_eq!(stats.not_protocol, self.not_protocol, "not_protocol");
        assert_eq!(stats.truncated, self.truncated, "truncated");
        // Every ended line ends in exactly one way.
        let ended = stats.frames
            + stats.not_protocol
            + self.discarded
            + stats.truncated
            + stats.blank_lines;
        assert_eq!(
            ended, self.lines_ended,
            "lines ended vs events + blank lines: {stats:?}"
        );
        assert!(
            framer.buffered() as u64 <= stats.buffered_high_water,
            "buffered {} above high water {stats:?}",
            framer.buffered()
        );
        assert_memory_bound(framer);
    }

    /// The segment's events agree with the reference framer.
    fn check_segment(&self, config: &Config, eof: bool) {
        let expected: Vec<Outcome> = reference_outcomes(config, &self.segment, eof)
            .into_iter()
            .map(|o| shift(o, self.segment_base))
            .collect();
        let actual = outcomes(&self.segment_events);
        assert_eq!(
            actual, expected,
            "segment at {} vs reference",
            self.segment_base
        );
    }

    fn start_segment(&mut self, base: u64) {
        self.segment.clear();
        self.segment_events.clear();
        self.segment_base = base;
    }
}

fn offset_of(event: &OwnedEvent) -> u64 {
    match event {
        OwnedEvent::Frame { offset, .. }
        | OwnedEvent::Oversize { offset, .. }
        | OwnedEvent::Malformed { offset, .. }
        | OwnedEvent::Discarded { offset, .. }
        | OwnedEvent::NotProtocol { offset, .. }
        | OwnedEvent::Truncated { offset, .. } => *offset,
    }
}

fn shift(outcome: Outcome, base: u64) -> Outcome {
    match outcome {
        Outcome::Frame {
            offset,
            bytes,
            envelope,
        } => Outcome::Frame {
            offset: offset + base,
            bytes,
            envelope,
        },
        Outcome::NotProtocol { offset, line } => Outcome::NotProtocol {
            offset: offset + base,
            line,
        },
        Outcome::Rejected {
            offset,
            len,
            envelope,
        } => Outcome::Rejected {
            offset: offset + base,
            len,
            envelope,
        },
        Outcome::LostAtEof { offset, len } => Outcome::LostAtEof {
            offset: offset + base,
            len,
        },
    }
}

/// Appends `piece` to `chunk`, given the model's view of the current line.
fn build_piece(piece: &Piece, chunk: &mut Vec<u8>, model: &Model, limit: usize) {
    match piece {
        Piece::Message { id, pad } => {
            chunk.extend_from_slice(format!("{{\"id\":{id},\"result\":\"").as_bytes());
            chunk.resize(chunk.len() + usize::from(*pad), b'x');
            chunk.extend_from_slice(b"\"}\n");
        }
        Piece::Open { id } => {
            chunk.extend_from_slice(format!("{{\"id\":{id},\"result\":\"").as_bytes())
        }
        Piece::Filler { len } => chunk.resize(chunk.len() + usize::from(*len), b'x'),
        Piece::ToLimit { delta } => {
            let target = limit.saturating_add_signed(isize::from(*delta));
            let have = model.current_line_len(chunk);
            if target > have && target - have <= MAX_PUSHED_BYTES {
                chunk.resize(chunk.len() + target - have, b'x');
            }
        }
        Piece::Close => chunk.extend_from_slice(b"\"}"),
        Piece::Newline => chunk.push(b'\n'),
        Piece::Cr => chunk.push(b'\r'),
        Piece::CrLf => chunk.extend_from_slice(b"\r\n"),
        Piece::Log => chunk.extend_from_slice(b"Server started on port 3000"),
        Piece::HalfCodePoint => chunk.extend_from_slice(&"😀".as_bytes()[..2]),
        Piece::OtherHalf => chunk.extend_from_slice(&"😀".as_bytes()[2..]),
        Piece::Raw(bytes) => chunk.extend_from_slice(bytes),
    }
}

/// The `operations` property.
pub fn check_ops(input: &OpsInput) {
    let limit = if input.default_limit {
        Config::DEFAULT_MAX_FRAME_BYTES
    } else {
        usize::from(input.limit)
    };
    let config = Config::default()
        .with_max_frame_bytes(limit)
        .with_max_depth(u32::from(input.depth % 8))
        .with_json_validation(input.validate_json);
    let mut framer = Framer::new(config);
    let mut model = Model::default();
    let mut total_pushed = 0usize;
    for op in &input.ops {
        match op {
            Op::Push(pieces) => {
                let mut chunk = Vec::new();
                for piece in pieces {
                    build_piece(piece, &mut chunk, &model, limit);
                }
                total_pushed += chunk.len();
                if total_pushed > MAX_PUSHED_BYTES {
                    break;
                }
                push(&mut framer, &mut model, &chunk, limit);
            }
            Op::PushEmpty => push(&mut framer, &mut model, &[], limit),
            Op::Finish => {
                if model.current_line_len(&[]) > 0 {
                    model.lines_ended += 1;
                }
                let mut events = Vec::new();
                framer.finish(|e| events.push(OwnedEvent::from(e)));
                for e in events {
                    model.record(e, limit);
                }
                assert_eq!(model.pending, None, "finish left a rejection open");
                assert_eq!(framer.buffered(), 0, "finish left bytes buffered");
                model.check_segment(&config, true);
                model.start_segment(framer.position());
            }
            Op::Reset => {
                model.check_segment(&config, false);
                framer.reset();
                model = Model::default();
                assert_eq!(framer.buffered(), 0);
                assert_eq!(framer.position(), 0);
            }
            Op::Stats => {
                let before = *framer.stats();
                assert_eq!(*framer.stats(), before, "reading stats changed them");
            }
        }
        model.check_stats(&framer);
    }
    model.check_segment(&config, false);
}

fn push(framer: &mut Framer, model: &mut Model, chunk: &[u8], limit: usize) {
    let mut events = Vec::new();
    framer.push(chunk, |event| {
        if let Event::Frame(frame) = event
            && let Some(start) = frame.chunk_start
        {
            let inside = chunk.get(start..start + frame.bytes.len());
            assert_eq!(
                inside,
                Some(frame.bytes),
                "chunk_start {start} does not point at the frame"
            );
        }
        events.push(OwnedEvent::from(event));
    });
    model.segment.extend_from_slice(chunk);
    model.pushed += chunk.len() as u64;
    model.lines_ended += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
    for e in events {
        model.record(e, limit);
    }
}
