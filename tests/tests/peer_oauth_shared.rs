//! Guarantee: proxies that share one token store (two host windows, two
//! hosts, a client that starts its server twice) sign in once and keep
//! working against an authorization server that rotates refresh tokens and
//! expires access tokens every few seconds, as the large providers do.
//!
//! Eight `drainpipe proxy --url … --oauth-dir SHARED` start together in
//! front of `oauth-rotating-server.mjs` (the official TypeScript SDK's MCP
//! server; access tokens live 3 s, each refresh token is good once). Each
//! calls `echo` four times a second for a minute while a watcher reads the
//! token record every 20 ms. Then:
//!
//! 1. every call of every proxy answered with its own text;
//! 2. one authorization in all, one client registration, one code
//!    exchanged: the other seven waited for it and took its tokens;
//! 3. no refresh token was ever presented twice (a spent one is refused,
//!    and the refusal would cost the user a new authorization);
//! 4. the record was whole JSON with tokens at every read.
//!
//! Without the lock around renewing, or without reading the record afresh
//! under it, 2 and 3 fail within seconds. Needs `bash tests/peers/setup.sh`.

use std::path::Path;
use std::time::{Duration, Instant};

use drainpipe_host::session::SessionConfig;
use drainpipe_release::peers::{self, listen};
use drainpipe_release::{opts, start_session, tool, within};
use serde_json::json;

const PROXIES: usize = 8;
const RUN: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_millis(250);

/// The stats the server keeps, read once the run is over.
async fn stats(node: &peers::NodePeer, url: &str) -> serde_json::Value {
    let script = "fetch(process.argv[1]).then(r => r.text()).then(t => console.log(t))";
    let mut command = std::process::Command::new(&node.node);
    command.arg("-e").arg(script).arg(url);
    let output = within(
        30,
        "reading the server's stats",
        tokio::process::Command::from(command).output(),
    )
    .await
    .expect("node runs");
    serde_json::from_slice(&output.stdout).expect("the stats are JSON")
}

/// Reads the one record in `store` every 20 ms until `until`; panics on a
/// read that is not whole JSON with tokens (once one was written).
async fn watch_record(store: &Path, until: Instant) -> usize {
    let mut reads = 0;
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let Ok(entries) = std::fs::read_dir(store) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let bytes = std::fs::read(&path).expect("the record is readable");
            let record: serde_json::Value = serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("the record is not whole JSON ({e}) at read {reads}"));
            assert!(
                record["tokens"]["access_token"].is_string(),
                "the record has no tokens at read {reads}: {record}"
            );
            reads += 1;
        }
    }
    reads
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_proxies_share_one_sign_in_under_rotating_tokens() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let server = listen(
        node.script("oauth-rotating-server.mjs", &["--ttl", "3"]),
        "the rotating OAuth server",
    )
    .await;
    let url = server.url("/mcp");
    let dir = std::env::temp_dir().join(format!("drainpipe-oauth-shared-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = dir.join("oauth");
    let browser = format!(
        "{} {}",
        node.node.display(),
        node.dir.join("browser.mjs").display()
    );

    // Eight proxies at once: each one's `initialize` meets the 401.
    let starts = (0..PROXIES).map(|_| {
        let mut command = tokio::process::Command::new(&drainpipe);
        command
            .args(["proxy", "--metrics", "none", "--url", &url, "--oauth-dir"])
            .arg(&store)
            .env("BROWSER", &browser)
            .env_remove("DRAINPIPE_NO_BROWSER");
        start_session(command, SessionConfig::default())
    });
    let sessions = within(120, "eight proxies sign in and initialize", async {
        let mut sessions = Vec::new();
        let handles: Vec<_> = starts.map(tokio::spawn).collect();
        for handle in handles {
            sessions.push(handle.await.expect("a proxy starts"));
        }
        sessions
    })
    .await;

    let until = Instant::now() + RUN;
    let watcher = tokio::spawn({
        let store = store.clone();
        async move { watch_record(&store, until).await }
    });
    let mut callers = Vec::new();
    for (index, session) in sessions.into_iter().enumerate() {
        callers.push(tokio::spawn(async move {
            let mut calls = 0;
            while Instant::now() < until {
                let text = format!("proxy {index} call {calls}");
                let answer = tool(&session, "echo", json!({ "text": text }), opts(30))
                    .await
                    .unwrap_or_else(|e| {
                        panic!(
                            "proxy {index}, call {calls}: {e}\nits stderr:\n{}",
                            session.stderr().kept_text()
                        )
                    });
                assert_eq!(
                    answer.result["content"][0]["text"], text,
                    "proxy {index}, call {calls}: {}",
                    answer.result
                );
                calls += 1;
                tokio::time::sleep(EVERY).await;
            }
            session.shutdown().await;
            calls
        }));
    }
    let mut calls = 0;
    for caller in callers {
        calls += within(RUN.as_secs() + 60, "the calls end", caller)
            .await
            .expect("a caller");
    }
    let reads = watcher.await.expect("the watcher");
    let stats = stats(&node, &server.url("/stats")).await;
    eprintln!(
        "{calls} calls through {PROXIES} proxies, {reads} reads of the record, server: {stats}"
    );

    assert!(calls >= PROXIES * 100, "too few calls to judge: {calls}");
    assert_eq!(
        stats["calls"], calls as u64,
        "every call reached the server"
    );
    assert_eq!(
        stats["authorizations"], 1,
        "one authorization in all: {stats}"
    );
    assert_eq!(stats["registrations"], 1, "one registration: {stats}");
    assert_eq!(stats["code_exchanges"], 1, "one code exchanged: {stats}");
    assert_eq!(
        stats["refused_refreshes"], 0,
        "a spent refresh token was presented: {stats}"
    );
    assert!(
        stats["refreshes"].as_u64().unwrap_or(0) >= 10,
        "the tokens were refreshed as they expired: {stats}"
    );
    assert!(reads > 100, "the record was watched: {reads} reads");
    let _ = std::fs::remove_dir_all(&dir);
}
