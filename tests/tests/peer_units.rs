//! Guarantee: `drainpipe proxy --clip` in characters or tokens keeps what
//! the official TypeScript client decodes within that many characters
//! (`String.length`, UTF-16 units) or tokens (`o200k_base`), on a 5 MiB
//! read of the official filesystem server: the texts of `content` and
//! `structuredContent` as JSON text, whatever bytes they take (the file
//! mixes ASCII, accented letters, escapes and characters outside the BMP).
//! The result keeps a useful head of the file, says what was cut, links the
//! rest, and the same call answers alike a second time. The other wire
//! shape (a Python SDK server, `id` first) and the other era (the SDK v2
//! client on 2026-07-28) hold in characters too, and the official
//! everything server in characters and tokens. And how `o200k_base`
//! counts the official filesystem server's real answers against the
//! estimate a host without a tokenizer uses (bytes / 4).
//!
//! Needs `bash tests/peers/setup.sh`; see `drainpipe_release::peers`.

use drainpipe_release::peers::{self, proxy_argv, run_client};
use drainpipe_release::text_file::TextFile;
use drainpipe_release::*;
use serde_json::{Value, json};

/// Runs `condensed` of the SDK client through `proxy --clip <clip>` on a
/// 5 MiB file read by the official filesystem server; returns the summary
/// and what the client was shown.
async fn read_through(clip: &str, unit: &str, amount: usize) -> Option<(Value, Value)> {
    let node = peers::gate("the Node.js peer", peers::node())?;
    let file = TextFile::new(&format!("units-{unit}"), 5 << 20);
    let server = node.filesystem_server(&file.dir);
    let what = format!("typescript-sdk client + server-filesystem, 5 MiB read, --clip {clip}");
    condensed(
        &node,
        &server,
        &["--tool", "read_text_file"],
        &file,
        clip,
        unit,
        amount,
        &what,
    )
    .await
}

/// `sdk-client.mjs condensed` on `file` through `proxy --clip <clip>` in
/// front of `server`, checking `unit` (see `condensed-check.mjs`); `call`
/// names the tool (`--tool NAME`, and `--echo` for server-everything's).
#[allow(clippy::too_many_arguments)]
async fn condensed(
    node: &peers::NodePeer,
    server: &[String],
    call: &[&str],
    file: &TextFile,
    clip: &str,
    unit: &str,
    amount: usize,
    what: &str,
) -> Option<(Value, Value)> {
    let drainpipe = peers::gate("the drainpipe binary", peers::drainpipe())?;
    let proxied = proxy_argv(&drainpipe, &["--clip", clip, "--metrics", "none"], server);
    let dump = file.dir.join("shown.json");
    let (path, dump_path, budget) = (
        file.path.display().to_string(),
        dump.display().to_string(),
        amount.to_string(),
    );
    let mut args = vec!["condensed"];
    args.extend(call);
    args.extend([
        "--file", &path, "--budget", &budget, "--unit", unit, "--dump", &dump_path, "--",
    ]);
    args.extend(proxied.iter().map(String::as_str));
    let run = run_client(node.script("sdk-client.mjs", &args), 180, what).await;
    run.assert_nothing_left();
    let shown: Value = serde_json::from_slice(&std::fs::read(&dump).expect("the client's dump"))
        .expect("the dump is JSON");
    Some((run.summary, shown))
}

/// The texts the client was shown.
/// The client found the file's beginning and its end around a mark whose
/// numbers are exact (`--keep ends`, the default), each a useful length.
fn assert_both_ends(summary: &Value) {
    let kept = &summary["kept"];
    assert_eq!(kept["keep"], "ends", "{summary}");
    for part in ["headBytes", "tailBytes"] {
        assert!(kept[part].as_u64() > Some(1000), "{part}: {summary}");
    }
}

fn texts(shown: &Value) -> Vec<&str> {
    shown["texts"]
        .as_array()
        .expect("texts")
        .iter()
        .map(|t| t.as_str().expect("a text"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_in_characters_holds_as_the_client_decodes() {
    const BUDGET: usize = 50_000;
    let Some((summary, shown)) = read_through("50000chars", "chars", BUDGET).await else {
        return;
    };
    // The client checked the same (String.length); counted again here.
    let chars: usize = texts(&shown).iter().map(|t| t.encode_utf16().count()).sum();
    let structured = shown["structured"].as_str().expect("structured");
    assert!(chars <= BUDGET, "{chars} UTF-16 units shown");
    assert!(structured.encode_utf16().count() <= BUDGET);
    let kept = texts(&shown)[0];
    assert!(kept.chars().count() > 1000, "a useful text: {summary}");
    assert_both_ends(&summary);
    // Not a byte budget in disguise: the result takes more bytes than the
    // amount (the file is not ASCII, and the text is sent twice).
    let marker = &summary["marker"];
    assert!(
        marker["keptBytes"].as_u64() > Some(BUDGET as u64),
        "more bytes than characters kept: {summary}"
    );
    figure(
        "typescript-sdk client + server-filesystem, 5 MiB read, --clip 50000chars",
        json!({"shown_utf16": chars, "structured_utf16": structured.encode_utf16().count(), "kept_bytes": marker["keptBytes"], "ms": summary["ms"]}),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_in_tokens_holds_by_the_named_tokenizer() {
    const BUDGET: usize = 25_000;
    let Some((summary, shown)) = read_through("25000tokens", "tokens", BUDGET).await else {
        return;
    };
    let tokenizer = bpe_openai::o200k_base();
    let tokens: usize = texts(&shown).iter().map(|t| tokenizer.count(*t)).sum();
    let structured = tokenizer.count(shown["structured"].as_str().expect("structured"));
    assert!(tokens <= BUDGET, "{tokens} tokens shown");
    assert!(
        structured <= BUDGET,
        "{structured} tokens of structuredContent"
    );
    assert_both_ends(&summary);
    let marker = &summary["marker"];
    assert!(
        marker["keptBytes"].as_u64() > Some(BUDGET as u64),
        "more bytes than tokens kept: {summary}"
    );
    figure(
        "typescript-sdk client + server-filesystem, 5 MiB read, --clip 25000tokens",
        json!({"shown_tokens": tokens, "structured_tokens": structured, "kept_bytes": marker["keptBytes"], "ms": summary["ms"]}),
    );
}

/// The other wire shape: a server on the Python SDK (`id` first, the text
/// mirrored in `structuredContent.result`), through the TypeScript client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_in_characters_holds_for_a_python_sdk_server() {
    const BUDGET: usize = 50_000;
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let file = TextFile::new("units-python", 5 << 20);
    let what = "typescript-sdk client + python-sdk server, 5 MiB text, --clip 50000chars";
    let Some((summary, shown)) = condensed(
        &node,
        &python.server(),
        &["--tool", "read_text"],
        &file,
        "50000chars",
        "chars",
        BUDGET,
        what,
    )
    .await
    else {
        return;
    };
    let chars: usize = texts(&shown).iter().map(|t| t.encode_utf16().count()).sum();
    assert!(chars <= BUDGET, "{chars} UTF-16 units shown");
    assert!(
        summary["marker"]["keptBytes"].as_u64() > Some(BUDGET as u64),
        "{summary}"
    );
    figure(
        what,
        json!({"shown_utf16": chars, "kept_bytes": summary["marker"]["keptBytes"]}),
    );
}

/// The official everything server's `echo`, which answers a 3 MiB message
/// (under the proxy's 4 MiB default limit on the host's messages) with
/// `Echo: <message>` and no `structuredContent`: within the budget in
/// characters and in tokens, as the client decodes and `o200k_base`
/// counts, both ends kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_in_characters_and_tokens_hold_for_the_everything_server() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let server = node.everything_server();
    let tokenizer = bpe_openai::o200k_base();
    for (clip, unit, amount) in [
        ("50000chars", "chars", 50_000usize),
        ("25000tokens", "tokens", 25_000),
    ] {
        let file = TextFile::new(&format!("units-everything-{unit}"), 3 << 20);
        let what = format!("typescript-sdk client + server-everything echo, 3 MiB, --clip {clip}");
        let Some((summary, shown)) = condensed(
            &node,
            &server,
            &["--tool", "echo", "--echo"],
            &file,
            clip,
            unit,
            amount,
            &what,
        )
        .await
        else {
            return;
        };
        let texts = texts(&shown);
        let shown_units: usize = match unit {
            "chars" => texts.iter().map(|t| t.encode_utf16().count()).sum(),
            _ => texts.iter().map(|t| tokenizer.count(*t)).sum(),
        };
        assert!(shown_units <= amount, "{shown_units} {unit} shown");
        assert_eq!(shown["structured"], "", "no structuredContent added");
        assert!(texts[0].starts_with("Echo: "), "{summary}");
        assert_both_ends(&summary);
        assert!(
            summary["marker"]["keptBytes"].as_u64() > Some(amount as u64),
            "more bytes than {unit} kept: {summary}"
        );
        figure(
            &what,
            json!({"shown": shown_units, "unit": unit, "kept_bytes": summary["marker"]["keptBytes"], "ms": summary["ms"]}),
        );
    }
}

/// The other protocol era: the TypeScript SDK v2 client pinned to
/// 2026-07-28, in front of the v2 server that serves only that revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_in_characters_holds_for_the_sdk_v2_client_on_2026_07_28() {
    const BUDGET: usize = 50_000;
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let file = TextFile::new("units-v2", 5 << 20);
    let server = [
        node.node.display().to_string(),
        node.dir.join("v2-server.mjs").display().to_string(),
        "--reject-legacy".to_string(),
    ];
    let proxied = proxy_argv(
        &drainpipe,
        &["--clip", "50000chars", "--metrics", "none"],
        &server,
    );
    let path = file.path.display().to_string();
    let budget = BUDGET.to_string();
    let mut args = vec![
        "condensed",
        "--file",
        &path,
        "--budget",
        &budget,
        "--mode",
        "pin",
        "--unit",
        "chars",
        "--",
    ];
    args.extend(proxied.iter().map(String::as_str));
    let what = "typescript-sdk v2 client (2026-07-28) + v2 server, 5 MiB text, --clip 50000chars";
    let run = run_client(node.script("sdk-v2-client.mjs", &args), 120, what).await;
    run.assert_nothing_left();
    assert_eq!(run.summary["protocol"], "2026-07-28");
    // The client checked the texts' String.length against the budget.
    let shown = run.summary["shown_chars"].as_u64().expect("shown_chars");
    assert!(shown <= BUDGET as u64 && shown > 1000, "{}", run.summary);
    figure(
        what,
        json!({"shown_utf16": shown, "kept_bytes": run.summary["marker"]["keptBytes"]}),
    );
}

/// How `o200k_base` counts real tool output against the estimate a host
/// uses when it has no tokenizer: Codex CLI's `ceil(bytes / 4)` for its
/// `tool_output_token_limit` (Claude's tokenizer is not published, so
/// Claude Code's count cannot be compared). The corpus is what the official
/// filesystem server answers for this repository: source, prose, a lock
/// file, a directory tree (JSON) and a search. Every count is at most the
/// bytes, which is what the ladder's smallest rung relies on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o200k_against_a_hosts_estimate_on_real_tool_output() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let root = std::fs::canonicalize(workspace_root()).expect("the workspace");
    let argv = node.filesystem_server(&root);
    let session = start_session(peers::command(&argv), limited(64 << 20)).await;
    let path = |p: &str| root.join(p).display().to_string();
    let calls = [
        (
            "Rust source",
            "read_text_file",
            json!({"path": path("framer/src/budget/condense/room.rs")}),
        ),
        (
            "Markdown",
            "read_text_file",
            json!({"path": path("README.md")}),
        ),
        (
            "lock file",
            "read_text_file",
            json!({"path": path("Cargo.lock")}),
        ),
        (
            "directory tree (JSON)",
            "directory_tree",
            json!({"path": path("framer")}),
        ),
        (
            "search",
            "search_files",
            json!({"path": path("host-adapter"), "pattern": "**/*.rs"}),
        ),
        (
            "listing with sizes",
            "list_directory_with_sizes",
            json!({"path": path("framer/src/budget/condense")}),
        ),
    ];
    let tokenizer = bpe_openai::o200k_base();
    let mut rows = Vec::new();
    for (what, name, arguments) in calls {
        let response = within(60, what, tool(&session, name, arguments, opts(55)))
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let text: String = response.result["content"]
            .as_array()
            .expect("content")
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect();
        assert!(text.len() > 500, "{what}: a real answer: {text}");
        let bytes = text.len();
        let chars = text.encode_utf16().count();
        let tokens = tokenizer.count(&text);
        let estimate = bytes.div_ceil(4);
        assert!(
            tokens <= bytes && chars <= bytes,
            "{what}: a unit under a byte"
        );
        rows.push(json!({
            "output": what, "bytes": bytes, "utf16": chars, "o200k": tokens,
            "bytes_div_4": estimate,
            "o200k_per_estimate": (tokens as f64 / estimate as f64 * 100.0).round() / 100.0,
            "bytes_per_token": (bytes as f64 / tokens as f64 * 100.0).round() / 100.0,
        }));
    }
    figure(
        "o200k_base against ceil(bytes/4) on server-filesystem output",
        json!(rows),
    );
    session.shutdown().await;
}
