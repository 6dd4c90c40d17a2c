//! The incremental framer: newline-delimited messages, a byte limit checked
//! before anything is parsed, and recovery at the next newline.

use alloc::vec::Vec;

use crate::config::Config;
use crate::event::{Envelope, Event, Frame, JsonError, JsonErrorKind};
use crate::json::EnvelopeOffsets;
use crate::json::{LineStart, Validator};
use crate::packed::{HeldEvent, PackedBatch, PackedError};
use crate::stats::Stats;
use crate::utf8::{self, Utf8Stream};

/// What the framer knows about the line it is in the middle of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    /// Nothing but whitespace so far (or nothing at all): not yet classified.
    Undecided,
    /// Starts like JSON: checked for UTF-8 (and validated) as it arrives.
    Json,
    /// Does not start like JSON: a stray log line, kept only to hand it out.
    Text,
    /// Rejected: counting bytes until the newline, keeping none of them.
    /// This is the recovery state: the stream is resynchronised at the next
    /// `\n` without ever buffering the bad line.
    Discarding(Rejection),
}

/// Whether a discarded line is still being validated (see `Framer::follow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Follow {
    /// No: not JSON, malformed, validation off, or not discarding.
    Off,
    /// The limit came before the line's first byte that is not whitespace
    /// (a limit below the indentation): follow it if that byte is `{`.
    Classify,
    /// Yes, and every byte so far was valid.
    On,
}

/// Why a line is being discarded, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rejection {
    Oversize,
    Malformed,
}

/// An incremental framer for newline-delimited JSON-RPC (MCP's stdio
/// transport).
///
/// Push chunks of any size, split anywhere; receive [`Event`]s. It holds at
/// most [`Config::max_frame_bytes`] bytes of an unfinished line, whatever the
/// input.
///
/// ```
/// use drainpipe_framer::{Config, Event, Framer};
///
/// let mut framer = Framer::new(Config::default().with_max_frame_bytes(64));
/// let mut frames = Vec::new();
/// for chunk in [&b"{\"jsonrpc\":\"2.0\",\"id\":1,\"res"[..], b"ult\":{}}\nServer started\n"] {
///     framer.push(chunk, |event| match event {
///         Event::Frame(frame) => frames.push(frame.bytes.to_vec()),
///         Event::NotProtocol { line, .. } => assert_eq!(line, b"Server started"),
///         other => panic!("unexpected {other:?}"),
///     });
/// }
/// assert_eq!(frames, [br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec()]);
/// ```
#[derive(Debug)]
pub struct Framer {
    config: Config,
    line: Line,
    /// Stream offset of the next byte to be pushed.
    pos: u64,
    /// Stream offset of the current line's first byte.
    line_start: u64,
    /// Bytes of the current line so far, without the newline: what a
    /// rejected line's [`Event::Discarded`] reports.
    line_len: u64,
    /// Bytes of the current line that count against the limit (a `\r` that
    /// may turn out to precede the newline is not counted until it is
    /// followed by something else).
    content_len: usize,
    /// The last byte so far was a `\r` that has not been counted, buffered or
    /// validated yet: if the newline follows it is not part of the message.
    cr_held: bool,
    /// The unfinished line, when it spans chunks. Never longer than
    /// `max_frame_bytes`: this is the memory bound. Left empty by the packed
    /// entry points, whose caller holds the line instead.
    buf: Vec<u8>,
    /// Length of the unfinished line so far as `buf` would hold it (without
    /// a held `\r`), whoever holds it.
    held: usize,
    utf8: Utf8Stream,
    /// The range of the chunk being pushed that is known to be valid UTF-8
    /// from a code point boundary: checked once per push, from the first
    /// JSON piece to the end of the chunk, so a chunk of many small messages
    /// costs one validation pass instead of one per message. `None` until a
    /// piece needs it.
    clean: Option<(usize, usize)>,
    /// Whether this push still reads lines before their newline (see
    /// `whole_line`): on with validation, off for the rest of the push after
    /// a line that reading could not decide. Input that makes the validator
    /// read on past a line's end (a newline inside an object, each line
    /// leaving one open) then costs at most one extra pass over a chunk,
    /// not one per line.
    whole_lines: bool,
    validator: Validator,
    /// Whether a line rejected for its size still goes through the UTF-8
    /// check and the validator (none of its bytes kept), so that the
    /// envelope is known wherever it stands. An `id` written last, as the
    /// TypeScript SDK does, comes long after the limit; without this the
    /// request it answers could not be named.
    follow: Follow,
    /// Bytes at the start of the current line that `whole_line` already fed
    /// to the validator: the line's first piece skips them.
    prefed: usize,
    stats: Stats,
}

/// Where the push loop sends events. `line` is the framer's buffer of the
/// unfinished line at that moment: events of a line that spanned pushes
/// borrow it, and the packed form refers to it by offset.
trait Sink {
    /// Whether the framer keeps the bytes of a line that spans pushes. If
    /// not, events of such a line go to [`Sink::held`].
    const RETAINS: bool;

    fn event(&mut self, event: Event<'_>, line: &[u8]);

    /// An event of a line that spanned pushes, whose first `line_len`
    /// bytes the caller holds. Only called when `RETAINS` is false.
    fn held(
        &mut self,
        _offset: u64,
        _line_len: usize,
        _event: HeldEvent,
        _envelope: Option<&EnvelopeOffsets>,
    ) {
    }

    /// A validated frame that lies whole in the chunk, `chunk[at..at +
    /// len]`, starting at stream `offset`, its envelope still in
    /// `validator`. The default resolves it into an [`Event::Frame`]; a sink
    /// that writes offsets (the packed form) takes them as they are, without
    /// making slices of them to turn back into offsets.
    fn whole_frame(
        &mut self,
        chunk: &[u8],
        at: usize,
        len: usize,
        offset: u64,
        validator: &Validator,
        line: &[u8],
    ) {
        let bytes = &chunk[at..at + len];
        let frame = Frame {
            bytes,
            offset,
            chunk_start: Some(at),
            envelope: validator.envelope(bytes),
        };
        self.event(Event::Frame(frame), line);
    }
}

/// The public API's sink: a closure.
struct Callback<F>(F);

impl<F: FnMut(Event<'_>)> Sink for Callback<F> {
    const RETAINS: bool = true;

    fn event(&mut self, event: Event<'_>, _line: &[u8]) {
        (self.0)(event)
    }
}

/// The packed form's sink; keeps the first error and ignores the rest.
struct Packer<'a> {
    chunk: &'a [u8],
    batch: &'a mut PackedBatch,
    error: Option<PackedError>,
}

impl<'a> Packer<'a> {
    fn new(chunk: &'a [u8], batch: &'a mut PackedBatch) -> Self {
        Packer {
            chunk,
            batch,
            error: None,
        }
    }

    fn done(self) -> Result<(), PackedError> {
        self.error.map_or(Ok(()), Err)
    }
}

impl Sink for Packer<'_> {
    const RETAINS: bool = false;

    fn event(&mut self, event: Event<'_>, line: &[u8]) {
        if self.error.is_none()
            && let Err(error) = self.batch.push_event(self.chunk, line, event)
        {
            self.error = Some(error);
        }
    }

    fn held(
        &mut self,
        offset: u64,
        line_len: usize,
        event: HeldEvent,
        envelope: Option<&EnvelopeOffsets>,
    ) {
        if self.error.is_none()
            && let Err(error) =
                self.batch
                    .push_offsets(self.chunk.len(), line_len, offset, event, envelope)
        {
            self.error = Some(error);
        }
    }

    fn whole_frame(
        &mut self,
        _chunk: &[u8],
        at: usize,
        len: usize,
        offset: u64,
        validator: &Validator,
        _line: &[u8],
    ) {
        let envelope = validator.envelope_offsets();
        if self.error.is_none()
            && let Err(error) = self.batch.push_frame(at, len, offset, &envelope)
        {
            self.error = Some(error);
        }
    }
}

/// The in-place sink ([`InPlaceFramer`](crate::InPlaceFramer)): the line
/// that spans pushes lies in the caller's buffer, from its first byte, right
/// before the chunk. The framer copies none of it; its events borrow it
/// there.
struct InPlace<'a, F> {
    /// The unfinished line's bytes from before this push, then the chunk.
    line: &'a [u8],
    on_event: F,
}

impl<F: FnMut(Event<'_>)> Sink for InPlace<'_, F> {
    const RETAINS: bool = false;

    fn event(&mut self, event: Event<'_>, _line: &[u8]) {
        (self.on_event)(event)
    }

    fn held(
        &mut self,
        offset: u64,
        line_len: usize,
        event: HeldEvent,
        envelope: Option<&EnvelopeOffsets>,
    ) {
        // Only the line that was unfinished when the push began spans it,
        // so it starts at the buffer's first byte.
        let line = &self.line[..line_len.min(self.line.len())];
        let envelope = envelope.map_or_else(Envelope::default, |e| e.resolve(line));
        let part = |len: usize| &line[..len.min(line.len())];
        let event = match event {
            HeldEvent::Frame { len } => Event::Frame(Frame {
                bytes: part(len),
                offset,
                chunk_start: None,
                envelope,
            }),
            HeldEvent::NotProtocol { len } => Event::NotProtocol {
                offset,
                line: part(len),
            },
            HeldEvent::Oversize { looks_like_json } => Event::Oversize {
                offset,
                looks_like_json,
                envelope,
            },
            HeldEvent::Malformed { error } => Event::Malformed {
                offset,
                error,
                envelope,
            },
            HeldEvent::Truncated { len } => Event::Truncated {
                offset,
                len,
                envelope,
            },
        };
        (self.on_event)(event)
    }
}

/// The `\r` released into a line when something follows it.
const CR: &[u8] = b"\r";

impl Framer {
    /// A framer with the given limits. Allocates nothing until a message spans
    /// chunks.
    pub fn new(config: Config) -> Self {
        Framer {
            config,
            line: Line::Undecided,
            pos: 0,
            line_start: 0,
            line_len: 0,
            content_len: 0,
            cr_held: false,
            buf: Vec::new(),
            held: 0,
            utf8: Utf8Stream::default(),
            clean: None,
            whole_lines: false,
            validator: Validator::new(config.max_depth()),
            follow: Follow::Off,
            prefed: 0,
            stats: Stats::default(),
        }
    }

    /// The limits this framer was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Bytes fed to the JSON validator since creation, counting a byte
    /// each time it is read (tests bound re-reading with it).
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn validator_bytes(&self) -> u64 {
        self.validator.bytes_fed
    }

    /// Counters since creation or the last [`Framer::reset`].
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Bytes currently held for an unfinished line (at most
    /// `max_frame_bytes`): by the framer, or with the packed entry points
    /// by their caller.
    pub fn buffered(&self) -> usize {
        self.held
    }

    /// Stream offset of the next byte: the number of bytes pushed since
    /// creation or the last reset.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Forgets the stream: any unfinished line is dropped without an event,
    /// counters and offsets start again from zero. Allocations are kept.
    pub fn reset(&mut self) {
        self.pos = 0;
        self.stats = Stats::default();
        self.start_line(0);
    }

    /// Pushes the next chunk of the stream and calls `on_event` for each
    /// event, in stream order. Every byte of `chunk` is consumed.
    ///
    /// Frames that lie inside `chunk` borrow it (no copy); a frame that
    /// spanned chunks borrows the framer's buffer, assembled once.
    pub fn push<F: FnMut(Event<'_>)>(&mut self, chunk: &[u8], on_event: F) {
        self.push_into(chunk, &mut Callback(on_event));
    }

    /// Pushes the next chunk and appends its events to `batch` in the
    /// [packed form](crate::packed), for a caller across a boundary (the
    /// WebAssembly component) that keeps the unfinished line itself: see
    /// [`packed`](crate::packed) for what `batch.join` and `batch.keep` ask
    /// of it. The framer then keeps none of the line's bytes (only its
    /// length and the envelope's offsets), so a message that spans pushes
    /// is copied once, by the caller. `batch` is cleared first.
    ///
    /// Use these entry points or [`Framer::push`]/[`Framer::finish`] for a
    /// whole stream: `push` in the middle of a line begun here panics, as
    /// the framer does not have the line's start.
    pub fn push_packed(
        &mut self,
        chunk: &[u8],
        batch: &mut PackedBatch,
    ) -> Result<(), PackedError> {
        batch.clear();
        // A line begun in an earlier push, not being discarded: the caller
        // holds its bytes, and joins to them the chunk's part of that line
        // (never more than the limit leaves room for).
        let held_before = self.unfinished_len();
        let mut packer = Packer::new(chunk, batch);
        let first_line = self.push_into(chunk, &mut packer);
        packer.done()?;
        if held_before > 0 {
            let room = (self.config.max_frame_bytes() + 1).saturating_sub(held_before);
            batch.join = first_line.min(room) as u32;
        }
        batch.keep = self.unfinished_len() as u32;
        Ok(())
    }

    /// [`Framer::finish`] into a packed batch (see [`Framer::push_packed`]).
    pub fn finish_packed(&mut self, batch: &mut PackedBatch) -> Result<(), PackedError> {
        batch.clear();
        let mut packer = Packer::new(&[], batch);
        self.finish_into(&mut packer);
        packer.done()
    }

    /// Pushes the last `line.len() - held` bytes of `line` as the next
    /// chunk, where the `held` bytes before them are the unfinished line
    /// from its first byte (as [`Framer::push_packed`]'s caller would hold
    /// it): a line that ends in the chunk is handed out from `line`, not
    /// copied. Returns how many bytes at the end of `line` the caller must
    /// keep for the next push (the line left unfinished).
    pub(crate) fn push_in_place<F: FnMut(Event<'_>)>(
        &mut self,
        line: &[u8],
        held: usize,
        on_event: F,
    ) -> usize {
        debug_assert_eq!(held, self.unfinished_len(), "the caller's line");
        let chunk = &line[held.min(line.len())..];
        self.push_into(chunk, &mut InPlace { line, on_event });
        self.unfinished_len()
    }

    /// [`Framer::finish`] for the caller of [`Framer::push_in_place`]:
    /// `line` is the unfinished line it kept.
    pub(crate) fn finish_in_place<F: FnMut(Event<'_>)>(&mut self, line: &[u8], on_event: F) {
        self.finish_into(&mut InPlace { line, on_event });
    }

    /// Bytes of the current line the caller of [`Framer::push_packed`] must
    /// keep: all of it so far (a held `\r` included), none once it is being
    /// discarded.
    fn unfinished_len(&self) -> usize {
        match self.line {
            Line::Discarding(_) => 0,
            _ => self.line_len as usize,
        }
    }

    /// The push loop; returns how many bytes of `chunk` the first line took
    /// (up to its newline, or all of them).
    fn push_into<S: Sink>(&mut self, chunk: &[u8], sink: &mut S) -> usize {
        self.check_family::<S>();
        self.stats.bytes_in += chunk.len() as u64;
        self.clean = None;
        let mut first_line = None;
        let mut at = 0;
        self.whole_lines = self.config.json_validation();
        while at < chunk.len() {
            if self.whole_lines
                && let Some(newline) = self.whole_line(chunk, at, sink)
            {
                first_line.get_or_insert(newline);
                self.pos += newline as u64 + 1;
                at += newline + 1;
                self.start_line(self.pos);
                continue;
            }
            let rest = &chunk[at..];
            match memchr::memchr(b'\n', rest) {
                Some(newline) => {
                    first_line.get_or_insert(newline);
                    self.feed(chunk, at, newline, true, sink);
                    self.pos += newline as u64 + 1;
                    at += newline + 1;
                    self.start_line(self.pos);
                }
                None => {
                    self.feed(chunk, at, rest.len(), false, sink);
                    self.pos += rest.len() as u64;
                    at = chunk.len();
                }
            }
        }
        first_line.unwrap_or(chunk.len())
    }

    /// Ends the stream. An unfinished line is reported as
    /// [`Event::Truncated`] (or, if it was being discarded, as the
    /// [`Event::Discarded`] that ends it). The framer is then ready for a new
    /// stream; offsets and counters continue.
    pub fn finish<F: FnMut(Event<'_>)>(&mut self, on_event: F) {
        self.finish_into(&mut Callback(on_event));
    }

    fn finish_into<S: Sink>(&mut self, sink: &mut S) {
        self.check_family::<S>();
        let offset = self.line_start;
        let len = self.line_len;
        match self.line {
            Line::Discarding(_) => self.end_discard(true, sink),
            Line::Undecided if self.content_len == 0 && !self.cr_held => {}
            Line::Undecided => self.stats.blank_lines += 1,
            Line::Json | Line::Text => {
                self.stats.truncated += 1;
                // Every piece of an unfinished line is held.
                if S::RETAINS {
                    let envelope = self.envelope_of(&self.buf);
                    sink.event(
                        Event::Truncated {
                            offset,
                            len,
                            envelope,
                        },
                        &self.buf,
                    );
                } else {
                    let envelope = self.envelope_offsets();
                    sink.held(
                        offset,
                        self.held,
                        HeldEvent::Truncated { len },
                        envelope.as_ref(),
                    );
                }
            }
        }
        self.start_line(self.pos);
    }

    fn start_line(&mut self, offset: u64) {
        self.line = Line::Undecided;
        self.line_start = offset;
        self.line_len = 0;
        self.content_len = 0;
        self.cr_held = false;
        self.buf.clear();
        self.held = 0;
        self.utf8 = Utf8Stream::default();
        self.validator.reset();
        self.follow = Follow::Off;
        self.prefed = 0;
    }

    /// The fast path for a line that starts at `chunk[at]` with `{` when
    /// validation is on (most lines of a stream of messages): the validator
    /// reads it before the newline is looked for, and the end of the
    /// top-level object followed by a newline ends the line. One pass over
    /// the bytes instead of two, and one event built without the piece
    /// bookkeeping. Returns where the newline is (from `at`) if the line was
    /// framed here.
    ///
    /// It reads no more than the limit, only bytes already checked as UTF-8,
    /// and nothing past the first newline as part of the line, so the events
    /// are those of the general path. When the line does not end in what it
    /// read, what the validator has read stays fed (`prefed`), unless it
    /// stopped at an error, which may lie past the line's end, or crossed a
    /// newline: it is then reset, the general path feeds the line again (a
    /// malformed line is validated twice, at most up to the limit), and the
    /// rest of the push takes the general path.
    fn whole_line<S: Sink>(&mut self, chunk: &[u8], at: usize, sink: &mut S) -> Option<usize> {
        let fresh = self.line == Line::Undecided
            && self.content_len == 0
            && self.held == 0
            && !self.cr_held;
        if chunk[at] != b'{' || !fresh {
            return None;
        }
        let len = (chunk.len() - at).min(self.config.max_frame_bytes());
        let mut known = self.known_utf8(chunk, Some(at), len);
        // A `\r` is left to the general path, which holds it back in case
        // the newline follows (it is then not content, not even fed).
        if known > 0 && chunk[at + known - 1] == b'\r' {
            known -= 1;
        }
        match self.validator.feed_line(&chunk[at..at + known]) {
            LineStart::Whole(newline) => {
                let end = match chunk[at..at + newline] {
                    [.., b'\r'] => newline - 1,
                    _ => newline,
                };
                self.line = Line::Json;
                self.stats.frames += 1;
                self.stats.largest_frame = self.stats.largest_frame.max(end as u64);
                sink.whole_frame(chunk, at, end, self.line_start, &self.validator, &self.buf);
                Some(newline)
            }
            LineStart::Fed => {
                self.prefed = known;
                None
            }
            LineStart::Unknown => {
                self.validator.reset();
                self.whole_lines = false;
                None
            }
        }
    }

    /// Takes `chunk[from..from + len]`, the next piece of the current line;
    /// `last` says whether a newline follows it.
    fn feed<S: Sink>(&mut self, chunk: &[u8], from: usize, len: usize, last: bool, sink: &mut S) {
        let mut piece = &chunk[from..from + len];
        self.line_len += len as u64;
        if let Line::Discarding(_) = self.line {
            if self.follow != Follow::Off {
                self.follow_piece(chunk, from, len);
            }
            if last {
                self.end_discard(false, sink);
            }
            return;
        }
        // A held `\r` followed by more bytes was content after all.
        if self.cr_held && !piece.is_empty() {
            self.cr_held = false;
            if !self.take(chunk, None, CR, sink) {
                // The rest of the piece is the discarded line's.
                if self.follow != Follow::Off {
                    self.follow_piece(chunk, from, len);
                }
                if last {
                    self.end_discard(false, sink);
                }
                return;
            }
            self.hold::<S>(CR);
        }
        if let [body @ .., b'\r'] = piece {
            // Hold a trailing `\r` back: if the newline follows, it is not
            // part of the message and does not count against the limit.
            piece = body;
            self.cr_held = true;
        }
        let in_chunk_from = if self.held == 0 && self.content_len == 0 {
            Some(from)
        } else {
            None
        };
        if !self.take(chunk, Some(from), piece, sink) {
            if last {
                self.end_discard(false, sink);
            }
            return;
        }
        if last {
            self.end_line(piece, in_chunk_from, sink);
        } else if !piece.is_empty() {
            self.hold::<S>(piece);
        }
    }

    /// The callback entry points need the framer to hold the whole
    /// unfinished line; after the packed ones it holds none of it. Switching
    /// in the middle of a line would hand out a message without its start.
    fn check_family<S: Sink>(&self) {
        assert!(
            !S::RETAINS || self.buf.len() == self.held,
            "Framer::push or finish in the middle of a line begun by push_packed: \
             use one family of entry points per stream (or reset)"
        );
    }

    /// Adds `bytes` to the unfinished line: to the buffer if this sink
    /// needs the framer to keep them, and to the count either way.
    fn hold<S: Sink>(&mut self, bytes: &[u8]) {
        if S::RETAINS {
            self.buf.extend_from_slice(bytes);
        } else if self.line == Line::Json {
            // The caller keeps the bytes: copy the envelope's fields, in
            // case the line is rejected later and the caller drops them.
            self.validator.retain(bytes, self.held as u64);
        }
        self.held += bytes.len();
        let held = self.held as u64;
        if held > self.stats.buffered_high_water {
            self.stats.buffered_high_water = held;
        }
    }

    /// The envelope recorded for the current line as offsets, for a caller
    /// that holds the line (`None` where [`Framer::envelope_of`] gives an
    /// empty one).
    fn envelope_offsets(&self) -> Option<EnvelopeOffsets> {
        (self.line == Line::Json && self.config.json_validation())
            .then(|| self.validator.envelope_offsets())
    }

    /// Counts, classifies and checks `piece` as content of the current line;
    /// `at` is where it starts in `chunk` (`None` for a released `\r`).
    /// Returns `false` if the line was rejected (the caller stops and
    /// discards). Does not buffer.
    fn take<S: Sink>(
        &mut self,
        chunk: &[u8],
        at: Option<usize>,
        piece: &[u8],
        sink: &mut S,
    ) -> bool {
        // The line began with this piece: its bytes so far are all in `piece`.
        let fresh = self.held == 0 && self.content_len == 0;
        let room = self.config.max_frame_bytes() - self.content_len;
        let (allowed, over) = if piece.len() > room {
            (&piece[..room], true)
        } else {
            (piece, false)
        };
        if self.line == Line::Undecided
            && let Some(first) = allowed
                .iter()
                .position(|&b| !matches!(b, b' ' | b'\t' | b'\r'))
        {
            self.line = if matches!(allowed[first], b'{' | b'[' | b'"') {
                Line::Json
            } else {
                Line::Text
            };
            // Whitespace already taken was not fed to the validator:
            // keep its error offsets relative to the line start.
            self.validator.skip(self.content_len);
        }
        let rejected = match self.line {
            Line::Json => self.check(chunk, at, allowed).err(),
            _ => None,
        };
        self.content_len += allowed.len();
        if rejected.is_none() && !over {
            return true;
        }
        // Rejected: the envelope needs the line so far in one piece. At most
        // the limit is assembled (by the caller, for the packed entry
        // points), and only on this path.
        if !fresh {
            self.hold::<S>(allowed);
        }
        // What `Event::Discarded` will report needs the fields copied now:
        // the line's bytes are about to go (with the packed entry points,
        // `hold` has copied them already).
        if self.line == Line::Json {
            if fresh {
                self.validator.retain(allowed, 0);
            } else if S::RETAINS {
                self.validator.retain(&self.buf, 0);
            }
        }
        let offset = self.line_start;
        let looks_like_json = self.line == Line::Json;
        let undecided = self.line == Line::Undecided;
        let why = match rejected {
            Some(_) => {
                self.stats.malformed += 1;
                Rejection::Malformed
            }
            None => {
                self.stats.oversize += 1;
                Rejection::Oversize
            }
        };
        if fresh || S::RETAINS {
            let line = if fresh { allowed } else { &self.buf[..] };
            let envelope = self.envelope_of(line);
            let event = match rejected {
                Some(error) => Event::Malformed {
                    offset,
                    error,
                    envelope,
                },
                None => Event::Oversize {
                    offset,
                    looks_like_json,
                    envelope,
                },
            };
            sink.event(event, &self.buf);
        } else {
            let event = match rejected {
                Some(error) => HeldEvent::Malformed { error },
                None => HeldEvent::Oversize { looks_like_json },
            };
            let envelope = self.envelope_offsets();
            sink.held(offset, self.held, event, envelope.as_ref());
        }
        self.discard(why);
        if why == Rejection::Oversize && self.config.json_validation() {
            self.follow = match (looks_like_json, undecided) {
                (true, _) => Follow::On,
                (false, true) => Follow::Classify,
                (false, false) => Follow::Off,
            };
            let rest = &piece[allowed.len()..];
            self.follow(chunk, at.map(|at| at + allowed.len()), rest);
        }
        false
    }

    /// The next piece of a line being discarded while `follow` is set
    /// (`chunk[from..from + len]`): checked and validated like content, kept
    /// nowhere. A trailing `\r` is held back as `feed` holds it (released
    /// if more of the line follows), so the validator sees exactly the
    /// line's content.
    fn follow_piece(&mut self, chunk: &[u8], from: usize, len: usize) {
        let mut piece = &chunk[from..from + len];
        if self.cr_held && !piece.is_empty() {
            self.cr_held = false;
            self.follow(chunk, None, CR);
        }
        if let [body @ .., b'\r'] = piece {
            piece = body;
            self.cr_held = true;
        }
        self.follow(chunk, Some(from), piece);
    }

    /// Feeds `piece` (at `at` in `chunk`, `None` for a released `\r`) of a
    /// followed line to the checks, copying envelope fields that end in it;
    /// stops following at the first error.
    fn follow(&mut self, chunk: &[u8], at: Option<usize>, piece: &[u8]) {
        if self.follow == Follow::Off || piece.is_empty() {
            return;
        }
        let start = self.content_len;
        // Offsets past `usize` (a line over 4 GiB on a 32-bit target): stop
        // following rather than wrap; the line then reports not well formed.
        let Some(end) = start.checked_add(piece.len()) else {
            self.follow = Follow::Off;
            return;
        };
        if self.follow == Follow::Classify {
            match piece.iter().find(|&&b| !matches!(b, b' ' | b'\t' | b'\r')) {
                None => {
                    self.content_len = end;
                    return;
                }
                Some(b'{') => {
                    // As `take` classifies: whitespace so far is skipped.
                    self.validator.skip(start);
                    self.follow = Follow::On;
                }
                Some(_) => {
                    self.follow = Follow::Off;
                    return;
                }
            }
        }
        let checked = self.check(chunk, at, piece);
        // Fields recorded before an error count too (as at a rejection).
        self.validator.retain(piece, start as u64);
        self.content_len = end;
        if checked.is_err() {
            self.follow = Follow::Off;
        }
    }

    /// The envelope recorded for the current line, resolved against its bytes.
    fn envelope_of<'a>(&self, line: &'a [u8]) -> Envelope<'a> {
        if self.line == Line::Json && self.config.json_validation() {
            self.validator.envelope(line)
        } else {
            Envelope::default()
        }
    }

    /// UTF-8 and (if on) JSON checks of the next content bytes of a JSON line.
    ///
    /// The validator only ever sees bytes already confirmed as UTF-8, so
    /// which error is reported first does not depend on where chunks split.
    fn check(&mut self, chunk: &[u8], at: Option<usize>, piece: &[u8]) -> Result<(), JsonError> {
        let validate = self.config.json_validation();
        let known = self.known_utf8(chunk, at, piece.len());
        // The start `whole_line` fed already (only ever within `known`).
        let prefed = core::mem::take(&mut self.prefed);
        if validate && known > prefed {
            self.validator.feed(&piece[prefed..known])?;
        }
        let rest = &piece[known..];
        if rest.is_empty() {
            return Ok(());
        }
        let validator = &mut self.validator;
        let mut confirmed = self.content_len + known - self.utf8.held();
        let utf8 = self.utf8.feed(rest, |valid| {
            confirmed += valid.len();
            if validate {
                validator.feed(valid)
            } else {
                Ok(())
            }
        })?;
        utf8.map_err(|()| JsonError {
            kind: JsonErrorKind::InvalidUtf8,
            at: confirmed as u64,
        })
    }

    /// How many leading bytes of the `len`-byte piece at `at` in `chunk`
    /// lie in the chunk's clean range (see `Framer::clean`), so need no
    /// UTF-8 check of their own. Zero while a code point cut by the previous
    /// piece is pending, and past an invalid byte (the rest of the chunk is
    /// then checked piece by piece, never re-scanned).
    ///
    /// Inline: it runs once per message, and as a call of its own (where a
    /// compiler keeps it out of line, as for WebAssembly) its prologue cost
    /// more than its work; the one validation pass per push is out of line.
    #[inline]
    fn known_utf8(&mut self, chunk: &[u8], at: Option<usize>, len: usize) -> usize {
        let Some(from) = at else { return 0 };
        if self.utf8.held() > 0 {
            return 0;
        }
        let (start, end) = match self.clean {
            Some(range) => range,
            None => *self.clean.insert(clean_range(chunk, from)),
        };
        if !(start..=end).contains(&from) {
            return 0;
        }
        let mut known = (end - from).min(len);
        // A piece cut short (at the limit) may stop inside a code point: the
        // validator must not see part of one, so keep whole code points and
        // let the stream hold the rest, as it would without this shortcut.
        while known > 0 && known < end - from && chunk[from + known] & 0xC0 == 0x80 {
            known -= 1;
        }
        known
    }

    /// Starts discarding the current line. A held `\r` stays held: if the
    /// line is followed, it is content when more follows it.
    fn discard(&mut self, why: Rejection) {
        self.line = Line::Discarding(why);
        self.buf.clear();
        self.held = 0;
    }

    /// The rejected line ended, by its newline or (`at_eof`) the stream's end.
    fn end_discard<S: Sink>(&mut self, at_eof: bool, sink: &mut S) {
        if let Line::Discarding(why) = self.line {
            self.count_dropped(why);
        }
        let well_formed = self.follow == Follow::On
            && (at_eof || (self.utf8.held() == 0 && self.validator.finish().is_ok()));
        let envelope = if self.config.json_validation() {
            self.validator.kept_envelope()
        } else {
            Envelope::default()
        };
        sink.event(
            Event::Discarded {
                offset: self.line_start,
                len: self.line_len,
                at_eof,
                envelope,
                well_formed,
            },
            &self.buf,
        );
    }

    fn count_dropped(&mut self, why: Rejection) {
        match why {
            Rejection::Oversize => self.stats.oversize_bytes_dropped += self.line_len,
            Rejection::Malformed => self.stats.malformed_bytes_dropped += self.line_len,
        }
    }

    /// The newline came: hand out the line as whatever it turned out to be.
    fn end_line<S: Sink>(&mut self, last_piece: &[u8], in_chunk_from: Option<usize>, sink: &mut S) {
        let offset = self.line_start;
        if self.line == Line::Undecided {
            self.stats.blank_lines += 1;
            return;
        }
        let complete = match self.line {
            Line::Json if self.utf8.held() > 0 => {
                let at = self.content_len - self.utf8.held();
                Err(JsonError {
                    kind: JsonErrorKind::InvalidUtf8,
                    at: at as u64,
                })
            }
            Line::Json if self.config.json_validation() => self.validator.finish(),
            _ => Ok(()),
        };
        if in_chunk_from.is_none() {
            self.hold::<S>(last_piece);
        }
        let len = match in_chunk_from {
            Some(_) => last_piece.len(),
            None => self.held,
        };
        let kind = match (complete, self.line) {
            (Err(error), _) => {
                self.stats.malformed += 1;
                HeldEvent::Malformed { error }
            }
            (Ok(()), Line::Text) => {
                self.stats.not_protocol += 1;
                HeldEvent::NotProtocol { len }
            }
            (Ok(()), _) => {
                self.stats.frames += 1;
                self.stats.largest_frame = self.stats.largest_frame.max(len as u64);
                HeldEvent::Frame { len }
            }
        };
        if in_chunk_from.is_some() || S::RETAINS {
            let bytes: &[u8] = match in_chunk_from {
                Some(_) => last_piece,
                None => &self.buf,
            };
            let envelope = self.envelope_of(bytes);
            let event = match kind {
                HeldEvent::Malformed { error } => Event::Malformed {
                    offset,
                    error,
                    envelope,
                },
                HeldEvent::NotProtocol { .. } => Event::NotProtocol {
                    offset,
                    line: bytes,
                },
                _ => Event::Frame(Frame {
                    bytes,
                    offset,
                    chunk_start: in_chunk_from,
                    envelope,
                }),
            };
            sink.event(event, &self.buf);
        } else {
            // A text line has no envelope: `envelope_offsets` gives none.
            let envelope = self.envelope_offsets();
            sink.held(offset, self.held, kind, envelope.as_ref());
        }
        if matches!(kind, HeldEvent::Malformed { .. }) {
            // `Event::Discarded` reports the envelope from copies (the
            // packed entry points' `hold` has made them already).
            match in_chunk_from {
                Some(_) => self.validator.retain(last_piece, 0),
                None if S::RETAINS => self.validator.retain(&self.buf, 0),
                None => {}
            }
            self.line = Line::Discarding(Rejection::Malformed);
            self.end_discard(false, sink);
        }
    }
}

/// The range of `chunk` from `from` that is valid UTF-8: to its end, or to
/// the first invalid or cut code point. One pass per push (see
/// `Framer::clean`).
#[inline(never)]
fn clean_range(chunk: &[u8], from: usize) -> (usize, usize) {
    (from, from + utf8::valid_up_to(&chunk[from..]))
}
