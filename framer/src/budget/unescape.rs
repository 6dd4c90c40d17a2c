//! Decoding the contents of a JSON string as it streams: the escaped bytes
//! between the quotes in, UTF-8 text out.
//!
//! A host that keeps a long text (a file a tool read, a command's output)
//! gets it as one JSON string value, split into pieces wherever the pipe
//! split it: inside an escape, inside `\uXXXX`, between the two halves of a
//! surrogate pair, inside a UTF-8 sequence. [`Unescaper`] takes those pieces
//! one by one and appends the decoded text of each to the caller's buffer,
//! so the text can be written out as it arrives.
//!
//! - The escapes are JSON's: `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`
//!   and `\uXXXX`. A high and a low surrogate escape in a row give one
//!   4-byte character. A surrogate without its other half gives U+FFFD, so
//!   the output is valid UTF-8 whenever the input's bytes outside escapes
//!   are.
//! - Other bytes are copied as they are. Plain runs are found with
//!   `memchr` and copied whole; the only per-byte work on them is the check
//!   for control bytes, in blocks the compiler vectorises.
//! - Memory is constant: what is carried from one piece to the next is at
//!   most one escape in progress, under 12 raw bytes (`\ud83d\ude0` at the
//!   longest: a high surrogate waiting for the rest of its low half), kept
//!   as a few bytes of state. The output never has more bytes than the
//!   input.
//!
//! The input is assumed to be a string the framer has already checked as
//! part of a valid frame. It is not checked again for UTF-8 or for a stray
//! quote; escapes and control bytes are checked, since they are decoded or
//! scanned anyway, and a bad one is an [`UnescapeError`] with its offset.

use alloc::vec::Vec;
use core::fmt;

/// U+FFFD REPLACEMENT CHARACTER, for a surrogate without its other half.
const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// Plain bytes checked for controls per step (vectorised).
const CONTROL_BLOCK: usize = 64;

/// Why a string's contents could not be decoded. One cause per variant;
/// `at` is the offset of the byte, counted in raw input bytes from the
/// start of the string's contents (the byte after the opening quote).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnescapeError {
    /// A backslash followed by a byte that is not one of `"\/bfnrtu`.
    BadEscape {
        /// Offset of that byte (the backslash is the byte before it).
        at: u64,
    },
    /// A byte in the four after `\u` that is not a hex digit.
    BadHex {
        /// Offset of that byte.
        at: u64,
    },
    /// The input ended inside an escape.
    Unfinished {
        /// Offset of the backslash that began the escape.
        at: u64,
    },
    /// A byte below 0x20, which JSON allows in a string only escaped.
    ControlByte {
        /// Offset of that byte.
        at: u64,
    },
}

impl fmt::Display for UnescapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnescapeError::BadEscape { at } => write!(
                f,
                "the escape at byte {at} of the string is not one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u"
            ),
            UnescapeError::BadHex { at } => write!(
                f,
                "byte {at} of the string should be a hex digit of a \\u escape"
            ),
            UnescapeError::Unfinished { at } => write!(
                f,
                "the string ended inside the escape that starts at byte {at}"
            ),
            UnescapeError::ControlByte { at } => write!(
                f,
                "byte {at} of the string is a control character that is not escaped"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for UnescapeError {}

/// Where the decoder is between two bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// In plain text.
    #[default]
    Plain,
    /// After a backslash at `start`.
    Escape { start: u64 },
    /// After `\u` and `digits` hex digits, whose value so far is `value`.
    Hex { start: u64, digits: u8, value: u16 },
}

/// A streaming decoder of one JSON string's contents: the escaped bytes
/// between the quotes in, UTF-8 text out.
///
/// Feed it the raw bytes, split anywhere (inside an escape, between the
/// halves of a surrogate pair, inside a UTF-8 sequence), with
/// [`feed`](Unescaper::feed); end with [`finish`](Unescaper::finish).
/// JSON's escapes are decoded; a surrogate pair gives one character, a
/// surrogate without its other half gives U+FFFD. Other bytes are copied as
/// they are: they are assumed checked by the framer, and only control bytes
/// are rejected. What is carried from one piece to the next is at most one
/// escape in progress (under 12 raw bytes), kept as a few bytes of state;
/// the output never has more bytes than the input. After an error the
/// decoder stays failed: every later call returns the same error.
///
/// ```
/// use drainpipe_framer::budget::{UnescapeError, Unescaper};
///
/// // "café 😀\n", escaped as a JSON string, split inside every escape.
/// let pieces: [&[u8]; 4] = [b"caf\\u00", b"e9 \\ud83d", b"\\ude", b"00\\n"];
/// let mut unescaper = Unescaper::new();
/// let mut text = Vec::new();
/// for piece in pieces {
///     unescaper.feed(piece, &mut text)?;
///     // A proxy writes `text` out here and clears it; this example keeps it.
/// }
/// assert_eq!(unescaper.finish(&mut text)?, 11);
/// assert_eq!(text, "café 😀\n".as_bytes());
///
/// let mut unescaper = Unescaper::new();
/// assert_eq!(
///     unescaper.feed(b"ok\\x", &mut text),
///     Err(UnescapeError::BadEscape { at: 3 })
/// );
/// # Ok::<(), UnescapeError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Unescaper {
    state: State,
    /// A high surrogate whose low half may still follow.
    high: Option<u16>,
    /// Raw bytes fed so far.
    offset: u64,
    /// Decoded bytes written so far.
    decoded: u64,
    /// The error that stopped the decoder.
    failed: Option<UnescapeError>,
}

impl Unescaper {
    /// A decoder at the start of a string's contents.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decoded bytes written so far (to every `out` together).
    pub fn decoded(&self) -> u64 {
        self.decoded
    }

    /// Decodes the next piece of raw contents and appends the text to `out`.
    ///
    /// An escape cut by the end of the piece is carried over to the next
    /// call, as is a high surrogate whose low half may follow. On an error,
    /// `out` has the text decoded before the bad byte.
    pub fn feed(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), UnescapeError> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        let before = out.len();
        let result = self.decode(raw, out);
        self.decoded += (out.len() - before) as u64;
        self.offset += raw.len() as u64;
        if let Err(error) = result {
            self.failed = Some(error);
        }
        result
    }

    /// Ends the string: a high surrogate still waiting for its low half
    /// becomes U+FFFD; an escape still open is [`UnescapeError::Unfinished`].
    /// Returns the decoded bytes written over the decoder's whole life.
    pub fn finish(mut self, out: &mut Vec<u8>) -> Result<u64, UnescapeError> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        match self.state {
            State::Plain => {
                if self.high.take().is_some() {
                    out.extend_from_slice(REPLACEMENT);
                    self.decoded += REPLACEMENT.len() as u64;
                }
                Ok(self.decoded)
            }
            State::Escape { start } | State::Hex { start, .. } => {
                Err(UnescapeError::Unfinished { at: start })
            }
        }
    }

    fn decode(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), UnescapeError> {
        let base = self.offset;
        let at = move |i: usize| base + i as u64;
        let mut i = 0;
        while i < raw.len() {
            match self.state {
                State::Plain => {
                    if self.high.is_some() && raw[i] != b'\\' {
                        self.lone_high(out);
                    }
                    let rest = &raw[i..];
                    let run = &rest[..memchr::memchr(b'\\', rest).unwrap_or(rest.len())];
                    if let Some(k) = first_control(run) {
                        out.extend_from_slice(&run[..k]);
                        return Err(UnescapeError::ControlByte { at: at(i + k) });
                    }
                    out.extend_from_slice(run);
                    i += run.len();
                    if i < raw.len() {
                        self.state = State::Escape { start: at(i) };
                        i += 1;
                    }
                }
                State::Escape { start } => {
                    let b = raw[i];
                    if b == b'u' {
                        self.state = State::Hex {
                            start,
                            digits: 0,
                            value: 0,
                        };
                    } else {
                        // Any escape but `\u` ends a waiting high surrogate.
                        if self.high.is_some() {
                            self.lone_high(out);
                        }
                        let Some(byte) = crate::json::simple_escape(b) else {
                            return Err(UnescapeError::BadEscape { at: at(i) });
                        };
                        out.push(byte);
                        self.state = State::Plain;
                    }
                    i += 1;
                }
                State::Hex {
                    start,
                    mut digits,
                    mut value,
                } => {
                    while digits < 4 {
                        let Some(&b) = raw.get(i) else { break };
                        let digit = hex_digit(b).ok_or(UnescapeError::BadHex { at: at(i) })?;
                        value = value << 4 | digit;
                        digits += 1;
                        i += 1;
                    }
                    if digits < 4 {
                        self.state = State::Hex {
                            start,
                            digits,
                            value,
                        };
                    } else {
                        self.state = State::Plain;
                        self.code_unit(value, out);
                    }
                }
            }
        }
        Ok(())
    }

    /// One UTF-16 code unit from a `\u` escape.
    fn code_unit(&mut self, unit: u16, out: &mut Vec<u8>) {
        if let Some(high) = self.high.take() {
            if is_low(unit) {
                let code =
                    0x1_0000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                push_char(code, out);
                return;
            }
            out.extend_from_slice(REPLACEMENT);
        }
        if is_high(unit) {
            self.high = Some(unit);
        } else {
            // A lone low surrogate becomes U+FFFD in `push_char`.
            push_char(u32::from(unit), out);
        }
    }

    /// The waiting high surrogate has no low half.
    fn lone_high(&mut self, out: &mut Vec<u8>) {
        self.high = None;
        out.extend_from_slice(REPLACEMENT);
    }
}

fn is_high(unit: u16) -> bool {
    (0xD800..0xDC00).contains(&unit)
}

fn is_low(unit: u16) -> bool {
    (0xDC00..0xE000).contains(&unit)
}

/// Appends the UTF-8 of `code`, or U+FFFD if it is not a character.
fn push_char(code: u32, out: &mut Vec<u8>) {
    let c = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
}

fn hex_digit(b: u8) -> Option<u16> {
    match b {
        b'0'..=b'9' => Some(u16::from(b - b'0')),
        b'a'..=b'f' => Some(u16::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u16::from(b - b'A' + 10)),
        _ => None,
    }
}

/// The offset of the first byte below 0x20 in `run`, if any. Whole blocks
/// are tested with a branch-free fold, which compiles to vector compares;
/// only a block that has one is searched byte by byte.
fn first_control(run: &[u8]) -> Option<usize> {
    let blocks = run.chunks_exact(CONTROL_BLOCK);
    let tail = blocks.remainder();
    let mut start = 0;
    for block in blocks {
        if block.iter().fold(false, |any, &b| any | (b < 0x20)) {
            break;
        }
        start += CONTROL_BLOCK;
    }
    let rest = if start < run.len() - tail.len() {
        &run[start..start + CONTROL_BLOCK]
    } else {
        tail
    };
    rest.iter().position(|&b| b < 0x20).map(|k| start + k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::{String, ToString};
    use alloc::vec;

    /// Decodes `raw` fed in pieces that end at `cuts` (ascending).
    fn decode_cut(raw: &[u8], cuts: &[usize]) -> Result<Vec<u8>, UnescapeError> {
        let mut unescaper = Unescaper::new();
        let mut out = Vec::new();
        let mut from = 0;
        for &cut in cuts.iter().chain([&raw.len()]) {
            unescaper.feed(&raw[from..cut], &mut out)?;
            assert_eq!(unescaper.decoded(), out.len() as u64);
            from = cut;
        }
        let total = unescaper.finish(&mut out)?;
        assert_eq!(total, out.len() as u64);
        assert!(out.len() <= raw.len());
        Ok(out)
    }

    fn decode(raw: &str) -> Result<String, UnescapeError> {
        decode_cut(raw.as_bytes(), &[]).map(|out| String::from_utf8(out).expect("UTF-8"))
    }

    #[test]
    fn every_escape() {
        let cases = [
            (r#"\""#, "\""),
            (r"\\", "\\"),
            (r"\/", "/"),
            (r"\b", "\u{8}"),
            (r"\f", "\u{c}"),
            (r"\n", "\n"),
            (r"\r", "\r"),
            (r"\t", "\t"),
            (r"\u0000", "\0"),
            (r"\u0041", "A"),
            (r"\u007f", "\u{7f}"),
            (r"\u00e9\u00E9", "éé"),
            (r"\u07FF", "\u{7ff}"),
            (r"\u0800", "\u{800}"),
            (r"\u20ac", "€"),
            (r"\uFFFF", "\u{ffff}"),
            (r"\ud83d\ude00", "😀"),
            (r"\uD800\uDC00", "\u{10000}"),
            (r"\uDBFF\uDFFF", "\u{10FFFF}"),
            ("", ""),
            ("plain é 日 😀", "plain é 日 😀"),
            (r"a\\u0041", r"a\u0041"),
            (r"\\\\\n\\", "\\\\\n\\"),
        ];
        for (raw, text) in cases {
            assert_eq!(decode(raw).as_deref(), Ok(text), "{raw}");
        }
    }

    #[test]
    fn lone_surrogates_become_the_replacement_character() {
        let cases = [
            (r"\uD800", "\u{FFFD}"),
            (r"\ud83dx", "\u{FFFD}x"),
            (r"\ud83d\n", "\u{FFFD}\n"),
            (r"\ud83d\\", "\u{FFFD}\\"),
            (r"\ud83d\u0041", "\u{FFFD}A"),
            (r"\ud83d\ud83d\ude00", "\u{FFFD}😀"),
            (r"\ud83d\ud83d", "\u{FFFD}\u{FFFD}"),
            (r"\ude00", "\u{FFFD}"),
            (r"\ude00\ud83d", "\u{FFFD}\u{FFFD}"),
            (r"\ude00\ud83d\ude00", "\u{FFFD}😀"),
            (r"a\uDFFFb", "a\u{FFFD}b"),
            (r"\ud83d é", "\u{FFFD} é"),
        ];
        for (raw, text) in cases {
            assert_eq!(decode(raw).as_deref(), Ok(text), "{raw}");
        }
    }

    #[test]
    fn errors_say_where() {
        use UnescapeError::*;
        let cases: [(&[u8], UnescapeError); 12] = [
            (br"\x", BadEscape { at: 1 }),
            (br"ab\U0041", BadEscape { at: 3 }),
            (br"\ud83d\q", BadEscape { at: 7 }),
            (br"\u12g4", BadHex { at: 4 }),
            (br"\u 123", BadHex { at: 2 }),
            (br"\ud83d\uDE0z", BadHex { at: 11 }),
            (br"\", Unfinished { at: 0 }),
            (br"ab\u12", Unfinished { at: 2 }),
            (br"\ud83d\", Unfinished { at: 6 }),
            (br"\ud83d\ude0", Unfinished { at: 6 }),
            (b"ab\x01c", ControlByte { at: 2 }),
            (b"\\n\n", ControlByte { at: 2 }),
        ];
        for (raw, error) in cases {
            for cut in 0..=raw.len() {
                assert_eq!(decode_cut(raw, &[cut]), Err(error), "{raw:?} cut at {cut}");
            }
            assert!(!error.to_string().is_empty());
        }
        assert_eq!(
            BadEscape { at: 3 }.to_string(),
            r#"the escape at byte 3 of the string is not one of \" \\ \/ \b \f \n \r \t \u"#
        );
        assert_eq!(
            Unfinished { at: 6 }.to_string(),
            "the string ended inside the escape that starts at byte 6"
        );
    }

    #[test]
    fn an_error_keeps_what_came_before_and_sticks() {
        let mut unescaper = Unescaper::new();
        let mut out = Vec::new();
        let error = UnescapeError::ControlByte { at: 11 };
        assert_eq!(unescaper.feed(b"\\ud83dabc\\n\0z", &mut out), Err(error));
        assert_eq!(out, "\u{FFFD}abc\n".as_bytes());
        assert_eq!(unescaper.decoded(), out.len() as u64);
        assert_eq!(unescaper.feed(b"fine", &mut out), Err(error));
        assert_eq!(unescaper.finish(&mut out), Err(error));
    }

    #[test]
    fn control_bytes_are_found_in_every_block_position() {
        for len in 0..3 * CONTROL_BLOCK {
            for at in 0..len {
                let mut raw = vec![b'x'; len];
                raw[at] = 0x1F;
                assert_eq!(first_control(&raw), Some(at), "len {len}");
                raw[at] = 0x20;
                assert_eq!(first_control(&raw), None);
            }
        }
    }

    /// Strings that cover every escape, every UTF-8 width and pairs.
    const STRINGS: &[&str] = &[
        "",
        "plain ASCII text",
        "é日😀 multi-byte and emoji 🚀\u{10FFFF}",
        "\"\\/\u{8}\u{c}\n\r\t",
        "\u{0}\u{1}\u{1f}\u{7f}",
        "tab\there, quote\" and slash/",
        "😀😀🚀",
    ];

    /// `s` as JSON string contents, with `\u` escapes for every character
    /// (surrogate pairs above U+FFFF) where `all_u`, as `serde_json` writes
    /// it otherwise, and with `\/` for `/`.
    fn escaped(s: &str, all_u: bool) -> String {
        if !all_u {
            let quoted = serde_json::to_string(s).unwrap();
            return quoted[1..quoted.len() - 1].replace('/', r"\/");
        }
        let mut raw = String::new();
        for unit in s.encode_utf16() {
            raw.push_str(&format!("\\u{unit:04x}"));
        }
        raw
    }

    #[test]
    fn every_split_into_two_and_three_agrees_with_serde_json() {
        let mut raws: Vec<String> = Vec::new();
        for s in STRINGS {
            raws.push(escaped(s, false));
            raws.push(escaped(s, true));
        }
        // Mixed: raw, short and `\u` escapes side by side.
        raws.push(r#"a\u00e9\n\ud83d\ude00b\"\\😀\u20AC\/"#.to_string());
        for raw in &raws {
            let expected: String = serde_json::from_str(&format!("\"{raw}\"")).unwrap();
            let raw = raw.as_bytes();
            for a in 0..=raw.len() {
                assert_eq!(
                    decode_cut(raw, &[a]).unwrap(),
                    expected.as_bytes(),
                    "{raw:?} cut at {a}"
                );
                for b in a..=raw.len() {
                    assert_eq!(
                        decode_cut(raw, &[a, b]).unwrap(),
                        expected.as_bytes(),
                        "{raw:?} cut at {a}, {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_split_of_lone_surrogates_gives_the_replacement_character() {
        let cases = [
            (r"x\ud83d\ud83d\ude00\ude00y", "x\u{FFFD}😀\u{FFFD}y"),
            (
                r"\udc00\ud800\u0041\ud800\n\ud800",
                "\u{FFFD}\u{FFFD}A\u{FFFD}\n\u{FFFD}",
            ),
        ];
        for (raw, text) in cases {
            // serde_json rejects these.
            assert!(serde_json::from_str::<String>(&format!("\"{raw}\"")).is_err());
            let raw = raw.as_bytes();
            for a in 0..=raw.len() {
                for b in a..=raw.len() {
                    assert_eq!(
                        decode_cut(raw, &[a, b]).unwrap(),
                        text.as_bytes(),
                        "{raw:?} cut at {a}, {b}"
                    );
                }
            }
        }
    }
}
