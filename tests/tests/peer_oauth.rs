//! Guarantee: `drainpipe proxy --url … --oauth` authorizes as MCP
//! specifies, against the official TypeScript SDK's OAuth example server
//! (`simpleStreamableHttp.js --oauth --oauth-strict`: its demo
//! authorization server on a second port, which approves every request at
//! once and, strict, accepts only tokens issued for this server's
//! `resource`). The official TypeScript client, through the proxy:
//!
//! 1. first run, nothing stored: the server's `401` starts discovery,
//!    dynamic client registration and the authorization code flow with
//!    PKCE; the URL the proxy prints is approved by a plain HTTP GET (the
//!    browser's part: the demo redirects it to the proxy's loopback
//!    callback), the code is exchanged, and the tool call works;
//! 2. the tokens are stored in a 0600 file in a 0700 directory;
//! 3. second run: the stored token is used, with no new authorization;
//! 4. no token value appears on either run's stderr.
//!
//! Needs `bash tests/peers/setup.sh`; see `drainpipe_release::peers`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use drainpipe_release::peers::{self, NodePeer, run_client};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// The bound of each client run; the client gives up on its own earlier.
const RUN_SECS: u64 = 90;
const CLIENT_DEADLINE_SECS: &str = "60";

const EXAMPLE: &str =
    "node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js";

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

/// The example server with its authorization server, killed on drop.
struct ExampleServer {
    child: tokio::process::Child,
    url: String,
}

impl ExampleServer {
    async fn start(node: &NodePeer) -> ExampleServer {
        let (mcp, auth) = (free_port(), free_port());
        let mut command =
            tokio::process::Command::from(node.script(EXAMPLE, &["--oauth", "--oauth-strict"]));
        command
            .env("MCP_PORT", mcp.to_string())
            .env("MCP_AUTH_PORT", auth.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("the example server starts");
        // Both servers say when they listen.
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut listening = 0;
        tokio::time::timeout(Duration::from_secs(30), async {
            while listening < 2 {
                match lines.next_line().await {
                    Ok(Some(line)) if line.contains("listening on port") => listening += 1,
                    Ok(Some(_)) => {}
                    _ => panic!("the example server exited before listening"),
                }
            }
        })
        .await
        .expect("the example server listens within 30 s");
        // Its later output is drained, so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        ExampleServer {
            child,
            // The name the server's own metadata uses for itself.
            url: format!("http://localhost:{mcp}/mcp"),
        }
    }
}

impl Drop for ExampleServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The client's command line through `drainpipe proxy --url … --oauth`.
fn client(node: &NodePeer, drainpipe: &Path, url: &str, store: &Path) -> std::process::Command {
    let drainpipe = drainpipe.display().to_string();
    let store = store.display().to_string();
    let mut command = node.script(
        "remote-client.mjs",
        &[
            "tool",
            "--tool",
            "greet",
            "--args",
            r#"{"name":"Ada"}"#,
            "--timeout",
            CLIENT_DEADLINE_SECS,
            "--",
            &drainpipe,
            "proxy",
            "--url",
            url,
            "--oauth",
            "--oauth-dir",
            &store,
            "--metrics",
            "none",
        ],
    );
    command.env("DRAINPIPE_NO_BROWSER", "1");
    command
}

/// Runs the client while watching its stderr (the proxy's inherits it)
/// for the URL to approve, which is then fetched as a browser would: the
/// authorization server redirects to the proxy's loopback callback.
/// Returns the client's stdout summary and its whole stderr.
async fn first_run(
    node: &NodePeer,
    mut client: std::process::Command,
) -> (serde_json::Value, String) {
    client
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut client = tokio::process::Command::from(client);
    client.kill_on_drop(true);
    let mut child = client.spawn().expect("the client starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let run = async {
        let mut stderr = String::new();
        let mut approved = false;
        while let Ok(Some(line)) = lines.next_line().await {
            stderr.push_str(&line);
            stderr.push('\n');
            if let Some(url) = line
                .split_whitespace()
                .find(|word| word.starts_with("http://") && word.contains("/authorize?"))
            {
                assert!(!approved, "a second authorization was asked for:\n{stderr}");
                approved = true;
                approve(node, url).await;
            }
        }
        let mut out = String::new();
        stdout.read_to_string(&mut out).await.expect("stdout");
        let status = child.wait().await.expect("the client's status");
        (status, out, stderr, approved)
    };
    let (status, out, stderr, approved) = tokio::time::timeout(Duration::from_secs(RUN_SECS), run)
        .await
        .expect("the first run ends in time");
    let summary: serde_json::Value = out
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or(serde_json::Value::Null);
    assert!(approved, "the proxy printed no URL to approve:\n{stderr}");
    assert!(
        status.success() && summary["ok"] == true,
        "the first run failed ({status}):\nsummary: {summary}\nstderr:\n{stderr}"
    );
    (summary, stderr)
}

/// `GET url`, following redirects, as a browser that approves would.
async fn approve(node: &NodePeer, url: &str) {
    let script = "fetch(process.argv[1]).then(async r => { const t = await r.text(); \
                  if (!r.ok) { console.error(r.status, t); process.exit(1); } })\
                  .catch(e => { console.error(String(e)); process.exit(1); })";
    let mut command = std::process::Command::new(&node.node);
    command.arg("-e").arg(script).arg(url);
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::from(command).output(),
    )
    .await
    .expect("approving ends in time")
    .expect("node runs");
    assert!(
        output.status.success(),
        "approving the authorization failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The one stored record, its path and its JSON.
fn stored(store: &Path) -> (PathBuf, serde_json::Value) {
    // Beside each record, the `.lock` file the proxies sharing it renew
    // under; empty.
    let files: Vec<PathBuf> = std::fs::read_dir(store)
        .expect("the store exists")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(files.len(), 1, "one record per server: {files:?}");
    let record = serde_json::from_slice(&std::fs::read(&files[0]).expect("readable"))
        .expect("the record is JSON");
    (files[0].clone(), record)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_against_the_official_example_server() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let server = ExampleServer::start(&node).await;
    let store = std::env::temp_dir()
        .join(format!("drainpipe-oauth-test-{}", std::process::id()))
        .join("oauth");
    let _ = std::fs::remove_dir_all(store.parent().unwrap());

    // 1. Nothing stored: the whole flow, then the call.
    let (summary, first_stderr) =
        first_run(&node, client(&node, &drainpipe, &server.url, &store)).await;
    assert_eq!(summary["first"]["text"], "Hello, Ada!", "{summary}");

    // 2. Stored private to the user.
    let (file, record) = stored(&store);
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store), 0o700, "the store's directory");
        assert_eq!(mode(&file), 0o600, "the token file");
    }
    assert_eq!(record["server"], server.url.as_str());
    let access_token = record["tokens"]["access_token"]
        .as_str()
        .expect("an access token is stored")
        .to_string();
    assert!(access_token.len() >= 16);

    // 3. A second run: the stored token, no new authorization.
    let second = run_client(
        client(&node, &drainpipe, &server.url, &store),
        RUN_SECS,
        "the second run",
    )
    .await;
    assert_eq!(second.summary["first"]["text"], "Hello, Ada!");
    assert!(
        !second.stderr.contains("/authorize?") && !second.stderr.contains("authorized for"),
        "the second run authorized again:\n{}",
        second.stderr
    );
    assert_eq!(
        stored(&store).1["tokens"]["access_token"],
        access_token.as_str(),
        "the second run kept the token"
    );
    second.assert_nothing_left();

    // 4. No token value on stderr, either run.
    for (run, stderr) in [("first", &first_stderr), ("second", &second.stderr)] {
        assert!(
            !stderr.contains(&access_token),
            "the {run} run's stderr shows the access token"
        );
    }
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
}
