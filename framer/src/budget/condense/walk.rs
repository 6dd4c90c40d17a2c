//! Walking the response: the token-level state machine.
//!
//! `scan` takes the line in pieces split anywhere and walks its tokens:
//! keys, scalars, brackets and the whitespace between them (dropped). It
//! keeps the stack of open containers, what each is in a `tools/call`
//! response (its `Role`) and where the value read in it stands (its key or
//! index, from which a JSON Pointer is built when one is asked for),
//! and writes keys, scalars and brackets as bytes that cannot be cut
//! (`whole`, in `room.rs`). A string value is handed to `string.rs` at its
//! opening quote; a closing bracket places the slots that `record.rs` fills
//! in at the end, and writes a replaced block's text. Its one decision
//! about room is where an array is cut: an element is not started without
//! room for it (`ELEMENT_ROOM`, `STEAL_SHARE`).
//!
//! Separate because it is the one part that knows JSON's grammar; the other
//! stages see values, not the bytes between them.

use alloc::vec::Vec;
use core::fmt::Write as _;

use super::last::LastElements;
use super::leave_out::{ElementMark, may_cut};
use super::links::{ElementsStep, media_type};
use super::record::replacement_text;
use super::{
    CondenseError, Condenser, Digits, ELEMENT_ROOM, Keep, MARKER_SLOT, MAX_KEY, REPLACEMENT_ROOM,
    SHORT_STRING, SLACK, STEAL_SHARE, Spill, TAIL_ROOM,
};

/// Where the tokenizer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
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

/// Where a container stands in a `tools/call` response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
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
    pub(super) fn cuttable(self) -> bool {
        !matches!(self, Role::Top | Role::Outside | Role::Meta)
    }
}

/// One open object or array.
#[derive(Debug)]
pub(super) struct Level {
    pub(super) object: bool,
    pub(super) role: Role,
    /// Opened while muted (or its element was left out since): nothing of
    /// it is written, nothing reserved.
    pub(super) muted: bool,
    /// Elements (arrays) or members (objects) started so far.
    pub(super) index: u64,
    /// Elements or members written so far.
    pub(super) written: u64,
    /// The current member's key (objects), raw, at most `MAX_KEY` bytes.
    /// With `index`, where the value read now stands in this level: its
    /// JSON Pointer segment ([`Level::child_segment`]), unchanged while
    /// the value is open, so a pointer is built only when one is asked for.
    pub(super) key: Vec<u8>,
    pub(super) key_too_long: bool,
    /// Arrays: cut; the remaining elements are read but not written.
    pub(super) cut: bool,
    /// Arrays whose last elements are kept (`last.rs`): where the array
    /// starts in the output, and the bytes its first elements may take.
    pub(super) first_share: Option<(usize, usize)>,
    /// Arrays, and objects in `structuredContent`: where the element or
    /// member being written started, to leave it out whole (`leave_out.rs`).
    pub(super) element: Option<ElementMark>,
    /// It is inside an array (an element or in one): an object here is a
    /// record, whose members are never left out.
    pub(super) in_array: bool,
    /// Blocks: where the block starts in the output, and whether its
    /// binary value did not fit (the block is then replaced).
    pub(super) block_start: usize,
    pub(super) replace: bool,
    /// Blocks: the `type` and `mimeType` seen, and the size of the binary
    /// value left out, for the replacement's text.
    pub(super) block_type: Vec<u8>,
    pub(super) block_mime: Vec<u8>,
    pub(super) binary_len: u64,
    /// `result`: whether it has an object `_meta` (the marker goes there).
    has_meta: bool,
}

impl Level {
    /// Appends the JSON Pointer segment of the value read now in this
    /// level (its current member or element) to `pointer`; false, and
    /// nothing appended, when it cannot be listed: a key with an escape or
    /// a byte past ASCII, or longer than `MAX_KEY` (a pointer must be
    /// exact).
    fn child_segment(&self, pointer: &mut Vec<u8>) -> bool {
        if self.object {
            if self.key_too_long || self.key.iter().any(|&c| c == b'\\' || c >= 0x80) {
                return false;
            }
            pointer.push(b'/');
            for &c in &self.key {
                match c {
                    b'~' => pointer.extend_from_slice(b"~0"),
                    b'/' => pointer.extend_from_slice(b"~1"),
                    c => pointer.push(c),
                }
            }
        } else {
            pointer.push(b'/');
            let _ = write!(Digits(pointer), "{}", self.index.saturating_sub(1));
        }
        true
    }

    fn new(object: bool, role: Role, muted: bool) -> Level {
        Level {
            object,
            role,
            muted,
            index: 0,
            written: 0,
            key: Vec::new(),
            key_too_long: false,
            cut: false,
            first_share: None,
            element: None,
            in_array: false,
            block_start: 0,
            replace: false,
            block_type: Vec::new(),
            block_mime: Vec::new(),
            binary_len: 0,
            has_meta: false,
        }
    }

    /// A new level in this one's buffers (emptied), as [`Level::new`]
    /// makes it: a response opens a level for each of its objects and
    /// arrays, and each would otherwise allocate its key anew.
    fn renew(self, object: bool, role: Role, muted: bool) -> Level {
        let Level {
            mut key,
            mut block_type,
            mut block_mime,
            ..
        } = self;
        key.clear();
        block_type.clear();
        block_mime.clear();
        Level {
            key,
            block_type,
            block_mime,
            ..Level::new(object, role, muted)
        }
    }
}

impl Condenser {
    /// Whether what is read now is written: not inside a cut array, a
    /// replaced block or a value read only to be skipped.
    pub(super) fn muted(&self) -> bool {
        self.replacing || self.stack.last().is_some_and(|l| l.muted || l.cut)
    }

    pub(super) fn scan(
        &mut self,
        bytes: &[u8],
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Result<(), CondenseError> {
        let mut i = 0;
        // Where the unreported bytes of a cut array's rest start.
        let mut run = self.elements.map(|_| 0);
        // Where the bytes not yet read into the window of an array's last
        // elements start (`last.rs`).
        let mut last_from = 0;
        while i < bytes.len() {
            self.at = i;
            match self.mode {
                Mode::InString | Mode::InStringEscape => {
                    i = self.string_bytes(bytes, i, spill)?;
                }
                Mode::InKey => {
                    let rest = &bytes[i..];
                    let run = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
                    self.key_bytes(&rest[..run])?;
                    i += run;
                    // What follows is written from here.
                    self.at = i;
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
                    let reading_last = self.last.is_some();
                    if reading_last {
                        run = self.keep_last(bytes, last_from, i, run, spill);
                    }
                    self.step(bytes[i])?;
                    if self.left_out.is_some() {
                        run = self.report_left_out(spill);
                    }
                    if let Some(step) = self.elements_step.take() {
                        run = self.report_elements(step, bytes, i, run, spill);
                    }
                    // The window takes this byte with the next ones, but
                    // whitespace, and a window just opened starts here.
                    last_from = if reading_last && is_space(bytes[i]) {
                        i + 1
                    } else {
                        i
                    };
                    i += 1;
                    continue;
                }
            }
            // An element left out while a string, a key or a scalar was
            // read: its rest is reported from where the write began.
            if self.left_out.is_some() {
                run = self.report_left_out(spill);
            }
        }
        if self.last.is_some() {
            run = self.keep_last(bytes, last_from, bytes.len(), run, spill);
        }
        if let (Some(from), Some((value, _))) = (run, self.elements)
            && from < bytes.len()
        {
            spill(Spill::Raw {
                value,
                bytes: &bytes[from..],
            });
        }
        Ok(())
    }

    /// One byte between tokens.
    fn step(&mut self, b: u8) -> Result<(), CondenseError> {
        if is_space(b) {
            return Ok(());
        }
        match self.mode {
            Mode::Start if b == b'{' => self.open(true, Role::Top),
            Mode::ArrayFirst if b == b']' => self.close(),
            Mode::Value | Mode::ArrayFirst => self.start_value(b),
            Mode::KeyFirst if b == b'}' => self.close(),
            Mode::KeyFirst | Mode::Key if b == b'"' => {
                self.key.clear();
                self.key_too_long = false;
                if let Some(level) = self.stack.last_mut() {
                    level.index += 1;
                    if self.elements.is_some_and(|(_, at)| at == self.stack.len()) {
                        self.elements_step = Some(ElementsStep::Element);
                    }
                }
                if !self.muted() {
                    if let Some(level) = self.stack.last_mut() {
                        level.written += 1;
                    }
                    if self.stack.last().is_some_and(may_cut) {
                        self.mark_element();
                    }
                    if core::mem::take(&mut self.comma_pending) {
                        self.comma()?;
                    }
                    self.element_body_starts();
                    self.whole(b"\"")?;
                }
                self.comma_pending = false;
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

    /// The pointer (relative to `result`) of the value read now in the
    /// level on top of the stack, or empty when one of its keys cannot be
    /// listed.
    pub(super) fn pointer(&self) -> Vec<u8> {
        self.pointer_in(self.stack.len())
    }

    /// The pointer (relative to `result`) of the value read now in the
    /// level at `depth - 1`: of the level at `depth`, while it is open.
    /// Empty outside `result`, or when one of its keys cannot be listed.
    pub(super) fn pointer_in(&self, depth: usize) -> Vec<u8> {
        let Some(result) = self.stack.iter().position(|l| l.role == Role::Result) else {
            return Vec::new();
        };
        let mut pointer = Vec::new();
        for parent in self.stack.get(result..depth).unwrap_or(&[]) {
            if !parent.child_segment(&mut pointer) {
                return Vec::new();
            }
        }
        pointer
    }

    fn start_value(&mut self, b: u8) -> Result<(), CondenseError> {
        let mut muted = self.muted();
        // With too little room an array is cut, unless a cut text is long
        // enough to give room: the element's bytes then shrink it.
        let mut cut_here = !muted
            && self.stack.last().is_some_and(|l| {
                !l.object
                    && l.role.cuttable()
                    && self.room().saturating_sub(SLACK) < ELEMENT_ROOM
                    && self
                        .shrinkable(false, SHORT_STRING as usize)
                        .iter()
                        .all(|&(_, len)| len < self.budget / STEAL_SHARE)
            });
        // With links, one no link is left for is not cut: the outer
        // element it is in is left out whole, for that one's link.
        if cut_here && self.leave_out_unlinked_array() {
            muted = true;
            cut_here = false;
        }
        let depth = self.stack.len();
        // Under `Keep::Ends`, past its share (or out of room) an array reads
        // its elements into the window of its last ones.
        let out_len = self.out.len();
        let to_last = !muted
            && self.stack.last().is_some_and(|l| {
                l.first_share.is_some_and(|(start, share)| {
                    cut_here || (l.index >= 1 && out_len - start >= share)
                })
            });
        if to_last {
            // The array's own pointer: it is the value read now one level up.
            let pointer = self.pointer_in(depth - 1);
            let limit = self.room().saturating_sub(SLACK);
            if let Some(level) = self.stack.last_mut() {
                level.index += 1;
                level.cut = true;
                self.inner_cuts += 1;
                self.last = Some(LastElements::new(depth, pointer, level.index - 1, limit));
            }
        } else if let Some(level) = self.stack.last_mut()
            && !level.object
        {
            level.index += 1;
            if self.last.as_ref().is_some_and(|l| l.depth == depth) {
                self.last.as_mut().map(LastElements::element);
            }
            if cut_here {
                level.cut = true;
                self.inner_cuts += 1;
                let first = level.index - 1;
                self.begin_elements(first);
            } else if self.elements.is_some_and(|(_, at)| at == depth) {
                self.elements_step = Some(ElementsStep::Element);
            }
        }
        let comma = core::mem::take(&mut self.comma_pending);
        let muted = self.muted();
        // (An object's members are counted and marked at their keys.)
        if !muted
            && let Some(level) = self.stack.last_mut()
            && !level.object
        {
            level.written += 1;
            if level.role.cuttable() {
                self.mark_element();
            }
            if comma {
                self.comma()?;
            }
            self.element_body_starts();
        }
        match b {
            b'{' | b'[' => {
                let object = b == b'{';
                let role = self.child_role(object);
                self.open(object, role)
            }
            b'"' => self.start_string(),
            _ => {
                self.whole(&[b])?;
                self.mode = Mode::Scalar;
                Ok(())
            }
        }
    }

    /// Writes a comma read before an element or member.
    fn comma(&mut self) -> Result<(), CondenseError> {
        // An element left out while it is written holds it, unless it is
        // the one before that element (which then has no bytes yet).
        self.unwritten_comma = true;
        let written = self.whole(b",");
        self.unwritten_comma = false;
        written
    }

    fn open(&mut self, object: bool, role: Role) -> Result<(), CondenseError> {
        if !self.muted() {
            self.whole(if object { b"{" } else { b"[" })?;
        }
        // Writing it may have left out the element it starts.
        let muted = self.muted();
        let mut level = match self.spare.pop() {
            Some(closed) => closed.renew(object, role, muted),
            None => Level::new(object, role, muted),
        };
        level.in_array = self.stack.last().is_some_and(|p| !p.object || p.in_array);
        if !muted {
            self.reserve += 1;
            if role == Role::Block {
                level.block_start = self.out.len() - 1;
                self.reserve += REPLACEMENT_ROOM;
            }
            if !object && self.keep == Keep::Ends && matches!(role, Role::Structured | Role::Plain)
            {
                let share = self.room().saturating_sub(SLACK) / 2;
                level.first_share = Some((self.out.len(), share));
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
        let closed = self.closed(&level);
        // Its buffers serve the next level opened.
        self.spare.push(level);
        closed
    }

    /// Ends `level`, just popped: its closing bracket, and what it
    /// reserved, cut or left to fill in.
    fn closed(&mut self, level: &Level) -> Result<(), CondenseError> {
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
                    let text = replacement_text(level, self.budget);
                    self.out.extend_from_slice(&text);
                    self.reserve -= 1;
                    return Ok(());
                }
            }
            _ => {}
        }
        if level.cut {
            let first = level.written;
            let mut written = level.written;
            let mut cut = true;
            if let Some(last) = self.last.take_if(|l| l.depth == self.stack.len() + 1) {
                let (bytes, count) = last.finish(level.written > 0);
                self.whole(&bytes)?;
                written += count;
                cut = last.cut;
            }
            if cut {
                // (Popped: it is the value read now in its parent.)
                let pointer = self.pointer();
                self.record_items(pointer, first, written, level.index, level.object);
                self.end_elements();
            }
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
}

/// JSON's whitespace between tokens.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}
