//! A transparent stdio MCP proxy: put it in front of a server command and
//! every message passes through a framer with a transport limit, in both
//! directions.
//!
//! ```text
//!  host stdin ──► reader ─(frames)─► queue ──► writer ──► server stdin
//!                   │ errors for rejected host requests ─┐
//!                   ▼                                     ▼
//!  host stdout ◄── writer ◄── queue ◄─(frames)─ reader ◄── server stdout
//!                                                  └ stray lines ─► stderr (counted)
//!  proxy stderr ◄── bounded queue ◄── server stderr (always drained)
//! ```
//!
//! Each direction is its own reader and writer, joined by a bounded queue, so
//! a slow peer holds up only the direction that writes to it: a host that
//! stops reading the proxy's stdout still reaches the server with
//! `notifications/cancelled`.
//!
//! On unix, with a child server and this process's own stdio, each reader
//! is a thread of its own waiting in a blocking read, and a batch skips the
//! queue when the writer is idle and nothing is queued: the reader writes it
//! straight to the other peer with a write that never waits, and what the
//! pipe does not take at once is the writer's next write (`pipe::lane`). A
//! small message then crosses the proxy on the one thread the kernel woke
//! for it, as through a plain relay of two blocking threads; the runtime
//! keeps every wait (a peer that does not read, the proxy's own answers,
//! the spill store, shutdown). Anything else (a remote server, a terminal,
//! Windows) is read and written by runtime tasks. What the proxy writes itself (errors for
//! rejected messages) never waits: it is dropped and counted when there is no
//! room. An oversize or malformed message is never forwarded; when its id is
//! known, whoever waits for it gets a JSON-RPC error instead of a hang.
//!
//! With `clip`, a `tools/call` result over the content budget is
//! condensed as it streams; with `spill` too, the full value of what was
//! cut is kept in the spill store (`proxy/spill/`) and linked from the result, and the
//! proxy answers `resources/read` for those links and the `drainpipe_read`
//! tool it adds to `tools/list` itself, never forwarding them.
//!
//! The proxy ends with the server: when the server exits, what it wrote is
//! delivered, requests still waiting get an error, and [`run`] returns its
//! status. When the host closes stdin, the server's stdin is closed and it
//! gets [`ProxyConfig::shutdown`] to exit before SIGTERM and SIGKILL.
//!
//! The engine stands on the pipe core (`pipe/`). A run is the stages of
//! `serve.rs` (wire, wait, shut_down, fail_waiting, outcome, close), every
//! task it spawns tracked (`tasks.rs`), and it knows no server end by
//! name: it is given a `ServerEnd` (lines to write, lines to read, and a
//! `ServerControl` that ends the server), a child's by [`run`], the remote
//! bridge's by `run_remote`. [`StderrSink`] and the metrics types live
//! beneath the engine (`pipe/sink.rs`, `metrics.rs`), where `remote` and
//! `telemetry` use them without depending on the proxy, and are
//! re-exported here.

mod batch;
mod host;
mod observe;
mod queue;
mod route;
mod serve;
pub(crate) mod spill;
mod tasks;

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use drainpipe_framer::Config as FramerConfig;
use drainpipe_framer::budget::Clip;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

pub use crate::metrics::{DirectionMetrics, ProxyMetrics};
pub use crate::pipe::jsonrpc::{
    INVALID_REQUEST, OVER_BUDGET, PARSE_ERROR, SERVER_BUSY, SERVER_GONE, TOO_LARGE, UNREAD, reason,
};
pub use crate::pipe::sink::{SinkCloser, StderrSink};
pub use host::{HostStdin, HostStdout};
pub use spill::SpillConfig;

use crate::pipe::process;
use crate::pipe::process::ShutdownTimeouts;
use crate::pipe::reader::Source;
use crate::pipe::server_end::ServerEnd;
use crate::pipe::sys;

/// How the proxy is configured. Start from `default()`.
#[derive(Clone, Copy, Debug)]
pub struct ProxyConfig {
    /// The framer's limits, applied to both directions; `max_frame_bytes` is
    /// the transport limit in bytes on the wire. Protects the proxy's and the
    /// host's **memory**: no longer message is buffered or forwarded.
    pub framer: FramerConfig,
    /// The content budget of `tools/call` results: bytes on the wire of the
    /// whole response, or characters or tokens of what the host shows the
    /// model ([`Clip`]); `None` to forward results as they are. Protects the
    /// agent's **context**: a larger result is condensed on the wire (what
    /// was cut said in the result), or answered with an error if it cannot
    /// be.
    pub clip: Option<Clip>,
    /// With `clip`: keep the full value of everything condensing cut
    /// in a private spill store, link it from the result (`resource_link`)
    /// and answer `resources/read` and the added `drainpipe_read` tool for
    /// it. `None` to keep nothing (the cut values are then gone).
    pub spill: Option<SpillConfig>,
    /// Run both directions' framers inside the WebAssembly component (one
    /// capped instance each, as sandboxed sessions do) instead of natively:
    /// a bug in the framer then costs this proxy, never the host. A failed
    /// instance ends the proxy.
    pub sandbox: bool,
    /// Bytes of whole messages queued per direction for a peer that reads
    /// slowly; a message larger than this is queued alone. Bounds the
    /// proxy's **memory**: per direction, at most this plus the message
    /// being read and the one being written.
    pub queue_bytes: usize,
    /// The proxy's own errors queued per direction; past this they are
    /// dropped (counted) rather than waited for.
    pub reply_queue: usize,
    /// Bytes read per read call.
    pub read_chunk_bytes: usize,
    /// The longest piece of a diverted non-protocol line written to stderr,
    /// in bytes: a stray gigabyte on stdout must not become a gigabyte of log.
    pub max_diverted_line_bytes: usize,
    /// How long the server gets after its stdin closed, after SIGTERM, and
    /// after SIGKILL.
    pub shutdown: ShutdownTimeouts,
}

impl Default for ProxyConfig {
    /// 4 MiB transport limit, no clipping, 1 MiB queued per direction,
    /// 5 s / 2 s / 2 s shutdown.
    fn default() -> Self {
        ProxyConfig {
            framer: FramerConfig::default(),
            clip: None,
            spill: Some(SpillConfig::default()),
            sandbox: false,
            queue_bytes: 1 << 20,
            reply_queue: 1024,
            read_chunk_bytes: 64 << 10,
            max_diverted_line_bytes: 4096,
            shutdown: ShutdownTimeouts {
                after_close: Duration::from_secs(5),
                after_term: Duration::from_secs(2),
                after_kill: Duration::from_secs(2),
            },
        }
    }
}

/// How a proxy run ended.
#[derive(Debug)]
#[non_exhaustive]
pub struct ProxyOutcome {
    /// The server's exit status, if it was reaped.
    pub status: Option<ExitStatus>,
    /// What the proxy counted.
    pub metrics: ProxyMetrics,
}

impl ProxyOutcome {
    /// The exit code that passes the server's status through: its code, or
    /// 128 + the signal that ended it (as shells report it); 1 if it was
    /// never reaped.
    pub fn exit_code(&self) -> i32 {
        exit_code(self.status)
    }
}

/// This process's stdin, as the proxy's host input. Given to [`run`] on
/// unix, a pipe, a stream socket or a file is read on a thread of the
/// proxy's own in blocking calls; read as a stream, it is read through the
/// runtime's reactor where the platform allows it, else on tokio's
/// blocking thread. Needs a tokio runtime.
pub fn host_stdin() -> HostStdin {
    HostStdin::new()
}

/// This process's stdout, as the proxy's host output (see [`host_stdin`]):
/// given to [`run`], the server's reader writes to it directly while its
/// writer is idle, where a write to it never waits.
pub fn host_stdout() -> HostStdout {
    HostStdout::new()
}

/// For each thread of the proxy's runtime (`on_thread_start`): asks the
/// scheduler to run the thread promptly when it wakes (a short slice, on
/// Linux 6.12 and later; nothing elsewhere), since every message waits for
/// it. Call it on the runtime's threads only, not on the one that starts
/// the server: a child inherits the setting, and the server's scheduling
/// is not the proxy's to change.
pub fn on_io_thread_start() {
    sys::wake_promptly();
}

/// Calls `asked` each time this process is asked to stop: SIGTERM, SIGINT
/// or SIGHUP on unix; Ctrl+C, Ctrl+Break or the console closing on
/// Windows. Needs a tokio runtime.
pub fn on_stop_request(asked: impl Fn() + Clone + Send + 'static) -> io::Result<()> {
    sys::on_stop_request(asked)
}

/// The shell's exit code for a status: the code, or 128 + signal.
pub fn exit_code(status: Option<ExitStatus>) -> i32 {
    match status {
        Some(status) => status
            .code()
            .or_else(|| sys::exit_signal(&status).map(|s| 128 + s))
            .unwrap_or(1),
        None => 1,
    }
}

/// Starts `command` as the server (its own process group, three pipes) and
/// proxies between it and the host's `host_in` / `host_out` until the server
/// ends. Diagnostics, diverted lines and the server's stderr go to `sink`.
/// `stop` asks the server to end (SIGTERM to its group), as a signal to the
/// proxy would. Must be called within a tokio runtime.
pub async fn run(
    command: Command,
    config: ProxyConfig,
    host_in: impl AsyncRead + Unpin + Send + 'static,
    host_out: impl AsyncWrite + Unpin + Send + 'static,
    sink: StderrSink,
    stop: CancellationToken,
) -> io::Result<ProxyOutcome> {
    let spawned = process::spawn(command)?;
    let (input, input_raw) = sys::child_input(spawned.stdin);
    let output = match sys::child_output(spawned.stdout) {
        Ok(blocking) => Source::Blocking(blocking),
        Err(stdout) => Source::Reactor(Box::new(stdout)),
    };
    let server = ServerEnd {
        input,
        input_raw,
        output,
        stderr: Some(spawned.stderr),
        failures: None,
        remote: None,
        control: Box::new(spawned.control),
    };
    serve::serve(server, config, host_in, host_out, sink, stop).await
}

/// Proxies between the host's `host_in` / `host_out` and the remote server
/// `remote` (Streamable HTTP, or HTTP+SSE): the same guarantees as [`run`]
/// for a child, every message to the server a POST, every answer body and
/// the server's own stream read as its output (see `remote`). Ends when
/// the host closes its input (the session is then ended with `DELETE`),
/// when the server ends the session, or at `stop`. Fails at once only for
/// a URL or header that cannot be used.
#[cfg(feature = "remote")]
pub async fn run_remote(
    remote: &crate::remote::RemoteConfig,
    config: ProxyConfig,
    host_in: impl AsyncRead + Unpin + Send + 'static,
    host_out: impl AsyncWrite + Unpin + Send + 'static,
    sink: StderrSink,
    stop: CancellationToken,
) -> io::Result<ProxyOutcome> {
    let connection =
        crate::remote::connect(remote, config.framer, config.clip.is_some(), sink.clone())?;
    let server = ServerEnd {
        input: Box::new(connection.input),
        input_raw: None,
        output: Source::Reactor(Box::new(connection.output)),
        stderr: None,
        failures: Some(connection.failures),
        remote: Some(connection.peer),
        control: Box::new(connection.control),
    };
    serve::serve(server, config, host_in, host_out, sink, stop).await
}
