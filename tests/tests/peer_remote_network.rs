//! Guarantee: `drainpipe proxy --url` works on the networks people have.
//! The proxy is a real one, proxy.py with basic authentication; the
//! servers are the official TypeScript SDK's (`http-server.mjs`, over TLS
//! with a private root where it says HTTPS); the host is the official
//! TypeScript SDK's client (`remote-client.mjs`). All of it on loopback:
//!
//! - an http:// server is reached through `HTTP_PROXY`, requests forwarded
//!   with the URL's credentials, and an https:// one through
//!   `HTTPS_PROXY`'s CONNECT tunnel, TLS (and HTTP/2) to the server inside
//!   it; the proxy's access log shows each;
//! - `NO_PROXY` sends a server around the proxy, and so does loopback
//!   unless `DRAINPIPE_PROXY_LOOPBACK=1`;
//! - a wrong proxy password fails the request with an error naming the
//!   proxy by host and port, the password nowhere in what drainpipe says;
//! - a private root in `SSL_CERT_DIR` is trusted, and a certificate there
//!   that does not parse is named on stderr instead of failing the rest;
//! - a server that accepts the connection and never finishes TLS fails the
//!   request within `--connect-timeout`, not `--idle-timeout`.
//!
//! drainpipe reaches loopback servers directly by default (a proxy
//! elsewhere could not reach them), so the tests that must go through the
//! proxy set `DRAINPIPE_PROXY_LOOPBACK=1`, as a debugging proxy on the same
//! machine needs: the proxy then sees what it would of a remote server.
//!
//! Needs `bash tests/peers/setup.sh` (proxy.py is in the Python peer's
//! venv); see `drainpipe_release::peers`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use drainpipe_release::peers::{self, Listening, listen, run_client};
use drainpipe_release::{procs, tls};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// The bound of a client run; the client gives up on its own earlier.
const RUN_SECS: u64 = 120;
const CLIENT_TIMEOUT_SECS: &str = "90";

/// The proxy's account; the password needs percent-encoding in a URL.
const PROXY_USER: &str = "drainpipe";
const PROXY_PASSWORD: &str = "s3cr@t-pr0xy";
const PROXY_PASSWORD_IN_URL: &str = "s3cr%40t-pr0xy";

/// Every variable that could send a request elsewhere than the test says:
/// cleared from what the runner's environment passes down.
const NETWORK_VARS: [&str; 11] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "DRAINPIPE_PROXY_LOOPBACK",
];

/// proxy.py on 127.0.0.1 and a free port, its access log in a file of its
/// own; its process group is killed when this is dropped.
struct HttpProxy {
    child: tokio::process::Child,
    port: u16,
    dir: PathBuf,
}

impl HttpProxy {
    /// Starts proxy.py (asking for `PROXY_USER`'s credentials when
    /// `authenticating`), waiting at most 30 s for its port.
    async fn start(name: &str, authenticating: bool) -> Option<HttpProxy> {
        let python = peers::gate("proxy.py (the Python peer)", peers::http_proxy())?;
        let dir = std::env::temp_dir().join(format!(
            "drainpipe-http-proxy-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the proxy's directory");
        let mut command = tokio::process::Command::new(&python.python);
        command
            .current_dir(&dir)
            .args(["-m", "proxy", "--hostname", "127.0.0.1", "--port", "0"])
            .arg("--port-file")
            .arg(dir.join("port"))
            .arg("--log-file")
            .arg(dir.join("log"))
            .args(["--num-workers", "1", "--num-acceptors", "1"])
            // Idle connections (the server's own GET stream) kept for the
            // whole run.
            .args(["--timeout", "120"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .process_group(0);
        if authenticating {
            command
                .arg("--basic-auth")
                .arg(format!("{PROXY_USER}:{PROXY_PASSWORD}"));
        }
        let child = command.spawn().expect("start proxy.py");
        let started = Instant::now();
        let port = loop {
            let written = std::fs::read_to_string(dir.join("port")).unwrap_or_default();
            if let Ok(port) = written.trim().parse::<u16>() {
                break port;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "proxy.py wrote no port within 30 s; its log:\n{}",
                std::fs::read_to_string(dir.join("log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        Some(HttpProxy { child, port, dir })
    }

    /// Its URL, with `password` for `PROXY_USER` (already percent-encoded)
    /// or no credentials.
    fn url(&self, password: Option<&str>) -> String {
        match password {
            Some(password) => format!("http://{PROXY_USER}:{password}@127.0.0.1:{}", self.port),
            None => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// How drainpipe names it in a message, after the variable's name.
    fn shown(&self, var: &str) -> String {
        format!("http://127.0.0.1:{} ({var})", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// Waits at most 10 s for an access-log line holding `needle`
    /// (proxy.py writes one when a connection closes); panics with the log
    /// if none comes.
    async fn wait_for_access(&self, needle: &str, what: &str) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if self.accessed(needle) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "{what}: the proxy's log has no request for {needle}:\n{}",
            self.log()
        );
    }

    /// Whether an access-log line holds `needle`.
    fn accessed(&self, needle: &str) -> bool {
        self.log()
            .lines()
            .any(|line| line.contains("access_log") && line.contains(needle))
    }
}

impl Drop for HttpProxy {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            procs::kill_group(pid);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `http-server.mjs` on loopback, plain or (with a root's certificate and
/// key) over TLS.
async fn mcp_server(tls: Option<&tls::PrivateRoot>) -> Option<Listening> {
    let node = peers::gate("the Node.js peer", peers::node())?;
    let mut args = vec!["--port", "0"];
    if let Some(root) = tls {
        args.extend(["--tls", &root.cert, &root.key]);
    }
    Some(listen(node.script("http-server.mjs", &args), "http-server.mjs").await)
}

/// `drainpipe proxy --url <url> <args>` as an argv.
fn drainpipe_proxy(url: &str, args: &[&str]) -> Option<Vec<String>> {
    peers::remote_proxy_argv(url, args)
}

/// Runs `remote-client.mjs echo` in front of `drainpipe proxy --url <url>`
/// with the network variables `env` (and no others); its stderr, which
/// holds the proxy's.
async fn echo_through(url: &str, env: &[(&str, String)], what: &str) -> String {
    let node = peers::node().expect("gated by the caller");
    let proxy = drainpipe_proxy(url, &[]).expect("gated by the caller");
    let mut argv: Vec<&str> = vec!["echo", "--timeout", CLIENT_TIMEOUT_SECS, "--"];
    argv.extend(proxy.iter().map(String::as_str));
    let mut client = node.script("remote-client.mjs", &argv);
    for var in NETWORK_VARS {
        client.env_remove(var);
    }
    for (var, value) in env {
        client.env(var, value);
    }
    let run = run_client(client, RUN_SECS, what).await;
    run.assert_nothing_left();
    assert_eq!(
        run.summary["echo"]["ok"],
        json!(true),
        "{what}: {}",
        run.summary
    );
    run.stderr
}

/// Starts `drainpipe proxy --url <url> <args>` with the network variables
/// `env`, sends `initialize`, and returns its answer, how long it took,
/// and what drainpipe wrote to stderr (after stdin is closed and it has
/// exited). Every wait is bounded.
async fn initialize_with(
    url: &str,
    args: &[&str],
    env: &[(&str, String)],
    what: &str,
) -> (serde_json::Value, Duration, String) {
    let argv = drainpipe_proxy(url, args).expect("gated by the caller");
    let mut command = peers::command(&argv);
    for var in NETWORK_VARS {
        command.env_remove(var);
    }
    for (var, value) in env {
        command.env(var, value);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: start drainpipe: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let initialize = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": drainpipe_release::initialize_params(),
    });
    let started = Instant::now();
    stdin
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .expect("write initialize");
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer to initialize within 60 s"))
        .expect("read drainpipe's stdout")
        .unwrap_or_else(|| panic!("{what}: drainpipe exited without answering"));
    let took = started.elapsed();
    drop(stdin);
    let mut stderr = String::new();
    let mut pipe = child.stderr.take().expect("stderr");
    let exited = tokio::time::timeout(Duration::from_secs(20), async {
        let _ = pipe.read_to_string(&mut stderr).await;
        child.wait().await
    })
    .await;
    assert!(
        exited.is_ok(),
        "{what}: drainpipe did not exit within 20 s of its stdin closing"
    );
    let answer =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {line}"));
    (answer, took, stderr)
}

/// The servers are loopback: drainpipe sends them through the proxy only
/// when told to.
fn through_loopback() -> (&'static str, String) {
    ("DRAINPIPE_PROXY_LOOPBACK", "1".to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_is_reached_through_a_real_proxy_with_the_urls_credentials() {
    let Some(proxy) = HttpProxy::start("forward", true).await else {
        return;
    };
    let Some(server) = mcp_server(None).await else {
        return;
    };
    let url = server.url("/mcp");
    let what = "an echo through HTTP_PROXY (proxy.py, basic auth)";
    let stderr = echo_through(
        &url,
        &[
            ("HTTP_PROXY", proxy.url(Some(PROXY_PASSWORD_IN_URL))),
            through_loopback(),
        ],
        what,
    )
    .await;
    // Forwarded in absolute form: the proxy logs the server's address and
    // the path.
    proxy
        .wait_for_access(&format!("127.0.0.1:{}/mcp", server.port), what)
        .await;
    assert!(!stderr.contains(PROXY_PASSWORD_IN_URL), "{what}: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_server_is_reached_through_a_real_proxys_connect_tunnel() {
    let Some(root) = tls::private_root("network-tunnel") else {
        return;
    };
    let Some(proxy) = HttpProxy::start("tunnel", true).await else {
        return;
    };
    let Some(server) = mcp_server(Some(&root)).await else {
        return;
    };
    let url = format!("https://localhost:{}/mcp", server.port);
    let what = "an echo over HTTPS through HTTPS_PROXY's tunnel (proxy.py, basic auth)";
    echo_through(
        &url,
        &[
            ("HTTPS_PROXY", proxy.url(Some(PROXY_PASSWORD_IN_URL))),
            ("SSL_CERT_FILE", root.ca.clone()),
            through_loopback(),
        ],
        what,
    )
    .await;
    proxy
        .wait_for_access(&format!("CONNECT localhost:{}", server.port), what)
        .await;
    // TLS went to the server, not the proxy: ALPN chose HTTP/2 with it.
    assert!(
        server
            .lines()
            .iter()
            .any(|line| line == "session opened over HTTP/2.0"),
        "{what}: not HTTP/2 inside the tunnel: {:?}",
        server.lines()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proxy_and_loopback_send_a_server_around_the_proxy() {
    let Some(proxy) = HttpProxy::start("bypass", false).await else {
        return;
    };
    let Some(around) = mcp_server(None).await else {
        return;
    };
    let Some(through) = mcp_server(None).await else {
        return;
    };
    let what = "an echo with NO_PROXY naming the server";
    echo_through(
        &around.url("/mcp"),
        &[
            ("HTTP_PROXY", proxy.url(None)),
            ("NO_PROXY", "example.com, 127.0.0.1".into()),
            through_loopback(),
        ],
        what,
    )
    .await;
    let what = "an echo to a loopback server, HTTP_PROXY set";
    echo_through(
        &around.url("/mcp"),
        &[("HTTP_PROXY", proxy.url(None))],
        what,
    )
    .await;
    // Then one through the proxy: once the log shows it, it would show any
    // request of the runs before, whose connections closed earlier.
    let what = "an echo through the same proxy";
    echo_through(
        &through.url("/mcp"),
        &[("HTTP_PROXY", proxy.url(None)), through_loopback()],
        what,
    )
    .await;
    proxy
        .wait_for_access(&format!("127.0.0.1:{}/", through.port), what)
        .await;
    assert!(
        !proxy.accessed(&format!("127.0.0.1:{}/", around.port)),
        "a server NO_PROXY or loopback names went through the proxy:\n{}",
        proxy.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_proxy_password_fails_the_request_and_is_never_shown() {
    const WRONG: &str = "wr0ng-pa55word";
    let Some(proxy) = HttpProxy::start("wrong-password", true).await else {
        return;
    };
    let Some(server) = mcp_server(None).await else {
        return;
    };
    let wrong_url = proxy.url(Some(WRONG));
    // Forwarded (http://) and tunnelled (https://, refused before any
    // TLS, so no server needs to listen there).
    for (url, var) in [
        (server.url("/mcp"), "HTTP_PROXY"),
        ("https://127.0.0.1:9/mcp".to_string(), "HTTPS_PROXY"),
    ] {
        let what = format!("initialize through {var} with a wrong password");
        let (answer, _, stderr) = initialize_with(
            &url,
            &[],
            &[(var, wrong_url.clone()), through_loopback()],
            &what,
        )
        .await;
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!(
                "the proxy {} refused the credentials in its URL (407",
                proxy.shown(var)
            )),
            "{what}: {answer}"
        );
        for said in [answer.to_string(), stderr] {
            assert!(!said.contains(WRONG), "{what}: the password shown: {said}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_in_ssl_cert_dir_is_trusted_and_a_broken_certificate_is_named() {
    let Some(root) = tls::private_root("network-cert-dir") else {
        return;
    };
    let Some(server) = mcp_server(Some(&root)).await else {
        return;
    };
    let trusted = root.dir.join("trusted");
    std::fs::create_dir_all(&trusted).expect("the certificate directory");
    std::fs::copy(&root.ca, trusted.join("company-root.pem")).expect("copy the root");
    let broken = trusted.join("broken.crt");
    std::fs::write(
        &broken,
        "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n",
    )
    .expect("write broken.crt");
    let what = "an echo over HTTPS with the root in SSL_CERT_DIR";
    let stderr = echo_through(
        &format!("https://localhost:{}/mcp", server.port),
        &[("SSL_CERT_DIR", trusted.display().to_string())],
        what,
    )
    .await;
    assert!(
        stderr.contains(&format!(
            "drainpipe: SSL_CERT_DIR: skipped 1 of the 1 certificates in {}, which do not parse",
            broken.display()
        )),
        "{what}: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_finishes_tls_fails_within_the_connect_timeout() {
    if peers::gate("the drainpipe binary", peers::drainpipe()).is_none() {
        return;
    }
    // Accepts, then never writes a byte: the TLS handshake never ends.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a listener");
    let port = listener.local_addr().expect("its address").port();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let url = format!("https://127.0.0.1:{port}/mcp");
    let what = "initialize to a server that never finishes TLS, --connect-timeout 2s";
    let (answer, took, _) = initialize_with(
        &url,
        &["--connect-timeout", "2s", "--idle-timeout", "120s"],
        &[],
        what,
    )
    .await;
    silent.abort();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "could not connect to {url} within 2s (--connect-timeout, which bounds DNS, the TCP connect, a proxy's tunnel and the TLS handshake)"
        )),
        "{what}: {answer}"
    );
    assert!(
        (Duration::from_millis(1_900)..Duration::from_secs(30)).contains(&took),
        "{what}: answered after {took:?}"
    );
}
