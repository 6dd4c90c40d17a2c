//! Strict, streaming JSON validation (RFC 8259) with an envelope peek.
//!
//! The validator is a resumable state machine: a line may be fed in pieces
//! split at any byte, and each byte is looked at once. Its memory is one bit
//! per open object or array (so `O(max_depth)`) plus three small capture
//! buffers for the envelope fields. It checks structure only; UTF-8 is checked
//! by [`crate::utf8`] on the same pieces, so here any byte `>= 0x80` is an
//! ordinary string byte (and a syntax error anywhere else).
//!
//! Accepted exactly: one top-level object, RFC 8259 grammar, no control
//! characters in strings, only whitespace after the object. `\u` escapes are
//! checked for four hex digits but surrogates are not paired, as the RFC
//! grammar allows and as `serde_json` does when it skips a value.

use alloc::vec::Vec;

use crate::event::{Envelope, Id, JsonError, JsonErrorKind};

/// Where in the grammar the validator stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the top-level value.
    Start,
    /// Just after `{`: a key or `}`.
    ObjectFirst,
    /// After `,` inside an object: a key.
    ObjectKey,
    /// After a key: `:`.
    Colon,
    /// After `:` or after `,` in an array: a value.
    Value,
    /// Just after `[`: a value or `]`.
    ArrayFirst,
    /// After a value: `,` or the closing bracket.
    After,
    /// After the top-level object: only whitespace.
    Done,
    /// Inside a string (a value, or a key below the top level).
    Str,
    /// After a backslash in a string.
    StrEscape,
    /// Inside `\uXXXX`: this many hex digits remain.
    StrHex(u8),
    /// Inside a key of the top-level object, which is decoded to be matched.
    Key,
    /// After a backslash in a top-level key.
    KeyEscape,
    /// Inside `\uXXXX` in a top-level key: digits remaining, value so far.
    KeyHex(u8, u16),
    /// Inside a number.
    Num(Num),
    /// Inside `true`, `false` or `null`: which one, and how many bytes matched.
    Literal(u8, u8),
}

/// Position in JSON's number grammar `-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

impl Num {
    /// Whether a number may end in this state.
    fn complete(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits)
    }
}

const LITERALS: [&[u8]; 3] = [b"true", b"false", b"null"];
const NULL: u8 = 2;

/// A top-level key the envelope peek cares about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Other,
    JsonRpc,
    Id,
    Method,
}

/// Which envelope buffer the current token is being copied into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capture {
    None,
    JsonRpc,
    IdString,
    IdNumber,
    Method,
}

/// How the recorded id was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdKind {
    Number,
    String,
    Null,
}

/// The longest top-level key the peek needs to recognise (`jsonrpc`).
const KEY_BYTES: usize = 8;

/// The streaming validator for one line at a time.
#[derive(Debug)]
pub(crate) struct Validator {
    state: State,
    /// Open objects and arrays; `stack` holds one bit per level (1 = object).
    depth: u32,
    max_depth: u32,
    stack: Vec<u64>,
    /// Whether the string being scanned is an object key (below the top level).
    in_key: bool,
    /// Bytes of the line fed before the current piece, for error offsets.
    fed: u64,
    /// The first error; once set the line is rejected and feeding stops.
    error: Option<JsonError>,

    // Envelope peek. Why these exist: a host must be able to route a message,
    // and fail the right request when a response is too large, without
    // parsing the message.
    /// The top-level key being read, decoded, if it is short enough to matter.
    key: [u8; KEY_BYTES],
    key_len: u8,
    key_too_long: bool,
    /// The top-level member whose value comes next.
    field: Field,
    capture: Capture,
    /// Where in the current piece the captured token started.
    capture_from: usize,
    /// Each field's bytes live in a buffer kept across lines (no allocation
    /// per message); the flag says whether the current line set it.
    jsonrpc: Vec<u8>,
    has_jsonrpc: bool,
    id: Option<IdKind>,
    id_bytes: Vec<u8>,
    method: Vec<u8>,
    has_method: bool,
    has_result: bool,
    has_error: bool,
}

impl Validator {
    pub(crate) fn new(max_depth: u32) -> Self {
        Validator {
            state: State::Start,
            depth: 0,
            max_depth,
            stack: Vec::new(),
            in_key: false,
            fed: 0,
            error: None,
            key: [0; KEY_BYTES],
            key_len: 0,
            key_too_long: false,
            field: Field::Other,
            capture: Capture::None,
            capture_from: 0,
            jsonrpc: Vec::new(),
            has_jsonrpc: false,
            id: None,
            id_bytes: Vec::new(),
            method: Vec::new(),
            has_method: false,
            has_result: false,
            has_error: false,
        }
    }

    /// Prepares for a new line, keeping allocations.
    pub(crate) fn reset(&mut self) {
        self.state = State::Start;
        self.depth = 0;
        self.in_key = false;
        self.fed = 0;
        self.error = None;
        self.field = Field::Other;
        self.capture = Capture::None;
        self.capture_from = 0;
        self.has_jsonrpc = false;
        self.id = None;
        self.has_method = false;
        self.has_result = false;
        self.has_error = false;
    }

    /// The routing fields recorded so far on this line.
    pub(crate) fn envelope(&self) -> Envelope<'_> {
        Envelope {
            jsonrpc: self.has_jsonrpc.then_some(&self.jsonrpc[..]),
            id: self.id.map(|kind| match kind {
                IdKind::Number => Id::Number(&self.id_bytes),
                IdKind::String => Id::String(&self.id_bytes),
                IdKind::Null => Id::Null,
            }),
            method: self.has_method.then_some(&self.method[..]),
            has_result: self.has_result,
            has_error: self.has_error,
        }
    }

    /// Accounts for `n` bytes of the line (leading whitespace) that were not
    /// fed, so error offsets stay relative to the line start.
    pub(crate) fn skip(&mut self, n: usize) {
        self.fed += n as u64;
    }

    /// Validates the end of the line: the top-level object must be complete.
    pub(crate) fn finish(&mut self) -> Result<(), JsonError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.state == State::Done {
            Ok(())
        } else {
            let e = JsonError { kind: JsonErrorKind::Incomplete, at: self.fed };
            self.error = Some(e);
            Err(e)
        }
    }

    fn fail(&mut self, kind: JsonErrorKind, i: usize) -> Result<(), JsonError> {
        let e = JsonError { kind, at: self.fed + i as u64 };
        self.error = Some(e);
        self.capture = Capture::None;
        Err(e)
    }

    /// Feeds the next piece of the line.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<(), JsonError> {
        use JsonErrorKind::*;
        if let Some(e) = self.error {
            return Err(e);
        }
        let n = bytes.len();
        let mut i = 0;
        while i < n {
            let b = bytes[i];
            match self.state {
                State::Str => match find_string_special(&bytes[i..]) {
                    None => i = n,
                    Some(k) => {
                        i += k;
                        match bytes[i] {
                            b'"' => self.end_string(bytes, i),
                            b'\\' => self.state = State::StrEscape,
                            _ => return self.fail(ControlInString, i),
                        }
                        i += 1;
                    }
                },
                State::StrEscape => {
                    self.state = match b {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => State::Str,
                        b'u' => State::StrHex(4),
                        _ => return self.fail(InvalidEscape, i),
                    };
                    i += 1;
                }
                State::StrHex(left) => {
                    if !b.is_ascii_hexdigit() {
                        return self.fail(InvalidEscape, i);
                    }
                    self.state = if left == 1 { State::Str } else { State::StrHex(left - 1) };
                    i += 1;
                }
                State::Key => {
                    match b {
                        b'"' => self.end_top_key(),
                        b'\\' => self.state = State::KeyEscape,
                        0..=0x1F => return self.fail(ControlInString, i),
                        _ => self.push_key_byte(b),
                    }
                    i += 1;
                }
                State::KeyEscape => {
                    let decoded = match b {
                        b'"' | b'\\' | b'/' => b,
                        b'b' => 0x08,
                        b'f' => 0x0C,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            self.state = State::KeyHex(4, 0);
                            i += 1;
                            continue;
                        }
                        _ => return self.fail(InvalidEscape, i),
                    };
                    self.push_key_byte(decoded);
                    self.state = State::Key;
                    i += 1;
                }
                State::KeyHex(left, acc) => {
                    let Some(digit) = (b as char).to_digit(16) else {
                        return self.fail(InvalidEscape, i);
                    };
                    let acc = (acc << 4) | digit as u16;
                    if left == 1 {
                        // No interesting key has a character outside ASCII.
                        match u8::try_from(acc) {
                            Ok(ascii) if ascii < 0x80 => self.push_key_byte(ascii),
                            _ => self.key_too_long = true,
                        }
                        self.state = State::Key;
                    } else {
                        self.state = State::KeyHex(left - 1, acc);
                    }
                    i += 1;
                }
                State::Num(num) => {
                    // Digits are the common case: take them in a tight loop.
                    let mut num = num;
                    loop {
                        let Some(&b) = bytes.get(i) else {
                            self.state = State::Num(num);
                            break;
                        };
                        num = match (num, b) {
                            (Num::Minus, b'0') => Num::Zero,
                            (Num::Minus, b'1'..=b'9') => Num::Int,
                            (Num::Int, b'0'..=b'9') => Num::Int,
                            (Num::Zero | Num::Int, b'.') => Num::Dot,
                            (Num::Dot | Num::Frac, b'0'..=b'9') => Num::Frac,
                            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::Exp,
                            (Num::Exp, b'+' | b'-') => Num::ExpSign,
                            (Num::Exp | Num::ExpSign | Num::ExpDigits, b'0'..=b'9') => {
                                Num::ExpDigits
                            }
                            (num, _) if num.complete() && !b.is_ascii_digit() => {
                                // The number ended; `b` belongs to what follows.
                                self.end_token(bytes, i);
                                self.state = State::After;
                                break;
                            }
                            _ => return self.fail(InvalidNumber, i),
                        };
                        i += 1;
                    }
                }
                State::Literal(which, matched) => {
                    let word = LITERALS[usize::from(which)];
                    if b != word[usize::from(matched)] {
                        return self.fail(InvalidLiteral, i);
                    }
                    i += 1;
                    if usize::from(matched) + 1 == word.len() {
                        if which == NULL && self.field == Field::Id && self.depth == 1 {
                            self.id = Some(IdKind::Null);
                        }
                        self.state = State::After;
                    } else {
                        self.state = State::Literal(which, matched + 1);
                    }
                }
                _ if is_whitespace(b) => i += 1,
                State::Start => {
                    if b != b'{' {
                        return self.fail(TopLevelNotObject, i);
                    }
                    self.open(true, i)?;
                    i += 1;
                }
                State::ObjectFirst | State::ObjectKey => {
                    match b {
                        b'"' => self.start_key(),
                        b'}' if self.state == State::ObjectFirst => self.close(),
                        _ => return self.fail(UnexpectedByte, i),
                    }
                    i += 1;
                }
                State::Colon => {
                    if b != b':' {
                        return self.fail(UnexpectedByte, i);
                    }
                    self.state = State::Value;
                    i += 1;
                }
                State::Value | State::ArrayFirst => {
                    if b == b']' && self.state == State::ArrayFirst {
                        self.close();
                    } else {
                        self.start_value(b, i)?;
                    }
                    i += 1;
                }
                State::After => {
                    let in_object = self.top_is_object();
                    match b {
                        b',' => {
                            self.state = if in_object { State::ObjectKey } else { State::Value }
                        }
                        b'}' if in_object => self.close(),
                        b']' if !in_object => self.close(),
                        _ => return self.fail(UnexpectedByte, i),
                    }
                    i += 1;
                }
                State::Done => return self.fail(TrailingCharacters, i),
            }
        }
        if self.capture != Capture::None {
            self.capture_bytes(&bytes[self.capture_from..]);
            self.capture_from = 0;
        }
        self.fed += n as u64;
        Ok(())
    }

    fn top_is_object(&self) -> bool {
        let level = self.depth - 1;
        self.stack[(level / 64) as usize] & (1 << (level % 64)) != 0
    }

    fn open(&mut self, object: bool, i: usize) -> Result<(), JsonError> {
        if self.depth >= self.max_depth {
            return self.fail(JsonErrorKind::DepthLimit, i);
        }
        let (word, bit) = ((self.depth / 64) as usize, self.depth % 64);
        if word == self.stack.len() {
            self.stack.push(0);
        }
        if object {
            self.stack[word] |= 1 << bit;
        } else {
            self.stack[word] &= !(1 << bit);
        }
        self.depth += 1;
        self.state = if object { State::ObjectFirst } else { State::ArrayFirst };
        Ok(())
    }

    fn close(&mut self) {
        self.depth -= 1;
        self.state = if self.depth == 0 { State::Done } else { State::After };
    }

    fn start_key(&mut self) {
        if self.depth == 1 {
            self.key_len = 0;
            self.key_too_long = false;
            self.state = State::Key;
        } else {
            self.in_key = true;
            self.state = State::Str;
        }
    }

    fn push_key_byte(&mut self, b: u8) {
        match self.key.get_mut(usize::from(self.key_len)) {
            Some(slot) => {
                *slot = b;
                self.key_len += 1;
            }
            None => self.key_too_long = true,
        }
    }

    /// A top-level key ended: decide what its value means for the envelope.
    fn end_top_key(&mut self) {
        let key = if self.key_too_long { &[][..] } else { &self.key[..usize::from(self.key_len)] };
        self.field = match key {
            b"jsonrpc" => {
                self.has_jsonrpc = false;
                Field::JsonRpc
            }
            b"id" => {
                self.id = None;
                Field::Id
            }
            b"method" => {
                self.has_method = false;
                Field::Method
            }
            b"result" => {
                self.has_result = true;
                Field::Other
            }
            b"error" => {
                self.has_error = true;
                Field::Other
            }
            _ => Field::Other,
        };
        self.state = State::Colon;
    }

    fn start_value(&mut self, b: u8, i: usize) -> Result<(), JsonError> {
        let field = if self.depth == 1 { self.field } else { Field::Other };
        match b {
            b'"' => {
                self.in_key = false;
                self.state = State::Str;
                self.begin_capture(
                    match field {
                        Field::JsonRpc => Capture::JsonRpc,
                        Field::Id => Capture::IdString,
                        Field::Method => Capture::Method,
                        Field::Other => Capture::None,
                    },
                    i + 1,
                );
            }
            b'{' => self.open(true, i)?,
            b'[' => self.open(false, i)?,
            b'-' | b'0'..=b'9' => {
                self.state = State::Num(match b {
                    b'-' => Num::Minus,
                    b'0' => Num::Zero,
                    _ => Num::Int,
                });
                if field == Field::Id {
                    self.begin_capture(Capture::IdNumber, i);
                }
            }
            b't' => self.state = State::Literal(0, 1),
            b'f' => self.state = State::Literal(1, 1),
            b'n' => self.state = State::Literal(NULL, 1),
            _ => return self.fail(JsonErrorKind::UnexpectedByte, i),
        }
        Ok(())
    }

    fn end_string(&mut self, bytes: &[u8], i: usize) {
        if self.in_key {
            self.in_key = false;
            self.state = State::Colon;
        } else {
            self.end_token(bytes, i);
            self.state = State::After;
        }
    }

    fn begin_capture(&mut self, capture: Capture, from: usize) {
        self.capture = capture;
        self.capture_from = from;
        match capture {
            Capture::None => {}
            Capture::JsonRpc => self.jsonrpc.clear(),
            Capture::Method => self.method.clear(),
            Capture::IdString | Capture::IdNumber => self.id_bytes.clear(),
        }
    }

    /// Appends part of the captured token, dropping the field if it grows
    /// past [`Envelope::MAX_FIELD_BYTES`].
    fn capture_bytes(&mut self, part: &[u8]) {
        let buf = match self.capture {
            Capture::None => return,
            Capture::JsonRpc => &mut self.jsonrpc,
            Capture::Method => &mut self.method,
            Capture::IdString | Capture::IdNumber => &mut self.id_bytes,
        };
        if buf.len() + part.len() > Envelope::MAX_FIELD_BYTES {
            // Too long to be a real id or method: record nothing.
            self.capture = Capture::None;
        } else {
            buf.extend_from_slice(part);
        }
    }

    /// The token being captured (if any) ends before `bytes[end]`.
    fn end_token(&mut self, bytes: &[u8], end: usize) {
        if self.capture == Capture::None {
            return;
        }
        let capture = self.capture;
        self.capture_bytes(&bytes[self.capture_from..end]);
        if self.capture != Capture::None {
            match capture {
                Capture::IdString => self.id = Some(IdKind::String),
                Capture::IdNumber => self.id = Some(IdKind::Number),
                Capture::JsonRpc => self.has_jsonrpc = true,
                Capture::Method => self.has_method = true,
                Capture::None => {}
            }
        }
        self.capture = Capture::None;
    }
}

#[inline(always)]
fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

#[inline(always)]
fn is_string_special(b: u8) -> bool {
    (b == b'"') | (b == b'\\') | (b < 0x20)
}

/// The index of the first byte that ends the plain run of a string: a quote,
/// a backslash or a control character.
///
/// Blocks of 32 bytes are tested with a branch-free fold that the compiler
/// turns into vector compares; only the block that holds a hit is walked byte
/// by byte.
#[inline]
fn find_string_special(s: &[u8]) -> Option<usize> {
    const BLOCK: usize = 32;
    let mut start = 0;
    // Short runs (keys, ids) are the common case: look at them directly.
    if let Some(p) = s.iter().take(16).position(|&b| is_string_special(b)) {
        return Some(p);
    }
    let mut blocks = s.chunks_exact(BLOCK);
    for block in blocks.by_ref() {
        let hits = block.iter().fold(0u8, |acc, &b| acc | u8::from(is_string_special(b)));
        if hits != 0 {
            break;
        }
        start += BLOCK;
    }
    s[start..].iter().position(|&b| is_string_special(b)).map(|p| start + p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    fn check(line: &[u8]) -> Result<(), JsonErrorKind> {
        let mut v = Validator::new(128);
        v.feed(line).and_then(|_| v.finish()).map_err(|e| e.kind)
    }

    #[test]
    fn accepts_and_rejects() {
        use JsonErrorKind::*;
        let cases: &[(&[u8], Result<(), JsonErrorKind>)] = &[
            (br#"{}"#, Ok(())),
            (br#" { "a" : [1, -0.5e+3, true, false, null, {"b": "\u00e9\n"}] } "#, Ok(())),
            (br#"[]"#, Err(TopLevelNotObject)),
            (br#""x""#, Err(TopLevelNotObject)),
            (br#"{"a":01}"#, Err(InvalidNumber)),
            (br#"{"a":1.}"#, Err(InvalidNumber)),
            (br#"{"a":-}"#, Err(InvalidNumber)),
            (br#"{"a":1e}"#, Err(InvalidNumber)),
            (br#"{"a":tru}"#, Err(InvalidLiteral)),
            (br#"{"a":"\x"}"#, Err(InvalidEscape)),
            (br#"{"a":"\u12g4"}"#, Err(InvalidEscape)),
            (b"{\"a\":\"\t\"}", Err(ControlInString)),
            (br#"{"a":1} x"#, Err(TrailingCharacters)),
            (br#"{"a":1}{}"#, Err(TrailingCharacters)),
            (br#"{"a":1,}"#, Err(UnexpectedByte)),
            (br#"{"a" 1}"#, Err(UnexpectedByte)),
            (br#"{"a":[1,]}"#, Err(UnexpectedByte)),
            (br#"{"a":[1}"#, Err(UnexpectedByte)),
            (br#"{"a":1"#, Err(Incomplete)),
            (br#"{"a":"#, Err(Incomplete)),
        ];
        for (line, expected) in cases {
            assert_eq!(check(line), *expected, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn depth_limit_counts_open_containers() {
        let mut deep = Vec::new();
        deep.push(b'{');
        deep.extend_from_slice(br#""a":"#);
        deep.extend(core::iter::repeat_n(b'[', 3));
        deep.extend(core::iter::repeat_n(b']', 3));
        deep.push(b'}');
        let mut v = Validator::new(4);
        assert!(v.feed(&deep).and_then(|_| v.finish()).is_ok());
        let mut v = Validator::new(3);
        assert_eq!(v.feed(&deep).unwrap_err().kind, JsonErrorKind::DepthLimit);
    }

    #[test]
    fn envelope_is_recorded_across_any_split() {
        let line = br#"{"jsonrpc":"2.0","params":{"id":9,"method":"no"},"id":"a\"b","method":"tools/call","result":{}}"#;
        for cut in 0..=line.len() {
            let mut v = Validator::new(128);
            v.feed(&line[..cut]).unwrap();
            v.feed(&line[cut..]).unwrap();
            v.finish().unwrap();
            let env = v.envelope();
            assert_eq!(env.jsonrpc, Some(&b"2.0"[..]), "cut {cut}");
            assert_eq!(env.id, Some(Id::String(br#"a\"b"#)), "cut {cut}");
            assert_eq!(env.method, Some(&b"tools/call"[..]), "cut {cut}");
            assert!(env.has_result && !env.has_error);
        }
    }

    #[test]
    fn escaped_keys_and_number_and_null_ids() {
        let mut v = Validator::new(128);
        v.feed(br#"{"\u0069d":-12.5e3,"method":"x"}"#).unwrap();
        v.finish().unwrap();
        assert_eq!(v.envelope().id, Some(Id::Number(b"-12.5e3")));
        let mut v = Validator::new(128);
        v.feed(br#"{"id":null,"error":{}}"#).unwrap();
        v.finish().unwrap();
        assert_eq!(v.envelope().id, Some(Id::Null));
        let mut v = Validator::new(128);
        v.feed(br#"{"id":{"x":1},"id":[2]}"#).unwrap();
        v.finish().unwrap();
        assert_eq!(v.envelope().id, None);
    }
}
