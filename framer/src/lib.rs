//! A sans-IO framer for MCP's stdio transport: bytes in, events out.
//!
//! MCP over stdio is newline-delimited JSON-RPC on an OS pipe, and a pipe is a
//! bounded byte stream, not an infinitely fast message bus. A host that stops
//! reading a server's stdout, even to decide that a message is too big,
//! blocks the server in `write()`; both processes then sit idle forever. This
//! crate is the part of the fix that can be exactly specified and exhaustively
//! tested: it turns whatever bytes arrive into a sequence of [`Event`]s, so the
//! IO loop around it can keep reading no matter what the peer sends.
//!
//! # The model
//!
//! - **Bytes in, events out.** [`Framer::push`] takes a chunk of any size,
//!   split anywhere (inside a UTF-8 code point, between `\r` and `\n`, one byte
//!   at a time) and calls back with events in stream order; [`Framer::finish`]
//!   ends the stream. Incomplete data is a state, never an error.
//! - **The transport limit is checked on raw bytes, before parsing.** A line
//!   longer than [`Config::with_max_frame_bytes`] is reported the moment it
//!   crosses the limit ([`Event::Oversize`], with the request id if it came
//!   first), then discarded up to its newline; the next message is framed
//!   normally. The framer never holds more than the limit.
//! - **Validation streams.** JSON is validated strictly (RFC 8259, top level an
//!   object) in the same pass that frames it, with memory proportional to the
//!   nesting depth, and the JSON-RPC [`Envelope`] (`id`, `method`, `result` /
//!   `error`) is recorded on the way so a host can route a message without
//!   parsing it. A message inside a chunk is read once: the validator finds
//!   where its object ends, and the newline after it (never reading past the
//!   limit or the first newline), before anything looks for the newline.
//! - **No IO, no clocks, no randomness, no `unsafe`.** The crate is `no_std`
//!   with `alloc`; it builds for `wasm32` and is the core of the WebAssembly
//!   component. Time, cancellation and processes belong to the host.
//!
//! The second limit, the **result budget** for what a tool returns, lives in
//! [`budget`].
//!
//! The same guarantees for **server-sent events**, the body of MCP's
//! Streamable HTTP answers and streams, live in [`sse`]: an event stream
//! read by the WHATWG rules at any split, a byte limit per event checked
//! before its data is parsed, recovery at the event's blank line that keeps
//! its `id`, and this validator and [`Envelope`] for its data.
//!
//! With the `tokio-util` feature (which needs `std`), `codec::FramerCodec`
//! puts the framer behind tokio-util's `Decoder` and `Encoder`, as a drop-in
//! replacement for `LinesCodec` that never ends a `FramedRead` stream on bad
//! input.
//!
//! # Example
//!
//! ```
//! use drainpipe_framer::{Config, Event, Framer, Id};
//!
//! let mut framer = Framer::new(Config::default().with_max_frame_bytes(32));
//! let stream = b"{\"id\":7,\"result\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}\n{\"id\":8,\"result\":1}\n";
//! let mut seen = Vec::new();
//! for chunk in stream.chunks(5) {
//!     framer.push(chunk, |event| match event {
//!         // The id came before the limit: fail request 7 now.
//!         Event::Oversize { envelope, .. } => seen.push(format!("too large: {:?}", envelope.id)),
//!         Event::Discarded { len, .. } => seen.push(format!("dropped {len} bytes")),
//!         Event::Frame(frame) => seen.push(format!("frame for {:?}", frame.envelope.id)),
//!         other => seen.push(format!("{other:?}")),
//!     });
//! }
//! framer.finish(|_| {});
//! assert_eq!(seen, [
//!     format!("too large: {:?}", Some(Id::Number(b"7"))),
//!     "dropped 54 bytes".to_string(),
//!     format!("frame for {:?}", Some(Id::Number(b"8"))),
//! ]);
//! ```
#![no_std]
#![forbid(unsafe_code, unused_must_use)]
#![deny(missing_docs, unreachable_pub)]

extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

pub mod budget;
#[cfg(feature = "tokio-util")]
pub mod codec;
mod config;
mod event;
mod framer;
pub mod in_place;
mod json;
pub mod owned;
pub mod packed;
pub mod splice;
pub mod sse;
mod stats;
#[cfg(feature = "testing")]
pub mod testing;
mod utf8;

pub use config::Config;
pub use event::{Envelope, Event, Frame, Id, JsonError, JsonErrorKind, MessageKind};
pub use framer::Framer;
pub use in_place::InPlaceFramer;
pub use stats::Stats;
