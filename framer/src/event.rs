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

    /// A key equal for two ids exactly when JSON-RPC peers take them for the
    /// same id, whatever the spelling: strings by their decoded value
    /// (`"é"`, `"\u00e9"`; `"a/b"`, `"a\/b"`), numbers by their numeric
    /// value (`100`, `1E2`, `100.0`), never a string equal to a number.
    /// Match ids by this key, and echo an id back as its own peer wrote it.
    /// Made from the recorded token alone (at most
    /// [`Envelope::MAX_FIELD_BYTES`]), not from the message.
    pub fn canonical(&self) -> Vec<u8> {
        let mut key = Vec::new();
        match self {
            Id::Null => key.extend_from_slice(b"z"),
            Id::String(raw) => {
                key.push(b's');
                decode_string(raw, &mut key);
            }
            Id::Number(raw) => {
                key.push(b'n');
                canonical_number(raw, &mut key);
            }
        }
        key
    }
}

/// Appends the decoded contents of a JSON string's raw contents (escapes
/// resolved; a lone surrogate escape kept as its own three bytes, WTF-8
/// style, so distinct escapes stay distinct). Bytes after a broken escape
/// are kept as they are.
fn decode_string(raw: &[u8], out: &mut Vec<u8>) {
    let hex = |at: usize| -> Option<u32> {
        let digits = raw.get(at..at + 4)?;
        digits.iter().try_fold(0u32, |value, &d| {
            Some(value * 16 + char::from(d).to_digit(16)?)
        })
    };
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let simple = match raw.get(i + 1) {
            Some(b'"') => Some(b'"'),
            Some(b'\\') => Some(b'\\'),
            Some(b'/') => Some(b'/'),
            Some(b'b') => Some(0x08),
            Some(b'f') => Some(0x0C),
            Some(b'n') => Some(b'\n'),
            Some(b'r') => Some(b'\r'),
            Some(b't') => Some(b'\t'),
            _ => None,
        };
        if let Some(decoded) = simple {
            out.push(decoded);
            i += 2;
            continue;
        }
        let Some(unit) = (raw.get(i + 1) == Some(&b'u'))
            .then(|| hex(i + 2))
            .flatten()
        else {
            out.push(b);
            i += 1;
            continue;
        };
        let low = (raw.get(i + 6..i + 8) == Some(b"\\u"))
            .then(|| hex(i + 8))
            .flatten()
            .filter(|low| (0xDC00..0xE000).contains(low));
        let (code, taken) = match (unit, low) {
            (0xD800..=0xDBFF, Some(low)) => {
                (0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00), 12)
            }
            _ => (unit, 6),
        };
        let mut utf8 = [0u8; 4];
        match char::from_u32(code) {
            Some(c) => out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes()),
            // A lone surrogate: its generalised UTF-8 form.
            None => out.extend_from_slice(&[
                0xE0 | (code >> 12) as u8,
                0x80 | ((code >> 6) & 0x3F) as u8,
                0x80 | (code & 0x3F) as u8,
            ]),
        }
        i += taken;
    }
}

/// Appends a number token's value in one form: sign, significant digits
/// without leading or trailing zeros, and the decimal exponent of the first
/// digit (`1E2`, `100`, `100.0` all become `+1e2`; every zero `0`). A token
/// that is not a JSON number is kept as it is, after a `?`.
fn canonical_number(raw: &[u8], out: &mut Vec<u8>) {
    let (negative, rest) = match raw.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, raw),
    };
    let mantissa_end = rest
        .iter()
        .position(|&b| b == b'e' || b == b'E')
        .unwrap_or(rest.len());
    let (mantissa, exponent) = rest.split_at(mantissa_end);
    let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
        Some(dot) => (&mantissa[..dot], &mantissa[dot + 1..]),
        None => (mantissa, &[][..]),
    };
    let exponent: Option<i64> = match exponent.split_first() {
        None => Some(0),
        Some((_, e)) => core::str::from_utf8(e).ok().and_then(|e| e.parse().ok()),
    };
    let digits_ok = !int.is_empty() && int.iter().chain(frac).all(u8::is_ascii_digit);
    let Some(exponent) = exponent.filter(|_| digits_ok) else {
        out.push(b'?');
        out.extend_from_slice(raw);
        return;
    };
    let digits = int.iter().chain(frac).copied();
    let leading = digits.clone().take_while(|&d| d == b'0').count();
    let significant: Vec<u8> = digits.skip(leading).collect();
    let end = significant
        .iter()
        .rposition(|&d| d != b'0')
        .map_or(0, |at| at + 1);
    if end == 0 {
        out.push(b'0');
        return;
    }
    // The first significant digit's power of ten.
    let power = int.len() as i64 - 1 - leading as i64 + exponent;
    out.push(if negative { b'-' } else { b'+' });
    out.extend_from_slice(&significant[..end]);
    out.push(b'e');
    let mut text = [0u8; 24];
    let mut n = power.unsigned_abs();
    let mut at = text.len();
    loop {
        at -= 1;
        text[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if power < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&text[at..]);
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

impl JsonErrorKind {
    /// Every kind, in the order of their codes: the order of the WIT enum
    /// `json-error-kind` (a test holds the two together).
    pub const ALL: [JsonErrorKind; 10] = [
        JsonErrorKind::InvalidUtf8,
        JsonErrorKind::ControlInString,
        JsonErrorKind::InvalidEscape,
        JsonErrorKind::UnexpectedByte,
        JsonErrorKind::InvalidNumber,
        JsonErrorKind::InvalidLiteral,
        JsonErrorKind::TrailingCharacters,
        JsonErrorKind::TopLevelNotObject,
        JsonErrorKind::DepthLimit,
        JsonErrorKind::Incomplete,
    ];

    /// Its code: its position in [`JsonErrorKind::ALL`], which is also
    /// the discriminant of the WIT enum. The one table every encoding of
    /// the kind (packed events, the component's types) goes through.
    pub const fn code(self) -> u8 {
        match self {
            JsonErrorKind::InvalidUtf8 => 0,
            JsonErrorKind::ControlInString => 1,
            JsonErrorKind::InvalidEscape => 2,
            JsonErrorKind::UnexpectedByte => 3,
            JsonErrorKind::InvalidNumber => 4,
            JsonErrorKind::InvalidLiteral => 5,
            JsonErrorKind::TrailingCharacters => 6,
            JsonErrorKind::TopLevelNotObject => 7,
            JsonErrorKind::DepthLimit => 8,
            JsonErrorKind::Incomplete => 9,
        }
    }

    /// The kind with code `code`, if there is one.
    pub const fn from_code(code: u8) -> Option<JsonErrorKind> {
        if (code as usize) < Self::ALL.len() {
            Some(Self::ALL[code as usize])
        } else {
            None
        }
    }

    /// Its name in the WIT interface (`invalid-utf8`, …).
    pub const fn wit_name(self) -> &'static str {
        match self {
            JsonErrorKind::InvalidUtf8 => "invalid-utf8",
            JsonErrorKind::ControlInString => "control-in-string",
            JsonErrorKind::InvalidEscape => "invalid-escape",
            JsonErrorKind::UnexpectedByte => "unexpected-byte",
            JsonErrorKind::InvalidNumber => "invalid-number",
            JsonErrorKind::InvalidLiteral => "invalid-literal",
            JsonErrorKind::TrailingCharacters => "trailing-characters",
            JsonErrorKind::TopLevelNotObject => "top-level-not-object",
            JsonErrorKind::DepthLimit => "depth-limit",
            JsonErrorKind::Incomplete => "incomplete",
        }
    }
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
