//! Server-sent events: a push parser for `text/event-stream` bodies, beside
//! the line framer and in its style.
//!
//! MCP's Streamable HTTP transport answers a POST, and streams a server's
//! own messages on a GET, as an event stream: `id:`, `event: message`,
//! `data: <one JSON-RPC message>`, a blank line. [`SseFramer`] reads such a
//! body as the WHATWG HTML rules for server-sent events say, and gives each
//! event's data the line framer's guarantees:
//!
//! - **Lines and fields as the rules say.** Lines end in CRLF, LF or CR, at
//!   any chunk split (a `\r` ends its line at once, and a `\n` right after
//!   it, even in the next chunk, belongs to the same line end); a UTF-8 BOM
//!   is skipped at the very start only; `:` starts a comment; one space
//!   after the colon is dropped; `data` lines join with `\n`; an `id`
//!   containing NUL is ignored and the last event id persists across
//!   events; `retry` counts only if all ASCII digits; a blank line
//!   dispatches, an event without data is not dispatched (its `id` still
//!   counts), an event cut off by the end of the stream is dropped.
//! - **A limit per event, checked before any JSON is parsed.** An event
//!   whose lines pass [`SseConfig::with_max_event_bytes`] is reported the
//!   moment it crosses the limit ([`SseEvent::Oversize`]), then followed to
//!   its blank line without being kept ([`SseEvent::Discarded`]), which
//!   still reports its `id` and the JSON-RPC envelope of its whole data.
//! - **The same strict validator.** An event's data that starts like JSON
//!   is checked as a line is (UTF-8, RFC 8259, one object, the depth
//!   limit) as it arrives, and carries the same [`Envelope`](crate::Envelope);
//!   data that is not JSON is reported as such ([`SseEvent::NotJson`]),
//!   never as an error that ends the stream.
//! - **Liveness for the caller's clock.** Comments (the keep-alives servers
//!   send) are reported ([`SseEvent::Comment`]) so an idle timer can be
//!   reset; the framer has no clock of its own.
//!
//! Deliberately left to the caller: decoding (the bytes are kept as sent;
//! a browser would replace invalid UTF-8), the reconnection itself, and
//! HTTP.
//!
//! The reference parser the tests hold this one to is
//! `testing::sse::reference_sse` (feature `testing`).

mod config;
mod data;
mod event;
mod fields;
mod framer;
mod ids;
mod lines;
pub mod owned;
mod relay;
mod stats;
#[cfg(test)]
mod tests;

pub use config::SseConfig;
pub use event::{SseEvent, SseMessage};
pub use framer::SseFramer;
pub use owned::{OwnedSseEvent, OwnedSseMessage};
pub use relay::{MAX_EVENT_ID_BYTES, MAX_EVENT_TYPE_BYTES, RelayEnd, RelayEvent, SseRelay};
pub use stats::SseStats;
