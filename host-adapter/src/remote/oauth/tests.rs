//! The token source against fake servers on loopback: refreshing, and
//! that each check stops the flow where it must.

use super::super::http::{Network, Timeouts};
use super::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use hyper::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use store::Client;

#[test]
fn pkce_verifiers_are_43_url_safe_characters() {
    let verifier = random_text(32);
    assert_eq!(verifier.len(), 43);
    assert!(
        verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    assert_ne!(verifier, random_text(32));
    // RFC 7636 appendix B.
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(
        b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    ));
    assert_eq!(challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
}

const FIVE_SECONDS: Timeouts = Timeouts {
    connect: Duration::from_secs(5),
    response_head: Duration::from_secs(5),
};

/// What the fake server saw of one request.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    path: String,
    bearer: Option<String>,
    body: String,
}

/// The requests a fake server saw, in order.
type Log = std::sync::Arc<std::sync::Mutex<Vec<Seen>>>;

/// An MCP endpoint (`/mcp`) that takes only `Bearer new`, and a token
/// endpoint (`/token`) that trades refresh token `r1` for `new` and
/// `r2`.
async fn fake_server() -> (String, Log) {
    fake_server_with(|seen, _base| {
        match seen.path.as_str() {
        "/token" if seen.body.contains("refresh_token=r1") => (
            "200 OK",
            r#"{"access_token":"new","token_type":"Bearer","expires_in":3600,"refresh_token":"r2"}"#
                .to_string(),
        ),
        "/token" => ("400 Bad Request", r#"{"error":"invalid_grant"}"#.to_string()),
        "/mcp" if seen.bearer.as_deref() == Some("new") => ("200 OK", "{}".to_string()),
        _ => ("401 Unauthorized", String::new()),
    }
    })
    .await
}

/// A server on loopback answering each request as `route` says (a status
/// line and a JSON body) given what it saw and its own base URL, with
/// `WWW-Authenticate: Bearer` on every answer: HTTP/1.1, one request per
/// connection.
async fn fake_server_with(
    route: impl Fn(&Seen, &str) -> (&'static str, String) + Send + 'static,
) -> (String, Log) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let own = base.clone();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut data = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head, body) = loop {
                let n = stream.read(&mut chunk).await.unwrap();
                data.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&data).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    if body.len() >= length || n == 0 {
                        break (head.to_string(), body.to_string());
                    }
                }
            };
            let path = head.split_whitespace().nth(1).unwrap().to_string();
            let bearer = head.lines().find_map(|l| {
                l.to_ascii_lowercase()
                    .starts_with("authorization:")
                    .then(|| {
                        l["authorization:".len()..]
                            .trim()
                            .trim_start_matches("Bearer ")
                            .to_string()
                    })
            });
            let seen = Seen { path, bearer, body };
            let (status, answer) = route(&seen, &own);
            log.lock().unwrap().push(seen);
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nwww-authenticate: Bearer\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
            stream.write_all(response.as_bytes()).await.unwrap();
        }
    });
    (base, seen)
}

/// A token source for `base/mcp` whose store holds a client and the
/// access token `old` (expiring at `expires_at`) with refresh token
/// `r1`.
fn source(base: &str, dir: &std::path::Path, expires_at: u64) -> TokenSource {
    let server = format!("{base}/mcp");
    let store = Store::new(Some(dir.to_path_buf())).unwrap();
    let mut record = store.load(&server);
    record.client = Some(Client {
        client_id: "c".into(),
        client_secret: None,
        redirect_uris: vec!["http://127.0.0.1:1/callback".into()],
        token_endpoint: format!("{base}/token"),
        issuer: None,
        auth_method: None,
    });
    record.tokens = Some(Tokens {
        access_token: "old".into(),
        refresh_token: Some("r1".into()),
        expires_at: Some(expires_at),
        token_endpoint: format!("{base}/token"),
        resource: server.clone(),
        scope: None,
        refresh_at: None,
    });
    store.save(&record).unwrap();
    let config = OAuthConfig {
        mode: OAuthMode::Always,
        dir: Some(dir.to_path_buf()),
        ..OAuthConfig::default()
    };
    let http = Http::new(&[], FIVE_SECONDS, Network::direct()).unwrap();
    let (sink, _closer) = StderrSink::start(io::sink(), 1 << 16);
    TokenSource::for_config(
        &config,
        &server.parse().unwrap(),
        &http,
        sink,
        Duration::from_secs(5),
    )
    .unwrap()
    .unwrap()
}

fn post(base: &str) -> Request<Full<Bytes>> {
    Request::post(format!("{base}/mcp"))
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("drainpipe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[tokio::test]
async fn a_401_refreshes_the_token_and_retries_once() {
    let (base, seen) = fake_server().await;
    let dir = temp_dir("oauth-401");
    let source = source(&base, &dir, now() + 3600);
    let http = Http::new(&[], FIVE_SECONDS, Network::direct()).unwrap();
    let response = source.send(&http, post(&base)).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let seen = seen.lock().unwrap();
    let paths: Vec<(&str, Option<&str>)> = seen
        .iter()
        .map(|s| (s.path.as_str(), s.bearer.as_deref()))
        .collect();
    assert_eq!(
        paths,
        [
            ("/mcp", Some("old")),
            ("/token", None),
            ("/mcp", Some("new"))
        ]
    );
    assert!(seen[1].body.contains("grant_type=refresh_token"));
    assert!(seen[1].body.contains("resource=http"));
    let stored = Store::new(Some(dir.clone()))
        .unwrap()
        .load(&format!("{base}/mcp"));
    let tokens = stored.tokens.unwrap();
    assert_eq!(tokens.access_token, "new");
    assert_eq!(tokens.refresh_token.as_deref(), Some("r2"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_expired_token_is_refreshed_before_it_is_sent() {
    let (base, seen) = fake_server().await;
    let dir = temp_dir("oauth-expired");
    let source = source(&base, &dir, 1);
    let http = Http::new(&[], FIVE_SECONDS, Network::direct()).unwrap();
    let response = source.send(&http, post(&base)).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let paths: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.path.clone())
        .collect();
    assert_eq!(paths, ["/token", "/mcp"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A token source for `base/mcp` with an empty store in `dir`, OAuth on
/// when the server asks, and a sink whose lines are kept.
fn fresh_source(
    base: &str,
    dir: &std::path::Path,
) -> (TokenSource, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    #[derive(Clone)]
    struct Kept(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl io::Write for Kept {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let kept = Kept(Default::default());
    let (sink, _closer) = StderrSink::start(kept.clone(), 1 << 16);
    let config = OAuthConfig {
        mode: OAuthMode::OnChallenge,
        dir: Some(dir.to_path_buf()),
        ..OAuthConfig::default()
    };
    let http = Http::new(&[], FIVE_SECONDS, Network::direct()).unwrap();
    let source = TokenSource::for_config(
        &config,
        &format!("{base}/mcp").parse().unwrap(),
        &http,
        sink,
        Duration::from_secs(5),
    )
    .unwrap()
    .unwrap();
    (source, kept.0)
}

/// Sends one request through a fresh source whose server answers `401`
/// and publishes `resource_metadata` and `server_metadata` (JSON built
/// from the server's base URL) at the well-known URLs; returns the paths
/// the server saw and what the source said.
async fn sign_in_against(
    name: &str,
    resource_metadata: fn(&str) -> String,
    server_metadata: fn(&str) -> String,
) -> (Vec<String>, String) {
    let (base, seen) = fake_server_with(move |seen, base| match seen.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => ("200 OK", resource_metadata(base)),
        "/.well-known/oauth-authorization-server" => ("200 OK", server_metadata(base)),
        "/register" => ("201 Created", r#"{"client_id":"c"}"#.to_string()),
        _ => ("401 Unauthorized", String::new()),
    })
    .await;
    let dir = temp_dir(name);
    let (source, said) = fresh_source(&base, &dir);
    let http = Http::new(&[], FIVE_SECONDS, Network::direct()).unwrap();
    let response = tokio::time::timeout(Duration::from_secs(20), source.send(&http, post(&base)))
        .await
        .expect("the flow stops in time")
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{name}");
    // The sink's thread writes what it was given soon after.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let paths = seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.path.clone())
        .collect();
    let said = String::from_utf8_lossy(&said.lock().unwrap()).to_string();
    let _ = std::fs::remove_dir_all(&dir);
    (paths, said)
}

fn resource_here(base: &str) -> String {
    format!(r#"{{"resource":"{base}/mcp","authorization_servers":["{base}"]}}"#)
}

fn server_here(base: &str) -> String {
    format!(
        r#"{{"issuer":"{base}","authorization_endpoint":"{base}/authorize","token_endpoint":"{base}/token","registration_endpoint":"{base}/register","code_challenge_methods_supported":["S256"]}}"#
    )
}

/// The well-known URLs were read, then nothing more: no registration, no
/// authorization, no token request.
fn stopped_after_discovery(paths: &[String]) -> bool {
    paths
        .iter()
        .all(|p| p == "/mcp" || p.starts_with("/.well-known/"))
}

#[tokio::test]
async fn no_authorization_without_pkce_s256() {
    fn no_pkce(base: &str) -> String {
        server_here(base).replace(r#","code_challenge_methods_supported":["S256"]"#, "")
    }
    fn plain_only(base: &str) -> String {
        server_here(base).replace(r#"["S256"]"#, r#"["plain"]"#)
    }
    for (name, metadata) in [
        ("oauth-no-pkce", no_pkce as fn(&str) -> String),
        ("oauth-plain", plain_only),
    ] {
        let (paths, said) = sign_in_against(name, resource_here, metadata).await;
        assert!(stopped_after_discovery(&paths), "{name}: {paths:?}");
        assert!(said.contains("PKCE"), "{name}: {said}");
    }
}

#[tokio::test]
async fn no_plain_http_authorization_server_off_loopback() {
    fn elsewhere(base: &str) -> String {
        format!(r#"{{"resource":"{base}/mcp","authorization_servers":["http://auth.invalid"]}}"#)
    }
    let (paths, said) = sign_in_against("oauth-plain-http", elsewhere, server_here).await;
    assert!(stopped_after_discovery(&paths), "{paths:?}");
    assert!(
        said.contains("not https://") && said.contains("auth.invalid"),
        "{said}"
    );
}

#[tokio::test]
async fn no_plain_http_token_endpoint_off_loopback() {
    fn token_elsewhere(base: &str) -> String {
        server_here(base).replace(&format!("{base}/token"), "http://auth.invalid/token")
    }
    let (paths, said) = sign_in_against("oauth-plain-token", resource_here, token_elsewhere).await;
    assert!(stopped_after_discovery(&paths), "{paths:?}");
    assert!(
        said.contains("token endpoint") && said.contains("not https://"),
        "{said}"
    );
}

#[tokio::test]
async fn metadata_for_another_resource_is_not_used() {
    fn evil(_base: &str) -> String {
        r#"{"resource":"https://evil.example.com/mcp","authorization_servers":["https://evil.example.com"]}"#
            .to_string()
    }
    let (paths, said) = sign_in_against("oauth-resource", evil, server_here).await;
    // Not even the authorization server it names was asked.
    assert!(
        !paths
            .iter()
            .any(|p| p.contains("oauth-authorization-server")),
        "{paths:?}"
    );
    assert!(said.contains("RFC 9728"), "{said}");
}

#[tokio::test]
async fn metadata_of_another_issuer_is_not_used() {
    fn attacker(base: &str) -> String {
        server_here(base).replacen(
            &format!(r#""issuer":"{base}""#),
            r#""issuer":"https://attacker.example.com""#,
            1,
        )
    }
    let (paths, said) = sign_in_against("oauth-issuer", resource_here, attacker).await;
    assert!(stopped_after_discovery(&paths), "{paths:?}");
    assert!(said.contains("RFC 8414"), "{said}");
}

#[tokio::test]
async fn a_bearer_goes_only_to_its_own_origin() {
    let (base, _) = fake_server().await;
    let (other, other_seen) = fake_server().await;
    let dir = temp_dir("oauth-origin");
    let source = source(&base, &dir, now() + 3600);
    let http = Http::new(&[], FIVE_SECONDS, Network::direct()).unwrap();
    // A request to another origin (an older transport's endpoint that
    // moved, say) goes without the token.
    let elsewhere = Request::post(format!("{other}/mcp"))
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let mut request = elsewhere;
    source.add_bearer(&mut request).await;
    assert!(request.headers().get(AUTHORIZATION).is_none());
    let _ = http.send(request).await.unwrap();
    assert_eq!(other_seen.lock().unwrap()[0].bearer, None);
    // To its own origin, it goes.
    let mut own = post(&base);
    source.add_bearer(&mut own).await;
    assert!(own.headers().get(AUTHORIZATION).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An authorization server that keeps connections open between requests
/// and resets one on its second request, as a server does that closes an
/// idle connection (Node's after 5 s) just as a client reuses it.
async fn resetting_server() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut served = 0;
                let mut data = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = stream.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    data.extend_from_slice(&chunk[..n]);
                    if !data.windows(4).any(|w| w == b"\r\n\r\n") {
                        continue;
                    }
                    data.clear();
                    served += 1;
                    if served == 2 {
                        // RST, not FIN: the reuse fails. (Deprecated for
                        // blocking on drop with a non-zero linger; zero is
                        // the reset this wants.)
                        #[allow(deprecated)]
                        let _ = stream.set_linger(Some(Duration::ZERO));
                        return;
                    }
                    let body = r#"{"issuer":"x"}"#;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    stream.write_all(answer.as_bytes()).await.unwrap();
                }
            });
        }
    });
    base
}

#[tokio::test]
async fn each_authorization_server_request_has_a_connection_of_its_own() {
    // The sign-in waits minutes for the user between two requests to the
    // authorization server; a pooled connection may have been closed
    // meanwhile, and a code sent on it would be lost with the sign-in.
    let base = resetting_server().await;
    let dir = temp_dir("oauth-fresh-connections");
    let (source, _) = fresh_source(&base, &dir);
    let url = Url::parse(&format!("{base}/.well-known/oauth-authorization-server")).unwrap();
    for attempt in 0..3 {
        let got: Option<serde_json::Value> = source
            .get_json(&url)
            .await
            .unwrap_or_else(|e| panic!("request {attempt}: {e}"));
        assert_eq!(got.unwrap()["issuer"], "x", "request {attempt}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
