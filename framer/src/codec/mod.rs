//! A tokio-util codec over the [`Framer`]: a drop-in replacement for
//! `LinesCodec` in any `FramedRead` / `FramedWrite` / `Framed`.
//!
//! `LinesCodec` with a max length returns `Err(MaxLineLengthExceeded)` for a
//! long line, and `FramedRead` answers any decoder error by yielding `None`
//! once: a `while let Some(line) = framed.next().await` loop then ends as if
//! the peer had hung up, and the host stops reading the pipe, which is the
//! very stall this crate exists to prevent. [`FramerCodec`] therefore never
//! returns `Err` for anything the peer sent. A rejected line is an item like
//! any other ([`FramerEvent::Oversize`], [`FramerEvent::Malformed`], …); `Err`
//! is kept for I/O errors of the underlying reader.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use drainpipe_framer::codec::{FramerCodec, FramerEvent};
//! use drainpipe_framer::Config;
//! use tokio_stream::StreamExt;
//! use tokio_util::codec::FramedRead;
//!
//! let stdout: &[u8] = b"{\"id\":1,\"result\":{}}\nlog line\n{\"id\":2,\"result\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n{\"id\":3,\"result\":{}}\n";
//! let codec = FramerCodec::new(Config::default().with_max_frame_bytes(40));
//! let mut framed = FramedRead::new(stdout, codec);
//! let mut seen = Vec::new();
//! while let Some(event) = framed.next().await {
//!     match event? {
//!         FramerEvent::Frame(message) => seen.push(format!("frame {}", message.envelope.id().unwrap())),
//!         FramerEvent::Oversize { envelope, .. } => seen.push(format!("fail {} now", envelope.id().unwrap())),
//!         FramerEvent::NotProtocol { line, .. } => seen.push(format!("log {:?}", line)),
//!         _ => {}
//!     }
//! }
//! // The loop went on after the oversize line.
//! assert_eq!(seen, ["frame 1", "log b\"log line\"", "fail 2 now", "frame 3"]);
//! # Ok(()) }
//! ```

mod encoder;
mod envelope;

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use std::io;

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::Decoder;

use crate::{Config, Event, Framer, JsonError, Stats};

pub use encoder::EncodeError;
pub use envelope::MessageEnvelope;

/// A complete message, split off the read buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Message {
    /// The message without its `\n` (and without a `\r` just before it):
    /// valid UTF-8 and, with JSON validation on, one JSON object. Shares the
    /// read buffer's allocation; no copy was made.
    pub bytes: Bytes,
    /// Stream offset of the first byte.
    pub offset: u64,
    /// The routing fields, peeked while the message was validated.
    pub envelope: MessageEnvelope,
}

/// One item of a [`FramerCodec`] stream: the owned form of [`Event`], with
/// the same meaning and the same "what to do next" for each variant.
///
/// Every variant is an ordinary item, never an error, so a `while let` loop
/// over a `FramedRead` keeps reading after a bad line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FramerEvent {
    /// A complete message: dispatch it (see [`Event::Frame`]).
    Frame(Message),
    /// A line that does not start like JSON: log it, never dispatch it (see
    /// [`Event::NotProtocol`]).
    NotProtocol {
        /// Stream offset of the line's first byte.
        offset: u64,
        /// The line without its `\n` and trailing `\r`.
        line: Bytes,
    },
    /// A line passed the transport limit; if the envelope has an id, fail
    /// that request now (see [`Event::Oversize`]).
    Oversize {
        /// Stream offset of the line's first byte.
        offset: u64,
        /// Whether the line started like JSON.
        looks_like_json: bool,
        /// What was peeked before the limit.
        envelope: MessageEnvelope,
    },
    /// A line that starts like JSON but is not a valid message; if the
    /// envelope has an id, fail that request (see [`Event::Malformed`]).
    Malformed {
        /// Stream offset of the line's first byte.
        offset: u64,
        /// What is wrong, and where.
        error: JsonError,
        /// What was peeked before the error.
        envelope: MessageEnvelope,
    },
    /// A rejected line has ended. If the rejection named no request and
    /// the envelope has an id now (an id written last), fail that request
    /// now (see [`Event::Discarded`]).
    Discarded {
        /// Stream offset of the rejected line's first byte.
        offset: u64,
        /// Bytes dropped, without the newline.
        len: u64,
        /// The stream ended before the line's newline.
        at_eof: bool,
        /// The routing fields of the whole line.
        envelope: MessageEnvelope,
        /// The line was a valid message but for its size.
        well_formed: bool,
    },
    /// The stream ended inside a line; if the envelope has an id, fail that
    /// request (see [`Event::Truncated`]).
    Truncated {
        /// Stream offset of the line's first byte.
        offset: u64,
        /// Bytes of the unfinished line that were received.
        len: u64,
        /// What was peeked from the received part.
        envelope: MessageEnvelope,
    },
}

/// The same event with plain vectors, for comparing a codec stream with the
/// framer's own events.
impl From<FramerEvent> for crate::owned::OwnedEvent {
    fn from(event: FramerEvent) -> Self {
        event.as_event().into()
    }
}

impl FramerEvent {
    /// A view of this item as the framer's own [`Event`] (a frame's
    /// `chunk_start` is `None`: the codec owns its bytes).
    pub fn as_event(&self) -> Event<'_> {
        match self {
            FramerEvent::Frame(m) => Event::Frame(crate::Frame {
                bytes: &m.bytes,
                offset: m.offset,
                chunk_start: None,
                envelope: m.envelope.as_envelope(),
            }),
            FramerEvent::NotProtocol { offset, line } => Event::NotProtocol {
                offset: *offset,
                line,
            },
            FramerEvent::Oversize {
                offset,
                looks_like_json,
                envelope,
            } => Event::Oversize {
                offset: *offset,
                looks_like_json: *looks_like_json,
                envelope: envelope.as_envelope(),
            },
            FramerEvent::Malformed {
                offset,
                error,
                envelope,
            } => Event::Malformed {
                offset: *offset,
                error: *error,
                envelope: envelope.as_envelope(),
            },
            FramerEvent::Discarded {
                offset,
                len,
                at_eof,
                envelope,
                well_formed,
            } => Event::Discarded {
                offset: *offset,
                len: *len,
                at_eof: *at_eof,
                envelope: envelope.as_envelope(),
                well_formed: *well_formed,
            },
            FramerEvent::Truncated {
                offset,
                len,
                envelope,
            } => Event::Truncated {
                offset: *offset,
                len: *len,
                envelope: envelope.as_envelope(),
            },
        }
    }

    /// The message, if this is a [`FramerEvent::Frame`].
    pub fn into_message(self) -> Option<Message> {
        match self {
            FramerEvent::Frame(message) => Some(message),
            _ => None,
        }
    }
}

/// An event recorded during one push, before its bytes are split off the
/// read buffer (the framer's callback borrows that buffer).
#[derive(Debug)]
enum Pending {
    /// A frame or a non-protocol line: `len` bytes at stream `offset`.
    Span {
        offset: u64,
        len: usize,
        frame: Option<MessageEnvelope>,
    },
    Ready(FramerEvent),
}

/// A tokio-util [`Decoder`] and [`Encoder`](tokio_util::codec::Encoder) for
/// newline-delimited JSON-RPC, with the [`Framer`]'s guarantees.
///
/// - **Byte limit before parse:** a line longer than
///   [`Config::with_max_frame_bytes`] is reported as
///   [`FramerEvent::Oversize`] the moment it crosses the limit, then dropped
///   from the read buffer as it arrives; the codec keeps at most
///   `max_frame_bytes` (plus one read) of it.
/// - **Recovery:** the next line is decoded normally.
/// - **Strict validation and envelope peek:** as configured in [`Config`].
/// - **No stall after an error:** bad peer data is an item, never `Err`.
/// - **Zero copy:** a message is split off the read buffer
///   (`BytesMut::split_to`), never copied out; bytes already examined are
///   never scanned again, however the stream is chunked.
///
/// The same value encodes outgoing messages: see [`EncodeError`] for what it
/// refuses.
#[derive(Debug)]
pub struct FramerCodec {
    framer: Framer,
    /// Bytes at the front of the read buffer already pushed to the framer.
    /// Why it exists: the framer keeps its own incremental state, so feeding
    /// it a byte twice would be wrong, and rescanning would be quadratic on
    /// a long line that arrives in small reads.
    scanned: usize,
    /// Events decoded but not yet returned (one push can end a line with two
    /// events, e.g. `Malformed` then `Discarded`).
    ready: VecDeque<FramerEvent>,
    /// Reused between pushes so recording events does not allocate.
    pending: Vec<Pending>,
}

impl Default for FramerCodec {
    fn default() -> Self {
        FramerCodec::new(Config::default())
    }
}

impl FramerCodec {
    /// A codec with the given limits (they apply to both directions).
    pub fn new(config: Config) -> Self {
        FramerCodec {
            framer: Framer::new(config),
            scanned: 0,
            ready: VecDeque::new(),
            pending: Vec::new(),
        }
    }

    /// The limits this codec was built with.
    pub fn config(&self) -> &Config {
        self.framer.config()
    }

    /// The framer's counters for the decoded stream, for metrics.
    pub fn stats(&self) -> &Stats {
        self.framer.stats()
    }

    /// Pushes the next line (or the rest of the buffer, if it holds no
    /// newline) to the framer and turns what it reported into items.
    fn push_next(&mut self, src: &mut BytesMut) {
        let unseen = &src[self.scanned..];
        // One line per push keeps the pending list short and lets `decode`
        // return as soon as an item exists; the framer's own scan then stays
        // within the bytes handed to it.
        let end = memchr::memchr(b'\n', unseen).map_or(unseen.len(), |newline| newline + 1);
        let piece = &unseen[..end];
        let pending = &mut self.pending;
        self.framer.push(piece, |event| {
            pending.push(match event {
                Event::Frame(frame) => Pending::Span {
                    offset: frame.offset,
                    len: frame.bytes.len(),
                    frame: Some(frame.envelope.into()),
                },
                Event::NotProtocol { offset, line } => Pending::Span {
                    offset,
                    len: line.len(),
                    frame: None,
                },
                other => Pending::Ready(owned(other)),
            });
        });
        self.scanned += end;
        // Stream offset of `src[0]`.
        let mut base = self.framer.position() - self.scanned as u64;
        for pending in self.pending.drain(..) {
            let event = match pending {
                Pending::Ready(event) => event,
                Pending::Span { offset, len, frame } => {
                    // Every kept line starts at or after `base`: `trim` never
                    // drops bytes of the line in progress.
                    let skip = (offset - base) as usize;
                    src.advance(skip);
                    let bytes = src.split_to(len).freeze();
                    base = offset + len as u64;
                    self.scanned -= skip + len;
                    match frame {
                        Some(envelope) => FramerEvent::Frame(Message {
                            bytes,
                            offset,
                            envelope,
                        }),
                        None => FramerEvent::NotProtocol {
                            offset,
                            line: bytes,
                        },
                    }
                }
            };
            self.ready.push_back(event);
        }
    }

    /// Drops from `src` what no future item can need: everything before the
    /// line in progress, and all of a line being discarded. This is what
    /// keeps the read buffer bounded while a huge line streams past.
    fn trim(&mut self, src: &mut BytesMut) {
        // The framer holds the line in progress from its first byte, except
        // possibly a `\r` it has not decided about yet: keep one more byte.
        let keep = (self.framer.buffered() + 1).min(src.len());
        let drop = src.len() - keep;
        src.advance(drop);
        self.scanned -= drop;
    }
}

impl Decoder for FramerCodec {
    type Item = FramerEvent;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<FramerEvent>, io::Error> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.scanned == src.len() {
                self.trim(src);
                return Ok(None);
            }
            self.push_next(src);
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<FramerEvent>, io::Error> {
        if let Some(event) = self.decode(src)? {
            return Ok(Some(event));
        }
        // Everything is scanned; what is left is the unfinished last line.
        // `finish` is idempotent here: after it the line is empty.
        let ready = &mut self.ready;
        self.framer.finish(|event| ready.push_back(owned(event)));
        src.clear();
        self.scanned = 0;
        Ok(self.ready.pop_front())
    }
}

/// The owned form of an event that carries no message bytes.
fn owned(event: Event<'_>) -> FramerEvent {
    match event {
        Event::Oversize {
            offset,
            looks_like_json,
            envelope,
        } => FramerEvent::Oversize {
            offset,
            looks_like_json,
            envelope: envelope.into(),
        },
        Event::Malformed {
            offset,
            error,
            envelope,
        } => FramerEvent::Malformed {
            offset,
            error,
            envelope: envelope.into(),
        },
        Event::Discarded {
            offset,
            len,
            at_eof,
            envelope,
            well_formed,
        } => FramerEvent::Discarded {
            offset,
            len,
            at_eof,
            envelope: envelope.into(),
            well_formed,
        },
        Event::Truncated {
            offset,
            len,
            envelope,
        } => FramerEvent::Truncated {
            offset,
            len,
            envelope: envelope.into(),
        },
        // Only reached from `finish`, which reports no complete lines; kept
        // total so a future event kind cannot be lost silently.
        Event::Frame(frame) => FramerEvent::Frame(Message {
            bytes: Bytes::copy_from_slice(frame.bytes),
            offset: frame.offset,
            envelope: frame.envelope.into(),
        }),
        Event::NotProtocol { offset, line } => FramerEvent::NotProtocol {
            offset,
            line: Bytes::copy_from_slice(line),
        },
    }
}
