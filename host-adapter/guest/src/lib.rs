//! The framer and the result budget as a WebAssembly component: glue
//! between `wit/framer.wit` and `drainpipe-framer`. All logic lives (and is
//! tested) in the core crate; this crate only translates types, and events
//! into the WIT's batched, span-based form.
//!
//! `no_std` with a small allocator, so the component imports nothing.
#![no_std]

extern crate alloc;

#[cfg(feature = "budget")]
mod budget;
#[cfg(feature = "budget")]
mod sse;

use alloc::vec::Vec;
use core::cell::RefCell;

use drainpipe_framer as core_framer;
use drainpipe_framer::packed::{EVENT_WORDS, HeldLine, PackedBatch, PackedError};
use exports::drainpipe::framer::framing as wit;

#[cfg(not(feature = "budget"))]
wit_bindgen::generate!({ path: "wit", world: "framer" });
#[cfg(feature = "budget")]
wit_bindgen::generate!({ path: "wit", world: "drainpipe" });

#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// A panic is a bug (or the memory cap): trap, and let the host start a
/// fresh instance for the next session.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

struct Component;

impl wit::Guest for Component {
    type Framer = Framer;
}

/// The resource. WIT methods take `&self`; one instance serves one stream
/// at a time, so a `RefCell` never sees contention.
struct Framer(RefCell<Stream>);

/// One stream: the framer, and the unfinished line the typed family holds.
///
/// Both families run the framer's packed path, so the guest carries one
/// copy of the framer's code, not one per way of handing out events: the
/// typed `push` keeps the line that spans pushes itself, as a host of the
/// packed family does, and turns the decoded events into WIT records.
struct Stream {
    framer: core_framer::Framer,
    /// The typed family's unfinished line (empty in the packed family,
    /// whose host holds it).
    held: HeldLine,
    /// The last batch, kept for its allocations.
    batch: PackedBatch,
}

impl wit::GuestFramer for Framer {
    fn new(limits: wit::Limits) -> Self {
        let config = core_framer::Config::default()
            .with_max_frame_bytes(limits.max_frame_bytes as usize)
            .with_max_depth(limits.max_depth)
            .with_json_validation(limits.validate_json);
        Framer(RefCell::new(Stream {
            framer: core_framer::Framer::new(config),
            held: HeldLine::default(),
            batch: PackedBatch::default(),
        }))
    }

    fn push(&self, chunk: Vec<u8>) -> wit::Batch {
        let stream = &mut *self.0.borrow_mut();
        let packed = stream.framer.push_packed(&chunk, &mut stream.batch);
        stream.typed(&chunk, packed)
    }

    fn finish(&self) -> wit::Batch {
        let stream = &mut *self.0.borrow_mut();
        let packed = stream.framer.finish_packed(&mut stream.batch);
        stream.typed(&[], packed)
    }

    fn push_packed(&self, chunk: Vec<u8>) -> wit::PackedBatch {
        // The words go to the host with the batch, so each push needs a
        // fresh vector: sized for one message per 128 bytes, so a chunk of
        // small messages does not grow it (and copy it) ten times over.
        let mut batch = PackedBatch {
            words: Vec::with_capacity((chunk.len() / 128 + 1) * EVENT_WORDS),
            ..PackedBatch::default()
        };
        let packed = self.0.borrow_mut().framer.push_packed(&chunk, &mut batch);
        returned(batch, packed)
    }

    fn finish_packed(&self) -> wit::PackedBatch {
        let mut batch = PackedBatch::default();
        let packed = self.0.borrow_mut().framer.finish_packed(&mut batch);
        returned(batch, packed)
    }

    fn stats(&self) -> wit::Stats {
        let s = *self.0.borrow().framer.stats();
        wit::Stats {
            bytes_in: s.bytes_in,
            frames: s.frames,
            largest_frame: s.largest_frame,
            oversize: s.oversize,
            oversize_bytes_dropped: s.oversize_bytes_dropped,
            malformed: s.malformed,
            malformed_bytes_dropped: s.malformed_bytes_dropped,
            not_protocol: s.not_protocol,
            blank_lines: s.blank_lines,
            truncated: s.truncated,
            buffered_high_water: s.buffered_high_water,
        }
    }

    fn buffered(&self) -> u32 {
        self.0.borrow().framer.buffered() as u32
    }

    fn position(&self) -> u64 {
        self.0.borrow().framer.position()
    }

    fn reset(&self) {
        let stream = &mut *self.0.borrow_mut();
        stream.framer.reset();
        stream.held.clear();
    }
}

impl Stream {
    /// The typed form of the packed batch that `push_packed` or
    /// `finish_packed` (of `chunk`) just wrote: the held line joins and
    /// keeps as the batch says, and each event becomes a WIT record.
    fn typed(&mut self, chunk: &[u8], packed: Result<(), PackedError>) -> wit::Batch {
        packed_or_trap(packed);
        let b = &self.batch;
        let mut batch = Batcher::new(chunk);
        let received = self
            .held
            .receive(chunk, &b.words, &b.carried, b.join, b.keep, |event| {
                batch.add(event)
            });
        if received.is_err() {
            // The framer's own batch does not decode: a bug, so trap.
            panic!("the framer's packed batch does not decode")
        }
        batch.done()
    }
}

/// Collects one push's events. Bytes that lie inside the pushed chunk are
/// referenced by span (the host already holds them); everything else is
/// appended once to `carried`.
struct Batcher<'c> {
    chunk: &'c [u8],
    events: Vec<wit::Event>,
    carried: Vec<u8>,
}

impl<'c> Batcher<'c> {
    fn new(chunk: &'c [u8]) -> Self {
        Batcher {
            chunk,
            events: Vec::new(),
            carried: Vec::new(),
        }
    }

    fn done(self) -> wit::Batch {
        wit::Batch {
            events: self.events,
            carried: self.carried,
        }
    }

    /// An event's bytes borrow the chunk, the held line or the packed
    /// batch's carried bytes; comparing addresses tells whether they lie in
    /// the chunk, without the core having to say.
    fn bytes(&mut self, bytes: &[u8]) -> wit::BytesRef {
        let chunk_at = self.chunk.as_ptr() as usize;
        let at = bytes.as_ptr() as usize;
        if !bytes.is_empty() && at >= chunk_at && at + bytes.len() <= chunk_at + self.chunk.len() {
            return wit::BytesRef::Chunk(wit::Span {
                start: (at - chunk_at) as u32,
                len: bytes.len() as u32,
            });
        }
        let start = self.carried.len() as u32;
        self.carried.extend_from_slice(bytes);
        wit::BytesRef::Carried(wit::Span {
            start,
            len: bytes.len() as u32,
        })
    }

    fn envelope(&mut self, e: core_framer::Envelope<'_>) -> wit::Envelope {
        wit::Envelope {
            jsonrpc: e.jsonrpc.map(|b| self.bytes(b)),
            id: e.id.map(|id| match id {
                core_framer::Id::Number(b) => wit::Id::Number(self.bytes(b)),
                core_framer::Id::String(b) => wit::Id::String(self.bytes(b)),
                core_framer::Id::Null => wit::Id::Null,
            }),
            method: e.method.map(|b| self.bytes(b)),
            has_result: e.has_result,
            has_error: e.has_error,
        }
    }

    fn add(&mut self, event: core_framer::Event<'_>) {
        use core_framer::Event as E;
        let event = match event {
            E::Frame(f) => wit::Event::Frame(wit::Frame {
                offset: f.offset,
                bytes: self.bytes(f.bytes),
                envelope: self.envelope(f.envelope),
            }),
            E::Oversize {
                offset,
                looks_like_json,
                envelope,
            } => wit::Event::Oversize(wit::Oversize {
                offset,
                looks_like_json,
                envelope: self.envelope(envelope),
            }),
            E::Malformed {
                offset,
                error,
                envelope,
            } => wit::Event::Malformed(wit::Malformed {
                offset,
                error: wit::JsonError {
                    kind: error_kind(error.kind),
                    at: error.at,
                },
                envelope: self.envelope(envelope),
            }),
            E::Discarded {
                offset,
                len,
                at_eof,
                envelope,
                well_formed,
            } => wit::Event::Discarded(wit::Discarded {
                offset,
                len,
                at_eof,
                envelope: self.envelope(envelope),
                well_formed,
            }),
            E::NotProtocol { offset, line } => wit::Event::NotProtocol(wit::NotProtocol {
                offset,
                line: self.bytes(line),
            }),
            E::Truncated {
                offset,
                len,
                envelope,
            } => wit::Event::Truncated(wit::Truncated {
                offset,
                len,
                envelope: self.envelope(envelope),
            }),
            // An event the WIT cannot express yet: trap rather than drop it
            // silently. The parity tests fail first.
            _ => panic!("event not in wit/framer.wit"),
        };
        self.events.push(event);
    }
}

/// Packing fails only past 4 GiB, which a wasm32 guest cannot reach: a
/// bug, so trap (the host reports it).
fn packed_or_trap(packed: Result<(), PackedError>) {
    if packed.is_err() {
        panic!("packed batch past 4 GiB")
    }
}

/// The WIT record of a packed batch.
fn returned(batch: PackedBatch, packed: Result<(), PackedError>) -> wit::PackedBatch {
    packed_or_trap(packed);
    wit::PackedBatch {
        words: batch.words,
        join: batch.join,
        keep: batch.keep,
        carried: batch.carried,
    }
}

/// The WIT enum's cases, in its order: indexed by the framer's code for a
/// kind ([`core_framer::JsonErrorKind::code`]), which follows that order.
const WIT_ERROR_KINDS: [wit::JsonErrorKind; 10] = [
    wit::JsonErrorKind::InvalidUtf8,
    wit::JsonErrorKind::ControlInString,
    wit::JsonErrorKind::InvalidEscape,
    wit::JsonErrorKind::UnexpectedByte,
    wit::JsonErrorKind::InvalidNumber,
    wit::JsonErrorKind::InvalidLiteral,
    wit::JsonErrorKind::TrailingCharacters,
    wit::JsonErrorKind::TopLevelNotObject,
    wit::JsonErrorKind::DepthLimit,
    wit::JsonErrorKind::Incomplete,
];

fn error_kind(kind: core_framer::JsonErrorKind) -> wit::JsonErrorKind {
    WIT_ERROR_KINDS[usize::from(kind.code())]
}

export!(Component);
