//! Where a text is cut.
//!
//! `text_content` writes a text's raw bytes up to its limit: where the text
//! it mirrors was cut, else the room left (less `SLACK`) up to its cap.
//! Past the limit it asks `room.rs` for room from the texts before it; when
//! none is given, `cut_text` cuts it, and the texts it mirrors to the same
//! prefix, at a character and escape boundary. `first_change` follows which
//! mirror candidates still match byte for byte; `unit_boundary` finds the
//! boundary from the bytes near the limit, not from the start of the text.
//!
//! Separate because the boundary search is the one place that reads inside
//! escapes and UTF-8 sequences, and it is tested on its own (`tests.rs`)
//! against reading every unit from the start.

use alloc::vec::Vec;

use super::ends::{Keep, Tail};
use super::leave_out::SHORT_SHARE;
use super::room::Tracked;
use super::{Condenser, MAX_TRACKED, SHORT_STRING, SLACK, Spill, SpillKind};

impl Condenser {
    /// Raw contents of the current text, not cut yet: written up to its
    /// limit; there, room is made by shrinking the texts before it, or it
    /// is cut.
    ///
    /// Every decision is taken at a byte, from the bytes before it, so the
    /// output does not depend on how the input was split: the mirror
    /// candidates are checked up to the limit and the byte after it, and a
    /// candidate dropped by a byte changes the limit from that byte on.
    pub(super) fn text_content(&mut self, mut piece: &[u8], spill: &mut dyn FnMut(Spill<'_>)) {
        let whole_piece = piece;
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
            // A short text, or one no link is left for, is not cut in an
            // array's element: the element is left out whole, from the
            // start of this piece (what was written of it is taken back).
            // (Its length so far is what it kept, not what the piece read
            // holds: the decision must not depend on how the input is
            // split.)
            let so_far = self
                .string
                .as_ref()
                .map_or(0, |s| self.out.len() - s.out_start);
            let short = so_far < self.budget / SHORT_SHARE;
            let unlinked = self.linking && !self.link_free();
            if short || unlinked {
                let written = whole_piece.len() - piece.len();
                let at = self.out.len() - written;
                let kept = self.out.split_off(at);
                if self.leave_out_element() {
                    return;
                }
                self.out.extend_from_slice(&kept);
            }
            self.cut_text(limit, piece, spill);
            return;
        }
    }

    /// Cuts the current text at `limit` bytes (less a partial character or
    /// escape); `piece` is the rest of what was read of it. The texts it
    /// mirrors are cut to the same prefix, even where they were kept longer
    /// (or whole) because they came first.
    fn cut_text(&mut self, limit: usize, piece: &[u8], spill: &mut dyn FnMut(Spill<'_>)) {
        let linked = self.link_free();
        let Some(s) = self.string.as_mut() else {
            return;
        };
        let start = s.out_start;
        // What was read of it is what was written and `piece`: copied
        // before it is shortened, and reported after the mirrors it
        // shrinks (one value open at a time).
        let head = linked.then(|| self.out[start..].to_vec());
        let boundary = unit_boundary(&self.out[start..], limit);
        if self.keep != Keep::Head {
            // Its end starts with what was written past the cut, then
            // the rest of this piece.
            let mut tail = Tail::new(self.keep, boundary);
            tail.push(&self.out[start + boundary..]);
            tail.push(piece);
            s.tail = Some(tail);
        }
        self.out.truncate(start + boundary);
        s.cut = true;
        self.inner_cuts += 1;
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
pub(super) fn unit_boundary(s: &[u8], limit: usize) -> usize {
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
        // Only characters: back to the start of the one at `end`; at the
        // end of `s`, of the last one, which `s` may hold only part of
        // (the text is written up to a byte limit, not a character).
        let mut at = if end == s.len() {
            end.saturating_sub(1)
        } else {
            end
        };
        while at > 0 && s[at] & 0xC0 == 0x80 {
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
pub(super) fn units_within(s: &[u8], mut at: usize, limit: usize) -> usize {
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
