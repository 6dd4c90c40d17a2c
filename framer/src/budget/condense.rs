//! Condensing a response on the wire: a `tools/call` response of any size
//! becomes a valid, honest response within a byte budget, written while it
//! streams past, without ever holding the original.
//!
//! Every member is copied byte for byte (whitespace between tokens dropped),
//! except inside `result`:
//!
//! - a long string value is cut at a character and escape boundary (its
//!   head kept, so the decoded kept text is a prefix of the original);
//! - a long array is cut to a prefix of its elements;
//! - a string in `structuredContent` that mirrors a cut `content` text (the
//!   same bytes, as servers on the official SDKs write it) is cut to the same
//!   prefix;
//! - a content block whose binary value (`data` of an image or audio block,
//!   `blob` of a resource) does not fit whole becomes a text block that says
//!   what was left out: never broken base64.
//!
//! Types and members stay, so a result that met its tool's output schema
//! still does. What was cut is said where no schema looks: in
//! `result._meta["io.drainpipe/truncated"]` (`originalBytes`, `keptBytes`,
//! the JSON Pointers of the values cut relative to `result`, `cutCount`), and
//! in one text block appended to `content`. `_meta`, `resultType` and the
//! members outside `result` are never cut.
//!
//! # Streaming and bounds
//!
//! The condenser is fed the line in pieces split anywhere and decides as the
//! bytes pass; memory is the budget plus `O(depth)`. Since it cannot see what
//! comes later, it keeps room back: a closing bracket per open container, a
//! fixed slot for the notice block and one for the marker (filled in at the
//! end, padded with spaces, which JSON allows between tokens), and a little
//! for the members that follow `result` (the TypeScript SDK writes
//! `"jsonrpc"` and `"id"` after it). A long text takes at most a share of the
//! room left when it starts (half by default), so that a mirror written after
//! it still fits; the output is never over the budget. What cannot be cut
//! (keys, numbers, `_meta`) and does not fit is a [`CondenseError`].
//!
//! The input is assumed to be the valid JSON the framer checks on the same
//! bytes; on anything else the condenser returns an error or output to be
//! thrown away, never panics, and stays within its bounds.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::fmt::Write as _;

/// The marker's key in `result._meta`.
pub const MARKER_KEY: &str = "io.drainpipe/truncated";

/// Bytes kept for the notice block appended to `content` (`,` included).
const NOTICE_SLOT: usize = 400;
/// Bytes kept for the marker in `_meta` (with `,"_meta":{…}` if needed).
const MARKER_SLOT: usize = 720;
/// Bytes kept for the top-level members after `result` (`jsonrpc`, `id`).
const TAIL_ROOM: usize = 300;
/// Bytes kept while inside a content block, for the text block that
/// replaces it if its binary value does not fit.
const REPLACEMENT_ROOM: usize = 300;
/// Room a long text leaves for the small members that follow it.
const SLACK: usize = 512;
/// A string of at most this many bytes is never cut.
const SHORT_STRING: u64 = 64;
/// An array element is not started with less room than this.
const ELEMENT_ROOM: usize = 64;
/// Cuts listed by pointer, at most; the rest are counted.
const MAX_LISTED_CUTS: usize = 24;
/// Cut texts remembered as possible mirror originals.
const MAX_MIRRORS: usize = 8;
/// Key bytes kept (longer keys match no known member and are not listed).
const MAX_KEY: usize = 256;

/// The smallest budget the condenser takes: room for its slots and a
/// little content.
pub const MIN_CONDENSE_BUDGET: usize =
    NOTICE_SLOT + MARKER_SLOT + TAIL_ROOM + REPLACEMENT_ROOM + SLACK + 1024;

/// Why a response could not be condensed. One cause per variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CondenseError {
    /// The budget is below [`MIN_CONDENSE_BUDGET`].
    BudgetTooSmall {
        /// The budget asked for, in bytes.
        budget: usize,
    },
    /// What cannot be cut (keys, numbers, `_meta`, members outside
    /// `result`, an array's structure) does not fit the budget.
    Overflow {
        /// Bytes of input read when it overflowed.
        at: u64,
    },
    /// The input is not a JSON object (or not JSON at all).
    NotAnObject,
    /// The input ended before the top-level object closed.
    Incomplete,
}

impl fmt::Display for CondenseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CondenseError::BudgetTooSmall { budget } => write!(
                f,
                "a budget of {budget} bytes is too small to condense into (at least {MIN_CONDENSE_BUDGET})"
            ),
            CondenseError::Overflow { at } => write!(
                f,
                "what cannot be cut (keys, numbers, _meta, members outside result) passed the budget at byte {at}"
            ),
            CondenseError::NotAnObject => f.write_str("the response is not a JSON object"),
            CondenseError::Incomplete => f.write_str("the response ended before it was complete"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for CondenseError {}

/// What [`Condenser::finish`] gives.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Condensed {
    /// Nothing had to be cut: the original fits the budget; send it as it is.
    Unchanged,
    /// The condensed response, within the budget.
    Cut {
        /// The condensed line, without a newline.
        frame: Vec<u8>,
        /// Bytes of the original line.
        original_bytes: u64,
        /// Values cut (strings, arrays, binary blocks).
        cuts: u64,
    },
}

/// Where a container stands in a `tools/call` response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The top-level object.
    Top,
    /// A value outside `result` (copied whole).
    Outside,
    /// The `result` object.
    Result,
    /// `result.content`.
    Content,
    /// An element of `result.content`.
    Block,
    /// `resource` of a content block.
    Resource,
    /// `result.structuredContent` and everything in it.
    Structured,
    /// `result._meta` and everything in it (copied whole).
    Meta,
    /// Anything else inside `result`.
    Plain,
}

impl Role {
    /// Whether values here may be cut.
    fn cuttable(self) -> bool {
        !matches!(self, Role::Top | Role::Outside | Role::Meta)
    }
}

/// One open object or array.
#[derive(Debug)]
struct Level {
    object: bool,
    role: Role,
    /// Opened while muted: nothing of it is written, nothing reserved.
    muted: bool,
    /// Elements (arrays) or members (objects) started so far.
    index: u64,
    /// Elements or members written so far.
    written: u64,
    /// The current member's key (objects), raw, at most `MAX_KEY` bytes.
    key: Vec<u8>,
    key_too_long: bool,
    /// The JSON Pointer segment of this level's own position.
    segment: Vec<u8>,
    /// Arrays: cut; the remaining elements are read but not written.
    cut: bool,
    /// Blocks: where the block starts in the output, and whether its
    /// binary value did not fit (the block is then replaced).
    block_start: usize,
    replace: bool,
    /// Blocks: the `type` and `mimeType` seen, and the size of the binary
    /// value left out, for the replacement's text.
    block_type: Vec<u8>,
    block_mime: Vec<u8>,
    binary_len: u64,
    /// `result`: whether it has an object `_meta` (the marker goes there).
    has_meta: bool,
}

impl Level {
    fn new(object: bool, role: Role, muted: bool, segment: Vec<u8>) -> Level {
        Level {
            object,
            role,
            muted,
            index: 0,
            written: 0,
            key: Vec::new(),
            key_too_long: false,
            segment,
            cut: false,
            block_start: 0,
            replace: false,
            block_type: Vec::new(),
            block_mime: Vec::new(),
            binary_len: 0,
            has_meta: false,
        }
    }
}

/// How a string value is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    /// Copied whole, or the budget overflows.
    Whole,
    /// Cut past `cap` bytes (or where the text it mirrors was cut).
    Text { cap: usize },
    /// Copied whole if it fits the room, else its block is replaced.
    Binary,
    /// Read, not written (muted, or its array/block was cut).
    Muted,
}

/// The string value being read.
#[derive(Debug)]
struct Str {
    policy: Policy,
    /// Where its contents start in the output (after the quote).
    out_start: usize,
    /// Raw bytes of its contents read so far.
    len: u64,
    /// It was cut: the rest is read, not written.
    cut: bool,
    /// Mirror candidates (bits for `Condenser::mirrors`) still equal so far.
    candidates: u16,
    /// Which side of a possible mirror it is: `Some(false)` for a content
    /// block's text, `Some(true)` for a string in `structuredContent`.
    side: Option<bool>,
    /// A block's `type` or `mimeType`, kept for a replacement's text (even
    /// when not written).
    capture: Capture,
    captured: Vec<u8>,
    /// Its JSON Pointer segment.
    segment: Vec<u8>,
}

/// A long text of one side (a content block's text, or a string in
/// `structuredContent`) that a string of the other side may mirror: the
/// servers on the official SDKs write a tool's text in both.
#[derive(Debug)]
struct Mirror {
    /// Its contents in the output.
    start: usize,
    len: usize,
    /// The side it is on (see `Str::side`).
    structured: bool,
    /// Whether it was written whole (else it was cut to `len`).
    whole: bool,
    /// Its cut record, if it was cut and listed.
    cut: Option<usize>,
    pointer: Vec<u8>,
    original: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capture {
    None,
    BlockType,
    BlockMime,
}

/// Where the tokenizer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Before the top-level value.
    Start,
    /// Expecting a value.
    Value,
    /// Just after `[`: a value or `]`.
    ArrayFirst,
    /// Expecting a key or `}` (just after `{`), or a key (after `,`).
    KeyFirst,
    Key,
    /// Inside a key (after its opening quote).
    InKey,
    /// Inside a key, after a backslash.
    InKeyEscape,
    /// After a key: `:`.
    Colon,
    /// Inside a string value.
    InString,
    /// Inside a string value, after a backslash.
    InStringEscape,
    /// Inside a number or literal.
    Scalar,
    /// After a value: `,` or a closing bracket.
    After,
    /// After the top-level object.
    Done,
}

/// A cut value, for the marker and the notice.
#[derive(Debug)]
struct Cut {
    pointer: Vec<u8>,
    kept: u64,
    original: u64,
    /// What `kept` and `original` count: "bytes" (on the wire) or "items".
    unit: &'static str,
}

/// A streaming condenser for one response line (see the module docs).
///
/// ```
/// use drainpipe_framer::budget::{Condensed, Condenser};
///
/// let text = "x".repeat(100_000);
/// let line = format!(
///     r#"{{"result":{{"content":[{{"type":"text","text":"{text}"}}],"structuredContent":{{"content":"{text}"}}}},"jsonrpc":"2.0","id":7}}"#
/// );
/// let mut condenser = Condenser::new(8 << 10).unwrap();
/// for piece in line.as_bytes().chunks(1000) {
///     condenser.feed(piece).unwrap();
/// }
/// let Condensed::Cut { frame, .. } = condenser.finish().unwrap() else { panic!() };
/// assert!(frame.len() <= 8 << 10);
/// let value: serde_json::Value = serde_json::from_slice(&frame).unwrap();
/// let kept = value["result"]["content"][0]["text"].as_str().unwrap();
/// assert!(text.starts_with(kept));
/// // The mirror is cut to the same prefix; the id is kept.
/// assert_eq!(value["result"]["structuredContent"]["content"], kept);
/// assert_eq!(value["id"], 7);
/// assert_eq!(value["result"]["_meta"]["io.drainpipe/truncated"]["originalBytes"], line.len());
/// ```
#[derive(Debug)]
pub struct Condenser {
    budget: usize,
    /// Share of the room a long text may take, in 256ths.
    text_share: u16,
    out: Vec<u8>,
    /// Input bytes read.
    fed: u64,
    mode: Mode,
    stack: Vec<Level>,
    /// A `,` was read before the next element or member: written with it.
    comma_pending: bool,
    /// The key just read (moved into its level at `:`).
    key: Vec<u8>,
    key_too_long: bool,
    string: Option<Str>,
    /// Bytes kept back: closing brackets, slots, the tail.
    reserve: usize,
    notice_reserved: bool,
    marker_reserved: bool,
    tail_reserved: bool,
    notice_slot: Option<usize>,
    marker_slot: Option<(usize, usize)>,
    cuts: Vec<Cut>,
    cut_count: u64,
    /// Long texts a later string may mirror.
    mirrors: Vec<Mirror>,
    /// A content block is being replaced: nothing more of it is written.
    replacing: bool,
    error: Option<CondenseError>,
}

impl Condenser {
    /// A condenser for one line, writing at most `budget_bytes` bytes.
    pub fn new(budget_bytes: usize) -> Result<Self, CondenseError> {
        if budget_bytes < MIN_CONDENSE_BUDGET {
            return Err(CondenseError::BudgetTooSmall {
                budget: budget_bytes,
            });
        }
        Ok(Condenser {
            budget: budget_bytes,
            text_share: 128,
            out: Vec::new(),
            fed: 0,
            mode: Mode::Start,
            stack: Vec::new(),
            comma_pending: false,
            key: Vec::new(),
            key_too_long: false,
            string: None,
            reserve: NOTICE_SLOT + MARKER_SLOT + TAIL_ROOM,
            notice_reserved: true,
            marker_reserved: true,
            tail_reserved: true,
            notice_slot: None,
            marker_slot: None,
            cuts: Vec::new(),
            cut_count: 0,
            mirrors: Vec::new(),
            replacing: false,
            error: None,
        })
    }

    /// The share of the room left that one long text may take, in 256ths
    /// (default 128, a half: a mirror in `structuredContent` written after
    /// it then fits too). A host that knows the tool has no output schema
    /// (so no mirror comes) may give a text nearly all of it (up to 255).
    pub fn with_text_share(mut self, share: u8) -> Self {
        self.text_share = u16::from(share.max(1));
        self
    }

    /// Bytes written so far (at most the budget).
    pub fn written(&self) -> usize {
        self.out.len()
    }

    /// Room for values that may be cut, after everything kept back.
    fn room(&self) -> usize {
        self.budget
            .saturating_sub(self.out.len())
            .saturating_sub(self.reserve)
    }

    /// Whether what is read now is written: not inside a cut array, a
    /// replaced block or a value read only to be skipped.
    fn muted(&self) -> bool {
        self.replacing || self.stack.last().is_some_and(|l| l.muted || l.cut)
    }

    /// Writes bytes that cannot be cut.
    fn whole(&mut self, bytes: &[u8]) -> Result<(), CondenseError> {
        if self.muted() {
            return Ok(());
        }
        if bytes.len() > self.room() {
            return Err(CondenseError::Overflow { at: self.fed });
        }
        self.out.extend_from_slice(bytes);
        Ok(())
    }

    /// Feeds the next piece of the line.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), CondenseError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        self.fed += bytes.len() as u64;
        let result = self.scan(bytes);
        if let Err(error) = result {
            self.error = Some(error);
        }
        result
    }

    /// Ends the line; gives the condensed frame, or [`Condensed::Unchanged`]
    /// when nothing had to be cut.
    pub fn finish(mut self) -> Result<Condensed, CondenseError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        match self.mode {
            Mode::Done => {}
            Mode::Start => return Err(CondenseError::NotAnObject),
            _ => return Err(CondenseError::Incomplete),
        }
        if self.cut_count == 0 {
            return Ok(Condensed::Unchanged);
        }
        self.fill_slots();
        debug_assert!(self.out.len() <= self.budget);
        Ok(Condensed::Cut {
            frame: self.out,
            original_bytes: self.fed,
            cuts: self.cut_count,
        })
    }

    fn scan(&mut self, bytes: &[u8]) -> Result<(), CondenseError> {
        let mut i = 0;
        while i < bytes.len() {
            match self.mode {
                Mode::InString | Mode::InStringEscape => {
                    i += self.string_bytes(&bytes[i..])?;
                }
                Mode::InKey => {
                    let rest = &bytes[i..];
                    let run = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
                    self.key_bytes(&rest[..run])?;
                    i += run;
                    match rest.get(run) {
                        Some(b'"') => {
                            self.whole(b"\"")?;
                            self.mode = Mode::Colon;
                            i += 1;
                        }
                        Some(_) => {
                            self.key_bytes(b"\\")?;
                            self.mode = Mode::InKeyEscape;
                            i += 1;
                        }
                        None => {}
                    }
                }
                Mode::InKeyEscape => {
                    self.key_bytes(&bytes[i..i + 1])?;
                    self.mode = Mode::InKey;
                    i += 1;
                }
                Mode::Scalar => {
                    let rest = &bytes[i..];
                    let run = rest
                        .iter()
                        .position(|&c| {
                            matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
                        })
                        .unwrap_or(rest.len());
                    self.whole(&rest[..run])?;
                    i += run;
                    if run < rest.len() {
                        self.mode = Mode::After;
                    }
                }
                _ => {
                    self.step(bytes[i])?;
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// One byte between tokens.
    fn step(&mut self, b: u8) -> Result<(), CondenseError> {
        if matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
            return Ok(());
        }
        match self.mode {
            Mode::Start if b == b'{' => self.open(true, Role::Top, Vec::new()),
            Mode::ArrayFirst if b == b']' => self.close(),
            Mode::Value | Mode::ArrayFirst => self.start_value(b),
            Mode::KeyFirst if b == b'}' => self.close(),
            Mode::KeyFirst | Mode::Key if b == b'"' => {
                self.key.clear();
                self.key_too_long = false;
                if !self.muted() {
                    let comma = core::mem::take(&mut self.comma_pending);
                    self.whole(if comma { b",\"" } else { b"\"" })?;
                }
                self.comma_pending = false;
                if let Some(level) = self.stack.last_mut() {
                    level.index += 1;
                }
                self.mode = Mode::InKey;
                Ok(())
            }
            Mode::Colon if b == b':' => {
                self.whole(b":")?;
                if let Some(level) = self.stack.last_mut() {
                    level.key.clear();
                    level.key.extend_from_slice(&self.key);
                    level.key_too_long = self.key_too_long;
                }
                self.mode = Mode::Value;
                Ok(())
            }
            Mode::After if b == b',' => {
                self.comma_pending = true;
                let object = self.stack.last().is_some_and(|l| l.object);
                self.mode = if object { Mode::Key } else { Mode::Value };
                Ok(())
            }
            Mode::After if b == b'}' || b == b']' => self.close(),
            _ => Err(CondenseError::NotAnObject),
        }
    }

    /// Key bytes: written whole, the first `MAX_KEY` kept for matching.
    fn key_bytes(&mut self, bytes: &[u8]) -> Result<(), CondenseError> {
        self.whole(bytes)?;
        let room = MAX_KEY.saturating_sub(self.key.len());
        if bytes.len() > room {
            self.key_too_long = true;
        }
        self.key.extend_from_slice(&bytes[..bytes.len().min(room)]);
        Ok(())
    }

    /// The role of a value at the current position.
    fn child_role(&self, object: bool) -> Role {
        let Some(parent) = self.stack.last() else {
            return Role::Top;
        };
        let key = if parent.object && !parent.key_too_long {
            &parent.key[..]
        } else {
            &[][..]
        };
        match (parent.role, key) {
            (Role::Top, b"result") if object => Role::Result,
            (Role::Top | Role::Outside, _) => Role::Outside,
            (Role::Result, b"content") if !object => Role::Content,
            (Role::Result, b"structuredContent") => Role::Structured,
            (Role::Result, b"_meta") => Role::Meta,
            (Role::Content, _) if object => Role::Block,
            (Role::Block, b"resource") if object => Role::Resource,
            (Role::Structured, _) => Role::Structured,
            (Role::Meta, _) => Role::Meta,
            _ => Role::Plain,
        }
    }

    /// The JSON Pointer segment of the value that starts now.
    fn segment(&self) -> Vec<u8> {
        let Some(parent) = self.stack.last() else {
            return Vec::new();
        };
        let mut segment = Vec::new();
        segment.push(b'/');
        if parent.object {
            if parent.key_too_long || parent.key.iter().any(|&c| c == b'\\' || c >= 0x80) {
                // Not listed: a pointer must be exact.
                return Vec::new();
            }
            for &c in &parent.key {
                match c {
                    b'~' => segment.extend_from_slice(b"~0"),
                    b'/' => segment.extend_from_slice(b"~1"),
                    c => segment.push(c),
                }
            }
        } else {
            let _ = write!(Digits(&mut segment), "{}", parent.index.saturating_sub(1));
        }
        segment
    }

    /// The pointer (relative to `result`) of the value that starts now, or
    /// empty when one of its keys cannot be listed.
    fn pointer(&self, own: &[u8]) -> Vec<u8> {
        let Some(result) = self.stack.iter().position(|l| l.role == Role::Result) else {
            return Vec::new();
        };
        let mut pointer = Vec::new();
        for level in &self.stack[result + 1..] {
            if level.segment.is_empty() {
                return Vec::new();
            }
            pointer.extend_from_slice(&level.segment);
        }
        if own.is_empty() {
            return Vec::new();
        }
        pointer.extend_from_slice(own);
        pointer
    }

    fn start_value(&mut self, b: u8) -> Result<(), CondenseError> {
        let muted = self.muted();
        let cut_here = !muted
            && self.stack.last().is_some_and(|l| {
                !l.object && l.role.cuttable() && self.room().saturating_sub(SLACK) < ELEMENT_ROOM
            });
        if let Some(level) = self.stack.last_mut()
            && !level.object
        {
            level.index += 1;
            if cut_here {
                level.cut = true;
            }
        }
        let comma = core::mem::take(&mut self.comma_pending);
        let muted = self.muted();
        if !muted && let Some(level) = self.stack.last_mut() {
            level.written += 1;
            if comma && !level.object {
                self.whole(b",")?;
            }
        }
        let segment = self.segment();
        match b {
            b'{' | b'[' => {
                let object = b == b'{';
                let role = self.child_role(object);
                self.open(object, role, segment)
            }
            b'"' => self.start_string(segment),
            _ => {
                self.whole(&[b])?;
                self.mode = Mode::Scalar;
                Ok(())
            }
        }
    }

    fn open(&mut self, object: bool, role: Role, segment: Vec<u8>) -> Result<(), CondenseError> {
        let muted = self.muted();
        let mut level = Level::new(object, role, muted, segment);
        if !muted {
            self.whole(if object { b"{" } else { b"[" })?;
            self.reserve += 1;
            if role == Role::Block {
                level.block_start = self.out.len() - 1;
                self.reserve += REPLACEMENT_ROOM;
            }
            if role == Role::Meta
                && let Some(result) = self.stack.last_mut()
                && result.role == Role::Result
                && object
            {
                result.has_meta = true;
            }
        }
        self.stack.push(level);
        self.mode = if object {
            Mode::KeyFirst
        } else {
            Mode::ArrayFirst
        };
        Ok(())
    }

    fn close(&mut self) -> Result<(), CondenseError> {
        let Some(level) = self.stack.pop() else {
            return Err(CondenseError::NotAnObject);
        };
        self.mode = if self.stack.is_empty() {
            Mode::Done
        } else {
            Mode::After
        };
        self.comma_pending = false;
        if level.muted {
            return Ok(());
        }
        let parent_is_result = self.stack.last().is_some_and(|l| l.role == Role::Result);
        match level.role {
            Role::Content if parent_is_result && self.notice_reserved => {
                self.notice_reserved = false;
                self.reserve -= NOTICE_SLOT;
                self.notice_slot = Some(self.slot(NOTICE_SLOT, level.written > 0));
            }
            Role::Meta if parent_is_result && level.object && self.marker_reserved => {
                self.marker_reserved = false;
                self.reserve -= MARKER_SLOT;
                let at = self.slot(MARKER_SLOT, level.written > 0);
                self.marker_slot = Some((at, 0));
            }
            Role::Result => {
                if self.notice_reserved {
                    self.notice_reserved = false;
                    self.reserve -= NOTICE_SLOT;
                }
                if self.marker_reserved {
                    self.marker_reserved = false;
                    self.reserve -= MARKER_SLOT;
                    let at = self.slot(MARKER_SLOT, level.written > 0);
                    self.marker_slot = Some((at, 1));
                }
                if self.tail_reserved {
                    self.tail_reserved = false;
                    self.reserve -= TAIL_ROOM;
                }
            }
            Role::Block => {
                self.reserve -= REPLACEMENT_ROOM;
                if level.replace {
                    self.replacing = false;
                    self.out.truncate(level.block_start);
                    let text = replacement_text(&level, self.budget);
                    self.out.extend_from_slice(&text);
                    self.reserve -= 1;
                    return Ok(());
                }
            }
            _ => {}
        }
        if level.cut {
            let pointer = self.pointer(&level.segment);
            self.record_as(pointer, level.written, level.index, "items");
        }
        self.reserve -= 1;
        self.out.push(if level.object { b'}' } else { b']' });
        Ok(())
    }

    /// Writes `len` bytes of spaces to fill in at the end; returns where.
    /// `after_member` says whether the slot will need a leading comma.
    fn slot(&mut self, len: usize, after_member: bool) -> usize {
        let at = self.out.len();
        self.out.resize(at + len, b' ');
        if after_member {
            self.out[at] = b',';
        }
        at
    }

    fn start_string(&mut self, segment: Vec<u8>) -> Result<(), CondenseError> {
        let muted = self.muted();
        let parent = self.stack.last();
        let role = parent.map_or(Role::Top, |l| l.role);
        let key: &[u8] = match parent {
            Some(l) if l.object && !l.key_too_long => &l.key,
            _ => &[],
        };
        let text_cap = || {
            (self.room().saturating_sub(SLACK) as u64 * u64::from(self.text_share) / 256) as usize
        };
        let capture = match (role, key) {
            (Role::Block, b"type") => Capture::BlockType,
            (Role::Block | Role::Resource, b"mimeType") => Capture::BlockMime,
            _ => Capture::None,
        };
        let text = Policy::Text { cap: text_cap() };
        let (policy, side) = match (role, key) {
            _ if muted => (Policy::Muted, None),
            (Role::Top | Role::Outside | Role::Meta, _) | (Role::Result, b"resultType") => {
                (Policy::Whole, None)
            }
            (Role::Block, b"data") | (Role::Resource, b"blob") => (Policy::Binary, None),
            (Role::Block, b"type")
            | (Role::Block | Role::Resource, b"mimeType")
            | (Role::Resource, b"uri") => (Policy::Whole, None),
            (Role::Block | Role::Resource, b"text") => (text, Some(false)),
            (Role::Structured, _) => (text, Some(true)),
            _ => (text, None),
        };
        if !muted {
            self.whole(b"\"")?;
            // The closing quote is kept back with the string.
            self.reserve += 1;
        }
        let candidates = match side {
            Some(side) => self
                .mirrors
                .iter()
                .enumerate()
                .filter(|(_, m)| m.structured != side)
                .fold(0u16, |bits, (bit, _)| bits | 1 << bit),
            None => 0,
        };
        self.string = Some(Str {
            policy,
            out_start: self.out.len(),
            len: 0,
            cut: false,
            candidates,
            side,
            capture,
            captured: Vec::new(),
            segment,
        });
        self.mode = Mode::InString;
        Ok(())
    }

    /// Bytes inside a string value; returns how many were taken (up to and
    /// including the closing quote).
    fn string_bytes(&mut self, bytes: &[u8]) -> Result<usize, CondenseError> {
        let mut i = 0;
        loop {
            if self.mode == Mode::InStringEscape {
                let Some(&b) = bytes.get(i) else {
                    return Ok(i);
                };
                self.content(&[b])?;
                self.mode = Mode::InString;
                i += 1;
            }
            let rest = &bytes[i..];
            match memchr::memchr2(b'"', b'\\', rest) {
                None => {
                    self.content(rest)?;
                    return Ok(bytes.len());
                }
                Some(k) => {
                    self.content(&rest[..k])?;
                    i += k + 1;
                    if rest[k] == b'"' {
                        self.end_string()?;
                        return Ok(i);
                    }
                    self.content(b"\\")?;
                    self.mode = Mode::InStringEscape;
                }
            }
        }
    }

    /// Raw contents of the current string value.
    fn content(&mut self, piece: &[u8]) -> Result<(), CondenseError> {
        if piece.is_empty() {
            return Ok(());
        }
        let room = self.room();
        let Some(s) = self.string.as_mut() else {
            return Ok(());
        };
        s.len += piece.len() as u64;
        if s.capture != Capture::None {
            let room = 64usize.saturating_sub(s.captured.len());
            s.captured
                .extend_from_slice(&piece[..piece.len().min(room)]);
        }
        if s.cut {
            return Ok(());
        }
        let kept = self.out.len() - s.out_start;
        let limit = match s.policy {
            Policy::Muted => return Ok(()),
            Policy::Whole => {
                if piece.len() > room {
                    return Err(CondenseError::Overflow { at: self.fed });
                }
                self.out.extend_from_slice(piece);
                return Ok(());
            }
            Policy::Binary => {
                if piece.len() > room {
                    // Never broken base64: the block is replaced.
                    s.cut = true;
                    if let Some(block) = self.stack.iter_mut().rev().find(|l| l.role == Role::Block)
                    {
                        block.replace = true;
                        self.replacing = true;
                    }
                    return Ok(());
                }
                self.out.extend_from_slice(piece);
                return Ok(());
            }
            Policy::Text { cap } => {
                if s.candidates != 0 {
                    s.candidates &= matching(&self.mirrors, &self.out, s.candidates, kept, piece);
                }
                // A mirror is cut where its text was, however short that
                // is; any other text keeps at least a short head.
                let wanted = match longest(&self.mirrors, s.candidates) {
                    Some(len) => len,
                    None => cap.max(SHORT_STRING as usize),
                };
                wanted.min(kept + room)
            }
        };
        if kept + piece.len() <= limit {
            self.out.extend_from_slice(piece);
            return Ok(());
        }
        self.out
            .extend_from_slice(&piece[..limit.saturating_sub(kept)]);
        let start = s.out_start;
        let boundary = unit_boundary(&self.out[start..], limit);
        self.out.truncate(start + boundary);
        s.cut = true;
        // The text this one mirrors is cut to the same prefix, even where it
        // was kept longer (or whole) because it came first.
        let candidates = s.candidates;
        for bit in 0..self.mirrors.len() {
            if candidates & (1 << bit) != 0 {
                self.shrink(bit, boundary);
            }
        }
        Ok(())
    }

    /// Cuts mirror candidate `index` to its first `len` bytes, in place:
    /// what follows it in the output moves back.
    fn shrink(&mut self, index: usize, len: usize) {
        let (start, old) = {
            let m = &self.mirrors[index];
            (m.start, m.len)
        };
        if len >= old {
            return;
        }
        let delta = old - len;
        let from = start + len;
        self.out.drain(from..start + old);
        let moved = |at: &mut usize| {
            if *at >= from + delta {
                *at -= delta;
            }
        };
        if let Some(at) = self.notice_slot.as_mut() {
            moved(at);
        }
        if let Some((at, _)) = self.marker_slot.as_mut() {
            moved(at);
        }
        for level in &mut self.stack {
            moved(&mut level.block_start);
        }
        if let Some(s) = self.string.as_mut() {
            moved(&mut s.out_start);
        }
        for m in &mut self.mirrors {
            moved(&mut m.start);
        }
        let m = &mut self.mirrors[index];
        m.len = len;
        let (pointer, original, cut) = (m.pointer.clone(), m.original, m.cut);
        match cut {
            Some(at) => self.cuts[at].kept = len as u64,
            None if m.whole => {
                m.whole = false;
                let at = self.record(pointer, len as u64, original);
                self.mirrors[index].cut = at;
            }
            None => {}
        }
    }

    fn end_string(&mut self) -> Result<(), CondenseError> {
        self.mode = Mode::After;
        let Some(s) = self.string.take() else {
            return Ok(());
        };
        if s.capture != Capture::None
            && let Some(block) = self.stack.iter_mut().rev().find(|l| l.role == Role::Block)
        {
            if s.capture == Capture::BlockType {
                block.block_type = s.captured;
            } else {
                block.block_mime = s.captured;
            }
        }
        if s.policy == Policy::Muted {
            return Ok(());
        }
        self.reserve -= 1;
        let kept_len = self.out.len() - s.out_start;
        if s.cut && s.policy == Policy::Binary {
            if let Some(block) = self.stack.iter_mut().rev().find(|l| l.role == Role::Block) {
                block.binary_len = s.len;
            }
            let pointer = self.pointer(&s.segment);
            self.record(pointer, 0, s.len);
            return Ok(());
        }
        if s.cut && s.len <= SHORT_STRING {
            return Err(CondenseError::Overflow { at: self.fed });
        }
        let pointer = self.pointer(&s.segment);
        let cut = if s.cut {
            self.record(pointer.clone(), kept_len as u64, s.len)
        } else {
            None
        };
        if let Some(structured) = s.side
            && s.len > SHORT_STRING
            && self.mirrors.len() < MAX_MIRRORS
        {
            self.mirrors.push(Mirror {
                start: s.out_start,
                len: kept_len,
                structured,
                whole: !s.cut,
                cut,
                pointer,
                original: s.len,
            });
        }
        self.out.push(b'"');
        Ok(())
    }

    /// Counts a cut and lists it if there is room; returns where.
    fn record(&mut self, pointer: Vec<u8>, kept: u64, original: u64) -> Option<usize> {
        self.record_as(pointer, kept, original, "bytes")
    }

    fn record_as(
        &mut self,
        pointer: Vec<u8>,
        kept: u64,
        original: u64,
        unit: &'static str,
    ) -> Option<usize> {
        self.cut_count += 1;
        if pointer.is_empty() || self.cuts.len() >= MAX_LISTED_CUTS {
            return None;
        }
        self.cuts.push(Cut {
            pointer,
            kept,
            original,
            unit,
        });
        Some(self.cuts.len() - 1)
    }
}

/// `fmt::Write` into a byte vector.
struct Digits<'a>(&'a mut Vec<u8>);

impl fmt::Write for Digits<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// The mirror candidates among `candidates` that the string still equals
/// (as far as they were kept), given its next `piece` at raw offset `at`. A
/// candidate kept whole stops being one when the string runs past it.
fn matching(mirrors: &[Mirror], out: &[u8], candidates: u16, at: usize, piece: &[u8]) -> u16 {
    let mut still = 0;
    for (bit, m) in mirrors.iter().enumerate() {
        if candidates & (1 << bit) == 0 || at > m.len || (m.whole && at + piece.len() > m.len) {
            continue;
        }
        let compared = piece.len().min(m.len - at);
        if out[m.start + at..m.start + at + compared] == piece[..compared] {
            still |= 1 << bit;
        }
    }
    still
}

/// The longest kept prefix among the candidates.
fn longest(mirrors: &[Mirror], candidates: u16) -> Option<usize> {
    mirrors
        .iter()
        .enumerate()
        .filter(|(bit, _)| candidates & (1 << bit) != 0)
        .map(|(_, m)| m.len)
        .max()
}

/// The largest length `<= limit` at which the raw string contents `s` can
/// be cut: not inside an escape (a surrogate pair counts as one), not inside
/// a UTF-8 sequence, and not past a unit that `s` holds only part of.
fn unit_boundary(s: &[u8], limit: usize) -> usize {
    let mut at = 0;
    while at < s.len() {
        let unit = match s[at] {
            b'\\' => match s.get(at + 1) {
                Some(b'u') => {
                    let high = s
                        .get(at + 2..at + 6)
                        .and_then(|h| core::str::from_utf8(h).ok())
                        .and_then(|h| u16::from_str_radix(h, 16).ok());
                    let pair = matches!(high, Some(0xD800..=0xDBFF))
                        && s.get(at + 6..at + 8) == Some(b"\\u")
                        && s.get(at + 8..at + 12)
                            .and_then(|h| core::str::from_utf8(h).ok())
                            .and_then(|h| u16::from_str_radix(h, 16).ok())
                            .is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
                    if pair { 12 } else { 6 }
                }
                _ => 2,
            },
            b if b < 0x80 => 1,
            b if b >= 0xF0 => 4,
            b if b >= 0xE0 => 3,
            _ => 2,
        };
        if at + unit > limit.min(s.len()) {
            break;
        }
        at += unit;
    }
    at
}

/// The text block that replaces a content block whose binary value did
/// not fit: at most `REPLACEMENT_ROOM` bytes.
fn replacement_text(block: &Level, budget: usize) -> Vec<u8> {
    let plain = |bytes: &[u8]| -> String {
        bytes
            .iter()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, b'/' | b'-' | b'+' | b'.'))
            .map(|&c| char::from(c))
            .take(40)
            .collect()
    };
    let kind = match plain(&block.block_type) {
        kind if kind.is_empty() => String::from("binary"),
        kind => kind,
    };
    let mime = plain(&block.block_mime);
    let mut text = String::new();
    let _ = write!(
        text,
        "[drainpipe] {kind} content of {} bytes{}{}{} left out: it does not fit the result budget of {budget} bytes.",
        block.binary_len,
        if mime.is_empty() { "" } else { " (" },
        mime,
        if mime.is_empty() { "" } else { ")" },
    );
    let mut out = Vec::with_capacity(REPLACEMENT_ROOM);
    out.extend_from_slice(b"{\"type\":\"text\",\"text\":\"");
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\"}");
    debug_assert!(out.len() < REPLACEMENT_ROOM);
    out
}

impl Condenser {
    /// Fills the notice and marker slots, now that the sizes are known.
    fn fill_slots(&mut self) {
        let kept = self.out.len();
        if let Some((at, wrapped)) = self.marker_slot {
            let comma = self.out[at] == b',';
            let mut text = Vec::with_capacity(MARKER_SLOT);
            if comma {
                text.push(b',');
            }
            if wrapped == 1 {
                text.extend_from_slice(b"\"_meta\":{");
            }
            let _ = write!(
                Digits(&mut text),
                "\"{MARKER_KEY}\":{{\"originalBytes\":{},\"keptBytes\":{kept},\"cutCount\":{},\"cut\":[",
                self.fed,
                self.cut_count
            );
            let close: &[u8] = if wrapped == 1 { b"]}}" } else { b"]}" };
            for (n, cut) in self.cuts.iter().enumerate() {
                let need = cut.pointer.len() + 3 + close.len();
                if text.len() + need > MARKER_SLOT {
                    break;
                }
                if n > 0 {
                    text.push(b',');
                }
                text.push(b'"');
                text.extend_from_slice(&cut.pointer);
                text.push(b'"');
            }
            text.extend_from_slice(close);
            self.out[at..at + text.len()].copy_from_slice(&text);
        }
        if let Some(at) = self.notice_slot {
            let comma = self.out[at] == b',';
            let mut text = Vec::with_capacity(NOTICE_SLOT);
            if comma {
                text.push(b',');
            }
            text.extend_from_slice(b"{\"type\":\"text\",\"text\":\"");
            let _ = write!(
                Digits(&mut text),
                "[drainpipe] This result was cut to {kept} bytes to fit a budget of {} (it was {} bytes): {} value(s) cut, each keeping its beginning",
                self.budget,
                self.fed,
                self.cut_count
            );
            let end: &[u8] = b". Details: _meta io.drainpipe/truncated.\"}";
            for (n, cut) in self.cuts.iter().enumerate() {
                let mut item = Vec::new();
                let _ = write!(
                    Digits(&mut item),
                    "{}{} kept {} of {} {}",
                    if n == 0 { ": " } else { "; " },
                    String::from_utf8_lossy(&cut.pointer),
                    cut.kept,
                    cut.original,
                    cut.unit
                );
                if text.len() + item.len() + end.len() > NOTICE_SLOT {
                    break;
                }
                text.extend_from_slice(&item);
            }
            text.extend_from_slice(end);
            self.out[at..at + text.len()].copy_from_slice(&text);
        }
    }
}
