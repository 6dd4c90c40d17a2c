//! The rmcp client over drainpipe's guarded session, against the fixture
//! server and a server built on the Python MCP SDK; and plain rmcp
//! (`TokioChildProcess`) on the same oversize result, side by side.
//!
//! `cargo test -p drainpipe-host --features rmcp --test rmcp_transport`
//!
//! The Python peer needs the `mcp` package: the test runs
//! `tests/peers/python/setup.sh` (a virtual environment under
//! `target/peers/py`) when no interpreter with it is found, and skips those
//! tests with a message only if that install fails. Set
//! `DRAINPIPE_REQUIRE_PEERS=1` to turn that skip into a failure (CI does).
#![cfg(feature = "rmcp")]

mod session_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use drainpipe_framer::Config;
use drainpipe_host::rmcp::GuardedChildProcess;
use drainpipe_host::session::{Session, SessionConfig};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, JsonObject};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use session_support::{fixture, wait_until, within};

const MIB: u64 = 1 << 20;

fn config(limit: u64) -> SessionConfig {
    SessionConfig {
        framer: Config::default().with_max_frame_bytes(limit as usize),
        default_timeout: Duration::from_secs(20),
        ..SessionConfig::default()
    }
}

fn args(value: Value) -> JsonObject {
    value.as_object().expect("an object").clone()
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &'static str,
    arguments: Value,
) -> Result<rmcp::model::CallToolResult, ServiceError> {
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args(arguments)))
        .await
}

/// The `data.drainpipe` tag of an error the transport synthesised.
fn drainpipe_tag(error: &ServiceError) -> Option<String> {
    match error {
        ServiceError::McpError(data) => data
            .data
            .as_ref()?
            .get("drainpipe")?
            .as_str()
            .map(str::to_string),
        _ => None,
    }
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_value(&result.content).expect("content serialises")[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Connects rmcp through the guarded transport; returns the session too.
async fn guarded(
    command: tokio::process::Command,
    limit: u64,
) -> (RunningService<RoleClient, ()>, Session) {
    let transport = GuardedChildProcess::spawn(command, config(limit)).expect("spawn the server");
    let session = transport.session().clone();
    let client = within(20, "rmcp initialize over drainpipe", ().serve(transport))
        .await
        .expect("initialize");
    (client, session)
}

/// Lists tools, calls one, gets a too-large error for an oversize result at
/// once, cancels a slow call (the server sees the cancellation), and keeps
/// working after each.
async fn exercise(
    client: &RunningService<RoleClient, ()>,
    session: &Session,
    big: (&'static str, Value),
    slow: Value,
    cancelled_on_stderr: &str,
) {
    let tools = within(10, "tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    for expected in ["echo", "health", "slow"] {
        assert!(
            names.contains(&expected.to_string()),
            "{expected} missing from {names:?}"
        );
    }

    let echoed = within(
        10,
        "echo",
        call(client, "echo", json!({"text": "héllo \"wörld\""})),
    )
    .await
    .expect("echo answers");
    assert!(text_of(&echoed).contains("héllo"), "{echoed:?}");

    let started = Instant::now();
    let error = within(15, "oversize result", call(client, big.0, big.1))
        .await
        .expect_err("an oversize result is an error, not a hang");
    assert_eq!(
        drainpipe_tag(&error).as_deref(),
        Some("too_large"),
        "{error:?}"
    );
    let oversize_after = started.elapsed();
    assert!(
        oversize_after < Duration::from_secs(10),
        "took {oversize_after:?}"
    );
    assert!(session.metrics().oversize_frames >= 1);

    let health = within(
        10,
        "health after oversize",
        call(client, "health", json!({})),
    )
    .await
    .expect("the session survives the oversize result");
    assert!(text_of(&health).contains("ok"), "{health:?}");

    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("slow").with_arguments(args(slow)),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("slow call sent");
    tokio::time::sleep(Duration::from_millis(400)).await;
    handle
        .cancel(Some("test cancels".into()))
        .await
        .expect("cancel sent");
    wait_until(10, "the server reports the cancellation on stderr", || {
        session.stderr().preview.contains(cancelled_on_stderr)
    })
    .await;
    assert!(session.metrics().cancellations_sent >= 1);

    within(10, "health after cancel", call(client, "health", json!({})))
        .await
        .expect("the session survives the cancellation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_over_drainpipe_with_the_fixture() {
    let (client, session) = guarded(fixture(&[]), MIB).await;
    exercise(
        &client,
        &session,
        ("sized", json!({"bytes": 4 * MIB})),
        json!({"steps": 200, "step_ms": 50}),
        "cancelled at step",
    )
    .await;

    // Requests from the server reach rmcp's handler, and its answers go
    // back under the server's own (string) ids.
    let asked = within(
        10,
        "server asks the client",
        call(&client, "ask_host", json!({"count": 2})),
    )
    .await
    .expect("ask_host answers");
    let answers = asked.structured_content.expect("structured")["answers"].clone();
    assert_eq!(answers.as_array().map(Vec::len), Some(2), "{answers}");
    assert!(!answers.to_string().contains("no answer"), "{answers}");

    within(20, "rmcp close", client.cancel())
        .await
        .expect("close");
    let report = within(20, "shutdown", session.shutdown()).await;
    assert!(report.status.is_some(), "server reaped: {report:?}");
    println!("metrics: {}", report.metrics.to_json());
}

/// Plain rmcp on an answer past its 16 MiB line cap: the line is dropped
/// with a log message and the call never returns (bounded here by a
/// timeout). The same call through drainpipe, with the same 16 MiB limit,
/// fails at once and the client goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_rmcp_hangs_where_drainpipe_answers_with_an_error() {
    const OVER_RMCP_CAP: u64 = 20 * MIB;
    let plain = TokioChildProcess::new(fixture(&[])).expect("spawn for plain rmcp");
    let client = within(20, "plain rmcp initialize", ().serve(plain))
        .await
        .expect("initialize");
    let hung = tokio::time::timeout(
        Duration::from_secs(5),
        call(&client, "sized", json!({"bytes": OVER_RMCP_CAP})),
    )
    .await;
    assert!(
        hung.is_err(),
        "plain rmcp answered instead of hanging: {hung:?}"
    );
    within(20, "plain rmcp close", client.cancel())
        .await
        .expect("close");

    let (client, session) = guarded(fixture(&[]), 16 * MIB).await;
    let started = Instant::now();
    let error = within(
        5,
        "drainpipe answers",
        call(&client, "sized", json!({"bytes": OVER_RMCP_CAP})),
    )
    .await
    .expect_err("too large");
    assert_eq!(
        drainpipe_tag(&error).as_deref(),
        Some("too_large"),
        "{error:?}"
    );
    println!("drainpipe failed the call after {:?}", started.elapsed());
    within(10, "health", call(&client, "health", json!({})))
        .await
        .expect("still usable");
    within(20, "close", client.cancel()).await.expect("close");
    within(20, "shutdown", session.shutdown()).await;
}

/// An interpreter that can import `mcp`, installing it if needed; `None`
/// (with the reason printed) if that is impossible here. Looked for once
/// per test binary: the tests that need it run in parallel, and two of them
/// installing into the same virtual environment at once broke it (a test
/// then saw its server close the connection during `initialize`). The
/// release suite's pinned venv (`bash tests/peers/setup.sh`, which
/// `scripts/test-all.sh` runs first) comes first.
fn python_with_mcp() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND.get_or_init(find_python_with_mcp).clone()
}

fn find_python_with_mcp() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = manifest.join("../target/peers/py");
    let pinned = manifest.join("../tests/peers/python/.venv/bin/python");
    let has_mcp = |python: &Path| {
        std::process::Command::new(python)
            .args(["-c", "import mcp"])
            .output()
            .is_ok_and(|out| out.status.success())
    };
    let candidates = std::env::var_os("DRAINPIPE_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([pinned, venv.join("bin/python"), PathBuf::from("python3")]);
    for python in candidates {
        if has_mcp(&python) {
            return Some(python);
        }
    }
    let setup = manifest.join("tests/peers/python/setup.sh");
    let install = std::process::Command::new("sh")
        .arg(&setup)
        .arg(&venv)
        .output();
    match install {
        Ok(out) if out.status.success() && has_mcp(&venv.join("bin/python")) => {
            Some(venv.join("bin/python"))
        }
        other => {
            let why = match other {
                Ok(out) => String::from_utf8_lossy(&out.stderr).into_owned(),
                Err(error) => error.to_string(),
            };
            let message = format!(
                "SKIPPED: the Python MCP SDK could not be installed ({}): {why}",
                setup.display()
            );
            if std::env::var_os("DRAINPIPE_REQUIRE_PEERS").is_some() {
                panic!("{message}");
            }
            eprintln!("{message}");
            None
        }
    }
}

fn python_server(python: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(python);
    command.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/peers/python/server.py"
    ));
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_over_drainpipe_with_a_python_sdk_server() {
    let Some(python) = python_with_mcp() else {
        return;
    };
    let (client, session) = guarded(python_server(&python), MIB).await;
    exercise(
        &client,
        &session,
        ("big", json!({"bytes": 4 * MIB})),
        json!({"steps": 200, "step_ms": 50}),
        "slow: cancelled at step",
    )
    .await;
    within(20, "rmcp close", client.cancel())
        .await
        .expect("close");
    let report = within(20, "shutdown", session.shutdown()).await;
    assert!(report.status.is_some(), "server reaped: {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_rmcp_hangs_on_a_python_sdk_server_where_drainpipe_answers() {
    let Some(python) = python_with_mcp() else {
        return;
    };
    let plain = TokioChildProcess::new(python_server(&python)).expect("spawn for plain rmcp");
    let client = within(30, "plain rmcp initialize", ().serve(plain))
        .await
        .expect("initialize");
    let hung = tokio::time::timeout(
        Duration::from_secs(8),
        call(&client, "big", json!({"bytes": 20 * MIB})),
    )
    .await;
    assert!(
        hung.is_err(),
        "plain rmcp answered instead of hanging: {hung:?}"
    );
    within(20, "plain rmcp close", client.cancel())
        .await
        .expect("close");

    let (client, session) = guarded(python_server(&python), 16 * MIB).await;
    let error = within(
        15,
        "drainpipe answers",
        call(&client, "big", json!({"bytes": 20 * MIB})),
    )
    .await
    .expect_err("too large");
    assert_eq!(
        drainpipe_tag(&error).as_deref(),
        Some("too_large"),
        "{error:?}"
    );
    within(10, "health", call(&client, "health", json!({})))
        .await
        .expect("still usable");
    within(20, "close", client.cancel()).await.expect("close");
    within(20, "shutdown", session.shutdown()).await;
}

/// The official `server-filesystem` (TypeScript SDK 1.x, which writes `id`
/// last), from the release suite's pinned install; `None` (or a failure under
/// `DRAINPIPE_REQUIRE_PEERS`) when it is not installed.
fn typescript_filesystem_server(root: &Path) -> Option<tokio::process::Command> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../tests/peers/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    );
    if !script.is_file() {
        let message = format!(
            "SKIPPED: {} is missing; install the peers with `bash tests/peers/setup.sh`",
            script.display()
        );
        if std::env::var_os("DRAINPIPE_REQUIRE_PEERS").is_some() {
            panic!("{message}");
        }
        eprintln!("{message}");
        return None;
    }
    let mut command = tokio::process::Command::new("node");
    command.arg(script).arg(root);
    Some(command)
}

/// rmcp over the guarded transport, in front of a TypeScript SDK server
/// whose 30 MiB read answers with a 63 MB line, `id` last: a `too_large`
/// error for that call at once (rmcp alone would leave it pending forever),
/// and the next call works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_over_drainpipe_with_a_typescript_sdk_server_writing_the_id_last() {
    /// Removes the served folder (and its 30 MiB file) however the test
    /// ends.
    struct Served(std::path::PathBuf);
    impl Drop for Served {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let root = std::env::temp_dir().join(format!("drainpipe-rmcp-ts-{}", std::process::id()));
    std::fs::create_dir_all(&root).expect("served directory");
    let _served = Served(root.clone());
    let root = root.canonicalize().expect("canonical");
    let file = root.join("thirty.txt");
    std::fs::write(&file, "«texto» \"q\" \\ ".repeat((30 << 20) / 17)).expect("write");
    let Some(server) = typescript_filesystem_server(&root) else {
        return;
    };
    let (client, session) = guarded(server, 16 * MIB).await;
    let started = Instant::now();
    let error = within(
        20,
        "the oversize read",
        call(&client, "read_text_file", json!({"path": file})),
    )
    .await
    .expect_err("too large");
    let took = started.elapsed();
    assert_eq!(
        drainpipe_tag(&error).as_deref(),
        Some("too_large"),
        "{error:?}"
    );
    let dirs = within(
        30,
        "the next call",
        call(&client, "list_allowed_directories", json!({})),
    )
    .await
    .expect("still usable");
    assert!(text_of(&dirs).contains("Allowed directories"), "{dirs:?}");
    assert_eq!(session.metrics().oversize_frames, 1);
    eprintln!("figure: rmcp + server-filesystem 30 MiB read: too_large in {took:?}");
    within(20, "close", client.cancel()).await.expect("close");
    within(20, "shutdown", session.shutdown()).await;
}
