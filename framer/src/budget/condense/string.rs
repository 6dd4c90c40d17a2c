//! A string value, from its opening quote to its closing one.
//!
//! At its start a string gets its policy from where it stands (copied
//! whole; a text that may be cut; a binary value that fits whole or is left
//! out; read and not written) and the texts it may mirror. Its raw bytes
//! are then written by that policy (a text's by `cut.rs`). At its end it is
//! listed if it was cut, and tracked if room may be taken back from it later
//! or a later string may mirror it. It also keeps a block's `type` and
//! `mimeType`, for the replacement text and the link's media type.
//!
//! Separate from the walk because every byte of a long value passes here,
//! and here each value's fate is decided; the walk sees only its quotes.

use alloc::vec::Vec;

use super::ends::{Decoded, Keep, Tail};
use super::room::Tracked;
use super::walk::{Mode, Role};
use super::{
    CondenseError, Condenser, MAX_CAPTURE, MAX_TRACKED, SHORT_STRING, SLACK, Spill, SpillKind,
};

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
pub(super) struct Str {
    policy: Policy,
    /// Where its contents start in the output (after the quote).
    pub(super) out_start: usize,
    /// Raw bytes of its contents read so far.
    len: u64,
    /// It was cut: the rest is read, not written.
    pub(super) cut: bool,
    /// Mirror candidates (bits for `Condenser::texts`) still equal so far.
    pub(super) candidates: u64,
    /// Texts: the most it may keep, in bytes (the share of the room it was
    /// given, with [`Condenser::with_text_share`], or the level the texts
    /// before it were shrunk to for it); `None`: all the room it can get.
    pub(super) cap: Option<usize>,
    /// Which side of a possible mirror it is: `Some(false)` for a content
    /// block's text, `Some(true)` for a string in `structuredContent`.
    side: Option<bool>,
    /// A block's `type` or `mimeType`, kept for a replacement's text (even
    /// when not written).
    capture: Capture,
    captured: Vec<u8>,
    /// Its number, once it is cut and reported for spilling.
    pub(super) spill: Option<u32>,
    /// Texts, when their end may be kept: their decoded length so far, and
    /// once cut, the bytes read after the cut (`ends.rs`).
    pub(super) decoded: Decoded,
    pub(super) tail: Option<Tail>,
}

impl Str {
    /// Its element was left out: nothing more of it is written. Returns
    /// whether it was written until now (its closing quote kept back).
    pub(super) fn mute(&mut self) -> bool {
        let written = self.policy != Policy::Muted;
        self.policy = Policy::Muted;
        written
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capture {
    None,
    BlockType,
    BlockMime,
}

impl Condenser {
    pub(super) fn start_string(&mut self) -> Result<(), CondenseError> {
        if !self.muted() {
            self.whole(b"\"")?;
        }
        // Writing the quote may have left out the element it starts.
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
            spill: None,
            decoded: Decoded::default(),
            tail: None,
        });
        self.mode = Mode::InString;
        Ok(())
    }

    /// The bytes of `bytes` from `i` inside a string value; returns where
    /// the string's bytes in it end (after its closing quote, or the end).
    /// They go to `content` in one piece, escapes and all: only an
    /// unescaped quote ends a string, and `content` takes the string's
    /// bytes in pieces cut anywhere (as a line may be fed). `at` is the
    /// piece's first byte, for an element left out while it is read
    /// (`leave_out.rs`).
    pub(super) fn string_bytes(
        &mut self,
        bytes: &[u8],
        i: usize,
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Result<usize, CondenseError> {
        self.at = i;
        // Where the search for the closing quote goes on: past the byte a
        // backslash escapes (the first here, if the last piece ended on it).
        let mut from = i;
        if self.mode == Mode::InStringEscape {
            if i >= bytes.len() {
                return Ok(i);
            }
            from += 1;
            self.mode = Mode::InString;
        }
        loop {
            let Some(k) = memchr::memchr2(b'"', b'\\', bytes.get(from..).unwrap_or_default())
            else {
                self.content(&bytes[i..], spill)?;
                return Ok(bytes.len());
            };
            let at = from + k;
            if bytes[at] == b'"' {
                self.content(&bytes[i..at], spill)?;
                self.end_string(spill)?;
                return Ok(at + 1);
            }
            from = at + 2;
            if from > bytes.len() {
                // The piece ends on a backslash: the next starts escaped.
                self.content(&bytes[i..], spill)?;
                self.mode = Mode::InStringEscape;
                return Ok(bytes.len());
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
        if s.policy == Policy::Text && self.keep != Keep::Head {
            s.decoded.feed(piece);
            if let Some(tail) = s.tail.as_mut() {
                tail.push(piece);
            }
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
                    if self.leave_out_element() {
                        return Ok(());
                    }
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
                // With no link left for it, its block is left out whole
                // (the rest of `content` is linked) rather than replaced.
                let linked = self.link_free();
                if !fits && self.linking && !linked && self.leave_out_element() {
                    return Ok(());
                }
                let Some(s) = self.string.as_mut() else {
                    return Ok(());
                };
                if !fits {
                    // Never broken base64: the block is replaced.
                    s.cut = true;
                    self.inner_cuts += 1;
                    if let Some(block) = self.stack.iter_mut().rev().find(|l| l.role == Role::Block)
                    {
                        block.replace = true;
                        self.replacing = true;
                    }
                    if linked {
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
            let pointer = self.pointer();
            self.record(pointer, 0, s.len);
            return Ok(());
        }
        if s.cut && s.len <= SHORT_STRING {
            return Err(CondenseError::Overflow { at: self.fed });
        }
        // Its pointer, for a cut or tracked text only (see `tracked`
        // below): built from every open level's key or index, it is not
        // made for each string.
        let pointer = if s.cut || (s.side.is_some() && s.len > SHORT_STRING) {
            self.pointer()
        } else {
            Vec::new()
        };
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
                decoded: s.decoded.total,
                tail: s.tail,
            });
        }
        self.out.push(b'"');
        Ok(())
    }
}
