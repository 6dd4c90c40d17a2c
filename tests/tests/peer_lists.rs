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

use drainpipe_host::session::Session;
use drainpipe_release::peers::{self, command, proxy_argv, run_client};
use drainpipe_release::spill_dir::TempDir;
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

/// The whole of the value at `uri`, read page by page with
/// `resources/read`, and its size as the pages give it.
async fn read_whole(session: &Session, uri: &str) -> (Vec<u8>, u64) {
    let (mut all, mut next, mut size) = (Vec::new(), uri.to_string(), 0);
    loop {
        let page = within(
            20,
            "resources/read",
            session.call("resources/read", json!({ "uri": next }), opts(15)),
        )
        .await
        .unwrap_or_else(|e| panic!("resources/read {next}: {e}"))
        .result;
        let text = page["contents"][0]["text"].as_str().expect("a text page");
        all.extend_from_slice(text.as_bytes());
        size = page["_meta"]["io.drainpipe/range"]["size"]
            .as_u64()
            .unwrap_or(size);
        match page["_meta"]["io.drainpipe/next"].as_str() {
            Some(uri) => next = uri.to_string(),
            None => return (all, size),
        }
        assert!(all.len() < 64 << 20, "reading {uri} ends");
    }
}

/// One stored copy: the Python SDK's list cut at 64 KiB keeps one file in
/// the spill store, the items, whose size is the `structuredContent` link's;
/// the `content` link reads the same items as the text blocks the server
/// wrote (its own size, larger), each block's text the pretty JSON of the
/// item on the same line of the other link, none missing. Without the
/// shared copy the store holds two files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mirrored_list_is_stored_once_and_read_in_both_shapes() {
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let tmp = TempDir::new("mirror");
    let argv = proxy_argv(
        &drainpipe,
        &["--clip", "64KiB", "--metrics", "none"],
        &python.server(),
    );
    let mut command = command(&argv);
    command.env("TMPDIR", &tmp.0);
    let session = start_session(command, limited(16 << 20)).await;
    let result = within(
        60,
        "hits(5000) through the proxy",
        tool(&session, "hits", json!({"count": 5_000}), opts(55)),
    )
    .await
    .expect("a condensed result")
    .result;
    // A link is named `<pointer> from item <first>`.
    let link = |pointer: &str| {
        let block = result["content"]
            .as_array()
            .expect("content")
            .iter()
            .find(|b| {
                b["type"] == "resource_link"
                    && b["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with(&format!("{pointer} from item ")))
            })
            .unwrap_or_else(|| panic!("no link to {pointer}: {result}"))
            .clone();
        let first: usize = block["name"]
            .as_str()
            .and_then(|n| n.rsplit(' ').next()?.parse().ok())
            .expect("the first item linked");
        (block, first)
    };
    let ((blocks, blocks_from), (items, items_from)) =
        (link("content"), link("structuredContent/result"));
    let stored: Vec<u64> = tmp
        .spill_dirs()
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).expect("the spill dir"))
        .flatten()
        .filter(|e| e.file_name() != ".lock")
        .map(|e| e.metadata().expect("metadata").len())
        .collect();
    assert_eq!(
        stored,
        vec![items["size"].as_u64().expect("size")],
        "one file, the items"
    );
    assert!(
        blocks["size"].as_u64() > items["size"].as_u64(),
        "{blocks} {items}"
    );
    let (block_bytes, block_size) =
        read_whole(&session, blocks["uri"].as_str().expect("uri")).await;
    let (item_bytes, _) = read_whole(&session, items["uri"].as_str().expect("uri")).await;
    assert_eq!(block_bytes.len() as u64, block_size);
    let blocks: Vec<serde_json::Value> = serde_json::from_slice(&block_bytes).expect("the blocks");
    let items: Vec<serde_json::Value> = serde_json::from_slice(&item_bytes).expect("the items");
    // Every item from the first linked on, in order, in both shapes.
    assert!(blocks_from >= items_from, "{blocks_from} {items_from}");
    assert_eq!(items.len(), 5_000 - items_from);
    assert_eq!(blocks.len(), 5_000 - blocks_from);
    for (n, item) in items.iter().enumerate() {
        assert_eq!(item["line"], json!(items_from + n), "{item}");
    }
    for (block, item) in blocks.iter().zip(&items[blocks_from - items_from..]) {
        assert_eq!(block["type"], "text", "{block}");
        let text: serde_json::Value =
            serde_json::from_str(block["text"].as_str().expect("text")).expect("JSON text");
        assert_eq!(&text, item);
        assert!(
            block["text"].as_str().is_some_and(|t| t.contains("\n  \"")),
            "{block}"
        );
    }
    shutdown_clean(&session).await;
}
