//! What was cut, said in the output.
//!
//! Each cut is counted, and listed up to `MAX_LISTED_CUTS`, as it is made
//! (`record`). At the end the marker in `result._meta` and the notice block
//! in `content` are written into the slots kept back for them
//! (`fill_slots`). A content block whose binary value does not fit is
//! replaced by a text block that says so (`replacement_text`).
//!
//! Separate because it writes the condenser's own text, not the
//! response's, into room the other stages keep back (`NOTICE_SLOT`,
//! `MARKER_SLOT`, `REPLACEMENT_ROOM`), and must stay within it.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use super::walk::Level;
use crate::budget::Unit;

use super::{
    Condenser, Digits, Links, MARKER_KEY, MARKER_SLOT, MAX_LISTED_CUTS, NOTICE_SLOT,
    REPLACEMENT_ROOM,
};

/// A cut value, for the marker and the notice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Cut {
    pointer: Vec<u8>,
    pub(super) kept: u64,
    original: u64,
    /// What `kept` and `original` count: "bytes" (on the wire) or "items".
    unit: &'static str,
    /// Items: how many of those kept are the array's first (the others are
    /// its last, under `Keep::Ends`).
    first: u64,
}

impl Condenser {
    /// Counts a cut and lists it if there is room; returns where.
    pub(super) fn record(&mut self, pointer: Vec<u8>, kept: u64, original: u64) -> Option<usize> {
        self.record_as(pointer, kept, original, "bytes")
    }

    /// Counts a cut array (or an object: `members`) that keeps its `first`
    /// items and `kept` in all (its last ones after them) of `original`.
    pub(super) fn record_items(
        &mut self,
        pointer: Vec<u8>,
        first: u64,
        kept: u64,
        original: u64,
        members: bool,
    ) {
        let unit = if members { MEMBERS } else { ITEMS };
        if let Some(at) = self.record_as(pointer, kept, original, unit) {
            self.cuts[at].first = first;
        }
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
            first: kept,
        });
        Some(self.cuts.len() - 1)
    }

    /// Fills the notice and marker slots, now that the sizes are known.
    pub(super) fn fill_slots(&mut self) -> Option<Links> {
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
        let mut head = Vec::with_capacity(NOTICE_SLOT);
        let _ = match self.stated {
            Some(clip) => write!(
                Digits(&mut head),
                "[drainpipe] This result was cut to {kept} bytes to fit a budget of {} {} (it was {} bytes): {} value(s) cut, {}",
                clip.amount,
                match clip.unit {
                    Unit::Tokens => "tokens",
                    Unit::Chars => "characters",
                    _ => "bytes",
                },
                self.fed,
                self.cut_count,
                self.keep.says()
            ),
            None => write!(
                Digits(&mut head),
                "[drainpipe] This result was cut to {kept} bytes to fit a budget of {} (it was {} bytes): {} value(s) cut, {}",
                self.budget,
                self.fed,
                self.cut_count,
                self.keep.says()
            ),
        };
        // Arrays first: a list shortened is what an agent must not miss.
        let mut listed = core::mem::take(&mut self.cuts);
        listed.sort_by_key(|cut| cut.unit != ITEMS && cut.unit != MEMBERS);
        let links = Links {
            at,
            len: self.notice_len,
            comma,
            head,
            listed,
            values: self.spilled.drain(..).map(|(spilled, _)| spilled).collect(),
        };
        links.fill(&mut self.out, "", |_| None);
        self.linking.then_some(links)
    }
}

impl Cut {
    /// How the notice lists it: `content: kept 38 of 5000 items`, and for
    /// an array whose rest is not linked, how many items were left out.
    pub(super) fn said(&self, first: bool, rest: Option<(u64, &str)>) -> Vec<u8> {
        let mut item = Vec::new();
        let name = self.pointer.strip_prefix(b"/").unwrap_or(&self.pointer);
        let _ = write!(
            Digits(&mut item),
            "{}{}: kept {} of {} {}",
            if first { ": " } else { "; " },
            String::from_utf8_lossy(name),
            self.kept,
            self.original,
            self.unit
        );
        let rests = self.unit == ITEMS || self.unit == MEMBERS;
        if rests && self.first < self.kept {
            let _ = write!(
                Digits(&mut item),
                " (the first {} and the last {})",
                self.first,
                self.kept - self.first
            );
        }
        match rest {
            Some((from, uri)) => {
                let one = if self.unit == MEMBERS {
                    "member"
                } else {
                    "item"
                };
                let _ = write!(Digits(&mut item), ", the rest from {one} {from} at {uri}");
            }
            None if rests => {
                let _ = write!(
                    Digits(&mut item),
                    " ({} left out)",
                    self.original.saturating_sub(self.kept)
                );
            }
            None => {}
        }
        item
    }

    /// Whether it is the array (or object) at `pointer`.
    pub(super) fn is_array_at(&self, pointer: &str) -> bool {
        (self.unit == ITEMS || self.unit == MEMBERS) && self.pointer == pointer.as_bytes()
    }
}

/// The unit of a cut array's counts.
pub(super) const ITEMS: &str = "items";
/// The unit of a cut object's counts.
pub(super) const MEMBERS: &str = "members";

/// The notice block's start, and its end when nothing is linked.
pub(super) const NOTICE_HEAD: &[u8] = b"{\"type\":\"text\",\"text\":\"";
pub(super) const NOTICE_END: &[u8] = b". Details: _meta io.drainpipe/truncated.\"}";

/// The text block that replaces a content block whose binary value did
/// not fit: at most `REPLACEMENT_ROOM` bytes.
pub(super) fn replacement_text(block: &Level, budget: usize) -> Vec<u8> {
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
