//! Condensing a response on the wire: a `tools/call` response of any size
//! becomes a valid, honest response within a byte budget, written while it
//! streams past, without ever holding the original.
//!
//! Every member is copied byte for byte (whitespace between tokens dropped),
//! except inside `result`:
//!
//! - a long string value is cut at a character and escape boundary (its
//!   head kept, so the decoded kept text is a prefix of the original; or,
//!   with [`Condenser::keeping`], its head and its end, or its end, around
//!   a mark that says how many bytes were left out there and from which
//!   byte: see `ends`);
//! - a long array is cut to a prefix of its elements (under
//!   [`Keep::Ends`], an array outside `content` to its first and its last
//!   elements, the middle left out: see `last`);
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
//! ([`Links::fill`]). A cut array is reported too, from the first element
//! it left out to its end ([`SpillKind::Elements`]), so no element is gone:
//! the ones before are in the result, the rest in the spilled value.
//!
//! The input is assumed to be the valid JSON the framer checks on the same
//! bytes; on anything else the condenser returns an error or output to be
//! thrown away, never panics, and stays within its bounds.
//!
//! # Stages
//!
//! The code reads as walking the response, planning the cuts and writing
//! them, one file a stage:
//!
//! - `walk`: the token-level state machine: the open containers, their
//!   roles and pointers, the bytes between values.
//! - `string`: one string value: its policy, its bytes, its end.
//! - `cut`: where a text is cut: its limit, its mirrors, a character and
//!   escape boundary.
//! - `room`: the room left, and taking it back from the texts written.
//! - `record`: what was cut, said in the marker, the notice and the block
//!   that replaces a binary value left out.
//! - `links`: reporting cut values for spilling, and linking them.
//! - `ends`: keeping the end of a cut text too, rewritten in its room at
//!   the end of the line.

mod cut;
mod ends;
mod ladder;
mod last;
mod leave_out;
mod links;
mod record;
mod room;
mod string;
mod walk;

#[cfg(test)]
mod tests;

pub use ends::Keep;
pub use ladder::{Candidate, Ended, Ladder};

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use last::LastElements;
use leave_out::LeftOut;
use links::ElementsStep;
use record::Cut;
use room::Tracked;
use string::Str;
use walk::{Level, Mode};

/// The marker's key in `result._meta`.
pub const MARKER_KEY: &str = "io.drainpipe/truncated";

/// Bytes kept back for the notice block appended to `content` (`,`
/// included), written at the end: the notice always fits. Its list of cuts
/// stops where the slot ends.
const NOTICE_SLOT: usize = 640;
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
/// Bytes kept back, with links, for what [`Links::fill`] adds to the
/// notice's text: where each array's rest is, and a sentence about the
/// links. The most it adds.
pub const LINK_NOTICE: usize = 320;
/// Bytes kept back, with links, for the links and their sentence, in the
/// notice's slot.
const LINKS_SLOT: usize = LINK_NOTICE + MAX_LINKS * LINK_ROOM;
/// The longest URI, name or media type, in bytes, a link is written with
/// (so that a link fits `LINK_ROOM`).
const MAX_LINK_FIELD: usize = 96;

/// Bytes a condenser may need beyond a line's own length to write it
/// whole: the slots it writes (the notice, with the room for links, and the
/// marker), what it keeps back while reading (the tail, a block's
/// replacement; a closing bracket or quote is the line's own byte), and the
/// room a text (`SLACK`) and an array element (`ELEMENT_ROOM`) leave free. A
/// line at least this much shorter than the budget is never cut, so a
/// [`Ladder`] does not feed it to such a rung (see `ladder.rs`).
pub const WHOLE_ROOM: usize =
    NOTICE_SLOT + LINKS_SLOT + MARKER_SLOT + TAIL_ROOM + REPLACEMENT_ROOM + SLACK + ELEMENT_ROOM;

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
    /// The budget's unit cannot be counted by this build (tokens without
    /// the host's `tokens` feature).
    UnitUnavailable,
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
            CondenseError::UnitUnavailable => {
                f.write_str("this build cannot count tokens (built without the `tokens` feature)")
            }
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
    /// The elements of a cut array from `first` (numbered from 0) to its
    /// end, left out of the result: its raw bytes are a JSON array of them,
    /// one element a line (`[`, newline, each element as written, its
    /// comma, newline, …, `]`), so they can be searched line by line.
    Elements {
        /// The number of the first element it holds: the elements before
        /// it were kept in the result.
        first: u64,
    },
    /// The members of a cut object in `structuredContent` from `first`
    /// (numbered from 0, in the order written) to its end, left out of the
    /// result: its raw bytes are a JSON object of them, one member a line
    /// (`{`, newline, each `"key":value` as written, its comma, newline,
    /// …, `}`). A `dict` a tool returns, too large to keep whole.
    Members {
        /// The number of the first member it holds: the members before it
        /// were kept in the result.
        first: u64,
    },
}

impl SpillKind {
    /// The first element or member of a cut array's or object's rest.
    pub fn first(self) -> Option<u64> {
        match self {
            SpillKind::Elements { first } | SpillKind::Members { first } => Some(first),
            _ => None,
        }
    }
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
    /// The notice's first sentence, up to its list of cuts.
    head: Vec<u8>,
    /// The cuts it lists, arrays first.
    listed: Vec<Cut>,
    values: Vec<Spilled>,
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
    /// Levels closed, kept for their buffers (at most the deepest the
    /// stack has been).
    spare: Vec<Level>,
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
    /// What a cut text keeps ([`Condenser::keeping`]).
    keep: Keep,
    /// Cut values are reported and linked ([`Condenser::with_links`]).
    linking: bool,
    /// The cut array whose remaining elements are being reported: its
    /// value number and its depth (the stack's length while it is open).
    elements: Option<(u32, usize)>,
    /// What the last byte between tokens did to that report (read by
    /// `scan`, which holds the input and the callback).
    elements_step: Option<ElementsStep>,
    /// The array whose last elements are being read, under `Keep::Ends`
    /// (`last.rs`).
    last: Option<LastElements>,
    /// The values reported, and for each the depth of the content block
    /// it is in (its media type is known when the block closes).
    spilled: Vec<(Spilled, Option<usize>)>,
    /// Where the notice (and with links, the link room) starts, and its
    /// length.
    notice_len: usize,
    /// The budget the notice names, when it is not this byte budget (a
    /// [`Ladder`]'s rung names the budget in characters or tokens).
    stated: Option<super::Clip>,
    /// Where in the piece being read the write under way started: an
    /// element left out then is reported from there (`leave_out.rs`).
    at: usize,
    /// An element just left out, until `scan` reports it.
    left_out: Option<LeftOut>,
    /// A comma read before a member or element is being written.
    unwritten_comma: bool,
    /// Cuts made where the walk stands (not shrinks of earlier texts): an
    /// element that holds one is not left out.
    inner_cuts: u64,
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
            spare: Vec::new(),
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
            keep: Keep::Head,
            linking: false,
            elements: None,
            elements_step: None,
            last: None,
            spilled: Vec::new(),
            notice_len: NOTICE_SLOT,
            stated: None,
            at: 0,
            left_out: None,
            unwritten_comma: false,
            inner_cuts: 0,
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
        self.keep_ends();
        let links = self.fill_slots();
        debug_assert!(self.out.len() <= self.budget);
        Ok(Condensed::Cut {
            frame: self.out,
            original_bytes: self.fed,
            cuts: self.cut_count,
            links,
        })
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
