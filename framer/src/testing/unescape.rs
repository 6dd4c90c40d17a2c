//! The oracle for the [`Unescaper`]: shared by the property tests and the
//! fuzz target.
//!
//! Escaped text must decode, in any pieces, to the text `serde_json`
//! escaped. Any bytes at all must decode without a panic to at most as many
//! bytes, the same in pieces as whole, and to what `serde_json` reads from
//! them whenever it reads them at all.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use crate::budget::{UnescapeError, Unescaper};

/// Decodes `raw` fed in pieces of the given lengths (cycled; a zero length
/// feeds an empty piece before a one-byte one), as far as the first error.
/// Returns the output and what `finish` (or the failing `feed`) returned.
pub fn unescape_split(raw: &[u8], lengths: &[usize]) -> (Vec<u8>, Result<u64, UnescapeError>) {
    let mut unescaper = Unescaper::new();
    let mut out = Vec::new();
    let mut rest = raw;
    let mut step = 0;
    while !rest.is_empty() {
        let mut len = lengths
            .get(step % lengths.len().max(1))
            .copied()
            .unwrap_or(rest.len());
        step += 1;
        if len == 0 {
            if let Err(e) = unescaper.feed(&[], &mut out) {
                return (out, Err(e));
            }
            len = 1;
        }
        let (piece, tail) = rest.split_at(len.min(rest.len()));
        let result = unescaper.feed(piece, &mut out);
        assert_eq!(unescaper.decoded(), out.len() as u64, "decoded()");
        if let Err(e) = result {
            return (out, Err(e));
        }
        rest = tail;
    }
    let result = unescaper.finish(&mut out);
    (out, result)
}

/// `text` as JSON string contents, each character written plainly or as
/// `\u` escapes (a surrogate pair above U+FFFF) as the bits of `forms`
/// say (cycled; plainly where `forms` is empty). Plainly means as
/// `serde_json` writes it, but `/` as `\/`.
pub fn escape_mixed(text: &str, forms: &[u8]) -> String {
    let mut raw = String::new();
    for (n, c) in text.chars().enumerate() {
        let bit = forms
            .get(n / 8 % forms.len().max(1))
            .is_some_and(|b| b >> (n % 8) & 1 == 1);
        if bit {
            for unit in c.encode_utf16(&mut [0; 2]) {
                let _ = write!(raw, "\\u{unit:04x}");
            }
        } else if c == '/' {
            raw.push_str("\\/");
        } else {
            let quoted = serde_json::to_string(&c).expect("a char serialises");
            raw.push_str(&quoted[1..quoted.len() - 1]);
        }
    }
    raw
}

/// Checks that `raw`, escaped contents of `text`, decodes to `text` in
/// pieces of the given lengths. `Err` says what is wrong.
pub fn check_round_trip(text: &str, raw: &str, lengths: &[usize]) -> Result<(), String> {
    match unescape_split(raw.as_bytes(), lengths) {
        (out, Ok(total)) if out == text.as_bytes() && total == out.len() as u64 => Ok(()),
        (out, result) => Err(format!(
            "{raw:?} in pieces {lengths:?}: {:?} ({result:?}), expected {text:?}",
            String::from_utf8_lossy(&out)
        )),
    }
}

/// Checks any bytes as raw contents: decoding them never panics and gives
/// at most as many bytes as it read; the same output and result in pieces
/// as in one; valid UTF-8 when the input is; and, when `serde_json` reads
/// the quoted bytes as a string, exactly that string. `Err` says what is
/// wrong.
pub fn check_raw(raw: &[u8], lengths: &[usize]) -> Result<(), String> {
    let (out, result) = unescape_split(raw, lengths);
    if out.len() > raw.len() {
        return Err(format!(
            "{raw:?}: {} bytes out of {} in",
            out.len(),
            raw.len()
        ));
    }
    let whole = unescape_split(raw, &[]);
    if whole != (out.clone(), result) {
        return Err(format!(
            "{raw:?}: in pieces {lengths:?} {:?}, whole {whole:?}",
            (&out, result)
        ));
    }
    if core::str::from_utf8(raw).is_ok() && core::str::from_utf8(&out).is_err() {
        return Err(format!("{raw:?}: the output {out:?} is not UTF-8"));
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    if let Ok(expected) = serde_json::from_slice::<String>(&quoted)
        && (result.is_err() || out != expected.as_bytes())
    {
        return Err(format!(
            "{raw:?}: {:?} ({result:?}), serde_json reads {expected:?}",
            String::from_utf8_lossy(&out)
        ));
    }
    Ok(())
}

/// Fragments that make up likely contents: escapes whole and cut, both
/// surrogate halves, plain text of every UTF-8 width, a control byte, a
/// quote, a broken UTF-8 byte.
const FRAGMENTS: &[&[u8]] = &[
    b"\\",
    b"u",
    b"\\u",
    b"\\ud83d",
    b"\\ude00",
    b"\\uDBFF",
    b"\\uDC00",
    b"\\u00e9",
    b"\\u0000",
    b"\\n",
    b"\\\"",
    b"\\\\",
    b"\\/",
    b"\\x",
    b"0",
    b"F",
    b"g",
    b"a",
    "é".as_bytes(),
    "日".as_bytes(),
    "😀".as_bytes(),
    b"\x01",
    b"\"",
    b"\xff",
];

/// Raw contents built from likely fragments (escapes whole and cut, plain
/// text, a control byte, a quote, a broken UTF-8 byte) picked by `bytes`.
pub fn raw_from(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .flat_map(|&b| FRAGMENTS[usize::from(b) % FRAGMENTS.len()].iter().copied())
        .collect()
}
