//! Bytes on the wire: how long a string or value is once `serde_json` has
//! serialised it, without serialising it.
//!
//! Budgets are counted after escaping because that is what fills a pipe and
//! an agent's context: a text of 1,000 quotes costs 2,000 bytes, a text of
//! 1,000 `\u{1}` costs 6,000. `serde_json` escapes `"` and `\` with a
//! backslash, `\b \f \n \r \t` by name, every other byte below `0x20` as
//! `\u00XX`, and writes everything else (multibyte UTF-8 and `0x7F`
//! included) raw.

use alloc::vec::Vec;
use core::fmt;

use serde_json::Value;

/// How many bytes `serde_json` writes for each input byte of a string.
static ESCAPED_LEN: [u8; 256] = {
    let mut table = [1u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = 6;
        b += 1;
    }
    table[0x08] = 2;
    table[0x09] = 2;
    table[0x0A] = 2;
    table[0x0C] = 2;
    table[0x0D] = 2;
    table[b'"' as usize] = 2;
    table[b'\\' as usize] = 2;
    table
};

/// The length of a string's contents once escaped by `serde_json`, in bytes,
/// without the two surrounding quotes.
///
/// ```
/// use drainpipe_framer::budget::escaped_len;
///
/// assert_eq!(escaped_len("a\"b"), 4); // a \" b
/// assert_eq!(escaped_len("\n\u{1}"), 8); // \n \u0001
/// assert_eq!(escaped_len("é😀"), 6); // raw UTF-8: 2 + 4
/// assert_eq!(escaped_len("a\"b") + 2, serde_json::to_vec("a\"b").unwrap().len());
/// ```
pub fn escaped_len(s: &str) -> usize {
    s.bytes()
        .map(|b| usize::from(ESCAPED_LEN[usize::from(b)]))
        .sum()
}

/// [`escaped_len`], or `None` as soon as it exceeds `cap`: measuring a huge
/// text against a small budget stops after about `cap` bytes.
pub(crate) fn escaped_len_within(s: &str, cap: usize) -> Option<usize> {
    let mut total = 0usize;
    for piece in s.as_bytes().chunks(4096) {
        total += piece
            .iter()
            .map(|&b| usize::from(ESCAPED_LEN[usize::from(b)]))
            .sum::<usize>();
        if total > cap {
            return None;
        }
    }
    Some(total)
}

/// The serialised length of `value` in bytes, exactly as
/// `serde_json::to_vec(value)?.len()` (compact form), computed without
/// allocating.
///
/// Object key order does not change the length, so this holds whether or not
/// `serde_json` keeps insertion order.
///
/// ```
/// use drainpipe_framer::budget::value_wire_len;
/// use serde_json::json;
///
/// let value = json!({"path": "src/a.rs", "line": 18, "score": 0.5, "tags": ["x", null]});
/// assert_eq!(value_wire_len(&value), serde_json::to_vec(&value).unwrap().len());
/// ```
pub fn value_wire_len(value: &Value) -> usize {
    value_wire(value).len
}

/// A JSON text's length, and how much longer it gets when that text is in
/// turn embedded as a string.
///
/// The spec asks a tool that returns `structuredContent` to repeat it,
/// serialised, in a text block, so every structured byte is paid twice: once
/// as JSON, once as the escaped contents of a string. A JSON text contains no
/// raw control characters, so the second escaping only doubles its `"` and
/// `\` bytes: the string costs `len + specials` bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Wire {
    /// Bytes of the JSON text.
    pub(crate) len: usize,
    /// How many of them are `"` or `\`.
    pub(crate) specials: usize,
}

impl Wire {
    /// A JSON text made only of bytes that need no escaping (`,`, `[`, digits).
    pub(crate) const fn plain(len: usize) -> Wire {
        Wire { len, specials: 0 }
    }

    /// The escaped length of this JSON text as the contents of a string.
    pub(crate) const fn embedded(self) -> usize {
        self.len + self.specials
    }

    /// Measures a JSON text that is already serialised.
    pub(crate) fn of_json(json: &[u8]) -> Wire {
        Wire {
            len: json.len(),
            // JSON is dense in quotes: a plain counting loop (which the
            // compiler vectorises) beats a search that stops at each one.
            specials: json.iter().filter(|&&b| b == b'"' || b == b'\\').count(),
        }
    }
}

impl core::ops::Add for Wire {
    type Output = Wire;
    fn add(self, other: Wire) -> Wire {
        Wire {
            len: self.len + other.len,
            specials: self.specials + other.specials,
        }
    }
}

impl core::ops::AddAssign for Wire {
    fn add_assign(&mut self, other: Wire) {
        *self = *self + other;
    }
}

/// `"` and `\` bytes in the escape sequence of each input byte: an escape
/// is one backslash plus, for `\"` and `\\`, a second special byte.
fn specials_of(b: u8) -> usize {
    match ESCAPED_LEN[usize::from(b)] {
        1 => 0,
        2 if b == b'"' || b == b'\\' => 2,
        _ => 1,
    }
}

/// A string serialised with its quotes.
pub(crate) fn string_wire(s: &str) -> Wire {
    let mut wire = Wire {
        len: 2,
        specials: 2,
    };
    for b in s.bytes() {
        wire.len += usize::from(ESCAPED_LEN[usize::from(b)]);
        wire.specials += specials_of(b);
    }
    wire
}

/// Counts what a `Display` implementation writes, so a number's length is
/// known without a buffer.
struct LenCounter(usize);

impl fmt::Write for LenCounter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// `serde_json` prints numbers with the same routines as `Number`'s
/// `Display` (itoa for integers, the shortest round-trip form for floats).
fn number_len(n: &serde_json::Number) -> usize {
    let mut counter = LenCounter(0);
    // Writing into a counter cannot fail.
    let _ = fmt::write(&mut counter, format_args!("{n}"));
    counter.0
}

/// The recursion mirrors `serde_json`'s serialiser, which also recurses, so
/// any value it can serialise can be measured.
pub(crate) fn value_wire(value: &Value) -> Wire {
    match value {
        Value::Null => Wire::plain(4),
        Value::Bool(true) => Wire::plain(4),
        Value::Bool(false) => Wire::plain(5),
        Value::Number(n) => Wire::plain(number_len(n)),
        Value::String(s) => string_wire(s),
        Value::Array(items) => {
            let mut wire = Wire::plain(2 + items.len().saturating_sub(1));
            for item in items {
                wire += value_wire(item);
            }
            wire
        }
        Value::Object(map) => {
            // `{` `}`, a `:` per member, a `,` between members.
            let mut wire = Wire::plain(2 + map.len() + map.len().saturating_sub(1));
            for (key, item) in map {
                wire += string_wire(key) + value_wire(item);
            }
            wire
        }
    }
}

/// The longest prefix of `s` whose escaped length is at most `max_escaped`
/// bytes, ending on a character boundary.
///
/// Each input byte's escape sequence is counted whole, so the cut can never
/// fall inside `\"` or `\u001f`; backing up to a character boundary keeps
/// multibyte characters whole.
///
/// ```
/// use drainpipe_framer::budget::{escaped_len, longest_prefix_within};
///
/// assert_eq!(longest_prefix_within("ab\"cd", 3), "ab"); // `ab\"` would be 4
/// assert_eq!(longest_prefix_within("a😀", 4), "a"); // never half an emoji
/// let text = "x\u{1}".repeat(100);
/// assert!(escaped_len(longest_prefix_within(&text, 50)) <= 50);
/// ```
pub fn longest_prefix_within(s: &str, max_escaped: usize) -> &str {
    let bytes = s.as_bytes();
    let mut used = 0usize;
    let mut end = 0;
    while end < bytes.len() {
        let cost = usize::from(ESCAPED_LEN[usize::from(bytes[end])]);
        if used + cost > max_escaped {
            break;
        }
        used += cost;
        end += 1;
    }
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Appends `s` escaped exactly as `serde_json` escapes string contents.
pub(crate) fn push_escaped(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    let mut run_start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if ESCAPED_LEN[usize::from(b)] == 1 {
            continue;
        }
        out.extend_from_slice(&bytes[run_start..i]);
        run_start = i + 1;
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x0D => out.extend_from_slice(b"\\r"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xF)],
            ]),
        }
    }
    out.extend_from_slice(&bytes[run_start..]);
}

/// Appends a JSON text (which has no raw control characters) as escaped
/// string contents: only `"` and `\` need a backslash.
pub(crate) fn push_embedded_json(out: &mut Vec<u8>, json: &[u8]) {
    out.reserve(json.len());
    for &b in json {
        if b == b'"' || b == b'\\' {
            out.push(b'\\');
        }
        out.push(b);
    }
}

/// Appends `s` as a JSON string, quotes included.
pub(crate) fn push_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    push_escaped(out, s);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_below_0x80_matches_serde_json() {
        for b in 0u8..0x80 {
            let s = alloc::string::String::from(char::from(b));
            let expected = serde_json::to_vec(&s).unwrap();
            assert_eq!(escaped_len(&s) + 2, expected.len(), "byte {b:#04x}");
            assert_eq!(string_wire(&s).len, expected.len());
            let mut out = Vec::new();
            push_string(&mut out, &s);
            assert_eq!(out, expected, "byte {b:#04x}");
            let mut nested = Vec::new();
            push_embedded_json(&mut nested, &expected);
            assert_eq!(nested.len(), string_wire(&s).embedded(), "byte {b:#04x}");
        }
    }
}
