//! Framing where the bytes were read: the caller reads straight into the
//! framer's buffer, as tokio-util's codecs read into a `BytesMut`.
//!
//! [`Framer::push`] takes a chunk the caller owns, so a message that spans
//! chunks is copied into the framer's own buffer to be handed out whole:
//! every byte of a large result is copied once more than it was read.
//! [`InPlaceFramer`] owns the read buffer instead. The caller asks for
//! [`InPlaceFramer::spare`] room, reads into it (a `read(2)` into that
//! slice is the only copy), and says how much came with
//! [`InPlaceFramer::filled`]. The unfinished line stays where it was read,
//! and the next read lands right after it, so a message that spans reads
//! is handed out from the buffer it was read into.
//!
//! The events are exactly those of [`Framer::push`] given the same reads as
//! chunks (the tests run every stream both ways).
//!
//! # Memory
//!
//! The buffer holds the unfinished line (at most the transport limit plus
//! a `\r`, none of a line being discarded) and room for one read: the
//! bound of a [`Framer`] plus its caller's read buffer, in one allocation.
//! A line is moved to the front of the buffer while it is short (at most
//! one read's worth), so a long line grows where it began and is never
//! moved again. The allocation is a read and a short line long until a line
//! outgrows that, then the most a line and a read can need, at once (see
//! [`GROW_AT_ONCE`]): zeroed pages that hold memory only as a long line
//! fills them, so the long line is copied once, while it is short.
//!
//! ```
//! use drainpipe_framer::{Config, Event, InPlaceFramer};
//! use std::io::Read;
//!
//! let mut input: &[u8] = b"{\"id\":1,\"result\":\"long enough to span reads\"}\nhello\n";
//! let mut framer = InPlaceFramer::new(Config::default(), 16);
//! let mut seen = Vec::new();
//! loop {
//!     let n = input.read(framer.spare()).unwrap();
//!     if n == 0 {
//!         break;
//!     }
//!     framer.filled(n, |event| match event {
//!         Event::Frame(frame) => seen.push(frame.bytes.to_vec()),
//!         Event::NotProtocol { line, .. } => seen.push(line.to_vec()),
//!         other => panic!("{other:?}"),
//!     });
//! }
//! framer.finish(|event| panic!("{event:?}"));
//! assert_eq!(seen[0], b"{\"id\":1,\"result\":\"long enough to span reads\"}");
//! assert_eq!(seen[1], b"hello");
//! ```

use alloc::vec::Vec;

use crate::{Config, Event, Framer, Stats};

/// Room past one read in the first buffer, for the start of a message that
/// a read cut: a stream of messages shorter than this never grows the
/// buffer.
pub const SHORT_LINE_BYTES: usize = 4 << 10;

/// The size a buffer that outgrew its first read is taken to at once
/// (or the most it can need, if less: the transport limit plus one read).
/// Past it, the buffer doubles.
pub const GROW_AT_ONCE: usize = 64 << 20;

/// A [`Framer`] that owns the buffer its input is read into (see the
/// [module docs](self)).
#[derive(Debug)]
pub struct InPlaceFramer {
    framer: Framer,
    /// Always initialised to its full length (stale bytes past `end` are
    /// overwritten by reads), so handing out room costs no zeroing; only
    /// ever allocated zeroed (see `grow`).
    buf: Vec<u8>,
    /// First byte of the unfinished line the framer asked to keep.
    start: usize,
    /// End of the bytes read.
    end: usize,
    /// Length of the last read, which ends at `end`.
    last: usize,
    /// End of the room the last `spare` gave.
    room: usize,
    read_bytes: usize,
}

impl InPlaceFramer {
    /// A framer with the given limits, reading at most `read_bytes` (at
    /// least one) at a time. Allocates nothing until the first
    /// [`InPlaceFramer::spare`].
    pub fn new(config: Config, read_bytes: usize) -> Self {
        InPlaceFramer {
            framer: Framer::new(config),
            buf: Vec::new(),
            start: 0,
            end: 0,
            last: 0,
            room: 0,
            read_bytes: read_bytes.max(1),
        }
    }

    /// The framer inside, for its configuration.
    pub fn framer(&self) -> &Framer {
        &self.framer
    }

    /// Counters since creation or the last [`InPlaceFramer::reset`].
    pub fn stats(&self) -> &Stats {
        self.framer.stats()
    }

    /// Bytes held for the unfinished line (at most the limit plus one `\r`).
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Bytes allocated for the buffer: the unfinished line and one read.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Room for the next read: exactly `read_bytes`. Fill its start and
    /// call [`InPlaceFramer::filled`] with how much was filled. What it
    /// held before is unspecified.
    pub fn spare(&mut self) -> &mut [u8] {
        let kept = self.end - self.start;
        // A short unfinished line moves to the front (at most one read's
        // worth of bytes): a line then grows where it began, and a long one
        // is moved only if the caller filled less than it was given and the
        // rest of the buffer is too short for a read.
        if self.start > 0
            && (kept <= self.read_bytes || self.buf.len() < self.end + self.read_bytes)
        {
            self.buf.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = kept;
            self.last = 0;
        }
        let needed = self.end + self.read_bytes;
        if self.buf.len() < needed {
            self.grow(needed);
        }
        self.room = needed;
        &mut self.buf[self.end..needed]
    }

    /// Makes the buffer at least `needed` bytes long, the unfinished line
    /// first. The first buffer is a read and [`SHORT_LINE_BYTES`] long; an
    /// unfinished line longer than that takes it at once to the most one
    /// line and one read can need (up to [`GROW_AT_ONCE`], doubling past
    /// that). A fresh zeroed allocation that large is pages the system
    /// zeroes as they are first written, so room never read into costs no
    /// memory and no time, and the line is copied once, while it is at most
    /// a read and a short line long, instead of at every doubling.
    fn grow(&mut self, needed: usize) {
        let long = self.long();
        let target = if self.buf.is_empty() {
            self.read_bytes.saturating_add(SHORT_LINE_BYTES).min(long)
        } else if self.buf.len() < long {
            long
        } else {
            self.buf.len().saturating_mul(2).min(self.most())
        };
        let target = target.max(needed);
        let mut grown = alloc::vec![0u8; target];
        let kept = self.end - self.start;
        grown[..kept].copy_from_slice(&self.buf[self.start..self.end]);
        self.buf = grown;
        self.start = 0;
        self.end = kept;
        self.last = 0;
    }

    /// The most one line and one read can need: the transport limit, a
    /// `\r` held before the newline, and a read.
    fn most(&self) -> usize {
        (self.framer.config().max_frame_bytes())
            .saturating_add(1)
            .saturating_add(self.read_bytes)
    }

    /// The size a buffer takes at once when a line outgrows a read.
    fn long(&self) -> usize {
        self.most().min(GROW_AT_ONCE)
    }

    /// The first `n` bytes of the last [`InPlaceFramer::spare`] were
    /// filled: frames them and calls `on_event` for each event, in stream
    /// order. Events borrow the buffer, until the next call.
    ///
    /// # Panics
    ///
    /// If `n` is more than the room [`InPlaceFramer::spare`] gave.
    pub fn filled<F: FnMut(Event<'_>)>(&mut self, n: usize, on_event: F) {
        assert!(
            self.end + n <= self.room,
            "filled {n} bytes, more than the room given"
        );
        let held = self.end - self.start;
        let line = &self.buf[self.start..self.end + n];
        let keep = self.framer.push_in_place(line, held, on_event);
        self.end += n;
        self.last = n;
        self.start = self.end - keep;
    }

    /// The bytes of the last read, as they were read: valid until the next
    /// [`InPlaceFramer::spare`].
    pub fn last_read(&self) -> &[u8] {
        &self.buf[self.end - self.last..self.end]
    }

    /// Ends the stream, as [`Framer::finish`]. The framer is then ready for
    /// a new stream; offsets and counters continue.
    pub fn finish<F: FnMut(Event<'_>)>(&mut self, on_event: F) {
        self.framer
            .finish_in_place(&self.buf[self.start..self.end], on_event);
        self.start = self.end;
        self.last = 0;
    }

    /// Forgets the stream, as [`Framer::reset`]. The buffer is kept.
    pub fn reset(&mut self) {
        self.framer.reset();
        self.start = 0;
        self.end = 0;
        self.last = 0;
        self.room = 0;
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::*;

    /// Reads `stream` in reads of `read` bytes; returns the frames and the
    /// buffer's capacity after each read.
    fn read_all(
        framer: &mut InPlaceFramer,
        stream: &[u8],
        read: usize,
    ) -> (Vec<Vec<u8>>, Vec<usize>) {
        let (mut frames, mut capacities) = (Vec::new(), Vec::new());
        for piece in stream.chunks(read) {
            framer.spare()[..piece.len()].copy_from_slice(piece);
            framer.filled(piece.len(), |event| match event {
                Event::Frame(frame) => frames.push(frame.bytes.to_vec()),
                other => panic!("{other:?}"),
            });
            capacities.push(framer.capacity());
        }
        (frames, capacities)
    }

    fn message(len: usize) -> Vec<u8> {
        let mut line = br#"{"id":1,"result":""#.to_vec();
        line.resize(len - 2, b'a');
        line.extend_from_slice(b"\"}");
        line
    }

    #[test]
    fn short_messages_never_grow_the_first_buffer() {
        let read = 1000;
        let mut framer = InPlaceFramer::new(Config::default(), read);
        let mut stream = Vec::new();
        for len in [30, 500, 999, 1000, 1001, SHORT_LINE_BYTES - 1].repeat(20) {
            stream.extend_from_slice(&message(len));
            stream.push(b'\n');
        }
        let (frames, capacities) = read_all(&mut framer, &stream, read);
        assert_eq!(frames.len(), 120);
        assert!(
            capacities.iter().all(|&c| c == read + SHORT_LINE_BYTES),
            "{capacities:?}"
        );
    }

    #[test]
    fn a_long_line_takes_the_long_buffer_once_and_keeps_it() {
        let (read, limit) = (1000, 100_000);
        let config = Config::default().with_max_frame_bytes(limit);
        let mut framer = InPlaceFramer::new(config, read);
        let long = message(limit);
        let mut stream = message(100);
        stream.push(b'\n');
        for _ in 0..3 {
            stream.extend_from_slice(&long);
            stream.extend_from_slice(b"\r\n");
        }
        let (frames, capacities) = read_all(&mut framer, &stream, read);
        assert_eq!(frames.len(), 4);
        assert!(frames[1..].iter().all(|frame| *frame == long));
        let most = limit + 1 + read;
        // One step from the first size to the most a line and a read need.
        let mut sizes = capacities.clone();
        sizes.dedup();
        assert_eq!(sizes, [read + SHORT_LINE_BYTES, most]);
        assert_eq!(framer.buffered(), 0);
    }
}
