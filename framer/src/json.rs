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
///
/// No variant carries data (the digits left in `\u`, the number's grammar
/// state, the literal being matched live in [`Validator`]): the scanner then
/// dispatches on one byte through one jump table per token, not two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum State {
    // The eight states between tokens come first: `between_tokens` relies on it.
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
    /// Inside `\uXXXX` (`Validator::hex_left` digits remain).
    StrHex,
    /// Inside a key of the top-level object, which is decoded to be matched.
    Key,
    /// After a backslash in a top-level key.
    KeyEscape,
    /// Inside `\uXXXX` in a top-level key (`hex_left`, value so far in
    /// `hex_value`).
    KeyHex,
    /// Inside a number (where in its grammar: `Validator::num`).
    Num,
    /// Inside `true`, `false` or `null` (`Validator::literal` and
    /// `literal_matched`).
    Literal,
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

impl State {
    /// Whether this is a state between tokens (where whitespace may come).
    fn between_tokens(self) -> bool {
        self as u8 <= State::Done as u8
    }
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
pub(crate) enum IdKind {
    Number,
    String,
    Null,
}

/// Where a recorded envelope field lies in the line: byte offsets from the
/// line start. Recording is two integers, no copy: whoever holds the line
/// (the framer always does, up to the limit) resolves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: u64,
    end: u64,
}

impl Span {
    fn of(self, line: &[u8]) -> Option<&[u8]> {
        line.get(usize::try_from(self.start).ok()?..usize::try_from(self.end).ok()?)
    }
}

/// A recorded envelope as (start, len) offsets from the line start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EnvelopeOffsets {
    pub(crate) jsonrpc: Option<(u64, u64)>,
    pub(crate) id: Option<(IdKind, (u64, u64))>,
    pub(crate) method: Option<(u64, u64)>,
    pub(crate) has_result: bool,
    pub(crate) has_error: bool,
}

impl EnvelopeOffsets {
    /// The envelope resolved against the line's bytes (from its first byte);
    /// a field that lies past them is left out, as the packed form leaves it.
    pub(crate) fn resolve(self, line: &[u8]) -> Envelope<'_> {
        let of = |(start, len): (u64, u64)| {
            Span {
                start,
                end: start.saturating_add(len),
            }
            .of(line)
        };
        Envelope {
            jsonrpc: self.jsonrpc.and_then(of),
            id: self.id.and_then(|(kind, range)| match kind {
                IdKind::Number => of(range).map(Id::Number),
                IdKind::String => of(range).map(Id::String),
                IdKind::Null => Some(Id::Null),
            }),
            method: self.method.and_then(of),
            has_result: self.has_result,
            has_error: self.has_error,
        }
    }
}

/// What [`Validator::feed_line`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LineStart {
    /// A valid line whose newline is at this offset of the bytes fed.
    Whole(usize),
    /// Every byte fed is the line's, and was fed.
    Fed,
    /// Undecided: reset and feed the line again.
    Unknown,
}

/// The longest top-level key the peek needs to recognise (`jsonrpc`).
const KEY_BYTES: usize = 8;

/// The streaming validator for one line at a time.
#[derive(Debug)]
pub(crate) struct Validator {
    state: State,
    /// The data of the current state (see [`State`]).
    num: Num,
    hex_left: u8,
    hex_value: u16,
    literal: u8,
    literal_matched: u8,
    /// Open objects and arrays; `stack` holds one bit per level (1 = object).
    depth: u32,
    max_depth: u32,
    stack: Vec<u64>,
    /// Whether the innermost open container is an object: its bit in
    /// `stack`, kept apart because it is asked after every value.
    top_object: bool,
    /// Whether the string being scanned is an object key (below the top level).
    in_key: bool,
    /// Bytes of the line fed before the current piece, for error offsets.
    fed: u64,
    /// The first error; once set the line is rejected and feeding stops.
    error: Option<JsonError>,
    /// Set while [`Validator::feed_line`] feeds, which may be past the
    /// line's end: a `\n` after the top-level object then ends the feed, its
    /// line offset kept in `line_end`. Other feeds never see a `\n` (the
    /// framer hands over lines without theirs).
    stop_at_newline: bool,
    line_end: Option<u64>,
    /// Whether a `\n` was skipped as whitespace inside the object: the line
    /// ended there, and `feed_line` has read past its end.
    newline_inside: bool,
    /// Every byte ever fed, for the tests that bound how often a byte is
    /// read (never reset).
    #[cfg(feature = "testing")]
    pub(crate) bytes_fed: u64,

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
    /// Line offset where the captured token started.
    capture_from: u64,
    jsonrpc: Option<Span>,
    id: Option<(IdKind, Span)>,
    method: Option<Span>,
    has_result: bool,
    has_error: bool,

    // Kept copies. Why these exist: a line rejected for its size is not
    // kept, yet its id may come after the limit (serialisers that write
    // `id` last). The framer then goes on feeding the line here and hands
    // each piece to `retain` before it is gone; the fields recorded are
    // copied (at most `MAX_FIELD_BYTES` each), never the line.
    /// Copies of `jsonrpc`, `id` and `method`, each valid for the span it
    /// was copied from.
    kept: [Kept; 3],
    /// The token being recorded when the last retained piece ended: its
    /// bytes so far (at most `MAX_FIELD_BYTES + 1`) and its line offset.
    partial: Vec<u8>,
    partial_from: Option<u64>,
}

/// A copy of one recorded envelope field (see `Validator::retain`).
#[derive(Debug, Default)]
struct Kept {
    /// The span the copy was made from; a field recorded again (a repeated
    /// key) has another span, so a stale copy is never used.
    span: Option<Span>,
    bytes: Vec<u8>,
}

impl Validator {
    pub(crate) fn new(max_depth: u32) -> Self {
        Validator {
            state: State::Start,
            num: Num::Zero,
            hex_left: 0,
            hex_value: 0,
            literal: 0,
            literal_matched: 0,
            depth: 0,
            max_depth,
            stack: Vec::new(),
            top_object: false,
            in_key: false,
            fed: 0,
            error: None,
            stop_at_newline: false,
            line_end: None,
            newline_inside: false,
            #[cfg(feature = "testing")]
            bytes_fed: 0,
            key: [0; KEY_BYTES],
            key_len: 0,
            key_too_long: false,
            field: Field::Other,
            capture: Capture::None,
            capture_from: 0,
            jsonrpc: None,
            id: None,
            method: None,
            has_result: false,
            has_error: false,
            kept: Default::default(),
            partial: Vec::new(),
            partial_from: None,
        }
    }

    /// Prepares for a new line, keeping allocations.
    pub(crate) fn reset(&mut self) {
        self.state = State::Start;
        self.depth = 0;
        self.in_key = false;
        self.fed = 0;
        self.error = None;
        self.line_end = None;
        self.newline_inside = false;
        self.field = Field::Other;
        self.capture = Capture::None;
        self.capture_from = 0;
        self.jsonrpc = None;
        self.id = None;
        self.method = None;
        self.has_result = false;
        self.has_error = false;
        for kept in &mut self.kept {
            kept.span = None;
        }
        self.partial_from = None;
    }

    /// Copies what the envelope needs from `window`, the line's bytes at
    /// offsets `start..start + window.len()`, which are about to be lost:
    /// every recorded field that ends in it, and the start of a token still
    /// being recorded. Call it for consecutive windows, each after the
    /// validator was fed up to the window's end (bytes of a code point cut
    /// at the end may still be pending: the copy is of raw line bytes).
    /// Afterwards [`Validator::kept_envelope`] gives the envelope without
    /// the line. Costs nothing per byte: only the fields are copied.
    pub(crate) fn retain(&mut self, window: &[u8], start: u64) {
        let spans = [self.jsonrpc, self.id.map(|(_, span)| span), self.method];
        for (kept, span) in self.kept.iter_mut().zip(spans) {
            let Some(span) = span else { continue };
            if kept.span == Some(span) {
                continue;
            }
            let mut copy = core::mem::take(&mut kept.bytes);
            copy.clear();
            if span.start < start {
                // Its head passed in an earlier window, as the partial token.
                let head = (start - span.start).min(span.end - span.start) as usize;
                match self.partial.get(..head) {
                    Some(bytes) if self.partial_from == Some(span.start) => {
                        copy.extend_from_slice(bytes)
                    }
                    _ => continue,
                }
            }
            let from = span.start.saturating_sub(start) as usize;
            let to = span.end.saturating_sub(start) as usize;
            let Some(tail) = window.get(from..to) else {
                continue;
            };
            copy.extend_from_slice(tail);
            kept.bytes = copy;
            kept.span = Some(span);
        }
        if self.capture == Capture::None {
            return;
        }
        // Longer than this is not recorded, so need not be copied.
        let cap = Envelope::MAX_FIELD_BYTES + 1;
        let from = self.capture_from;
        if from >= start {
            let at = ((from - start) as usize).min(window.len());
            let bytes = &window[at..];
            self.partial.clear();
            self.partial
                .extend_from_slice(&bytes[..bytes.len().min(cap)]);
            self.partial_from = Some(from);
        } else if self.partial_from == Some(from) {
            let room = cap.saturating_sub(self.partial.len());
            self.partial
                .extend_from_slice(&window[..window.len().min(room)]);
        }
    }

    /// The routing fields recorded so far, from the copies
    /// [`Validator::retain`] made: fields whose bytes were not retained are
    /// left out.
    pub(crate) fn kept_envelope(&self) -> Envelope<'_> {
        let field = |index: usize, span: Option<Span>| {
            let kept: &Kept = &self.kept[index];
            (span.is_some() && kept.span == span).then_some(&kept.bytes[..])
        };
        Envelope {
            jsonrpc: field(0, self.jsonrpc),
            id: self.id.and_then(|(kind, span)| match kind {
                IdKind::Null => Some(Id::Null),
                IdKind::Number => field(1, Some(span)).map(Id::Number),
                IdKind::String => field(1, Some(span)).map(Id::String),
            }),
            method: field(2, self.method),
            has_result: self.has_result,
            has_error: self.has_error,
        }
    }

    /// The routing fields recorded so far on this line, resolved against
    /// the line's bytes (from its start, at least up to the last recorded
    /// field).
    pub(crate) fn envelope<'a>(&self, line: &'a [u8]) -> Envelope<'a> {
        Envelope {
            jsonrpc: self.jsonrpc.and_then(|span| span.of(line)),
            id: self.id.and_then(|(kind, span)| match kind {
                IdKind::Number => span.of(line).map(Id::Number),
                IdKind::String => span.of(line).map(Id::String),
                IdKind::Null => Some(Id::Null),
            }),
            method: self.method.and_then(|span| span.of(line)),
            has_result: self.has_result,
            has_error: self.has_error,
        }
    }

    /// The envelope as offsets into the line, for a caller that holds the
    /// line's bytes itself (the packed form).
    pub(crate) fn envelope_offsets(&self) -> EnvelopeOffsets {
        let range = |span: Span| (span.start, span.end - span.start);
        EnvelopeOffsets {
            jsonrpc: self.jsonrpc.map(range),
            id: self.id.map(|(kind, span)| (kind, range(span))),
            method: self.method.map(range),
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
            let e = JsonError {
                kind: JsonErrorKind::Incomplete,
                at: self.fed,
            };
            self.error = Some(e);
            Err(e)
        }
    }

    /// Feeds the start of a line that may run on past the line's end
    /// (`bytes` holds no piece of the line yet fed): the framer's way to
    /// find where a valid line ends without looking for the newline first.
    ///
    /// - [`LineStart::Whole`]`(n)`: the top-level object ended, followed by
    ///   whitespace only up to the newline at `bytes[n]`, the first newline
    ///   in `bytes`, and nothing after it was read. The validator is then as
    ///   if exactly the line had been fed: [`Validator::finish`] accepts it,
    ///   the envelope is recorded.
    /// - [`LineStart::Fed`]: no newline in `bytes` and no error: all of it is
    ///   the line's, fed as [`Validator::feed`] would have.
    /// - [`LineStart::Unknown`]: anything else (an error, which may belong
    ///   to the next line; a newline inside the object, where the line ends
    ///   unfinished). The validator must be reset and the line fed again
    ///   once its end is known.
    pub(crate) fn feed_line(&mut self, bytes: &[u8]) -> LineStart {
        let start = self.fed;
        self.stop_at_newline = true;
        let fed = self.feed(bytes);
        self.stop_at_newline = false;
        match fed {
            _ if self.newline_inside => LineStart::Unknown,
            Ok(()) => match self.line_end {
                Some(end) => {
                    self.fed = end;
                    LineStart::Whole((end - start) as usize)
                }
                None => LineStart::Fed,
            },
            Err(_) => LineStart::Unknown,
        }
    }

    fn fail(&mut self, kind: JsonErrorKind, i: usize) -> Result<(), JsonError> {
        let e = JsonError {
            kind,
            at: self.fed + i as u64,
        };
        self.error = Some(e);
        self.capture = Capture::None;
        Err(e)
    }

    /// Feeds the next piece of the line.
    ///
    /// The grammar state lives in a local while the piece is scanned (so it
    /// stays in a register) and is written back once at the end.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<(), JsonError> {
        use JsonErrorKind::*;
        if let Some(e) = self.error {
            return Err(e);
        }
        let n = bytes.len();
        #[cfg(feature = "testing")]
        {
            self.bytes_fed += n as u64;
        }
        let mut i = 0;
        let mut state = self.state;
        let outcome = loop {
            let scanned: Result<(), (JsonErrorKind, usize)> = 'scan: loop {
                let Some(&b) = bytes.get(i) else { break Ok(()) };
                // Arms that `continue` come back to this dispatch; those that
                // fall out of the match (`{`, `:`, `,`, in a key, value or
                // string state) go on into the member chain below.
                match state {
                    // The member chain below takes these.
                    State::Str | State::Value | State::ArrayFirst => {}
                    State::ObjectFirst | State::ObjectKey if b == b'"' => {}
                    State::ObjectFirst | State::ObjectKey => {
                        if b != b'}' || state != State::ObjectFirst {
                            break Err((UnexpectedByte, i));
                        }
                        state = self.close();
                        i += 1;
                        continue;
                    }
                    State::Key => {
                        let run = plain_run(bytes, i);
                        self.push_key_bytes(&bytes[i..i + run]);
                        i += run;
                        match bytes.get(i) {
                            None => {}
                            Some(b'"') => {
                                state = self.end_top_key();
                                if bytes.get(i + 1) == Some(&b':') {
                                    state = State::Value;
                                    i += 1;
                                }
                            }
                            Some(b'\\') => state = State::KeyEscape,
                            Some(_) => break Err((ControlInString, i)),
                        }
                        i += 1;
                        continue;
                    }
                    State::Num => {
                        // Digits are the common case: take them in a tight loop.
                        let mut num = self.num;
                        if num == Num::Int {
                            // The integer part (ids, counts): nothing to track.
                            i += digit_run(&bytes[i..]);
                            // An integer (the common number) ends at any byte
                            // but a fraction's or an exponent's: what follows
                            // is read as after any value, `,` right here.
                            match bytes.get(i) {
                                Some(b'.' | b'e' | b'E') | None => {}
                                Some(&c) => {
                                    self.end_token(i);
                                    state = State::After;
                                    if c != b',' {
                                        continue;
                                    }
                                    state = if self.top_is_object() {
                                        State::ObjectKey
                                    } else {
                                        State::Value
                                    };
                                    i += 1;
                                }
                            }
                        }
                        if state == State::Num {
                            loop {
                                let Some(&b) = bytes.get(i) else {
                                    self.num = num;
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
                                        self.end_token(i);
                                        state = State::After;
                                        break;
                                    }
                                    _ => break,
                                };
                                i += 1;
                            }
                            if state == State::Num && i < n {
                                break Err((InvalidNumber, i));
                            }
                            continue;
                        }
                    }
                    State::StrEscape
                    | State::StrHex
                    | State::KeyEscape
                    | State::KeyHex
                    | State::Literal => {
                        match self.rare_step(state, bytes, i) {
                            Ok((next, step)) => (state, i) = (next, i + usize::from(step)),
                            Err(kind) => break Err((kind, i)),
                        }
                        continue;
                    }
                    State::Start => {
                        if b != b'{' {
                            break Err((TopLevelNotObject, i));
                        }
                        match self.open(true) {
                            Some(next) => state = next,
                            None => break Err((DepthLimit, i)),
                        }
                        i += 1;
                    }
                    State::Colon => {
                        if b != b':' {
                            break Err((UnexpectedByte, i));
                        }
                        state = State::Value;
                        i += 1;
                    }
                    State::After => {
                        let in_object = self.top_is_object();
                        i += 1;
                        state = match b {
                            b',' if in_object => State::ObjectKey,
                            b',' => State::Value,
                            b'}' if in_object => {
                                state = self.close();
                                continue;
                            }
                            b']' if !in_object => {
                                state = self.close();
                                continue;
                            }
                            _ => {
                                i -= 1;
                                break Err((UnexpectedByte, i));
                            }
                        };
                    }
                    State::Done if b == b'\n' && self.stop_at_newline => {
                        self.line_end = Some(self.fed + i as u64);
                        break Ok(());
                    }
                    State::Done => break Err((TrailingCharacters, i)),
                }
                // The member chain: a key, the value after its `:`, a string
                // value, and after its `,` the next key or value, each falling
                // into the next without the dispatch above. Anything else (a
                // piece's end, a number, a literal, a closed container, what
                // the slow path must look at) goes back to it.
                loop {
                    if matches!(state, State::ObjectFirst | State::ObjectKey) {
                        if bytes.get(i) != Some(&b'"') {
                            continue 'scan;
                        }
                        if self.depth == 1
                            && let Some(member) = bytes.get(i..i + JSONRPC_MEMBER.len())
                            && member == JSONRPC_MEMBER
                        {
                            // The member every message has, as compact
                            // serialisers write it: taken whole.
                            self.field = Field::JsonRpc;
                            // `2.0`, between the quotes at 10 and 14.
                            self.jsonrpc = Some(Span {
                                start: self.fed + i as u64 + 11,
                                end: self.fed + i as u64 + 14,
                            });
                            i += JSONRPC_MEMBER.len();
                            state = State::ObjectKey;
                            continue;
                        }
                        let start = i + 1;
                        let run = plain_run(bytes, start);
                        if self.depth > 1 {
                            // A nested key: skip it where it lies.
                            if bytes.get(start + run) == Some(&b'"')
                                && bytes.get(start + run + 1) == Some(&b':')
                            {
                                i = start + run + 2;
                                state = State::Value;
                            } else {
                                state = self.start_key();
                                i += 1;
                            }
                        } else if bytes.get(start + run) == Some(&b'"') {
                            // A top-level key that ends in this piece without
                            // an escape: matched where it lies.
                            self.field = self.top_field(run, key_word(&bytes[start..], run));
                            i = start + run + 1;
                            state = State::Colon;
                            if bytes.get(i) != Some(&b':') {
                                continue 'scan;
                            }
                            state = State::Value;
                            i += 1;
                        } else {
                            state = self.start_key();
                            i += 1;
                            continue 'scan;
                        }
                    }
                    if matches!(state, State::Value | State::ArrayFirst) {
                        // A value starts at `bytes[i]`, if the piece goes on.
                        let Some(&b) = bytes.get(i) else {
                            continue 'scan;
                        };
                        state = if b == b']' && state == State::ArrayFirst {
                            self.close()
                        } else if self.depth > 1 && (b == b'"' || b.is_ascii_digit()) {
                            // Below the top level nothing is recorded: the two
                            // commonest value starts skip the envelope logic.
                            if b == b'"' {
                                self.in_key = false;
                                State::Str
                            } else {
                                self.num = if b == b'0' { Num::Zero } else { Num::Int };
                                State::Num
                            }
                        } else {
                            match self.start_value(b, i) {
                                Ok(next) => next,
                                Err(kind) => break 'scan Err((kind, i)),
                            }
                        };
                        i += 1;
                        match state {
                            State::Str => {}
                            State::ObjectFirst | State::ArrayFirst => continue,
                            State::Num => {
                                // An integer's digits here, the token ended
                                // where they end (as the dispatch's number
                                // arm does), and on past a `,`. A fraction,
                                // an exponent or the piece's end go back.
                                if self.num != Num::Int {
                                    continue 'scan;
                                }
                                i += digit_run(&bytes[i..]);
                                if matches!(bytes.get(i), Some(b'.' | b'e' | b'E') | None) {
                                    continue 'scan;
                                }
                                self.end_token(i);
                                state = State::After;
                                if bytes.get(i) != Some(&b',') {
                                    continue 'scan;
                                }
                                state = if self.top_is_object() {
                                    State::ObjectKey
                                } else {
                                    State::Value
                                };
                                i += 1;
                                continue;
                            }
                            State::Literal => {
                                // `true`, `false` or `null` whole in the piece:
                                // one compare, and on past a `,`.
                                let Some(len) = literal_len(bytes, i - 1) else {
                                    continue 'scan;
                                };
                                if b == b'n' && self.field == Field::Id && self.depth == 1 {
                                    self.id = Some((IdKind::Null, Span { start: 0, end: 0 }));
                                }
                                i += len - 1;
                                state = State::After;
                                // `false}}` ends many messages: up to two
                                // closing brackets here, and a `,` after them.
                                for _ in 0..2 {
                                    match bytes.get(i) {
                                        Some(&c @ (b'}' | b']'))
                                            if state == State::After
                                                && (c == b'}') == self.top_is_object() =>
                                        {
                                            state = self.close();
                                            i += 1;
                                        }
                                        _ => break,
                                    }
                                }
                                if state != State::After || bytes.get(i) != Some(&b',') {
                                    continue 'scan;
                                }
                                state = if self.top_is_object() {
                                    State::ObjectKey
                                } else {
                                    State::Value
                                };
                                i += 1;
                                continue;
                            }
                            _ => continue 'scan,
                        }
                    }
                    // Inside a string. Stay in it across escapes: they are
                    // frequent in real text and need no trip through the
                    // dispatcher.
                    loop {
                        i = string_run(bytes, i);
                        match bytes.get(i) {
                            None => continue 'scan,
                            Some(b'"') => {
                                state = self.end_string(i);
                                // Minified JSON: `":` and `",` follow at once;
                                // take them here rather than through the loop.
                                match (state, bytes.get(i + 1)) {
                                    (State::Colon, Some(b':')) => {
                                        state = State::Value;
                                        i += 1;
                                    }
                                    (State::After, Some(b',')) => {
                                        state = if self.top_is_object() {
                                            State::ObjectKey
                                        } else {
                                            State::Value
                                        };
                                        i += 1;
                                    }
                                    (State::After, Some(&c @ (b'}' | b']')))
                                        if (c == b'}') == self.top_is_object() =>
                                    {
                                        state = self.close();
                                        i += 1;
                                        // `}}`, `}]`, `]}`: the next one too,
                                        // and a `,` after them.
                                        if let Some(&c @ (b'}' | b']')) = bytes.get(i + 1)
                                            && state == State::After
                                            && (c == b'}') == self.top_is_object()
                                        {
                                            state = self.close();
                                            i += 1;
                                        }
                                        if state == State::After && bytes.get(i + 1) == Some(&b',')
                                        {
                                            state = if self.top_is_object() {
                                                State::ObjectKey
                                            } else {
                                                State::Value
                                            };
                                            i += 1;
                                        }
                                    }
                                    _ => {}
                                }
                                i += 1;
                                break;
                            }
                            Some(b'\\') => match bytes.get(i + 1) {
                                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                                    i += 2
                                }
                                Some(b'u') if bytes.get(i + 2..i + 6).is_some_and(is_hex4) => {
                                    i += 6
                                }
                                Some(b'u') | None => {
                                    // The escape continues in the next piece (or
                                    // is bad): finish it byte by byte.
                                    state = State::StrEscape;
                                    i += 1;
                                    continue 'scan;
                                }
                                Some(_) => break 'scan Err((InvalidEscape, i + 1)),
                            },
                            Some(_) => break 'scan Err((ControlInString, i)),
                        }
                    }
                    if !matches!(state, State::ObjectKey | State::Value) {
                        continue 'scan;
                    }
                }
            };
            // Whitespace between tokens: no token starts with it, so a state
            // between tokens rejects it like any other unexpected byte, leaving
            // the state unchanged; it is skipped here and the scan resumes.
            // Minified JSON (the common case) never pays for a whitespace test.
            match scanned {
                Err((_, at))
                    if state.between_tokens()
                        && at == i
                        && bytes.get(i).is_some_and(|&b| is_whitespace(b)) =>
                {
                    self.newline_inside |= bytes[i] == b'\n';
                    i += 1
                }
                other => break other,
            }
        };
        self.state = state;
        if let Err((kind, at)) = outcome {
            return self.fail(kind, at);
        }
        self.fed += n as u64;
        Ok(())
    }

    /// One step in a state that is rare on real traffic (an escape or
    /// `\u` split across pieces, an escape in a top-level key, a literal):
    /// out of line, which keeps the scanner's hot loop smaller (5% fewer
    /// instructions natively on small messages when it was moved out).
    /// It returns the next state and how many bytes it took (at most five);
    /// an error is at `bytes[i]`, the byte it decides on, so only its kind
    /// comes back. The result then fits one WebAssembly value, where the
    /// next position and an error's offset made it a value in memory and
    /// the scanner a frame on the guest's stack for every call of it.
    #[cold]
    #[inline(never)]
    fn rare_step(
        &mut self,
        mut state: State,
        bytes: &[u8],
        mut i: usize,
    ) -> Result<(State, u8), JsonErrorKind> {
        use JsonErrorKind::*;
        let start = i;
        let b = bytes[i];
        match state {
            State::StrEscape => {
                state = match b {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => State::Str,
                    b'u' => {
                        self.hex_left = 4;
                        State::StrHex
                    }
                    _ => return Err(InvalidEscape),
                };
                i += 1;
            }
            State::StrHex => {
                if !b.is_ascii_hexdigit() {
                    return Err(InvalidEscape);
                }
                self.hex_left -= 1;
                if self.hex_left == 0 {
                    state = State::Str;
                }
                i += 1;
            }
            State::KeyEscape => {
                let decoded = match (b, simple_escape(b)) {
                    (_, Some(decoded)) => decoded,
                    (b'u', None) => {
                        (self.hex_left, self.hex_value) = (4, 0);
                        return Ok((State::KeyHex, 1));
                    }
                    _ => return Err(InvalidEscape),
                };
                self.push_key_bytes(&[decoded]);
                state = State::Key;
                i += 1;
            }
            State::KeyHex => {
                let Some(digit) = (b as char).to_digit(16) else {
                    return Err(InvalidEscape);
                };
                self.hex_value = (self.hex_value << 4) | digit as u16;
                self.hex_left -= 1;
                if self.hex_left == 0 {
                    // No interesting key has a character outside ASCII.
                    match u8::try_from(self.hex_value) {
                        Ok(ascii) if ascii < 0x80 => self.push_key_bytes(&[ascii]),
                        _ => self.key_too_long = true,
                    }
                    state = State::Key;
                }
                i += 1;
            }
            State::Literal => {
                let (which, matched) = (self.literal, self.literal_matched);
                let word = LITERALS[usize::from(which)];
                let rest = &word[usize::from(matched)..];
                // The whole rest at once when the piece holds it (the
                // common case), else byte by byte across the split.
                let step = if bytes.get(i..i + rest.len()) == Some(rest) {
                    rest.len()
                } else if b == rest[0] {
                    1
                } else {
                    return Err(InvalidLiteral);
                };
                i += step;
                let matched = usize::from(matched) + step;
                if matched == word.len() {
                    if which == NULL && self.field == Field::Id && self.depth == 1 {
                        self.id = Some((IdKind::Null, Span { start: 0, end: 0 }));
                    }
                    state = State::After;
                } else {
                    self.literal_matched = matched as u8;
                }
            }
            _ => unreachable!("rare_step is called only in rare states"),
        }
        Ok((state, (i - start) as u8))
    }

    #[inline(always)]
    fn top_is_object(&self) -> bool {
        self.top_object
    }

    /// Opens an object or array; `None` past the depth limit.
    #[inline(always)]
    fn open(&mut self, object: bool) -> Option<State> {
        if self.depth >= self.max_depth {
            return None;
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
        self.top_object = object;
        Some(if object {
            State::ObjectFirst
        } else {
            State::ArrayFirst
        })
    }

    fn close(&mut self) -> State {
        self.depth -= 1;
        if self.depth == 0 {
            State::Done
        } else {
            let level = self.depth - 1;
            self.top_object = self.stack[(level / 64) as usize] & (1 << (level % 64)) != 0;
            State::After
        }
    }

    fn start_key(&mut self) -> State {
        if self.depth == 1 {
            self.key_len = 0;
            self.key_too_long = false;
            State::Key
        } else {
            self.in_key = true;
            State::Str
        }
    }

    fn push_key_bytes(&mut self, part: &[u8]) {
        let at = usize::from(self.key_len);
        match self.key.get_mut(at..at + part.len()) {
            Some(slots) => {
                slots.copy_from_slice(part);
                self.key_len += part.len() as u8;
            }
            None => self.key_too_long = true,
        }
    }

    /// A top-level key ended: decide what its value means for the envelope.
    fn end_top_key(&mut self) -> State {
        let len = if self.key_too_long {
            usize::MAX
        } else {
            usize::from(self.key_len)
        };
        let word = u64::from_le_bytes(self.key) & low_bytes(len.min(KEY_BYTES));
        self.field = self.top_field(len, word);
        State::Colon
    }

    /// What the value of the top-level key of `len` bytes that `word` holds
    /// (see [`key_word`]) means for the envelope; notes `result` and
    /// `error`, forgets an earlier field of the same key.
    #[inline(always)]
    fn top_field(&mut self, len: usize, word: u64) -> Field {
        const fn word_of(key: &[u8]) -> u64 {
            let mut bytes = [0; 8];
            let mut k = 0;
            while k < key.len() {
                bytes[k] = key[k];
                k += 1;
            }
            u64::from_le_bytes(bytes)
        }
        const JSONRPC: u64 = word_of(b"jsonrpc");
        const ID: u64 = word_of(b"id");
        const METHOD: u64 = word_of(b"method");
        const RESULT: u64 = word_of(b"result");
        const ERROR: u64 = word_of(b"error");
        match (len, word) {
            (7, JSONRPC) => {
                self.jsonrpc = None;
                Field::JsonRpc
            }
            (2, ID) => {
                self.id = None;
                Field::Id
            }
            (6, METHOD) => {
                self.method = None;
                Field::Method
            }
            (6, RESULT) => {
                self.has_result = true;
                Field::Other
            }
            (5, ERROR) => {
                self.has_error = true;
                Field::Other
            }
            _ => Field::Other,
        }
    }

    /// The first byte `b` (at `i`) of a value: the state that reads the rest.
    // Always inlined: in the WebAssembly build a call here costs a call
    // frame and an epoch check per value.
    #[inline(always)]
    fn start_value(&mut self, b: u8, i: usize) -> Result<State, JsonErrorKind> {
        let field = if self.depth == 1 {
            self.field
        } else {
            Field::Other
        };
        match b {
            b'"' => {
                self.in_key = false;
                self.begin_capture(
                    match field {
                        Field::JsonRpc => Capture::JsonRpc,
                        Field::Id => Capture::IdString,
                        Field::Method => Capture::Method,
                        Field::Other => Capture::None,
                    },
                    i + 1,
                );
                Ok(State::Str)
            }
            b'{' => self.open(true).ok_or(JsonErrorKind::DepthLimit),
            b'[' => self.open(false).ok_or(JsonErrorKind::DepthLimit),
            b'-' | b'0'..=b'9' => {
                if field == Field::Id {
                    self.begin_capture(Capture::IdNumber, i);
                }
                self.num = match b {
                    b'-' => Num::Minus,
                    b'0' => Num::Zero,
                    _ => Num::Int,
                };
                Ok(State::Num)
            }
            b't' | b'f' | b'n' => {
                self.literal = match b {
                    b't' => 0,
                    b'f' => 1,
                    _ => NULL,
                };
                self.literal_matched = 1;
                Ok(State::Literal)
            }
            _ => Err(JsonErrorKind::UnexpectedByte),
        }
    }

    #[inline]
    fn end_string(&mut self, i: usize) -> State {
        if self.in_key {
            self.in_key = false;
            State::Colon
        } else {
            self.end_token(i);
            State::After
        }
    }

    /// Starts recording the token that begins at `bytes[from]`.
    fn begin_capture(&mut self, capture: Capture, from: usize) {
        self.capture = capture;
        self.capture_from = self.fed + from as u64;
    }

    /// The token being recorded (if any) ends before `bytes[end]`.
    #[inline]
    fn end_token(&mut self, end: usize) {
        if self.capture == Capture::None {
            return;
        }
        let span = Span {
            start: self.capture_from,
            end: self.fed + end as u64,
        };
        // Longer than any real id or method: record nothing.
        if span.end - span.start <= Envelope::MAX_FIELD_BYTES as u64 {
            match self.capture {
                Capture::IdString => self.id = Some((IdKind::String, span)),
                Capture::IdNumber => self.id = Some((IdKind::Number, span)),
                Capture::JsonRpc => self.jsonrpc = Some(span),
                Capture::Method => self.method = Some(span),
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

/// The length of the plain run at `bytes[at..]`: bytes up to the first
/// quote, backslash or control character (or all of them).
///
/// Sixteen bytes per step with vector compares (`wide`: SSE2 on x86-64,
/// simd128 on wasm when enabled, plain lanes elsewhere). Fewer than sixteen
/// bytes left are read as the last sixteen of `bytes` when it has them
/// (those before `at` are shifted out), else one at a time, by compares
/// (a table's address would hold a register across the scanner's loop).
#[inline(always)]
fn plain_run(bytes: &[u8], at: usize) -> usize {
    let s = &bytes[at..];
    // The first block outside the loop: keys and short strings end in it,
    // and a WebAssembly guest pays an interruption check at a loop's head.
    let mut i = 0;
    if let Some(block) = s.first_chunk::<16>() {
        let specials = special_mask(*block);
        if specials != 0 {
            return specials.trailing_zeros() as usize;
        }
        i = 16;
    }
    while let Some(block) = s.get(i..i + 16) {
        let specials = special_mask(block.try_into().expect("sixteen bytes"));
        if specials != 0 {
            return i + specials.trailing_zeros() as usize;
        }
        i += 16;
    }
    let left = s.len() - i;
    if left == 0 {
        return i;
    }
    if let Some(last) = bytes.len().checked_sub(16).map(|from| &bytes[from..]) {
        let specials = special_mask(last.try_into().expect("sixteen bytes")) >> (16 - left);
        return i + (specials.trailing_zeros() as usize).min(left);
    }
    i + s[i..]
        .iter()
        .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
        .unwrap_or(left)
}

/// 1 for every byte that is not the second byte of a one-character escape
/// (`\\n`, `\\"`, …).
static NOT_SIMPLE: [u8; 256] = {
    let mut table = [0; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = simple_escape(b as u8).is_none() as u8;
        b += 1;
    }
    table
};

/// `"jsonrpc":"2.0",` as compact serialisers write it, not last: sixteen
/// bytes that every JSON-RPC 2.0 message has, compared in one step at a
/// top-level key instead of read as a key, a colon, a string and a comma.
const JSONRPC_MEMBER: &[u8; 16] = br#""jsonrpc":"2.0","#;

/// Bits at the odd positions of a 64-byte block.
const ODD_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;

/// Where the valid string content that starts at `bytes[at]` ends (a
/// position in `bytes`, not a length); it must not start inside an escape.
/// Like [`plain_run`], but one-character escapes
/// (`\\n`, `\\"`, `\\\\`, …) are part of the run. It stops at a quote or a
/// control byte that is not escaped, at the backslash of any other escape
/// (`\\u`, a bad one), or where the input may cut an escape; the caller
/// handles what it stops at exactly as after [`plain_run`].
///
/// A string that ends within its first sixteen bytes without an escape (keys,
/// short values) costs what [`plain_run`] costs. Past that it goes 64 bytes a
/// step: one pass builds a mask of quotes and controls and one of
/// backslashes, the escaped positions come from the backslash mask by
/// arithmetic (a run of backslashes escapes the byte after it when its length
/// is odd), and only the bytes escaped by a run of odd length are looked up.
/// The first three of them in a block are looked up with no branch (absent
/// ones look at bit 63 and are masked off): a loop over them ran a different
/// number of times block after block, and its mispredicted exit was half the
/// time of a text with escapes every few words. Up to three escapes a block
/// then cost no branch each.
#[inline(always)]
fn string_run(bytes: &[u8], at: usize) -> usize {
    // Positions are in `bytes`, not from `at`: the loop then needs no
    // registers for the rest's start and length. A piece too short for the
    // first sixteen bytes, or for another block, ends in the one
    // `plain_run` at the end.
    let mut i = at;
    if let Some(head) = bytes.get(at..at + 16) {
        let first = special_mask(head.try_into().expect("sixteen bytes")).trailing_zeros() as usize;
        i = match bytes.get(at + first) {
            _ if first >= 16 => at + 16,
            Some(b'\\') => at + first,
            _ => return at + first,
        };
        while let Some(block) = bytes[i..].first_chunk::<64>() {
            match block_step(block) {
                Ok(end) => return i + end,
                Err(limit) => i += limit,
            }
        }
    }
    i + plain_run(bytes, i)
}

/// One 64-byte step of [`string_run`]: `Ok` with where in `block` the run
/// ends, or `Err` with how many bytes it takes whole (the block, or up to a
/// run of backslashes that reaches its end).
#[inline(always)]
fn block_step(block: &[u8; 64]) -> Result<usize, usize> {
    let (stop, backslash) = block_masks(block);
    if backslash == 0 {
        // No escape in the block (long text mostly has none): the run ends
        // at its first stop, with no escape to look up. Without this the
        // lookups below cost a plain block three loads and shifts, two
        // thirds of the validator's time on a long string.
        return match stop {
            0 => Err(64),
            _ => Ok(stop.trailing_zeros() as usize),
        };
    }
    // A run of backslashes that reaches the block's end may go on in
    // the next bytes: the block ends where the run starts.
    let (backslash, limit) = if backslash >> 63 == 0 {
        (backslash, 64)
    } else if backslash == u64::MAX {
        // Sixty-four backslashes: the caller takes them two at a time.
        return Ok(0);
    } else {
        let limit = 64 - backslash.leading_ones();
        (backslash & low_bits(limit), limit)
    };
    let escaped = escaped_bits(backslash);
    let ends = stop & !escaped;
    let mut end = ends.trailing_zeros();
    // The escaped bytes before the first end (all of them if none).
    let checked = escaped & ends.wrapping_sub(1) & !ends;
    let mut others = checked;
    // The bits of escaped bytes that are not one-character escapes.
    let mut bad = 0u64;
    let not_simple = |at: u32| u64::from(NOT_SIMPLE[usize::from(block[at as usize])]) << at;
    for _ in 0..3 {
        bad |= not_simple((others | 1 << 63).trailing_zeros());
        others &= others.wrapping_sub(1);
    }
    while others != 0 {
        bad |= not_simple(others.trailing_zeros());
        others &= others - 1;
    }
    let bad = bad & checked;
    if bad != 0 {
        end = bad.trailing_zeros() - 1;
    }
    if end < limit {
        return Ok(end as usize);
    }
    Err(limit as usize)
}

/// The bits of the bytes escaped by the runs of backslashes in
/// `backslash`: the byte after each run of odd length (a run that reaches
/// bit 63 must have been cut off: it escapes nothing here).
///
/// Take a run from bit `s` to bit `e`. In `(backslash << 1) | ODD_BITS`
/// the bits `s + 1..=e + 1` are set and bit `s` is set when `s` is odd;
/// subtracting the run's bits borrows nothing past them and leaves bit
/// `e + 1` set exactly when `s` is odd. After the xor with the odd bits,
/// bit `e + 1` is set exactly when `s` and `e + 1` differ in parity, that
/// is when the run's length is odd, and every bit outside the runs and the
/// bytes after them is clear (the subtraction of simdjson's escape
/// scanner). Six operations and one constant, against a dozen and three
/// when the runs' even and odd starts are carried through separately.
#[inline(always)]
fn escaped_bits(backslash: u64) -> u64 {
    (((backslash << 1) | ODD_BITS).wrapping_sub(backslash) ^ ODD_BITS) & !backslash
}

/// The mask of the `n` lowest bits (`n <= 64`).
#[inline(always)]
fn low_bits(n: u32) -> u64 {
    u64::MAX.checked_shr(64 - n).unwrap_or(0)
}

/// For a 64-byte block: the bits of quotes and bytes below 0x20, and the
/// bits of backslashes.
#[inline(always)]
fn block_masks(block: &[u8; 64]) -> (u64, u64) {
    use wide::u8x16;
    let mut stop = 0;
    let mut backslash = 0;
    for (k, part) in block.chunks_exact(16).enumerate() {
        let lanes = u8x16::new(part.try_into().expect("sixteen bytes"));
        let slash = lanes.simd_eq(u8x16::splat(b'\\'));
        stop |= u64::from(quote_or_control(lanes).to_bitmask()) << (16 * k);
        backslash |= u64::from(slash.to_bitmask()) << (16 * k);
    }
    (stop, backslash)
}

/// The `n` lowest bytes of a word set (`n <= 8`).
#[inline(always)]
fn low_bytes(n: usize) -> u64 {
    u64::MAX.checked_shr(64 - 8 * n as u32).unwrap_or(0)
}

/// The first `len` bytes of `s` (at most eight count) as a little-endian
/// word with zeros after them: with the length, how the peek compares keys.
#[inline(always)]
fn key_word(s: &[u8], len: usize) -> u64 {
    let len = len.min(KEY_BYTES);
    match s.get(..8) {
        Some(head) => u64::from_le_bytes(head.try_into().expect("eight bytes")) & low_bytes(len),
        None => s[..len]
            .iter()
            .rev()
            .fold(0, |word, &b| (word << 8) | u64::from(b)),
    }
}

/// The length of the literal (`true`, `false` or `null`) at `bytes[at]`
/// when the piece holds all of it, compared as one word.
#[inline(always)]
fn literal_len(bytes: &[u8], at: usize) -> Option<usize> {
    let head: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    match u32::from_le_bytes(head) {
        word if word == u32::from_le_bytes(*b"true") || word == u32::from_le_bytes(*b"null") => {
            Some(4)
        }
        word if word == u32::from_le_bytes(*b"fals") && bytes.get(at + 4) == Some(&b'e') => Some(5),
        _ => None,
    }
}

/// How many ASCII digits `bytes` starts with. The first eight bytes are
/// tested as one word, without a loop: the integers of JSON-RPC (ids,
/// counts, codes) end inside them, and a loop costs a WebAssembly guest an
/// interruption check at its head. Longer runs, and a piece's last seven
/// bytes, go byte by byte.
#[inline(always)]
fn digit_run(bytes: &[u8]) -> usize {
    if let Some(head) = bytes.first_chunk::<8>() {
        // Digits become 0..=9 with their high nibble clear; a byte is not a
        // digit if it is then 10 or more, which adding 0x76 to its low seven
        // bits (no carry into the next byte) or its own top bit shows in bit 7.
        let x = u64::from_le_bytes(*head) ^ 0x3030_3030_3030_3030;
        let stops =
            (((x & 0x7f7f_7f7f_7f7f_7f7f) + 0x7676_7676_7676_7676) | x) & 0x8080_8080_8080_8080;
        if stops != 0 {
            return stops.trailing_zeros() as usize / 8;
        }
    }
    bytes.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// Whether all four bytes are hex digits (`\uXXXX`), without a loop.
#[inline(always)]
fn is_hex4(h: &[u8]) -> bool {
    h.len() == 4
        && h[0].is_ascii_hexdigit()
        && h[1].is_ascii_hexdigit()
        && h[2].is_ascii_hexdigit()
        && h[3].is_ascii_hexdigit()
}

/// Bit `k` is set when `block[k]` is a quote, a backslash or below 0x20.
#[inline(always)]
fn special_mask(block: [u8; 16]) -> u32 {
    use wide::u8x16;
    let lanes = u8x16::new(block);
    let backslash = lanes.simd_eq(u8x16::splat(b'\\'));
    (quote_or_control(lanes) | backslash).to_bitmask()
}

/// Lanes whose top bit is set exactly where `lanes` holds a quote or a byte
/// below 0x20 (the rest of each lane is not meant to be read: only
/// `to_bitmask` reads the result).
///
/// Flipping bit 1 maps the quote (0x22) to 0x20 and the controls onto
/// themselves: both are then exactly the bytes up to 0x20, and 0xA0 less
/// such a byte (saturating) keeps its top bit, less any greater byte it
/// does not (0x7F at most, or 0). One subtraction where a compare
/// (`min(x, 0x20) == x`) took two operations natively and, in the
/// WebAssembly guest, four: the compiler turns the compare into `lt_u`,
/// which Cranelift builds on x86 from a minimum, a compare and a negation.
#[inline(always)]
fn quote_or_control(lanes: wide::u8x16) -> wide::u8x16 {
    use wide::u8x16;
    u8x16::splat(0xA0).saturating_sub(lanes ^ u8x16::splat(0x02))
}

/// The byte a one-character JSON escape (`\\n`, `\\"`, …) stands for: the
/// byte after the backslash in, the decoded byte out; `None` for `u` and
/// for what JSON does not define.
pub(crate) const fn simple_escape(b: u8) -> Option<u8> {
    Some(match b {
        b'"' | b'\\' | b'/' => b,
        b'b' => 0x08,
        b'f' => 0x0C,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `line` fed whole and one byte at a time gives the same verdict at
    /// the same offset, and `serde_json` agrees on whether it is valid.
    fn assert_whole_bytewise_and_peer_agree(line: &str) {
        let whole = {
            let mut v = Validator::new(128);
            v.feed(line.as_bytes()).and_then(|_| v.finish())
        };
        let bytewise = {
            let mut v = Validator::new(128);
            line.as_bytes()
                .iter()
                .try_for_each(|b| v.feed(core::slice::from_ref(b)))
                .and_then(|_| v.finish())
        };
        assert_eq!(whole, bytewise, "{line}");
        let peer = serde_json::from_str::<serde_json::Value>(line).is_ok();
        assert_eq!(whole.is_ok(), peer, "{line}");
    }
    use alloc::format;
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
            (
                br#" { "a" : [1, -0.5e+3, true, false, null, {"b": "\u00e9\n"}] } "#,
                Ok(()),
            ),
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

    /// Every escape (good, bad, cut) at every offset of the sixteen-byte
    /// blocks the string scan steps through, in a value and in a nested key:
    /// the line read whole (blocks) and one byte at a time (no blocks) gives
    /// the same verdict at the same offset, and `serde_json` agrees on which
    /// lines are valid.
    #[test]
    fn escapes_at_every_block_offset() {
        let escapes: &[&str] = &[
            r#"\n"#,
            r#"\""#,
            r#"\\"#,
            r#"\/"#,
            r#"\u00e9"#,
            r#"\x"#,
            r#"\u12g4"#,
            r#"\u"#,
            "\u{1}",
            "\u{7f}",
            r#"\"#,
        ];
        for prefix in 0..40 {
            for escape in escapes {
                for suffix in ["", "tail", "0123456789abcdefXYZ"] {
                    let text = format!("{}{escape}{suffix}", "x".repeat(prefix));
                    for line in [
                        format!(r#"{{"a":"{text}","b":1}}"#),
                        format!(r#"{{"a":{{"{text}":1}}}}"#),
                    ] {
                        assert_whole_bytewise_and_peer_agree(&line);
                    }
                }
            }
        }
    }

    /// Up to nine valid escapes before the one that decides (bad, `\\u`,
    /// valid, a control, the closing quote), then either nothing or a bad
    /// escape after it, with the first escape at every offset of a 64-byte
    /// block (the block starts 16 bytes into a string whose head has no
    /// special byte): the first escapes of a block are checked unrolled, the
    /// rest in a loop; every one before the string's end counts, none after.
    #[test]
    fn every_escape_of_a_block_is_checked() {
        let valid = [r#"\n"#, r#"\""#, r#"\\"#, r#"\t"#, r#"\/"#];
        let tail = "y".repeat(70);
        for before in 0..10 {
            for last in [r#"\x"#, r#"\u00e9"#, r#"\u12x4"#, r#"\r"#, "\u{1}", "\""] {
                for after in ["", r#"\x"#] {
                    for prefix in 0..80 {
                        let mut text = "x".repeat(prefix);
                        for k in 0..before {
                            text.push_str(valid[k % valid.len()]);
                        }
                        text.push_str(last);
                        text.push_str(after);
                        text.push_str(&tail);
                        let line = format!(r#"{{"a":"{text}","b":1}}"#);
                        assert_whole_bytewise_and_peer_agree(&line);
                    }
                }
            }
        }
    }

    /// Long strings made of runs of backslashes (up to past a block's
    /// length), escapes good and bad, quotes, controls and plain bytes, at
    /// every offset of the 64-byte blocks: read whole (blocks) and one byte
    /// at a time (none) they give the same verdict at the same offset, and
    /// `serde_json` agrees on which lines are valid.
    #[test]
    fn backslash_runs_across_blocks() {
        let pieces: &[&str] = &["a", "é", "\\\\", "\\\"", "\\n", "\\t", "\\/", "\\u00e9"];
        let bad: &[&str] = &["\\u12x4", "\\x", "\"", "\u{1}", "\\\u{1}", "\\u"];
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for round in 0..3000 {
            let mut text = String::new();
            text.push_str(&"x".repeat(round % 80));
            while text.len() < 200 {
                if next(150) == 0 {
                    text.push_str(bad[next(bad.len())]);
                } else if next(4) == 0 {
                    // A run of backslashes, then a byte it may escape.
                    text.push_str(&"\\".repeat(1 + next(140)));
                    text.push_str(["n", "\"", "u0041", "q", "", "é"][next(6)]);
                } else {
                    text.push_str(pieces[next(pieces.len())]);
                }
            }
            for line in [
                format!(r#"{{"a":"{text}","b":1}}"#),
                format!(r#"{{"a":{{"{text}":1}}}}"#),
            ] {
                assert_whole_bytewise_and_peer_agree(&line);
            }
        }
    }

    /// Feeds `line` cut at `cuts` (ascending) and finishes it: the verdict
    /// and the envelope's offsets.
    fn feed_cut(line: &[u8], cuts: &[usize]) -> (Result<(), JsonError>, EnvelopeOffsets) {
        let mut v = Validator::new(128);
        let mut from = 0;
        let mut verdict = Ok(());
        for &cut in cuts.iter().chain([&line.len()]) {
            verdict = verdict.and_then(|_| v.feed(&line[from..cut]));
            from = cut;
        }
        (verdict.and_then(|_| v.finish()), v.envelope_offsets())
    }

    /// `"jsonrpc":"2.0",` is taken in one step at a top-level key (see
    /// `JSONRPC_MEMBER`). Wherever it stands and however the line is cut,
    /// the verdict and the envelope are those of reading it token by token
    /// (one byte at a time), and the recorded `jsonrpc` is where it is. A
    /// member that does not match the sixteen bytes (last, nested, spaced,
    /// another value, cut by the piece) is read token by token.
    #[test]
    fn the_jsonrpc_member_whole_or_token_by_token() {
        // A line and where its `jsonrpc` value is (offset, length).
        type Case = (&'static [u8], Option<(u64, u64)>);
        let lines: &[Case] = &[
            (br#"{"jsonrpc":"2.0","id":1}"#, Some((12, 3))),
            (br#"{"id":1,"jsonrpc":"2.0","method":"m"}"#, Some((19, 3))),
            (br#"{"id":1,"jsonrpc":"2.0"}"#, Some((19, 3))),
            (
                br#"{"jsonrpc":"1.0","jsonrpc":"2.0","id":2}"#,
                Some((28, 3)),
            ),
            (br#"{"jsonrpc":"2.0","jsonrpc":"x"}"#, Some((28, 1))),
            (br#"{"jsonrpc":"2.0","jsonrpc":3}"#, None),
            (br#"{"a":{"jsonrpc":"2.0","b":1},"c":2}"#, None),
            (br#"{"jsonrpc": "2.0","id":1}"#, Some((13, 3))),
            (br#"{"jsonrpc":"2.0","#, Some((12, 3))),
            (br#"{"jsonrpc":"2.0",}"#, Some((12, 3))),
        ];
        for &(line, jsonrpc) in lines {
            let text = String::from_utf8_lossy(line);
            let whole = feed_cut(line, &[]);
            let bytewise = feed_cut(line, &(1..line.len()).collect::<Vec<_>>());
            assert_eq!(whole, bytewise, "{text}");
            for cut in 0..=line.len() {
                assert_eq!(feed_cut(line, &[cut]), whole, "cut {cut}: {text}");
            }
            assert_eq!(whole.1.jsonrpc, jsonrpc, "{text}");
            let valid = serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok();
            assert_eq!(whole.0.is_ok(), valid, "{text}");
        }
    }

    /// Top-level keys the peek must tell apart (lengths around the eight
    /// bytes compared at once, escapes, a zero byte, the end of the piece):
    /// whole, cut anywhere in two and byte by byte they give the same
    /// verdict and envelope.
    #[test]
    fn top_level_keys_at_any_split() {
        let lines: &[&[u8]] = &[
            br#"{"id":1,"jsonrpc":"2.0","method":"m","result":{},"error":{}}"#,
            br#"{"id\u0000":1,"ids":2,"i":3,"jsonrpc2":"x","methods":"y"}"#,
            br#"{"i\u0064":4,"abcdefgh":1,"abcdefghi":2,"resul":3,"errors":5}"#,
            br#"{"\u006ad":1,"json\/rpc":2,"method":"a","method":[1]}"#,
            br#"{"id":"a","id":7,"jsonrpc":"1.0","jsonrpc":3}"#,
            br#"{"":1,"d":2,"\"id":3,"id"  :  "x" , "method":"y"}"#,
            br#"{"id""#,
            br#"{"id":"#,
            br#"{"jsonrpc"#,
            b"{\"id\x01\":1}",
            br#"{"id" 1}"#,
        ];
        for line in lines {
            let whole = feed_cut(line, &[]);
            let bytewise = feed_cut(line, &(1..line.len()).collect::<Vec<_>>());
            assert_eq!(whole, bytewise, "{}", String::from_utf8_lossy(line));
            for cut in 0..=line.len() {
                assert_eq!(
                    feed_cut(line, &[cut]),
                    whole,
                    "cut {cut}: {}",
                    String::from_utf8_lossy(line)
                );
            }
        }
        let (verdict, env) = feed_cut(lines[0], &[]);
        assert!(verdict.is_ok() && env.has_result && env.has_error);
        assert_eq!(env.id, Some((IdKind::Number, (6, 1))));
        let (_, env) = feed_cut(lines[1], &[]);
        assert_eq!((env.id, env.jsonrpc, env.method), (None, None, None));
        let (_, env) = feed_cut(lines[2], &[]);
        assert_eq!(env.id, Some((IdKind::Number, (11, 1))));
        assert!(!env.has_result && !env.has_error);
    }

    /// Strings and keys that end (or break off) in the last sixteen bytes
    /// of a piece, read there as the piece's last sixteen bytes: every cut
    /// of the line in two gives the verdict and envelope of the line read
    /// byte by byte, and `serde_json` agrees on which lines are valid.
    #[test]
    fn string_ends_near_the_piece_end() {
        let marks: &[&str] = &["", "\\n", "\\\"", "\\u00e9", "\\x", "\u{1}", "é", "\\"];
        for len in 0..24 {
            for mark in marks {
                for at in [0, len / 2, len] {
                    let text = format!("{}{mark}{}", "x".repeat(at), "y".repeat(len - at));
                    for line in [
                        format!(r#"{{"id":"{text}"}}"#),
                        format!(r#"{{"a":{{"{text}":1}}}}"#),
                        format!(r#"{{"{text}":1}}"#),
                        format!(r#"{{"method":"{text}"#),
                    ] {
                        assert_any_split_agrees(line.as_bytes());
                    }
                }
            }
        }
    }

    /// Integers ended by every kind of byte (a comma, brackets, whitespace,
    /// a fraction, an exponent, garbage), as ids and nested: every cut of
    /// the line in two gives the verdict and envelope of the line read byte
    /// by byte, and `serde_json` agrees on which lines are valid.
    #[test]
    fn integers_end_at_any_split() {
        let ends: &[&str] = &[
            ",", "}", "]", " ", ".5", "e3", "E+3", "x", "\"", ":", "0", "-",
        ];
        for int in ["7", "12", "-3", "0", "90"] {
            for end in ends {
                for line in [
                    format!(r#"{{"id":{int}{end}"a":1}}"#),
                    format!(r#"{{"id":{int}{end}}}"#),
                    format!(r#"{{"a":[{int}{end}2],"b":{{"c":{int}{end}"d":{int}}}}}"#),
                    format!(r#"{{"a":[{int}{end}]}}"#),
                ] {
                    assert_any_split_agrees(line.as_bytes());
                }
            }
        }
    }

    /// `line` cut at every position into two pieces gives the verdict,
    /// error offset and envelope of the line read byte by byte, and
    /// `serde_json` agrees on whether it is valid.
    fn assert_any_split_agrees(line: &[u8]) {
        let bytewise = feed_cut(line, &(1..line.len()).collect::<Vec<_>>());
        for cut in 0..=line.len() {
            assert_eq!(
                feed_cut(line, &[cut]),
                bytewise,
                "cut {cut}: {}",
                String::from_utf8_lossy(line)
            );
        }
        let peer = serde_json::from_slice::<serde_json::Value>(line).is_ok();
        assert_eq!(
            bytewise.0.is_ok(),
            peer,
            "{}",
            String::from_utf8_lossy(line)
        );
    }

    /// Every kind of value (and what is not one) right after a key's `:`,
    /// which is read without going back to the dispatcher: top-level keys
    /// matched where they lie, escaped ones, nested ones, and a `:` after
    /// whitespace, at every cut of the line in two.
    #[test]
    fn values_right_after_keys_at_any_split() {
        let values: &[&str] = &[
            r#""s""#,
            r#""a\nb""#,
            r#""""#,
            r#""x"#,
            "\"\u{1}\"",
            "7",
            "-1",
            "0",
            "01",
            "1.5e3",
            "true",
            "false",
            "null",
            "nul",
            "{}",
            "[]",
            r#"{"k":"v"}"#,
            r#"["a",1,{}]"#,
            " 1",
            "\t\"s\"",
            "x",
            "]",
            "}",
            ",",
            ":",
            "",
        ];
        for value in values {
            for line in [
                format!(r#"{{"id":{value},"method":"m"}}"#),
                format!(r#"{{"jsonrpc":{value}}}"#),
                format!(r#"{{"other":{value},"id":2}}"#),
                format!(r#"{{"i\u0064":{value}}}"#),
                format!(r#"{{"id" : {value}}}"#),
                format!(r#"{{"a":{{"b":{value},"c":1}}}}"#),
                format!(r#"{{"a":{{"\n":{value}}}}}"#),
                format!(r#"{{"a":[{{"b" :{value}}}]}}"#),
            ] {
                assert_any_split_agrees(line.as_bytes());
            }
        }
        let (verdict, env) = feed_cut(br#"{"id":"x","method":"m"}"#, &[]);
        assert!(verdict.is_ok());
        assert_eq!(env.id, Some((IdKind::String, (7, 1))));
        assert_eq!(env.method, Some((20, 1)));
    }

    /// The escaped bits computed with carries (the bytes after runs of odd
    /// length) are those a byte-by-byte walk over the backslash mask finds,
    /// for runs of every length at
    /// every offset and for random masks.
    #[test]
    fn escaped_bits_match_a_walk() {
        fn walk(backslash: u64) -> u64 {
            let (mut escaped, mut k) = (0, 0);
            while k < 64 {
                if backslash >> k & 1 == 1 {
                    // An escaped backslash is part of the run.
                    if k < 63 && backslash >> (k + 1) & 1 == 0 {
                        escaped |= 1 << (k + 1);
                    }
                    k += 2;
                } else {
                    k += 1;
                }
            }
            escaped
        }
        let mut masks = Vec::new();
        for start in 0..64 {
            for len in 1..=64 - start {
                masks.push(low_bits(len) << start);
            }
        }
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..100_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            masks.push(seed);
            masks.push(seed & seed.rotate_left(7));
        }
        for backslash in masks {
            // `string_run` cuts a run that reaches bit 63 off first.
            let backslash = if backslash >> 63 == 0 {
                backslash
            } else {
                backslash & low_bits(64 - backslash.leading_ones())
            };
            assert_eq!(escaped_bits(backslash), walk(backslash), "{backslash:#x}");
        }
    }

    /// `plain_run` stops at exactly the quote, the backslash and the bytes
    /// below 0x20, in pieces shorter than sixteen bytes (one at a time) and
    /// longer (vector compares, the piece's last sixteen bytes), wherever
    /// the byte lies.
    #[test]
    fn plain_run_stops_at_every_special_byte() {
        for b in 0..=255u8 {
            let special = b < 0x20 || b == b'"' || b == b'\\';
            for len in 1..40 {
                for at in 0..len {
                    let mut piece = alloc::vec![b'x'; len];
                    piece[at] = b;
                    for from in [0, at / 2, at] {
                        let expected = if special { at - from } else { len - from };
                        assert_eq!(
                            plain_run(&piece, from),
                            expected,
                            "{b:#x} {len} {at} {from}"
                        );
                    }
                }
            }
        }
    }

    /// `digit_run` counts what a byte-by-byte count counts: every byte
    /// value after every number of digits, in pieces shorter than eight
    /// bytes (byte by byte), of eight and more (one word) and past eight
    /// digits.
    #[test]
    fn digit_run_stops_at_every_non_digit() {
        for b in 0..=255u8 {
            for digits in 0..12 {
                for tail in 0..10 {
                    let mut piece = alloc::vec![b'7'; digits];
                    piece.push(b);
                    piece.extend(core::iter::repeat_n(b'1', tail));
                    let expected = piece.iter().take_while(|b| b.is_ascii_digit()).count();
                    assert_eq!(digit_run(&piece), expected, "{b:#x} {digits} {tail}");
                }
            }
        }
    }

    /// Members one after the other, which the scanner takes as a chain (a
    /// key, its value, a string value's `,`, the next key) without its
    /// dispatch: strings, numbers and literals before a `,`, containers
    /// opened and closed inside the chain, whitespace and errors at every
    /// link, envelope fields among them; every cut of the line in two
    /// against the line read byte by byte and serde_json's verdict.
    #[test]
    fn member_chains_at_any_split() {
        let lines: &[&str] = &[
            r#"{"a":"x","b":"y","c":{"d":"e","f":["g","h",{"i":"j"}]},"k":[],"l":{}}"#,
            r#"{"a":["x","y","z"],"b":[["x"],{"c":"d"}],"e":[[],{}]}"#,
            r#"{"a":1,"b":2,"c":[1,"x",2],"d":{"e":3,"f":"g"}}"#,
            r#"{"a":true,"b":null,"c":[true,"x",false],"d":{"e":null,"f":"g"}}"#,
            r#"{"x":"y","id":"q","method":"m","jsonrpc":"2.0","result":{"a":"b"}}"#,
            r#"{"id":7,"params":{"id":"no","method":"no"},"method":"yes"}"#,
            r#"{"a":{"\"k":"v","k2":"v","k\n3":["\u00e9","\\"]}}"#,
            r#"{"a":{"b":"x","b":"y"},"id":"z","id":"w"}"#,
            r#"{"a":[{},{"b":[]},"c",{"d":{"e":{}}}]}"#,
            r#"{"a":"x","":"","b":{"":""}}"#,
            r#"{"a":"x"  ,  "b":"y", "c" : "z" ,"d":[ "e" , "f" ]}"#,
            "{\"a\":\"x\",\n\"b\":{\t\"c\":\"d\"\r}}",
            r#"{"a":"x","b"}"#,
            r#"{"a":"x",}"#,
            r#"{"a":"x","b":}"#,
            r#"{"a":["x",]}"#,
            r#"{"a":"x","b":"y"]"#,
            r#"{"a":["x"}"#,
            r#"{"a":{"b":"x"]}"#,
            r#"{"a":"x","b":"\q"}"#,
            r#"{"a":"x",1}"#,
            r#"{"a":"x","b":"y"}}"#,
            r#"{"a":"x","b":"y"},"#,
            r#"{"a":{"b":"x","c":"#,
            r#"{"a":["x","#,
        ];
        for line in lines {
            assert_any_split_agrees(line.as_bytes());
        }
        let (verdict, env) = feed_cut(lines[4].as_bytes(), &[]);
        assert!(verdict.is_ok() && env.has_result);
        assert_eq!(env.id, Some((IdKind::String, (15, 1))));
        assert_eq!(env.method, Some((28, 1)));
        assert_eq!(env.jsonrpc, Some((42, 3)));
        let (_, env) = feed_cut(lines[5].as_bytes(), &[]);
        assert_eq!(env.id, Some((IdKind::Number, (6, 1))));
        assert_eq!(env.method, Some((53, 3)));
    }

    /// `true`, `false` and `null` (whole, cut short, misspelt, run on into
    /// other bytes) as ids, top-level and nested values and array items,
    /// followed by every kind of byte: every cut of the line in two against
    /// the line read byte by byte and serde_json's verdict, and a null id
    /// recorded only at the top level.
    #[test]
    fn literals_at_any_split() {
        let literals: &[&str] = &[
            "true", "false", "null", "tru", "fals", "nul", "t", "truex", "nulll", "falsE", "nUll",
            "True", "f",
        ];
        let ends: &[&str] = &[",", "}", "]", " ", ",\"b\":1", "x", ":", "\"", "1", ""];
        for literal in literals {
            for end in ends {
                for line in [
                    format!(r#"{{"id":{literal}{end}}}"#),
                    format!(r#"{{"a":{literal}{end}"b":2}}"#),
                    format!(r#"{{"a":{{"b":{literal}{end}"c":{literal}}}}}"#),
                    format!(r#"{{"a":[{literal}{end}{literal}],"id":{literal}}}"#),
                ] {
                    assert_any_split_agrees(line.as_bytes());
                }
            }
        }
        for (line, id) in [
            (&br#"{"id":null,"a":1}"#[..], Some((IdKind::Null, (0, 0)))),
            (br#"{"a":{"id":null},"b":[null]}"#, None),
            (br#"{"id":true}"#, None),
        ] {
            let (verdict, env) = feed_cut(line, &[]);
            assert!(verdict.is_ok());
            assert_eq!(env.id, id, "{}", String::from_utf8_lossy(line));
        }
    }

    /// Integers as the chain reads them (after a key's `:`, after `[` and
    /// an array's `,`, as the id and nested), each ended by every kind of
    /// byte: every cut of the line in two against the line read byte by
    /// byte and serde_json's verdict, and the id's offsets.
    #[test]
    fn integers_in_member_chains_at_any_split() {
        let ends: &[&str] = &[
            ",", ",\"k\":1", ",2", "}", "]", " ", " ,", ".5", "e1", "x", "\"", "",
        ];
        for int in ["5", "42", "1234567890123", "0", "-1", "07"] {
            for end in ends {
                for line in [
                    format!(r#"{{"id":{int}{end}"m":"x"}}"#),
                    format!(r#"{{"a":[{int}{end}{int}],"b":{{"c":{int}{end}"d":[{int}{end}]}}}}"#),
                    format!(r#"{{"a":"s","id":{int}{end}}}"#),
                ] {
                    assert_any_split_agrees(line.as_bytes());
                }
            }
        }
        let (verdict, env) = feed_cut(br#"{"a":[1,2],"id":345,"b":6}"#, &[]);
        assert!(verdict.is_ok());
        assert_eq!(env.id, Some((IdKind::Number, (16, 3))));
    }

    /// A string or a literal value followed by closing brackets (matching
    /// or not, one, two or three) and what comes after them: every cut of
    /// the line in two against the line read byte by byte and serde_json's
    /// verdict.
    #[test]
    fn brackets_after_values_at_any_split() {
        let tails: &[&str] = &[
            "}", "]", "}}", "}]", "]}", "]]", "}}}", "}],", "]},", "}},", "}]]", "},", "],", "} ,",
            "} }", "}x", "}:", "},}", "}]}", "",
        ];
        for value in [r#""x""#, "false", "null", "true"] {
            for tail in tails {
                for line in [
                    format!(r#"{{"a":{{"b":{value}{tail}"c":1}}"#),
                    format!(r#"{{"a":[{{"b":{value}{tail}"c"],"d":2}}"#),
                    format!(r#"{{"a":[[{value}{tail}1],"d":2}}"#),
                    format!(r#"{{"a":{{"b":[{value}{tail}"d":2}}}}"#),
                    format!(r#"{{"id":{value}{tail}"#),
                ] {
                    assert_any_split_agrees(line.as_bytes());
                }
            }
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
            let env = v.envelope(line);
            assert_eq!(env.jsonrpc, Some(&b"2.0"[..]), "cut {cut}");
            assert_eq!(env.id, Some(Id::String(br#"a\"b"#)), "cut {cut}");
            assert_eq!(env.method, Some(&b"tools/call"[..]), "cut {cut}");
            assert!(env.has_result && !env.has_error);
        }
    }

    #[test]
    fn escaped_keys_and_number_and_null_ids() {
        let mut v = Validator::new(128);
        let line = br#"{"\u0069d":-12.5e3,"method":"x"}"#;
        v.feed(line).unwrap();
        v.finish().unwrap();
        assert_eq!(v.envelope(line).id, Some(Id::Number(b"-12.5e3")));
        let mut v = Validator::new(128);
        let line = br#"{"id":null,"error":{}}"#;
        v.feed(line).unwrap();
        v.finish().unwrap();
        assert_eq!(v.envelope(line).id, Some(Id::Null));
        let mut v = Validator::new(128);
        let line = br#"{"id":{"x":1},"id":[2]}"#;
        v.feed(line).unwrap();
        v.finish().unwrap();
        assert_eq!(v.envelope(line).id, None);
    }
}
