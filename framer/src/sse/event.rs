//! What the event-stream framer tells its caller: one [`SseEvent`] per thing
//! that happened in the stream, each documented with what to do next.

use crate::event::{Envelope, JsonError};

/// One thing the [`SseFramer`](super::SseFramer) found in a
/// `text/event-stream` body.
///
/// Every event of the stream (the lines up to a blank line) ends in exactly
/// one of: [`SseEvent::Message`], [`SseEvent::NotJson`],
/// [`SseEvent::Malformed`], an [`SseEvent::Oversize`] followed later by
/// exactly one [`SseEvent::Discarded`], [`SseEvent::Truncated`] at the end
/// of the stream, or nothing at all when it has no `data` (a keep-alive, or
/// an event that only sets `id` or `retry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SseEvent<'a> {
    /// An event whose data is one valid JSON-RPC message: a JSON object,
    /// checked strictly as the line framer checks a line. Route it by
    /// `message.envelope`; remember `message.last_event_id` if you may
    /// resume the stream.
    Message(SseMessage<'a>),
    /// An event whose data starts like JSON (`{`, `[` or `"` after
    /// whitespace) but is not a valid message (see [`JsonError`]; `at`
    /// counts from the data's first byte). Count it as a parse failure; if
    /// `message.envelope.id` is set, fail that request. The stream goes on.
    Malformed {
        /// The event; its envelope is what was recorded before the error.
        message: SseMessage<'a>,
        /// What is wrong, and where.
        error: JsonError,
    },
    /// An event whose data does not start like JSON, such as the empty
    /// data of a priming event (an `id` and `data:` alone, sent first by
    /// servers from protocol revision 2025-11-25) or a text payload. Not a
    /// protocol message: take its `last_event_id`, log or ignore the rest.
    NotJson(SseMessage<'a>),
    /// A comment line (`:` first) started: the server is alive. Reset your
    /// idle timer; there is nothing else to do (its text is not kept).
    Comment {
        /// Stream offset of the `:`.
        offset: u64,
    },
    /// A `retry` field of ASCII digits only: wait this long before
    /// reconnecting from now on. Reported when its line ends, whether or not
    /// its event is dispatched, as the rules say.
    Retry {
        /// The reconnection time in milliseconds (saturating at `u64::MAX`).
        millis: u64,
    },
    /// The event starting at `offset` passed
    /// [`SseConfig::max_event_bytes`](super::SseConfig::with_max_event_bytes).
    /// Nothing more of its data is buffered or parsed into a message; the
    /// framer now follows it to its blank line, keeping only its `id` and
    /// its JSON-RPC routing fields. If `envelope.id` is set (the id came
    /// before the limit), fail that request **now**: its answer will not
    /// come. Otherwise wait for [`SseEvent::Discarded`].
    Oversize {
        /// Stream offset of the event's first line.
        offset: u64,
        /// The last event id as it stands at the limit (this event's `id`
        /// if its line came first, else an earlier event's; empty if none).
        last_event_id: &'a [u8],
        /// What was recorded from the data before the limit.
        envelope: Envelope<'a>,
    },
    /// The event rejected by [`SseEvent::Oversize`] at the same `offset`
    /// has ended. `envelope` is the JSON-RPC envelope of its **whole** data,
    /// wherever its fields stood (copies of the recorded fields only; none
    /// of the data is kept): if the rejection named no request and
    /// `envelope.id` is set now (a server that writes `id` last, as the
    /// TypeScript SDK does), fail that request **now**. `last_event_id` is
    /// the event's own, set as for a dispatched event: resume after it.
    Discarded {
        /// Stream offset of the event's first line.
        offset: u64,
        /// Bytes of the event's lines, without their line ends.
        len: u64,
        /// The stream ended before the event's blank line; nothing was
        /// committed ([`SseFramer::last_event_id`](super::SseFramer::last_event_id)
        /// is unchanged).
        at_eof: bool,
        /// The last event id after the event (see above).
        last_event_id: &'a [u8],
        /// The routing fields of the whole data (empty for data that did
        /// not start like JSON).
        envelope: Envelope<'a>,
        /// The data was a valid message but for its size: valid UTF-8, JSON
        /// grammar throughout, the object closed. Only then is `envelope`
        /// the message's own, as a parser of the whole data would find it.
        well_formed: bool,
    },
    /// The stream ended inside an event (after some of its lines, before
    /// its blank line), which is dropped undispatched as the rules say. If
    /// `envelope.id` is set, fail that request; resume, if you do, from
    /// [`SseFramer::last_event_id`](super::SseFramer::last_event_id).
    Truncated {
        /// Stream offset of the event's first line.
        offset: u64,
        /// Bytes of the event's lines that were received, without line ends.
        len: u64,
        /// What was recorded from the data received.
        envelope: Envelope<'a>,
    },
}

/// A dispatched event: its fields as the WHATWG rules assemble them, and
/// what the JSON validator recorded of its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseMessage<'a> {
    /// Stream offset of the event's first line.
    pub offset: u64,
    /// Bytes of the event's lines, without their line ends: what
    /// [`SseConfig::max_event_bytes`](super::SseConfig::with_max_event_bytes)
    /// counted.
    pub len: u64,
    /// The `event` field's value; empty when the event had none (a browser
    /// then names it `message`).
    pub event_type: &'a [u8],
    /// The `data` lines' values joined with `\n`.
    pub data: &'a [u8],
    /// The last event id: this event's `id`, or an earlier event's if it
    /// had none (empty if no event has set one). What to send as
    /// `Last-Event-ID` to resume after this event.
    pub last_event_id: &'a [u8],
    /// The JSON-RPC routing fields of `data` (empty for
    /// [`SseEvent::NotJson`]).
    pub envelope: Envelope<'a>,
}
