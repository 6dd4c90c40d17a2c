//! Guarantee: with `drainpipe proxy --clip`, a tool result of any size
//! reaches the official clients as a valid result within the budget that
//! they accept (the TypeScript SDK checks `structuredContent` against the
//! tool's output schema: `server-filesystem`'s and our v2 server's are
//! strict, `additionalProperties: false`), whose text is a prefix of the
//! original, whose mirror in `structuredContent` is cut alike, and which
//! says what was cut. Both protocol eras: the v1 client with `initialize`,
//! the v2 client pinned to 2026-07-28.
//!
//! Needs `bash tests/peers/setup.sh`; see `drainpipe_release::peers`.

use std::path::Path;

use drainpipe_release::peers::{self, proxy_argv, run_client};
use drainpipe_release::text_file::TextFile;
use drainpipe_release::*;
use serde_json::json;

const BUDGET: usize = 256 << 10;

/// Runs the SDK client's `condensed` check through `proxy --clip 256KiB`.
async fn condensed_through_the_proxy(server: &[String], tool: &str, file: &Path, what: &str) {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let proxied = proxy_argv(
        &drainpipe,
        &["--clip", "256KiB", "--metrics", "none"],
        server,
    );
    let path = file.display().to_string();
    let budget = BUDGET.to_string();
    let args: Vec<&str> = [
        "condensed",
        "--tool",
        tool,
        "--file",
        &path,
        "--budget",
        &budget,
        "--",
    ]
    .into_iter()
    .chain(proxied.iter().map(String::as_str))
    .collect();
    let run = run_client(node.script("sdk-client.mjs", &args), 180, what).await;
    figure(
        &format!("{what}: condensed through proxy --clip 256KiB"),
        json!({"ms": run.summary["ms"], "kept_chars": run.summary["kept_chars"], "marker": run.summary["marker"]}),
    );
}

/// The official filesystem server (TypeScript SDK 1.x: text twice, `id`
/// last), reading 5, 30 and 200 MiB files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_reads_of_any_size_are_condensed() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    for mib in [5, 30, 200] {
        let file = TextFile::new(&format!("fs{mib}"), mib << 20);
        condensed_through_the_proxy(
            &node.filesystem_server(&file.dir),
            "read_text_file",
            &file.path,
            &format!("typescript-sdk client + server-filesystem, {mib} MiB read"),
        )
        .await;
    }
}

/// A server on the Python SDK, whose tool returns the text as structured
/// output too (mirrored in `structuredContent.result`, `id` first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_results_are_condensed() {
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let file = TextFile::new("python", 30 << 20);
    condensed_through_the_proxy(
        &python.server(),
        "read_text",
        &file.path,
        "typescript-sdk client + python-sdk server, 30 MiB text",
    )
    .await;
}

/// The TypeScript SDK v2 client pinned to protocol revision 2026-07-28, in
/// front of a v2 server that serves only that revision (`serveStdio`,
/// legacy openings rejected) and mirrors a 5 MiB text under a strict output
/// schema: directly, the 11 MB result fails the client; through `proxy
/// --clip`, the condensed result is accepted, `_meta` keeps the server's
/// own keys beside the marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_v2_client_on_2026_07_28_accepts_condensed_results() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let file = TextFile::new("v2", 5 << 20);
    let server = v2_server(&node, true);
    let direct = v2_client_run(&file, "pin", &["--expect-direct-failure"], server.clone());
    let direct = run_client(
        node.script("sdk-v2-client.mjs", &as_strs(&direct)),
        120,
        "SDK v2 client, direct",
    )
    .await;
    let proxied = v2_client_run(&file, "pin", &[], proxied_v2(&drainpipe, &server));
    let proxied = run_client(
        node.script("sdk-v2-client.mjs", &as_strs(&proxied)),
        120,
        "SDK v2 client, through proxy --clip",
    )
    .await;
    assert_eq!(proxied.summary["protocol"], "2026-07-28");
    figure(
        "typescript-sdk v2 client (2026-07-28) + v2 server, 5 MiB text",
        json!({"direct_error": direct.summary["direct_error"], "condensed_ms": proxied.summary["ms"], "marker": proxied.summary["marker"]}),
    );
}

/// The same client in its other two modes, in front of the v2 server
/// serving both eras through `proxy --clip`: `legacy` speaks the 2025
/// `initialize` (the v2 server in its 2025 era), `auto` probes a copy of
/// the server with `server/discover` first, then speaks 2026-07-28. Both
/// accept the condensed result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_v2_client_in_legacy_and_auto_modes_accepts_condensed_results() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let file = TextFile::new("v2-modes", 5 << 20);
    let server = v2_server(&node, false);
    for (mode, revision) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let argv = v2_client_run(&file, mode, &[], proxied_v2(&drainpipe, &server));
        let run = run_client(
            node.script("sdk-v2-client.mjs", &as_strs(&argv)),
            120,
            &format!("SDK v2 client ({mode}), through proxy --clip"),
        )
        .await;
        assert_eq!(run.summary["protocol"], revision, "{mode}: {}", run.summary);
        assert!(
            run.summary["marker"]["originalBytes"].as_u64() > Some(BUDGET as u64),
            "{mode}: {}",
            run.summary
        );
        run.assert_nothing_left();
    }
}

/// `node v2-server.mjs`, serving only 2026-07-28 if `modern_only`.
fn v2_server(node: &peers::NodePeer, modern_only: bool) -> Vec<String> {
    let mut server = vec![
        node.node.display().to_string(),
        node.dir.join("v2-server.mjs").display().to_string(),
    ];
    if modern_only {
        server.push("--reject-legacy".to_string());
    }
    server
}

/// `server` behind `drainpipe proxy --clip 256KiB`.
fn proxied_v2(drainpipe: &std::path::Path, server: &[String]) -> Vec<String> {
    proxy_argv(
        drainpipe,
        &["--clip", "256KiB", "--metrics", "none"],
        server,
    )
}

/// The arguments of `sdk-v2-client.mjs condensed` for `file` in `mode`.
fn v2_client_run(file: &TextFile, mode: &str, extra: &[&str], server: Vec<String>) -> Vec<String> {
    let mut args: Vec<String> = [
        "condensed",
        "--file",
        &file.path.display().to_string(),
        "--budget",
        &BUDGET.to_string(),
        "--mode",
        mode,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.extend(server);
    args
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}
