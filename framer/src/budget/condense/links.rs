//! Spilling and links (see "Spilling" in the module docs).
//!
//! With `Condenser::with_links`, a value that is cut is numbered and
//! reported from its first byte (`spill_cut`, `spill_start`); at the end
//! the caller writes a `resource_link` block for each into the room kept
//! for them (`Links::fill`). `link_block` writes one block and `media_type`
//! the media type it gives.
//!
//! Separate because it is the one part with a protocol of its own toward
//! the caller (`Spill` events, `Links`). Without links, only `Links::fill`
//! runs: it writes the notice, with no links.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

use super::record::{NOTICE_END, NOTICE_HEAD};
use super::walk::Role;
use super::{
    Condenser, Digits, LINK_NOTICE, LINK_ROOM, Link, Links, MAX_LINK_FIELD, NOTICE_SLOT, Spill,
    SpillKind, Spilled,
};

impl Condenser {
    /// The current string is cut, `head` of it read before `piece`: with
    /// links, reports it from its first byte.
    pub(super) fn spill_cut(
        &mut self,
        kind: SpillKind,
        head: &[u8],
        piece: &[u8],
        spill: &mut dyn FnMut(Spill<'_>),
    ) {
        if self.string.is_none() {
            return;
        }
        let pointer = self.pointer();
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
    pub(super) fn spill_start(
        &mut self,
        kind: SpillKind,
        pointer: Vec<u8>,
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Option<u32> {
        let value = self.number_spilled(kind, pointer)?;
        spill(Spill::Start { value, kind });
        Some(value)
    }

    /// The array on top of the stack is cut at element `first`: with links,
    /// its rest is reported from there (`scan` reports the bytes, through
    /// `report_elements`).
    pub(super) fn begin_elements(&mut self, first: u64) {
        if self.stack.is_empty() {
            return;
        }
        // The array's own pointer: it is the value read now one level up.
        let pointer = self.pointer_in(self.stack.len() - 1);
        if let Some(value) = self.number_spilled(SpillKind::Elements { first }, pointer) {
            self.elements = Some((value, self.stack.len()));
            self.elements_step = Some(ElementsStep::Begin);
        }
    }

    /// A cut array just closed: ends its report, if it is the one open.
    pub(super) fn end_elements(&mut self) {
        if let Some((value, depth)) = self.elements
            && depth == self.stack.len() + 1
        {
            self.elements = None;
            self.elements_step = Some(ElementsStep::End(value));
        }
    }

    /// Reports what the byte at `at` of `bytes` did to the array being
    /// reported; `run` is where its bytes not yet reported start. Returns
    /// where they start now.
    pub(super) fn report_elements(
        &mut self,
        step: ElementsStep,
        bytes: &[u8],
        at: usize,
        run: Option<usize>,
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Option<usize> {
        let mut flush = |value: u32| {
            if let Some(from) = run
                && from < at
            {
                spill(Spill::Raw {
                    value,
                    bytes: &bytes[from..at],
                });
            }
        };
        match step {
            ElementsStep::Begin => {
                self.open_rest(spill)?;
                Some(at)
            }
            ElementsStep::Element => {
                let (value, _) = self.elements?;
                flush(value);
                spill(Spill::Raw {
                    value,
                    bytes: b"\n",
                });
                Some(at)
            }
            ElementsStep::End(value) => {
                flush(value);
                let kind = self.spilled.get(value as usize).map(|(s, _)| s.kind);
                spill(Spill::Raw {
                    value,
                    bytes: kind.map_or(b"\n]", |kind| brackets(kind).1),
                });
                spill(Spill::End { value });
                if let Some((spilled, _)) = self.spilled.get_mut(value as usize) {
                    spilled.complete = true;
                }
                None
            }
        }
    }

    /// Starts the report of the rest being reported (`elements`): its
    /// start and its opening bracket. Returns its number.
    pub(super) fn open_rest(&mut self, spill: &mut dyn FnMut(Spill<'_>)) -> Option<u32> {
        let (value, _) = self.elements?;
        let kind = self.spilled.get(value as usize)?.0.kind;
        spill(Spill::Start { value, kind });
        spill(Spill::Raw {
            value,
            bytes: brackets(kind).0,
        });
        Some(value)
    }

    /// Numbers a value to report, if links are on and there is room for
    /// its link.
    pub(super) fn number_spilled(&mut self, kind: SpillKind, pointer: Vec<u8>) -> Option<u32> {
        let free = match kind {
            SpillKind::Text | SpillKind::Binary => self.link_free(),
            _ => self.rest_link_free(),
        };
        if !free {
            return None;
        }
        let value = self.spilled.len() as u32;
        // A value in a content block takes the block's media type, but for
        // the rest of an array, which is JSON whatever the block holds.
        let block = match kind {
            SpillKind::Text | SpillKind::Binary => {
                self.stack.iter().rposition(|l| l.role == Role::Block)
            }
            _ => None,
        };
        let mime = match kind {
            SpillKind::Text => "text/plain",
            SpillKind::Binary => "application/octet-stream",
            _ => "application/json",
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
        Some(value)
    }
}

/// What a byte between tokens did to the cut array being reported.
#[derive(Clone, Copy, Debug)]
pub(super) enum ElementsStep {
    /// The array was cut at this byte, the first of the element left out.
    Begin,
    /// Another of its elements starts at this byte.
    Element,
    /// This byte closed it (the value's number: it is no longer open).
    End(u32),
}

impl Links {
    /// The values reported for spilling, by number.
    pub fn values(&self) -> &[Spilled] {
        &self.values
    }

    /// Numbers each value as `reported` (another condenser's links, fed
    /// the same line) numbered the value at the same pointer, the one whose
    /// contents were reported; a value `reported` did not report gets a
    /// number no report has (`u32::MAX`), so it is said to be cut but not
    /// linked.
    pub(super) fn renumber(&mut self, reported: Option<&Links>) {
        for value in &mut self.values {
            let theirs = reported.and_then(|r| r.counterpart(value));
            match theirs {
                Some(theirs) => {
                    value.value = theirs.value;
                    value.complete = theirs.complete;
                    // The rest of an array is linked from where theirs was cut.
                    value.kind = theirs.kind;
                }
                None => {
                    value.value = u32::MAX;
                    value.complete = false;
                }
            }
        }
    }

    /// Whether every value these links say is cut is linked once they are
    /// numbered as `reported` (another condenser's links, fed the same
    /// line): it has a counterpart there (an array's rest starting no later
    /// than this one was cut), or it lies in the rest of an array these
    /// links cut that has one. So renumbered, nothing is neither kept nor
    /// linked.
    pub(crate) fn rests_covered_by(&self, reported: Option<&Links>) -> bool {
        let Some(reported) = reported else {
            return self.values.is_empty();
        };
        // The rests linked once renumbered: their pointers and first items.
        let rests: Vec<(&str, u64)> = self
            .values
            .iter()
            .filter_map(|value| match reported.counterpart(value)?.kind {
                SpillKind::Elements { first } => Some((value.pointer.as_str(), first)),
                _ => None,
            })
            .collect();
        self.values.iter().all(|value| {
            let linked = match (value.kind.first(), reported.counterpart(value)) {
                (Some(first), Some(theirs)) => theirs.kind.first().is_some_and(|t| t <= first),
                (_, theirs) => theirs.is_some(),
            };
            linked || in_rest(&value.pointer, &rests)
        })
    }

    /// The value of these links at `value`'s pointer, of its kind.
    fn counterpart(&self, value: &Spilled) -> Option<&Spilled> {
        self.values.iter().find(|v| {
            core::mem::discriminant(&v.kind) == core::mem::discriminant(&value.kind)
                && v.pointer == value.pointer
                && !v.pointer.is_empty()
        })
    }

    /// Writes into `frame` (the one it came with) the notice and a
    /// `resource_link` block for each value `link` gives a place for; the
    /// notice then says where the rest of each cut array is and that the
    /// values are linked, and `how` they are read (e.g. "read it with
    /// resources/read"; at most 100 bytes of plain ASCII, else left out).
    /// A value left without a link (or whose link does not fit) is still
    /// said to be cut, an array with how many items it left out. Returns how
    /// many links were written. Calling it again rewrites the room.
    ///
    /// The notice with links is at most [`LINK_NOTICE`] bytes longer than
    /// without: a caller measuring the result before its links are known
    /// counts that much more.
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
        // Where each cut array's rest is: its pointer, first item and URI.
        let mut rests: Vec<(&str, u64, &str)> = Vec::new();
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
            if let Some(first) = value.kind.first() {
                rests.push((&value.pointer, first, place.uri));
            }
        }
        let plain = self.notice(&[], &[], NOTICE_SLOT);
        let text = if linked == 0 {
            plain
        } else {
            let mut sentence = Vec::with_capacity(LINK_NOTICE);
            let _ = write!(
                Digits(&mut sentence),
                ". The full value of {linked} of them is linked below (resource_link)"
            );
            let plain_how = how.len() <= 100
                && how
                    .bytes()
                    .all(|c| (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\');
            if plain_how && !how.is_empty() {
                sentence.extend_from_slice(b": ");
                sentence.extend_from_slice(how.as_bytes());
            }
            let cap = (plain.len() + LINK_NOTICE).min(room.len() - blocks.len());
            self.notice(&rests, &sentence, cap)
        };
        let mut text = text;
        text.extend_from_slice(&blocks);
        if text.len() > room.len() {
            return 0;
        }
        room[..text.len()].copy_from_slice(&text);
        room[text.len()..].fill(b' ');
        linked
    }

    /// The notice block (with its leading comma) in at most `cap` bytes:
    /// its first sentence, the cuts listed while they fit (an array with
    /// where its rest is, from `rests`, where that fits too), `sentence`.
    fn notice(&self, rests: &[(&str, u64, &str)], sentence: &[u8], cap: usize) -> Vec<u8> {
        let mut text = Vec::with_capacity(cap);
        if self.comma {
            text.push(b',');
        }
        text.extend_from_slice(NOTICE_HEAD);
        text.extend_from_slice(&self.head);
        // The sentence about the links is kept if it fits at all.
        let sentence = if text.len() + sentence.len() + NOTICE_END.len() <= cap {
            sentence
        } else {
            &[]
        };
        let fixed = sentence.len() + NOTICE_END.len();
        for (n, cut) in self.listed.iter().enumerate() {
            let rest = rests
                .iter()
                .find(|(pointer, _, _)| cut.is_array_at(pointer))
                .map(|&(_, first, uri)| (first, uri));
            let with_rest = cut.said(n == 0, rest);
            let item = if text.len() + with_rest.len() + fixed <= cap || rest.is_none() {
                with_rest
            } else {
                cut.said(n == 0, None)
            };
            if text.len() + item.len() + fixed > cap {
                break;
            }
            text.extend_from_slice(&item);
        }
        text.extend_from_slice(sentence);
        text.extend_from_slice(NOTICE_END);
        text
    }
}

/// How the rest of a cut array or object opens and closes.
pub(super) fn brackets(kind: SpillKind) -> (&'static [u8], &'static [u8]) {
    match kind {
        SpillKind::Members { .. } => (b"{\n", b"\n}"),
        _ => (b"[\n", b"\n]"),
    }
}

/// Whether the value at `pointer` is an item (or in an item) of one of
/// `rests`, at or past the item the rest starts from.
fn in_rest(pointer: &str, rests: &[(&str, u64)]) -> bool {
    rests.iter().any(|&(array, first)| {
        pointer
            .strip_prefix(array)
            .and_then(|p| p.strip_prefix('/'))
            .and_then(|p| p.split('/').next())
            .and_then(|index| index.parse::<u64>().ok())
            .is_some_and(|index| index >= first)
    })
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
    let mut name = match value.pointer.strip_prefix('/') {
        Some(name) if plain(name) && !name.is_empty() => String::from(name),
        _ => alloc::format!("value {}", value.value),
    };
    match value.kind {
        SpillKind::Elements { first } => {
            let _ = write!(name, " from item {first}");
        }
        SpillKind::Members { first } => {
            let _ = write!(name, " from member {first}");
        }
        _ => {}
    }
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
pub(super) fn media_type(raw: &[u8]) -> Option<String> {
    let plain = !raw.is_empty()
        && raw.len() <= MAX_LINK_FIELD
        && raw.iter().all(|&c| {
            c.is_ascii_alphanumeric() || matches!(c, b'/' | b'-' | b'+' | b'.' | b';' | b'=' | b' ')
        });
    plain.then(|| String::from_utf8_lossy(raw).into_owned())
}
