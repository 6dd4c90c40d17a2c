//! The HTTP client under the remote transports: hyper's pooled client over
//! rustls, HTTP/1.1 and HTTP/2 (chosen by ALPN on HTTPS), the caller's
//! headers on every request, and bodies read with an idle timeout.
//!
//! Trust: Mozilla's root certificates built in (`webpki-roots`), the same
//! on every platform and with no system library, plus every certificate in
//! the PEM file `SSL_CERT_FILE` names (a company's own root). Header
//! values are marked sensitive and never written anywhere by this module:
//! an error names the URL's scheme, host and path, never a header.

use std::io;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The longest an HTTP error body is read for its message: enough for a
/// server's reason, never a page of HTML in a JSON-RPC error.
pub(crate) const MAX_ERROR_BODY_BYTES: usize = 1024;

/// How long a connection to the MCP server is kept idle for the next
/// request: under the 5 s after which Node's HTTP server (most MCP servers')
/// closes an idle one, so that a request after a pause is not sent on a
/// connection the server is closing (reset, and the request failed).
const POOL_IDLE: Duration = Duration::from_secs(4);

/// A pooled HTTP(S) client with the headers every request carries.
#[derive(Clone)]
pub(crate) struct Http {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    /// The same connector with no pool: see [`Http::without_headers`].
    unpooled: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    headers: HeaderMap,
    connect_timeout: Duration,
}

/// A failure before a response: the connection, TLS, or the timeout. Its
/// text never holds a header value.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    #[error("could not reach {0}: {1}")]
    Connect(String, String),
    #[error("no response from {0} within {1:?}")]
    Timeout(String, Duration),
}

impl Http {
    /// A client sending `headers` (name, value; values already expanded)
    /// on every request.
    pub(crate) fn new(headers: &[(String, String)], connect_timeout: Duration) -> io::Result<Http> {
        // `ring`, not the default aws-lc-rs: it cross-builds for every
        // target the release ships with no CMake or NASM. Its one gap is
        // post-quantum key exchange, which rustls marks by deprecating the
        // call; classical ECDHE is what the servers offer today.
        #[allow(deprecated)]
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(file) = std::env::var_os("SSL_CERT_FILE") {
            let certs = CertificateDer::pem_file_iter(&file).map_err(|error| {
                io::Error::other(format!("SSL_CERT_FILE {}: {error}", file.display()))
            })?;
            for cert in certs {
                let cert = cert.map_err(|error| {
                    io::Error::other(format!("SSL_CERT_FILE {}: {error}", file.display()))
                })?;
                roots.add(cert).map_err(|error| {
                    io::Error::other(format!("SSL_CERT_FILE {}: {error}", file.display()))
                })?;
            }
        }
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        let unpooled = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(connector.clone());
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(connector);
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
            connect_timeout,
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
            connect_timeout: self.connect_timeout,
        }
    }

    /// Sends `request` with the client's headers added (a header the
    /// request sets itself wins), waiting at most the connect timeout for
    /// the response's head.
    pub(crate) async fn send(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, HttpError> {
        for (name, value) in &self.headers {
            if !request.headers().contains_key(name) {
                request.headers_mut().append(name, value.clone());
            }
        }
        let shown = shown(request.uri());
        match tokio::time::timeout(self.connect_timeout, self.client.request(request)).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(HttpError::Connect(shown, error_chain(&error))),
            Err(_) => Err(HttpError::Timeout(shown, self.connect_timeout)),
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
