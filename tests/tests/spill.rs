//! Guarantee: what `drainpipe proxy --clip` cuts stays readable through
//! the same session, and only there. Each cut value gets a
//! `resource_link`; `resources/read` pages give it back byte for byte;
//! `drainpipe_read` gives exact byte ranges (moved back to character
//! starts) and the lines a pattern matches with their offsets; the store
//! keeps to `--spill-max`, evicting the oldest first and saying so; its
//! directory is private (0700, files 0600) and gone when the proxy exits,
//! after SIGTERM too; two proxies never read each other's values.
//!
//! Real processes: the session talks to `drainpipe proxy` over pipes, the
//! proxy to the fixture server. Each proxy gets its own temp dir
//! (`TMPDIR`), so its spill directory is the only one there.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use drainpipe_host::session::{CallError, Session};
use drainpipe_release::peers::{self, command, proxy_argv};
use drainpipe_release::procs;
use drainpipe_release::spill_dir::TempDir;
use drainpipe_release::*;
use nix::sys::signal::Signal;
use serde_json::{Value, json};

/// A session on `drainpipe proxy <args> -- fixture`, its temp dir `tmp`.
async fn proxied(proxy_args: &[&str], tmp: &Path) -> Option<Session> {
    proxied_fixture(proxy_args, &[], tmp).await
}

/// The same, with the fixture's own `fixture_args`.
async fn proxied_fixture(
    proxy_args: &[&str],
    fixture_args: &[&str],
    tmp: &Path,
) -> Option<Session> {
    let drainpipe = peers::gate("the drainpipe binary", peers::drainpipe())?;
    let mut server = vec![fixture_binary().display().to_string()];
    server.extend(fixture_args.iter().map(|a| a.to_string()));
    let argv = proxy_argv(&drainpipe, proxy_args, &server);
    let mut command = command(&argv);
    command.env("TMPDIR", tmp);
    Some(start_session(command, limited(16 << 20)).await)
}

/// The text the tests cut: numbered lines of mixed widths and escapes.
fn lines_text(bytes: usize) -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < bytes {
        text.push_str(&format!("line {i}: «ünïcødé» \"q\" \\ tab\t😀 end\n"));
        i += 1;
    }
    text
}

/// Calls `echo` with `text` (its content text is the arguments' JSON, its
/// `structuredContent.text` the text itself); the result.
async fn echo(session: &Session, text: &str) -> Value {
    within(
        30,
        "echo through the proxy",
        tool(session, "echo", json!({"text": text}), opts(25)),
    )
    .await
    .expect("a condensed result")
    .result
}

/// Calls `name` with `arguments`; the response, however large.
async fn tool_call(
    session: &Session,
    name: &str,
    arguments: Value,
) -> drainpipe_host::session::Response {
    tool(session, name, arguments, opts(25))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The link of the value at `name` in a condensed result.
fn link(result: &Value, name: &str) -> Value {
    result["content"]
        .as_array()
        .expect("content")
        .iter()
        .find(|b| b["type"] == "resource_link" && b["name"] == name)
        .unwrap_or_else(|| panic!("no link named {name}: {result}"))
        .clone()
}

/// The tools the proxy lists.
async fn list_tools(session: &Session) -> Vec<Value> {
    let tools = within(
        10,
        "tools/list",
        session.call("tools/list", json!({}), opts(5)),
    )
    .await
    .expect("tools/list");
    tools.result["tools"].as_array().expect("tools").clone()
}

/// A condensed result (with its notice) that links nothing.
fn assert_condensed_without_links(result: &Value) {
    let content = result["content"].as_array().expect("content");
    assert!(
        !content.iter().any(|b| b["type"] == "resource_link"),
        "{result}"
    );
    assert!(
        content.iter().any(|b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("[drainpipe]"))
        }),
        "{result}"
    );
}

async fn read_tool(session: &Session, arguments: Value) -> Value {
    within(
        20,
        "drainpipe_read",
        tool(session, "drainpipe_read", arguments, opts(15)),
    )
    .await
    .expect("a tool result")
    .result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_value_is_linked_paged_ranged_and_searched() {
    let tmp = TempDir::new("read");
    let Some(session) = proxied(&["--clip", "64KiB", "--metrics", "none"], &tmp.0).await else {
        return;
    };
    // The handshake announces resources; tools/list has the read tool.
    let init = within(
        10,
        "initialize",
        session.call("initialize", initialize_params(), opts(5)),
    )
    .await
    .expect("initialize");
    assert!(
        init.result["capabilities"]["resources"].is_object(),
        "{}",
        init.result
    );
    let tools = list_tools(&session).await;
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(
        names.contains(&"drainpipe_read") && names.contains(&"echo"),
        "{names:?}"
    );

    let text = lines_text(3 << 20);
    let result = echo(&session, &text).await;
    let link = link(&result, "structuredContent/text");
    assert_eq!(link["size"], json!(text.len()));
    assert_eq!(link["mimeType"], "text/plain");
    let uri = link["uri"].as_str().unwrap().to_string();
    assert!(uri.starts_with("drainpipe://result/"), "{uri}");

    // Pages: the whole text, byte for byte.
    let (all, pages) = page_through(&session, &uri, 64 << 10).await;
    assert!(
        all == text.as_bytes(),
        "paged text differs ({} of {} bytes)",
        all.len(),
        text.len()
    );
    assert!(pages >= text.len() / (64 << 10), "{pages} pages");

    // An exact range, and one starting inside a character (moved back).
    let at = text.find("line 5000:").unwrap();
    let range = read_tool(&session, json!({"uri": uri, "offset": at, "length": 1000})).await;
    assert_eq!(range["content"][0]["text"], json!(&text[at..at + 1000]));
    assert_eq!(range["content"].as_array().unwrap().len(), 1, "{range}");
    assert_eq!(
        range["_meta"]["io.drainpipe/range"],
        json!({"offset": at, "length": 1000, "size": text.len()})
    );
    let smile = text[at..].find('😀').unwrap() + at;
    let inside = read_tool(
        &session,
        json!({"uri": uri, "offset": smile + 2, "length": 10}),
    )
    .await;
    assert_eq!(
        inside["_meta"]["io.drainpipe/range"]["offset"],
        json!(smile)
    );
    assert!(
        inside["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with('😀'),
        "{inside}"
    );
    // A range over the budget is shortened, and says so.
    let long = read_tool(
        &session,
        json!({"uri": uri, "offset": 0, "length": 1 << 20}),
    )
    .await;
    let kept = long["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(kept) && kept.len() < 64 << 10,
        "{} bytes",
        kept.len()
    );
    assert!(
        long["content"][1]["text"]
            .as_str()
            .unwrap()
            .contains("shortened"),
        "{long}"
    );

    // A pattern: the matching line, at its offset.
    let found = read_tool(&session, json!({"uri": uri, "pattern": "^line 4242:"})).await;
    let listed = found["content"][0]["text"].as_str().unwrap();
    let expected = text.find("line 4242:").unwrap();
    assert!(
        listed.starts_with(&format!("{expected}: line 4242:")),
        "{listed}"
    );
    assert_eq!(listed.lines().count(), 1, "{listed}");
    // Every line matches: as many as fit, then where to go on.
    let many = read_tool(&session, json!({"uri": uri, "pattern": "end$"})).await;
    let many = many["content"][0]["text"].as_str().unwrap();
    assert!(
        many.contains("[drainpipe] more matches after byte"),
        "{}",
        &many[many.len().saturating_sub(300)..]
    );
    // A bad pattern and an unknown URI are tool errors; a read still works.
    let bad = read_tool(&session, json!({"uri": uri, "pattern": "("})).await;
    assert_eq!(bad["isError"], json!(true), "{bad}");
    let unknown = read_tool(&session, json!({"uri": "drainpipe://result/0-0/9"})).await;
    assert_eq!(unknown["isError"], json!(true), "{unknown}");
    match read_resource(&session, "drainpipe://result/0-0/9").await {
        Err(CallError::JsonRpc { code, .. }) => assert_eq!(code, -32002),
        other => panic!("expected resource not found, got {other:?}"),
    }
    fixture_echo_quickly(&session, "after reading spilled values").await;
    shutdown_clean(&session).await;
}

/// The whole of the value at `uri`, read range by range with
/// `drainpipe_read` (as an agent without `resources/read` would).
async fn read_whole_with_tool(session: &Session, uri: &str) -> Vec<u8> {
    let mut all = Vec::new();
    loop {
        let range = read_tool(session, json!({"uri": uri, "offset": all.len()})).await;
        assert_ne!(range["isError"], json!(true), "{range}");
        let text = range["content"][0]["text"].as_str().expect("text");
        let meta = &range["_meta"]["io.drainpipe/range"];
        assert_eq!(meta["offset"], json!(all.len()), "{meta}");
        assert!(!text.is_empty(), "a range moves on: {meta}");
        all.extend_from_slice(text.as_bytes());
        if all.len() as u64 >= meta["size"].as_u64().expect("size") {
            return all;
        }
        assert!(all.len() < 64 << 20, "reading ends");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_array_reads_back_whole_one_element_a_line() {
    let tmp = TempDir::new("array");
    let Some(session) = proxied(&["--clip", "64KiB", "--metrics", "none"], &tmp.0).await else {
        return;
    };
    // A search result as structured content: 20,000 matches, 2 MB.
    let matches: Vec<Value> = (0..20_000)
        .map(|i| json!({"path": format!("src/dir{}/file{i}.rs", i % 97), "line": i, "text": format!("let needle_{i} = \"«{i}»\";")}))
        .collect();
    let result = within(
        30,
        "echo a search result",
        tool(&session, "echo", json!({"matches": matches}), opts(25)),
    )
    .await
    .expect("a condensed result")
    .result;
    let kept = result["structuredContent"]["matches"]
        .as_array()
        .expect("the matches kept");
    let link = result["content"]
        .as_array()
        .expect("content")
        .iter()
        .find(|b| {
            b["type"] == "resource_link"
                && b["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("structuredContent/matches from item "))
        })
        .unwrap_or_else(|| panic!("no link for the matches left out: {result}"))
        .clone();
    assert_eq!(link["mimeType"], "application/json");
    let first: usize = link["name"].as_str().unwrap()
        ["structuredContent/matches from item ".len()..]
        .parse()
        .expect("the first item linked");
    assert!(first <= kept.len() && first < matches.len(), "{first}");
    let uri = link["uri"].as_str().unwrap().to_string();

    // Read back whole with the tool: the matches left out, as JSON.
    let rest = read_whole_with_tool(&session, &uri).await;
    assert_eq!(link["size"], json!(rest.len()));
    let rest_value: Vec<Value> = serde_json::from_slice(&rest).expect("the rest is a JSON array");
    assert_eq!(&kept[..first], &matches[..first]);
    // Under `--keep ends` (the default) the last matches are kept too.
    let last = kept.len() - first;
    assert!(last > 0, "no last matches kept");
    assert_eq!(&kept[first..], &matches[matches.len() - last..]);
    assert!(
        rest_value == matches[first..],
        "the rest differs from the original"
    );
    // One element a line: a pattern finds one match as one line.
    let wanted = matches.len() - 3;
    let found = read_tool(
        &session,
        json!({"uri": uri, "pattern": format!("\"line\":{wanted},")}),
    )
    .await;
    let listed = found["content"][0]["text"].as_str().unwrap();
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let (_, line) = listed.split_once(": ").expect("offset: line");
    let element: Value = serde_json::from_str(line.trim_end().trim_end_matches(','))
        .unwrap_or_else(|e| panic!("{e}: {listed}"));
    assert_eq!(element, matches[wanted]);

    // Many blocks: the blocks left out are linked the same way.
    let blocks = tool_call(
        &session,
        "many_blocks",
        json!({"count": 20_000, "block_bytes": 40}),
    )
    .await
    .result;
    let content = blocks["content"].as_array().expect("content");
    let link = content
        .iter()
        .find(|b| {
            b["type"] == "resource_link"
                && b["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("content from item "))
        })
        .unwrap_or_else(|| panic!("no link for the blocks left out: {blocks}"));
    let first: usize = link["name"].as_str().unwrap()["content from item ".len()..]
        .parse()
        .expect("the first block linked");
    let rest = read_whole_with_tool(&session, link["uri"].as_str().unwrap()).await;
    let rest: Vec<Value> = serde_json::from_slice(&rest).expect("JSON");
    assert_eq!(first + rest.len(), 20_000);
    let block = "b".repeat(40);
    for (n, got) in rest.iter().enumerate() {
        assert_eq!(got["text"], json!(format!("{}:{block}", first + n)));
    }
    // The blocks kept are the ones before.
    for (n, kept) in content.iter().take(first).enumerate() {
        assert_eq!(kept["text"], json!(format!("{n}:{block}")));
    }
    fixture_echo_quickly(&session, "after reading spilled arrays").await;
    shutdown_clean(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_left_out_image_is_kept_as_bytes_and_read_back_as_base64() {
    use base64::Engine as _;
    let base64 = base64::engine::general_purpose::STANDARD;
    let tmp = TempDir::new("image");
    let Some(session) = proxied(&["--clip", "64KiB", "--metrics", "none"], &tmp.0).await else {
        return;
    };
    let size = 300_000usize;
    let original: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
    let result = within(
        20,
        "image",
        tool(&session, "image", json!({"bytes": size}), opts(15)),
    )
    .await
    .expect("a condensed result")
    .result;
    let link = link(&result, "content/0/data");
    assert_eq!(link["mimeType"], "image/png");
    assert_eq!(link["size"], json!(size));
    let uri = link["uri"].as_str().unwrap().to_string();
    // Pages of base64 blobs, within the budget, decoding to the bytes.
    let mut all = Vec::new();
    let mut next = Some(uri.clone());
    while let Some(at) = next {
        let page = read_resource(&session, &at).await.expect("a page");
        assert!(serde_json::to_vec(&page).unwrap().len() < 64 << 10);
        assert_eq!(page["contents"][0]["mimeType"], "image/png");
        let blob = page["contents"][0]["blob"].as_str().expect("a blob");
        all.extend(base64.decode(blob).expect("base64"));
        next = page["_meta"]["io.drainpipe/next"]
            .as_str()
            .map(str::to_string);
    }
    assert!(
        all == original,
        "paged bytes differ ({} of {size})",
        all.len()
    );
    // A byte range, as an embedded resource.
    let range = read_tool(
        &session,
        json!({"uri": uri, "offset": 1000, "length": 5000}),
    )
    .await;
    let blob = range["content"][0]["resource"]["blob"]
        .as_str()
        .expect("a blob");
    assert_eq!(base64.decode(blob).unwrap(), &original[1000..6000]);
    // A pattern needs text.
    let pattern = read_tool(&session, json!({"uri": uri, "pattern": "x"})).await;
    assert_eq!(pattern["isError"], json!(true), "{pattern}");
    shutdown_clean(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quota_evicts_the_oldest_first_and_says_so() {
    let tmp = TempDir::new("quota");
    let Some(session) = proxied(
        &[
            "--clip",
            "64KiB",
            "--spill-max",
            "1MiB",
            "--metrics",
            "none",
        ],
        &tmp.0,
    )
    .await
    else {
        return;
    };
    // Each call spills one value of 400 KB (`structuredContent.blob`).
    let mut uris = Vec::new();
    for _ in 0..3 {
        let result = within(
            20,
            "huge_field",
            tool(&session, "huge_field", json!({"bytes": 400_000}), opts(15)),
        )
        .await
        .expect("a condensed result")
        .result;
        let link = link(&result, "structuredContent/blob");
        assert_eq!(link["size"], json!(400_000));
        uris.push(link["uri"].as_str().unwrap().to_string());
    }
    // 1.2 MB > 1 MiB: the first is gone, the others readable.
    match read_resource(&session, &uris[0]).await {
        Err(CallError::JsonRpc { code, message, .. }) => {
            assert_eq!(code, -32002);
            assert!(message.contains("evicted"), "{message}");
        }
        other => panic!("expected the first value evicted, got {other:?}"),
    }
    let evicted = read_tool(&session, json!({"uri": uris[0]})).await;
    assert_eq!(evicted["isError"], json!(true));
    assert!(
        evicted["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("evicted"),
        "{evicted}"
    );
    for uri in &uris[1..] {
        let page = read_resource(&session, uri).await.expect("still kept");
        assert!(
            page["contents"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("zzz")
        );
    }
    // On disk: never more than the quota.
    let dirs = tmp.spill_dirs();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let on_disk: u64 = std::fs::read_dir(&dirs[0])
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(on_disk <= 1 << 20, "{on_disk} bytes on disk");
    // A value larger than the quota on its own is not kept: no link, and
    // the result is still condensed and honest.
    let result = within(
        20,
        "huge_field",
        tool(&session, "huge_field", json!({"bytes": 2 << 20}), opts(15)),
    )
    .await
    .expect("a condensed result")
    .result;
    assert_condensed_without_links(&result);
    // ... and it evicted nothing on its way to failing.
    for uri in &uris[1..] {
        read_resource(&session, uri)
            .await
            .expect("still kept after the refused value");
    }
    // Two values of one result, together over the quota: the first is
    // kept and linked, the second refused; values not linked yet never
    // push out kept ones, so only the quota's oldest go for the new one.
    let text = lines_text(700_000);
    let result = echo(&session, &text).await;
    let links: Vec<&Value> = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "resource_link")
        .collect();
    assert_eq!(links.len(), 1, "{links:?}");
    let page = read_resource(&session, links[0]["uri"].as_str().unwrap())
        .await
        .expect("the linked one is readable");
    assert!(page["contents"][0]["text"].is_string());
    fixture_echo_quickly(&session, "after eviction").await;
    shutdown_clean(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spill_directory_is_private_and_gone_after_exit() {
    for ending in ["stdin closed", "SIGTERM"] {
        let tmp = TempDir::new(if ending == "SIGTERM" { "term" } else { "close" });
        let Some(session) = proxied(&["--clip", "64KiB", "--metrics", "none"], &tmp.0).await else {
            return;
        };
        let result = echo(&session, &lines_text(300_000)).await;
        link(&result, "structuredContent/text");
        let dirs = tmp.spill_dirs();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dirs[0]), 0o700, "{ending}");
        let files: Vec<PathBuf> = std::fs::read_dir(&dirs[0])
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(!files.is_empty());
        for file in &files {
            assert_eq!(mode(file), 0o600, "{}", file.display());
        }
        if ending == "SIGTERM" {
            procs::signal(session.pid(), Signal::SIGTERM);
        }
        shutdown_clean(&session).await;
        wait_until(10, "the spill directory is removed", || !dirs[0].exists()).await;
        assert!(tmp.spill_dirs().is_empty(), "{ending}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_proxies_never_read_each_others_values() {
    let (tmp_a, tmp_b) = (TempDir::new("a"), TempDir::new("b"));
    let Some(a) = proxied(&["--clip", "64KiB", "--metrics", "none"], &tmp_a.0).await else {
        return;
    };
    let Some(b) = proxied(&["--clip", "64KiB", "--metrics", "none"], &tmp_b.0).await else {
        return;
    };
    let (text_a, text_b) = (
        lines_text(200_000),
        lines_text(200_000).replace("line", "LINE"),
    );
    let uri_a = link(&echo(&a, &text_a).await, "structuredContent/text")["uri"]
        .as_str()
        .unwrap()
        .to_string();
    let uri_b = link(&echo(&b, &text_b).await, "structuredContent/text")["uri"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(uri_a, uri_b);
    for (session, foreign) in [(&a, &uri_b), (&b, &uri_a)] {
        match read_resource(session, foreign).await {
            Err(CallError::JsonRpc { code, .. }) => assert_eq!(code, -32002),
            other => panic!("a foreign URI must be unknown, got {other:?}"),
        }
    }
    let own = read_resource(&a, &uri_a).await.expect("its own value");
    assert!(text_a.starts_with(own["contents"][0]["text"].as_str().unwrap()));
    shutdown_clean(&a).await;
    shutdown_clean(&b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_reads_get_bounded_answers_and_searches_move_on() {
    let tmp = TempDir::new("hostile");
    let Some(session) = proxied(&["--clip", "8KiB", "--metrics", "none"], &tmp.0).await else {
        return;
    };
    // Lines of control characters: each one escapes to six bytes, so one
    // line shown whole does not fit the budget. The first match is then
    // shortened, and the search says where to go on, past it.
    let line = "\u{1b}".repeat(2000);
    let text = format!("{line}\n").repeat(20);
    let result = echo(&session, &text).await;
    let uri = link(&result, "structuredContent/text")["uri"]
        .as_str()
        .unwrap()
        .to_string();
    let mut offset = 0u64;
    for round in 0..3 {
        let found = read_tool(
            &session,
            json!({"uri": uri, "pattern": "\\x1b", "offset": offset}),
        )
        .await;
        let listed = found["content"][0]["text"].as_str().unwrap();
        assert!(
            listed.starts_with(&format!("{offset}: ")),
            "round {round}: {}",
            &listed[..80.min(listed.len())]
        );
        let next = found["_meta"]["io.drainpipe/range"]["next"]
            .as_u64()
            .expect("more to come");
        assert!(
            next > offset,
            "round {round}: the search moves on ({next} after {offset})"
        );
        offset = next;
    }
    // A URI of any length gets a short error, within the budget.
    let long = format!("{uri}?offset={}", "0".repeat(100_000));
    match read_resource(&session, &long).await {
        Err(CallError::JsonRpc { code, message, .. }) => {
            assert_eq!(code, -32002);
            assert!(message.len() < 1000, "{} bytes", message.len());
        }
        other => panic!("expected an error, got {other:?}"),
    }
    let named = read_tool(
        &session,
        json!({"uri": format!("drainpipe://result/{}", "x".repeat(100_000))}),
    )
    .await;
    assert_eq!(named["isError"], json!(true));
    assert!(named["content"][0]["text"].as_str().unwrap().len() < 1000);
    shutdown_clean(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_proxy_announces_it_serves_and_old_revisions_get_no_links() {
    let tmp = TempDir::new("handshake");
    let Some(session) = proxied(&["--clip", "64KiB", "--metrics", "none"], &tmp.0).await else {
        return;
    };
    // The fixture announces no resources; the proxy adds the capability
    // (for its links) and so answers every resource method itself: none
    // reaches a server that never announced them (it would answer -32601).
    let mut params = initialize_params();
    params["protocolVersion"] = json!("2025-03-26");
    let init = within(
        10,
        "initialize",
        session.call("initialize", params, opts(5)),
    )
    .await
    .expect("initialize");
    assert_eq!(init.result["protocolVersion"], "2025-03-26");
    assert!(init.result["capabilities"]["resources"].is_object());
    let call = |method: &'static str, params: Value| {
        let session = &session;
        async move { within(10, method, session.call(method, params, opts(5))).await }
    };
    let listed = call("resources/list", json!({}))
        .await
        .expect("resources/list");
    assert_eq!(listed.result, json!({"resources": []}));
    let templates = call("resources/templates/list", json!({}))
        .await
        .expect("resources/templates/list");
    assert_eq!(templates.result, json!({"resourceTemplates": []}));
    match call("resources/subscribe", json!({"uri": "file:///x"})).await {
        Err(CallError::JsonRpc { code, message, .. }) => {
            assert_eq!(code, -32601);
            assert!(
                message.contains("subscriptions are not offered"),
                "{message}"
            );
        }
        other => panic!("expected the proxy's refusal, got {other:?}"),
    }
    match call("resources/read", json!({"uri": "file:///etc/hostname"})).await {
        Err(CallError::JsonRpc { code, message, .. }) => {
            assert_eq!(code, -32002, "{message}");
            assert!(message.contains("not a drainpipe result URI"), "{message}");
        }
        other => panic!("expected the proxy's not found, got {other:?}"),
    }
    // 2025-03-26 has no resource_link: a cut result is condensed, with
    // no link and nothing kept.
    let result = echo(&session, &lines_text(300_000)).await;
    assert_condensed_without_links(&result);
    let dirs = tmp.spill_dirs();
    let kept: usize = dirs
        .iter()
        .map(|d| {
            std::fs::read_dir(d)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name() != ".lock")
                .count()
        })
        .sum();
    assert_eq!(kept, 0, "nothing kept");
    shutdown_clean(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_list_pages_through_every_value_kept() {
    let tmp = TempDir::new("list");
    let Some(session) = proxied(&["--clip", "8KiB", "--metrics", "none"], &tmp.0).await else {
        return;
    };
    within(
        10,
        "initialize",
        session.call("initialize", initialize_params(), opts(5)),
    )
    .await
    .expect("initialize");
    // Each echo cuts two values (the arguments' JSON in content, the text
    // in structuredContent): more than one page of an 8 KiB budget.
    let mut linked = Vec::new();
    for i in 0..40 {
        let result = echo(&session, &format!("{i} {}", lines_text(20_000))).await;
        for block in result["content"].as_array().expect("content") {
            if block["type"] == "resource_link" {
                linked.push(block["uri"].as_str().unwrap().to_string());
            }
        }
    }
    linked.sort();
    linked.dedup();
    assert!(linked.len() >= 80, "{} values linked", linked.len());
    let mut listed = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = within(
            10,
            "resources/list",
            session.call("resources/list", params, opts(5)),
        )
        .await
        .expect("resources/list");
        pages += 1;
        assert!(pages <= 100, "resources/list does not end");
        for resource in page.result["resources"].as_array().expect("resources") {
            assert_eq!(resource["mimeType"], "text/plain", "{resource}");
            assert!(resource["size"].as_u64().unwrap() > 0, "{resource}");
            listed.push(resource["uri"].as_str().unwrap().to_string());
        }
        match page.result.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert!(pages >= 2, "{pages} page(s) for {} values", listed.len());
    let mut sorted = listed.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), listed.len(), "a value listed twice");
    assert_eq!(
        sorted, linked,
        "every linked value, and only those, is listed"
    );
    match within(
        10,
        "resources/list",
        session.call("resources/list", json!({"cursor": "not ours"}), opts(5)),
    )
    .await
    {
        Err(CallError::JsonRpc { code, .. }) => assert_eq!(code, -32602),
        other => panic!("a foreign cursor is invalid params, got {other:?}"),
    }
    shutdown_clean(&session).await;
}

/// A result over the budget comes back using at least nine tenths of it,
/// with links and without (`--spill-max 0`), however many values are cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_condensed_result_spends_the_budget() {
    const BUDGET: usize = 256 << 10;
    let text = lines_text(1 << 20);
    for extra in [&[][..], &["--spill-max", "0"]] {
        let tmp = TempDir::new("spend");
        let mut args = vec!["--clip", "256KiB", "--metrics", "none"];
        args.extend_from_slice(extra);
        let Some(session) = proxied(&args, &tmp.0).await else {
            return;
        };
        within(
            10,
            "initialize",
            session.call("initialize", initialize_params(), opts(5)),
        )
        .await
        .expect("initialize");
        for (tool, arguments, cut) in [
            // One text of 1 MiB.
            ("sized", json!({"bytes": 1 << 20}), 1),
            // A short text and a 1 MiB string in structuredContent.
            ("huge_field", json!({"bytes": 1 << 20}), 1),
            // Two long texts: the arguments' JSON, and the text itself.
            ("echo", json!({"text": text}), 2),
        ] {
            let what = format!("{tool} through --clip 256KiB {extra:?}");
            let response = within(30, &what, tool_call(&session, tool, arguments)).await;
            let marker = &response.result["_meta"]["io.drainpipe/truncated"];
            assert_eq!(marker["cutCount"], json!(cut), "{what}: {marker}");
            assert!(
                response.wire_bytes <= BUDGET && response.wire_bytes * 10 >= BUDGET * 9,
                "{what}: {} bytes of a {BUDGET}-byte budget",
                response.wire_bytes
            );
            figure(
                &what,
                json!({"bytes": response.wire_bytes, "budget": BUDGET}),
            );
        }
        shutdown_clean(&session).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spill_directory_left_by_a_killed_proxy_is_removed_by_the_next() {
    let tmp = TempDir::new("stale");
    let Some(first) = proxied(&["--clip", "64KiB", "--metrics", "none"], &tmp.0).await else {
        return;
    };
    link(
        &echo(&first, &lines_text(200_000)).await,
        "structuredContent/text",
    );
    let left = tmp.spill_dirs();
    assert_eq!(left.len(), 1);
    // SIGKILL: the proxy cannot clean up.
    procs::kill_pid(first.pid());
    wait_until(10, "the proxy is gone", || {
        procs::stat(first.pid()).is_none()
    })
    .await;
    assert!(left[0].exists(), "left behind by SIGKILL");
    drop(first);
    let Some(second) = proxied(&["--clip", "64KiB", "--metrics", "none"], &tmp.0).await else {
        return;
    };
    link(
        &echo(&second, &lines_text(200_000)).await,
        "structuredContent/text",
    );
    assert!(!left[0].exists(), "the stale directory was removed");
    assert_eq!(tmp.spill_dirs().len(), 1, "only the live one");
    shutdown_clean(&second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_tool_named_drainpipe_read_is_left_alone() {
    let tmp = TempDir::new("own-tool");
    let Some(session) = proxied_fixture(
        &["--clip", "64KiB", "--metrics", "none"],
        &["--own-read-tool"],
        &tmp.0,
    )
    .await
    else {
        return;
    };
    let tools = list_tools(&session).await;
    let named: Vec<&Value> = tools
        .iter()
        .filter(|t| t["name"] == "drainpipe_read")
        .collect();
    assert_eq!(named.len(), 1, "one tool of that name: {named:?}");
    assert!(
        named[0]["description"]
            .as_str()
            .unwrap()
            .contains("fixture's own")
    );
    // Calls to it reach the server.
    let answer = read_tool(&session, json!({"uri": "drainpipe://result/x-0/0"})).await;
    assert!(
        answer["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("the fixture's own drainpipe_read"),
        "{answer}"
    );
    // Cut values are still linked and read with resources/read; the notice
    // does not send the agent to a tool that is not the proxy's.
    let text = lines_text(300_000);
    let result = echo(&session, &text).await;
    let uri = link(&result, "structuredContent/text")["uri"]
        .as_str()
        .unwrap()
        .to_string();
    let notice = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|b| b["text"].as_str().filter(|t| t.starts_with("[drainpipe]")))
        .expect("the notice");
    assert!(
        notice.contains("resources/read") && !notice.contains("drainpipe_read"),
        "{notice}"
    );
    let (all, _) = page_through(&session, &uri, 64 << 10).await;
    assert!(all == text.as_bytes());
    shutdown_clean(&session).await;
}
