//! The reader never stops reading stdout, whatever the caller does.

mod session_support;

use std::time::Duration;

use drainpipe_framer::Config;
use drainpipe_host::session::{CallError, DispatcherFullPolicy, SessionConfig};
use serde_json::json;
use session_support::*;

const MIB: u64 = 1 << 20;

/// The hazard itself, without a session: a parent that does not read stdout.
/// The fixture sees backpressure and its write never finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unguarded_parent_shows_the_hazard() {
    use std::process::Stdio;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let mut child = fixture(&[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the fixture");
    let mut stdin = child.stdin.take().unwrap();
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"large"}}"#;
    stdin
        .write_all(format!("{call}\n").as_bytes())
        .await
        .unwrap();
    let _stdout_never_read = child.stdout.take().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let started = within(10, "start of the write", stderr.next_line()).await;
    assert_eq!(
        started.unwrap().as_deref(),
        Some("large id=1: writing 8388609 bytes")
    );
    let line = within(10, "backpressure report", stderr.next_line()).await;
    assert_eq!(
        line.unwrap().as_deref(),
        Some("stdout backpressure observed (large id=1)")
    );
    let finished = tokio::time::timeout(Duration::from_millis(500), stderr.next_line()).await;
    assert!(
        finished.is_err(),
        "the write must still be stuck: {finished:?}"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "the server is alive, just blocked"
    );
    child.kill().await.unwrap();
}

/// The caller starts an 8 MiB call and does not consume it: the fixture's
/// write still completes, because the reader keeps draining into the call's
/// slot. Only then does the caller look at the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_consumer_never_stops_stdout_reading() {
    let config = SessionConfig {
        framer: Config::default().with_max_frame_bytes(16 << 20),
        ..SessionConfig::default()
    };
    let session = start(&[], config).await;
    let pending = start_tool(&session, "large", json!({}), opts(30)).await;
    let label = format!("large id={}: wrote {} bytes", pending.id(), 8 * MIB + 1);
    within(
        20,
        "the fixture finishes its 8 MiB write while nobody awaits the call",
        async {
            wait_until(15, "write completed", || {
                session.stderr().kept_text().contains(&label)
            })
            .await;
        },
    )
    .await;
    // The fixture says "wrote" once its last write returned, which can be
    // before the reader took that write's bytes from the pipe: the reader
    // must take them all still, with nobody awaiting the call.
    wait_until(10, "the reader takes every byte", || {
        session.metrics().stdout_bytes > 8 * MIB
    })
    .await;
    let response = within(10, "the parked response", pending.outcome())
        .await
        .expect("the response was kept");
    assert_eq!(response.wire_bytes as u64, 8 * MIB);
    assert_eq!(session.metrics().largest_frame_bytes, 8 * MIB);
    assert_usable(&session).await;
    shutdown_clean(&session).await;
}

/// Progress notifications nobody reads fill the dispatcher; the reader keeps
/// reading, applies the policy (drops, counted, after one bounded wait) and
/// still delivers the final response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_dispatcher_never_pauses_the_reader() {
    let config = SessionConfig {
        dispatcher_capacity: 4,
        dispatcher_wait: Duration::from_millis(20),
        dispatcher_full: DispatcherFullPolicy::RejectNew,
        ..SessionConfig::default()
    };
    let session = start(&[], config).await;
    let pending = start_tool(
        &session,
        "slow",
        json!({"steps": 200, "step_ms": 0}),
        opts(20),
    )
    .await;
    let response = within(
        20,
        "slow answers while its notifications pile up",
        pending.outcome(),
    )
    .await;
    assert_eq!(
        first_text(&response.expect("final response")),
        "done after 200 steps"
    );
    let metrics = session.metrics();
    assert!(
        metrics.dispatcher_overflows >= 190,
        "overflows counted: {metrics:?}"
    );
    assert!(
        metrics.dispatcher_wait_micros >= 15_000,
        "the one bounded wait was measured: {metrics:?}"
    );
    assert!(
        metrics.dispatcher_wait_micros < 2_000_000,
        "no wait per message: {metrics:?}"
    );
    // While the dispatcher is full, new calls are refused rather than queued.
    let refused = tool(&session, "echo", json!({}), opts(5)).await;
    assert!(
        matches!(refused, Err(CallError::Rejected { .. })),
        "{refused:?}"
    );
    // Consuming makes room and lifts the policy.
    let first = within(5, "queued notification", session.next_incoming())
        .await
        .expect("a notification");
    assert_eq!(first.method, "notifications/progress");
    assert_usable(&session).await;
    shutdown_clean(&session).await;
}

/// Under the kill policy a consumer that stops consuming costs the session,
/// not the reader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_dispatcher_kill_policy_ends_the_session() {
    let config = SessionConfig {
        dispatcher_capacity: 2,
        dispatcher_wait: Duration::from_millis(5),
        dispatcher_full: DispatcherFullPolicy::KillSession,
        ..SessionConfig::default()
    };
    let session = start(&[], config).await;
    let outcome = within(
        20,
        "slow under the kill policy",
        tool(
            &session,
            "slow",
            json!({"steps": 50, "step_ms": 0}),
            opts(10),
        ),
    )
    .await;
    assert!(
        matches!(outcome, Err(CallError::SessionLost { .. })),
        "{outcome:?}"
    );
    assert_eq!(session.metrics().process_kills, 1);
    let report = shutdown_clean(&session).await;
    assert!(report.lost.expect("lost").contains("dispatcher"));
}

/// Server requests reach the consumer through the dispatcher and can be
/// answered; when the dispatcher is full, the host answers them itself with
/// a JSON-RPC error instead of leaving the server waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_are_answered_or_rejected_with_an_error() {
    let session = start(&[], SessionConfig::default()).await;
    let pending = start_tool(&session, "ask_host", json!({}), opts(10)).await;
    let request = within(5, "server request", session.next_incoming())
        .await
        .expect("request");
    assert_eq!(request.method, "roots/list");
    let id = request.id.clone().expect("a request has an id");
    within(5, "respond", session.respond(&id, Ok(json!({"roots": []}))))
        .await
        .expect("sent");
    let answered = within(10, "ask_host", pending.outcome())
        .await
        .expect("answers");
    assert_eq!(
        answered.result["structuredContent"]["answers"][0]["result"],
        json!({"roots": []})
    );
    shutdown_clean(&session).await;

    let config = SessionConfig {
        dispatcher_capacity: 1,
        dispatcher_wait: Duration::from_millis(10),
        ..SessionConfig::default()
    };
    let session = start(&[], config).await;
    let args = json!({"count": 3, "wait_ms": 300});
    let outcome = within(
        10,
        "ask_host, nobody consuming",
        tool(&session, "ask_host", args, opts(10)),
    )
    .await;
    let answers = outcome.expect("answers").result["structuredContent"]["answers"].clone();
    assert_eq!(
        answers[0],
        json!("no answer"),
        "queued for a consumer that never came"
    );
    for rejected in [&answers[1], &answers[2]] {
        assert_eq!(rejected["error"]["code"], json!(-31000), "{rejected}");
        assert_eq!(
            rejected["error"]["data"]["drainpipe"]["reason"],
            json!("host-busy"),
            "{rejected}"
        );
    }
    assert_eq!(session.metrics().dispatcher_overflows, 2);
    shutdown_clean(&session).await;
}
