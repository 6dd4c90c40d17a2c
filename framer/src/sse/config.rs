//! The event-stream framer's limits: what each one protects, and in which
//! unit.

use crate::Config;

/// Limits for one [`SseFramer`](super::SseFramer).
///
/// ```
/// use drainpipe_framer::sse::SseConfig;
/// let config = SseConfig::default().with_max_event_bytes(1 << 20).with_max_depth(64);
/// assert_eq!(config.max_event_bytes(), 1 << 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseConfig {
    max_event_bytes: usize,
    max_depth: u32,
}

impl SseConfig {
    /// Default event limit: 4 MiB, the line framer's default per message.
    pub const DEFAULT_MAX_EVENT_BYTES: usize = Config::DEFAULT_MAX_FRAME_BYTES;

    /// The defaults: 4 MiB events, JSON nesting depth 128.
    pub const fn new() -> Self {
        SseConfig {
            max_event_bytes: Self::DEFAULT_MAX_EVENT_BYTES,
            max_depth: Config::DEFAULT_MAX_DEPTH,
        }
    }

    /// The event limit: the most bytes an event's lines may hold, counted
    /// on the wire without their line ends (comments, field names and
    /// unknown fields included; a BOM not).
    ///
    /// Protects the host's **memory and parser time**. An event that passes
    /// it is never buffered past the limit and never parsed into a message:
    /// the framer reports [`SseEvent::Oversize`](super::SseEvent::Oversize)
    /// the moment the limit is crossed and follows the rest to the event's
    /// blank line, keeping only its ids, so a server that sends a gigabyte
    /// in one event costs the host at most this many bytes (plus ids).
    ///
    /// It bounds ids too: an `id` value longer than this is ignored, as one
    /// containing NUL is (only an event past the limit can hold one), so
    /// the last event id is never longer than the limit.
    pub const fn with_max_event_bytes(mut self, max_event_bytes: usize) -> Self {
        self.max_event_bytes = max_event_bytes;
        self
    }

    /// The nesting limit for the strict JSON validation of an event's data:
    /// the most objects and arrays open at once, as
    /// [`Config::with_max_depth`] for lines.
    ///
    /// Protects the **memory and stack depth** of whoever parses the data
    /// next; the validator keeps one bit per level.
    pub const fn with_max_depth(mut self, max_depth: u32) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// See [`SseConfig::with_max_event_bytes`].
    pub const fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// See [`SseConfig::with_max_depth`].
    pub const fn max_depth(&self) -> u32 {
        self.max_depth
    }
}

impl Default for SseConfig {
    fn default() -> Self {
        Self::new()
    }
}
