//! Guarantee: an oversize message is attributed to its request wherever the
//! peer put the `id`. Run against the official TypeScript SDK peers, which
//! write it last (`{"result":…,"jsonrpc":"2.0","id":N}`, requests
//! `{"method":…,"params":…,"jsonrpc":"2.0","id":N}`), through the session,
//! `drainpipe check`, and the proxy in both directions: the request fails
//! with a clear error at once, never by its timeout, and the next one works.
//!
//! Needs `bash tests/peers/setup.sh`; see `drainpipe_release::peers`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use drainpipe_host::session::{CallError, SessionConfig};
use drainpipe_release::peers::{self, NodePeer, command, proxy_argv, run_client};
use drainpipe_release::*;
use nix::sys::signal::Signal;
use serde_json::json;

/// A private directory of generated text files, removed when dropped.
struct Files {
    dir: PathBuf,
}

impl Files {
    fn new(test: &str) -> Files {
        let dir =
            std::env::temp_dir().join(format!("drainpipe-id-last-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the served directory");
        // The server resolves symbolic links; /tmp may be one.
        let dir = dir.canonicalize().expect("canonical path");
        Files { dir }
    }

    /// A text file of exactly `bytes` bytes: multibyte characters, quotes
    /// and newlines, which JSON escapes on the wire.
    fn text(&self, name: &str, bytes: usize) -> PathBuf {
        let unit = "line «ünïcødé» with \"quotes\" and a \\ backslash\n";
        let mut text = unit.repeat(bytes / unit.len() + 1);
        while text.len() > bytes {
            text.pop();
        }
        let path = self.dir.join(name);
        std::fs::write(&path, text).expect("write the file");
        path
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn read(path: &Path) -> serde_json::Value {
    json!({"path": path.display().to_string()})
}

fn node() -> Option<NodePeer> {
    peers::gate("the Node.js peer", peers::node())
}

/// The session with the default 4 MiB limit, in front of the official
/// filesystem server reading a 27 MB file (a 63 MB answer, `id` last):
/// alone, the request fails while the answer is still streaming; with a
/// second read in flight, each fails when its own id has passed, with its
/// line's whole size; the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_fails_an_id_last_answer_at_once() {
    let Some(node) = node() else { return };
    let files = Files::new("session");
    let big = files.text("big.txt", 27 << 20);
    let session = start_session(
        command(&node.filesystem_server(&files.dir)),
        SessionConfig::default(),
    )
    .await;
    let limit = 4u64 << 20;

    let started = Instant::now();
    let alone = within(
        20,
        "an oversize read, alone",
        tool(&session, "read_text_file", read(&big), opts(60)),
    )
    .await;
    let alone_ms = started.elapsed().as_millis() as u64;
    match alone {
        Err(CallError::TooLarge { limit_bytes, .. }) => assert_eq!(limit_bytes, limit),
        other => panic!("expected TooLarge, got {other:?}"),
    }

    // Both requests reach the server before it answers either (it is
    // stopped while they are written), so the first answer starts with two
    // pending and can only be attributed by its id, at its end. The other
    // then starts with one pending: it fails at the limit.
    let pid = session.pid();
    procs::signal(pid, Signal::SIGSTOP);
    wait_until(5, "the server is stopped", || {
        procs::stat(pid).is_some_and(|s| s.state == 'T')
    })
    .await;
    let started = Instant::now();
    let first = start_tool(&session, "read_text_file", read(&big), opts(60)).await;
    let second = start_tool(&session, "read_text_file", read(&big), opts(60)).await;
    // The writer puts both lines in the pipe in microseconds; the server
    // then needs far longer (reading 27 MB, serialising 63 MB) before its
    // first answer starts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    procs::signal(pid, Signal::SIGCONT);
    // The server answers the two in whichever order its reads finish.
    let mut by_id = 0;
    for (n, call) in [first, second].into_iter().enumerate() {
        match within(30, "two oversize reads", call.outcome()).await {
            Err(CallError::TooLarge {
                received_bytes,
                limit_bytes,
            }) => {
                assert_eq!(limit_bytes, limit);
                if received_bytes > 2 * (27 << 20) {
                    by_id += 1;
                }
            }
            other => panic!("read {n}: expected TooLarge, got {other:?}"),
        }
    }
    assert!(
        by_id >= 1,
        "the answer that came first had two requests pending: failed by its id, with the whole size"
    );
    let both_ms = started.elapsed().as_millis() as u64;
    // The server answers once it has finished writing the 63 MB line the
    // session discards (Node takes seconds to serialise it).
    let started = Instant::now();
    within(
        30,
        "list_allowed_directories after",
        tool(&session, "list_allowed_directories", json!({}), opts(25)),
    )
    .await
    .expect("the session goes on");
    let next_ms = started.elapsed().as_millis() as u64;
    assert_eq!(session.metrics().oversize_frames, 3);
    assert_eq!(session.metrics().late_responses_dropped, 0);
    shutdown_clean(&session).await;
    figure(
        "server-filesystem 27 MB read (id last), 4 MiB limit: time to the error",
        json!({"alone_ms": alone_ms, "two_in_flight_ms": both_ms, "next_call_ms": next_ms}),
    );
}

/// `drainpipe check` against the official filesystem server gives the large
/// row its verdict (the answer passed the transport limit) at once, not
/// "no response".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_gives_the_verdict_on_an_id_last_server() {
    let Some(node) = node() else { return };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let files = Files::new("check");
    let big = files.text("big.txt", 27 << 20);
    let mut check = std::process::Command::new(&drainpipe);
    check
        .args([
            "check",
            "--large-tool",
            "read_text_file",
            "--large-args",
            &read(&big).to_string(),
            "--",
        ])
        .args(node.filesystem_server(&files.dir))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let out = within(60, "drainpipe check", async move {
        tokio::task::spawn_blocking(move || check.output().expect("run check"))
            .await
            .expect("join")
    })
    .await;
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("result over the limit"))
        .unwrap_or_else(|| panic!("no large row in:\n{stdout}"));
    assert!(row.contains("FAIL"), "{row}");
    assert!(row.contains("passed the 4 MiB transport limit"), "{row}");
    assert!(!row.contains("no response"), "{row}");
    assert_eq!(out.status.code(), Some(1), "a FAIL row exits 1:\n{stdout}");
    assert!(
        took < Duration::from_secs(30),
        "check took {took:?}:\n{stdout}"
    );
    figure(
        "drainpipe check on server-filesystem, 27 MB read",
        json!({"check_ms": took.as_millis() as u64, "row": row.trim()}),
    );
}

/// The official TypeScript SDK client → `drainpipe proxy` → the official
/// filesystem server reading a 5 MiB file (an 11 MB answer, `id` last): an
/// error for that request, and the next call works; the same with the
/// framers in the sandbox (`--sandbox`, the WebAssembly component).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_answers_an_id_last_response_with_an_error() {
    let Some(node) = node() else { return };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let files = Files::new("proxy-down");
    let file = files.text("five.txt", 5 << 20);
    let path = file.display().to_string();
    for (framers, proxy_args) in [("native", &[][..]), ("sandboxed", &["--sandbox"][..])] {
        let run = too_large_through_the_proxy(
            &node,
            &drainpipe,
            proxy_args,
            &node.filesystem_server(&files.dir),
            &["read-too-large", "--file", &path],
            &format!("SDK client → proxy ({framers} framers) → server-filesystem"),
        )
        .await;
        figure(
            &format!(
                "typescript-sdk client → proxy ({framers} framers) → server-filesystem 5 MiB read: time to the error"
            ),
            json!({"error_ms": run.summary["large"]["ms"], "next_call_ms": run.summary["after_large_ms"]}),
        );
    }
}

/// The official TypeScript SDK client sends a 5 MiB request (`id` last)
/// through `drainpipe proxy` to `server-everything`: the proxy answers it
/// with an error for its id instead of leaving the client to its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_answers_an_id_last_request_over_the_limit() {
    let Some(node) = node() else { return };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let bytes = (5 << 20).to_string();
    let run = too_large_through_the_proxy(
        &node,
        &drainpipe,
        &[],
        &node.everything_server(),
        &["send-too-large", "--bytes", &bytes],
        "SDK client → proxy with a 5 MiB request",
    )
    .await;
    let ms = run.summary["large"]["ms"].as_f64().expect("ms");
    assert!(ms < 10_000.0, "the error took {ms} ms");
}

/// Runs `sdk-client.mjs MODE_ARGS -- drainpipe proxy -- SERVER` and checks
/// the client's call ended in the proxy's too-large error for its id.
async fn too_large_through_the_proxy(
    node: &NodePeer,
    drainpipe: &Path,
    proxy_args: &[&str],
    server: &[String],
    mode_args: &[&str],
    what: &str,
) -> peers::ClientRun {
    let proxy_args: Vec<&str> = ["--metrics", "none"]
        .iter()
        .chain(proxy_args)
        .copied()
        .collect();
    let proxied = proxy_argv(drainpipe, &proxy_args, server);
    let args: Vec<&str> = mode_args
        .iter()
        .copied()
        .chain(["--"])
        .chain(proxied.iter().map(String::as_str))
        .collect();
    let run = run_client(node.script("sdk-client.mjs", &args), 60, what).await;
    assert_eq!(
        run.summary["large"]["code"],
        json!(drainpipe_host::proxy::TOO_LARGE),
        "{}",
        run.summary
    );
    run
}
