//! The native host of drainpipe.
//!
//! `drainpipe-framer` decides what the bytes mean; this crate owns every
//! process, pipe, task, clock and syscall around it:
//!
//! - [`backend`]: the framer behind one trait, either native or the
//!   WebAssembly component run in a capped wasmtime sandbox.
//! - `component` (default feature `component`): that sandbox: the framer
//!   component (`wit/framer.wit`) compiled once per process, one capped
//!   instance per session. Without the feature the crate builds neither
//!   wasmtime nor the guest.
//! - [`session`]: the client side: an MCP stdio server as a child process,
//!   behind a reader that never stops reading.
//! - [`proxy`]: a transparent stdio proxy that puts the transport limit
//!   (and optionally the content budget) in front of any MCP server.
//! - `remote` (default feature `remote`): a remote server over Streamable
//!   HTTP or HTTP+SSE as the proxy's server ([`proxy::run_remote`]).
//! - `serve` (default feature `remote`): the proxy served over Streamable
//!   HTTP, one child per session, for hosts that take remote servers only.
//! - `rmcp` (feature `rmcp`): the session as a transport for the official
//!   Rust MCP SDK's client.
//! - [`server`]: the server side, for tool authors: bounded subprocesses and
//!   cancellation of in-flight work.
//! - `telemetry` (feature `otel`): OpenTelemetry traces and metrics over
//!   OTLP, on the MCP semantic conventions, off unless the environment
//!   configures an endpoint.
//!
//! The proxy's modules stand in layers, each using only those beneath it,
//! so that an end plugs in without the engine knowing it by name:
//!
//! ```text
//!   serve                a host end (HTTP): one engine run per session
//!     │
//!     ▼
//!   proxy                the engine: joins a server end to the host,
//!     │                  each run in stages (proxy/serve.rs)
//!     ├──────────────┐
//!     ▼              ▼
//!   remote         telemetry      a server end (HTTP) · export (OTLP)
//!     │              │
//!     ▼              ▼
//!   pipe           metrics        the core · the proxy's counters
//! ```
//!
//! - `pipe`, the core (private): a child's pipes and process group, the
//!   framing reader, the writers, the proxy's stderr (`StderrSink`), and
//!   the server end the engine talks to (`ServerEnd`, and `ServerControl`
//!   to end it), which a child and the remote bridge each provide.
//! - `metrics` (private): the proxy's counters (`ProxyMetrics`); it uses
//!   nothing of the crate.
//! - `serve` is above the engine: each session is a run of it whose host
//!   end is an in-process pipe, as `remote` made a server a server end.
//! - `remote` and `telemetry` depend on those two and never on `proxy`;
//!   `proxy` re-exports `StderrSink` and the metrics types, where the CLI
//!   has always found them.
// `deny`, not `forbid`: `unsafe` is allowed where it is made, in
// component/cache.rs loading compiled code it wrote itself,
// pipe/sys/unix/stdio.rs registering a descriptor it owns with the reactor,
// and pipe/sys/unix/linux.rs asking the scheduler for a short slice.
#![deny(unsafe_code)]

pub mod backend;
#[cfg(feature = "component")]
pub mod component;
mod condense;
mod metrics;
mod pipe;
pub mod proxy;
#[cfg(feature = "remote")]
pub mod remote;
#[cfg(feature = "rmcp")]
pub mod rmcp;
#[cfg(feature = "remote")]
pub mod serve;
pub mod server;
pub mod session;
pub mod supervise;
#[cfg(feature = "otel")]
pub mod telemetry;
#[cfg(feature = "tokens")]
pub mod tokens;
