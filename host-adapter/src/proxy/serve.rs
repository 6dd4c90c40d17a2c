//! One proxy run, in named stages, as the servers of tokio and hyper are
//! written: each stage is a function, and `serve` is the list of them.
//!
//! 1. `wire`: the queues each way, the spill store, telemetry, a router
//!    per direction, the two writers, the two readers and the server end's
//!    own tasks, started; what runs comes back as `Running`, split into
//!    what every stage reads (`Run`), the server's side and the host's.
//! 2. `wait`: until the server ends on its own, the host's input ends (the
//!    server then gets its grace), a framer fails, or the proxy is asked
//!    to stop.
//! 3. `shut_down`: a server still running is ended, what it left in its
//!    group killed, its stdin closed, and what it wrote before exiting
//!    read to the end (bounded).
//! 4. `fail_waiting`: every host request still waiting answered with an
//!    error, and the host's writer finished (bounded, for a host that
//!    stopped reading).
//! 5. `outcome`: the metrics as the run ends, and the server's status;
//!    then `close` removes the spill store and ends the run's tasks.
//!
//! Every task the run spawns is tracked (`Tasks`, a `TaskTracker`), and
//! `close` waits for them, bounded: what may outlive a run is a writer
//! blocked on a host that stopped reading, the readers (`tasks` says
//! why), and what the server end runs for itself (a child's reaper, the
//! remote bridge).
//!
//! The stages run in this order and no other; the comments within each
//! say what the order of its own steps rests on.

use std::io;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drainpipe_framer::budget::MIN_LINKED_BUDGET;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::route::{self, Direction, InFlight, Router, SpillRoute};
use super::spill::SpillStore;
use super::tasks::Tasks;
use super::{
    ProxyConfig, ProxyMetrics, ProxyOutcome, SERVER_GONE, StderrSink, host, observe, queue,
};
use crate::pipe::lane::Lane;
use crate::pipe::process::ShutdownTimeouts;
use crate::pipe::reader;
use crate::pipe::server_end::{Failure, ServerControl, ServerEnd};
use crate::pipe::stderr::drain;
use crate::pipe::stdin::{WriterEnd, write_lines};
use crate::pipe::{jsonrpc, sys};

/// The proxy between the host and `server`, until the server ends: the
/// stages of the module docs, in their order.
pub(super) async fn serve(
    server: ServerEnd,
    config: ProxyConfig,
    host_in: impl AsyncRead + Unpin + Send + 'static,
    host_out: impl AsyncWrite + Unpin + Send + 'static,
    sink: StderrSink,
    stop: CancellationToken,
) -> io::Result<ProxyOutcome> {
    let started = Instant::now();
    let Running {
        run,
        server: mut server_side,
        host: host_side,
    } = wire(server, config, host_in, host_out, sink).await?;
    let waited = wait(&run, &mut server_side, &host_side.eof, &stop).await;
    let ended = shut_down(&run, server_side, waited, &stop).await;
    let answered = fail_waiting(&run, host_side, ended.status).await;
    let outcome = outcome(&run, started, &ended, &answered);
    close(run, answered.deadline).await;
    Ok(outcome)
}

/// What `wire` started.
struct Running {
    run: Run,
    server: ServerSide,
    host: HostSide,
}

/// What every stage reads: the configuration, the server end's control,
/// and what the routers count and hold. Lives until the run has closed.
struct Run {
    config: ProxyConfig,
    sink: StderrSink,
    control: Box<dyn ServerControl>,
    metrics: Arc<Mutex<ProxyMetrics>>,
    in_flight: Arc<Mutex<InFlight>>,
    observer: observe::Observer,
    store: Option<SpillStore>,
    spill_route: Option<SpillRoute>,
    /// Nanoseconds each reader waited for room in its queue:
    /// host→server, server→host.
    blocked: [Arc<AtomicU64>; 2],
    /// Fired by a reader whose framer failed.
    failed: CancellationToken,
    /// Every task the run spawned, which `close` ends.
    tasks: Tasks,
}

/// The server's side of a running proxy, which `wait` and `shut_down` end.
struct ServerSide {
    /// Closes the server's stdin (see `wire`).
    close_stdin: CancellationToken,
    /// The server's stdin writer.
    writer: JoinHandle<()>,
    /// The server's stdout reader, which ends with that pipe.
    output: reader::Running,
    /// The server's stderr drain, for a child.
    stderr_pump: Option<JoinHandle<()>>,
}

/// The host's side of a running proxy, which `fail_waiting` ends.
struct HostSide {
    /// Fired when the host's reader has ended.
    eof: CancellationToken,
    /// The proxy's own answers to the host.
    replies: mpsc::Sender<Vec<u8>>,
    /// Tells the host's writer to write what is queued, then stop.
    finish: CancellationToken,
    /// The host's stdout writer.
    writer: JoinHandle<()>,
}

/// How `wait` ended: the server's status, if it was had there, and the
/// times its tree had to be killed.
struct Waited {
    status: Option<ExitStatus>,
    kills: u64,
}

/// How `shut_down` ended.
struct Ended {
    /// The server's status, if it was reaped.
    status: Option<ExitStatus>,
    kills: u64,
    /// The server's stdout reached its end of file.
    output_ended: bool,
}

/// How `fail_waiting` ended.
struct Answered {
    /// Requests that were still waiting.
    waiting: u64,
    /// Errors for them queued to the host's writer.
    queued: u64,
    /// Lines still queued when the host's writer was given up on.
    unwritten: u64,
    /// When the host's writer was given up on, if it had not finished:
    /// the run's tasks get no longer.
    deadline: Instant,
}

/// Wiring: the queues each way, the spill store, telemetry, a router per
/// direction, the two writers, the two readers, and the tasks of the
/// server end (its transport's failures, its stderr), started. Fails only
/// when a reader cannot be started, with the server ended as at a stop.
async fn wire(
    server: ServerEnd,
    config: ProxyConfig,
    host_in: impl AsyncRead + Unpin + Send + 'static,
    host_out: impl AsyncWrite + Unpin + Send + 'static,
    sink: StderrSink,
) -> io::Result<Running> {
    let control = server.control;
    let tasks = Tasks::default();
    let metrics = Arc::new(Mutex::new(ProxyMetrics::default()));
    let in_flight = Arc::new(Mutex::new(InFlight::default()));
    let server_lane = server.input_raw.map(Lane::new);
    let host_lane = host::raw_output(&host_out).map(Lane::new);
    let (to_server, to_server_rx) = queue::queue(config.queue_bytes, server_lane.clone());
    let (to_host, to_host_rx) = queue::queue(config.queue_bytes, host_lane.clone());
    let (server_replies, server_replies_rx) = mpsc::channel(config.reply_queue.max(1));
    let (host_replies, host_replies_rx) = mpsc::channel(config.reply_queue.max(1));
    let store = match (config.clip, config.spill) {
        (Some(clip), Some(_)) if clip.rungs().iter().all(|&b| b < MIN_LINKED_BUDGET) => {
            sink.line(&format!(
                "a content budget under {MIN_LINKED_BUDGET} bytes has no room for links: what --clip cuts is not kept"
            ));
            None
        }
        (Some(_), Some(spill)) => match SpillStore::start(spill) {
            Ok(store) => Some(store),
            Err(error) => {
                sink.line(&format!(
                    "could not create the spill store ({error}): cut values will not be kept"
                ));
                None
            }
        },
        _ => None,
    };
    let spill_route = store.as_ref().map(|store| SpillRoute {
        store: store.clone(),
        answers: to_host.clone(),
        reads: Arc::new(tokio::sync::Semaphore::new(4)),
        server_tool: Arc::new(AtomicBool::new(false)),
        links: Arc::new(AtomicBool::new(true)),
        resources_added: Arc::new(AtomicBool::new(false)),
        discovery: Arc::default(),
        waiting: Arc::new(AtomicUsize::new(0)),
        tasks: tasks.clone(),
    });
    let blocked = [to_server.blocked(), to_host.blocked()];
    #[cfg(feature = "otel")]
    let observer = observe::Observer::start(
        || crate::telemetry::calls::Live {
            metrics: metrics.clone(),
            blocked: blocked.clone(),
            spill: store.clone().map(|store| {
                Arc::new(move || store.stats()) as Arc<dyn Fn() -> (u64, u64) + Send + Sync>
            }),
            limit: config.framer.max_frame_bytes() as u64,
            remote: server.remote.clone(),
        },
        config.clip.map(|clip| clip.to_string()),
    );
    #[cfg(not(feature = "otel"))]
    let observer = observe::Observer::default();
    // Fired by a reader whose framer failed: the proxy ends as if stopped.
    let failed = CancellationToken::new();
    let router = |direction, forward, reply, answer_other| Router {
        direction,
        config,
        in_flight: in_flight.clone(),
        metrics: metrics.clone(),
        sink: sink.clone(),
        forward,
        reply,
        answer_other,
        out: Vec::new(),
        out_lines: 0,
        out_largest: 0,
        spill: spill_route.clone(),
        failed: failed.clone(),
        observer: observer.clone(),
    };
    let host_reader = router(
        Direction::HostToServer,
        to_server,
        host_replies.clone(),
        server_replies.clone(),
    );
    let server_reader = router(
        Direction::ServerToHost,
        to_host,
        server_replies,
        host_replies.clone(),
    );
    // Closing the server's stdin: after the host's end of file is forwarded,
    // or at once when the proxy stops (a server not reading stdin must not
    // hold the writer).
    let close_server_stdin = CancellationToken::new();
    let host_eof = CancellationToken::new();
    let host_done = host_eof.clone();
    let server_writer = tasks.spawn(write_lines(
        server.input,
        to_server_rx,
        Some(server_replies_rx),
        close_server_stdin.clone(),
        WriterEnd::FramesClosed,
        server_lane,
    ));
    let finish_host = CancellationToken::new();
    let host_writer = tasks.spawn(write_lines(
        host_out,
        to_host_rx,
        Some(host_replies_rx),
        CancellationToken::new(),
        WriterEnd::Finish(finish_host.clone()),
        host_lane,
    ));
    let readers = reader::start(host::source(host_in), "read-host", |input| {
        host_reader.run(input)
    })
    .and_then(|host_reading| {
        let server_output = reader::start(server.output, "read-server", |input| {
            server_reader.run(input)
        })?;
        Ok((host_reading, server_output))
    });
    let (host_reading, server_output) = match readers {
        Ok(readers) => readers,
        Err(error) => {
            // No thread for a reader: the server is ended, as at a stop.
            sink.line(&format!("could not start the proxy's readers: {error}"));
            control.terminate();
            close_server_stdin.cancel();
            control.stop(config.shutdown).await;
            return Err(error);
        }
    };
    tasks.spawn_for_run(async move {
        host_reading.await;
        host_done.cancel();
    });
    if let Some(failures) = server.failures {
        tasks.spawn_for_run(answer_failures(
            failures,
            in_flight.clone(),
            metrics.clone(),
            observer.clone(),
            host_replies.clone(),
        ));
    }
    let stderr_pump = server
        .stderr
        .map(|stderr| tasks.spawn_for_run(drain_stderr(stderr, sink.clone(), metrics.clone())));

    Ok(Running {
        run: Run {
            config,
            sink,
            control,
            metrics,
            in_flight,
            observer,
            store,
            spill_route,
            blocked,
            failed,
            tasks,
        },
        server: ServerSide {
            close_stdin: close_server_stdin,
            writer: server_writer,
            output: server_output,
            stderr_pump,
        },
        host: HostSide {
            eof: host_eof,
            replies: host_replies,
            finish: finish_host,
            writer: host_writer,
        },
    })
}

/// Waiting: until the server ends on its own, the host's input ends (the
/// server then gets its grace to exit), a framer fails, or `stop`.
async fn wait(
    run: &Run,
    server: &mut ServerSide,
    host_eof: &CancellationToken,
    stop: &CancellationToken,
) -> Waited {
    let Run {
        config,
        control,
        failed,
        ..
    } = run;
    let mut kills = 0u64;
    let status = tokio::select! {
        // A failed framer first: it also ends its reader, which would look
        // like the host's end of input.
        biased;
        () = failed.cancelled() => None,
        status = control.ended() => Some(status),
        () = host_eof.cancelled() => {
            // Every host message read was queued; the writer closes stdin
            // once it has written them, or now if the server stopped reading.
            // A host that then signals the proxy (the SDKs send SIGTERM a
            // few seconds after closing stdin, then SIGKILL) must not find it
            // still waiting out the grace: the server would outlive it.
            let graceful = async {
                let grace = Instant::now();
                let _ = tokio::time::timeout(config.shutdown.after_close, &mut server.writer).await;
                server.close_stdin.cancel();
                let after_close = config.shutdown.after_close.saturating_sub(grace.elapsed());
                let stopped = control.stop(ShutdownTimeouts { after_close, ..config.shutdown }).await;
                kills += u64::from(stopped.killed || stopped.leftovers_killed);
                stopped.status
            };
            tokio::select! {
                status = graceful => status,
                () = stop.cancelled() => None,
            }
        }
        () = stop.cancelled() => None,
    };
    Waited { status, kills }
}

/// Shutting down: a server that `wait` did not see end is ended (asked
/// to stop or a framer failed: SIGTERM at once, then SIGKILL), what it
/// left in its group is killed, its stdin is closed, and what it wrote
/// before exiting is read to the end (bounded).
async fn shut_down(
    run: &Run,
    server: ServerSide,
    waited: Waited,
    stop: &CancellationToken,
) -> Ended {
    let Run {
        config,
        sink,
        control,
        failed,
        ..
    } = run;
    let Waited { status, mut kills } = waited;
    let status = match status {
        Some(status) => Some(status),
        None if stop.is_cancelled() || failed.is_cancelled() => {
            let what = control.what();
            sink.line(&if failed.is_cancelled() {
                format!("a framer failed: {what}")
            } else {
                format!("asked to stop: {what}")
            });
            control.terminate();
            server.close_stdin.cancel();
            let timeouts = ShutdownTimeouts {
                after_close: config.shutdown.after_term,
                ..config.shutdown
            };
            let stopped = control.stop(timeouts).await;
            kills += u64::from(stopped.killed || stopped.leftovers_killed);
            stopped.status
        }
        None => None,
    };
    // Kills what the server left in its group (a no-op once it is empty).
    let stopped = control.stop(config.shutdown).await;
    kills += u64::from(stopped.leftovers_killed);
    server.close_stdin.cancel();
    // The server's last words: everything it wrote before exiting reaches the
    // host, unless a process that escaped its group holds stdout open.
    let output_ended = tokio::time::timeout(config.shutdown.after_kill, server.output)
        .await
        .is_ok();
    if let Some(pump) = server.stderr_pump {
        let _ = tokio::time::timeout(config.shutdown.after_kill, pump).await;
    }
    Ended {
        status,
        kills,
        output_ended,
    }
}

/// Failing what waits: every host request still waiting for the server
/// gets an error saying it ended, then the host's writer writes what is
/// queued and stops (both bounded, for a host that stopped reading).
async fn fail_waiting(run: &Run, host: HostSide, status: Option<ExitStatus>) -> Answered {
    let Run {
        config,
        in_flight,
        observer,
        spill_route,
        ..
    } = run;
    let mut waiting = in_flight.lock().expect("in flight").drain();
    // The proxy's own server/discover is nobody's to answer; the resource
    // requests held for its answer are the host's.
    waiting.retain(|id| id.as_slice() != route::PROBE_ID);
    if let Some(spill) = spill_route {
        waiting.extend(spill.discovery.lock().expect("discovery").drain_held());
    }
    let reason = match status {
        Some(status) => format!("the server ended ({status}) without answering"),
        None => "the server could not be reaped".to_string(),
    };
    // Every waiting request is answered: the queue is bounded, so this waits
    // for the host's writer (however many there are), up to a deadline for a
    // host that stopped reading. What was not written is counted as such.
    let deadline = Instant::now() + config.shutdown.after_kill.max(Duration::from_secs(5));
    let mut queued = 0u64;
    for id in &waiting {
        observer.failed(id, SERVER_GONE, &reason);
        let line = jsonrpc::error_line(id, SERVER_GONE, &reason);
        match tokio::time::timeout_at(deadline.into(), host.replies.send(line)).await {
            Ok(Ok(())) => queued += 1,
            _ => break,
        }
    }
    host.finish.cancel();
    let written_all = tokio::time::timeout_at(deadline.into(), host.writer)
        .await
        .is_ok();
    let unwritten = if written_all {
        0
    } else {
        (host.replies.max_capacity() - host.replies.capacity()) as u64
    };
    drop(host.replies);
    Answered {
        waiting: waiting.len() as u64,
        queued,
        unwritten,
        deadline,
    }
}

/// The outcome: what the proxy counted, completed as the run ends and
/// given to telemetry, and the server's status.
fn outcome(run: &Run, started: Instant, ended: &Ended, answered: &Answered) -> ProxyOutcome {
    let Run {
        sink,
        metrics,
        observer,
        blocked,
        failed,
        ..
    } = run;
    let &Ended {
        status,
        kills,
        output_ended,
    } = ended;
    let &Answered {
        waiting,
        queued,
        unwritten,
        ..
    } = answered;
    let mut metrics = metrics.lock().expect("metrics").clone();
    metrics.requests_failed_at_exit = waiting;
    metrics.probe = metrics.host_requests > 0 && metrics.host_requests == metrics.discover_requests;
    metrics.framer_failed = failed.is_cancelled();
    metrics.errors_sent += queued - unwritten.min(queued);
    metrics.errors_dropped += waiting - queued + unwritten.min(queued);
    metrics.server_exit_code = status.and_then(|s| s.code());
    metrics.server_signal = status.and_then(|s| sys::exit_signal(&s));
    metrics.stderr_bytes_dropped = sink.dropped_bytes();
    metrics.elapsed_ms = started.elapsed().as_millis() as u64;
    metrics.tree_kills = kills;
    let ms = |nanos: &AtomicU64| nanos.load(Ordering::Relaxed) / 1_000_000;
    metrics.host_to_server.blocked_ms = ms(&blocked[0]);
    metrics.server_to_host.blocked_ms = ms(&blocked[1]);
    observer.end(&metrics);
    if !output_ended {
        sink.line(
            "the server's stdout stayed open after it ended (a process outside its group holds it)",
        );
    }
    ProxyOutcome { status, metrics }
}

/// Closing: the spill store's files removed, once the routers' last
/// handle to it is dropped; then the run's tasks ended, those for the run
/// dropped and the others waited for until `deadline` (the host writer's:
/// one blocked on a host that does not read is not waited for again).
/// The rest of the run (the server end's control last) is dropped with it.
async fn close(run: Run, deadline: Instant) {
    let Run {
        spill_route,
        store,
        tasks,
        ..
    } = run;
    drop(spill_route);
    if let Some(store) = store {
        store.close();
    }
    if !tasks.end(deadline).await {
        tracing::debug!("a task of the proxy run was still running at its end");
    }
}

/// Answers each request the server's transport failed, unless it was
/// answered or failed already: exactly one answer per request.
async fn answer_failures(
    mut failures: mpsc::Receiver<Failure>,
    in_flight: Arc<Mutex<InFlight>>,
    metrics: Arc<Mutex<ProxyMetrics>>,
    observer: observe::Observer,
    replies: mpsc::Sender<Vec<u8>>,
) {
    while let Some(failure) = failures.recv().await {
        if !in_flight.lock().expect("in flight").fail(&failure.id) {
            continue;
        }
        observer.failed(&failure.id, failure.code, &failure.message);
        let sizes = failure.limit.map(|limit| [("limitBytes", limit)]);
        let line = jsonrpc::sized_error_line(
            &failure.id,
            failure.code,
            &failure.message,
            sizes.as_ref().map_or(&[][..], |sizes| &sizes[..]),
        );
        let sent = replies.send(line).await.is_ok();
        let mut metrics = metrics.lock().expect("metrics");
        if sent {
            metrics.errors_sent += 1;
        } else {
            metrics.errors_dropped += 1;
        }
    }
}

async fn drain_stderr(
    stderr: tokio::process::ChildStderr,
    sink: StderrSink,
    metrics: Arc<Mutex<ProxyMetrics>>,
) {
    drain(stderr, 64 << 10, |chunk| {
        metrics.lock().expect("metrics").server_stderr_bytes += chunk.len() as u64;
        sink.write(chunk);
    })
    .await;
}
