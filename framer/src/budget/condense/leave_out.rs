//! Leaving an array's element out whole, rather than cutting it into a
//! fragment.
//!
//! A list of small items (the Python SDK writes a tool's `list` as one text
//! block per item, each its pretty-printed JSON, and the whole list again
//! in `structuredContent.result`) loses its meaning item by item when an
//! item is cut: `{"path": "src/a.rs", "line": 3, "text": "` tells an agent
//! nothing. So when the element being written of an array in `result`
//! cannot be finished in the room left (bytes that cannot be cut do not
//! fit, a short text runs out of room, or a text would be cut with no link
//! left for it), the element is taken back out of the output, the array is
//! cut in front of it, and with links its rest is reported from that
//! element on, one element a line, as for an array cut where an element
//! was not started: what was written of the element first (from the
//! output, whitespace between tokens already dropped), then the rest of it
//! and the elements after it as they are read (`scan`, from `at`).
//!
//! The element taken out is the one of the innermost array whose element
//! holds nothing cut or reported yet (so nothing said of it elsewhere must
//! be taken back): of a list of groups of hits, the hit, not the group, so
//! that the room the group's first hits take is still spent. Objects in
//! `structuredContent` have their members left out the same way (a `dict`
//! a tool returns), when no array's element can be: of those, the one with
//! the most members so far, the collection rather than a record in it (of
//! a dict of hits, a hit, never a hit's `path`). An element that holds a
//! cut text, a cut array or a reported value is not taken out; its text is
//! then cut as before.
//!
//! Links are kept for the arrays: a string is reported for spilling only
//! while a link is left for every array still open that may be cut, and
//! two more for arrays to come (`link_free`), so that the rest of each
//! array, the one value that carries most of what is left out, has its
//! link. An array opened when every link left is kept for those outside
//! it has none: when it would be cut, or an element of it left out, the
//! element of an outer one that has a link is left out instead, this
//! array in it (`rest_linked`).
//!
//! Separate because it undoes what the other stages wrote: the output, the
//! room kept back for the element's open containers and string, the texts
//! tracked in it.

use alloc::vec::Vec;

use super::walk::{Level, Role};
use super::{Condenser, MAX_LINKS, REPLACEMENT_ROOM, Spill, SpillKind};

/// Links kept, besides one for each array open, for the rests of arrays
/// (and objects) not open yet: `structuredContent` comes after `content`,
/// and its arrays after the texts of `content` were cut. A text with no
/// link left for it is not cut where its element can be left out.
const LATER_RESTS: usize = 2;

/// A text shorter than this fraction (1/n) of the budget is short: cut, it
/// would lose its meaning, so the element that holds it is left out whole
/// instead, and it is never shrunk to give room to later values.
pub(super) const SHORT_SHARE: usize = 16;

/// Where the element being written of an array started, to take it back.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ElementMark {
    /// Output position before its separating comma.
    start: usize,
    /// Output position after the comma: where its own bytes start; `None`
    /// while the comma is being written.
    body: Option<usize>,
    /// Texts tracked and cuts made before it started. (A value reported
    /// from inside it was cut there, or was a text tracked in it and
    /// shrunk: both seen by these. Values reported since that lie before
    /// it, texts shrunk to give it room, do not keep it in.)
    texts: usize,
    cuts: u64,
}

impl ElementMark {
    /// Moves its output positions with a shrink before them.
    pub(super) fn moved(&mut self, moved: &impl Fn(&mut usize)) {
        moved(&mut self.start);
        if let Some(body) = self.body.as_mut() {
            moved(body);
        }
    }
}

/// What was written of an element taken out, until `scan` reports it.
#[derive(Debug, Default)]
pub(super) struct LeftOut {
    /// Its bytes (a comma written for it but not yet in the output
    /// included).
    bytes: Vec<u8>,
    /// Where the input not yet reported starts, in the piece being read.
    from: usize,
}

impl Condenser {
    /// An element of the array on top of the stack starts now (before its
    /// separating comma is written).
    pub(super) fn mark_element(&mut self) {
        let mark = ElementMark {
            start: self.out.len(),
            body: None,
            texts: self.texts.len(),
            cuts: self.inner_cuts,
        };
        if let Some(level) = self.stack.last_mut() {
            level.element = Some(mark);
        }
    }

    /// The separating comma of the element just marked is written.
    pub(super) fn element_body_starts(&mut self) {
        let at = self.out.len();
        if let Some(mark) = self.stack.last_mut().and_then(|l| l.element.as_mut()) {
            mark.body = Some(at);
        }
    }

    /// Whether a string (a text or a binary value) may be reported for
    /// spilling now: links are on, and one is left besides those kept for
    /// the arrays still open that may be cut and `LATER_RESTS` more.
    pub(super) fn link_free(&self) -> bool {
        self.links_left() > LATER_RESTS
    }

    /// Whether the rest of an array (or an object) just cut may be
    /// reported: a link is left besides those kept for the others open.
    pub(super) fn rest_link_free(&self) -> bool {
        self.links_left() > 0
    }

    /// Links left, besides those kept for the arrays (and objects) still
    /// open that may be cut.
    fn links_left(&self) -> usize {
        let open = self.stack.iter().filter(|l| may_cut(l)).count();
        match self.linking {
            true => MAX_LINKS.saturating_sub(self.spilled.len() + open),
            false => 0,
        }
    }

    /// Takes the element being written of the innermost array whose element
    /// holds nothing cut (or a member of an object: see the module docs)
    /// back out of the output, and cuts its container in front of it.
    /// Returns whether it did; if not, nothing changed.
    pub(super) fn leave_out_element(&mut self) -> bool {
        // One whose rest has a link; else (nothing linked can be) any.
        self.leave_out(true) || self.leave_out(false)
    }

    /// The array on top of the stack is to be cut where an element starts,
    /// and, with links, no link is left for its rest: the element of an
    /// outer array (or a member of an object) that has one is left out
    /// instead, the cut array in it. Returns whether it was; if not,
    /// nothing changed.
    pub(super) fn leave_out_unlinked_array(&mut self) -> bool {
        let Some(top) = self.stack.len().checked_sub(1) else {
            return false;
        };
        if !self.linking || self.rest_linked(top) || !self.leave_out(true) {
            return false;
        }
        // A comma read for the element starting now is in the rest.
        if self.comma_pending
            && let Some(left) = self.left_out.as_mut()
        {
            left.bytes.push(b',');
        }
        true
    }

    /// [`Self::leave_out_element`], with `linked`: only of a container
    /// whose rest would have a link.
    fn leave_out(&mut self, linked: bool) -> bool {
        if self.replacing || self.left_out.is_some() {
            return false;
        }
        let fits =
            |d: usize| self.can_leave_out(d) && (!linked || !self.linking || self.rest_linked(d));
        let candidates = || (0..self.stack.len()).filter(|&d| fits(d));
        // The innermost array's element; else, of the objects, the one with
        // the most members (the collection, not a record in it).
        let array = candidates().rev().find(|&d| !self.stack[d].object);
        let object = || candidates().rev().max_by_key(|&d| self.stack[d].index);
        let Some(depth) = array.or_else(object) else {
            return false;
        };
        let Some(mark) = self.stack[depth].element else {
            return false;
        };
        let mut bytes = match mark.body {
            Some(body) => self.out[body..].to_vec(),
            None => Vec::new(),
        };
        if mark.body.is_some() && self.unwritten_comma {
            bytes.push(b',');
        }
        // What the element's open containers and string kept back.
        for level in &mut self.stack[depth + 1..] {
            if !level.muted {
                level.muted = true;
                self.reserve -= 1;
                if level.role == Role::Block {
                    self.reserve -= REPLACEMENT_ROOM;
                }
            }
        }
        if let Some(s) = self.string.as_mut()
            && s.mute()
        {
            self.reserve -= 1;
        }
        self.out.truncate(mark.start);
        self.texts.truncate(mark.texts);
        self.inner_cuts += 1;
        let array = &mut self.stack[depth];
        array.cut = true;
        array.first_share = None;
        array.written -= 1;
        array.element = None;
        let first = array.index - 1;
        let kind = match array.object {
            true => SpillKind::Members { first },
            false => SpillKind::Elements { first },
        };
        let pointer = self.pointer_in(depth);
        if let Some(value) = self.number_spilled(kind, pointer) {
            self.elements = Some((value, depth + 1));
            self.left_out = Some(LeftOut {
                bytes,
                from: self.at,
            });
        }
        true
    }

    /// Whether the container at `depth`, cut now (those in it left out
    /// with its element), would have a link for its rest: the links given
    /// and those kept for the containers outside it that may be cut leave
    /// one. One opened when none was left has none: links are kept for the
    /// open ones outermost first, so cutting it would lose its rest.
    fn rest_linked(&self, depth: usize) -> bool {
        let outer = self.stack[..depth].iter().filter(|l| may_cut(l)).count();
        self.spilled.len() + outer < MAX_LINKS
    }

    /// Whether the element being written of the array at `depth` can be
    /// taken out: nothing in it is cut, reported or held in a window.
    fn can_leave_out(&self, depth: usize) -> bool {
        let level = &self.stack[depth];
        let Some(mark) = level.element else {
            return false;
        };
        may_cut(level)
            && level.index > 0
            && mark.cuts == self.inner_cuts
            && self
                .texts
                .get(mark.texts..)
                .is_some_and(|texts| texts.iter().all(|m| m.whole && !m.dead))
            && self.last.as_ref().is_none_or(|l| l.depth <= depth + 1)
    }

    /// Reports an element just taken out, with links: the start of its
    /// array's rest and what was written of it. Returns where the input
    /// not yet reported starts (for `scan`).
    pub(super) fn report_left_out(&mut self, spill: &mut dyn FnMut(Spill<'_>)) -> Option<usize> {
        let left = self.left_out.take()?;
        let value = self.open_rest(spill)?;
        spill(Spill::Raw {
            value,
            bytes: &left.bytes,
        });
        Some(left.from)
    }
}

/// Whether `level` is written and not cut yet, and is an array in
/// `result` or an object in `structuredContent` outside any array (a
/// `dict` a tool returns, not a record in a list): one whose items may be
/// left out, and which keeps a link for its rest.
pub(super) fn may_cut(level: &Level) -> bool {
    let role = match level.object {
        true => matches!(level.role, Role::Structured) && !level.in_array,
        false => level.role.cuttable(),
    };
    role && !level.muted && !level.cut
}
