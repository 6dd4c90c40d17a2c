//! Counters a host exports as metrics for an event stream.

/// What one [`SseFramer`](super::SseFramer) has seen since it was created,
/// across reconnections ([`SseFramer::finish`](super::SseFramer::finish)
/// keeps them).
///
/// All sizes are bytes of events' lines on the wire, without line ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseStats {
    /// Bytes pushed in total.
    pub bytes_in: u64,
    /// Events handed out as [`SseEvent::Message`](super::SseEvent::Message).
    pub messages: u64,
    /// Events handed out as [`SseEvent::NotJson`](super::SseEvent::NotJson).
    pub not_json: u64,
    /// Events handed out as [`SseEvent::Malformed`](super::SseEvent::Malformed).
    pub malformed: u64,
    /// The largest event dispatched (any of the three above).
    pub largest_event: u64,
    /// Events rejected for passing the event limit.
    pub oversize: u64,
    /// Bytes of those events, all dropped (counted when each one ends).
    pub oversize_bytes_dropped: u64,
    /// Comment lines: keep-alives.
    pub comments: u64,
    /// Streams that ended inside an event not past the limit.
    pub truncated: u64,
    /// The most bytes the framer ever held for the event being read (see
    /// [`SseFramer::buffered`](super::SseFramer::buffered)).
    pub buffered_high_water: u64,
}
