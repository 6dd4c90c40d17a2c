//! Guarantee: cancellation reaches active work — the caller is freed at
//! once, the server is told (`notifications/cancelled`), the work stops
//! (including subprocesses and their children) — and another, independent
//! request answers quickly afterwards, whatever stage the work was at.

use std::time::{Duration, Instant};

use drainpipe_host::session::{CallError, Session, SessionConfig};
use drainpipe_release::procs::{assert_all_gone, descendants};
use drainpipe_release::*;
use serde_json::json;

/// Cancels `id` and checks the caller's outcome is `Cancelled`, at once.
async fn cancel_now(session: &Session, pending: drainpipe_host::session::PendingCall, what: &str) {
    let started = Instant::now();
    assert!(
        session.cancel(pending.id(), what),
        "{what}: the request was still pending"
    );
    let outcome = within(5, what, pending.outcome()).await;
    assert!(
        matches!(outcome, Err(CallError::Cancelled { .. })),
        "{what}: {outcome:?}"
    );
    assert!(
        started.elapsed() < QUICK,
        "{what}: the caller waited {:?}",
        started.elapsed()
    );
}

/// The server said on stderr that the work stopped.
async fn server_says(session: &Session, needle: &str) {
    wait_until(5, &format!("the server logs {needle:?}"), || {
        session.stderr().kept_text().contains(needle)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_before_work_starts() {
    let session = start_fixture(&[], SessionConfig::default()).await;
    let pending = start_tool(
        &session,
        "slow",
        json!({"start_delay_ms": 3000, "steps": 5}),
        opts(10),
    )
    .await;
    let id = pending.id();
    tokio::time::sleep(Duration::from_millis(50)).await;
    cancel_now(&session, pending, "before work starts").await;
    server_says(&session, &format!("slow id={id}: cancelled before start")).await;
    fixture_echo_quickly(&session, "after a cancel before work started").await;
    shutdown_clean(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_slow_producer() {
    let session = start_fixture(&[], SessionConfig::default()).await;
    let pending = start_tool(
        &session,
        "slow",
        json!({"steps": 100, "step_ms": 50}),
        opts(20),
    )
    .await;
    let id = pending.id();
    for _ in 0..3 {
        let progress = within(5, "progress", session.next_incoming())
            .await
            .expect("a notification");
        assert_eq!(progress.method, "notifications/progress");
    }
    cancel_now(&session, pending, "during a slow producer").await;
    server_says(&session, &format!("slow id={id}: cancelled at step")).await;
    fixture_echo_quickly(&session, "after cancelling a slow producer").await;
    assert!(
        !session
            .stderr()
            .kept_text()
            .contains(&format!("slow id={id}: finished"))
    );
    shutdown_clean(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_a_subprocess_runs() {
    let session = start_fixture(&[], SessionConfig::default()).await;
    let pending = start_tool(&session, "spawn_forever", json!({"children": 2}), opts(20)).await;
    let started = within(5, "subprocess started", session.next_incoming())
        .await
        .expect("message");
    let subprocess = started.json().expect("json")["params"]["data"]["pid"]
        .as_u64()
        .expect("pid") as u32;
    // The subprocess and its two children are printing.
    wait_until(5, "the subprocess's children run", || {
        descendants(subprocess).len() >= 2
    })
    .await;
    let mut workers = descendants(subprocess);
    workers.push(subprocess);
    cancel_now(&session, pending, "while a subprocess runs").await;
    assert_all_gone(
        &workers,
        "the subprocess and its children are gone after the cancel",
    )
    .await;
    fixture_echo_quickly(&session, "after cancelling a subprocess").await;
    shutdown_clean(&session).await;
    assert_all_gone(&workers, "still gone after shutdown").await;
}

/// Cancelled while an 8 MiB response is pouring out: the server
/// cannot take a line back, so the reader drains the rest, drops it
/// (counted as late) and the next request answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_output() {
    let session = start_fixture(&[], limited(16 << 20)).await;
    // Paced at 1 ms per 16 KiB (≥ 0.5 s for 8 MiB), so "during output" is
    // a window the check below cannot miss: unpaced, the whole line can
    // arrive between two looks at the counter.
    let pending = start_tool(&session, "large", json!({"piece_delay_ms": 1}), opts(20)).await;
    wait_until(10, "output started", || {
        session.metrics().stdout_bytes > 300 << 10
    })
    .await;
    cancel_now(&session, pending, "during output").await;
    fixture_echo_quickly(&session, "after cancelling during output").await;
    wait_until(10, "the rest of the line was drained and dropped", || {
        session.metrics().late_responses_dropped == 1
    })
    .await;
    assert!(session.metrics().stdout_bytes > 8 << 20);
    shutdown_clean(&session).await;
}

/// Cancelled after the response began arriving, with the server pacing it
/// (1 ms per 16 KiB: 0.5 s for 8 MiB): the server stops pacing, and the next
/// request answers long before the paced write would have ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_after_the_response_began() {
    let session = start_fixture(&[], limited(64 << 20)).await;
    let args = json!({"bytes": 32 << 20, "piece_delay_ms": 2});
    let pending = start_tool(&session, "large", args, opts(30)).await;
    wait_until(10, "the response began", || {
        session.metrics().stdout_bytes > 1 << 20
    })
    .await;
    let cancelled_at = Instant::now();
    cancel_now(&session, pending, "after the response began").await;
    let took = fixture_echo_quickly(&session, "after cancelling a response in flight").await;
    // Paced, the 32 MiB would take 2048 × 2 ms ≈ 4 s; the server hurried.
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(3),
        "the next request waited for the whole paced write ({took:?})"
    );
    assert_eq!(session.metrics().late_responses_dropped, 1);
    shutdown_clean(&session).await;
}
