//! The child-pipe core under both the session and the proxy: what either
//! does with a child's three pipes, written once.
//!
//! - [`process`]: spawning in its own process group, signalling the group,
//!   reaping, stopping in steps (end of input, SIGTERM, SIGKILL).
//! - [`in_flight`]: the requests in flight and those ended unanswered, and
//!   when a response without an id may be pinned on one.
//! - [`jsonrpc`]: the JSON-RPC lines drainpipe writes itself and their codes.
//! - [`reader`]: the framing reader, over a `FramerBackend` (native or the
//!   component), that never stops reading.
//! - [`stdin`]: the one task that writes to a child's stdin (or any pipe).
//! - [`stderr`]: the drain that reads a child's stderr for as long as it is
//!   open.
//! - [`sys`]: what differs between platforms (process groups, signals, the
//!   process table), one file per platform family.
//!
//! What each side does with the messages (a session routes answers to its
//! callers, the proxy forwards them) stays in `session/` and `proxy/`.

pub(crate) mod in_flight;
pub(crate) mod jsonrpc;
pub(crate) mod process;
pub(crate) mod reader;
pub(crate) mod stderr;
pub(crate) mod stdin;
pub(crate) mod sys;
