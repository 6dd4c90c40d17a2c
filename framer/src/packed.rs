//! Events packed into fixed-size records of `u32` words, for crossing a
//! boundary where every field costs: the WebAssembly component's
//! `push-packed` (see `wit/framer.wit`) returns exactly this form.
//!
//! A boundary such as the component model copies a list of integers as one
//! block, but converts a list of variants and options field by field; on
//! small messages that conversion cost more than finding the messages. So
//! each event becomes [`EVENT_WORDS`] words, and every byte range an event
//! refers to is a `(start, len)` pair in one *byte space*: the chunk that was
//! pushed, followed by the *held line*. No message bytes cross the boundary
//! back: the caller already has them.
//!
//! # The held line: the caller assembles
//!
//! A message that spans pushes is assembled by the caller, not copied back
//! out of the framer. The caller keeps the bytes of the line that is not
//! finished yet (at most the transport limit plus one `\r`), following two
//! numbers in each batch:
//!
//! - before reading the events, it appends the first [`PackedBatch::join`]
//!   bytes of the chunk to its held line (the rest of a line begun in an
//!   earlier push); spans past the end of the chunk point into that line;
//! - after the events, it keeps only the last [`PackedBatch::keep`] bytes of
//!   its held line followed by the rest of the chunk (the line left
//!   unfinished, from its first byte; none when it is being discarded).
//!
//! [`HeldLine::receive`] does both, checked. [`Framer::push_packed`](crate::Framer::push_packed) and
//! [`Framer::finish_packed`](crate::Framer::finish_packed) encode; [`decode`] turns the words back into
//! the same borrowed [`Event`]s the [`Framer`](crate::Framer) gave, checking
//! every word: a batch from an untrusted producer (a guest that has a bug)
//! gives a [`PackedError`], never a panic or an out-of-range slice.
//!
//! # Layout of one event
//!
//! | word | contents |
//! |---|---|
//! | 0 | tag: bits 0–3 kind (1 frame, 2 oversize, 3 malformed, 4 discarded, 5 not-protocol, 6 truncated); bits 4–7 JSON error kind (malformed only, 1–10 in the order of `json-error-kind` in the WIT); bits 8–9 id (0 none, 1 number, 2 string, 3 null); bit 10 `jsonrpc` present; bit 11 `method` present; bit 12 has-result; bit 13 has-error; bit 14 looks-like-json (oversize); bit 15 at-eof (discarded). Other bits, and the bits of another kind, are zero: a decoder refuses them. |
//! | 1, 2 | stream offset of the line, low and high 32 bits |
//! | 3, 4 | frame and not-protocol: the bytes, as start and len; discarded and truncated: the line length, low and high; malformed: the error's offset in the line, low and high |
//! | 5, 6 | `jsonrpc` start and len |
//! | 7, 8 | id start and len (the number token, or the string's raw contents) |
//! | 9, 10 | `method` start and len |
//!
//! Unused words are zero. A discarded event's envelope (bits 8–13, words
//! 5–10) is of the whole line, whose bytes are gone: its spans point into
//! the batch's [`PackedBatch::carried`] bytes instead, and bit 16 says
//! `well-formed`.
//!
//! ```
//! use drainpipe_framer::packed::{HeldLine, PackedBatch};
//! use drainpipe_framer::{Config, Event, Framer};
//!
//! let mut framer = Framer::new(Config::default());
//! let mut batch = PackedBatch::default();
//! let mut held = HeldLine::default();
//! for chunk in [&b"{\"id\":1,\"res"[..], b"ult\":2}\nhello\n"] {
//!     framer.push_packed(chunk, &mut batch).unwrap();
//!     held.receive(chunk, &batch.words, &batch.carried, batch.join, batch.keep, |event| match event {
//!         // Assembled across the two pushes, in the held line.
//!         Event::Frame(frame) => assert_eq!(frame.bytes, b"{\"id\":1,\"result\":2}"),
//!         // Inside the second chunk: a span of it, not a copy.
//!         Event::NotProtocol { line, .. } => assert_eq!(line, b"hello"),
//!         other => panic!("{other:?}"),
//!     })
//!     .unwrap();
//! }
//! ```

use alloc::vec::Vec;
use core::fmt;

use crate::json::{EnvelopeOffsets, IdKind};
use crate::{Envelope, Event, Frame, Id, JsonError, JsonErrorKind};

/// Words per event.
pub const EVENT_WORDS: usize = 11;

const KIND_FRAME: u32 = 1;
const KIND_OVERSIZE: u32 = 2;
const KIND_MALFORMED: u32 = 3;
const KIND_DISCARDED: u32 = 4;
const KIND_NOT_PROTOCOL: u32 = 5;
const KIND_TRUNCATED: u32 = 6;

const ERROR_SHIFT: u32 = 4;
const ID_SHIFT: u32 = 8;
const ID_NONE: u32 = 0;
const ID_NUMBER: u32 = 1;
const ID_STRING: u32 = 2;
const ID_NULL: u32 = 3;
const HAS_JSONRPC: u32 = 1 << 10;
const HAS_METHOD: u32 = 1 << 11;
const HAS_RESULT: u32 = 1 << 12;
const HAS_ERROR: u32 = 1 << 13;
const LOOKS_LIKE_JSON: u32 = 1 << 14;
const AT_EOF: u32 = 1 << 15;
const WELL_FORMED: u32 = 1 << 16;
/// The envelope's tag bits, which every kind but not-protocol may set.
const ENVELOPE_BITS: u32 = (3 << ID_SHIFT) | HAS_JSONRPC | HAS_METHOD | HAS_RESULT | HAS_ERROR;
/// The bits a tag of each kind may set (by kind; none for kinds that do
/// not exist): one mask test per record on the host, where three tests
/// of the bits that belong to one kind cost a tenth of decoding a frame.
const KIND_BITS: [u32; 7] = [
    0,
    KIND_FRAME | ENVELOPE_BITS,
    KIND_OVERSIZE | ENVELOPE_BITS | LOOKS_LIKE_JSON,
    KIND_MALFORMED | ENVELOPE_BITS | (0xf << ERROR_SHIFT),
    KIND_DISCARDED | ENVELOPE_BITS | AT_EOF | WELL_FORMED,
    KIND_NOT_PROTOCOL,
    KIND_TRUNCATED | ENVELOPE_BITS,
];

/// What went wrong packing or unpacking events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PackedError {
    /// The words are not a whole number of events.
    Length {
        /// Number of words received.
        words: usize,
    },
    /// The event at `index` has a tag with an unknown kind, error kind or bit.
    Tag {
        /// Index of the event in the batch.
        index: usize,
        /// The tag word.
        tag: u32,
    },
    /// The event at `index` refers to bytes outside the chunk and the
    /// held line, or across the boundary between them.
    Span {
        /// Index of the event in the batch.
        index: usize,
    },
    /// The chunk and the held line together passed 4 GiB, which spans of
    /// `u32` cannot address (a wasm32 guest never gets there).
    TooLarge,
    /// `join` or `keep` asks for more bytes than the chunk and the held
    /// line have.
    Held {
        /// The batch's `join`.
        join: u32,
        /// The batch's `keep`.
        keep: u32,
    },
}

impl fmt::Display for PackedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PackedError::Length { words } => write!(
                f,
                "{words} words are not a whole number of {EVENT_WORDS}-word events"
            ),
            PackedError::Tag { index, tag } => {
                write!(f, "event {index} has an invalid tag {tag:#x}")
            }
            PackedError::Span { index } => {
                write!(f, "event {index} refers to bytes out of range")
            }
            PackedError::TooLarge => f.write_str("chunk and held line passed 4 GiB"),
            PackedError::Held { join, keep } => write!(
                f,
                "join {join} or keep {keep} is more than the chunk and the held line have"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for PackedError {}

/// The events of one push (or finish), packed: what `push-packed` returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedBatch {
    /// [`EVENT_WORDS`] words per event, in stream order.
    pub words: Vec<u32>,
    /// Leading bytes of the chunk to append to the held line before reading
    /// the events.
    pub join: u32,
    /// Bytes to keep afterwards: the last `keep` of the held line followed
    /// by the rest of the chunk.
    pub keep: u32,
    /// The envelope fields of discarded lines, whose bytes are in neither
    /// the chunk nor the held line: a discarded event's spans point here.
    /// Empty when no such field was recorded.
    pub carried: Vec<u8>,
}

impl PackedBatch {
    /// Empties the batch, keeping its allocation.
    pub fn clear(&mut self) {
        self.words.clear();
        self.join = 0;
        self.keep = 0;
        self.carried.clear();
    }

    /// Number of events in the batch.
    pub fn len(&self) -> usize {
        self.words.len() / EVENT_WORDS
    }

    /// No events.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Appends `event`, produced by the push of `chunk` (`&[]` for the
    /// events of `finish`) while the framer's line buffer was `line`. Every
    /// byte range lies in one or the other; the line buffer holds the line
    /// from its first byte, as the caller's held line does.
    pub(crate) fn push_event(
        &mut self,
        chunk: &[u8],
        line: &[u8],
        event: Event<'_>,
    ) -> Result<(), PackedError> {
        let mut record = [0u32; EVENT_WORDS];
        let (kind, offset) = match event {
            Event::Frame(Frame {
                bytes,
                offset,
                envelope,
                ..
            }) => {
                self.span(chunk, line, bytes, &mut record[3..5])?;
                record[0] |= self.envelope(chunk, line, &envelope, &mut record)?;
                (KIND_FRAME, offset)
            }
            Event::Oversize {
                offset,
                looks_like_json,
                envelope,
            } => {
                record[0] |= self.envelope(chunk, line, &envelope, &mut record)?;
                if looks_like_json {
                    record[0] |= LOOKS_LIKE_JSON;
                }
                (KIND_OVERSIZE, offset)
            }
            Event::Malformed {
                offset,
                error,
                envelope,
            } => {
                record[0] |= error_code(error.kind) << ERROR_SHIFT;
                split(error.at, &mut record[3..5]);
                record[0] |= self.envelope(chunk, line, &envelope, &mut record)?;
                (KIND_MALFORMED, offset)
            }
            Event::Discarded {
                offset,
                len,
                at_eof,
                envelope,
                well_formed,
            } => {
                split(len, &mut record[3..5]);
                if at_eof {
                    record[0] |= AT_EOF;
                }
                if well_formed {
                    record[0] |= WELL_FORMED;
                }
                record[0] |= self.carry_envelope(&envelope, &mut record)?;
                (KIND_DISCARDED, offset)
            }
            Event::NotProtocol { offset, line } => {
                self.span(chunk, line, line, &mut record[3..5])?;
                (KIND_NOT_PROTOCOL, offset)
            }
            Event::Truncated {
                offset,
                len,
                envelope,
            } => {
                split(len, &mut record[3..5]);
                record[0] |= self.envelope(chunk, line, &envelope, &mut record)?;
                (KIND_TRUNCATED, offset)
            }
        };
        record[0] |= kind;
        split(offset, &mut record[1..3]);
        self.words.extend_from_slice(&record);
        Ok(())
    }

    /// Copies the envelope's fields into `carried`, writes their spans
    /// there into words 5–10 and returns its tag bits.
    fn carry_envelope(
        &mut self,
        envelope: &Envelope<'_>,
        record: &mut [u32; EVENT_WORDS],
    ) -> Result<u32, PackedError> {
        let mut carried = core::mem::take(&mut self.carried);
        let mut carry = |bytes: &[u8], out: &mut [u32]| -> Result<(), PackedError> {
            let start = u32::try_from(carried.len()).map_err(|_| PackedError::TooLarge)?;
            carried.extend_from_slice(bytes);
            out[0] = start;
            out[1] = bytes.len() as u32;
            Ok(())
        };
        let mut tag = 0;
        let mut outcome = Ok(());
        if let Some(jsonrpc) = envelope.jsonrpc {
            tag |= HAS_JSONRPC;
            outcome = outcome.and_then(|()| carry(jsonrpc, &mut record[5..7]));
        }
        let id = match envelope.id {
            None => ID_NONE,
            Some(Id::Null) => ID_NULL,
            Some(Id::Number(bytes)) => {
                outcome = outcome.and_then(|()| carry(bytes, &mut record[7..9]));
                ID_NUMBER
            }
            Some(Id::String(bytes)) => {
                outcome = outcome.and_then(|()| carry(bytes, &mut record[7..9]));
                ID_STRING
            }
        };
        tag |= id << ID_SHIFT;
        if let Some(method) = envelope.method {
            tag |= HAS_METHOD;
            outcome = outcome.and_then(|()| carry(method, &mut record[9..11]));
        }
        if envelope.has_result {
            tag |= HAS_RESULT;
        }
        if envelope.has_error {
            tag |= HAS_ERROR;
        }
        self.carried = carried;
        outcome.map(|()| tag)
    }

    /// Writes the envelope's spans into words 5–10 and returns its tag bits.
    fn envelope(
        &mut self,
        chunk: &[u8],
        line: &[u8],
        envelope: &Envelope<'_>,
        record: &mut [u32; EVENT_WORDS],
    ) -> Result<u32, PackedError> {
        let mut tag = 0;
        if let Some(jsonrpc) = envelope.jsonrpc {
            tag |= HAS_JSONRPC;
            self.span(chunk, line, jsonrpc, &mut record[5..7])?;
        }
        let id = match envelope.id {
            None => ID_NONE,
            Some(Id::Null) => ID_NULL,
            Some(Id::Number(bytes)) => {
                self.span(chunk, line, bytes, &mut record[7..9])?;
                ID_NUMBER
            }
            Some(Id::String(bytes)) => {
                self.span(chunk, line, bytes, &mut record[7..9])?;
                ID_STRING
            }
        };
        tag |= id << ID_SHIFT;
        if let Some(method) = envelope.method {
            tag |= HAS_METHOD;
            self.span(chunk, line, method, &mut record[9..11])?;
        }
        if envelope.has_result {
            tag |= HAS_RESULT;
        }
        if envelope.has_error {
            tag |= HAS_ERROR;
        }
        Ok(tag)
    }

    /// Writes where `bytes` are in the byte space: a span of `chunk` or of
    /// the line, told by address (so the framer need not say). Empty bytes
    /// are `(0, 0)`.
    fn span(
        &mut self,
        chunk: &[u8],
        line: &[u8],
        bytes: &[u8],
        out: &mut [u32],
    ) -> Result<(), PackedError> {
        if bytes.is_empty() {
            out[0] = 0;
            out[1] = 0;
            return Ok(());
        }
        let start = if let Some(at) = offset_in(chunk, bytes) {
            at
        } else if let Some(at) = offset_in(line, bytes) {
            chunk.len() + at
        } else {
            return Err(PackedError::Span { index: self.len() });
        };
        let end = start
            .checked_add(bytes.len())
            .ok_or(PackedError::TooLarge)?;
        if u32::try_from(end).is_err() {
            return Err(PackedError::TooLarge);
        }
        out[0] = start as u32;
        out[1] = bytes.len() as u32;
        Ok(())
    }
}

/// An event whose ranges are offsets from its line's first byte: a line
/// that spanned pushes (from a framer that kept none of its bytes, so the
/// caller holds it), or a frame that lies whole in the chunk.
#[derive(Clone, Copy, Debug)]
pub(crate) enum HeldEvent {
    Frame { len: usize },
    NotProtocol { len: usize },
    Oversize { looks_like_json: bool },
    Malformed { error: JsonError },
    Truncated { len: u64 },
}

impl PackedBatch {
    /// Appends the frame `chunk[at..at + len]` (`len > 0`) starting at
    /// stream `offset`, which the validator read whole: the one event of
    /// most messages. Every envelope field it recorded lies inside the
    /// frame, so no field needs the bound that [`PackedBatch::push_offsets`]
    /// checks for lines it did not see whole, and the event's kind is known:
    /// in the WebAssembly guest those checks and the match were a third of
    /// the framing work per small message outside the scanner. Every test
    /// through `testing::run_split` holds its events to the typed path's.
    #[inline(always)]
    pub(crate) fn push_frame(
        &mut self,
        at: usize,
        len: usize,
        offset: u64,
        envelope: &EnvelopeOffsets,
    ) -> Result<(), PackedError> {
        if at
            .checked_add(len)
            .is_none_or(|end| u32::try_from(end).is_err())
        {
            return Err(PackedError::TooLarge);
        }
        debug_assert!(len > 0, "a frame has at least its braces");
        let base = at as u32;
        // A field's span in the byte space: inside the frame, so below
        // `at + len`; an empty one is (0, 0), as `push_offsets` writes it.
        let put = |(start, field_len): (u64, u64), out: &mut [u32]| {
            debug_assert!(start + field_len <= len as u64, "a field past its frame");
            if field_len > 0 {
                out[0] = base + start as u32;
                out[1] = field_len as u32;
            }
        };
        let mut record = [0u32; EVENT_WORDS];
        let mut tag = KIND_FRAME;
        record[3] = base;
        record[4] = len as u32;
        if let Some(span) = envelope.jsonrpc {
            tag |= HAS_JSONRPC;
            put(span, &mut record[5..7]);
        }
        let id = match envelope.id {
            None => ID_NONE,
            Some((IdKind::Null, _)) => ID_NULL,
            Some((kind, span)) => {
                put(span, &mut record[7..9]);
                if kind == IdKind::Number {
                    ID_NUMBER
                } else {
                    ID_STRING
                }
            }
        };
        tag |= id << ID_SHIFT;
        if let Some(span) = envelope.method {
            tag |= HAS_METHOD;
            put(span, &mut record[9..11]);
        }
        if envelope.has_result {
            tag |= HAS_RESULT;
        }
        if envelope.has_error {
            tag |= HAS_ERROR;
        }
        record[0] = tag;
        split(offset, &mut record[1..3]);
        self.words.extend_from_slice(&record);
        Ok(())
    }

    /// Appends `event` of the line starting at stream `offset`, whose first
    /// `line_len` bytes lie at `base` in the byte space: the pushed chunk's
    /// length for the caller's held line, or where in the chunk a line that
    /// lies whole in it starts. Its ranges are offsets from the line's
    /// start, so no address is compared. Envelope fields past `line_len`
    /// are left out, as [`Event`]s resolved against the line leave them out.
    ///
    /// Always inline: it runs once per message, and as a call (which the
    /// WebAssembly guest's build made it) its prologue and spills cost as
    /// much as its work.
    #[inline(always)]
    pub(crate) fn push_offsets(
        &mut self,
        base: usize,
        line_len: usize,
        offset: u64,
        event: HeldEvent,
        envelope: Option<&EnvelopeOffsets>,
    ) -> Result<(), PackedError> {
        if base
            .checked_add(line_len)
            .is_none_or(|end| u32::try_from(end).is_err())
        {
            return Err(PackedError::TooLarge);
        }
        let held = |start: u64, len: u64, out: &mut [u32]| -> bool {
            if start + len > line_len as u64 {
                return false;
            }
            if len > 0 {
                out[0] = (base as u64 + start) as u32;
                out[1] = len as u32;
            }
            true
        };
        let mut record = [0u32; EVENT_WORDS];
        let kind = match event {
            HeldEvent::Frame { len } => {
                held(0, len as u64, &mut record[3..5]);
                KIND_FRAME
            }
            HeldEvent::NotProtocol { len } => {
                held(0, len as u64, &mut record[3..5]);
                KIND_NOT_PROTOCOL
            }
            HeldEvent::Oversize { looks_like_json } => {
                if looks_like_json {
                    record[0] |= LOOKS_LIKE_JSON;
                }
                KIND_OVERSIZE
            }
            HeldEvent::Malformed { error } => {
                record[0] |= error_code(error.kind) << ERROR_SHIFT;
                split(error.at, &mut record[3..5]);
                KIND_MALFORMED
            }
            HeldEvent::Truncated { len } => {
                split(len, &mut record[3..5]);
                KIND_TRUNCATED
            }
        };
        if let Some(e) = envelope {
            if let Some((start, len)) = e.jsonrpc
                && held(start, len, &mut record[5..7])
            {
                record[0] |= HAS_JSONRPC;
            }
            let id = match e.id {
                None => ID_NONE,
                Some((IdKind::Null, _)) => ID_NULL,
                Some((kind, (start, len))) => {
                    if held(start, len, &mut record[7..9]) {
                        if kind == IdKind::Number {
                            ID_NUMBER
                        } else {
                            ID_STRING
                        }
                    } else {
                        ID_NONE
                    }
                }
            };
            record[0] |= id << ID_SHIFT;
            if let Some((start, len)) = e.method
                && held(start, len, &mut record[9..11])
            {
                record[0] |= HAS_METHOD;
            }
            if e.has_result {
                record[0] |= HAS_RESULT;
            }
            if e.has_error {
                record[0] |= HAS_ERROR;
            }
        }
        record[0] |= kind;
        split(offset, &mut record[1..3]);
        self.words.extend_from_slice(&record);
        Ok(())
    }
}

/// Where `inner` starts in `outer`, if it lies inside it.
fn offset_in(outer: &[u8], inner: &[u8]) -> Option<usize> {
    let from = inner.as_ptr() as usize;
    let base = outer.as_ptr() as usize;
    let at = from.checked_sub(base)?;
    (at + inner.len() <= outer.len()).then_some(at)
}

/// The caller's side of a packed framer: the bytes of the line that is not
/// finished yet (see [the module docs](self)). Never longer than the
/// framer's limit plus one byte.
#[derive(Clone, Debug, Default)]
pub struct HeldLine {
    bytes: Vec<u8>,
}

impl HeldLine {
    /// Reads one batch, the result of pushing `chunk` (`&[]` for a finish):
    /// joins, calls `on_event` for each event in stream order, then keeps
    /// what the batch says. `words`, `carried`, `join` and `keep` are the
    /// batch's fields of those names. A batch that does not decode, or asks
    /// for bytes that are not there, is an error; the held line is then
    /// emptied (the framer that wrote it is not to be trusted further).
    pub fn receive<F: FnMut(Event<'_>)>(
        &mut self,
        chunk: &[u8],
        words: &[u32],
        carried: &[u8],
        join: u32,
        keep: u32,
        mut on_event: F,
    ) -> Result<(), PackedError> {
        let result = self.apply(chunk, words, carried, join, keep, &mut on_event);
        if result.is_err() {
            self.bytes.clear();
        }
        result
    }

    fn apply(
        &mut self,
        chunk: &[u8],
        words: &[u32],
        carried: &[u8],
        join: u32,
        keep: u32,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), PackedError> {
        let bad = PackedError::Held { join, keep };
        let (head, rest) = chunk.split_at_checked(join as usize).ok_or(bad)?;
        self.bytes.extend_from_slice(head);
        // Record by record, each event handed on where it is decoded (not
        // moved through the iterator's `Option<Result<..>>`).
        let mut decode = decode(words, chunk, &self.bytes, carried);
        if decode.length_error {
            return Err(PackedError::Length { words: words.len() });
        }
        for record in words.as_chunks::<EVENT_WORDS>().0 {
            on_event(decode.event(record)?);
            decode.index += 1;
        }
        let keep = keep as usize;
        if keep <= rest.len() {
            self.bytes.clear();
            self.bytes.extend_from_slice(&rest[rest.len() - keep..]);
        } else {
            let from_held = keep - rest.len();
            let drop = self.bytes.len().checked_sub(from_held).ok_or(bad)?;
            self.bytes.drain(..drop);
            self.bytes.extend_from_slice(rest);
        }
        Ok(())
    }

    /// The held bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Forgets the held line (after the framer was reset).
    pub fn clear(&mut self) {
        self.bytes.clear();
    }
}

/// The code of `kind` in a record: [`JsonErrorKind::code`] plus one (0
/// is no error).
fn error_code(kind: JsonErrorKind) -> u32 {
    u32::from(kind.code()) + 1
}

fn split(value: u64, out: &mut [u32]) {
    out[0] = value as u32;
    out[1] = (value >> 32) as u32;
}

fn join(words: &[u32]) -> u64 {
    u64::from(words[0]) | (u64::from(words[1]) << 32)
}

/// The events packed in `words`, borrowing `chunk` (the chunk that was
/// pushed; `&[]` for a finish), `line` (the held line, joined: see
/// [`HeldLine`], which calls this) and `carried` (the batch's
/// [`PackedBatch::carried`]). Yields one item per event; a malformed
/// batch yields one error (at its first bad event, or first of all if the
/// words are not whole events) and then ends.
pub fn decode<'a>(
    words: &'a [u32],
    chunk: &'a [u8],
    line: &'a [u8],
    carried: &'a [u8],
) -> Decode<'a> {
    Decode {
        records: words.chunks_exact(EVENT_WORDS),
        length_error: !words.len().is_multiple_of(EVENT_WORDS),
        words: words.len(),
        chunk,
        line,
        carried,
        index: 0,
        failed: false,
    }
}

/// The iterator [`decode`] returns.
#[derive(Clone, Debug)]
pub struct Decode<'a> {
    records: core::slice::ChunksExact<'a, u32>,
    length_error: bool,
    words: usize,
    chunk: &'a [u8],
    line: &'a [u8],
    carried: &'a [u8],
    index: usize,
    failed: bool,
}

impl<'a> Decode<'a> {
    fn bytes(&self, span: &[u32]) -> Result<&'a [u8], PackedError> {
        let (start, len) = (span[0] as usize, span[1] as usize);
        let bad = PackedError::Span { index: self.index };
        let end = start.checked_add(len).ok_or(bad)?;
        if end <= self.chunk.len() {
            Ok(&self.chunk[start..end])
        } else if start >= self.chunk.len() {
            let from = start - self.chunk.len();
            self.line.get(from..from + len).ok_or(bad)
        } else {
            Err(bad)
        }
    }

    /// A span of the batch's carried bytes.
    fn carried(&self, span: &[u32]) -> Result<&'a [u8], PackedError> {
        let (start, len) = (span[0] as usize, span[1] as usize);
        let end = start.checked_add(len);
        end.and_then(|end| self.carried.get(start..end))
            .ok_or(PackedError::Span { index: self.index })
    }

    /// The envelope in words 5–10, its spans resolved by `bytes`.
    #[inline(always)]
    fn envelope(
        &self,
        tag: u32,
        record: &[u32],
        bytes: impl Fn(&Self, &[u32]) -> Result<&'a [u8], PackedError>,
    ) -> Result<Envelope<'a>, PackedError> {
        let optional = |bit: u32, span: &[u32]| -> Result<Option<&'a [u8]>, PackedError> {
            if tag & bit != 0 {
                bytes(self, span).map(Some)
            } else {
                Ok(None)
            }
        };
        Ok(Envelope {
            jsonrpc: optional(HAS_JSONRPC, &record[5..7])?,
            id: match (tag >> ID_SHIFT) & 3 {
                ID_NONE => None,
                ID_NUMBER => Some(Id::Number(bytes(self, &record[7..9])?)),
                ID_STRING => Some(Id::String(bytes(self, &record[7..9])?)),
                _ => Some(Id::Null),
            },
            method: optional(HAS_METHOD, &record[9..11])?,
            has_result: tag & HAS_RESULT != 0,
            has_error: tag & HAS_ERROR != 0,
        })
    }

    #[inline(always)]
    fn event(&self, record: &[u32]) -> Result<Event<'a>, PackedError> {
        let tag = record[0];
        let bad_tag = PackedError::Tag {
            index: self.index,
            tag,
        };
        let error_code = (tag >> ERROR_SHIFT) & 0xf;
        let kind = tag & 0xf;
        let allowed = KIND_BITS.get(kind as usize).copied().unwrap_or(0);
        if tag & !allowed != 0 {
            return Err(bad_tag);
        }
        let envelope = || self.envelope(tag, record, Self::bytes);
        let offset = join(&record[1..3]);
        Ok(match kind {
            KIND_FRAME => {
                let bytes = self.bytes(&record[3..5])?;
                let in_chunk =
                    !bytes.is_empty() && record[3] as usize + bytes.len() <= self.chunk.len();
                Event::Frame(Frame {
                    bytes,
                    offset,
                    chunk_start: in_chunk.then_some(record[3] as usize),
                    envelope: envelope()?,
                })
            }
            KIND_OVERSIZE => Event::Oversize {
                offset,
                looks_like_json: tag & LOOKS_LIKE_JSON != 0,
                envelope: envelope()?,
            },
            KIND_MALFORMED => Event::Malformed {
                offset,
                error: JsonError {
                    kind: error_code
                        .checked_sub(1)
                        .and_then(|code| u8::try_from(code).ok())
                        .and_then(JsonErrorKind::from_code)
                        .ok_or(bad_tag)?,
                    at: join(&record[3..5]),
                },
                envelope: envelope()?,
            },
            KIND_DISCARDED => Event::Discarded {
                offset,
                len: join(&record[3..5]),
                at_eof: tag & AT_EOF != 0,
                envelope: self.envelope(tag, record, Self::carried)?,
                well_formed: tag & WELL_FORMED != 0,
            },
            KIND_NOT_PROTOCOL => Event::NotProtocol {
                offset,
                line: self.bytes(&record[3..5])?,
            },
            KIND_TRUNCATED => Event::Truncated {
                offset,
                len: join(&record[3..5]),
                envelope: envelope()?,
            },
            _ => return Err(bad_tag),
        })
    }
}

impl<'a> Iterator for Decode<'a> {
    type Item = Result<Event<'a>, PackedError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.length_error {
            self.failed = true;
            return Some(Err(PackedError::Length { words: self.words }));
        }
        let record = self.records.next()?;
        let event = self.event(record);
        self.index += 1;
        self.failed = event.is_err();
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_follow_the_table() {
        for (index, kind) in JsonErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(kind.code()), index, "{kind:?}");
            assert_eq!(JsonErrorKind::from_code(kind.code()), Some(kind));
            assert_eq!(error_code(kind) as usize, index + 1, "{kind:?}");
        }
        assert_eq!(JsonErrorKind::from_code(10), None);
    }
}
