//! Cancellation reaches the producer, and the session stays usable after it.

mod session_support;

use std::time::{Duration, Instant};

use drainpipe_framer::Config;
use drainpipe_host::session::{CallError, SessionConfig};
use serde_json::json;
use session_support::*;

/// Cancelled while the tool has not started its work yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_before_work_starts() {
    let session = start(&[], SessionConfig::default()).await;
    let pending = start_tool(
        &session,
        "slow",
        json!({"start_delay_ms": 5000, "steps": 3}),
        opts(20),
    )
    .await;
    let id = pending.id();
    assert!(session.cancel(id, "changed my mind"));
    let outcome = within(5, "cancelled outcome", pending.outcome()).await;
    assert_eq!(
        outcome,
        Err(CallError::Cancelled {
            reason: "changed my mind".into()
        })
    );
    // The task may be aborted before its first poll, so the registry's own
    // line is the evidence, and the work never reports finishing.
    let mark = format!("cancel for id {id}: stopped");
    wait_until(5, "the server stopped the work", || {
        session.stderr().kept_text().contains(&mark)
    })
    .await;
    assert_usable(&session).await;
    assert!(
        !session
            .stderr()
            .kept_text()
            .contains(&format!("slow id={id}: finished"))
    );
    assert!(!session.cancel(id, "again"), "a second cancel is a no-op");
    let metrics = session.metrics();
    assert_eq!(metrics.cancellations_sent, 1);
    assert_eq!(metrics.late_responses_dropped, 0);
    shutdown_clean(&session).await;
}

/// Cancelled while a slow producer is emitting: it stops at that step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_slow_producer() {
    let session = start(&[], SessionConfig::default()).await;
    let pending = start_tool(
        &session,
        "slow",
        json!({"steps": 100, "step_ms": 20}),
        opts(20),
    )
    .await;
    let id = pending.id();
    let progress = within(5, "first progress", session.next_incoming())
        .await
        .expect("progress");
    assert_eq!(progress.method, "notifications/progress");
    assert!(session.cancel(id, "enough"));
    let outcome = within(5, "cancelled outcome", pending.outcome()).await;
    assert!(
        matches!(outcome, Err(CallError::Cancelled { .. })),
        "{outcome:?}"
    );
    let mark = format!("slow id={id}: cancelled at step");
    wait_until(5, "the producer stopped", || {
        session.stderr().kept_text().contains(&mark)
    })
    .await;
    assert_usable(&session).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        session.metrics().late_responses_dropped,
        0,
        "the producer never answered"
    );
    assert!(
        !session
            .stderr()
            .kept_text()
            .contains(&format!("slow id={id}: finished"))
    );
    shutdown_clean(&session).await;
}

/// Cancelled while the tool runs a subprocess that has children of its own
/// and prints forever: all of them are gone afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_a_subprocess_runs() {
    let session = start(&[], SessionConfig::default()).await;
    let pending = start_tool(&session, "spawn_forever", json!({"children": 2}), opts(30)).await;
    let id = pending.id();
    let note = within(10, "spawn notification", session.next_incoming())
        .await
        .expect("notification");
    let subprocess = note.json().unwrap()["params"]["data"]["pid"]
        .as_u64()
        .expect("pid") as u32;
    let server = session.pid();
    let mut tree = Vec::new();
    wait_until(10, "subprocess and both grandchildren running", || {
        tree = descendants(server);
        tree.contains(&subprocess) && tree.len() >= 3
    })
    .await;
    assert!(session.cancel(id, "stop the subprocess"));
    let outcome = within(5, "cancelled outcome", pending.outcome()).await;
    assert!(
        matches!(outcome, Err(CallError::Cancelled { .. })),
        "{outcome:?}"
    );
    assert_all_gone(&tree, "the subprocess and its children were killed").await;
    wait_until(
        5,
        "nothing left under the server, not even a zombie",
        || {
            let left = descendants(server);
            if !left.is_empty() {
                eprintln!(
                    "left: {:?}",
                    left.iter().map(|&p| (p, stat(p))).collect::<Vec<_>>()
                );
            }
            left.is_empty()
        },
    )
    .await;
    assert_usable(&session).await;
    shutdown_clean(&session).await;
    assert_all_gone(&tree, "still gone after shutdown").await;
}

/// Cancelled after the response started arriving: the caller is freed at
/// once; the server cannot abandon a line half-way, but stops pacing it; the
/// rest is drained and dropped (counted); the next request answers right
/// after it instead of after the paced write would have ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_after_the_response_started() {
    let config = SessionConfig {
        framer: Config::default().with_max_frame_bytes(16 << 20),
        ..SessionConfig::default()
    };
    let session = start(&[], config).await;
    let before = session.metrics().stdout_bytes;
    // 8 MiB in 512 pieces, 4 ms apart: the paced response takes over 2 s.
    let pending = start_tool(&session, "large", json!({"piece_delay_ms": 4}), opts(30)).await;
    let id = pending.id();
    wait_until(10, "the response started", || {
        session.metrics().stdout_bytes > before + (256 << 10)
    })
    .await;
    let cancelled_at = Instant::now();
    assert!(session.cancel(id, "too slow"));
    let outcome = within(5, "cancelled outcome", pending.outcome()).await;
    assert!(
        matches!(outcome, Err(CallError::Cancelled { .. })),
        "{outcome:?}"
    );
    let freed = cancelled_at.elapsed();
    assert!(
        freed < Duration::from_millis(100),
        "the caller is freed at once: {freed:?}"
    );
    assert_usable(&session).await;
    let second = cancelled_at.elapsed();
    assert!(
        second < Duration::from_secs(1),
        "answered long before the paced write would end: {second:?}"
    );
    wait_until(5, "the late response was dropped", || {
        session.metrics().late_responses_dropped == 1
    })
    .await;
    eprintln!(
        "cancel after response started: caller freed in {freed:?}, second request answered {second:?} after the cancel"
    );
    shutdown_clean(&session).await;
}

/// A caller that stops waiting (its future is dropped) abandons the request:
/// the server is told, its work stops, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoning_a_call_cancels_it_on_the_server() {
    let session = start(&[], SessionConfig::default()).await;
    let pending = start_tool(
        &session,
        "slow",
        json!({"steps": 100, "step_ms": 20}),
        opts(20),
    )
    .await;
    let id = pending.id();
    let gave_up = tokio::time::timeout(Duration::from_millis(100), pending.outcome()).await;
    assert!(gave_up.is_err(), "the caller stopped waiting");
    assert_eq!(session.metrics().cancellations_sent, 1);
    let mark = format!("cancel for id {id}: stopped");
    wait_until(5, "the server stopped the work", || {
        session.stderr().kept_text().contains(&mark)
    })
    .await;
    assert!(!session.cancel(id, "too late"), "nothing left to cancel");
    assert_usable(&session).await;
    shutdown_clean(&session).await;
}
