//! Guarantee: what `drainpipe proxy --clip` cuts from a result stays
//! readable, whole, by the official clients. A 30 MiB file read through
//! `server-filesystem` comes back condensed with a `resource_link` to the
//! full text; `resources/read` pages through it (each page within the
//! budget, `_meta["io.drainpipe/next"]` to the next) and the pages put
//! together are the file byte for byte; the proxy's `drainpipe_read` tool
//! returns exact byte ranges (shortened and said when over the budget) and
//! the lines matching a pattern with their byte offsets; an unknown link is
//! an error. The clients: the TypeScript SDK 1.x (`spill-client.mjs`) and
//! the Python SDK (`spill_client.py`), with the same checks; and the v2
//! TypeScript client pinned to revision 2026-07-28 (`spill-client.mjs --sdk
//! v2`) in front of the v2 server (5 MiB: `server-filesystem` speaks only
//! the 2025 `initialize`), where the proxy's own answers must be valid
//! 2026-07-28 results and `server/discover` must announce `resources`.
//!
//! Needs `bash tests/peers/setup.sh`; see `drainpipe_release::peers`.

use drainpipe_release::peers::{self, proxy_argv, run_client};
use drainpipe_release::text_file::TextFile;
use drainpipe_release::*;
use serde_json::json;

const BUDGET: usize = 256 << 10;
const FILE_BYTES: usize = 30 << 20;
/// The v2 server holds the text in memory, twice (`content` and its
/// mirror in `structuredContent`): a smaller file keeps the run quick.
const V2_FILE_BYTES: usize = 5 << 20;
/// The one line the pattern search must find (regex metacharacters in it:
/// the clients escape them).
const MARKER: &str = "drainpipe spill marker (the one line the search finds)";
/// The bound of a client run; the clients give up on their own a little
/// earlier (`--deadline-s`), saying at which step.
const RUN_SECS: u64 = 300;
const CLIENT_DEADLINE_SECS: u64 = 270;

/// The clients' arguments: `tool`, the file, the marker, the budget, then
/// `drainpipe proxy --clip 256KiB -- <server>`.
fn client_args(
    drainpipe: &std::path::Path,
    server: &[String],
    tool: &str,
    file: &TextFile,
) -> Vec<String> {
    let proxied = proxy_argv(
        drainpipe,
        &["--clip", "256KiB", "--metrics", "none"],
        server,
    );
    let mut args: Vec<String> = [
        "--tool",
        tool,
        "--file",
        &file.path.display().to_string(),
        "--marker",
        MARKER,
        "--budget",
        &BUDGET.to_string(),
        "--deadline-s",
        &CLIENT_DEADLINE_SECS.to_string(),
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(proxied);
    args
}

/// What every client's summary must say of the file it read back.
fn assert_read_back(run: &peers::ClientRun, file: &TextFile) {
    let summary = &run.summary;
    let what = &run.what;
    assert_eq!(summary["bytes"], json!(file.bytes), "{what}: {summary}");
    assert_eq!(summary["sha256_equal"], json!(true), "{what}: {summary}");
    assert!(
        summary["pages"].as_u64() >= Some(file.bytes.div_ceil(BUDGET) as u64),
        "{what}: pages within the budget: {summary}"
    );
    assert_eq!(summary["range_ok"], json!(true), "{what}: {summary}");
    assert_eq!(summary["pattern_ok"], json!(true), "{what}: {summary}");
    assert_eq!(
        summary["pattern"]["offset"],
        json!(file.marker_at.expect("a marker")),
        "{what}: {summary}"
    );
    assert_eq!(
        summary["unknown_rejected"],
        json!(true),
        "{what}: {summary}"
    );
    figure(
        &format!("{what}: read back through proxy --clip 256KiB"),
        json!({
            "call_ms": summary["call_ms"],
            "read_ms": summary["read_ms"],
            "pages": summary["pages"],
            "links": summary["links"],
        }),
    );
}

/// Runs `client` (a script given the arguments) through `proxy --clip
/// 256KiB` in front of `server` (`tool` reads `file`), and checks that it
/// read the file back; the run, for more checks.
async fn read_back(
    client: impl FnOnce(&[&str]) -> std::process::Command,
    server: &[String],
    tool: &str,
    file: &TextFile,
    first_args: &[&str],
    what: &str,
) -> peers::ClientRun {
    let drainpipe = peers::drainpipe().expect("gated by the caller");
    let mut args: Vec<String> = first_args.iter().map(|a| a.to_string()).collect();
    args.extend(client_args(&drainpipe, server, tool, file));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = run_client(client(&args), RUN_SECS, what).await;
    assert_read_back(&run, file);
    run.assert_nothing_left();
    run
}

/// The TypeScript SDK 1.x client in front of `server-filesystem`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_client_reads_a_spilled_file_back_whole() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    if peers::gate("the drainpipe binary", peers::drainpipe()).is_none() {
        return;
    }
    let file = TextFile::with_marker("spill-node", FILE_BYTES, MARKER);
    read_back(
        |args| node.script("spill-client.mjs", args),
        &node.filesystem_server(&file.dir),
        "read_text_file",
        &file,
        &[],
        "typescript-sdk client + server-filesystem, 30 MiB spilled",
    )
    .await;
}

/// The Python SDK client in front of `server-filesystem` (which needs the
/// Node peer too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_reads_a_spilled_file_back_whole() {
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    if peers::gate("the drainpipe binary", peers::drainpipe()).is_none() {
        return;
    }
    let file = TextFile::with_marker("spill-python", FILE_BYTES, MARKER);
    read_back(
        |args| python.script("spill_client.py", args),
        &node.filesystem_server(&file.dir),
        "read_text_file",
        &file,
        &[],
        "python-sdk client + server-filesystem, 30 MiB spilled",
    )
    .await;
}

/// The TypeScript SDK v2 client pinned to 2026-07-28 (`server/discover`,
/// the protocol envelope in every request's `_meta`) in front of the v2
/// server serving only that revision, whose `read_text` returns the text in
/// `content` and mirrors it in `structuredContent`: the same checks, with
/// the v2 client's checks of 2026-07-28 results on what the proxy answers
/// itself (`resources/read`, `drainpipe_read`): `resultType`, and on the
/// cacheable `resources/read` results `ttlMs` and `cacheScope`, which the
/// client requires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v2_sdk_client_reads_a_spilled_value_back_in_2026_07_28() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    if peers::gate("the drainpipe binary", peers::drainpipe()).is_none() {
        return;
    }
    let file = TextFile::with_marker("spill-v2", V2_FILE_BYTES, MARKER);
    let server = vec![
        node.node.display().to_string(),
        node.dir.join("v2-server.mjs").display().to_string(),
        "--reject-legacy".to_string(),
    ];
    let run = read_back(
        |args| node.script("spill-client.mjs", args),
        &server,
        "read_text",
        &file,
        &["--sdk", "v2"],
        "typescript-sdk v2 client (2026-07-28) + v2 server, 5 MiB spilled",
    )
    .await;
    assert_eq!(run.summary["protocol"], "2026-07-28", "{}", run.summary);
    assert!(
        run.summary["capabilities"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("resources"))),
        "server/discover announces resources: {}",
        run.summary
    );
}
