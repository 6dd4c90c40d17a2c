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
//!   prefix (and the other way round);
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
//! comes later, it keeps back what the parts written at the end take: a
//! closing bracket per open container, a fixed slot for the notice block and
//! one for the marker (filled in at the end, padded with spaces, which JSON
//! allows between tokens), the room for the links, and a little for the
//! members that follow `result` (the TypeScript SDK writes `"jsonrpc"` and
//! `"id"` after it). The output is never over the budget.
//!
//! The rest of the budget is spent. The output is held, so room given to a
//! text can be taken back when a later value needs it: the text is cut
//! shorter in place and what follows it moves back.
//!
//! - A long text takes all the room left, but for a little (512 bytes) for
//!   the small members after it.
//! - A later text that runs out of room takes it from the texts before it
//!   that were cut longer (and from a text it mirrors so far), longest
//!   first, toward one level: `n` long texts keep about a `n`th each, a text
//!   and its mirror half each. A mirror is still cut where its text is.
//! - Bytes that cannot be cut (keys, numbers, short strings, `_meta`) and do
//!   not fit take room from the cut texts the same way, which are never
//!   shrunk below 64 bytes; only when they cannot give it is it a
//!   [`CondenseError`].
//! - An array element is started with less room than it needs only while a
//!   cut text holds an eighth of the budget or more (its bytes then take room
//!   from the texts); otherwise the array is cut there.
//! - A binary value (`data`, `blob`) takes room from the cut texts while they
//!   keep half the budget in all; if it does not fit even so, it is left out
//!   whole (its block replaced by a text block saying so) and what it would
//!   have taken is not given back to the texts before it.
//!
//! So a cut result fills at least nine tenths of a budget of 64 KiB or more
//! (less a step of room taken back and not used, a 64th of the budget, and
//! the little room above), whatever the number of values cut. The exception
//! is a result with a binary value left out: one that is mostly one large
//! image becomes a small result that says the image was left out.
//!
//! Room is taken back a step at a time (a 64th of the budget, or what is
//! left to level the texts), and each step moves at most the budget's bytes
//! once; since the room a step frees is then filled from the input before
//! another step is taken, the bytes moved stay within 64 times the input
//! read plus 64 times the budget. Every decision is taken at a byte, from
//! the bytes before it, so the output does not depend on how the input was
//! split. At most 64 texts are tracked; a text past those is cut where the
//! room ends and takes no room back.
//!
//! # Spilling
//!
//! With [`Condenser::with_links`], the condenser also reports the whole of
//! each string it cuts, as it reads it ([`Spill`]: its start, its raw bytes
//! in order, its end), so the caller can keep the full value elsewhere, and
//! it keeps room in `content` for a `resource_link` block per value, which
//! the caller writes once it knows where the values went
//! ([`Links::fill`]). The remaining elements of a cut array are not
//! reported.
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

/// Bytes kept back for the notice block appended to `content` (`,`
/// included), written at the end: the notice always fits. Its list of cuts
/// stops where the slot ends.
const NOTICE_SLOT: usize = 400;
/// Bytes kept back for the marker in `_meta` (with `,"_meta":{…}` if
/// needed), written at the end: the marker always fits. Its list of
/// pointers stops where the slot ends.
const MARKER_SLOT: usize = 720;
/// Bytes kept back, until `result` closes, for the top-level members the
/// TypeScript SDK writes after it (`jsonrpc`, `id`), which cannot be cut.
const TAIL_ROOM: usize = 300;
/// Bytes kept back while inside a content block, for the text block that
/// replaces it if its binary value does not fit (at most this long).
const REPLACEMENT_ROOM: usize = 300;
/// Bytes of room a long text leaves free for the small members that follow
/// it (a block's closing bracket, `isError`, a short key and value), so
/// that they are written without shrinking the text again.
const SLACK: usize = 512;
/// A string of at most this many bytes is never cut; a cut text is never
/// shrunk below it (less a partial character or escape).
const SHORT_STRING: u64 = 64;
/// Bytes of room, past `SLACK`, below which an array element is not
/// started (the array is cut there) unless cut texts can give room
/// (`STEAL_SHARE`).
const ELEMENT_ROOM: usize = 64;
/// An element is still started with too little room while the longest
/// shrinkable text holds at least this fraction (1/n) of the budget: its
/// bytes are then written by shrinking the texts before it. Below that,
/// a cut text keeps what it has against many small elements.
const STEAL_SHARE: usize = 8;
/// Shrinking cut texts frees at least this fraction (1/n) of the budget at
/// a time (or what is needed, if more), so that each shrink, which moves
/// up to the budget's bytes, is paid for by at least budget/64 bytes read
/// later: the bytes moved stay below 64 times the bytes read plus 64 times
/// the budget.
const FREE_SHARE: usize = 64;
/// Cuts listed by pointer, at most (the rest are counted): bounds the
/// memory for the marker and the notice, whose slots list fewer anyway.
const MAX_LISTED_CUTS: usize = 24;
/// Texts tracked in the output, at most: cut texts (which can be shrunk to
/// give room to later values) and long texts a later string may mirror.
/// A text past this many is neither shrunk nor given room by shrinking
/// others. At most 64: candidates are bits of a `u64`.
const MAX_TRACKED: usize = 64;
/// Bytes of a key kept to match it (longer keys match no known member and
/// are not listed in pointers): bounds the memory per open level.
const MAX_KEY: usize = 256;
/// Bytes of a block's `type` or `mimeType` kept for the replacement's
/// text and the link's media type: bounds the memory per open block.
const MAX_CAPTURE: usize = 128;
/// Values reported for spilling and linked, at most, per response: bounds
/// the room kept for links (`LINKS_SLOT`) and what the caller stores.
pub const MAX_LINKS: usize = 8;
/// Bytes kept back, with links, for one `resource_link` block (a longer
/// block is not written).
const LINK_ROOM: usize = 320;
/// Bytes kept back, with links, for the notice's sentence about them.
const LINK_NOTICE: usize = 176;
/// Bytes kept back, with links, for the links and their sentence, in the
/// notice's slot.
const LINKS_SLOT: usize = LINK_NOTICE + MAX_LINKS * LINK_ROOM;
/// The longest URI, name or media type, in bytes, a link is written with
/// (so that a link fits `LINK_ROOM`).
const MAX_LINK_FIELD: usize = 96;

/// The smallest budget the condenser takes: room for its slots and a
/// little content.
pub const MIN_CONDENSE_BUDGET: usize =
    NOTICE_SLOT + MARKER_SLOT + TAIL_ROOM + REPLACEMENT_ROOM + SLACK + 1024;

/// The smallest budget a condenser with links takes
/// ([`Condenser::with_links`]).
pub const MIN_LINKED_BUDGET: usize = MIN_CONDENSE_BUDGET + LINKS_SLOT;

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
        /// With [`Condenser::with_links`]: the values reported for spilling
        /// and the room kept for their links in `frame`; `None` without, or
        /// when the result has no `content` to hold them.
        links: Option<Links>,
    },
}

/// What a spilled value holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpillKind {
    /// A string: its raw bytes decode (JSON string escapes) to the text.
    Text,
    /// The base64 `data` or `blob` of a content block: its raw bytes decode
    /// (JSON escapes, then base64) to the binary value.
    Binary,
}

/// The contents of a value the condenser cut, reported as it reads them
/// ([`Condenser::feed_spilling`]). One value is open at a time; every
/// `Start` is followed by its `Raw` pieces and, unless the input ends
/// first, its `End`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Spill<'a> {
    /// Value `value` (numbered from 0 in this response) was cut.
    Start {
        /// Its number.
        value: u32,
        /// What its bytes hold.
        kind: SpillKind,
    },
    /// The next raw bytes of its contents (between the quotes, escapes as
    /// written), from its first byte on.
    Raw {
        /// Its number.
        value: u32,
        /// The bytes.
        bytes: &'a [u8],
    },
    /// Its closing quote was read: it is complete.
    End {
        /// Its number.
        value: u32,
    },
}

/// A value reported for spilling, as its link will describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Spilled {
    /// Its number in [`Spill`] events.
    pub value: u32,
    /// What it holds.
    pub kind: SpillKind,
    /// Its JSON Pointer relative to `result` (empty when a key on its path
    /// cannot be written as one).
    pub pointer: String,
    /// Its media type: a resource block's `mimeType`, else `text/plain`
    /// for text and `application/octet-stream` for binary.
    pub mime: String,
    /// Whether its `End` was reported.
    pub complete: bool,
}

/// Where a spilled value can be read in full, for its link.
#[derive(Clone, Copy, Debug)]
pub struct Link<'a> {
    /// The URI to read it at (at most 96 bytes of printable ASCII other
    /// than `"` and `\`; a longer or other one is not written).
    pub uri: &'a str,
    /// Its size in bytes, decoded (UTF-8 text, or the binary value).
    pub size: u64,
}

/// The room a condenser with links kept in `content` (at most
/// [`MAX_LINKS`] `resource_link` blocks) and the values they are for.
/// The frame holds the notice without links until [`Links::fill`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Links {
    /// Where the notice and link room starts in the frame, and its length.
    at: usize,
    len: usize,
    /// The room starts with a `,` (the block follows others).
    comma: bool,
    /// The notice's text up to its closing sentence.
    notice: Vec<u8>,
    values: Vec<Spilled>,
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
    /// Cut where the room ends (after shrinking earlier cut texts to an
    /// equal level, if that gives more), past its `Str::cap`, or where the
    /// text it mirrors was cut.
    Text,
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
    /// Mirror candidates (bits for `Condenser::texts`) still equal so far.
    candidates: u64,
    /// Texts: the most it may keep, in bytes (the share of the room it was
    /// given, with [`Condenser::with_text_share`], or the level the texts
    /// before it were shrunk to for it); `None`: all the room it can get.
    cap: Option<usize>,
    /// Which side of a possible mirror it is: `Some(false)` for a content
    /// block's text, `Some(true)` for a string in `structuredContent`.
    side: Option<bool>,
    /// A block's `type` or `mimeType`, kept for a replacement's text (even
    /// when not written).
    capture: Capture,
    captured: Vec<u8>,
    /// Its JSON Pointer segment.
    segment: Vec<u8>,
    /// Its number, once it is cut and reported for spilling.
    spill: Option<u32>,
}

/// A text in the output that may be cut shorter later: a cut text (to give
/// room to a later value), or a long text of one side (a content block's
/// text, or a string in `structuredContent`) that a string of the other
/// side may mirror (the servers on the official SDKs write a tool's text
/// in both), to cut it where its mirror is cut.
#[derive(Debug)]
struct Tracked {
    /// Its contents in the output.
    start: usize,
    len: usize,
    /// The side it is on (see `Str::side`); `None`: no mirror candidate.
    side: Option<bool>,
    /// Whether it was written whole (else it was cut to `len`).
    whole: bool,
    /// A mirror of it could not be tracked: shrinking it would part them,
    /// so it is not shrunk to give room.
    fixed: bool,
    /// Its cut record, if it was cut and listed.
    cut: Option<usize>,
    pointer: Vec<u8>,
    original: u64,
    /// Whether it was reported for spilling (while cut, or at its shrink).
    spilled: bool,
    /// It was inside a content block that was replaced: it is no longer in
    /// the output, and nothing mirrors it.
    dead: bool,
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
    /// Share of the room a long text may take, in 256ths; `None`: all of
    /// it ([`Condenser::with_text_share`]).
    text_share: Option<u16>,
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
    texts: Vec<Tracked>,
    /// A content block is being replaced: nothing more of it is written.
    replacing: bool,
    error: Option<CondenseError>,
    /// Cut values are reported and linked ([`Condenser::with_links`]).
    linking: bool,
    /// The values reported, and for each the depth of the content block
    /// it is in (its media type is known when the block closes).
    spilled: Vec<(Spilled, Option<usize>)>,
    /// Where the notice (and with links, the link room) starts, and its
    /// length.
    notice_len: usize,
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
            text_share: None,
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
            texts: Vec::new(),
            replacing: false,
            error: None,
            linking: false,
            spilled: Vec::new(),
            notice_len: NOTICE_SLOT,
        })
    }

    /// Reports every string it cuts ([`Condenser::feed_spilling`]) and keeps
    /// room for their links ([`Links`]). Needs a budget of at least
    /// [`MIN_LINKED_BUDGET`].
    pub fn with_links(mut self) -> Result<Self, CondenseError> {
        if self.budget < MIN_LINKED_BUDGET {
            return Err(CondenseError::BudgetTooSmall {
                budget: self.budget,
            });
        }
        if !self.linking && self.fed == 0 {
            self.linking = true;
            self.notice_len = NOTICE_SLOT + LINKS_SLOT;
            self.reserve += LINKS_SLOT;
        }
        Ok(self)
    }

    /// Caps the share of the room left (when it starts) that one long text
    /// may keep, in 256ths (at least 1). By default a text takes all the
    /// room it can and gives some back when a later value needs it (a
    /// mirror, another text, a key): the budget is spent. A capped text
    /// still gets room from earlier cut texts up to its cap; what it leaves
    /// unused stays unused if nothing follows.
    pub fn with_text_share(mut self, share: u8) -> Self {
        self.text_share = Some(u16::from(share.max(1)));
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

    /// Writes bytes that cannot be cut, shrinking cut texts to make room.
    fn whole(&mut self, bytes: &[u8]) -> Result<(), CondenseError> {
        if self.muted() {
            return Ok(());
        }
        if !self.make_room(bytes.len(), 0) {
            return Err(CondenseError::Overflow { at: self.fed });
        }
        self.out.extend_from_slice(bytes);
        Ok(())
    }

    /// Frees room for `need` bytes by shrinking the cut texts, longest
    /// first, while they hold more than `keep` bytes in all: steps of
    /// budget/`FREE_SHARE` (or what they can still give), taken one by one
    /// while the room is short. Returns whether the room is there.
    ///
    /// The steps depend only on what was written, not on how the input was
    /// split: a step is taken when what is written next does not fit, and
    /// frees what the texts' lengths say, so a value fed whole takes the
    /// same steps as in pieces.
    fn make_room(&mut self, need: usize, keep: usize) -> bool {
        while need > self.room() {
            let lens = self.shrinkable(false, SHORT_STRING as usize);
            let held: usize = lens.iter().map(|&(_, len)| len).sum();
            let most = freed(&lens, SHORT_STRING as usize).min(held.saturating_sub(keep));
            if most == 0 {
                return false;
            }
            let step = (self.budget / FREE_SHARE).min(most);
            let level = highest(SHORT_STRING as usize, &lens, |y| freed(&lens, y) >= step)
                .unwrap_or(SHORT_STRING as usize);
            self.shrink_to(&lens, level, &mut |_| {});
        }
        true
    }

    /// The tracked texts that may be shrunk to give room, as (index,
    /// length), longer than `floor`: cut ones, and with `whole` those kept
    /// whole too (reported for spilling when they are shrunk, so only where
    /// that can be reported: for a text that needs room).
    fn shrinkable(&self, whole: bool, floor: usize) -> Vec<(usize, usize)> {
        self.texts
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.dead && !m.fixed && m.len > floor && (whole || !m.whole))
            .map(|(bit, m)| (bit, m.len))
            .collect()
    }

    /// Cuts each of `lens` longer than `level` to `level` (less a partial
    /// character or escape), in one pass over the output.
    fn shrink_to(
        &mut self,
        lens: &[(usize, usize)],
        level: usize,
        spill: &mut dyn FnMut(Spill<'_>),
    ) {
        let plan: Vec<(usize, usize)> = lens
            .iter()
            .filter(|&&(_, len)| len > level)
            .map(|&(index, _)| (index, level))
            .collect();
        self.shrink(&plan, false, spill);
    }

    /// Feeds the next piece of the line.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), CondenseError> {
        self.feed_spilling(bytes, &mut |_| {})
    }

    /// Feeds the next piece of the line, reporting to `spill` the contents
    /// of the values it cuts (with [`Condenser::with_links`]; without, it
    /// is never called).
    pub fn feed_spilling(
        &mut self,
        bytes: &[u8],
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Result<(), CondenseError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        self.fed += bytes.len() as u64;
        let result = self.scan(bytes, spill);
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
        let links = self.fill_slots();
        debug_assert!(self.out.len() <= self.budget);
        Ok(Condensed::Cut {
            frame: self.out,
            original_bytes: self.fed,
            cuts: self.cut_count,
            links,
        })
    }

    fn scan(
        &mut self,
        bytes: &[u8],
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Result<(), CondenseError> {
        let mut i = 0;
        while i < bytes.len() {
            match self.mode {
                Mode::InString | Mode::InStringEscape => {
                    i += self.string_bytes(&bytes[i..], spill)?;
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
        // With too little room an array is cut, unless a cut text is long
        // enough to give room: the element's bytes then shrink it.
        let cut_here = !muted
            && self.stack.last().is_some_and(|l| {
                !l.object
                    && l.role.cuttable()
                    && self.room().saturating_sub(SLACK) < ELEMENT_ROOM
                    && self
                        .shrinkable(false, SHORT_STRING as usize)
                        .iter()
                        .all(|&(_, len)| len < self.budget / STEAL_SHARE)
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
                self.reserve -= self.notice_len;
                self.notice_slot = Some(self.slot(self.notice_len, level.written > 0));
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
                    self.reserve -= self.notice_len;
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
                let depth = self.stack.len();
                for (spilled, block) in &mut self.spilled {
                    if *block == Some(depth) {
                        *block = None;
                        if let Some(mime) = media_type(&level.block_mime) {
                            spilled.mime = mime;
                        }
                    }
                }
                if level.replace {
                    self.replacing = false;
                    self.out.truncate(level.block_start);
                    // Texts kept inside it are gone with it.
                    for m in &mut self.texts {
                        if m.start >= level.block_start {
                            m.dead = true;
                        }
                    }
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
        let cap = self.text_share.map(|share| {
            (self.room().saturating_sub(SLACK) as u64 * u64::from(share) / 256) as usize
        });
        let capture = match (role, key) {
            (Role::Block, b"type") => Capture::BlockType,
            (Role::Block | Role::Resource, b"mimeType") => Capture::BlockMime,
            _ => Capture::None,
        };
        let text = Policy::Text;
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
                .texts
                .iter()
                .enumerate()
                .filter(|(_, m)| m.side == Some(!side) && !m.dead)
                .fold(0u64, |bits, (bit, _)| bits | 1 << bit),
            None => 0,
        };
        self.string = Some(Str {
            policy,
            out_start: self.out.len(),
            len: 0,
            cut: false,
            candidates,
            cap,
            side,
            capture,
            captured: Vec::new(),
            segment,
            spill: None,
        });
        self.mode = Mode::InString;
        Ok(())
    }

    /// Bytes inside a string value; returns how many were taken (up to and
    /// including the closing quote).
    fn string_bytes(
        &mut self,
        bytes: &[u8],
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Result<usize, CondenseError> {
        let mut i = 0;
        loop {
            if self.mode == Mode::InStringEscape {
                if i >= bytes.len() {
                    return Ok(i);
                }
                self.content(&bytes[i..i + 1], spill)?;
                self.mode = Mode::InString;
                i += 1;
            }
            let rest = &bytes[i..];
            match memchr::memchr2(b'"', b'\\', rest) {
                None => {
                    self.content(rest, spill)?;
                    return Ok(bytes.len());
                }
                Some(k) => {
                    self.content(&rest[..k], spill)?;
                    i += k + 1;
                    if rest[k] == b'"' {
                        self.end_string(spill)?;
                        return Ok(i);
                    }
                    self.content(b"\\", spill)?;
                    self.mode = Mode::InStringEscape;
                }
            }
        }
    }

    /// Raw contents of the current string value.
    fn content(
        &mut self,
        piece: &[u8],
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Result<(), CondenseError> {
        if piece.is_empty() {
            return Ok(());
        }
        let room = self.room();
        let Some(s) = self.string.as_mut() else {
            return Ok(());
        };
        s.len += piece.len() as u64;
        if s.capture != Capture::None {
            let room = MAX_CAPTURE.saturating_sub(s.captured.len());
            s.captured
                .extend_from_slice(&piece[..piece.len().min(room)]);
        }
        if s.cut {
            if let Some(value) = s.spill {
                spill(Spill::Raw {
                    value,
                    bytes: piece,
                });
            }
            return Ok(());
        }
        match s.policy {
            Policy::Muted => Ok(()),
            Policy::Whole => {
                if !self.make_room(piece.len(), 0) {
                    return Err(CondenseError::Overflow { at: self.fed });
                }
                self.out.extend_from_slice(piece);
                Ok(())
            }
            Policy::Binary => {
                // Cut texts give room to a binary value while they keep
                // half the budget in all (what the half share gave before):
                // a value that does not fit even so is left out, and what
                // they gave may stay unused.
                let fits = piece.len() <= room || self.make_room(piece.len(), self.budget / 2);
                let Some(s) = self.string.as_mut() else {
                    return Ok(());
                };
                if !fits {
                    // Never broken base64: the block is replaced.
                    s.cut = true;
                    if let Some(block) = self.stack.iter_mut().rev().find(|l| l.role == Role::Block)
                    {
                        block.replace = true;
                        self.replacing = true;
                    }
                    if self.linking && self.spilled.len() < MAX_LINKS {
                        let head = self.out[s.out_start..].to_vec();
                        self.spill_cut(SpillKind::Binary, &head, piece, spill);
                    }
                    return Ok(());
                }
                self.out.extend_from_slice(piece);
                Ok(())
            }
            Policy::Text => {
                self.text_content(piece, spill);
                Ok(())
            }
        }
    }

    /// Raw contents of the current text, not cut yet: written up to its
    /// limit; there, room is made by shrinking the texts before it, or it
    /// is cut.
    ///
    /// Every decision is taken at a byte, from the bytes before it, so the
    /// output does not depend on how the input was split: the mirror
    /// candidates are checked up to the limit and the byte after it, and a
    /// candidate dropped by a byte changes the limit from that byte on.
    fn text_content(&mut self, mut piece: &[u8], spill: &mut dyn FnMut(Spill<'_>)) {
        loop {
            let room = self.room();
            let Some(s) = self.string.as_mut() else {
                return;
            };
            let kept = self.out.len() - s.out_start;
            // A mirror is cut where its text is, however short that is; any
            // other text takes the room (leaving `SLACK`) up to its cap, and
            // keeps at least a short head. `want` is what it may keep,
            // `give` what the room gives it now.
            let (want, give) = match longest(&self.texts, s.candidates) {
                Some(len) => (len, kept + room),
                None => (
                    s.cap
                        .map_or(usize::MAX, |cap| cap.max(SHORT_STRING as usize)),
                    (kept + room.saturating_sub(SLACK))
                        .max(SHORT_STRING as usize)
                        .min(kept + room),
                ),
            };
            let limit = want.min(give);
            let n = limit.saturating_sub(kept).min(piece.len());
            if s.candidates != 0 {
                let probe = &piece[..(n + 1).min(piece.len())];
                if let Some((at, still)) =
                    first_change(&self.texts, &self.out, s.candidates, kept, probe)
                {
                    s.candidates = still;
                    self.out.extend_from_slice(&piece[..at]);
                    piece = &piece[at..];
                    continue;
                }
            }
            self.out.extend_from_slice(&piece[..n]);
            piece = &piece[n..];
            if piece.is_empty() {
                return;
            }
            // The next byte is past the limit. Where the room set it, the
            // texts before may give some.
            if give < want && self.texts.len() < MAX_TRACKED && self.give_room(spill) {
                continue;
            }
            self.cut_text(limit, piece, spill);
            return;
        }
    }

    /// The current text ran out of room at its `kept` bytes: shrinks the
    /// tracked texts before it that are longer (cut ones, and long ones kept
    /// whole) toward one level, longest first. While they are well
    /// above it, they give a step (budget/`FREE_SHARE`) and it goes on;
    /// near it, they and it meet at one level, which becomes its cap.
    /// Returns whether room was made.
    fn give_room(&mut self, spill: &mut dyn FnMut(Spill<'_>)) -> bool {
        let room = self.room();
        let Some(s) = self.string.as_ref() else {
            return false;
        };
        let kept = self.out.len() - s.out_start;
        // Room a text other than a mirror leaves free, to be made up first.
        let deficit = if s.candidates == 0 {
            SLACK.saturating_sub(room)
        } else {
            0
        };
        let floor = kept.max(SHORT_STRING as usize);
        let lens = self.shrinkable(true, floor);
        let step = self.budget / FREE_SHARE;
        if freed(&lens, floor + step) >= step + deficit {
            let level = highest(floor + step, &lens, |y| freed(&lens, y) >= step + deficit);
            if let Some(level) = level {
                self.shrink_to(&lens, level, spill);
                return true;
            }
        }
        let Some(level) = highest(floor, &lens, |y| freed(&lens, y) + kept >= y + deficit) else {
            return false;
        };
        if level <= kept {
            return false;
        }
        self.shrink_to(&lens, level, spill);
        if let Some(s) = self.string.as_mut() {
            s.cap = Some(s.cap.map_or(level, |cap| cap.min(level)));
        }
        true
    }

    /// Cuts the current text at `limit` bytes (less a partial character or
    /// escape); `piece` is the rest of what was read of it. The texts it
    /// mirrors are cut to the same prefix, even where they were kept longer
    /// (or whole) because they came first.
    fn cut_text(&mut self, limit: usize, piece: &[u8], spill: &mut dyn FnMut(Spill<'_>)) {
        let Some(s) = self.string.as_mut() else {
            return;
        };
        let start = s.out_start;
        // What was read of it is what was written and `piece`: copied
        // before it is shortened, and reported after the mirrors it
        // shrinks (one value open at a time).
        let head =
            (self.linking && self.spilled.len() < MAX_LINKS).then(|| self.out[start..].to_vec());
        let boundary = unit_boundary(&self.out[start..], limit);
        self.out.truncate(start + boundary);
        s.cut = true;
        let candidates = s.candidates;
        let plan: Vec<(usize, usize)> = (0..self.texts.len())
            .filter(|bit| candidates & (1 << bit) != 0)
            .map(|bit| (bit, boundary))
            .collect();
        self.shrink(&plan, true, spill);
        if let Some(head) = head {
            self.spill_cut(SpillKind::Text, &head, piece, spill);
        }
    }

    /// The current string is cut, `head` of it read before `piece`: with
    /// links, reports it from its first byte.
    fn spill_cut(
        &mut self,
        kind: SpillKind,
        head: &[u8],
        piece: &[u8],
        spill: &mut dyn FnMut(Spill<'_>),
    ) {
        let Some(s) = self.string.as_ref() else {
            return;
        };
        let segment = s.segment.clone();
        let pointer = self.pointer(&segment);
        let Some(value) = self.spill_start(kind, pointer, spill) else {
            return;
        };
        spill(Spill::Raw { value, bytes: head });
        spill(Spill::Raw {
            value,
            bytes: piece,
        });
        if let Some(s) = self.string.as_mut() {
            s.spill = Some(value);
        }
    }

    /// Numbers a value to report, if links are on and there is room for
    /// its link, and reports its start.
    fn spill_start(
        &mut self,
        kind: SpillKind,
        pointer: Vec<u8>,
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Option<u32> {
        if !self.linking || self.spilled.len() >= MAX_LINKS {
            return None;
        }
        let value = self.spilled.len() as u32;
        let block = self.stack.iter().rposition(|l| l.role == Role::Block);
        let mime = match kind {
            SpillKind::Text => "text/plain",
            SpillKind::Binary => "application/octet-stream",
        };
        self.spilled.push((
            Spilled {
                value,
                kind,
                pointer: String::from_utf8_lossy(&pointer).into_owned(),
                mime: String::from(mime),
                complete: false,
            },
            block,
        ));
        spill(Spill::Start { value, kind });
        Some(value)
    }

    /// Cuts tracked texts in place, each `(index, len)` of `plan` to its
    /// first `len` bytes: exactly (`len` is a boundary of the same bytes,
    /// where a mirror of it was cut), or else less a partial character or
    /// escape. What follows each moves back, in one pass over the output,
    /// and every position kept in the output moves with it.
    fn shrink(&mut self, plan: &[(usize, usize)], exact: bool, spill: &mut dyn FnMut(Spill<'_>)) {
        // (start, old length, new length, index), in output order.
        let mut cuts: Vec<(usize, usize, usize, usize)> = Vec::new();
        for &(index, len) in plan {
            let m = &self.texts[index];
            if len >= m.len || m.dead || m.start + m.len > self.out.len() {
                continue;
            }
            let new = if exact {
                len
            } else {
                unit_boundary(&self.out[m.start..m.start + m.len], len)
            };
            cuts.push((m.start, m.len, new, index));
        }
        if cuts.is_empty() {
            return;
        }
        cuts.sort_unstable();
        cuts.dedup_by_key(|cut| cut.3);
        // Kept whole until now, it is whole in the output: reported before
        // it is shortened, it is kept in full too.
        for &(start, old, _, index) in &cuts {
            if !self.texts[index].whole || self.texts[index].spilled {
                continue;
            }
            let pointer = self.texts[index].pointer.clone();
            if let Some(value) = self.spill_start(SpillKind::Text, pointer, spill) {
                spill(Spill::Raw {
                    value,
                    bytes: &self.out[start..start + old],
                });
                spill(Spill::End { value });
                self.spilled[value as usize].0.complete = true;
                // Its block (if any) is closed: its media type stays.
                self.spilled[value as usize].1 = None;
                self.texts[index].spilled = true;
            }
        }
        // The bytes kept between the cuts move back, each once.
        let mut write = cuts[0].0 + cuts[0].2;
        for pair in cuts.windows(2) {
            let (from, to) = (pair[0].0 + pair[0].1, pair[1].0 + pair[1].2);
            self.out.copy_within(from..to, write);
            write += to - from;
        }
        let last = cuts[cuts.len() - 1];
        let from = last.0 + last.1;
        let end = self.out.len();
        self.out.copy_within(from..end, write);
        self.out.truncate(write + end - from);
        // A position past a cut moves back by what was cut before it.
        let moved = |at: &mut usize| {
            let back: usize = cuts
                .iter()
                .take_while(|cut| cut.0 + cut.1 <= *at)
                .map(|cut| cut.1 - cut.2)
                .sum();
            *at -= back;
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
        for m in &mut self.texts {
            moved(&mut m.start);
        }
        for &(_, _, len, index) in &cuts {
            let m = &mut self.texts[index];
            m.len = len;
            let (pointer, original, cut) = (m.pointer.clone(), m.original, m.cut);
            match cut {
                Some(at) => self.cuts[at].kept = len as u64,
                None if m.whole => {
                    m.whole = false;
                    let at = self.record(pointer, len as u64, original);
                    self.texts[index].cut = at;
                }
                None => {}
            }
        }
    }

    fn end_string(&mut self, spill: &mut dyn FnMut(Spill<'_>)) -> Result<(), CondenseError> {
        self.mode = Mode::After;
        let Some(s) = self.string.take() else {
            return Ok(());
        };
        if let Some(value) = s.spill {
            spill(Spill::End { value });
            if let Some((spilled, _)) = self.spilled.get_mut(value as usize) {
                spilled.complete = true;
            }
        }
        if s.capture != Capture::None
            && let Some(block) = self.stack.iter_mut().rev().find(|l| l.role == Role::Block)
        {
            // A value longer than what was captured is not known: a
            // media type cut short must not be reported as one.
            let whole = s.len as usize <= s.captured.len();
            if s.capture == Capture::BlockType {
                block.block_type = s.captured;
            } else if !whole {
                block.block_mime = Vec::new();
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
        // The texts it mirrors, cut alike: shrunk to one level, they stay
        // alike, but only if both are tracked.
        let twins = (0..self.texts.len())
            .filter(|&bit| {
                s.candidates & (1 << bit) != 0 && (s.cut || self.texts[bit].len == kept_len)
            })
            .fold(0u64, |bits, bit| bits | 1 << bit);
        // Tracked: a cut text (it may give room later), and a long text a
        // later string may mirror (these in at most half the places, so
        // that many whole texts leave places for cut ones).
        let candidate =
            s.side.is_some() && s.len > SHORT_STRING && self.texts.len() < MAX_TRACKED / 2;
        let tracked = (s.cut || candidate) && self.texts.len() < MAX_TRACKED;
        let mut fixed = false;
        for (bit, m) in self.texts.iter_mut().enumerate() {
            if twins & (1 << bit) != 0 {
                // A twin not tracked, or one that may not be shrunk: neither
                // is shrunk.
                m.fixed |= !tracked;
                fixed |= m.fixed;
            }
        }
        if tracked {
            self.texts.push(Tracked {
                start: s.out_start,
                len: kept_len,
                side: s.side,
                whole: !s.cut,
                fixed,
                cut,
                pointer,
                original: s.len,
                spilled: s.spill.is_some(),
                dead: false,
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

/// Where the string, at raw offset `at`, stops mirroring one of
/// `candidates`, checking the bytes of `probe` that come next: the offset in
/// `probe` of the first byte that drops one, and the candidates left after
/// it; `None` if all of them still match. A candidate kept whole is dropped
/// by a byte that differs or by one past its end; a cut one only by a byte
/// that differs from what it kept.
fn first_change(
    texts: &[Tracked],
    out: &[u8],
    candidates: u64,
    at: usize,
    probe: &[u8],
) -> Option<(usize, u64)> {
    let mut first = usize::MAX;
    let mut dropped = 0u64;
    for (bit, m) in texts.iter().enumerate() {
        if candidates & (1 << bit) == 0 {
            continue;
        }
        let compared = probe.len().min(m.len.saturating_sub(at));
        let theirs = out.get(m.start + at..m.start + at + compared);
        let drop_at = match theirs {
            _ if m.dead || (m.whole && at > m.len) => Some(0),
            None => Some(0),
            Some(theirs) if theirs != &probe[..compared] => {
                theirs.iter().zip(probe).position(|(a, b)| a != b)
            }
            Some(_) if m.whole && probe.len() > compared => Some(compared),
            Some(_) => None,
        };
        if let Some(drop_at) = drop_at {
            if drop_at < first {
                first = drop_at;
                dropped = 0;
            }
            if drop_at == first {
                dropped |= 1 << bit;
            }
        }
    }
    (first != usize::MAX).then_some((first, candidates & !dropped))
}

/// Bytes freed by cutting each of `lens` longer than `level` to `level`.
fn freed(lens: &[(usize, usize)], level: usize) -> usize {
    lens.iter().map(|&(_, len)| len.saturating_sub(level)).sum()
}

/// The highest level from `lo` up at which `enough` holds, if it holds at
/// `lo`; `enough` holds at every level below one where it holds (it asks
/// whether texts cut to the level free enough), and fails above the
/// longest of `lens`, where nothing is freed.
fn highest(lo: usize, lens: &[(usize, usize)], enough: impl Fn(usize) -> bool) -> Option<usize> {
    if !enough(lo) {
        return None;
    }
    let top = lens.iter().map(|&(_, len)| len).max().unwrap_or(lo).max(lo);
    let (mut good, mut bad) = (lo, top + 1);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if enough(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// The longest kept prefix among the candidates.
fn longest(mirrors: &[Tracked], candidates: u64) -> Option<usize> {
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
///
/// The units are read from a unit start found near `limit` (see
/// `unit_start_near`), not from the start of `s`: shrinking a text step by
/// step then costs each step the bytes near its cut, not its length.
fn unit_boundary(s: &[u8], limit: usize) -> usize {
    let end = limit.min(s.len());
    units_within(s, unit_start_near(s, end), limit)
}

/// A position `<= end` where a unit of `s` starts (reading its units from
/// the start), found from the bytes just before `end`. Past the last
/// backslash before `end` there are only characters; that backslash ends a
/// run of them that starts a unit (a backslash inside an escape is the
/// second of `\\`, so it is never first in its run), unless the run is
/// the low half of a pair whose high half comes just before: the unit
/// starts there, if that high half plainly starts one, else (rare) at 0.
fn unit_start_near(s: &[u8], end: usize) -> usize {
    let Some(last) = memchr::memrchr(b'\\', &s[..end]) else {
        // Only characters: back to the start of the one at `end`.
        let mut at = end;
        while at > 0 && at < s.len() && s[at] & 0xC0 == 0x80 {
            at -= 1;
        }
        return at;
    };
    let mut run = last;
    while run > 0 && s[run - 1] == b'\\' {
        run -= 1;
    }
    let high = run >= 6
        && s[run - 6] == b'\\'
        && s[run - 5] == b'u'
        && core::str::from_utf8(&s[run - 4..run])
            .ok()
            .and_then(|h| u16::from_str_radix(h, 16).ok())
            .is_some_and(|h| (0xD800..=0xDBFF).contains(&h));
    match high {
        false => run,
        true if run >= 7 && s[run - 7] == b'\\' => 0,
        true => run - 6,
    }
}

/// [`unit_boundary`], reading the units of `s` from `at`, a unit start.
fn units_within(s: &[u8], mut at: usize, limit: usize) -> usize {
    while at < s.len() {
        let unit = match s[at] {
            b'\\' => match s.get(at + 1) {
                Some(b'u') => {
                    let high = s
                        .get(at + 2..at + 6)
                        .and_then(|h| core::str::from_utf8(h).ok())
                        .and_then(|h| u16::from_str_radix(h, 16).ok());
                    // A high surrogate followed by what may start a low
                    // one's escape, not all in `s`, counts as a pair: cut
                    // before it, never between.
                    let next = &s[(at + 6).min(s.len())..(at + 12).min(s.len())];
                    let pair = matches!(high, Some(0xD800..=0xDBFF))
                        && if next.len() < 6 {
                            b"\\u".iter().zip(next).all(|(a, b)| a == b)
                        } else {
                            next.starts_with(b"\\u")
                                && core::str::from_utf8(&next[2..])
                                    .ok()
                                    .and_then(|h| u16::from_str_radix(h, 16).ok())
                                    .is_some_and(|low| (0xDC00..=0xDFFF).contains(&low))
                        };
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
    fn fill_slots(&mut self) -> Option<Links> {
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
        let at = self.notice_slot?;
        let comma = self.out[at] == b',';
        let mut body = Vec::with_capacity(NOTICE_SLOT);
        let _ = write!(
            Digits(&mut body),
            "[drainpipe] This result was cut to {kept} bytes to fit a budget of {} (it was {} bytes): {} value(s) cut, each keeping its beginning",
            self.budget,
            self.fed,
            self.cut_count
        );
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
            if NOTICE_HEAD.len() + body.len() + item.len() + NOTICE_END.len() + 1 > NOTICE_SLOT {
                break;
            }
            body.extend_from_slice(&item);
        }
        let links = Links {
            at,
            len: self.notice_len,
            comma,
            notice: body,
            values: self.spilled.drain(..).map(|(spilled, _)| spilled).collect(),
        };
        links.fill(&mut self.out, "", |_| None);
        self.linking.then_some(links)
    }
}

/// The notice block's start, and its end when nothing is linked.
const NOTICE_HEAD: &[u8] = b"{\"type\":\"text\",\"text\":\"";
const NOTICE_END: &[u8] = b". Details: _meta io.drainpipe/truncated.\"}";

impl Links {
    /// The values reported for spilling, by number.
    pub fn values(&self) -> &[Spilled] {
        &self.values
    }

    /// Writes into `frame` (the one it came with) the notice and a
    /// `resource_link` block for each value `link` gives a place for; the
    /// notice then says they are linked, and `how` they are read (e.g.
    /// "read it with resources/read"; at most 100 bytes of plain ASCII, else
    /// left out). A value left without a link (or whose link does not fit)
    /// is still said to be cut. Returns how many links were written.
    /// Calling it again rewrites the room.
    pub fn fill<'u>(
        &self,
        frame: &mut [u8],
        how: &str,
        mut link: impl FnMut(&Spilled) -> Option<Link<'u>>,
    ) -> usize {
        let Some(room) = frame.get_mut(self.at..self.at + self.len) else {
            return 0;
        };
        let mut blocks = Vec::new();
        let mut linked = 0;
        for value in &self.values {
            let Some(place) = link(value) else {
                continue;
            };
            let Some(block) = link_block(value, &place) else {
                continue;
            };
            if NOTICE_SLOT + LINK_NOTICE + blocks.len() + block.len() > self.len {
                break;
            }
            blocks.extend_from_slice(&block);
            linked += 1;
        }
        let mut text = Vec::with_capacity(self.len);
        if self.comma {
            text.push(b',');
        }
        text.extend_from_slice(NOTICE_HEAD);
        text.extend_from_slice(&self.notice);
        if linked > 0 {
            let _ = write!(
                Digits(&mut text),
                ". The full value of {linked} of them is linked below (resource_link)"
            );
            let plain = how.len() <= 100
                && how
                    .bytes()
                    .all(|c| (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\');
            if plain && !how.is_empty() {
                text.extend_from_slice(b": ");
                text.extend_from_slice(how.as_bytes());
            }
        }
        text.extend_from_slice(NOTICE_END);
        text.extend_from_slice(&blocks);
        if text.len() > room.len() {
            return 0;
        }
        room[..text.len()].copy_from_slice(&text);
        room[text.len()..].fill(b' ');
        linked
    }
}

/// A `resource_link` block, with its leading comma; `None` if a field
/// cannot be written as it is.
fn link_block(value: &Spilled, place: &Link<'_>) -> Option<Vec<u8>> {
    let plain = |field: &str| {
        field.len() <= MAX_LINK_FIELD
            && field
                .bytes()
                .all(|c| (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\')
    };
    let name = match value.pointer.strip_prefix('/') {
        Some(name) if plain(name) && !name.is_empty() => String::from(name),
        _ => alloc::format!("value {}", value.value),
    };
    if !plain(place.uri) || !plain(&value.mime) {
        return None;
    }
    let mut block = Vec::with_capacity(LINK_ROOM);
    let _ = write!(
        Digits(&mut block),
        ",{{\"type\":\"resource_link\",\"uri\":\"{}\",\"name\":\"{name}\",\"mimeType\":\"{}\",\"size\":{}}}",
        place.uri,
        value.mime,
        place.size
    );
    (block.len() <= LINK_ROOM).then_some(block)
}

/// A block's `mimeType` as a link writes it, if it is a plain one.
fn media_type(raw: &[u8]) -> Option<String> {
    let plain = !raw.is_empty()
        && raw.len() <= MAX_LINK_FIELD
        && raw.iter().all(|&c| {
            c.is_ascii_alphanumeric() || matches!(c, b'/' | b'-' | b'+' | b'.' | b';' | b'=' | b' ')
        });
    plain.then(|| String::from_utf8_lossy(raw).into_owned())
}

#[cfg(test)]
mod tests {
    use super::{unit_boundary, units_within};
    use alloc::vec::Vec;

    /// The boundary found from a unit start near the limit is the one found
    /// by reading every unit from the start, for strings of escapes (pairs,
    /// lone halves, escaped backslashes before `u`), characters of every
    /// width and plain bytes, at every limit.
    #[test]
    fn a_boundary_found_near_the_limit_is_the_one_read_from_the_start() {
        const TOKENS: &[&str] = &[
            "a",
            "x",
            "u",
            "d83d",
            "é",
            "€",
            "😀",
            r"\n",
            r"\\",
            r#"\""#,
            r"\u00e9",
            r"\ud83d\ude00",
            r"\ud83d",
            r"\ude00",
            r"\\ud83d",
            r"\\\ud83d\ude00",
            r"\u0041",
        ];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..2_000 {
            let mut s = Vec::new();
            for _ in 0..next(24) {
                s.extend_from_slice(TOKENS[next(TOKENS.len())].as_bytes());
            }
            for limit in 0..=s.len() + 2 {
                assert_eq!(
                    unit_boundary(&s, limit),
                    units_within(&s, 0, limit),
                    "{:?} at {limit}",
                    core::str::from_utf8(&s)
                );
            }
        }
    }
}
