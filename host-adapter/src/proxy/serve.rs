//! One proxy run, from the server end's wiring to the outcome.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drainpipe_framer::budget::MIN_LINKED_BUDGET;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::route::{self, Direction, InFlight, Router, SpillRoute};
use super::spill::SpillStore;
use super::{
    ProxyConfig, ProxyMetrics, ProxyOutcome, SERVER_GONE, StderrSink, host, observe, queue,
};
use crate::pipe::lane::Lane;
use crate::pipe::process::ShutdownTimeouts;
use crate::pipe::reader;
use crate::pipe::server_end::{Failure, ServerEnd};
use crate::pipe::stderr::drain;
use crate::pipe::stdin::{WriterEnd, write_lines};
use crate::pipe::{jsonrpc, sys};

/// The proxy between the host and `server`, until the server ends.
pub(super) async fn serve(
    server: ServerEnd,
    config: ProxyConfig,
    host_in: impl AsyncRead + Unpin + Send + 'static,
    host_out: impl AsyncWrite + Unpin + Send + 'static,
    sink: StderrSink,
    stop: CancellationToken,
) -> io::Result<ProxyOutcome> {
    let started = Instant::now();
    let spawned = server;
    let control = spawned.control;
    let metrics = Arc::new(Mutex::new(ProxyMetrics::default()));
    let in_flight = Arc::new(Mutex::new(InFlight::default()));
    let server_lane = spawned.input_raw.map(Lane::new);
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
            remote: spawned.remote.clone(),
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
    let server_writer = tokio::spawn(write_lines(
        spawned.input,
        to_server_rx,
        Some(server_replies_rx),
        close_server_stdin.clone(),
        WriterEnd::FramesClosed,
        server_lane,
    ));
    let finish_host = CancellationToken::new();
    let host_writer = tokio::spawn(write_lines(
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
        let server_output = reader::start(spawned.output, "read-server", |input| {
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
    tokio::spawn(async move {
        host_reading.await;
        host_done.cancel();
    });
    if let Some(failures) = spawned.failures {
        tokio::spawn(answer_failures(
            failures,
            in_flight.clone(),
            metrics.clone(),
            observer.clone(),
            host_replies.clone(),
        ));
    }
    let stderr_pump = spawned
        .stderr
        .map(|stderr| tokio::spawn(drain_stderr(stderr, sink.clone(), metrics.clone())));

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
                let _ = tokio::time::timeout(config.shutdown.after_close, server_writer).await;
                close_server_stdin.cancel();
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
            close_server_stdin.cancel();
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
    close_server_stdin.cancel();
    // The server's last words: everything it wrote before exiting reaches the
    // host, unless a process that escaped its group holds stdout open.
    let output_ended = tokio::time::timeout(config.shutdown.after_kill, server_output)
        .await
        .is_ok();
    if let Some(pump) = stderr_pump {
        let _ = tokio::time::timeout(config.shutdown.after_kill, pump).await;
    }
    let mut waiting = in_flight.lock().expect("in flight").drain();
    // The proxy's own server/discover is nobody's to answer; the resource
    // requests held for its answer are the host's.
    waiting.retain(|id| id.as_slice() != route::PROBE_ID);
    if let Some(spill) = &spill_route {
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
        match tokio::time::timeout_at(deadline.into(), host_replies.send(line)).await {
            Ok(Ok(())) => queued += 1,
            _ => break,
        }
    }
    finish_host.cancel();
    let written_all = tokio::time::timeout_at(deadline.into(), host_writer)
        .await
        .is_ok();
    let unwritten = if written_all {
        0
    } else {
        (host_replies.max_capacity() - host_replies.capacity()) as u64
    };
    drop(host_replies);
    let mut metrics = metrics.lock().expect("metrics").clone();
    metrics.requests_failed_at_exit = waiting.len() as u64;
    metrics.probe = metrics.host_requests > 0 && metrics.host_requests == metrics.discover_requests;
    metrics.framer_failed = failed.is_cancelled();
    metrics.errors_sent += queued - unwritten.min(queued);
    metrics.errors_dropped += waiting.len() as u64 - queued + unwritten.min(queued);
    metrics.server_exit_code = status.and_then(|s| s.code());
    metrics.server_signal = status.and_then(|s| sys::exit_signal(&s));
    metrics.stderr_bytes_dropped = sink.dropped_bytes();
    metrics.elapsed_ms = started.elapsed().as_millis() as u64;
    metrics.tree_kills = kills;
    let ms = |nanos: &std::sync::atomic::AtomicU64| nanos.load(Ordering::Relaxed) / 1_000_000;
    metrics.host_to_server.blocked_ms = ms(&blocked[0]);
    metrics.server_to_host.blocked_ms = ms(&blocked[1]);
    observer.end(&metrics);
    if !output_ended {
        sink.line(
            "the server's stdout stayed open after it ended (a process outside its group holds it)",
        );
    }
    drop(spill_route);
    if let Some(store) = store {
        store.close();
    }
    Ok(ProxyOutcome { status, metrics })
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
