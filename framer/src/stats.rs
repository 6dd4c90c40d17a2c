//! Counters a host exports as metrics, so "the agent hung" becomes a number.

/// What one [`Framer`](crate::Framer) has seen since it was created or reset.
///
/// All sizes are in bytes on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Bytes pushed in total. If this stops growing while the peer is alive,
    /// the peer is stuck writing; if it grows but frames do not, look at the
    /// consumer.
    pub bytes_in: u64,
    /// Complete messages handed out as [`Event::Frame`](crate::Event::Frame).
    pub frames: u64,
    /// The largest frame handed out.
    pub largest_frame: u64,
    /// Lines rejected for passing the transport limit.
    pub oversize: u64,
    /// Bytes dropped by those rejections (whole lines, without newlines).
    pub oversize_bytes_dropped: u64,
    /// Lines that started like JSON but were not valid messages.
    pub malformed: u64,
    /// Bytes dropped with malformed lines.
    pub malformed_bytes_dropped: u64,
    /// Lines that did not start like JSON (stray log output on stdout).
    pub not_protocol: u64,
    /// Empty or whitespace-only lines, skipped.
    pub blank_lines: u64,
    /// Streams that ended inside a line.
    pub truncated: u64,
    /// The most bytes the framer ever held for an unfinished line. Never more
    /// than `max_frame_bytes`.
    pub buffered_high_water: u64,
}
