//! Keeping the end of a cut text, not only its beginning
//! ([`Condenser::keeping`]).
//!
//! Logs and command output put what matters last (the error, the summary),
//! so a cut text may keep its end too. The streaming condenser plans each
//! text's room as a prefix, as before; beside it, every text counts its
//! decoded bytes (`Decoded`) and a cut text keeps the bytes read after its
//! cut in a `Tail`, trimmed from the front (at a character and escape
//! boundary) to the share of its room the end may take. At the end of the
//! line, each cut text's room is rewritten in place: its beginning, a mark
//! that says how many bytes were left out there and from which byte, then
//! its end; the room left over becomes spaces after the closing quote, so
//! nothing else moves. A text and its mirror, equal to the end, are
//! rewritten alike.
//!
//! Bounds: a tail holds at most twice its share of its text's room (plus
//! one piece of input), and is trimmed when that room shrinks, so all the
//! tails together hold about twice the budget at most.
//!
//! Separate because it is the one stage that writes inside a text after
//! the text was written, and the one that counts decoded bytes.

use alloc::vec::Vec;
use core::fmt::Write as _;

use super::cut::{unit_boundary, units_within};
use super::{Condenser, Digits};

/// Which parts of a cut text are kept. A [`Clip`](crate::budget::Clip)
/// keeps both ends unless told, as the hosts that cut text themselves do;
/// a bare [`Condenser`] keeps the beginning unless told
/// ([`Condenser::keeping`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Keep {
    /// Its beginning only (what is left out is said in the notice).
    Head,
    /// Its end only, after a mark saying what was left out before it.
    Tail,
    /// Its beginning and its end, in halves, with a mark between.
    #[default]
    Ends,
}

impl Keep {
    /// The share of a text's room (after the mark) its end may take, in
    /// 256ths.
    fn tail_share(self) -> usize {
        match self {
            Keep::Head => 0,
            Keep::Tail => 256,
            Keep::Ends => 128,
        }
    }

    /// How the notice says what each cut text kept.
    pub(super) fn says(self) -> &'static str {
        match self {
            Keep::Head => "each keeping its beginning",
            Keep::Tail => {
                "each text keeping its end where it has room (else its beginning), each array its first items"
            }
            Keep::Ends => {
                "each text keeping its beginning and, where it has room, its end, each array its first items and, outside content, its last"
            }
        }
    }
}

impl core::fmt::Display for Keep {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Keep::Head => "head",
            Keep::Tail => "tail",
            Keep::Ends => "ends",
        })
    }
}

impl core::str::FromStr for Keep {
    type Err = &'static str;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "head" => Ok(Keep::Head),
            "tail" => Ok(Keep::Tail),
            "ends" => Ok(Keep::Ends),
            _ => Err("expected head, tail or ends"),
        }
    }
}

/// The mark's text around its numbers: `\n[… drainpipe left out N bytes
/// here, from byte X …]\n`, as raw string contents (the `\n` escaped).
const MARK_OPEN: &[u8] = "\\n[… drainpipe left out ".as_bytes();
const MARK_MIDDLE: &[u8] = b" bytes here, from byte ";
const MARK_CLOSE: &[u8] = " …]\\n".as_bytes();

/// The decoded (UTF-8) length of a string's raw contents, counted as they
/// stream past.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Decoded {
    /// Decoded bytes of the complete units read.
    pub(super) total: u64,
    /// Inside an escape: raw bytes of it read (1 after the backslash, then
    /// up to 4 hex digits of `\u`), and the digits' value.
    escape: u8,
    unicode: bool,
    hex: u32,
}

impl Decoded {
    /// Counts the next raw bytes.
    pub(super) fn feed(&mut self, mut raw: &[u8]) {
        while !raw.is_empty() {
            if self.escape == 0 {
                // Texts come in runs between escapes, mostly short: a call
                // to memchr costs more than a look at a few bytes.
                let next = if raw.len() < 64 {
                    raw.iter().position(|&b| b == b'\\')
                } else {
                    memchr::memchr(b'\\', raw)
                };
                match next {
                    None => {
                        self.total += raw.len() as u64;
                        return;
                    }
                    Some(k) => {
                        self.total += k as u64;
                        self.escape = 1;
                        self.unicode = false;
                        self.hex = 0;
                        raw = &raw[k + 1..];
                    }
                }
                continue;
            }
            let b = raw[0];
            raw = &raw[1..];
            if self.escape == 1 {
                if b == b'u' {
                    self.unicode = true;
                    self.escape = 2;
                } else {
                    self.total += 1;
                    self.escape = 0;
                }
                continue;
            }
            self.hex = self.hex << 4 | char::from(b).to_digit(16).unwrap_or(0);
            self.escape += 1;
            if self.escape == 6 {
                // A surrogate half is two of its pair's four bytes.
                self.total += match self.hex {
                    0..0x80 => 1,
                    0x80..0x800 => 2,
                    0xD800..=0xDFFF => 2,
                    _ => 3,
                };
                self.escape = 0;
            }
        }
    }

    /// The decoded length of `raw`, whole units.
    pub(super) fn of(raw: &[u8]) -> u64 {
        let mut count = Decoded::default();
        count.feed(raw);
        count.total
    }
}

/// The end of a cut text: raw bytes read after its cut, from a unit start,
/// the front trimmed as more come.
#[derive(Clone, Debug, Default)]
pub(super) struct Tail {
    pub(super) bytes: Vec<u8>,
    /// The most it needs to keep.
    pub(super) cap: usize,
    /// It starts where the text's kept beginning ends: nothing between
    /// them was dropped, so bytes cut from the beginning's end join it.
    joined: bool,
}

impl Tail {
    /// A tail for a text that keeps `kept` bytes, under `keep`.
    pub(super) fn new(keep: Keep, kept: usize) -> Tail {
        Tail {
            bytes: Vec::new(),
            cap: kept * keep.tail_share() / 256,
            joined: true,
        }
    }

    /// Appends raw bytes read after the cut.
    pub(super) fn push(&mut self, raw: &[u8]) {
        self.bytes.extend_from_slice(raw);
        if self.bytes.len() > 2 * self.cap + 64 {
            self.trim();
        }
    }

    /// Keeps about `cap` bytes: drops whole units from the front. The
    /// boundary is found from the bytes near it (`unit_boundary`), not by
    /// reading every unit from the front: a tail trimmed all along a long
    /// text then costs about one move of its bytes per byte read.
    pub(super) fn trim(&mut self) {
        let over = self.bytes.len().saturating_sub(self.cap);
        if over > 0 {
            let at = unit_boundary(&self.bytes, over);
            if at > 0 {
                self.bytes.drain(..at);
                self.joined = false;
            }
        }
    }

    /// The text's kept beginning was cut to `kept` bytes, `cut` the bytes
    /// it lost: they join the front of its end if nothing lies between;
    /// the end needs no more than its share of the beginning.
    pub(super) fn shrink(&mut self, keep: Keep, kept: usize, cut: &[u8]) {
        self.cap = self.cap.min(kept * keep.tail_share() / 256);
        if self.joined && self.bytes.len() < self.cap {
            let room = self.cap - self.bytes.len();
            // Whole units, from a unit start `cut` holds (its first byte
            // is one: the beginning was cut at a unit boundary).
            let from = unit_at_or_after(cut, cut.len().saturating_sub(room));
            let mut joined = Vec::with_capacity(cut.len() - from + self.bytes.len());
            joined.extend_from_slice(&cut[from..]);
            joined.extend_from_slice(&self.bytes);
            self.bytes = joined;
            self.joined = from == 0;
        }
        if self.bytes.len() > 2 * self.cap + 64 {
            self.trim();
        }
    }
}

/// The first unit start at or after `at` in `s` (read from its start, a
/// unit start), or `s.len()`.
fn unit_at_or_after(s: &[u8], at: usize) -> usize {
    let mut b = unit_boundary(s, at);
    while b < at && b < s.len() {
        let next = (1..=12)
            .map(|step| units_within(s, b, b + step))
            .find(|&n| n > b)
            .unwrap_or(s.len());
        b = next;
    }
    b
}

impl Condenser {
    /// Keeps `keep` of each cut text (by default its beginning).
    pub fn keeping(mut self, keep: Keep) -> Self {
        if self.fed == 0 {
            self.keep = keep;
        }
        self
    }

    /// Rewrites each cut text's room as its beginning, the mark and its end
    /// (see the module docs). Run once, at the end of the line.
    pub(super) fn keep_ends(&mut self) {
        if self.keep == Keep::Head {
            return;
        }
        for index in 0..self.texts.len() {
            let m = &self.texts[index];
            if m.whole || m.dead {
                continue;
            }
            let Some(tail) = m.tail.as_ref() else {
                continue;
            };
            let (start, room, total) = (m.start, m.len, m.decoded);
            // The widest mark these numbers can make.
            let widest = mark(total, total).len();
            if room < 2 * widest || start + room >= self.out.len() {
                continue;
            }
            let space = room - widest;
            let want = (space * self.keep.tail_share() / 256).min(tail.bytes.len());
            let from = unit_at_or_after(&tail.bytes, tail.bytes.len() - want);
            let end = &tail.bytes[from..];
            let head_len = unit_boundary(&self.out[start..start + room], space - end.len());
            let head_decoded = Decoded::of(&self.out[start..start + head_len]);
            let end_decoded = Decoded::of(end);
            let left_out = total.saturating_sub(head_decoded + end_decoded);
            let mark = mark(left_out, head_decoded);
            let mut text = Vec::with_capacity(room + 1);
            text.extend_from_slice(&self.out[start..start + head_len]);
            text.extend_from_slice(&mark);
            text.extend_from_slice(end);
            text.push(b'"');
            text.resize(room + 1, b' ');
            self.out[start..start + room + 1].copy_from_slice(&text);
            let kept = (head_len + end.len()) as u64;
            if let Some(at) = self.texts[index].cut {
                self.cuts[at].kept = kept;
            }
        }
    }
}

/// The mark for `left_out` decoded bytes left out from byte `from`.
fn mark(left_out: u64, from: u64) -> Vec<u8> {
    let mut mark = Vec::with_capacity(80);
    mark.extend_from_slice(MARK_OPEN);
    let _ = write!(Digits(&mut mark), "{left_out}");
    mark.extend_from_slice(MARK_MIDDLE);
    let _ = write!(Digits(&mut mark), "{from}");
    mark.extend_from_slice(MARK_CLOSE);
    mark
}
