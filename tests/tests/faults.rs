//! Guarantee: whatever the server does — crash in the middle of a message,
//! get stopped and resumed, close stdout early, never read stdin — every
//! request ends in exactly one outcome, none waits past its timeout, and no
//! process of the server's group is left behind (no zombie, no orphan).

use std::time::{Duration, Instant};

use drainpipe_host::session::{CallError, PendingCall, Session, SessionConfig};
use drainpipe_release::procs::{self, assert_group_gone};
use drainpipe_release::*;
use nix::sys::signal::Signal;
use serde_json::json;

/// Starts `count` slow calls that will not answer on their own soon.
async fn slow_calls(session: &Session, count: usize) -> Vec<PendingCall> {
    let mut calls = Vec::new();
    for _ in 0..count {
        calls.push(
            start_tool(
                session,
                "slow",
                json!({"steps": 1, "step_ms": 60_000}),
                opts(30),
            )
            .await,
        );
    }
    calls
}

/// Awaits every call; each must end once, as session lost, quickly.
async fn all_lost(calls: Vec<PendingCall>, what: &str) {
    let started = Instant::now();
    for call in calls {
        let outcome = within(10, what, call.outcome()).await;
        assert!(
            matches!(outcome, Err(CallError::SessionLost { .. })),
            "{what}: {outcome:?}"
        );
    }
    assert!(
        started.elapsed() < QUICK,
        "{what}: the calls waited {:?}",
        started.elapsed()
    );
}

/// The server is killed after writing half a response line: that request
/// and every other one in flight fail as session lost, at once (not by
/// timeout); new requests fail at once too; the group is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_crashes_mid_frame() {
    let session = start_fixture(&[], SessionConfig::default()).await;
    let pid = session.pid();
    let others = slow_calls(&session, 5).await;
    // Their progress notifications are out first, so nothing follows the
    // half line on stdout but the end of the stream.
    for _ in 0..5 {
        within(5, "progress", session.next_incoming())
            .await
            .expect("progress");
    }
    let half = start_tool(&session, "die_mid_frame", json!({}), opts(30)).await;
    let id = half.id();
    wait_until(5, "half a line written", || {
        session
            .stderr()
            .kept_text()
            .contains(&format!("die_mid_frame id={id}: wrote"))
    })
    .await;
    procs::signal(pid, Signal::SIGKILL);
    let mut calls = others;
    calls.push(half);
    all_lost(calls, "in flight when the server crashed").await;
    let after = within(
        5,
        "a call after the crash",
        tool(&session, "echo", json!({}), opts(5)),
    )
    .await;
    assert!(
        matches!(after, Err(CallError::SessionLost { .. })),
        "{after:?}"
    );
    assert_eq!(
        session.metrics().frames,
        6,
        "the half line was never framed (initialize, 5 progress)"
    );
    shutdown_clean(&session).await;
    assert_group_gone(pid).await;
}

/// SIGSTOP then SIGCONT: while stopped, calls wait (one with a short timeout
/// times out and its late answer is dropped after the resume), the session
/// is not lost; after SIGCONT every waiting call answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_stopped_then_resumed() {
    let session = start_fixture(&[], SessionConfig::default()).await;
    let pid = session.pid();
    procs::signal(pid, Signal::SIGSTOP);
    wait_until(5, "the server is stopped", || {
        procs::stat(pid).is_some_and(|s| s.state == 'T')
    })
    .await;
    let mut waiting = Vec::new();
    for n in 0..20 {
        waiting.push((
            n,
            start_tool(&session, "echo", json!({"n": n}), opts(20)).await,
        ));
    }
    let short = within(
        5,
        "a call with a short timeout",
        tool(&session, "echo", json!({"short": true}), opts_ms(300)),
    )
    .await;
    assert!(
        matches!(short, Err(CallError::TimedOut { .. })),
        "{short:?}"
    );
    assert!(
        session.lost().is_none(),
        "a stopped server is not a lost session"
    );
    procs::signal(pid, Signal::SIGCONT);
    for (n, call) in waiting {
        let response = within(10, "answers after SIGCONT", call.outcome())
            .await
            .expect("answers");
        assert_eq!(response.result["structuredContent"], json!({"n": n}));
    }
    fixture_echo_quickly(&session, "after SIGCONT").await;
    shutdown_clean(&session).await;
}

/// The server closes stdout early and stays alive (ignoring stdin's end and
/// SIGTERM): pending calls fail at once, shutdown escalates to SIGKILL, and
/// nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_closes_stdout_early() {
    let session = start_fixture(&["--linger", "--ignore-sigterm"], SessionConfig::default()).await;
    let pid = session.pid();
    let mut calls = slow_calls(&session, 3).await;
    calls.push(start_tool(&session, "close_stdout", json!({}), opts(30)).await);
    all_lost(calls, "in flight when stdout closed").await;
    assert!(
        procs::stat(pid).is_some_and(|s| s.state != 'Z'),
        "the server is still alive"
    );
    let report = shutdown_clean(&session).await;
    assert_eq!(report.ending, drainpipe_host::session::Ending::Killed);
}

/// The server never reads stdin: a request larger than the pipe cannot be
/// written, yet it ends by its timeout, stdout is still read (heartbeats
/// arrive), small calls behind it time out too (one outcome each), and
/// shutdown ends the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_never_reads_stdin() {
    let config = SessionConfig {
        writer_queue: 4,
        ..SessionConfig::default()
    };
    let session = Session::spawn(fixture(&["--never-read-stdin"]), config).expect("spawn");
    let started = Instant::now();
    let big = "s".repeat(1 << 20);
    let stuck = within(
        10,
        "a request the server never reads",
        tool(&session, "echo", json!({"big": big}), opts_ms(500)),
    )
    .await;
    assert!(
        matches!(stuck, Err(CallError::TimedOut { .. })),
        "{stuck:?}"
    );
    let mut small = Vec::new();
    for _ in 0..8 {
        small.push(tokio::spawn({
            let session = session.clone();
            async move { tool(&session, "echo", json!({}), opts_ms(300)).await }
        }));
    }
    for call in small {
        let outcome = within(5, "small calls behind the stuck one", call)
            .await
            .expect("task");
        assert!(
            matches!(outcome, Err(CallError::TimedOut { .. })),
            "{outcome:?}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let beat = within(5, "heartbeats still arrive", session.next_incoming())
        .await
        .expect("a heartbeat");
    assert_eq!(beat.method, "notifications/message");
    shutdown_clean(&session).await;
}
