//! What the framer tells its caller: one [`Event`] per thing that happened in
//! the stream, each documented with what the caller should do next.

use alloc::vec::Vec;
use core::fmt;

/// One thing the framer found in the byte stream.
///
/// Every line of the stream ends in exactly one of: [`Event::Frame`],
/// [`Event::NotProtocol`], a rejection ([`Event::Oversize`] or
/// [`Event::Malformed`], always followed later by exactly one
/// [`Event::Discarded`] for the same offset), [`Event::Truncated`] at end of
/// stream, or nothing at all for a blank line (counted in
/// [`Stats::blank_lines`](crate::Stats::blank_lines)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A complete message. Hand it to your dispatcher; with JSON validation on
    /// it is a well-formed JSON object and its [`Envelope`] tells you where to
    /// route it without parsing it.
    Frame(Frame<'a>),
    /// The line starting at `offset` passed
    /// [`Config::max_frame_bytes`](crate::Config::with_max_frame_bytes). Nothing
    /// more of it is buffered or parsed; the framer is now discarding it up to
    /// the next newline. If `envelope.id` is set (the id came before the
    /// limit), fail that request **now**: its answer will not come.
    Oversize {
        /// Stream offset of the line's first byte.
        offset: u64,
        /// Whether the line started like JSON (`{`, `[` or `"`), i.e. was
        /// meant as a protocol message rather than a stray log line.
        looks_like_json: bool,
        /// What was peeked from the part before the limit.
        envelope: Envelope<'a>,
    },
    /// The line starting at `offset` starts like JSON but is not a valid
    /// message (see [`JsonError`]). It is not buffered further. Count it as a
    /// parse failure; if `envelope.id` is set, fail that request.
    Malformed {
        /// Stream offset of the line's first byte.
        offset: u64,
        /// What is wrong, and where.
        error: JsonError,
        /// What was peeked before the error.
        envelope: Envelope<'a>,
    },
    /// The line rejected earlier by [`Event::Oversize`] or
    /// [`Event::Malformed`] at the same `offset` has ended; `len` bytes were
    /// dropped in all (the whole line without its `\n`).
    ///
    /// `envelope` is the line's envelope over the **whole line**, wherever
    /// its fields stood: an oversize line goes on through the validator
    /// while it is discarded (none of its bytes kept, only copies of the
    /// recorded fields, at most [`Envelope::MAX_FIELD_BYTES`] each). If the
    /// rejection named no request and `envelope.id` is set now (a
    /// serialiser that writes `id` last), fail that request **now**; if it
    /// was failed at the rejection already, there is nothing to do.
    ///
    /// After a syntax error the structure that follows is unknown, so
    /// nothing after the error is recorded: for a [`Event::Malformed`] line
    /// the envelope is what was recorded before the error (the same as the
    /// rejection reported) and `well_formed` is false. Nothing is guessed.
    Discarded {
        /// Stream offset of the rejected line's first byte.
        offset: u64,
        /// The rejected line's length in bytes, without the newline.
        len: u64,
        /// The stream ended before the line's newline.
        at_eof: bool,
        /// The routing fields of the whole line (see above); empty for a
        /// line that was not JSON or with JSON validation off.
        envelope: Envelope<'a>,
        /// The line was a valid message but for its size: every byte fit
        /// JSON's grammar and UTF-8, and (unless the stream ended inside
        /// it) the top-level object closed. Only then is `envelope` the
        /// message's own, as a parser of the whole line would find it.
        /// Always false for a malformed or non-JSON line and with
        /// validation off.
        well_formed: bool,
    },
    /// A line that does not start like JSON, e.g. `Server started on port
    /// 3000` printed to stdout by mistake. Divert it to a log, never to the
    /// protocol, and count it.
    NotProtocol {
        /// Stream offset of the line's first byte.
        offset: u64,
        /// The line, without its `\n` and trailing `\r`.
        line: &'a [u8],
    },
    /// The stream ended inside a line (no final newline). The message is
    /// lost; if `envelope.id` is set, fail that request.
    Truncated {
        /// Stream offset of the line's first byte.
        offset: u64,
        /// Bytes of the unfinished line that were received.
        len: u64,
        /// What was peeked from the received part.
        envelope: Envelope<'a>,
    },
}

/// A complete message, without its `\n` and without a `\r` just before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Frame<'a> {
    /// The message bytes: valid UTF-8; with JSON validation on, one JSON object.
    pub bytes: &'a [u8],
    /// Stream offset of the first byte.
    pub offset: u64,
    /// `Some(start)` when the frame lies inside the chunk just pushed, as
    /// `chunk[start..start + bytes.len()]` (no copy was made); `None` when it
    /// spanned chunks and was assembled in the framer's buffer.
    pub chunk_start: Option<usize>,
    /// The routing fields peeked while the frame was validated (empty when
    /// JSON validation is off).
    pub envelope: Envelope<'a>,
}

/// The JSON-RPC routing fields of a message, recorded while it streamed past.
///
/// Only keys of the top-level object count. If a key appears twice the last
/// one wins, as with `serde_json::Value`. A value longer than
/// [`Envelope::MAX_FIELD_BYTES`] is not recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Envelope<'a> {
    /// The `jsonrpc` member's string contents as written (normally `2.0`).
    pub jsonrpc: Option<&'a [u8]>,
    /// The `id` member, if it is a number, a string or `null`.
    pub id: Option<Id<'a>>,
    /// The `method` member's string contents as written (escapes not decoded).
    pub method: Option<&'a [u8]>,
    /// A `result` member is present.
    pub has_result: bool,
    /// An `error` member is present.
    pub has_error: bool,
}

impl Envelope<'_> {
    /// Values longer than this are not recorded: no sane id or method name is
    /// this long, and recording is meant to cost nothing.
    pub const MAX_FIELD_BYTES: usize = 256;

    /// What kind of JSON-RPC message this looks like.
    pub fn kind(&self) -> MessageKind {
        match (self.method.is_some(), self.id.is_some()) {
            (true, true) => MessageKind::Request,
            (true, false) => MessageKind::Notification,
            (false, _) if self.has_result || self.has_error => MessageKind::Response,
            _ => MessageKind::Unknown,
        }
    }
}

/// The shape of a JSON-RPC message, from its [`Envelope`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageKind {
    /// Has `method` and `id`: expects a response.
    Request,
    /// Has `method`, no `id`: expects nothing back.
    Notification,
    /// Has `result` or `error` and no `method`.
    Response,
    /// None of the above.
    Unknown,
}

/// A JSON-RPC id, kept exactly as written so it can be echoed back byte for
/// byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Id<'a> {
    /// A number token, e.g. `41` or `-1.5e3`.
    Number(&'a [u8]),
    /// A string's raw contents between the quotes, escapes not decoded.
    String(&'a [u8]),
    /// `null` (used by error responses to unparseable requests).
    Null,
}

impl Id<'_> {
    /// Appends the id as a JSON token (`41`, `"abc"`, `null`).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Id::Number(raw) => out.extend_from_slice(raw),
            Id::String(raw) => {
                out.push(b'"');
                out.extend_from_slice(raw);
                out.push(b'"');
            }
            Id::Null => out.extend_from_slice(b"null"),
        }
    }

    /// The id as a JSON token in a fresh vector.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_json(&mut out);
        out
    }
}

impl fmt::Display for Id<'_> {
    /// The id as a JSON token (`41`, `"abc"`, `null`); bytes that are not
    /// UTF-8 are shown as U+FFFD.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |f: &mut fmt::Formatter<'_>, raw: &[u8]| {
            raw.utf8_chunks().try_for_each(|chunk| {
                f.write_str(chunk.valid())?;
                if chunk.invalid().is_empty() {
                    Ok(())
                } else {
                    f.write_str("\u{FFFD}")
                }
            })
        };
        match self {
            Id::Number(raw) => show(f, raw),
            Id::String(raw) => {
                f.write_str("\"")?;
                show(f, raw)?;
                f.write_str("\"")
            }
            Id::Null => f.write_str("null"),
        }
    }
}

/// Why a line that started like JSON is not a valid message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonError {
    /// The cause.
    pub kind: JsonErrorKind,
    /// Offset of the offending byte from the start of the line.
    pub at: u64,
}

/// The cause of a [`JsonError`]: one per variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// The bytes are not valid UTF-8.
    InvalidUtf8,
    /// A byte below 0x20 (such as a raw newline or tab) inside a string.
    ControlInString,
    /// A backslash escape that JSON does not define, or a bad `\u` digit.
    InvalidEscape,
    /// A byte that cannot appear here in JSON.
    UnexpectedByte,
    /// A number that does not follow JSON's number grammar.
    InvalidNumber,
    /// A misspelled `true`, `false` or `null`.
    InvalidLiteral,
    /// Something other than whitespace after the top-level value.
    TrailingCharacters,
    /// The top-level value is not an object (arrays, i.e. JSON-RPC batches,
    /// included).
    TopLevelNotObject,
    /// More nested objects and arrays than
    /// [`Config::max_depth`](crate::Config::with_max_depth).
    DepthLimit,
    /// The line ended before the value was complete.
    Incomplete,
}

impl fmt::Display for JsonErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JsonErrorKind::InvalidUtf8 => "invalid UTF-8",
            JsonErrorKind::ControlInString => "control character in string",
            JsonErrorKind::InvalidEscape => "invalid escape sequence",
            JsonErrorKind::UnexpectedByte => "unexpected byte",
            JsonErrorKind::InvalidNumber => "invalid number",
            JsonErrorKind::InvalidLiteral => "invalid literal",
            JsonErrorKind::TrailingCharacters => "trailing characters after the message",
            JsonErrorKind::TopLevelNotObject => "top-level value is not an object",
            JsonErrorKind::DepthLimit => "nesting deeper than the depth limit",
            JsonErrorKind::Incomplete => "line ended inside the message",
        })
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {} of the line", self.kind, self.at)
    }
}
