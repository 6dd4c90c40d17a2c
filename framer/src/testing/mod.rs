//! Test support shared by the unit tests, the benchmarks, the fuzz targets and
//! the component parity tests: owned copies of events, the reference framer,
//! and deterministic workload generators.
//!
//! Enabled by the `testing` feature; not part of the production API.

use alloc::vec::Vec;

pub use crate::owned::{OwnedEnvelope, OwnedEvent, OwnedId};
use crate::{Config, Framer, InPlaceFramer, Stats};

pub mod condense;
pub mod lost;
mod naive;
pub mod sse;
pub mod unescape;
pub mod workload;

pub use naive::{reference_outcomes, serde_envelope};

/// What happened to one line, at the level of detail the reference framer
/// can predict independently: whether it was delivered, diverted or lost, not
/// why it was rejected (that precedence is pinned by table tests and by the
/// chunking invariance, which compares full events).
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Outcome {
    Frame {
        offset: u64,
        bytes: Vec<u8>,
        envelope: OwnedEnvelope,
    },
    NotProtocol {
        offset: u64,
        line: Vec<u8>,
    },
    /// Oversize or malformed, ended by its newline. `envelope` is set when
    /// the line was a valid message but for its size, to the envelope of
    /// the whole line (`Event::Discarded` with `well_formed`).
    Rejected {
        offset: u64,
        len: u64,
        envelope: Option<OwnedEnvelope>,
    },
    /// Cut off by the end of the stream (truncated, or rejected and then cut).
    LostAtEof {
        offset: u64,
        len: u64,
    },
}

/// Reduces framer events to [`Outcome`]s.
pub fn outcomes(events: &[OwnedEvent]) -> Vec<Outcome> {
    events
        .iter()
        .filter_map(|e| match e {
            OwnedEvent::Frame {
                offset,
                bytes,
                envelope,
            } => Some(Outcome::Frame {
                offset: *offset,
                bytes: bytes.clone(),
                envelope: envelope.clone(),
            }),
            OwnedEvent::NotProtocol { offset, line } => Some(Outcome::NotProtocol {
                offset: *offset,
                line: line.clone(),
            }),
            OwnedEvent::Discarded {
                offset,
                len,
                at_eof: false,
                envelope,
                well_formed,
            } => Some(Outcome::Rejected {
                offset: *offset,
                len: *len,
                envelope: well_formed.then(|| envelope.clone()),
            }),
            OwnedEvent::Discarded {
                offset,
                len,
                at_eof: true,
                ..
            }
            | OwnedEvent::Truncated { offset, len, .. } => Some(Outcome::LostAtEof {
                offset: *offset,
                len: *len,
            }),
            OwnedEvent::Oversize { .. } | OwnedEvent::Malformed { .. } => None,
        })
        .collect()
}

/// The memory bound every test and fuzz target asserts after each step: the
/// framer never holds more than the transport limit.
pub const BUFFER_SLACK_BYTES: usize = 0;

/// Runs `stream` through a fresh framer, pushed in the given chunk lengths
/// (cycled; a zero length pushes an empty chunk), then finishes it if `eof`.
/// Panics if the memory bound is ever broken, or if a second framer fed the
/// same chunks through the [packed form](crate::packed) (with the caller's
/// [`HeldLine`](crate::packed::HeldLine)) gives other events or counters.
pub fn run_split(
    config: Config,
    stream: &[u8],
    lengths: &[usize],
    eof: bool,
) -> (Vec<OwnedEvent>, Stats) {
    let mut framer = Framer::new(config);
    let mut events = Vec::new();
    let mut packing = PackedCheck::new(config);
    let mut in_place = InPlaceCheck::new(config, stream.len(), lengths);
    let mut rest = stream;
    let mut step = 0;
    while !rest.is_empty() {
        let len = if lengths.is_empty() {
            rest.len()
        } else {
            lengths[step % lengths.len()]
        };
        step += 1;
        let (chunk, tail) = rest.split_at(len.min(rest.len()));
        framer.push(chunk, |e| packing.add(e));
        in_place.check(chunk, &packing.expected);
        packing.check(chunk, false, &mut events);
        assert_memory_bound(&framer);
        rest = tail;
        if step > stream.len() * 2 + 16 {
            // Only zero lengths: push the rest whole.
            framer.push(rest, |e| packing.add(e));
            in_place.check(rest, &packing.expected);
            packing.check(rest, false, &mut events);
            rest = &[];
        }
    }
    if eof {
        framer.finish(|e| packing.add(e));
        in_place.finish(&packing.expected);
        packing.check(&[], true, &mut events);
    }
    assert_eq!(in_place.framer.stats(), framer.stats(), "in-place counters");
    assert_memory_bound(&framer);
    assert_eq!(packing.framer.stats(), framer.stats(), "packed counters");
    (events, *framer.stats())
}

/// A second framer fed the same chunks through the packed form, as a
/// caller across the component boundary would: its events, decoded against
/// the chunk and the caller's held line, must equal the first framer's,
/// borrowing the chunk exactly where the first framer did.
struct PackedCheck {
    framer: Framer,
    batch: crate::packed::PackedBatch,
    held: crate::packed::HeldLine,
    expected: Vec<(OwnedEvent, Option<usize>)>,
}

fn with_chunk_start(event: crate::Event<'_>) -> (OwnedEvent, Option<usize>) {
    let chunk_start = match event {
        crate::Event::Frame(frame) => frame.chunk_start,
        _ => None,
    };
    (OwnedEvent::from(event), chunk_start)
}

impl PackedCheck {
    fn new(config: Config) -> Self {
        PackedCheck {
            framer: Framer::new(config),
            batch: Default::default(),
            held: Default::default(),
            expected: Vec::new(),
        }
    }

    fn add(&mut self, event: crate::Event<'_>) {
        self.expected.push(with_chunk_start(event));
    }

    /// Pushes `chunk` (or finishes) packed, compares, then moves the
    /// events to `out`.
    fn check(&mut self, chunk: &[u8], finish: bool, out: &mut Vec<OwnedEvent>) {
        let packed = if finish {
            self.framer.finish_packed(&mut self.batch)
        } else {
            self.framer.push_packed(chunk, &mut self.batch)
        };
        packed.expect("every event packs");
        let mut decoded = Vec::new();
        let batch = &self.batch;
        self.held
            .receive(
                chunk,
                &batch.words,
                &batch.carried,
                batch.join,
                batch.keep,
                |event| decoded.push(with_chunk_start(event)),
            )
            .expect("a batch the framer wrote decodes");
        assert_eq!(decoded, self.expected, "events changed in the packed form");
        let limit = self.framer.config().max_frame_bytes() + 1;
        assert!(
            self.held.as_bytes().len() <= limit,
            "the caller holds {} bytes, limit {limit}",
            self.held.as_bytes().len()
        );
        out.extend(self.expected.drain(..).map(|(event, _)| event));
    }
}

/// A third framer fed the same chunks as reads into its own buffer
/// ([`InPlaceFramer`]), with room for the largest chunk so that each chunk
/// is one read: its events must equal the first framer's, borrowing the
/// read exactly where the first framer borrowed the chunk, and it must
/// hold no more than the limit plus one read.
struct InPlaceCheck {
    framer: InPlaceFramer,
    read_bytes: usize,
}

impl InPlaceCheck {
    fn new(config: Config, stream_len: usize, lengths: &[usize]) -> Self {
        // With zero lengths the rest of the stream may be pushed whole.
        let read_bytes = match lengths.iter().copied().max() {
            Some(most) if !lengths.contains(&0) => most.min(stream_len),
            _ => stream_len,
        };
        let read_bytes = read_bytes.max(1);
        InPlaceCheck {
            framer: InPlaceFramer::new(config, read_bytes),
            read_bytes,
        }
    }

    fn check(&mut self, chunk: &[u8], expected: &[(OwnedEvent, Option<usize>)]) {
        let mut seen = Vec::new();
        if !chunk.is_empty() {
            self.framer.spare()[..chunk.len()].copy_from_slice(chunk);
            self.framer
                .filled(chunk.len(), |e| seen.push(with_chunk_start(e)));
        }
        self.compare(&seen, expected);
    }

    fn finish(&mut self, expected: &[(OwnedEvent, Option<usize>)]) {
        let mut seen = Vec::new();
        self.framer.finish(|e| seen.push(with_chunk_start(e)));
        self.compare(&seen, expected);
    }

    fn compare(
        &self,
        seen: &[(OwnedEvent, Option<usize>)],
        expected: &[(OwnedEvent, Option<usize>)],
    ) {
        assert_eq!(seen, expected, "events changed in place");
        let limit = self
            .framer
            .framer()
            .config()
            .max_frame_bytes()
            .saturating_add(1);
        assert!(
            self.framer.buffered() <= limit,
            "in place holds {} bytes of a line, limit {limit}",
            self.framer.buffered()
        );
        assert!(
            self.framer.capacity() <= limit.saturating_add(self.read_bytes),
            "in place allocated {} bytes for a limit of {limit} and reads of {}",
            self.framer.capacity(),
            self.read_bytes
        );
    }
}

/// Panics if `framer` holds more than its limit allows.
pub fn assert_memory_bound(framer: &Framer) {
    let limit = framer.config().max_frame_bytes() + BUFFER_SLACK_BYTES;
    assert!(
        framer.buffered() <= limit,
        "framer holds {} bytes, limit {limit}",
        framer.buffered()
    );
    assert!(framer.stats().buffered_high_water <= limit as u64);
}

/// A small deterministic generator (xorshift64*), so workloads are the same
/// on every run and every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Where `edited` is `original` with one run of bytes inserted, the run:
/// the oracle of [`crate::splice`] edits (`None` when `edited` differs in
/// any other way).
pub fn inserted<'e>(original: &[u8], edited: &'e [u8]) -> Option<&'e [u8]> {
    let grown = edited.len().checked_sub(original.len())?;
    let at = original
        .iter()
        .zip(edited)
        .position(|(a, b)| a != b)
        .unwrap_or(original.len());
    (edited[..at] == original[..at] && edited[at + grown..] == original[at..])
        .then(|| &edited[at..at + grown])
}
