//! Bounded capture of a byte stream: a head and a tail preview, and honest
//! counts of everything in between.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// A sink for one output stream (a child's stdout, or its stderr: use one
/// `Capture` each) that never refuses bytes and never grows past its budget.
///
/// The caller must keep draining a pipe even when the output is useless to
/// the agent, or the writer blocks. `Capture` lets it: [`write`](Self::write)
/// accepts any chunk, keeps the first bytes (head) and the last bytes (tail)
/// within the budget, and counts the rest as dropped. What it shows never
/// starts or ends inside a UTF-8 character.
///
/// ```
/// use drainpipe_framer::budget::Capture;
///
/// let mut stdout = Capture::new(16);
/// for _ in 0..1000 {
///     stdout.write("héllo wörld\n".as_bytes());
/// }
/// let report = stdout.report();
/// assert!(report.truncated);
/// assert_eq!(report.seen, 14_000);
/// assert_eq!(report.kept + report.dropped, report.seen);
/// assert!(report.kept <= 16);
/// assert!(core::str::from_utf8(stdout.head()).is_ok());
/// assert!(core::str::from_utf8(&stdout.tail()).is_ok());
/// assert!(stdout.render().contains("bytes omitted"));
/// ```
#[derive(Clone, Debug)]
pub struct Capture {
    /// The first bytes, up to `head_budget`; never shifted once full.
    head: Vec<u8>,
    /// The last bytes, up to `tail_budget`: a ring, so a long stream costs
    /// one copy per byte however it is chunked.
    tail: VecDeque<u8>,
    head_budget: usize,
    tail_budget: usize,
    /// Every byte ever written, to tell the model how much it did not see.
    seen: u64,
}

impl Capture {
    /// A capture that keeps at most `budget_bytes` bytes of the stream
    /// (protecting the agent's context and the host's memory): half for the
    /// head, the rest for the tail, where errors usually are.
    pub fn new(budget_bytes: usize) -> Self {
        Self::with_head(budget_bytes, budget_bytes / 2)
    }

    /// A capture that keeps at most `budget_bytes` bytes, of which at most
    /// `head_bytes` (clamped to the budget) from the start of the stream.
    pub fn with_head(budget_bytes: usize, head_bytes: usize) -> Self {
        let head_budget = head_bytes.min(budget_bytes);
        let tail_budget = budget_bytes - head_budget;
        Capture {
            head: Vec::with_capacity(head_budget.min(64 * 1024)),
            tail: VecDeque::new(),
            head_budget,
            tail_budget,
            seen: 0,
        }
    }

    /// Accepts `chunk`, whatever its size. Never fails, never blocks, and
    /// costs no more memory than the budget.
    pub fn write(&mut self, chunk: &[u8]) {
        self.seen += chunk.len() as u64;
        let to_head = (self.head_budget - self.head.len()).min(chunk.len());
        self.head.extend_from_slice(&chunk[..to_head]);
        let rest = &chunk[to_head..];
        if rest.len() >= self.tail_budget {
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - self.tail_budget..]);
        } else {
            let overflow = (self.tail.len() + rest.len()).saturating_sub(self.tail_budget);
            self.tail.drain(..overflow);
            self.tail.extend(rest);
        }
    }

    /// Whether bytes between the head and the tail were dropped.
    pub fn truncated(&self) -> bool {
        self.seen > (self.head.len() + self.tail.len()) as u64
    }

    /// The first bytes of the stream, ending before a UTF-8 character that
    /// the head's budget cut in two.
    pub fn head(&self) -> &[u8] {
        &self.head[..complete_prefix_len(&self.head)]
    }

    /// The last bytes of the stream. If the stream was truncated, it starts
    /// after the continuation bytes of a character cut in two; if not, it
    /// starts where [`head`](Self::head) ends, so the two together are the
    /// whole stream.
    pub fn tail(&self) -> Vec<u8> {
        let mut tail = Vec::with_capacity(self.tail.len() + 3);
        if self.truncated() {
            tail.extend(self.tail.iter().skip(self.tail_skip()));
        } else {
            tail.extend_from_slice(&self.head[self.head().len()..]);
            tail.extend(self.tail.iter());
        }
        tail
    }

    /// Continuation bytes at the start of a truncated tail: the end of a
    /// character whose start was dropped.
    fn tail_skip(&self) -> usize {
        self.tail
            .iter()
            .take(3)
            .take_while(|&&b| is_continuation(b))
            .count()
    }

    /// The counters, at any time.
    pub fn report(&self) -> CaptureReport {
        let kept = if self.truncated() {
            (self.head().len() + self.tail.len() - self.tail_skip()) as u64
        } else {
            self.seen
        };
        CaptureReport {
            seen: self.seen,
            kept,
            dropped: self.seen - kept,
            truncated: self.truncated(),
        }
    }

    /// Head and tail joined by a marker that says how much is missing, for
    /// a model to read. Invalid UTF-8 shows as `U+FFFD`.
    pub fn render(&self) -> String {
        let head = String::from_utf8_lossy(self.head());
        let tail = self.tail();
        let tail = String::from_utf8_lossy(&tail);
        let report = self.report();
        if report.truncated {
            alloc::format!(
                "{head}\n[… {} bytes omitted …]\n{tail}",
                super::notice::grouped(report.dropped)
            )
        } else {
            alloc::format!("{head}{tail}")
        }
    }

    /// Ends the capture.
    pub fn into_parts(self) -> CapturedOutput {
        CapturedOutput {
            head: self.head().to_vec(),
            tail: self.tail(),
            report: self.report(),
        }
    }
}

/// Counts of a [`Capture`]. `kept + dropped == seen` always.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CaptureReport {
    /// Bytes written in all.
    pub seen: u64,
    /// Bytes shown (head plus tail).
    pub kept: u64,
    /// Bytes not shown: the middle of the stream, and the pieces of at most
    /// two characters the cut went through.
    pub dropped: u64,
    /// Whether anything was dropped.
    pub truncated: bool,
}

impl fmt::Display for CaptureReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use super::notice::grouped;
        if self.truncated {
            write!(
                f,
                "kept {} of {} bytes ({} dropped)",
                grouped(self.kept),
                grouped(self.seen),
                grouped(self.dropped)
            )
        } else {
            write!(f, "kept all {} bytes", grouped(self.seen))
        }
    }
}

/// What a finished [`Capture`] holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CapturedOutput {
    /// The first bytes shown.
    pub head: Vec<u8>,
    /// The last bytes shown.
    pub tail: Vec<u8>,
    /// The counters.
    pub report: CaptureReport,
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The length of `bytes` without a trailing, incomplete UTF-8 sequence.
fn complete_prefix_len(bytes: &[u8]) -> usize {
    let len = bytes.len();
    // A sequence is at most 4 bytes: look back at most 3 for its lead byte.
    for back in 1..=len.min(4) {
        let b = bytes[len - back];
        if is_continuation(b) {
            continue;
        }
        let width = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if width > back { len - back } else { len };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_only_incomplete_sequences() {
        assert_eq!(complete_prefix_len(b"ab"), 2);
        assert_eq!(complete_prefix_len("aé".as_bytes()), 3);
        assert_eq!(complete_prefix_len(&"a😀".as_bytes()[..4]), 1);
        assert_eq!(complete_prefix_len(&"a😀".as_bytes()[..2]), 1);
        assert_eq!(complete_prefix_len("a😀".as_bytes()), 5);
        assert_eq!(complete_prefix_len(&[0x80, 0x80, 0x80, 0x80]), 4);
    }
}
