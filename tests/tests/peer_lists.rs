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

/// The Python SDK server's `hits(count)` through `proxy --clip <clip>`,
/// checked by `list-client.mjs` against the same call made directly.
async fn list_through(clip: &str, count: usize) {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let server = python.server();
    let proxied = proxy_argv(&drainpipe, &["--clip", clip, "--metrics", "none"], &server);
    let direct = serde_json::to_string(&server).expect("argv");
    let tool_args = json!({ "count": count }).to_string();
    let deadline = CLIENT_DEADLINE_SECS.to_string();
    let mut args: Vec<&str> = vec![
        "--tool",
        "hits",
        "--args",
        &tool_args,
        "--direct",
        &direct,
        "--deadline-s",
        &deadline,
        "--",
    ];
    args.extend(proxied.iter().map(String::as_str));
    let what = format!("python-sdk list of {count} through --clip {clip}");
    let run = run_client(node.script("list-client.mjs", &args), RUN_SECS, &what).await;
    let summary = &run.summary;
    let arrays = summary["arrays"].as_array().expect("arrays");
    // Both copies were seen, and at least one was shortened and read back
    // (at 1 MB the blocks fit and the structured copy is cut).
    for name in ["content", "structuredContent/result"] {
        let array = arrays
            .iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("{what}: no {name}: {summary}"));
        assert_eq!(array["items"], json!(count), "{what}: {summary}");
    }
    assert!(
        arrays.iter().any(|a| a["first"].is_u64()),
        "{what}: nothing was cut: {summary}"
    );
    figure(
        &format!("{what}: items kept inline"),
        json!({
            "content": arrays[0]["kept"],
            "structured": arrays[1]["kept"],
            "result_bytes": summary["result_bytes"],
            "call_ms": summary["call_ms"],
        }),
    );
    run.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_list_loses_nothing_at_the_budgets_install_writes() {
    for clip in ["8000", "10000", "40000chars", "50000chars", "1MB", "25000tokens"] {
        list_through(clip, 5_000).await;
    }
}

/// 20,000 items (4.7 MB): the largest list whose direct call the
/// TypeScript client still takes (it closes its transport past 10 MiB
/// buffered), so that every item read back is compared with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_of_twenty_thousand_loses_nothing() {
    for clip in ["10000", "1MB"] {
        list_through(clip, 20_000).await;
    }
}
