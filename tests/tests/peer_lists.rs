//! Guarantee: a list cut by `drainpipe proxy --clip` loses nothing. A tool
//! of the official Python SDK returning `list[Hit]` answers with a text
//! block per hit (its JSON, pretty-printed) and the whole list again in
//! `structuredContent.result`: two copies of thousands of small items.
//! Through the proxy, at every budget `drainpipe install` writes for a
//! host (and at `25000tokens`), the official TypeScript client gets a
//! result that keeps whole items only, whose notice counts each array's
//! items and names where its rest is, and whose links give back, read
//! page by page, every item of both copies left out, each equal to what
//! the same call returns without the proxy (`list-client.mjs` checks it);
//! `drainpipe_read` finds the last item by pattern.
//!
//! Needs `bash tests/peers/setup.sh`; see `drainpipe_release::peers`.

use drainpipe_release::peers::{self, proxy_argv, run_client};
use drainpipe_release::*;
use serde_json::json;

/// The bound of a client run; the client gives up on its own earlier.
const RUN_SECS: u64 = 300;
const CLIENT_DEADLINE_SECS: u64 = 270;

/// The Python SDK server's `tool(count)` through `proxy --clip <clip>`,
/// checked by `list-client.mjs` against the same call made directly; the
/// client's summary.
async fn through(
    clip: &str,
    tool: &str,
    count: usize,
    original: Original,
) -> Option<serde_json::Value> {
    let python = peers::gate("the Python peer", peers::python())?;
    call_through(
        clip,
        &python.server(),
        tool,
        &json!({ "count": count }),
        original,
    )
    .await
}

/// A `--clip` in bytes, as a number of bytes (`8000`, `8KiB`, `1MB`).
fn budget_bytes(clip: &str) -> Option<u64> {
    let digits = clip.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let number: u64 = digits.parse().ok()?;
    match &clip[digits.len()..] {
        "" => Some(number),
        "KiB" => Some(number << 10),
        "MB" => Some(number * 1_000_000),
        _ => None,
    }
}

/// What the client compares the proxied answer with.
#[derive(Clone, Copy, PartialEq)]
enum Original {
    /// The same call, straight to the server.
    Direct,
    /// Too large for the TypeScript client to take straight: the Python
    /// peer's `hits(count)` built by the client (checked against the
    /// server at 5,000 in `a_python_list_loses_nothing_at_the_budgets_install_writes`).
    Hits(usize),
    /// Both, checked to agree.
    DirectAndHits(usize),
}

/// `tool(arguments)` of `server` through `proxy --clip <clip>`, checked by
/// `list-client.mjs` against the same call made directly (`must_cut`: the
/// answer is over the budget); the client's summary.
async fn call_through(
    clip: &str,
    server: &[String],
    tool: &str,
    arguments: &serde_json::Value,
    original: Original,
) -> Option<serde_json::Value> {
    let node = peers::gate("the Node.js peer", peers::node())?;
    let drainpipe = peers::gate("the drainpipe binary", peers::drainpipe())?;
    let proxied = proxy_argv(&drainpipe, &["--clip", clip, "--metrics", "none"], server);
    let direct = serde_json::to_string(server).expect("argv");
    let tool_args = arguments.to_string();
    let deadline = CLIENT_DEADLINE_SECS.to_string();
    let mut args: Vec<&str> = vec![
        "--tool",
        tool,
        "--args",
        &tool_args,
        "--deadline-s",
        &deadline,
    ];
    if !matches!(original, Original::Hits(_)) {
        args.extend(["--direct", direct.as_str()]);
    }
    let count;
    if let Original::Hits(n) | Original::DirectAndHits(n) = original {
        count = n.to_string();
        args.extend(["--expect-hits", count.as_str()]);
    }
    args.push("--");
    args.extend(proxied.iter().map(String::as_str));
    let what = format!("{tool}({tool_args}) through --clip {clip}");
    let run = run_client(node.script("list-client.mjs", &args), RUN_SECS, &what).await;
    run.assert_nothing_left();
    let summary = run.summary;
    let cut = summary["arrays"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["first"].is_u64())
        .count()
        + summary["objects"].as_array().map_or(0, Vec::len)
        + summary["texts"].as_array().map_or(0, Vec::len);
    assert!(cut > 0, "{what}: nothing was cut: {summary}");
    // Within a budget in bytes (the result as the client re-serialises it,
    // without the response's envelope, is no larger than on the wire).
    if let Some(bytes) = budget_bytes(clip) {
        assert!(
            summary["result_bytes"].as_u64().is_some_and(|n| n <= bytes),
            "{what}: over {bytes} bytes: {summary}"
        );
    }
    if let Original::DirectAndHits(_) = original {
        assert_eq!(summary["expect_checked"], json!(true), "{what}: {summary}");
    }
    figure(
        &format!("{what}: kept inline"),
        json!({
            "arrays": summary["arrays"],
            "objects": summary["objects"],
            "result_bytes": summary["result_bytes"],
            "call_ms": summary["call_ms"],
        }),
    );
    Some(summary)
}

/// `hits(count)`: both copies of the list seen, all items accounted for
/// (at 1 MB the blocks fit and the structured copy is cut).
async fn list_through(clip: &str, count: usize, original: Original) {
    let Some(summary) = through(clip, "hits", count, original).await else {
        return;
    };
    let arrays = summary["arrays"].as_array().expect("arrays");
    for name in ["content", "structuredContent/result"] {
        let array = arrays
            .iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {summary}"));
        assert_eq!(array["items"], json!(count), "{summary}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_list_loses_nothing_at_the_budgets_install_writes() {
    for clip in [
        "8000",
        "8KiB",
        "10000",
        "40000chars",
        "50000chars",
        "64KiB",
        "1MB",
        "25000tokens",
    ] {
        // Once, the list the client builds for larger counts is checked to
        // be what the server answers.
        let original = match clip {
            "8000" => Original::DirectAndHits(5_000),
            _ => Original::Direct,
        };
        list_through(clip, 5_000, original).await;
    }
}

/// A `dict` of 5,000 hits (one text block, and the object itself as
/// `structuredContent`): the text is cut and linked whole, the object
/// keeps its first members and links the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_dict_loses_nothing() {
    for clip in ["8000", "64KiB"] {
        let Some(summary) = through(clip, "hit_map", 5_000, Original::Direct).await else {
            return;
        };
        assert_eq!(summary["objects"][0]["members"], json!(5_000), "{summary}");
        assert_eq!(summary["texts"][0], "content/0/text", "{summary}");
    }
}

/// 50,000 items (12 MB): more than the TypeScript client takes straight
/// from the server (it closes its transport past 10 MiB buffered), so the
/// items read back are compared with the list the client builds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_of_fifty_thousand_loses_nothing() {
    for clip in ["10000", "1MB"] {
        list_through(clip, 50_000, Original::Hits(50_000)).await;
    }
}

/// A tree of `files` files in nested directories, for server-filesystem;
/// removed when dropped.
struct Tree(std::path::PathBuf);

impl Tree {
    fn new(files: usize) -> Tree {
        let dir = std::env::temp_dir().join(format!("drainpipe-lists-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for n in 0..files {
            let sub = dir
                .join(format!("pkg-{}", n % 40))
                .join(format!("mod-{}", n % 7));
            std::fs::create_dir_all(&sub).expect("mkdir");
            std::fs::write(sub.join(format!("file-{n}.rs")), "fn main() {}\n").expect("write");
        }
        Tree(std::fs::canonicalize(&dir).expect("the tree"))
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The official filesystem server's listings: `directory_tree` (a JSON
/// text, and its mirror in `structuredContent`) and `search_files` (a path
/// a line), over 3,000 files: cut texts linked whole, at the budgets
/// `install` writes for VS Code, Codex and Gemini CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_listings_lose_nothing() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let tree = Tree::new(3_000);
    let server = node.filesystem_server(&tree.0);
    let path = tree.0.display().to_string();
    for clip in ["8000", "10000", "40000chars"] {
        for (tool, arguments) in [
            ("directory_tree", json!({ "path": path })),
            (
                "search_files",
                json!({ "path": path, "pattern": "**/file-1*.rs" }),
            ),
        ] {
            let Some(summary) =
                call_through(clip, &server, tool, &arguments, Original::Direct).await
            else {
                return;
            };
            assert!(
                summary["texts"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t == "content/0/text")),
                "{tool} at {clip}: the cut text is linked: {summary}"
            );
        }
    }
}
