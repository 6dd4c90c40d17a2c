//! The last elements of a cut array, kept under [`Keep::Ends`].
//!
//! A log's last lines and a listing's last entries say as much as its
//! first: so under `Keep::Ends` an array in `structuredContent` (or any
//! array in `result` but `content`) writes its first elements until they
//! take half the room it had when it opened, and reads the elements after
//! them into a window ([`LastElements`]) of the room then left, less
//! `SLACK`: whole elements, whitespace between tokens dropped, the oldest
//! leaving as new ones come. At the close the window is written after the
//! first elements. If no element ever left it, the array is whole, as if
//! nothing had happened; else its middle was left out, and the cut is
//! recorded with every element the result keeps.
//!
//! With links, the rest is reported from the first element not written
//! (as for an array cut to a prefix): when the first element is about to
//! leave the window, the window is replayed into the report, one element
//! a line, and the bytes after it follow as they are read. The elements
//! the window keeps are in the report too; none is missing from both.
//!
//! `content` is left out: its blocks are few and large, and a text in one
//! is cut in place, which a window of whole elements cannot do.
//!
//! Memory: the window holds at most its limit (less than the budget), plus
//! the bytes already left behind until the next compaction.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

#[cfg(doc)]
use super::Keep;
use super::{Condenser, Spill, SpillKind};

/// The window of an array's last elements (see the module docs).
#[derive(Debug)]
pub(super) struct LastElements {
    /// The array's depth (the stack's length while it is open).
    pub(super) depth: usize,
    /// The array's JSON Pointer, for its report.
    pointer: Vec<u8>,
    /// The number of the first element read into the window (the first
    /// not written).
    first: u64,
    /// Bytes the window holds at most: what it may write at the close.
    limit: usize,
    /// The elements held, from `bytes[from..]`, each with the comma after
    /// it; bytes before `from` have left.
    bytes: Vec<u8>,
    from: usize,
    /// Where each element held starts in `bytes`; the last is the one
    /// being read.
    starts: VecDeque<usize>,
    /// The element being read passed the limit: its bytes are not held.
    skipping: bool,
    /// An element left the window or never entered it: the array is cut.
    pub(super) cut: bool,
}

impl LastElements {
    /// A window for the array at `depth` and `pointer`, whose element
    /// `first` starts now, holding at most `limit` bytes.
    pub(super) fn new(depth: usize, pointer: Vec<u8>, first: u64, limit: usize) -> Self {
        LastElements {
            depth,
            pointer,
            first,
            limit,
            bytes: Vec::new(),
            from: 0,
            starts: VecDeque::from([0]),
            skipping: false,
            cut: false,
        }
    }

    fn held(&self) -> usize {
        self.bytes.len() - self.from
    }

    /// Whether `piece` would make an element leave the window.
    fn overflows(&self, piece: &[u8]) -> bool {
        self.skipping || self.held() + piece.len() > self.limit
    }

    /// The next bytes of the element being read (whitespace between tokens
    /// already dropped).
    fn push(&mut self, piece: &[u8]) {
        if self.skipping || piece.is_empty() {
            return;
        }
        if self.held() + piece.len() > self.limit {
            self.cut = true;
            let current = self.starts.back().copied().unwrap_or(self.bytes.len());
            if self.bytes.len() - current + piece.len() > self.limit {
                // The element alone passes the limit: none before it is
                // among the last, and it is not kept either.
                self.skipping = true;
                self.bytes.clear();
                self.from = 0;
                self.starts.clear();
                return;
            }
            while self.held() + piece.len() > self.limit && self.starts.len() > 1 {
                self.starts.pop_front();
                self.from = self.starts.front().copied().unwrap_or(current);
            }
        }
        self.bytes.extend_from_slice(piece);
        // Compacts once the bytes left behind are as many as those held,
        // so each byte is moved at most once on average.
        if self.from > self.held() {
            self.bytes.drain(..self.from);
            let from = self.from;
            self.starts.iter_mut().for_each(|s| *s -= from);
            self.from = 0;
        }
    }

    /// Another element starts.
    pub(super) fn element(&mut self) {
        self.skipping = false;
        self.starts.push_back(self.bytes.len());
    }

    /// The elements held as read, each with the comma after it; the last
    /// one may be partial (while it is read).
    fn segments(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let ends = self
            .starts
            .iter()
            .skip(1)
            .copied()
            .chain([self.bytes.len()]);
        self.starts
            .iter()
            .zip(ends)
            .map(|(&start, end)| &self.bytes[start..end])
    }

    /// At the close: the bytes to write after the first elements (each
    /// element after a comma, but the first when `after` is false) and how
    /// many elements they are.
    pub(super) fn finish(&self, after: bool) -> (Vec<u8>, u64) {
        let mut out = Vec::with_capacity(self.held() + 1);
        let mut count = 0;
        for segment in self.segments() {
            let element = segment.strip_suffix(b",").unwrap_or(segment);
            if element.is_empty() {
                continue;
            }
            if after || count > 0 {
                out.push(b',');
            }
            out.extend_from_slice(element);
            count += 1;
        }
        (out, count)
    }
}

impl Condenser {
    /// Reads `piece` (the bytes of `bytes` from `at`) into the window of
    /// the array whose last elements are kept. If an element is about to
    /// leave it for the first time, the array is cut: with links, its
    /// report starts with what the window holds, and `piece` on is
    /// reported from the input (the returned start of the bytes not yet
    /// reported, for `scan`).
    pub(super) fn keep_last(
        &mut self,
        bytes: &[u8],
        at: usize,
        end: usize,
        run: Option<usize>,
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Option<usize> {
        let piece = &bytes[at..end];
        let Some(last) = self.last.as_ref() else {
            return run;
        };
        let mut run = run;
        if !last.cut && last.overflows(piece) {
            let (pointer, first, depth) = (last.pointer.clone(), last.first, last.depth);
            let kind = SpillKind::Elements { first };
            if let Some(value) = self.number_spilled(kind, pointer) {
                spill(Spill::Start { value, kind });
                spill(Spill::Raw {
                    value,
                    bytes: b"[\n",
                });
                // One element a line: a newline after each but the one
                // being read.
                let segments = self.last.iter().flat_map(|last| last.segments());
                for (n, segment) in segments.enumerate() {
                    if n > 0 {
                        spill(Spill::Raw {
                            value,
                            bytes: b"\n",
                        });
                    }
                    spill(Spill::Raw {
                        value,
                        bytes: segment,
                    });
                }
                self.elements = Some((value, depth));
                run = Some(at);
            }
            if let Some(last) = self.last.as_mut() {
                last.cut = true;
            }
        }
        if let Some(last) = self.last.as_mut() {
            last.push(piece);
        }
        run
    }
}
