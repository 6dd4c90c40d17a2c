//! The official Python SDK (`mcp`): a server written with it
//! (`tests/peers/python/server.py`: `huge` returns 8 MiB, `slow` is
//! cancellable) behind the guarded session and behind `drainpipe proxy`;
//! and the SDK's stdio client (`tests/peers/python/client.py`) in front of
//! the proxy.
//!
//! Needs `bash tests/peers/setup.sh`; see `drainpipe_release::peers`.

use drainpipe_host::session::{CallError, Session, SessionConfig};
use drainpipe_release::peers::{self, command, proxy_argv, run_client};
use drainpipe_release::*;
use serde_json::json;

/// Cancels a `slow` call once the server has started it; the server must
/// report the cancellation and the next call answer quickly.
async fn cancel_slow(session: &Session, what: &str) {
    let pending = start_tool(session, "slow", json!({"seconds": 30}), opts(40)).await;
    wait_until(10, "the slow tool started", || {
        session.stderr().kept_text().contains("slow: started")
    })
    .await;
    assert!(session.cancel(pending.id(), what));
    let outcome = within(5, what, pending.outcome()).await;
    assert!(
        matches!(outcome, Err(CallError::Cancelled { .. })),
        "{outcome:?}"
    );
    wait_until(5, "the cancellation reached the tool", || {
        session.stderr().kept_text().contains("slow: cancelled")
    })
    .await;
    answers_quickly(&format!("echo after {what}"), || async {
        let response = tool(session, "echo", json!({"text": "after"}), opts(5)).await?;
        assert_eq!(first_text(&response), "after");
        Ok(response)
    })
    .await;
}

/// Behind the guarded session: the 8 MiB result arrives whole under a
/// 16 MiB limit and fails just that request under a 1 MiB one; a slow call
/// is cancelled in the server; the next call answers quickly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_server_behind_the_guarded_session() {
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let server = python.server();

    let session = start_session(command(&server), limited(16 << 20)).await;
    let tools = within(
        10,
        "tools/list",
        session.call("tools/list", json!({}), opts(5)),
    )
    .await
    .expect("tools");
    let mut names: Vec<&str> = tools.result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["echo", "hit_map", "hits", "huge", "read_text", "slow"]
    );
    let huge = within(
        60,
        "huge, whole",
        tool(&session, "huge", json!({"bytes": 8 << 20}), opts(50)),
    )
    .await
    .expect("whole");
    assert_eq!(first_text(&huge).len(), 8 << 20);
    cancel_slow(&session, "cancelling the Python slow tool").await;
    shutdown_clean(&session).await;

    let session = start_session(command(&server), limited(1 << 20)).await;
    let over = within(
        60,
        "huge over 1 MiB",
        tool(&session, "huge", json!({"bytes": 8 << 20}), opts(50)),
    )
    .await;
    assert!(matches!(over, Err(CallError::TooLarge { .. })), "{over:?}");
    answers_quickly("echo after the oversize", || {
        tool(&session, "echo", json!({"text": "x"}), opts(5))
    })
    .await;
    shutdown_clean(&session).await;
}

/// Behind `drainpipe proxy` (default 4 MiB limit), driven by the guarded
/// session: the oversize result becomes an error for that id, cancellation
/// is forwarded and reaches the tool, and the proxy's added latency is
/// measured against a direct session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_server_behind_the_proxy() {
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let server = python.server();
    let proxied = proxy_argv(&drainpipe, &["--metrics", "none"], &server);
    let session = start_session(command(&proxied), SessionConfig::default()).await;
    let over = within(
        60,
        "huge behind the proxy",
        tool(&session, "huge", json!({"bytes": 8 << 20}), opts(50)),
    )
    .await;
    match over {
        Err(CallError::JsonRpc { code, .. }) => assert_eq!(code, drainpipe_host::proxy::TOO_LARGE),
        other => panic!("expected the proxy's error for that id, got {other:?}"),
    }
    cancel_slow(&session, "cancelling through the proxy").await;
    let (proxy_median, _) = round_trips(100, |i| {
        tool(&session, "echo", json!({"text": i.to_string()}), opts(5))
    })
    .await;
    shutdown_clean(&session).await;

    let direct = start_session(command(&server), SessionConfig::default()).await;
    let (direct_median, _) = round_trips(100, |i| {
        tool(&direct, "echo", json!({"text": i.to_string()}), opts(5))
    })
    .await;
    shutdown_clean(&direct).await;
    figure(
        "python-sdk server: guarded session echo round trip, proxy vs direct",
        json!({"direct_median_us": direct_median.as_micros() as u64, "proxy_median_us": proxy_median.as_micros() as u64,
               "ratio": proxy_median.as_secs_f64() / direct_median.as_secs_f64()}),
    );
}

/// The Python SDK's stdio client in front of the proxy in front of the
/// Python server: everything works as directly, except that the 8 MiB
/// result is an error for that request instead of 8 MiB in the agent's
/// memory; the same run directly gives the latency ratio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_client_in_front_of_the_proxy() {
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let server = python.server();
    let direct_args: Vec<&str> = ["--expect-huge", "ok", "--"]
        .into_iter()
        .chain(server.iter().map(String::as_str))
        .collect();
    let direct = run_client(
        python.script("client.py", &direct_args),
        90,
        "Python SDK client, direct",
    )
    .await;
    let proxied = proxy_argv(&drainpipe, &["--metrics", "none"], &server);
    let proxied_args: Vec<&str> = ["--expect-huge", "error", "--"]
        .into_iter()
        .chain(proxied.iter().map(String::as_str))
        .collect();
    let proxied = run_client(
        python.script("client.py", &proxied_args),
        90,
        "Python SDK client, proxied",
    )
    .await;
    assert!(
        proxied.summary["huge"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("transport limit")),
        "{}",
        proxied.summary
    );
    let d = direct.summary["rtt_median_ms"].as_f64().expect("direct");
    let p = proxied.summary["rtt_median_ms"].as_f64().expect("proxied");
    figure(
        "python-sdk client + python-sdk server: echo round trip, proxy vs direct",
        json!({"direct_median_ms": d, "proxy_median_ms": p, "ratio": p / d,
               "direct_huge_ms": direct.summary["huge_ms"], "proxy_huge_ms": proxied.summary["huge_ms"]}),
    );
    direct.assert_nothing_left();
    proxied.assert_nothing_left();
}
