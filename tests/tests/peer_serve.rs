//! `drainpipe serve` to the official SDK clients: the TypeScript SDK 1.x
//! (`StreamableHTTPClientTransport`) and the Python SDK
//! (`streamable_http_client`) over HTTP against `serve` in front of
//! `server-everything` and `server-filesystem` (stdio), every call answering
//! as it does when the same client runs the same checks over stdio straight
//! to the same server: tools, resources, prompts, sampling, elicitation and
//! roots from server to client, progress, logging, cancellation. The
//! clients DELETE their session at the end; its child must go with it, and
//! a SIGTERM to serve must leave nothing behind.
//!
//! The clients are `tests/peers/node/serve-client.mjs` and
//! `tests/peers/python/serve_client.py`: each prints one JSON line with
//! every check it made (`checks`), what must not depend on the transport
//! (`same`) and what shows the order a peer wrote an object's members in
//! (`order_sensitive`). Needs `bash tests/peers/setup.sh`; see
//! `drainpipe_release::peers`.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use drainpipe_release::http1::Request;
use drainpipe_release::peers::{self, ClientRun, run_client};
use drainpipe_release::served::Serve;
use serde_json::{Value, json};

/// How long one client run may take, HTTP or stdio: a run takes a few
/// seconds (the long-running call, the wait for a log line), but two
/// cores shared with a build and a cold Node start are slow.
const CLIENT_BOUND: u64 = 150;

/// `serve --grace 1s --metrics json -- <server…>`: a server-everything
/// with a call still running ignores the end of its stdin, so SIGTERM
/// after 1 s, not 5; the metrics say when a session ended.
fn serve(server: &Server) -> Serve {
    Serve::spawn(
        &["--grace", "1s", "--metrics", "json"],
        &server.argv,
        server.marker,
        &[],
    )
}

/// The server behind serve, and what its command line holds.
struct Server {
    argv: Vec<String>,
    marker: &'static str,
}

fn everything(node: &peers::NodePeer) -> Server {
    Server {
        argv: node.everything_server(),
        marker: "server-everything/dist/index.js",
    }
}

fn filesystem(node: &peers::NodePeer, dir: &Path) -> Server {
    Server {
        argv: node.filesystem_server(dir),
        marker: "server-filesystem/dist/index.js",
    }
}

/// A directory of its own for one test, empty, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("drainpipe-serve-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the directory");
        // The server names the directory by its real path.
        TempDir(dir.canonicalize().expect("canonical"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs one SDK client's checks (`mode`, `extra` options) over HTTP through
/// serve in front of `server`, then over stdio straight to `server`; both
/// runs must pass every check and answer alike. `client` makes the client's
/// command from its arguments.
async fn over_http_and_stdio(
    what: &str,
    client: impl Fn(&[&str]) -> Command,
    mode: &str,
    extra: &[&str],
    server: &Server,
) {
    let serve = serve(server);
    let url = serve.url();
    let mut args = vec![mode];
    args.extend_from_slice(extra);
    let mut http_args = args.clone();
    http_args.extend_from_slice(&["--url", &url]);
    let http = run_client(
        client(&http_args),
        CLIENT_BOUND,
        &format!("{what} over HTTP through serve"),
    )
    .await;
    // The client DELETEd its session: the session ends, and its child (its
    // stdin closed, --grace 1s, SIGTERM) with it.
    serve.wait_stderr("ended:", 20);
    serve.wait_children(0, 20);
    http.assert_nothing_left();
    assert_eq!(http.summary["transport"], "http");

    let mut stdio_args = args.clone();
    stdio_args.push("--");
    stdio_args.extend(server.argv.iter().map(String::as_str));
    let stdio = run_client(
        client(&stdio_args),
        CLIENT_BOUND,
        &format!("{what} over stdio"),
    )
    .await;
    stdio.assert_nothing_left();
    assert_eq!(stdio.summary["transport"], "stdio");

    assert_agree(what, &http, &stdio);

    // One client, one session: no retry, no second initialize.
    let stderr = serve.stop(30);
    assert!(
        stderr.contains("serve: stopped after 1 sessions (0 refused at the limit, 0 requests refused by the guard"),
        "{what}: one session, nothing refused: {stderr}"
    );
    eprintln!(
        "{what}: HTTP run {} checks, stdio run {} checks, all passed",
        http.summary["checks"].as_object().map_or(0, |c| c.len()),
        stdio.summary["checks"].as_object().map_or(0, |c| c.len()),
    );
}

/// Both runs made the same checks (but those of HTTP alone, named `http: …`),
/// and every answer that must not depend on the transport is the same.
fn assert_agree(what: &str, http: &ClientRun, stdio: &ClientRun) {
    let checks = |run: &ClientRun| -> Vec<String> {
        let mut names: Vec<String> = run.summary["checks"]
            .as_object()
            .expect("checks")
            .keys()
            .filter(|name| !name.starts_with("http: "))
            .cloned()
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        checks(http),
        checks(stdio),
        "{what}: the same checks over HTTP and stdio"
    );
    let http_same = http.summary["same"].as_object().expect("same");
    let stdio_same = stdio.summary["same"].as_object().expect("same");
    let mut keys: Vec<&String> = http_same.keys().chain(stdio_same.keys()).collect();
    keys.sort();
    keys.dedup();
    assert!(keys.len() > 5, "{what}: answers to compare: {keys:?}");
    for key in keys {
        assert_eq!(
            http_same.get(key),
            stdio_same.get(key),
            "{what}: `{key}` answers differently over HTTP through serve than over stdio"
        );
    }
    let (http_order, stdio_order) = (
        &http.summary["order_sensitive"],
        &stdio.summary["order_sensitive"],
    );
    // serve passes the client's bytes on as written (key order, numbers).
    assert_eq!(
        http_order, stdio_order,
        "{what}: the server got the client's messages as the client wrote them"
    );
}

fn node_client(node: &peers::NodePeer) -> impl Fn(&[&str]) -> Command + '_ {
    move |args| node.script("serve-client.mjs", args)
}

fn python_client(python: &peers::PythonPeer) -> impl Fn(&[&str]) -> Command + '_ {
    move |args| python.script("serve_client.py", args)
}

/// The TypeScript SDK client against serve in front of server-everything:
/// tools, echo, progress, sampling, elicitation, roots, logging,
/// resources, prompts, completion, cancellation; as over stdio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_through_serve_to_server_everything() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    over_http_and_stdio(
        "TypeScript SDK, server-everything",
        node_client(&node),
        "everything",
        &[],
        &everything(&node),
    )
    .await;
}

/// The TypeScript SDK client against serve in front of server-filesystem:
/// files written, read, listed and searched; the roots the server asks for
/// after initialize and again after the client's roots/list_changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_through_serve_to_server_filesystem() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let dir = TempDir::new("ts-fs");
    let path = dir.0.display().to_string();
    over_http_and_stdio(
        "TypeScript SDK, server-filesystem",
        node_client(&node),
        "filesystem",
        &["--dir", &path],
        &filesystem(&node, &dir.0),
    )
    .await;
}

/// The Python SDK client against serve in front of server-everything:
/// tools, echo, progress, sampling, elicitation, roots, logging,
/// resources, prompts, cancellation; as over stdio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_through_serve_to_server_everything() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    over_http_and_stdio(
        "Python SDK, server-everything",
        python_client(&python),
        "everything",
        &[],
        &everything(&node),
    )
    .await;
}

/// The Python SDK client against serve in front of server-filesystem.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_through_serve_to_server_filesystem() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let dir = TempDir::new("py-fs");
    let path = dir.0.display().to_string();
    over_http_and_stdio(
        "Python SDK, server-filesystem",
        python_client(&python),
        "filesystem",
        &["--dir", &path],
        &filesystem(&node, &dir.0),
    )
    .await;
}

/// A request the client cancels with `notifications/cancelled` is no
/// longer awaited: the server must not answer it (server-everything's does
/// not), so were it awaited its POST stream would stay open for good, the
/// session would never be idle, and a SIGTERM would wait the whole
/// `--drain` and then send the client an error for what it cancelled.
#[test]
fn a_request_the_client_cancels_is_no_longer_awaited() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let server = everything(&node);
    let serve = serve(&server);
    let post = |session: Option<&str>, body: &Value| {
        let mut request = Request::post("/mcp", body);
        if let Some(session) = session {
            request = request.with("mcp-session-id", session);
        }
        request.send(serve.addr)
    };
    let init = post(
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "serve-test", "version": "0"}}}),
    );
    assert_eq!(init.status, 200);
    let session = init
        .header("mcp-session-id")
        .expect("a session")
        .to_string();
    let notified = post(
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(notified.status, 202);

    let mut open = Request::post(
        "/mcp",
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "trigger-long-running-operation",
            "arguments": {"duration": 20, "steps": 20}}}),
    )
    .with("mcp-session-id", session.clone())
    .open(serve.addr);
    assert_eq!(open.status, 200);
    open.next_event().expect("the priming event");
    let cancelled = post(
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 2, "reason": "the user cancelled"}}),
    );
    assert_eq!(cancelled.status, 202);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        while let Some(event) = open.next_event() {
            rest.push(event.data);
        }
        let _ = tx.send(rest);
    });
    let rest = rx.recv_timeout(Duration::from_secs(5)).unwrap_or_else(|_| {
        panic!(
            "the cancelled request's stream is still open 5 s after the cancellation; stderr:\n{}",
            serve.stderr()
        )
    });
    assert!(
        rest.iter()
            .all(|data| !data.contains("\"id\":2") || !data.contains("error")),
        "no error is sent for the request the client cancelled: {rest:?}"
    );
    // Nothing is waited for: a stop is prompt, whatever --drain says.
    let started = Instant::now();
    serve.stop(8);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the stop waited for the cancelled request"
    );
}

/// `serve --shared` in front of one server-everything: the TypeScript SDK
/// client, then the Python SDK client, each pass every check of theirs
/// (tools, progress, sampling, elicitation, roots, logging, resources,
/// prompts, cancellation) on the same child, which outlives their
/// sessions: the second client's `initialize` is answered from the
/// first's, and the server asks the newcomer for its roots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_clients_one_after_another_on_serve_shared() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let server = everything(&node);
    let serve = Serve::spawn(
        &["--shared", "--grace", "1s"],
        &server.argv,
        server.marker,
        &[],
    );
    let url = serve.url();
    let ts = run_client(
        node.script("serve-client.mjs", &["everything", "--url", &url]),
        CLIENT_BOUND,
        "TypeScript SDK through serve --shared",
    )
    .await;
    ts.assert_nothing_left();
    serve.wait_children(1, 20);
    let child = serve.children();
    let py = run_client(
        python.script("serve_client.py", &["everything", "--url", &url]),
        CLIENT_BOUND,
        "Python SDK through serve --shared, after the TypeScript SDK",
    )
    .await;
    py.assert_nothing_left();
    assert_eq!(serve.children(), child, "one child, kept across sessions");
    let stderr = serve.stop(30);
    assert!(
        stderr.contains("serve: stopped after 2 sessions"),
        "two sessions on one child: {stderr}"
    );
}
