//! The client session: an MCP stdio server as a child process, behind a
//! reader that never stops reading.
//!
//! ```text
//!            call / notify / cancel                 stdout ──► reader ──► framer backend
//!  caller ───────────────────────► writer ──► stdin    │          │ responses ──► that caller's slot
//!                                   (own task)          │          └ requests, notifications ──► dispatcher (bounded)
//!                                                       stderr ──► drain ──► capture (head + tail), tracing
//! ```
//!
//! Every path that could block on the server or on a slow caller is its own
//! task with a bound: the reader reads whenever the OS has bytes, the writer
//! alone waits on a server that does not read stdin, stderr is always
//! drained, and every request ends in exactly one outcome.
//!
//! # Example
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use drainpipe_host::session::{CallOptions, ClientInfo, Protocol, Session, SessionConfig};
//!
//! let session = Session::spawn(tokio::process::Command::new("my-mcp-server"), SessionConfig::default())?;
//! // 2026-07-28 through `server/discover`, else the 2025 `initialize`.
//! let client = ClientInfo::new("my-host", "1.0");
//! let negotiated = session.negotiate(Protocol::Auto, &client, CallOptions::default()).await?;
//! println!("{} speaks {}", negotiated.server(), negotiated.revision);
//! let tools = session.call("tools/list", serde_json::json!({}), CallOptions::default()).await?;
//! println!("{}", tools.result);
//! let report = session.shutdown().await;
//! println!("{}", report.metrics.to_json());
//! # Ok(()) }
//! ```

mod capture;
mod config;
mod dispatch;
mod metrics;
mod protocol;
mod reader;
mod requests;
mod stderr;

use std::fmt;
use std::io;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use drainpipe_framer::budget::Capture;
use drainpipe_framer::owned::OwnedId;
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backend::{FramerBackend, NativeFramer};

pub use crate::pipe::process::{Ending, ShutdownTimeouts};
pub use capture::{CaptureLimits, CaptureSnapshot};
pub use config::{
    BackendChoice, BackendFactory, CallOptions, DispatcherFullPolicy, OversizePolicy, SessionConfig,
};
pub use metrics::SessionMetrics;
pub use protocol::{ClientInfo, NegotiateError, Negotiated, Protocol, Revision};
pub use requests::{CallError, PendingCall, Rejection, RequestId, Response};

use crate::pipe::jsonrpc::response_line;
use crate::pipe::process::{self, ProcessControl};
use crate::pipe::stdin::{WriterEnd, write_lines};
use crate::pipe::sys::Stop;
use metrics::Counters;
use requests::PendingMap;

/// A request or notification the server sent to the host.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Incoming {
    /// The method name as written (escapes not decoded).
    pub method: String,
    /// The id if it is a request; answer it with [`Session::respond`].
    pub id: Option<OwnedId>,
    /// The whole message.
    pub bytes: Vec<u8>,
}

impl Incoming {
    /// The message parsed as JSON.
    pub fn json(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::from_slice(&self.bytes)
    }
}

/// What [`Session::shutdown`] found.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// The server's exit status, if it was reaped.
    pub status: Option<ExitStatus>,
    /// How it ended.
    pub ending: Ending,
    /// Processes of the group still alive after the leader was gone (children
    /// it left behind), which were then killed.
    pub leftovers_killed: bool,
    /// Why the session was lost before shutdown, if it was.
    pub lost: Option<String>,
    /// The server's stderr preview.
    pub stderr: CaptureSnapshot,
    /// Final metrics.
    pub metrics: SessionMetrics,
}

/// State shared by the handles and the tasks of one session.
pub(crate) struct Shared {
    config: SessionConfig,
    counters: Arc<Counters>,
    pending: Mutex<PendingMap>,
    writer: mpsc::Sender<Vec<u8>>,
    process: ProcessControl,
    stderr: Arc<Mutex<Capture>>,
    next_id: AtomicU64,
    lost: OnceLock<String>,
    /// The dispatcher is full and the policy is in force (see
    /// [`SessionConfig::dispatcher_wait`]); cleared when a message fits again.
    dispatcher_overflowing: AtomicBool,
    /// The session already killed the server once; later triggers only count once.
    killed: AtomicBool,
    close_stdin: CancellationToken,
    /// What [`Session::negotiate`] settled: the revision, and in 2026-07-28
    /// the envelope every request carries.
    negotiated: OnceLock<protocol::Settled>,
    /// Held for the whole of a handshake, so two callers cannot both run one.
    negotiating: tokio::sync::Mutex<()>,
    /// Telemetry, when the process exports it.
    #[cfg(feature = "otel")]
    trace: Option<crate::telemetry::session::SessionTrace>,
}

impl Shared {
    /// Queues a line without waiting. Used by the reader and by drop paths,
    /// which must never block on a server that is not reading stdin.
    fn try_write(&self, line: Vec<u8>) -> bool {
        let sent = self.writer.try_send(line).is_ok();
        if !sent {
            Counters::bump(&self.counters.writes_dropped);
        }
        sent
    }

    pub(crate) fn send_cancellation(&self, id: RequestId, reason: &str) {
        let line = notification_line(
            "notifications/cancelled",
            &serde_json::json!({ "requestId": id.0, "reason": reason }),
        );
        if self.try_write(line) {
            Counters::bump(&self.counters.cancellations_sent);
        }
    }

    /// Marks the session lost (first reason wins) and fails every pending request.
    fn lose(&self, reason: &str) {
        let _ = self.lost.set(reason.to_string());
        let reason = self.lost.get().expect("just set").clone();
        self.pending
            .lock()
            .expect("pending map")
            .fail_all(&CallError::SessionLost { reason });
    }

    /// Kills the server's process group and loses the session.
    fn kill(&self, reason: &str) {
        // Killed and counted before anyone can observe the loss.
        if !self.killed.swap(true, Ordering::AcqRel) {
            tracing::warn!(pid = self.process.pid(), reason, "killing the server");
            if self.process.signal_group(Stop::Kill) {
                Counters::bump(&self.counters.process_kills);
            }
        }
        self.lose(reason);
    }

    fn lost_error(&self) -> Option<CallError> {
        self.lost.get().map(|reason| CallError::SessionLost {
            reason: reason.clone(),
        })
    }
}

struct Tasks {
    reader: Option<JoinHandle<()>>,
    writer: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<()>>,
}

/// The part of a session only handles hold: when the last one goes, the
/// server's process group is killed (see [`ProcessControl`]'s drop).
struct Handle {
    shared: Arc<Shared>,
    incoming: dispatch::DispatchReceiver,
    tasks: Mutex<Tasks>,
    report: tokio::sync::OnceCell<ShutdownReport>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if self.report.get().is_none() {
            self.shared.close_stdin.cancel();
            if self.shared.process.signal_group(Stop::Kill) {
                Counters::bump(&self.shared.counters.process_kills);
            }
            // Calls still awaited elsewhere must not wait for their timeouts.
            self.shared.lose("session dropped without shutdown");
            let tasks = self.tasks.get_mut().expect("tasks");
            for task in [
                tasks.reader.take(),
                tasks.writer.take(),
                tasks.stderr.take(),
            ]
            .into_iter()
            .flatten()
            {
                task.abort();
            }
        }
    }
}

/// A running MCP stdio server. Cheap to clone; every clone drives the same
/// server.
///
/// Dropping the last clone without [`Session::shutdown`] kills the server's
/// process group with SIGKILL. That cannot reach processes the server moved
/// into groups of their own (as [`crate::server::BoundedSubprocess`] does),
/// so prefer `shutdown`: it closes stdin first and lets the server clean up.
#[derive(Clone)]
pub struct Session {
    handle: Arc<Handle>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("pid", &self.pid())
            .field("lost", &self.lost())
            .finish()
    }
}

impl Session {
    /// Starts `command` as the server, in its own process group, with piped
    /// stdin, stdout and stderr, and the reader, writer and stderr tasks.
    /// Must be called within a tokio runtime.
    pub fn spawn(command: impl Into<Command>, config: SessionConfig) -> io::Result<Session> {
        let backend = match &config.backend {
            BackendChoice::Native => {
                Box::new(NativeFramer::new(config.framer)) as Box<dyn FramerBackend>
            }
            BackendChoice::Custom(factory) => factory(config.framer).map_err(io::Error::other)?,
        };
        if let Some(exe) = &config.orphan_guard {
            crate::supervise::guard_this_process(exe)?;
        }
        let spawned = process::spawn(command.into())?;
        let pid = spawned.control.pid();
        let (writer_tx, writer_rx) = mpsc::channel(config.writer_queue.max(1));
        let (dispatch_tx, dispatch_rx) = dispatch::dispatcher(config.dispatcher_capacity);
        let counters = Arc::new(Counters::default());
        let stderr_capture = Arc::new(Mutex::new(config.stderr_capture.capture()));
        let shared = Arc::new(Shared {
            counters: counters.clone(),
            pending: Mutex::new(PendingMap::default()),
            writer: writer_tx,
            process: spawned.control,
            stderr: stderr_capture.clone(),
            next_id: AtomicU64::new(1),
            lost: OnceLock::new(),
            dispatcher_overflowing: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            close_stdin: CancellationToken::new(),
            negotiated: OnceLock::new(),
            #[cfg(feature = "otel")]
            trace: crate::telemetry::session::SessionTrace::start(),
            negotiating: tokio::sync::Mutex::new(()),
            config,
        });
        let writer = tokio::spawn(write_lines(
            spawned.stdin,
            writer_rx,
            None,
            shared.close_stdin.clone(),
            WriterEnd::FramesClosed,
            None,
        ));
        let stderr = tokio::spawn(stderr::run(
            spawned.stderr,
            stderr::StderrTarget {
                capture: stderr_capture,
                counters,
                pid,
                max_log_line_bytes: shared.config.stderr_log_line_bytes,
                read_chunk_bytes: shared.config.read_chunk_bytes,
            },
        ));
        let reader = tokio::spawn(reader::run(
            spawned.stdout,
            backend,
            dispatch_tx,
            shared.clone(),
        ));
        let handle = Handle {
            shared,
            incoming: dispatch_rx,
            tasks: Mutex::new(Tasks {
                reader: Some(reader),
                writer: Some(writer),
                stderr: Some(stderr),
            }),
            report: tokio::sync::OnceCell::new(),
        };
        Ok(Session {
            handle: Arc::new(handle),
        })
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    /// The server's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.shared().process.pid()
    }

    /// Why the session was lost, if it was. A lost session fails every call
    /// with [`CallError::SessionLost`]; call [`Session::shutdown`] to reap it.
    pub fn lost(&self) -> Option<String> {
        self.shared().lost.get().cloned()
    }

    /// Sends a request and waits for its one outcome.
    pub async fn call(
        &self,
        method: &str,
        params: serde_json::Value,
        options: CallOptions,
    ) -> Result<Response, CallError> {
        self.start(method, params, options).await?.outcome().await
    }

    /// Calls the tool `name` (`tools/call`) and waits for its one outcome.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Value,
        options: CallOptions,
    ) -> Result<Response, CallError> {
        self.call("tools/call", tool_params(name, arguments), options)
            .await
    }

    /// Starts a call of the tool `name` without waiting, as [`Session::start`].
    pub async fn start_tool(
        &self,
        name: &str,
        arguments: serde_json::Value,
        options: CallOptions,
    ) -> Result<PendingCall, CallError> {
        self.start("tools/call", tool_params(name, arguments), options)
            .await
    }

    /// Sends a request and returns without waiting for the response; await
    /// [`PendingCall::outcome`] later, or pass [`PendingCall::id`] to
    /// [`Session::cancel`]. The timeout starts now and also covers waiting for
    /// room in the writer queue.
    pub async fn start(
        &self,
        method: &str,
        params: serde_json::Value,
        options: CallOptions,
    ) -> Result<PendingCall, CallError> {
        let shared = self.shared();
        let config = &shared.config;
        if let Some(error) = shared.lost_error() {
            return Err(error);
        }
        if shared.dispatcher_overflowing.load(Ordering::Relaxed)
            && config.dispatcher_full != DispatcherFullPolicy::KillSession
        {
            return Err(CallError::Rejected {
                reason: Rejection::DispatcherFull,
            });
        }
        let timeout = options
            .timeout
            .unwrap_or(config.default_timeout)
            .min(config.max_timeout);
        let deadline = Instant::now() + timeout;
        let params = match shared.negotiated.get() {
            Some(settled) => settled.params(params),
            None => params,
        };
        let id = RequestId(shared.next_id.fetch_add(1, Ordering::Relaxed));
        #[cfg(feature = "otel")]
        let mut params = params;
        #[cfg(feature = "otel")]
        let trace = shared.trace.as_ref().map(|trace| {
            let settled = shared.negotiated.get();
            trace.call(
                id.0,
                method,
                &mut params,
                settled.map(|s| s.revision_name()),
                settled.is_some_and(|s| s.is_stateless()),
            )
        });
        let line = request_line(id, method, &params);
        let minimum = drainpipe_framer::budget::MIN_CONDENSE_BUDGET;
        if let Some(budget) = options.condense_to.filter(|&budget| budget < minimum) {
            return Err(CallError::Rejected {
                reason: Rejection::BudgetTooSmall { budget, minimum },
            });
        }
        if line.len() - 1 > config.framer.max_frame_bytes() {
            return Err(CallError::Rejected {
                reason: Rejection::TooLarge {
                    bytes: line.len() - 1,
                    limit: config.framer.max_frame_bytes(),
                },
            });
        }
        let slot = {
            let mut pending = shared.pending.lock().expect("pending map");
            if pending.len() >= config.max_in_flight {
                return Err(CallError::Rejected {
                    reason: Rejection::TooManyInFlight {
                        in_flight: pending.len(),
                    },
                });
            }
            pending.insert(id.0, options.clip())
        };
        let mut call = PendingCall {
            id,
            slot: Some(slot),
            sent: false,
            deadline,
            timeout,
            cancel_on_timeout: config.cancel_on_timeout,
            condense_to: options.clip(),
            shared: shared.clone(),
            #[cfg(feature = "otel")]
            trace,
        };
        // If the session was lost between the check above and the insert, the
        // loss did not see this slot: fail it here so it cannot wait forever.
        if let Some(error) = shared.lost_error() {
            shared
                .pending
                .lock()
                .expect("pending map")
                .complete(id.0, Err(error));
            return Ok(call);
        }
        match tokio::time::timeout_at(deadline, shared.writer.send(line)).await {
            Ok(Ok(())) => {
                call.sent = true;
                Counters::bump(&shared.counters.requests_sent);
                Ok(call)
            }
            Ok(Err(_closed)) => {
                let error = shared.lost_error().unwrap_or(CallError::SessionLost {
                    reason: "server stdin is closed".into(),
                });
                shared
                    .pending
                    .lock()
                    .expect("pending map")
                    .complete(id.0, Err(error));
                Ok(call)
            }
            Err(_elapsed) => {
                // Never written, so there is nothing to cancel on the server;
                // dropping `call` (not sent) only removes it from the map.
                drop(call);
                Err(CallError::TimedOut { after: timeout })
            }
        }
    }

    /// Sends a notification (no response expected). Waits for room in the
    /// writer queue for at most [`SessionConfig::default_timeout`].
    pub async fn notify(&self, method: &str, params: serde_json::Value) -> Result<(), CallError> {
        self.write_line(notification_line(method, &params)).await
    }

    /// Answers a server request received through [`Session::next_incoming`]:
    /// `Ok(result)` or `Err((code, message))`.
    pub async fn respond(
        &self,
        id: &OwnedId,
        answer: Result<serde_json::Value, (i64, String)>,
    ) -> Result<(), CallError> {
        self.write_line(response_line(id, answer)).await
    }

    async fn write_line(&self, line: Vec<u8>) -> Result<(), CallError> {
        let shared = self.shared();
        if let Some(error) = shared.lost_error() {
            return Err(error);
        }
        match tokio::time::timeout(shared.config.default_timeout, shared.writer.send(line)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(CallError::SessionLost {
                reason: "server stdin is closed".into(),
            }),
            Err(_) => Err(CallError::TimedOut {
                after: shared.config.default_timeout,
            }),
        }
    }

    /// Cancels a request: its caller gets [`CallError::Cancelled`] at once,
    /// the server gets `notifications/cancelled {requestId, reason}`, and a
    /// response that arrives anyway is dropped and counted. Returns false
    /// (and sends nothing) if the request had already ended.
    pub fn cancel(&self, id: RequestId, reason: &str) -> bool {
        let shared = self.shared();
        let ended = shared.pending.lock().expect("pending map").end_unanswered(
            id.0,
            CallError::Cancelled {
                reason: reason.into(),
            },
        );
        if ended {
            shared.send_cancellation(id, reason);
        }
        ended
    }

    /// The next request or notification from the server, in order; `None`
    /// once the server's stdout has ended and everything was taken.
    ///
    /// The session's reader runs on the runtime's workers. A caller that
    /// takes a stream of messages is fastest as a spawned task there too:
    /// the reader's hand-over then wakes it on the same worker, without a
    /// system call. Taken from `block_on` (the body of `#[tokio::main]`),
    /// each read's hand-over wakes that thread from a futex: on a stream of
    /// 100 B messages that took 8–30% of the rate (`BENCHMARKS.md`, "The
    /// caller on a worker"). Either way the reader keeps reading.
    pub async fn next_incoming(&self) -> Option<Incoming> {
        let message = self.handle.incoming.next().await;
        // Taking a message made room: the full-dispatcher policy is lifted.
        // (Written only when set: the reader reads it for every message, and
        // a write each time would bounce its cache line between the cores.)
        let overflowing = &self.shared().dispatcher_overflowing;
        if overflowing.load(Ordering::Relaxed) {
            overflowing.store(false, Ordering::Relaxed);
        }
        message
    }

    /// Every request and notification from the server that arrived so
    /// far, at least one (waiting for it), appended to `out` in order; false
    /// once the server's stdout has ended and everything was taken. The
    /// batch form of [`Session::next_incoming`], for a host that takes
    /// many small messages: one hand-over per batch instead of per message.
    pub async fn next_incoming_batch(&self, out: &mut Vec<Incoming>) -> bool {
        let more = self.handle.incoming.next_batch(out).await;
        let overflowing = &self.shared().dispatcher_overflowing;
        if overflowing.load(Ordering::Relaxed) {
            overflowing.store(false, Ordering::Relaxed);
        }
        more
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> SessionMetrics {
        self.shared().counters.snapshot()
    }

    /// What was kept of the server's stderr so far.
    pub fn stderr(&self) -> CaptureSnapshot {
        CaptureSnapshot::of(&self.shared().stderr.lock().expect("stderr capture"))
    }

    /// Ends the session: closes stdin, waits for the server to exit, then
    /// SIGTERM and SIGKILL to its process group, reaps it and kills whatever
    /// it left behind in the group; every step bounded by
    /// [`SessionConfig::shutdown`]. Pending requests fail with
    /// [`CallError::SessionLost`]. Idempotent: later calls return the same report.
    pub async fn shutdown(&self) -> ShutdownReport {
        self.handle
            .report
            .get_or_init(|| self.shutdown_once())
            .await
            .clone()
    }

    async fn shutdown_once(&self) -> ShutdownReport {
        let shared = self.shared();
        let timeouts = shared.config.shutdown;
        let process = &shared.process;
        let lost = self.lost();
        shared.close_stdin.cancel();
        let stopped = process.stop(timeouts).await;
        if stopped.killed {
            Counters::bump(&shared.counters.process_kills);
        }
        #[cfg(feature = "otel")]
        if let Some(trace) = &shared.trace {
            let protocol = shared.negotiated.get().map(|s| s.revision_name());
            let error = lost.as_ref().map(|_| "session_lost");
            trace.end(&self.metrics(), protocol, error);
        }
        shared.lose("session shut down");
        let (reader, writer, stderr) = {
            let mut tasks = self.handle.tasks.lock().expect("tasks");
            (
                tasks.reader.take(),
                tasks.writer.take(),
                tasks.stderr.take(),
            )
        };
        for task in [reader, stderr, writer].into_iter().flatten() {
            // Pipes reach end of file once every holder is dead; a process
            // that escaped the group could hold them forever, hence the bound.
            let abort = task.abort_handle();
            if tokio::time::timeout(timeouts.after_kill, task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
        ShutdownReport {
            status: stopped.status,
            ending: stopped.ending,
            leftovers_killed: stopped.leftovers_killed,
            lost,
            stderr: self.stderr(),
            metrics: self.metrics(),
        }
    }
}

fn request_line(id: RequestId, method: &str, params: &serde_json::Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0", "id": id.0, "method": method, "params": params,
    }))
    .expect("a JSON value serialises");
    line.push(b'\n');
    line
}

fn notification_line(method: &str, params: &serde_json::Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(
        &serde_json::json!({ "jsonrpc": "2.0", "method": method, "params": params }),
    )
    .expect("a JSON value serialises");
    line.push(b'\n');
    line
}

/// The `params` of a `tools/call` request.
fn tool_params(name: &str, arguments: serde_json::Value) -> serde_json::Value {
    serde_json::json!({ "name": name, "arguments": arguments })
}
