//! Servers that misbehave at the process level: they stop reading stdin,
//! die mid-message, close stdout and linger, or flood stderr.

mod session_support;

use std::time::{Duration, Instant};

use drainpipe_host::session::{CallError, Ending, SessionConfig};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::json;
use session_support::*;

/// The server never reads stdin: the request cannot even be written in
/// full, yet the caller gets its timeout, stdout keeps being read (heartbeat
/// notifications keep arriving) and shutdown still ends the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_that_never_reads_stdin() {
    let session = drainpipe_host::session::Session::spawn(
        fixture(&["--never-read-stdin"]),
        SessionConfig::default(),
    )
    .expect("spawn");
    // 1 MiB of params: far more than a pipe buffer, so the writer blocks.
    let big = "p".repeat(1 << 20);
    let outcome = within(
        10,
        "call to a server not reading",
        tool(&session, "echo", json!({"big": big}), opts_ms(500)),
    )
    .await;
    assert_eq!(
        outcome,
        Err(CallError::TimedOut {
            after: Duration::from_millis(500)
        })
    );
    let second = within(
        10,
        "second call",
        tool(&session, "health", json!({}), opts_ms(300)),
    )
    .await;
    assert!(
        matches!(second, Err(CallError::TimedOut { .. })),
        "{second:?}"
    );
    // The reader never depended on the writer.
    for _ in 0..5 {
        let beat = within(5, "heartbeat", session.next_incoming())
            .await
            .expect("heartbeat");
        assert_eq!(beat.method, "notifications/message");
    }
    let report = shutdown_clean(&session).await;
    assert_eq!(
        report.ending,
        Ending::Terminated,
        "closing stdin could not end it; SIGTERM did"
    );
}

/// The server is killed after writing the start of a response: the request
/// fails as session lost (stdout ended inside its response), not by timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_killed_mid_frame() {
    let session = start(&[], SessionConfig::default()).await;
    let before = session.metrics().stdout_bytes;
    let pending = start_tool(&session, "die_mid_frame", json!({}), opts(30)).await;
    wait_until(10, "the partial response arrived", || {
        session.metrics().stdout_bytes > before
    })
    .await;
    killpg(Pid::from_raw(session.pid() as i32), Signal::SIGKILL).expect("kill the server");
    let started = Instant::now();
    let outcome = within(10, "outcome after the kill", pending.outcome()).await;
    match outcome {
        Err(CallError::SessionLost { reason }) => {
            assert!(reason.contains("inside the response"), "{reason}")
        }
        other => panic!("expected SessionLost, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let next = tool(&session, "echo", json!({}), opts(5)).await;
    assert!(
        matches!(next, Err(CallError::SessionLost { .. })),
        "{next:?}"
    );
    let report = shutdown_clean(&session).await;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(report.status.expect("reaped").signal(), Some(9));
}

/// The server closes stdout but stays alive (and ignores stdin EOF and
/// SIGTERM): pending requests fail at once, shutdown escalates to SIGKILL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_closes_stdout_but_stays_alive() {
    let config = SessionConfig {
        shutdown: drainpipe_host::session::ShutdownTimeouts {
            after_close: Duration::from_millis(300),
            after_term: Duration::from_millis(300),
            after_kill: Duration::from_secs(2),
        },
        ..SessionConfig::default()
    };
    let session = start(&["--linger", "--ignore-sigterm"], config).await;
    let started = Instant::now();
    let outcome = within(
        10,
        "close_stdout",
        tool(&session, "close_stdout", json!({}), opts(30)),
    )
    .await;
    match outcome {
        Err(CallError::SessionLost { reason }) => {
            assert!(reason.contains("closed stdout"), "{reason}")
        }
        other => panic!("expected SessionLost, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "failed at end of stdout, not by timeout"
    );
    assert!(
        kill(Pid::from_raw(session.pid() as i32), None).is_ok(),
        "the server is still alive"
    );
    let report = shutdown_clean(&session).await;
    assert_eq!(report.ending, Ending::Killed);
    assert_eq!(report.metrics.process_kills, 1);
    assert!(report.stderr.kept_text().contains("ignoring SIGTERM"));
}

/// Size of the stderr flood, in bytes: the full 1 GiB (well under a second
/// here, even in a debug build). `DRAINPIPE_STDERR_FLOOD_BYTES=N` overrides
/// it, e.g. on a slow machine.
const DEFAULT_FLOOD_BYTES: u64 = 1 << 30;

/// A server that floods stderr is drained to the end into a bounded capture;
/// the call answers and the session's memory does not grow with the flood.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_flood_is_drained_into_a_bounded_capture() {
    let bytes = std::env::var("DRAINPIPE_STDERR_FLOOD_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_FLOOD_BYTES);
    let session = start(&[], SessionConfig::default()).await;
    let started = Instant::now();
    let response = within(
        120,
        "stderr flood",
        tool(&session, "noisy_stderr", json!({"bytes": bytes}), opts(110)),
    )
    .await;
    let elapsed = started.elapsed();
    let response = response.expect("the flooding call answers");
    assert_eq!(response.result["structuredContent"]["bytes"], json!(bytes));
    wait_until(10, "all of stderr drained", || {
        session.metrics().stderr_bytes >= bytes
    })
    .await;
    let capture = session.stderr();
    assert!(capture.truncated);
    assert!(
        capture.head.starts_with("noisy_stderr begin"),
        "{:?}",
        &capture.head[..40]
    );
    assert!(capture.seen_bytes >= bytes);
    let kept = capture.head.len() + capture.tail.len();
    assert!(kept <= 32 << 10, "capture stays within head + tail: {kept}");
    let report = shutdown_clean(&session).await;
    assert!(
        report.stderr.tail.contains("noisy_stderr end"),
        "tail: {:?}",
        &report.stderr.tail
    );
    eprintln!(
        "stderr flood: {bytes} bytes in {elapsed:?} ({:.0} MiB/s)",
        bytes as f64 / (1 << 20) as f64 / elapsed.as_secs_f64()
    );
}
