//! Guarantee: `drainpipe check` speaks both protocol eras with the official
//! SDKs' servers: 2026-07-28 through `server/discover` (with the protocol
//! envelope in every request's `_meta`) where the server offers it, the
//! 2025 `initialize` where it does not, and either when pinned with
//! `--protocol`; the first row names the revision, and rows that cannot run
//! are skipped with the reason.
//!
//! Needs `bash tests/peers/setup.sh`; see `drainpipe_release::peers`.

use std::process::Stdio;

use drainpipe_host::session::{ClientInfo, Protocol, Revision, Session, SessionConfig};
use drainpipe_release::peers;
use drainpipe_release::*;
use serde_json::json;

/// Runs `drainpipe check ARGS -- SERVER`; returns its exit code and stdout.
async fn check(args: &[&str], server: &[String]) -> (Option<i32>, String) {
    let drainpipe = peers::drainpipe().unwrap_or_else(|e| panic!("{e}"));
    let mut command = std::process::Command::new(drainpipe);
    command
        .arg("check")
        .args(args)
        .arg("--")
        .args(server)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = within(60, "drainpipe check", async move {
        tokio::task::spawn_blocking(move || command.output().expect("run check"))
            .await
            .expect("join")
    })
    .await;
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The row called `name`: (verdict, measured).
fn row<'a>(stdout: &'a str, name: &str) -> (&'a str, &'a str) {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{stdout}"));
    let rest = line.trim_start()[name.len()..].trim_start();
    rest.split_once(' ').unwrap_or((rest, ""))
}

/// The v2 TypeScript server that serves only 2026-07-28 passes, and the
/// handshake names the revision; pinned to 2025-06-18 the handshake fails
/// and every row that needs it is skipped, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_speaks_2026_07_28_with_a_modern_only_server() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let server = vec![
        node.node.display().to_string(),
        node.dir.join("v2-server.mjs").display().to_string(),
        "--reject-legacy".to_string(),
    ];
    let (code, stdout) = check(&[], &server).await;
    assert_eq!(code, Some(0), "{stdout}");
    let (verdict, measured) = row(&stdout, "handshake");
    assert_eq!(verdict, "pass", "{stdout}");
    assert!(measured.contains("server/discover"), "{measured}");
    assert!(measured.contains("protocol 2026-07-28"), "{measured}");
    assert_eq!(row(&stdout, "tools/list").0, "pass", "{stdout}");

    let (code, stdout) = check(&["--protocol", "2025-06-18"], &server).await;
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(row(&stdout, "handshake").0, "FAIL", "{stdout}");
    for name in ["tools/list", "result over the limit", "cancellation"] {
        let (verdict, measured) = row(&stdout, name);
        assert_eq!(verdict, "skip", "{stdout}");
        assert!(measured.contains("no handshake"), "{measured}");
    }
    figure(
        "drainpipe check on the v2 TypeScript server (2026-07-28 only)",
        json!({"handshake": row(&check(&[], &server).await.1, "handshake").1}),
    );
}

/// The Python SDK's server in both eras, with the large and the slow tool:
/// the same verdicts either way (the large row fails: `huge` is unbounded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_runs_every_row_in_both_eras_with_the_python_sdk() {
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    for (protocol, revision, opening) in [
        ("2026-07-28", "2026-07-28", "server/discover"),
        ("2025-06-18", "2025-06-18", "initialize"),
    ] {
        let (code, stdout) = check(
            &[
                "--protocol",
                protocol,
                "--large-tool",
                "huge",
                "--large-args",
                r#"{"bytes": 8388608}"#,
                "--slow-tool",
                "slow",
                "--slow-args",
                r#"{"seconds": 30}"#,
            ],
            &python.server(),
        )
        .await;
        assert_eq!(code, Some(1), "{stdout}");
        let (verdict, measured) = row(&stdout, "handshake");
        assert_eq!(verdict, "pass", "{stdout}");
        assert!(
            measured.contains(opening) && measured.contains(revision),
            "{measured}"
        );
        assert_eq!(row(&stdout, "result over the limit").0, "FAIL", "{stdout}");
        for name in ["tools/list", "cancellation", "stdout purity", "shutdown"] {
            assert_eq!(row(&stdout, name).0, "pass", "{protocol}: {stdout}");
        }
    }
}

/// A 2025-era server (the 1.x TypeScript SDK's `server-everything`) answers
/// `server/discover` with an error: `auto` falls back to `initialize`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_falls_back_to_initialize_on_a_legacy_server() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let (code, stdout) = check(&[], &node.everything_server()).await;
    assert_eq!(code, Some(0), "{stdout}");
    let (verdict, measured) = row(&stdout, "handshake");
    assert_eq!(verdict, "pass");
    assert!(
        measured.contains("initialize") && measured.contains("protocol 2025-06-18"),
        "{measured}"
    );
}

/// The session library negotiates as `check` does, with every official
/// server: then the same `call` works in either era (in 2026-07-28 the
/// session adds the protocol envelope to every request's `_meta`, which
/// these servers require), and 2026-07-28 results carry `resultType`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_negotiate_with_the_official_servers_of_both_eras() {
    let node = peers::gate("the Node.js peer", peers::node());
    let python = peers::gate("the Python peer", peers::python());
    let (Some(node), Some(python)) = (node, python) else {
        return;
    };
    let v2 = |extra: &[&str]| {
        let mut server = vec![
            node.node.display().to_string(),
            node.dir.join("v2-server.mjs").display().to_string(),
        ];
        server.extend(extra.iter().map(|s| s.to_string()));
        server
    };
    let cases: Vec<(&str, Vec<String>, Protocol, Revision, &str)> = vec![
        (
            "v2 server, 2026-07-28 only",
            v2(&["--reject-legacy"]),
            Protocol::Auto,
            Revision::V2026_07_28,
            "server/discover",
        ),
        (
            "v2 server, pinned 2025-06-18",
            v2(&[]),
            Protocol::Pin(Revision::V2025_06_18),
            Revision::V2025_06_18,
            "initialize",
        ),
        (
            "Python server",
            python.server(),
            Protocol::Auto,
            Revision::V2026_07_28,
            "server/discover",
        ),
        (
            "Python server, pinned 2025-11-25",
            python.server(),
            Protocol::Pin(Revision::V2025_11_25),
            Revision::V2025_11_25,
            "initialize",
        ),
        (
            "server-everything (1.x)",
            node.everything_server(),
            Protocol::Auto,
            Revision::V2025_06_18,
            "initialize",
        ),
    ];
    let client = ClientInfo::new("drainpipe-release", "0");
    let mut figures = serde_json::Map::new();
    for (what, server, protocol, revision, via) in cases {
        let mut command = tokio::process::Command::new(&server[0]);
        command.args(&server[1..]);
        let session = Session::spawn(command, SessionConfig::default())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let negotiated = within(30, what, session.negotiate(protocol, &client, opts(20)))
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}; stderr: {:?}", session.stderr()));
        assert_eq!(
            (negotiated.revision, negotiated.via),
            (revision, via),
            "{what}"
        );
        assert!(
            negotiated.server_info["name"].is_string(),
            "{what}: {:?}",
            negotiated.server_info
        );
        let tools = within(30, what, session.call("tools/list", json!({}), opts(20)))
            .await
            .unwrap_or_else(|e| panic!("{what}: tools/list: {e}"));
        assert!(
            tools.result["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty()),
            "{what}"
        );
        if revision.is_stateless() {
            assert_eq!(
                tools.result_type(),
                Some("complete"),
                "{what}: {}",
                tools.result
            );
        }
        figures.insert(what.to_string(), json!(negotiated.server()));
        session.shutdown().await;
    }
    figure(
        "sessions negotiate with the official servers",
        figures.into(),
    );
}
