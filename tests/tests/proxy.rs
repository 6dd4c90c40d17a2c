//! `drainpipe proxy` between the guarded session and the fixture server:
//! what the proxy changes for a host (oversize → an error for that id, even
//! when the id comes after the limit; stray stdout lines diverted to
//! stderr) and what it must not change (order, payloads, cancellation
//! reaching the work, nothing left running at the end).

use drainpipe_host::session::{CallError, Session, SessionConfig};
use drainpipe_release::peers::{self, command, proxy_argv};
use drainpipe_release::procs::{DescendantWatch, assert_all_gone, descendants};
use drainpipe_release::*;
use serde_json::json;

/// A session on `drainpipe proxy [args] -- drainpipe-fixture [fixture_args]`,
/// with a watch on every process under the proxy.
async fn proxied(proxy_args: &[&str], fixture_args: &[&str]) -> Option<(Session, DescendantWatch)> {
    let drainpipe = peers::gate("the drainpipe binary", peers::drainpipe())?;
    let mut server = vec![fixture_binary().display().to_string()];
    server.extend(fixture_args.iter().map(|a| a.to_string()));
    let argv = proxy_argv(&drainpipe, proxy_args, &server);
    // The proxy sets the limits under test; the session's own is above them.
    let session = start_session(command(&argv), limited(16 << 20)).await;
    let watch = DescendantWatch::start(session.pid());
    Some((session, watch))
}

async fn finish(session: Session, watch: DescendantWatch) {
    shutdown_clean(&session).await;
    let seen = watch.stop();
    assert!(!seen.is_empty(), "the proxy's server was seen");
    assert_all_gone(&seen, "the proxy's server and its children are gone").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_becomes_an_error_for_that_id_even_with_the_id_last() {
    let Some((session, watch)) =
        proxied(&["--max-frame", "256KiB", "--metrics", "none"], &[]).await
    else {
        return;
    };
    for id_last in [false, true] {
        let over = within(
            10,
            "oversize through the proxy",
            tool(
                &session,
                "sized",
                json!({"bytes": (256 << 10) + 1, "id_last": id_last}),
                opts(5),
            ),
        )
        .await;
        match over {
            Err(CallError::JsonRpc { code, .. }) => {
                assert_eq!(code, drainpipe_host::proxy::TOO_LARGE, "id_last={id_last}")
            }
            other => panic!("id_last={id_last}: expected an error for that id, got {other:?}"),
        }
        fixture_echo_quickly(&session, "after an oversize through the proxy").await;
    }
    let at = within(
        10,
        "at the limit",
        tool(&session, "sized", json!({"bytes": 256 << 10}), opts(5)),
    )
    .await;
    assert_eq!(at.expect("fits").wire_bytes, 256 << 10);
    finish(session, watch).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stray_stdout_lines_are_diverted_to_stderr() {
    let Some((session, watch)) = proxied(&["--metrics", "none"], &["--stray-stdout"]).await else {
        return;
    };
    let response = within(
        10,
        "stray_log",
        tool(&session, "stray_log", json!({}), opts(5)),
    )
    .await
    .expect("answers");
    assert_eq!(first_text(&response), "wrote a stray log line to stdout");
    assert_eq!(
        session.metrics().not_protocol_lines,
        0,
        "the host saw protocol only"
    );
    wait_until(5, "the stray lines are on the proxy's stderr", || {
        let text = session.stderr().kept_text();
        text.contains("this log line went to stdout by mistake")
            && text.contains("listening on stdio")
    })
    .await;
    finish(session, watch).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_and_payloads_pass_unchanged() {
    let Some((session, watch)) = proxied(&["--max-frame", "16MiB", "--metrics", "none"], &[]).await
    else {
        return;
    };
    let slow = start_tool(
        &session,
        "slow",
        json!({"steps": 50, "step_ms": 1}),
        opts(20),
    )
    .await;
    for k in 1..=50 {
        let progress = within(5, "progress through the proxy", session.next_incoming())
            .await
            .expect("notification");
        assert_eq!(
            progress.json().unwrap()["params"]["progress"],
            json!(k),
            "progress in order"
        );
    }
    assert_eq!(
        first_text(&within(10, "slow", slow.outcome()).await.expect("slow")),
        "done after 50 steps"
    );
    let tricky = within(10, "tricky", tool(&session, "tricky", json!({}), opts(5)))
        .await
        .expect("tricky");
    let texts = tricky.result["structuredContent"]["texts"]
        .as_array()
        .unwrap();
    for (i, text) in texts.iter().enumerate() {
        assert_eq!(&tricky.result["content"][i]["text"], text);
    }
    let large = within(
        30,
        "8 MiB through the proxy",
        tool(&session, "large", json!({}), opts(25)),
    )
    .await
    .expect("large");
    assert_eq!(large.wire_bytes, 8 << 20);
    finish(session, watch).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_a_subprocess_through_the_proxy() {
    let Some((session, watch)) = proxied(&["--metrics", "none"], &[]).await else {
        return;
    };
    let pending = start_tool(&session, "spawn_forever", json!({"children": 2}), opts(20)).await;
    let started = within(5, "subprocess started", session.next_incoming())
        .await
        .expect("message");
    let subprocess = started.json().unwrap()["params"]["data"]["pid"]
        .as_u64()
        .unwrap() as u32;
    wait_until(5, "its children run", || descendants(subprocess).len() >= 2).await;
    let mut workers = descendants(subprocess);
    workers.push(subprocess);
    assert!(session.cancel(pending.id(), "through the proxy"));
    let outcome = within(5, "cancelled", pending.outcome()).await;
    assert!(
        matches!(outcome, Err(CallError::Cancelled { .. })),
        "{outcome:?}"
    );
    assert_all_gone(
        &workers,
        "the subprocess tree is gone after a cancel through the proxy",
    )
    .await;
    fixture_echo_quickly(&session, "after a cancel through the proxy").await;
    finish(session, watch).await;
}

/// The round trip the proxy adds for the guarded session and the fixture,
/// as a ratio to a direct session (printed as a figure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_added_by_the_proxy() {
    let Some((session, watch)) = proxied(&["--metrics", "none"], &[]).await else {
        return;
    };
    let (proxy_median, proxy_p90) =
        round_trips(500, |i| tool(&session, "echo", json!({"i": i}), opts(5))).await;
    finish(session, watch).await;
    let direct = start_fixture(&[], limited(16 << 20)).await;
    let (direct_median, direct_p90) =
        round_trips(500, |i| tool(&direct, "echo", json!({"i": i}), opts(5))).await;
    shutdown_clean(&direct).await;
    figure(
        "fixture server: guarded session echo round trip, proxy vs direct",
        json!({"direct_median_us": direct_median.as_micros() as u64, "direct_p90_us": direct_p90.as_micros() as u64,
               "proxy_median_us": proxy_median.as_micros() as u64, "proxy_p90_us": proxy_p90.as_micros() as u64,
               "ratio": proxy_median.as_secs_f64() / direct_median.as_secs_f64()}),
    );
}

/// The official SDK clients close a stdio server with: stdin closed, 2 s,
/// SIGTERM, 2 s, SIGKILL (TypeScript `StdioClientTransport.close`). With a
/// server that does not exit when its stdin closes (`--linger`), the proxy
/// must have ended the server by the time the SIGKILL comes: the server is
/// in its own process group, so a SIGKILLed proxy would leave it orphaned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_close_sequence_leaves_no_orphan() {
    use std::process::Stdio;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let server = vec![
        fixture_binary().display().to_string(),
        "--linger".to_string(),
    ];
    let argv = proxy_argv(&drainpipe, &["--metrics", "none"], &server);
    let mut proxy = command(&argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the proxy");
    let pid = proxy.id().expect("pid");
    let mut stdin = proxy.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(proxy.stdout.take().expect("stdout")).lines();
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    stdin
        .write_all(format!("{ping}\n").as_bytes())
        .await
        .unwrap();
    let pong = within(10, "ping through the proxy", stdout.next_line()).await;
    assert!(pong.unwrap().unwrap().contains(r#""id":1"#));
    let servers = descendants(pid);
    assert!(!servers.is_empty(), "the proxy runs the server");

    drop(stdin);
    let mut ended = tokio::time::timeout(Duration::from_secs(2), proxy.wait())
        .await
        .ok();
    if ended.is_none() {
        drainpipe_release::procs::signal(pid, nix::sys::signal::Signal::SIGTERM);
        ended = tokio::time::timeout(Duration::from_secs(2), proxy.wait())
            .await
            .ok();
    }
    let killed = ended.is_none();
    if killed {
        proxy.kill().await.expect("SIGKILL the proxy");
    }
    let left = drainpipe_release::procs::still_running(&servers, Duration::from_secs(2)).await;
    for &pid in &left {
        drainpipe_release::procs::kill_pid(pid);
    }
    assert!(
        left.is_empty(),
        "the proxy was {} and its server outlived it (orphans, now killed): {left:?}",
        if killed {
            "SIGKILLed 4 s after stdin closed"
        } else {
            "ended in time"
        }
    );
}

/// Many small messages, as a server that logs freely writes them: every one
/// passes, whole and in order, though the proxy forwards them one batch per
/// read and the session hands them to its caller in batches too, taken one
/// by one (`next_incoming`) and by the batch (`next_incoming_batch`); the
/// session's dispatcher is kept small, so its reader waits for room often.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_small_messages_passes_whole_and_in_order() {
    const COUNT: u64 = 200_000;
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let script = format!(
        r#"seq 1 {COUNT} | sed 's/.*/{{"jsonrpc":"2.0","method":"notifications\/message","params":{{"level":"info","data":&}}}}/'"#
    );
    let server = vec!["sh".to_string(), "-c".to_string(), script];
    let argv = proxy_argv(&drainpipe, &["--metrics", "none"], &server);
    for batched in [false, true] {
        let config = SessionConfig {
            dispatcher_capacity: 64,
            dispatcher_wait: std::time::Duration::from_secs(10),
            ..SessionConfig::default()
        };
        let session = Session::spawn(command(&argv), config).expect("spawn the proxy");
        within(120, "the flood through the proxy", async {
            let mut taken = Vec::new();
            let mut next = 1;
            while next <= COUNT {
                if batched {
                    assert!(
                        session.next_incoming_batch(&mut taken).await,
                        "the stream ended after {} messages",
                        next - 1
                    );
                } else {
                    taken.extend(session.next_incoming().await);
                    assert!(
                        !taken.is_empty(),
                        "the stream ended after {} messages",
                        next - 1
                    );
                }
                for message in taken.drain(..) {
                    let value = message.json().expect("JSON");
                    assert_eq!(
                        value["params"]["data"],
                        json!(next),
                        "message {next} in order"
                    );
                    assert_eq!(message.method, "notifications/message");
                    next += 1;
                }
            }
            assert!(session.next_incoming().await.is_none(), "nothing more");
        })
        .await;
        let metrics = session.metrics();
        assert_eq!(metrics.frames, COUNT);
        assert_eq!(
            metrics.dispatcher_overflows, 0,
            "the reader waited, never refused"
        );
        session.shutdown().await;
    }
}
