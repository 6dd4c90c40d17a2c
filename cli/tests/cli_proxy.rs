//! `drainpipe proxy` as a process between a real client and the fixture
//! server: the client is a guarded session in this test process (or raw
//! pipes, where the test needs to misbehave as a host), the server the
//! fixture binary, every hop an OS pipe.

mod cli_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use cli_support::{FIXTURE, assert_gone, drainpipe, json_lines, run, run_until};
use drainpipe_framer::Config;
use drainpipe_host::session::{CallError, Session, SessionConfig};
use drainpipe_test_support::fixture::{assert_usable, first_text};
use drainpipe_test_support::{opts, start_tool, tool, wait_until, within};
use serde_json::{Value, json};

/// A session whose server is `drainpipe proxy PROXY_ARGS -- fixture`.
async fn through_proxy(proxy_args: &[&str]) -> Session {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_drainpipe"));
    command.arg("proxy").args(proxy_args).arg("--").arg(FIXTURE);
    let config = SessionConfig {
        // The session's own limit is far above the proxy's: what the test
        // sees is the proxy's doing.
        framer: Config::default().with_max_frame_bytes(64 << 20),
        ..SessionConfig::default()
    };
    let session = Session::spawn(command, config).expect("spawn the proxy");
    within(
        10,
        "initialize",
        session.call("initialize", json!({}), opts(10)),
    )
    .await
    .expect("initialize through the proxy");
    session
}

/// The fixture's pid, from its `health` tool.
async fn server_pid(session: &Session) -> u32 {
    let health = within(10, "health", tool(session, "health", json!({}), opts(5)))
        .await
        .expect("health");
    health.result["structuredContent"]["pid"]
        .as_u64()
        .expect("pid") as u32
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_response_becomes_an_error_for_that_id() {
    let session = through_proxy(&["--max-frame", "1MiB"]).await;
    let outcome = within(
        30,
        "large through the proxy",
        tool(&session, "large", json!({}), opts(20)),
    )
    .await;
    match outcome {
        Err(CallError::JsonRpc { code, message, .. }) => {
            assert_eq!(code, drainpipe_host::proxy::TOO_LARGE);
            assert!(
                message.contains("over the transport limit of 1048576 bytes"),
                "{message}"
            );
        }
        other => panic!("expected the proxy's error, got {other:?}"),
    }
    // The id written after the limit is found at the end of the line.
    let outcome = within(
        30,
        "id-last through the proxy",
        tool(
            &session,
            "sized",
            json!({"bytes": 2_000_000, "id_last": true}),
            opts(20),
        ),
    )
    .await;
    assert!(
        matches!(
            outcome,
            Err(CallError::JsonRpc {
                code: drainpipe_host::proxy::TOO_LARGE,
                ..
            })
        ),
        "{outcome:?}"
    );
    // Just below the limit passes whole.
    let below = within(
        30,
        "just below the limit",
        tool(&session, "sized", json!({"bytes": 1 << 20}), opts(20)),
    )
    .await
    .expect("a response of exactly the limit passes");
    assert_eq!(below.wire_bytes, 1 << 20);
    assert_usable(&session).await;
    let metrics = session.metrics();
    assert_eq!(
        metrics.oversize_frames, 0,
        "the session never saw the oversize lines"
    );
    assert_eq!(metrics.malformed_frames, 0);
    let report = within(20, "shutdown", session.shutdown()).await;
    assert_eq!(
        report.status.and_then(|s| s.code()),
        Some(0),
        "the proxy passed exit 0 through"
    );
    let stderr = report.stderr.kept_text();
    assert!(
        stderr.contains("answered the host with an error for id"),
        "{stderr}"
    );
    assert!(stderr.contains("oversize"), "metrics at exit: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stray_lines_and_malformed_frames_never_reach_the_host() {
    let session = through_proxy(&[]).await;
    let answer = within(
        10,
        "stray_log",
        tool(&session, "stray_log", json!({}), opts(5)),
    )
    .await
    .expect("stray_log answers");
    assert_eq!(first_text(&answer), "wrote a stray log line to stdout");
    let malformed = within(
        10,
        "malformed",
        tool(&session, "malformed", json!({}), opts(5)),
    )
    .await;
    assert!(
        matches!(malformed, Err(CallError::JsonRpc { code: -32700, .. })),
        "{malformed:?}"
    );
    let tricky = within(10, "tricky", tool(&session, "tricky", json!({}), opts(5)))
        .await
        .expect("tricky passes byte for byte");
    assert_eq!(
        tricky.result["structuredContent"]["texts"][2],
        "multibyte: é ß ü — 日本語 한국어 العربية 😀🚀 𝄞"
    );
    let metrics = session.metrics();
    assert_eq!(metrics.not_protocol_lines, 0, "the stray line was diverted");
    assert_eq!(
        metrics.malformed_frames, 0,
        "the malformed line was not forwarded"
    );
    wait_until(5, "the diverted line shows on the proxy's stderr", || {
        session
            .stderr()
            .kept_text()
            .contains("not protocol, from the server (offset")
    })
    .await;
    assert!(
        session
            .stderr()
            .kept_text()
            .contains("fixture: this log line went to stdout by mistake")
    );
    let report = within(20, "shutdown", session.shutdown()).await;
    let stderr = report.stderr.kept_text();
    assert!(stderr.contains("1 malformed, 1 not protocol"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_the_server_and_a_second_request_is_quick() {
    let session = through_proxy(&[]).await;
    let pending = start_tool(
        &session,
        "slow",
        json!({"steps": 100, "step_ms": 20}),
        opts(20),
    )
    .await;
    let id = pending.id();
    let progress = within(10, "progress through the proxy", session.next_incoming())
        .await
        .expect("a notification");
    assert_eq!(progress.method, "notifications/progress");
    let cancelled_at = Instant::now();
    assert!(session.cancel(id, "enough"));
    let outcome = within(5, "cancelled", pending.outcome()).await;
    assert!(
        matches!(outcome, Err(CallError::Cancelled { .. })),
        "{outcome:?}"
    );
    let second = assert_usable(&session).await;
    assert!(
        second < Duration::from_secs(1),
        "second request took {second:?}"
    );
    let mark = format!("slow id={id}: cancelled at step");
    wait_until(
        5,
        "the producer stopped (fixture stderr, through the proxy)",
        || session.stderr().kept_text().contains(&mark),
    )
    .await;
    eprintln!(
        "proxy: cancel to second answer {:?}",
        cancelled_at.elapsed()
    );

    // Cancelled while a paced 8 MiB response is on its way: the rest is
    // drained, and the next request is not stuck behind it. The proxy hands
    // on whole messages only, so the session sees no byte of it before the
    // end: wait for the server's word that it started writing (≥ 2 s of
    // pacing remain), not for bytes.
    drop(session);
    let session = through_proxy(&["--max-frame", "16MiB"]).await;
    let pending = start_tool(&session, "large", json!({"piece_delay_ms": 4}), opts(30)).await;
    let mark = format!("large id={}: writing", pending.id());
    wait_until(10, "the server started writing the response", || {
        session.stderr().kept_text().contains(&mark)
    })
    .await;
    let cancelled_at = Instant::now();
    assert!(session.cancel(pending.id(), "too slow"));
    let _ = within(5, "cancelled", pending.outcome()).await;
    assert_usable(&session).await;
    let second = cancelled_at.elapsed();
    assert!(
        second < Duration::from_secs(2),
        "second answer {second:?} after the cancel"
    );
    let report = within(20, "shutdown", session.shutdown()).await;
    assert!(
        report
            .stderr
            .kept_text()
            .contains("cancellations forwarded 1"),
        "{}",
        report.stderr.kept_text()
    );
}

/// `--clip` condenses a result over the content budget, under and over the
/// transport limit: a valid result within the budget that says what was
/// cut, not an error; small results pass untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clip_condenses_results_over_the_content_budget() {
    let session = through_proxy(&["--clip", "16KiB", "--max-frame", "1MiB"]).await;
    let answer = within(
        10,
        "many_blocks",
        tool(&session, "many_blocks", json!({"count": 5000}), opts(10)),
    )
    .await
    .expect("condensed, not failed");
    assert!(answer.wire_bytes <= 16 << 10, "{} bytes", answer.wire_bytes);
    let marker = &answer.result["_meta"]["io.drainpipe/truncated"];
    assert_eq!(marker["cut"], json!(["/content"]), "{marker}");
    let blocks = answer.result["content"].as_array().unwrap();
    assert!(blocks.len() > 100, "a prefix of the blocks is kept");
    // The notice, then the link to the blocks left out.
    let [.., notice, rest] = &blocks[..] else {
        panic!("no notice and link: {}", answer.result)
    };
    assert!(
        notice["text"].as_str().unwrap().starts_with("[drainpipe]"),
        "{notice}"
    );
    assert_eq!(rest["type"], "resource_link", "{rest}");
    assert_eq!(
        rest["name"],
        format!("content from item {}", blocks.len() - 2),
        "{rest}"
    );
    for (id_last, bytes) in [(false, 600_000), (true, 600_000), (true, 5_000_000)] {
        let answer = within(
            20,
            "sized over the budget",
            tool(
                &session,
                "sized",
                json!({"bytes": bytes, "id_last": id_last}),
                opts(15),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("{bytes} bytes, id_last={id_last}: {e}"));
        assert!(answer.wire_bytes <= 16 << 10, "{} bytes", answer.wire_bytes);
        // Both ends kept (the default), the mark between.
        let text = answer.result["content"][0]["text"].as_str().unwrap();
        let (head, rest) = text
            .split_once("\n[… drainpipe left out ")
            .unwrap_or_else(|| panic!("no mark: {text}"));
        let (mark, tail) = rest.split_once(" …]\n").expect("the mark ends");
        assert!(
            mark.ends_with(&format!(" bytes here, from byte {}", head.len())),
            "{mark}"
        );
        for end in [head, tail] {
            assert!(end.len() > 2_000 && end.bytes().all(|b| b == b'x'), "{end}");
        }
        assert_eq!(
            answer.result["_meta"]["io.drainpipe/truncated"]["originalBytes"],
            json!(bytes)
        );
    }
    let small = within(10, "echo", tool(&session, "echo", json!({"a": 1}), opts(5)))
        .await
        .expect("echo");
    assert_eq!(
        small.result["structuredContent"],
        json!({"a": 1}),
        "small results untouched"
    );
    let report = within(20, "shutdown", session.shutdown()).await;
    assert!(
        report.stderr.kept_text().contains("results condensed 4"),
        "{}",
        report.stderr.kept_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stdin_ends_server_and_proxy_with_nothing_left() {
    let session = through_proxy(&[]).await;
    let server = server_pid(&session).await;
    let report = within(20, "shutdown", session.shutdown()).await;
    assert_eq!(report.status.and_then(|s| s.code()), Some(0));
    assert_eq!(
        report.ending,
        drainpipe_host::session::Ending::Exited,
        "the proxy exited when its stdin closed"
    );
    assert_gone(server, 5, "the fixture behind the proxy");
}

#[test]
fn exit_status_passes_through() {
    let done = run(
        &mut drainpipe(&["proxy", "--", "sh", "-c", "exit 7"]),
        b"",
        20,
    );
    assert_eq!(done.code(), 7, "{}", done.stderr);
    let done = run(
        &mut drainpipe(&["proxy", "--", "sh", "-c", "kill -9 $$"]),
        b"",
        20,
    );
    assert_eq!(done.code(), 128 + 9, "{}", done.stderr);
    assert!(done.stderr.contains("signal 9"), "{}", done.stderr);
    let done = run(
        &mut drainpipe(&["proxy", "--", "/nonexistent/server"]),
        b"",
        20,
    );
    assert_eq!(done.code(), 127, "{}", done.stderr);
    let done = run(&mut drainpipe(&["proxy"]), b"", 20);
    assert_eq!(done.code(), 2, "no server command is a usage error");
}

/// A host that misbehaves: an oversize request, a malformed one and a stray
/// line are answered or dropped by the proxy and never reach the server;
/// requests still waiting when the server exits get an error.
#[test]
fn host_messages_meet_the_same_limits() {
    let metrics_file =
        std::env::temp_dir().join(format!("drainpipe-proxy-{}.json", std::process::id()));
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"echo","arguments":{{"pad":"{}"}}}}}}"#,
        "p".repeat(2000)
    );
    let input = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
        &big,
        r#"{"jsonrpc":"2.0","id":10,"method":oops}"#,
        "hello from a confused host",
        r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"ok":true}}}"#,
        r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"slow","arguments":{"steps":1,"step_ms":5000}}}"#,
        "",
    ]
    .join("\n");
    let done = run_until(
        &mut drainpipe(&[
            "proxy",
            "--max-frame",
            "1KiB",
            "--metrics",
            "json",
            "--metrics-file",
            metrics_file.to_str().unwrap(),
            "--",
            FIXTURE,
        ]),
        input.as_bytes(),
        // The fixture drops calls still running when stdin closes: hang up
        // once the echo answered (the slow call is meant to be left waiting).
        r#""id":11"#,
        30,
    );
    assert_eq!(done.code(), 0, "{}", done.stderr);
    let by_id = |id: i64| -> Value {
        json_lines(&done.stdout)
            .into_iter()
            .find(|m| m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
            .unwrap_or_else(|| panic!("no answer for id {id} in:\n{}", done.stdout))
    };
    assert_eq!(by_id(9)["error"]["code"], drainpipe_host::proxy::TOO_LARGE);
    assert_eq!(
        by_id(9)["error"]["data"]["drainpipe"]["reason"],
        "too-large"
    );
    assert_eq!(by_id(10)["error"]["code"], -32700);
    assert_eq!(
        by_id(11)["result"]["structuredContent"],
        json!({"ok": true})
    );
    assert_eq!(
        by_id(12)["error"]["code"],
        drainpipe_host::proxy::SERVER_GONE,
        "waiting when the server ended"
    );
    let answers = json_lines(&done.stdout);
    assert_eq!(
        answers.iter().filter(|m| m["id"] == 9).count(),
        1,
        "the oversize request never reached the server"
    );
    assert!(
        answers.iter().all(|m| m.get("id") != Some(&Value::Null)),
        "the malformed request never reached the server (it would answer id null)"
    );
    let metrics: Value =
        serde_json::from_str(&std::fs::read_to_string(&metrics_file).expect("metrics file"))
            .expect("JSON metrics");
    let _ = std::fs::remove_file(&metrics_file);
    assert_eq!(metrics["host_to_server"]["oversize"], 1);
    assert_eq!(metrics["host_to_server"]["malformed"], 1);
    assert_eq!(metrics["host_to_server"]["not_protocol"], 1);
    assert_eq!(metrics["host_to_server"]["frames"], 3);
    assert_eq!(metrics["requests_failed_at_exit"], 1);
    assert_eq!(metrics["server_exit_code"], 0);
}

/// A host that stops reading the proxy's stdout does not stop the other
/// direction: its cancellation still reaches the server.
#[test]
fn a_host_that_stops_reading_can_still_cancel() {
    let mut proxy = drainpipe(&["proxy", "--", FIXTURE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the proxy");
    let mut stdin = proxy.stdin.take().unwrap();
    let stdout = proxy.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    let stderr = proxy.stderr.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    // About 150 bytes of progress every millisecond (at most), for 30
    // seconds; the server says when every 500th notification was written.
    let call = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{"steps":30000,"step_ms":1,"say_written_every":500}}}"#;
    writeln!(stdin, "{call}").unwrap();
    // The host is behind once the server has written 2,000 notifications
    // (~270 KB) that nobody read: more than the proxy's stdout pipe holds
    // (64 KiB), so its queue holds the rest. Counted, not timed: on a
    // loaded machine a millisecond's pause takes several, and three
    // seconds once gave 129 KB.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        match lines_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line.contains("slow id=5: step 2000: wrote") => break,
            Ok(line) => seen.push(line),
            Err(_) if Instant::now() > deadline => {
                panic!("the server did not write 2,000 notifications in 60 s; stderr: {seen:?}")
            }
            Err(_) => {}
        }
    }
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"stop"}}"#;
    writeln!(stdin, "{cancel}").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let stopped = loop {
        match lines_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line.contains("cancel for id 5: stopped") => break true,
            Ok(line) => seen.push(line),
            Err(_) if Instant::now() > deadline => break false,
            Err(_) => {}
        }
    };
    // Now read: everything queued drains and the proxy exits with the server.
    let reader = thread::spawn(move || {
        let mut rest = Vec::new();
        let mut stdout = stdout;
        let _ = stdout.read_to_end(&mut rest);
        rest.len()
    });
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = proxy.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = proxy.kill();
            panic!("the proxy did not exit after its stdin closed");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let drained = reader.join().unwrap();
    assert!(
        stopped,
        "the cancellation never reached the server; stderr: {seen:?}"
    );
    assert!(
        drained > 128 << 10,
        "the host was really behind: {drained} bytes queued"
    );
    assert_eq!(status.code(), Some(0));
}

/// A server that never reads its stdin blocks the host→server direction
/// only: its notifications keep reaching the host. SIGTERM to the proxy
/// reaches the server, and its status comes back as the proxy's.
#[test]
fn a_server_that_stops_reading_still_reaches_the_host() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    let mut proxy = drainpipe(&["proxy", "--", FIXTURE, "--never-read-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the proxy");
    let mut stdin = proxy.stdin.take().unwrap();
    let written = Arc::new(AtomicU64::new(0));
    let progress = written.clone();
    let request = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"pad\":\"{}\"}}}}}}\n",
        "p".repeat(64 << 10)
    );
    let total = 300 * request.len() as u64;
    thread::spawn(move || {
        for _ in 0..300 {
            if stdin.write_all(request.as_bytes()).is_err() {
                break;
            }
            progress.fetch_add(request.len() as u64, Ordering::Relaxed);
        }
    });
    let (beats_tx, beats_rx) = std::sync::mpsc::channel();
    let stdout = proxy.stdout.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("heartbeat") {
                let _ = beats_tx.send(Instant::now());
            }
        }
    });
    thread::sleep(Duration::from_secs(2));
    let stuck_at = written.load(Ordering::Relaxed);
    assert!(
        stuck_at < total,
        "the host's writes should be blocked by now"
    );
    let _ = beats_rx.try_iter().count();
    thread::sleep(Duration::from_secs(1));
    let beats = beats_rx.try_iter().count();
    assert_eq!(
        written.load(Ordering::Relaxed),
        stuck_at,
        "the host→server direction stayed blocked"
    );
    assert!(
        beats >= 10,
        "only {beats} heartbeats in 1 s while the other direction was blocked"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(proxy.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = proxy.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = proxy.kill();
            panic!("the proxy did not end after SIGTERM");
        }
        thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(
        status.code(),
        Some(143),
        "the server's SIGTERM exit came back"
    );
}

/// Hosts that swallow `--` (the MCP Inspector's `--cli` does) still start
/// the server; a mistyped option is a usage error, not a server command;
/// `{pid}` in the metrics file's path keeps two proxies' files apart, and
/// a host that only sent `server/discover` shows as a probe.
#[test]
fn the_server_command_with_or_without_dashes_and_one_metrics_file_per_proxy() {
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("drainpipe-dashes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pattern = dir.join("m-{pid}.json");
    let discover = br#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#;
    for dashes in [true, false] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_drainpipe"));
        command.args(["proxy", "--metrics", "json", "--metrics-file"]);
        command.arg(&pattern);
        if dashes {
            command.arg("--");
        }
        let mut child = command
            .args([
                "sh",
                "-c",
                r#"read line; echo '{"jsonrpc":"2.0","id":1,"result":{}}'"#,
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(discover).unwrap();
        stdin.write_all(b"\n").unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "dashes={dashes}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            "dashes={dashes}"
        );
    }
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 2, "one metrics file per proxy: {files:?}");
    for file in files {
        let metrics: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file.path()).unwrap()).unwrap();
        assert_eq!(metrics["probe"], true, "{metrics}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let bogus = std::process::Command::new(env!("CARGO_BIN_EXE_drainpipe"))
        .args(["proxy", "--bogus", "sh"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(bogus.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bogus.stderr).contains("unknown option --bogus"));
}
