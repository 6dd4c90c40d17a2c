//! Editing a message without rewriting it: find a value by its path in the
//! bytes a peer wrote, and insert new members or elements into those bytes,
//! leaving every other byte as it was.
//!
//! A proxy that adds to what a server announces (a tool to `tools/list`, a
//! capability to `initialize`) must not re-serialise the answer: a parse
//! into a map and back sorts members (the order of a tool's
//! `inputSchema.properties` is the argument order hosts show), rounds big
//! integers and exponents, decodes escapes and drops duplicate members.
//! Here the answer is only read: [`Span`]s locate values, and
//! [`Splice::apply`] copies the original around the inserted bytes.
//!
//! - **Lookups follow `JSON.parse`**: of duplicate members, the last one
//!   is the one found, as JavaScript and `serde_json` read them. Keys are
//!   compared decoded (`"na\u006de"` is `name`).
//! - **Insertions go at the end** of an object or an array, right after its
//!   last member or element (before any whitespace that precedes the
//!   closing bracket), with a comma when it is not empty.
//! - **The input is the valid JSON the framer checked.** On anything else
//!   the functions return `None` or spans of no use, never panic, and stay
//!   linear in the input's length: each value is skipped once, with a
//!   nesting counter, no recursion.
//!
//! ```
//! use drainpipe_framer::splice::{Span, Splice};
//!
//! let line = br#"{"result":{"capabilities":{"tools":{ }},"n":1.50},"jsonrpc":"2.0","id":1}"#;
//! let capabilities = Span::whole(line)
//!     .and_then(|top| top.member(line, "result"))
//!     .and_then(|result| result.member(line, "capabilities"))
//!     .unwrap();
//! assert!(capabilities.member(line, "resources").is_none());
//! let mut splice = Splice::new();
//! splice.append_member(line, capabilities, "resources", b"{}");
//! assert_eq!(
//!     splice.apply(line),
//!     br#"{"result":{"capabilities":{"tools":{ },"resources":{}},"n":1.50},"jsonrpc":"2.0","id":1}"#
//! );
//! ```

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;

/// Where one JSON value lies in a text: `text[start..end]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Offset of the value's first byte.
    pub start: usize,
    /// Offset just past its last byte.
    pub end: usize,
}

impl Span {
    /// The top-level value of `text`, without the whitespace around it.
    pub fn whole(text: &[u8]) -> Option<Span> {
        let start = skip_ws(text, 0);
        let end = value_end(text, start)?;
        Some(Span { start, end })
    }

    /// The value's bytes.
    pub fn bytes<'t>(&self, text: &'t [u8]) -> &'t [u8] {
        text.get(self.start..self.end).unwrap_or_default()
    }

    /// Whether the value is an object.
    pub fn is_object(&self, text: &[u8]) -> bool {
        text.get(self.start) == Some(&b'{')
    }

    /// Whether the value is an array.
    pub fn is_array(&self, text: &[u8]) -> bool {
        text.get(self.start) == Some(&b'[')
    }

    /// Whether the value is `null`.
    pub fn is_null(&self, text: &[u8]) -> bool {
        self.bytes(text) == b"null"
    }

    /// The members of an object, in the order written (none if the value
    /// is not an object).
    pub fn members<'t>(&self, text: &'t [u8]) -> Members<'t> {
        Members {
            text,
            at: self.start + 1,
            done: !self.is_object(text),
            last_end: self.start + 1,
        }
    }

    /// The value of the last member named `key`, if the value is an object
    /// that has one.
    pub fn member(&self, text: &[u8], key: &str) -> Option<Span> {
        let mut found = None;
        for (name, value) in self.members(text) {
            if name.is(text, key) {
                found = Some(value);
            }
        }
        found
    }

    /// The elements of an array, in order (none if the value is not an
    /// array).
    pub fn elements<'t>(&self, text: &'t [u8]) -> Elements<'t> {
        Elements {
            text,
            at: self.start + 1,
            done: !self.is_array(text),
            last_end: self.start + 1,
        }
    }

    /// The decoded contents of a string value (`None` if it is not one).
    pub fn string<'t>(&self, text: &'t [u8]) -> Option<Cow<'t, str>> {
        let raw = self.bytes(text);
        let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        if memchr::memchr(b'\\', inner).is_none() {
            return core::str::from_utf8(inner).ok().map(Cow::Borrowed);
        }
        serde_json::from_slice::<String>(raw).ok().map(Cow::Owned)
    }

    /// Whether this is a string whose decoded contents are `wanted`.
    pub fn is(&self, text: &[u8], wanted: &str) -> bool {
        self.string(text).is_some_and(|s| s == wanted)
    }

    /// Where an insertion at the end of this object or array goes, and
    /// whether it needs a comma before it: just after the last member or
    /// element, or just after the opening bracket when there is none.
    fn end_insertion(&self, text: &[u8]) -> (usize, bool) {
        let last = if self.is_object(text) {
            let mut members = self.members(text);
            members.by_ref().for_each(drop);
            members.last_end
        } else {
            let mut elements = self.elements(text);
            elements.by_ref().for_each(drop);
            elements.last_end
        };
        (last, last != self.start + 1)
    }
}

/// The members of an object: each key's span (the string, quotes
/// included) and its value's span.
#[derive(Debug)]
pub struct Members<'t> {
    text: &'t [u8],
    at: usize,
    done: bool,
    /// Where the last value read ends (the opening brace's end before any).
    last_end: usize,
}

impl Iterator for Members<'_> {
    type Item = (Span, Span);

    fn next(&mut self) -> Option<(Span, Span)> {
        if self.done {
            return None;
        }
        let text = self.text;
        let key_start = skip_ws(text, self.at);
        if text.get(key_start) != Some(&b'"') {
            self.done = true;
            return None;
        }
        let key_end = string_end(text, key_start);
        let colon = key_end.map(|end| skip_ws(text, end));
        let parsed = match colon {
            Some(colon) if text.get(colon) == Some(&b':') => {
                let value_start = skip_ws(text, colon + 1);
                value_end(text, value_start).map(|value_end| {
                    (
                        Span {
                            start: key_start,
                            end: key_end.unwrap_or(key_start),
                        },
                        Span {
                            start: value_start,
                            end: value_end,
                        },
                    )
                })
            }
            _ => None,
        };
        let Some((key, value)) = parsed else {
            self.done = true;
            return None;
        };
        self.last_end = value.end;
        let after = skip_ws(text, value.end);
        if text.get(after) == Some(&b',') {
            self.at = after + 1;
        } else {
            self.done = true;
        }
        Some((key, value))
    }
}

/// The elements of an array.
#[derive(Debug)]
pub struct Elements<'t> {
    text: &'t [u8],
    at: usize,
    done: bool,
    /// Where the last element read ends (the opening bracket's end before
    /// any).
    last_end: usize,
}

impl Iterator for Elements<'_> {
    type Item = Span;

    fn next(&mut self) -> Option<Span> {
        if self.done {
            return None;
        }
        let text = self.text;
        let start = skip_ws(text, self.at);
        if matches!(text.get(start), None | Some(b']')) {
            self.done = true;
            return None;
        }
        let Some(end) = value_end(text, start) else {
            self.done = true;
            return None;
        };
        self.last_end = end;
        let after = skip_ws(text, end);
        if text.get(after) == Some(&b',') {
            self.at = after + 1;
        } else {
            self.done = true;
        }
        Some(Span { start, end })
    }
}

/// Insertions (and replacements) into one text, applied at once
/// ([`Splice::apply`]).
#[derive(Debug, Default)]
pub struct Splice {
    /// Where in the original, how many of its bytes are replaced there (0
    /// for an insertion), and the bytes that go there.
    insertions: Vec<(usize, usize, Vec<u8>)>,
}

impl Splice {
    /// No insertions yet.
    pub fn new() -> Self {
        Splice::default()
    }

    /// Whether nothing is to be inserted.
    pub fn is_empty(&self) -> bool {
        self.insertions.is_empty()
    }

    /// Bytes the insertions add (at most: a replacement also removes).
    pub fn added_bytes(&self) -> usize {
        self.insertions
            .iter()
            .map(|(_, _, bytes)| bytes.len())
            .sum()
    }

    /// Replaces the value at `span` with `value` (one JSON value). Spans
    /// replaced must not overlap each other or an insertion.
    pub fn replace(&mut self, span: Span, value: &[u8]) {
        let len = span.end.saturating_sub(span.start);
        self.insertions.push((span.start, len, value.to_vec()));
    }

    /// Adds the member `"key":value` at the end of `object` (`key` is
    /// written as a JSON string; `value` must be one JSON value).
    pub fn append_member(&mut self, text: &[u8], object: Span, key: &str, value: &[u8]) {
        let (at, comma) = object.end_insertion(text);
        let mut bytes = Vec::with_capacity(key.len() + value.len() + 4);
        if comma {
            bytes.push(b',');
        }
        let quoted = serde_json::to_vec(key).unwrap_or_default();
        bytes.extend_from_slice(&quoted);
        bytes.push(b':');
        bytes.extend_from_slice(value);
        self.insertions.push((at, 0, bytes));
    }

    /// Adds `value` (one JSON value) as the last element of `array`.
    pub fn append_element(&mut self, text: &[u8], array: Span, value: &[u8]) {
        let (at, comma) = array.end_insertion(text);
        let mut bytes = Vec::with_capacity(value.len() + 1);
        if comma {
            bytes.push(b',');
        }
        bytes.extend_from_slice(value);
        self.insertions.push((at, 0, bytes));
    }

    /// `text` with the insertions in place; every other byte as it was.
    /// Insertions at the same offset keep the order they were made in.
    pub fn apply(mut self, text: &[u8]) -> Vec<u8> {
        self.insertions.sort_by_key(|&(at, _, _)| at);
        let mut out = Vec::with_capacity(text.len() + self.added_bytes());
        let mut copied = 0;
        for (at, replaced, bytes) in &self.insertions {
            let at = (*at).clamp(copied, text.len());
            out.extend_from_slice(&text[copied..at]);
            out.extend_from_slice(bytes);
            copied = (at + replaced).min(text.len());
        }
        out.extend_from_slice(&text[copied..]);
        out
    }
}

fn skip_ws(text: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = text.get(at) {
        at += 1;
    }
    at
}

/// The end of the string whose opening quote is at `start`.
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    loop {
        let found = memchr::memchr2(b'"', b'\\', text.get(at..)?)?;
        at += found;
        if text[at] == b'"' {
            return Some(at + 1);
        }
        at += 2;
    }
}

/// The end of the value that starts at `start`.
fn value_end(text: &[u8], start: usize) -> Option<usize> {
    match text.get(start)? {
        b'"' => string_end(text, start),
        b'{' | b'[' => {
            // Brackets balance in valid JSON: count them, skipping strings.
            let mut depth = 0usize;
            let mut at = start;
            loop {
                match text.get(at)? {
                    b'"' => {
                        at = string_end(text, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        b',' | b':' | b'}' | b']' => None,
        _ => {
            let rest = &text[start..];
            let len = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            Some(start + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &[u8], keys: &[&str]) -> Option<Span> {
        keys.iter()
            .try_fold(Span::whole(text)?, |span, key| span.member(text, key))
    }

    #[test]
    fn the_last_of_duplicate_members_is_found() {
        let text = br#"{"a":1,"b":{"c":"x"},"a" : [2, 3] }"#;
        assert_eq!(path(text, &["a"]).unwrap().bytes(text), b"[2, 3]");
        assert_eq!(path(text, &["b", "c"]).unwrap().string(text).unwrap(), "x");
        assert!(path(text, &["b", "d"]).is_none());
        assert!(path(text, &["a", "c"]).is_none());
    }

    #[test]
    fn keys_and_strings_are_compared_decoded() {
        let text = br#"{"na\u006de":"drain\u0070ipe_read","k\"":"\\"}"#;
        let name = path(text, &["name"]).unwrap();
        assert!(name.is(text, "drainpipe_read"));
        assert_eq!(path(text, &["k\""]).unwrap().string(text).unwrap(), "\\");
    }

    #[test]
    fn elements_skip_nested_values_and_strings_with_brackets() {
        let text = br#"[ {"a":"]}"}, [1,[2]], "\"[", 1e2 , true,null ]"#;
        let top = Span::whole(text).unwrap();
        let elements: Vec<&[u8]> = top.elements(text).map(|s| s.bytes(text)).collect();
        assert_eq!(
            elements,
            [
                &br#"{"a":"]}"}"#[..],
                b"[1,[2]]",
                br#""\"[""#,
                b"1e2",
                b"true",
                b"null"
            ]
        );
    }

    #[test]
    fn insertions_keep_every_other_byte() {
        for (text, object_then_array) in [
            (
                &br#"{ "o" : { } , "a" : [ ] }"#[..],
                &br#"{ "o" : {"k":1 } , "a" : [7 ] }"#[..],
            ),
            (
                br#"{"o":{"x":1.50},"a":[1E2]}"#,
                br#"{"o":{"x":1.50,"k":1},"a":[1E2,7]}"#,
            ),
            (
                b"{\"o\":{\n  \"x\": 123456789012345678901234567890\n},\"a\":[\n  \"\\u00e9\"\n]}",
                b"{\"o\":{\n  \"x\": 123456789012345678901234567890,\"k\":1\n},\"a\":[\n  \"\\u00e9\",7\n]}",
            ),
        ] {
            let o = path(text, &["o"]).unwrap();
            let a = path(text, &["a"]).unwrap();
            let mut splice = Splice::new();
            splice.append_element(text, a, b"7");
            splice.append_member(text, o, "k", b"1");
            assert_eq!(
                splice.apply(text),
                object_then_array,
                "{}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn a_replaced_value_leaves_every_other_byte() {
        let text = br#"{"params":{"_meta":{"traceparent" : "00-a-b-01","k":1}, "name":"x"}}"#;
        let meta = path(text, &["params", "_meta"]).unwrap();
        let old = meta.member(text, "traceparent").unwrap();
        let mut splice = Splice::new();
        splice.replace(old, br#""00-c-d-01""#);
        splice.append_member(text, meta, "tracestate", br#""s=1""#);
        assert_eq!(
            splice.apply(text),
            br#"{"params":{"_meta":{"traceparent" : "00-c-d-01","k":1,"tracestate":"s=1"}, "name":"x"}}"#
        );
    }

    #[test]
    fn bad_input_gives_nothing_and_does_not_panic() {
        for text in [
            &b""[..],
            b"{",
            b"{\"a\"",
            b"{\"a\":",
            b"{\"a\":[1,",
            b"\"abc",
            b"\"ab\\",
            b"}",
            b"{\"a\" 1}",
        ] {
            let _ = path(text, &["a"]);
            if let Some(top) = Span::whole(text) {
                let _ = top.elements(text).count();
                let _ = top.members(text).count();
            }
        }
    }
}
