//! Bounded capture of a child's output: the framer's [`Capture`], sized by
//! [`CaptureLimits`] and read as a serialisable [`CaptureSnapshot`].

use drainpipe_framer::budget::Capture;
use serde::Serialize;

/// How much of a stream a capture keeps: the first `head_bytes` and the last
/// `tail_bytes`. Protects the host's **memory** (and an agent's context, if
/// the preview is shown to a model) from a child that prints without end;
/// everything in between is counted, not stored. Units are bytes as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaptureLimits {
    /// Bytes kept from the start of the stream.
    pub head_bytes: usize,
    /// Bytes kept from the end of the stream.
    pub tail_bytes: usize,
}

impl CaptureLimits {
    /// An empty capture within these limits.
    pub fn capture(&self) -> Capture {
        Capture::with_head(
            self.head_bytes.saturating_add(self.tail_bytes),
            self.head_bytes,
        )
    }
}

impl Default for CaptureLimits {
    /// 16 KiB of head and 16 KiB of tail.
    fn default() -> Self {
        CaptureLimits {
            head_bytes: 16 << 10,
            tail_bytes: 16 << 10,
        }
    }
}

/// What a capture shows at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CaptureSnapshot {
    /// The start of the stream (invalid UTF-8 shown as U+FFFD).
    pub head: String,
    /// The end of the stream, when something was dropped before it.
    pub tail: String,
    /// Every byte the capture accepted.
    pub seen_bytes: u64,
    /// Bytes accepted but not shown.
    pub dropped_bytes: u64,
    /// Whether anything was dropped between head and tail.
    pub truncated: bool,
    /// Head and tail joined by a marker saying how much is missing.
    pub preview: String,
}

impl CaptureSnapshot {
    /// Reads `capture` without disturbing it.
    pub fn of(capture: &Capture) -> Self {
        let report = capture.report();
        CaptureSnapshot {
            head: String::from_utf8_lossy(capture.head()).into_owned(),
            tail: String::from_utf8_lossy(&capture.tail()).into_owned(),
            seen_bytes: report.seen,
            dropped_bytes: report.dropped,
            truncated: report.truncated,
            preview: capture.render(),
        }
    }

    /// Head and tail together, for searching the whole kept text.
    pub fn kept_text(&self) -> String {
        format!("{}{}", self.head, self.tail)
    }
}
