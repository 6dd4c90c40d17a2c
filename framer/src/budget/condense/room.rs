//! Room: what is left of the budget, and taking it back from the texts
//! already written.
//!
//! The room is the budget less what is written and what is kept back. The
//! output is held, so room given to a text can be taken back: the cut texts
//! (and long texts kept whole) are tracked (`Tracked`) and shrunk in place
//! toward one level when a later value needs the room, bytes that cannot be
//! cut (`whole`, `make_room`) or a later text that ran out (`give_room`).
//! `shrink` cuts them and moves what follows back, in one pass; `freed` and
//! `highest` find the level to shrink to.
//!
//! Separate because this is where the cuts are planned: how much each text
//! keeps, and the bounds on the bytes moved that the module docs give (a
//! step of a 64th of the budget at a time).

use alloc::vec::Vec;

use super::cut::unit_boundary;
use super::ends::{Keep, Tail};
use super::leave_out::SHORT_SHARE;
use super::{CondenseError, Condenser, FREE_SHARE, SHORT_STRING, SLACK, Spill, SpillKind};

/// A text in the output that may be cut shorter later: a cut text (to give
/// room to a later value), or a long text of one side (a content block's
/// text, or a string in `structuredContent`) that a string of the other
/// side may mirror (the servers on the official SDKs write a tool's text
/// in both), to cut it where its mirror is cut.
#[derive(Debug)]
pub(super) struct Tracked {
    /// Its contents in the output.
    pub(super) start: usize,
    pub(super) len: usize,
    /// The side it is on (see `Str::side`); `None`: no mirror candidate.
    pub(super) side: Option<bool>,
    /// Whether it was written whole (else it was cut to `len`).
    pub(super) whole: bool,
    /// A mirror of it could not be tracked: shrinking it would part them,
    /// so it is not shrunk to give room.
    pub(super) fixed: bool,
    /// Its cut record, if it was cut and listed.
    pub(super) cut: Option<usize>,
    pub(super) pointer: Vec<u8>,
    pub(super) original: u64,
    /// Whether it was reported for spilling (while cut, or at its shrink).
    pub(super) spilled: bool,
    /// It was inside a content block that was replaced: it is no longer in
    /// the output, and nothing mirrors it.
    pub(super) dead: bool,
    /// Its decoded length, and once cut, its end (`ends.rs`), when the end
    /// of a text is kept.
    pub(super) decoded: u64,
    pub(super) tail: Option<Tail>,
}

impl Condenser {
    /// Room for values that may be cut, after everything kept back.
    pub(super) fn room(&self) -> usize {
        self.budget
            .saturating_sub(self.out.len())
            .saturating_sub(self.reserve)
    }

    /// Writes bytes that cannot be cut, shrinking cut texts to make room.
    pub(super) fn whole(&mut self, bytes: &[u8]) -> Result<(), CondenseError> {
        if self.muted() {
            return Ok(());
        }
        if !self.make_room(bytes.len(), 0) {
            // In an array's element, the element is left out whole.
            if self.leave_out_element() {
                return Ok(());
            }
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
    pub(super) fn make_room(&mut self, need: usize, keep: usize) -> bool {
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
    /// that can be reported: for a text that needs room, and with links
    /// only while one is left). A short text is never shrunk: a fragment of
    /// it would say nothing (`SHORT_SHARE`).
    pub(super) fn shrinkable(&self, whole: bool, floor: usize) -> Vec<(usize, usize)> {
        let whole = whole && (!self.linking || self.link_free());
        let short = (self.budget / SHORT_SHARE) as u64;
        self.texts
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.dead && !m.fixed && m.len > floor && (whole || !m.whole))
            .filter(|(_, m)| m.original >= short)
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

    /// The current text ran out of room at its `kept` bytes: shrinks the
    /// tracked texts before it that are longer (cut ones, and long ones kept
    /// whole) toward one level, longest first. While they are well
    /// above it, they give a step (budget/`FREE_SHARE`) and it goes on;
    /// near it, they and it meet at one level, which becomes its cap.
    /// Returns whether room was made.
    pub(super) fn give_room(&mut self, spill: &mut dyn FnMut(Spill<'_>)) -> bool {
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

    /// Cuts tracked texts in place, each `(index, len)` of `plan` to its
    /// first `len` bytes: exactly (`len` is a boundary of the same bytes,
    /// where a mirror of it was cut), or else less a partial character or
    /// escape. What follows each moves back, in one pass over the output,
    /// and every position kept in the output moves with it.
    pub(super) fn shrink(
        &mut self,
        plan: &[(usize, usize)],
        exact: bool,
        spill: &mut dyn FnMut(Spill<'_>),
    ) {
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
        // it is shortened, it is kept in full too. With links, one given
        // no link stays whole when the cut is to give room: `shrinkable`
        // lets whole texts in while one link is free, but each takes its
        // own, so the first reported may spend the last, and a text cut
        // then would be held by no link. (A mirror is cut to match the
        // text cut now, whose link holds it if they are the same.)
        let mut unlinked: Vec<usize> = Vec::new();
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
            } else if self.linking && !exact {
                unlinked.push(index);
            }
        }
        if !unlinked.is_empty() {
            cuts.retain(|cut| !unlinked.contains(&cut.3));
            if cuts.is_empty() {
                return;
            }
        }
        // Its end: for a text kept whole, the bytes cut now end it; a cut
        // one needs less of its end than before.
        if self.keep != Keep::Head {
            for &(start, old, new, index) in &cuts {
                let m = &mut self.texts[index];
                match m.tail.as_mut() {
                    Some(tail) => tail.shrink(self.keep, new, &self.out[start + new..start + old]),
                    None if m.whole => {
                        let mut tail = Tail::new(self.keep, new);
                        tail.push(&self.out[start + new..start + old]);
                        tail.trim();
                        m.tail = Some(tail);
                    }
                    None => {}
                }
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
            if let Some((start, _)) = level.first_share.as_mut() {
                moved(start);
            }
            if let Some(mark) = level.element.as_mut() {
                mark.moved(&moved);
            }
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
