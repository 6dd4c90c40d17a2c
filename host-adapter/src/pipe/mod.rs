//! The child-pipe core under both the session and the proxy: what either
//! does with a child's three pipes, written once.
//!
//! - [`process`]: spawning in its own process group (a Job Object on
//!   Windows), stopping the group, reaping, stopping in steps (end of
//!   input, SIGTERM, SIGKILL) and how it ended (`Ending`,
//!   `ShutdownTimeouts`, re-exported by `session`).
//! - [`in_flight`]: the requests in flight and those ended unanswered, and
//!   when a response without an id may be pinned on one.
//! - [`jsonrpc`]: the JSON-RPC lines drainpipe writes itself and their codes.
//! - [`reader`]: the framing reader, over a `FramerBackend` (native or the
//!   component), that never stops reading.
//! - [`stdin`]: the one task that writes to a child's stdin (or any pipe).
//! - [`lane`]: writing a batch straight to a pipe while its writer task is
//!   idle, in order with what that task writes.
//! - [`stderr`]: the drain that reads a child's stderr for as long as it is
//!   open.
//! - [`server_end`]: the server as the proxy engine sees it, whatever it
//!   is (`ServerEnd`: lines to write and read; `ServerControl`: how it
//!   ends; `Failure`: a request its transport failed), implemented here
//!   for a child and in `remote/` for a remote session.
//! - [`sink`]: the proxy's own stderr, written by one thread, queued into
//!   without ever waiting (`StderrSink`, re-exported by `proxy`); the proxy
//!   engine and the remote bridge both write to it.
//! - [`sys`]: what differs between platforms (process groups or jobs,
//!   signals, the process table, this process's own stdio, private files),
//!   one file per platform family; nothing else says `cfg(unix)`.
//!
//! What each side does with the messages (a session routes answers to its
//! callers, the proxy forwards them) stays in `session/` and `proxy/`.

pub(crate) mod in_flight;
pub(crate) mod jsonrpc;
pub(crate) mod lane;
pub(crate) mod process;
pub(crate) mod reader;
pub(crate) mod server_end;
pub(crate) mod sink;
pub(crate) mod stderr;
pub(crate) mod stdin;
pub(crate) mod sys;
