//! The HTTP client under the remote transports: hyper's pooled client over
//! rustls, HTTP/1.1 and HTTP/2 (chosen by ALPN on HTTPS), the caller's
//! headers on every request, and bodies read with an idle timeout.
//!
//! Proxies: the one `HTTPS_PROXY`, `HTTP_PROXY` or `ALL_PROXY` names,
//! unless `NO_PROXY` or loopback says direct ([`proxy`]); an https://
//! server through a CONNECT tunnel, TLS to the server inside it
//! ([`connect`]).
//!
//! Trust: Mozilla's root certificates built in (`webpki-roots`), the same
//! on every platform and with no system library, plus every certificate
//! `SSL_CERT_FILE` and `SSL_CERT_DIR` name that parses ([`trust`]). Header
//! values are marked sensitive and never written anywhere by this module:
//! an error names the URL's scheme, host and path, never a header, and a
//! proxy by its host and port, never its credentials.

mod connect;
mod proxy;
mod trust;

use std::ffi::OsString;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, PROXY_AUTHORIZATION};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::capture_connection;
use hyper_util::rt::TokioExecutor;
use rustls::RootCertStore;

use connect::{ConnectTimedOut, ConnectWithin, ProxyError, RouteConnector};
use proxy::{ProxyRules, Route};

/// The longest an HTTP error body is read for its message: enough for a
/// server's reason, never a page of HTML in a JSON-RPC error.
pub(crate) const MAX_ERROR_BODY_BYTES: usize = 1024;

/// How long a connection to the MCP server is kept idle for the next
/// request: under the 5 s after which Node's HTTP server (most MCP servers')
/// closes an idle one, so that a request after a pause is not sent on a
/// connection the server is closing (reset, and the request failed).
const POOL_IDLE: Duration = Duration::from_secs(4);

/// How long the client waits, and for what.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    /// Making a connection: DNS, the TCP connect, a proxy's tunnel and the
    /// TLS handshake together. Bounds a server or proxy that is down,
    /// unreachable, or accepts and then says nothing, which would otherwise
    /// hold a request for the whole `response_head` wait.
    pub(crate) connect: Duration,
    /// A response's head, once connected: bounds a server that takes a
    /// request and never answers it. (Bodies are read with the callers' own
    /// idle timeout, [`next_chunk`].)
    pub(crate) response_head: Duration,
}

/// The connector stack: routed (directly or through a proxy), TLS on top,
/// bounded in time as a whole.
type Connector = ConnectWithin<HttpsConnector<RouteConnector>>;

/// A pooled HTTP(S) client with the headers every request carries.
#[derive(Clone)]
pub(crate) struct Http {
    client: Client<Connector, Full<Bytes>>,
    /// The same connector with no pool: see [`Http::without_headers`].
    unpooled: Client<Connector, Full<Bytes>>,
    headers: HeaderMap,
    /// Which requests go through a proxy: the connector asks it for the
    /// connection, [`Http::send`] for `Proxy-Authorization` on a request
    /// forwarded in absolute form.
    proxies: Arc<ProxyRules>,
    timeouts: Timeouts,
}

/// A failure before a response. Its text never holds a header value, a
/// URL's query or a proxy's credentials.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    /// No connection: refused, no such host, TLS or the proxy failed.
    #[error("could not reach {0}: {1}")]
    Connect(String, String),
    /// No connection within [`Timeouts::connect`].
    #[error(
        "could not connect to {0} within {limit} (--connect-timeout, which bounds DNS, the TCP connect, a proxy's tunnel and the TLS handshake)",
        limit = show_duration(*.1)
    )]
    ConnectTimeout(String, Duration),
    /// Connected, but no response head within [`Timeouts::response_head`].
    #[error(
        "no response from {0} within {limit} of connecting (--idle-timeout)",
        limit = show_duration(*.1)
    )]
    Timeout(String, Duration),
}

/// What the environment says about the network, read once per client:
/// which proxy each server goes through, and whose certificates are
/// trusted.
pub(crate) struct Network {
    proxies: ProxyRules,
    roots: RootCertStore,
}

impl Network {
    /// From the process's environment. `warn` gets a line for each
    /// certificate file some of whose certificates were skipped; a proxy
    /// variable that is not UTF-8, or a certificate file or directory that
    /// cannot be read, is an error naming it.
    pub(crate) fn from_env(warn: &mut dyn FnMut(String)) -> io::Result<Network> {
        Self::read(&|name| std::env::var_os(name), warn)
    }

    /// From the variables `lookup` gives.
    fn read(
        lookup: &dyn Fn(&str) -> Option<OsString>,
        warn: &mut dyn FnMut(String),
    ) -> io::Result<Network> {
        Ok(Network {
            proxies: ProxyRules::read(lookup)
                .map_err(|why| io::Error::new(io::ErrorKind::InvalidInput, why))?,
            roots: trust::roots(lookup, warn)?,
        })
    }

    /// No proxy and Mozilla's roots alone, whatever the environment says.
    #[cfg(test)]
    pub(crate) fn direct() -> Network {
        Network::read(&|_| None, &mut |_| {}).expect("no variables")
    }
}

impl Http {
    /// A client sending `headers` (name, value; values already expanded)
    /// on every request, through the proxies `network` names and trusting
    /// its roots.
    pub(crate) fn new(
        headers: &[(String, String)],
        timeouts: Timeouts,
        network: Network,
    ) -> io::Result<Http> {
        // `ring`, not the default aws-lc-rs: it cross-builds for every
        // target the release ships with no CMake or NASM. Its one gap is
        // post-quantum key exchange, which rustls marks by deprecating the
        // call; classical ECDHE is what the servers offer today.
        #[allow(deprecated)]
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_root_certificates(network.roots)
            .with_no_client_auth();
        let proxies = Arc::new(network.proxies);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(RouteConnector::new(proxies.clone()));
        let connector = ConnectWithin::new(connector, timeouts.connect);
        let mut builder = Client::builder(TokioExecutor::new());
        // `Content-Length`, not `content-length`, on HTTP/1.1 (HTTP/2
        // requires lower case): what curl and browsers send. Header names
        // are case-insensitive, but proxies and middleboxes that rewrite
        // forwarded requests do not all know it: proxy.py adds a second
        // Content-Length beside a lower-case one, which Node's parser then
        // rejects with 400.
        builder.http1_title_case_headers(true);
        let unpooled = builder
            .clone()
            .pool_max_idle_per_host(0)
            .build(connector.clone());
        let client = builder.pool_idle_timeout(POOL_IDLE).build(connector);
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{name:?} is not a header name"),
                )
            })?;
            let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("the value of header {name} is not valid in a header"),
                )
            })?;
            value.set_sensitive(true);
            map.append(name, value);
        }
        Ok(Http {
            client,
            unpooled,
            headers: map,
            proxies,
            timeouts,
        })
    }

    /// The same client (its trust) without the caller's headers, for an
    /// authorization server, which must not see what was meant for the MCP
    /// server; and without a pool: each request on a connection of its own.
    /// A sign-in waits minutes for the user between two requests, and a
    /// pooled connection the server closed meanwhile is reset as it is
    /// reused, losing the authorization code sent on it and the sign-in
    /// with it. A handful of requests per sign-in pay a handshake each.
    pub(crate) fn without_headers(&self) -> Http {
        Http {
            client: self.unpooled.clone(),
            unpooled: self.unpooled.clone(),
            headers: HeaderMap::new(),
            proxies: self.proxies.clone(),
            timeouts: self.timeouts,
        }
    }

    /// Sends `request` with the client's headers added (a header the
    /// request sets itself wins), waiting at most the connect timeout for
    /// a connection and the response-head timeout after it.
    pub(crate) async fn send(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, HttpError> {
        for (name, value) in &self.headers {
            if !request.headers().contains_key(name) {
                request.headers_mut().append(name, value.clone());
            }
        }
        let route = self.proxies.route(request.uri());
        if let Route::Forward(proxy) = &route
            && let Some(authorization) = &proxy.authorization
        {
            request
                .headers_mut()
                .insert(PROXY_AUTHORIZATION, authorization.clone());
        }
        let shown = shown(request.uri());
        let mut connection = capture_connection(&mut request);
        let responding = self.client.request(request);
        // The connector bounds making the connection (and fails the request
        // past it); the head's own wait starts once there is one, at once
        // for a pooled connection.
        let head_overdue = async {
            let _ = connection.wait_for_connection_metadata().await;
            tokio::time::sleep(self.timeouts.response_head).await;
        };
        let answered = async {
            tokio::select! {
                response = responding => Some(response),
                () = head_overdue => None,
            }
        };
        // Both waits together bound the whole as well, should hyper never
        // report the connection.
        let limit = self.timeouts.connect + self.timeouts.response_head;
        let outcome = tokio::time::timeout(limit, answered).await.ok().flatten();
        match outcome {
            Some(Ok(response)) => match &route {
                // Forwarded, the proxy answers for itself with 407 (through
                // a tunnel, CONNECT's answer said so already).
                Route::Forward(proxy)
                    if response.status() == StatusCode::PROXY_AUTHENTICATION_REQUIRED =>
                {
                    let why = ProxyError::credentials(proxy, response.status().to_string());
                    Err(HttpError::Connect(shown, why.to_string()))
                }
                _ => Ok(response),
            },
            Some(Err(error)) => match timed_out(&error) {
                Some(limit) => Err(HttpError::ConnectTimeout(shown, limit)),
                None => Err(HttpError::Connect(shown, error_chain(&error))),
            },
            None => Err(HttpError::Timeout(shown, self.timeouts.response_head)),
        }
    }
}

/// The URI as it may be shown: scheme, host, port and path, without the
/// user info or the query (either may hold a secret).
pub(crate) fn shown(uri: &Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("http");
    let host = uri.host().unwrap_or("?");
    match uri.port_u16() {
        Some(port) => format!("{scheme}://{host}:{port}{}", uri.path()),
        None => format!("{scheme}://{host}{}", uri.path()),
    }
}

/// The connect timeout, if that is what `error` (or one of its sources)
/// is.
fn timed_out(error: &(dyn std::error::Error + 'static)) -> Option<Duration> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(timed_out) = error.downcast_ref::<ConnectTimedOut>() {
            return Some(timed_out.limit);
        }
        cause = error.source();
    }
    None
}

/// An error and its sources on one line.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
        source = cause_of(source);
    }
    text
}

fn cause_of<'e>(
    error: Option<&'e (dyn std::error::Error + 'static)>,
) -> Option<&'e (dyn std::error::Error + 'static)> {
    error.and_then(|error| error.source())
}

/// The next piece of a body: `Ok(None)` at its end, an error when nothing
/// came for `idle` or the connection broke.
pub(crate) async fn next_chunk(
    body: &mut Incoming,
    idle: Duration,
) -> Result<Option<Bytes>, String> {
    loop {
        match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => {
                return Err(format!(
                    "nothing from the server for {}",
                    show_duration(idle)
                ));
            }
            Ok(None) => return Ok(None),
            Ok(Some(Err(error))) => {
                return Err(format!("the connection broke: {}", error_chain(&error)));
            }
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
                // Trailers: not data.
            }
        }
    }
}

/// At most `limit` bytes of a body as text (an error's reason), read
/// within `idle` per piece; the rest is not read.
pub(crate) async fn short_text(body: &mut Incoming, limit: usize, idle: Duration) -> String {
    let mut text = Vec::new();
    while text.len() < limit {
        match next_chunk(body, idle).await {
            Ok(Some(chunk)) => {
                text.extend_from_slice(&chunk[..chunk.len().min(limit - text.len())])
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&text).trim().to_string()
}

/// A whole body of at most `limit` bytes, each piece within `idle`; a
/// longer one is an error, not cut.
pub(crate) async fn read_body(
    body: &mut Incoming,
    limit: usize,
    idle: Duration,
) -> Result<Vec<u8>, String> {
    let mut whole = Vec::new();
    while let Some(chunk) = next_chunk(body, idle).await? {
        if whole.len() + chunk.len() > limit {
            return Err(format!("a document over {limit} bytes"));
        }
        whole.extend_from_slice(&chunk);
    }
    Ok(whole)
}

/// `30s`, `1.5s`, `200ms`: how a duration is said in messages.
pub(crate) fn show_duration(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{}s", duration.as_secs())
    } else if duration < Duration::from_secs(1) {
        format!("{}ms", duration.as_millis())
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A proxy on loopback that answers each connection's first request
    /// head with `answer` and closes; the heads it got come out of the
    /// channel. Nothing leaves the machine: the servers named in the tests
    /// are never resolved, only named to the proxy.
    async fn fake_proxy(
        answer: &'static str,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (heads, received) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1
                {
                    head.push(byte[0]);
                }
                let _ = heads.send(String::from_utf8_lossy(&head).into_owned());
                let _ = stream.write_all(answer.as_bytes()).await;
            }
        });
        (format!("http://{address}"), received)
    }

    /// The network with only the variables `vars` set.
    fn proxies(vars: &[(&str, String)]) -> Network {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(name, value)| (name.to_string(), OsString::from(value)))
            .collect();
        Network::read(
            &move |name| {
                vars.iter()
                    .find(|(var, _)| var == name)
                    .map(|(_, value)| value.clone())
            },
            &mut |warning| panic!("{warning}"),
        )
        .unwrap()
    }

    const TEN_SECONDS: Timeouts = Timeouts {
        connect: Duration::from_secs(10),
        response_head: Duration::from_secs(10),
    };

    fn get(uri: &str) -> Request<Full<Bytes>> {
        Request::get(uri).body(Full::new(Bytes::new())).unwrap()
    }

    #[tokio::test]
    async fn an_https_server_is_reached_through_a_connect_tunnel_and_a_refusal_says_why() {
        let (proxy, mut heads) = fake_proxy("HTTP/1.1 403 Forbidden\r\n\r\n").await;
        let with_password = proxy.replace("http://", "http://alice:pa%3Ass@");
        let http = Http::new(
            &[("Authorization".into(), "Bearer server-token".into())],
            TEN_SECONDS,
            proxies(&[("HTTPS_PROXY", with_password)]),
        )
        .unwrap();
        let error = http
            .send(get("https://mcp.example.invalid:8443/mcp?key=secret"))
            .await
            .unwrap_err()
            .to_string();
        let head = heads.recv().await.unwrap();
        assert!(
            head.starts_with("CONNECT mcp.example.invalid:8443 HTTP/1.1\r\n"),
            "{head}"
        );
        // alice:pa:ss, for the proxy only; the server's header is not in
        // the CONNECT (it goes inside the tunnel, under TLS).
        assert!(
            head.contains("Proxy-Authorization: Basic YWxpY2U6cGE6c3M=\r\n"),
            "{head}"
        );
        assert!(!head.contains("server-token"), "{head}");
        let address = proxy.trim_start_matches("http://");
        assert!(
            error.contains(&format!(
                "the proxy http://{address} (HTTPS_PROXY) would not open a tunnel to mcp.example.invalid:8443: it answered 403 Forbidden"
            )),
            "{error}"
        );
        for secret in ["alice", "pa:ss", "pa%3Ass", "YWxp", "key=", "server-token"] {
            assert!(!error.contains(secret), "{secret} in {error}");
        }
    }

    #[tokio::test]
    async fn an_http_server_is_reached_by_forwarding_requests_in_absolute_form() {
        let (proxy, mut heads) =
            fake_proxy("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}").await;
        let with_user = proxy.replace("http://", "http://bob:hunter2@");
        let http = Http::new(&[], TEN_SECONDS, proxies(&[("http_proxy", with_user)])).unwrap();
        let response = http
            .send(get("http://mcp.example.invalid/mcp"))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let head = heads.recv().await.unwrap();
        assert!(
            head.starts_with("GET http://mcp.example.invalid/mcp HTTP/1.1\r\n"),
            "{head}"
        );
        let head = head.to_ascii_lowercase();
        assert!(head.contains("\r\nhost: mcp.example.invalid\r\n"), "{head}");
        assert!(
            head.contains("\r\nproxy-authorization: basic ym9iomh1bnrlcji=\r\n"),
            "{head}"
        );
    }

    #[tokio::test]
    async fn a_proxys_407_says_to_give_credentials_without_showing_any() {
        let (proxy, _heads) = fake_proxy(
            "HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        )
        .await;
        let address = proxy.trim_start_matches("http://").to_string();
        let table = [
            (
                "https://mcp.example.invalid/mcp",
                proxy.clone(),
                "asks for credentials",
            ),
            (
                "http://mcp.example.invalid/mcp",
                proxy.clone(),
                "asks for credentials",
            ),
            (
                "https://mcp.example.invalid/mcp",
                proxy.replace("http://", "http://carol:wrong@"),
                "refused the credentials in its URL",
            ),
            (
                "http://mcp.example.invalid/mcp",
                proxy.replace("http://", "http://carol:wrong@"),
                "refused the credentials in its URL",
            ),
        ];
        for (server, proxy_url, expected) in table {
            let http = Http::new(&[], TEN_SECONDS, proxies(&[("ALL_PROXY", proxy_url)])).unwrap();
            let error = http.send(get(server)).await.unwrap_err().to_string();
            assert!(
                error.contains(&format!(
                    "the proxy http://{address} (ALL_PROXY) {expected}"
                )),
                "{server}: {error}"
            );
            assert!(error.contains("407"), "{error}");
            assert!(
                !error.contains("carol") && !error.contains("wrong"),
                "{error}"
            );
        }
    }

    #[tokio::test]
    async fn no_proxy_and_loopback_servers_are_reached_directly() {
        // This proxy refuses everything: a 204 is the server's own answer.
        let (proxy, mut heads) = fake_proxy("HTTP/1.1 403 Forbidden\r\n\r\n").await;
        let (server, _) = fake_proxy("HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n").await;
        let port = server.rsplit(':').next().unwrap();
        let by_ip = format!("http://127.0.0.1:{port}/mcp");
        let by_name = format!("http://localhost:{port}/mcp");
        let loopback_direct =
            Http::new(&[], TEN_SECONDS, proxies(&[("HTTP_PROXY", proxy.clone())])).unwrap();
        for server in [&by_ip, &by_name] {
            let response = loopback_direct.send(get(server)).await.unwrap();
            assert_eq!(response.status(), StatusCode::NO_CONTENT, "{server}");
        }
        assert!(heads.try_recv().is_err(), "the proxy was asked");
        // With loopback through the proxy, NO_PROXY alone keeps the
        // address direct, and the name goes to the proxy.
        let no_proxy_direct = Http::new(
            &[],
            TEN_SECONDS,
            proxies(&[
                ("HTTP_PROXY", proxy.clone()),
                ("NO_PROXY", "example.com, 127.0.0.1".into()),
                (proxy::PROXY_LOOPBACK_VAR, "1".into()),
            ]),
        )
        .unwrap();
        let response = no_proxy_direct.send(get(&by_ip)).await.unwrap();
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        let response = no_proxy_direct.send(get(&by_name)).await.unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        let head = heads.recv().await.unwrap();
        assert!(
            head.starts_with(&format!("GET {by_name} HTTP/1.1")),
            "{head}"
        );
    }

    #[tokio::test]
    async fn a_proxy_drainpipe_cannot_use_fails_the_request_it_would_carry() {
        let http = Http::new(
            &[],
            TEN_SECONDS,
            proxies(&[("HTTPS_PROXY", "socks5://u:hunter2@127.0.0.1:1".into())]),
        )
        .unwrap();
        let error = http
            .send(get("https://mcp.example.invalid/mcp"))
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("HTTPS_PROXY names a SOCKS proxy"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
    }

    /// A server on loopback that accepts connections and never writes a
    /// byte (each held open until the test ends): a TLS handshake or a
    /// CONNECT to it never completes, a request on it is never answered.
    async fn silent_server() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        address
    }

    /// Sends `request`, which must fail: its error and how long it took.
    async fn fails_after(
        http: &Http,
        request: Request<Full<Bytes>>,
    ) -> (String, std::time::Duration) {
        let started = std::time::Instant::now();
        let error = http.send(request).await.unwrap_err().to_string();
        (error, started.elapsed())
    }

    #[tokio::test]
    async fn the_connect_timeout_bounds_a_tls_handshake_that_never_ends() {
        let silent = silent_server().await;
        let timeouts = Timeouts {
            connect: Duration::from_millis(300),
            response_head: Duration::from_secs(60),
        };
        let http = Http::new(&[], timeouts, Network::direct()).unwrap();
        let (error, took) = fails_after(&http, get(&format!("https://{silent}/mcp?k=v"))).await;
        assert!(
            (Duration::from_millis(250)..Duration::from_secs(10)).contains(&took),
            "{took:?}"
        );
        assert_eq!(
            error,
            format!(
                "could not connect to https://{silent}/mcp within 300ms (--connect-timeout, which bounds DNS, the TCP connect, a proxy's tunnel and the TLS handshake)"
            )
        );
    }

    #[tokio::test]
    async fn the_connect_timeout_bounds_a_proxy_that_never_opens_its_tunnel() {
        let silent = silent_server().await;
        let timeouts = Timeouts {
            connect: Duration::from_millis(300),
            response_head: Duration::from_secs(60),
        };
        let network = proxies(&[("HTTPS_PROXY", format!("http://{silent}"))]);
        let http = Http::new(&[], timeouts, network).unwrap();
        let (error, took) = fails_after(&http, get("https://mcp.example.invalid/mcp")).await;
        assert!(
            (Duration::from_millis(250)..Duration::from_secs(10)).contains(&took),
            "{took:?}"
        );
        assert!(
            error.starts_with(
                "could not connect to https://mcp.example.invalid/mcp within 300ms (--connect-timeout"
            ),
            "{error}"
        );
    }

    #[tokio::test]
    async fn the_wait_for_a_response_head_starts_once_connected() {
        let silent = silent_server().await;
        let timeouts = Timeouts {
            connect: Duration::from_secs(30),
            response_head: Duration::from_millis(300),
        };
        let http = Http::new(&[], timeouts, Network::direct()).unwrap();
        let (error, took) = fails_after(&http, get(&format!("http://{silent}/mcp"))).await;
        // Well before the connect timeout, which is not the head's.
        assert!(
            (Duration::from_millis(250)..Duration::from_secs(10)).contains(&took),
            "{took:?}"
        );
        assert_eq!(
            error,
            format!(
                "no response from http://{silent}/mcp within 300ms of connecting (--idle-timeout)"
            )
        );
    }
}
