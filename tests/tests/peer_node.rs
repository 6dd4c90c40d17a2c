//! Real Node.js peers: the seed's oversized server written for Node here
//! (`tests/peers/node/oversized-server.mjs`), and the official TypeScript
//! SDK (`Client` + `StdioClientTransport`) in front of `drainpipe proxy`
//! with `server-everything` and with the oversized server behind it.
//!
//! Needs `bash tests/peers/setup.sh`; see `drainpipe_release::peers`.

use std::process::Stdio;
use std::time::Duration;

use drainpipe_host::session::{CallError, SessionConfig};
use drainpipe_release::peers::{self, command, proxy_argv, run_client};
use drainpipe_release::procs::assert_group_gone;
use drainpipe_release::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The hazard with the Node server: a parent that ignores its stdout leaves
/// it alive and blocked on 'drain'; the guarded session gets the whole
/// 8 MiB, or fails just that request at a smaller limit and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_oversized_server_hazard_and_guarded_session() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let server = node.oversized_server();

    let mut child = command(&server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node");
    let pid = child.id().expect("pid");
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"large"}}"#;
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(format!("{call}\n").as_bytes())
        .await
        .unwrap();
    let _never_read = child.stdout.take();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    within(15, "node reports backpressure", async {
        loop {
            let line = stderr
                .next_line()
                .await
                .expect("stderr")
                .expect("node is alive");
            if line == "node-oversized: stdout backpressure observed (large id=7)" {
                break;
            }
        }
    })
    .await;
    let stuck = tokio::time::timeout(Duration::from_secs(1), async {
        while let Ok(Some(line)) = stderr.next_line().await {
            if line.contains("wrote") {
                return line;
            }
        }
        String::new()
    })
    .await;
    assert!(
        stuck.is_err(),
        "the write must not finish while nobody reads: {stuck:?}"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "node is alive, blocked"
    );
    child.kill().await.unwrap();
    assert_group_gone(pid).await;

    let session = start_session(command(&server), limited(16 << 20)).await;
    let whole = within(
        30,
        "8 MiB through the session",
        tool(&session, "large", json!({}), opts(25)),
    )
    .await
    .expect("the whole response");
    assert_eq!(whole.wire_bytes, 8 << 20);
    let id = whole.id;
    wait_until(5, "node finished writing", || {
        session
            .stderr()
            .kept_text()
            .contains(&format!("large id={id}: wrote {} bytes", (8 << 20) + 1))
    })
    .await;
    shutdown_clean(&session).await;

    let session = start_session(command(&server), limited(1 << 20)).await;
    let over = within(
        30,
        "8 MiB over a 1 MiB limit",
        tool(&session, "large", json!({}), opts(25)),
    )
    .await;
    assert!(
        matches!(
            over,
            Err(CallError::TooLarge {
                limit_bytes: 1_048_576,
                ..
            })
        ),
        "{over:?}"
    );
    answers_quickly("echo after the oversize", || {
        tool(&session, "echo", json!({"k": 1}), opts(5))
    })
    .await;
    shutdown_clean(&session).await;
}

/// The guarded session in front of `drainpipe proxy` in front of the Node
/// server: the oversize answer becomes a JSON-RPC error for that id (an
/// answer, not a hang), the next request answers, and the proxy's added
/// round-trip latency is measured against a direct session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_oversized_server_behind_the_proxy() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let server = node.oversized_server();
    let proxied = proxy_argv(
        &drainpipe,
        &["--max-frame", "1MiB", "--metrics", "none"],
        &server,
    );
    let session = start_session(command(&proxied), SessionConfig::default()).await;
    let over = within(
        30,
        "large behind the proxy",
        tool(&session, "large", json!({}), opts(25)),
    )
    .await;
    match over {
        Err(CallError::JsonRpc { code, message, .. }) => {
            assert_eq!(code, drainpipe_host::proxy::TOO_LARGE);
            assert!(message.contains("transport limit"), "{message}");
        }
        other => panic!("expected the proxy's error for that id, got {other:?}"),
    }
    answers_quickly("echo after the proxy's error", || {
        tool(&session, "echo", json!({"k": 2}), opts(5))
    })
    .await;
    let (proxy_median, _) =
        round_trips(300, |i| tool(&session, "echo", json!({"i": i}), opts(5))).await;
    shutdown_clean(&session).await;

    let direct = start_session(command(&server), SessionConfig::default()).await;
    let (direct_median, _) =
        round_trips(300, |i| tool(&direct, "echo", json!({"i": i}), opts(5))).await;
    shutdown_clean(&direct).await;
    figure(
        "node-oversized-server: guarded session echo round trip, proxy vs direct",
        json!({"direct_median_us": direct_median.as_micros() as u64, "proxy_median_us": proxy_median.as_micros() as u64,
               "ratio": proxy_median.as_secs_f64() / direct_median.as_secs_f64()}),
    );
}

/// The official TypeScript SDK client in front of the Node oversized
/// server: directly it receives the 8 MiB result; behind the proxy with a
/// 1 MiB limit it gets an error for that request and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_client_with_the_oversized_server_direct_and_proxied() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let server = node.oversized_server();
    let direct_args: Vec<&str> = ["oversized", "--expect-large", "ok", "--"]
        .into_iter()
        .chain(server.iter().map(String::as_str))
        .collect();
    let direct = run_client(
        node.script("sdk-client.mjs", &direct_args),
        60,
        "SDK client, direct",
    )
    .await;

    let metrics = std::env::temp_dir().join(format!(
        "drainpipe-release-node-{}.json",
        std::process::id()
    ));
    let metrics_arg = metrics.display().to_string();
    let proxied = proxy_argv(
        &drainpipe,
        &[
            "--max-frame",
            "1MiB",
            "--metrics",
            "json",
            "--metrics-file",
            &metrics_arg,
        ],
        &server,
    );
    let proxied_args: Vec<&str> = ["oversized", "--expect-large", "error", "--"]
        .into_iter()
        .chain(proxied.iter().map(String::as_str))
        .collect();
    let proxied = run_client(
        node.script("sdk-client.mjs", &proxied_args),
        60,
        "SDK client, proxied",
    )
    .await;
    assert_eq!(
        proxied.summary["large"]["code"],
        json!(drainpipe_host::proxy::TOO_LARGE)
    );
    let written = within(10, "proxy metrics file", async {
        loop {
            if let Ok(text) = std::fs::read_to_string(&metrics)
                && !text.is_empty()
            {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let _ = std::fs::remove_file(&metrics);
    let counted: serde_json::Value = serde_json::from_str(written.trim()).expect("metrics JSON");
    assert_eq!(counted["server_to_host"]["oversize"], json!(1), "{counted}");
    assert_eq!(counted["errors_sent"], json!(1), "{counted}");
    ratio_figure(
        "typescript-sdk client + node oversized server",
        &direct.summary,
        &proxied.summary,
    );
}

/// The official TypeScript SDK client in front of `drainpipe proxy` in
/// front of `server-everything`: tools listed, 150 concurrent calls each
/// with its own answer, progress in order, a cancelled call and a quick
/// next call; the same run directly for the latency ratio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_client_and_server_everything_behind_the_proxy() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let server = node.everything_server();
    let direct_args: Vec<&str> = ["everything", "--"]
        .into_iter()
        .chain(server.iter().map(String::as_str))
        .collect();
    let direct = run_client(
        node.script("sdk-client.mjs", &direct_args),
        60,
        "SDK client + server-everything, direct",
    )
    .await;
    let proxied = proxy_argv(&drainpipe, &["--metrics", "none"], &server);
    let proxied_args: Vec<&str> = ["everything", "--"]
        .into_iter()
        .chain(proxied.iter().map(String::as_str))
        .collect();
    let proxied = run_client(
        node.script("sdk-client.mjs", &proxied_args),
        60,
        "SDK client + server-everything, proxied",
    )
    .await;
    assert_eq!(
        direct.summary["tools"], proxied.summary["tools"],
        "the proxy hides no tool"
    );
    ratio_figure(
        "typescript-sdk client + server-everything",
        &direct.summary,
        &proxied.summary,
    );
}

fn ratio_figure(name: &str, direct: &serde_json::Value, proxied: &serde_json::Value) {
    let d = direct["rtt_median_ms"].as_f64().expect("direct median");
    let p = proxied["rtt_median_ms"].as_f64().expect("proxied median");
    figure(
        &format!("{name}: echo round trip, proxy vs direct"),
        json!({"direct_median_ms": d, "proxy_median_ms": p, "ratio": p / d,
               "direct_p90_ms": direct["rtt_p90_ms"], "proxy_p90_ms": proxied["rtt_p90_ms"]}),
    );
}
