//! The connectors, from the bottom up:
//!
//! - [`RouteConnector`]: a TCP connection to the server, or to the proxy
//!   [`ProxyRules`] names for it, through which an https:// server is
//!   reached by a CONNECT tunnel (RFC 9110 §9.3.6);
//! - hyper-rustls's `HttpsConnector` on it speaks TLS to the server, so TLS
//!   runs from end to end through the tunnel;
//! - [`ConnectWithin`] around both bounds the whole of it in time.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower_service::Service;

use super::proxy::{Proxy, ProxyRules, Route};
use super::{error_chain, show_duration};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The longest answer head a proxy may send to CONNECT: a real one is a
/// status line and a few headers; this bounds what a broken or hostile
/// proxy makes the client hold.
const MAX_CONNECT_ANSWER_BYTES: usize = 8 << 10;

/// The longest part of a proxy's reason phrase put in a message.
const MAX_REASON_CHARS: usize = 100;

/// Connects as [`ProxyRules::route`] says.
#[derive(Clone)]
pub(crate) struct RouteConnector {
    tcp: HttpConnector,
    rules: Arc<ProxyRules>,
}

impl RouteConnector {
    pub(crate) fn new(rules: Arc<ProxyRules>) -> RouteConnector {
        let mut tcp = HttpConnector::new();
        // https:// URIs come through here too (TLS goes on top).
        tcp.enforce_http(false);
        RouteConnector { tcp, rules }
    }
}

/// A connection the connector made: to the server, or to a proxy.
pub(crate) struct RoutedTcp {
    io: TokioIo<TcpStream>,
    /// Requests on it go to a proxy in absolute form ([`Route::Forward`]):
    /// hyper's client writes them so when the connection says it is
    /// proxied.
    forwarding: bool,
}

/// Why a request could not go through its proxy. Each message names the
/// proxy as `http://host:port (VARIABLE)`, never its credentials.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProxyError {
    /// The proxy variable for this server names a proxy drainpipe cannot
    /// use: fix the variable (the message says how).
    #[error("{0}")]
    Unusable(String),
    /// No TCP connection to the proxy: check its host and port.
    #[error("could not reach the proxy {proxy}: {cause}")]
    Unreachable { proxy: String, cause: String },
    /// `407` to a proxy URL without credentials: add them to it.
    #[error(
        "the proxy {proxy} asks for credentials ({status}): give them in its URL, http://user:password@host:port"
    )]
    CredentialsNeeded { proxy: String, status: String },
    /// `407` to the credentials in the proxy URL: they are wrong.
    #[error("the proxy {proxy} refused the credentials in its URL ({status})")]
    CredentialsRefused { proxy: String, status: String },
    /// Any other answer but 2xx to CONNECT: the proxy's rules may not allow
    /// the server (403), or it could not reach it (502, 504).
    #[error("the proxy {proxy} would not open a tunnel to {target}: it answered {status}")]
    TunnelRefused {
        proxy: String,
        target: String,
        status: String,
    },
    /// The proxy broke off, or did not answer in HTTP.
    #[error("the proxy {proxy} broke off opening a tunnel to {target}: {cause}")]
    TunnelBroken {
        proxy: String,
        target: String,
        cause: String,
    },
}

impl ProxyError {
    /// The error for a `407` from `proxy` (`status` as `407 Reason`).
    pub(crate) fn credentials(proxy: &Proxy, status: String) -> ProxyError {
        let proxy_shown = proxy.shown.clone();
        if proxy.authorization.is_some() {
            ProxyError::CredentialsRefused {
                proxy: proxy_shown,
                status,
            }
        } else {
            ProxyError::CredentialsNeeded {
                proxy: proxy_shown,
                status,
            }
        }
    }
}

impl Service<Uri> for RouteConnector {
    type Response = RoutedTcp;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<RoutedTcp, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.tcp.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, server: Uri) -> Self::Future {
        match self.rules.route(&server) {
            Route::Direct => {
                let connecting = self.tcp.call(server);
                Box::pin(async move {
                    Ok(RoutedTcp {
                        io: connecting.await?,
                        forwarding: false,
                    })
                })
            }
            Route::Forward(proxy) => {
                let connecting = self.tcp.call(proxy.uri.clone());
                Box::pin(async move {
                    let io = connecting.await.map_err(|error| ProxyError::Unreachable {
                        proxy: proxy.shown.clone(),
                        cause: error_chain(&error),
                    })?;
                    Ok(RoutedTcp {
                        io,
                        forwarding: true,
                    })
                })
            }
            Route::Tunnel(proxy) => {
                let connecting = self.tcp.call(proxy.uri.clone());
                let target = connect_target(&server);
                Box::pin(async move {
                    let tcp = connecting.await.map_err(|error| ProxyError::Unreachable {
                        proxy: proxy.shown.clone(),
                        cause: error_chain(&error),
                    })?;
                    let tcp = open_tunnel(tcp.into_inner(), &proxy, &target).await?;
                    Ok(RoutedTcp {
                        io: TokioIo::new(tcp),
                        forwarding: false,
                    })
                })
            }
            Route::Unusable(why) => Box::pin(async move { Err(ProxyError::Unusable(why).into()) }),
        }
    }
}

/// `inner` with each connection it makes bounded by `limit`: DNS, the TCP
/// connect, a proxy's tunnel and the TLS handshake together. hyper's own
/// connect timeout covers the TCP connect alone, so a server or proxy that
/// accepts the connection and then says nothing would otherwise hold a
/// request until the wait for its response gives up.
#[derive(Clone)]
pub(crate) struct ConnectWithin<C> {
    inner: C,
    limit: Duration,
}

impl<C> ConnectWithin<C> {
    pub(crate) fn new(inner: C, limit: Duration) -> ConnectWithin<C> {
        ConnectWithin { inner, limit }
    }
}

/// A connection not made within the connect timeout: the server or proxy
/// may be down, unreachable (packets dropped), or stuck in the handshake.
#[derive(Debug, thiserror::Error)]
#[error("no connection within {} (--connect-timeout)", show_duration(*.limit))]
pub(crate) struct ConnectTimedOut {
    pub(crate) limit: Duration,
}

impl<C> Service<Uri> for ConnectWithin<C>
where
    C: Service<Uri>,
    C::Future: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, server: Uri) -> Self::Future {
        let connecting = self.inner.call(server);
        let limit = self.limit;
        Box::pin(async move {
            match tokio::time::timeout(limit, connecting).await {
                Ok(connected) => connected.map_err(Into::into),
                Err(_) => Err(ConnectTimedOut { limit }.into()),
            }
        })
    }
}

/// `host:port` of an https:// server, as CONNECT names it (an IPv6
/// address in brackets, as the URI holds it).
fn connect_target(server: &Uri) -> String {
    let host = server.host().unwrap_or_default();
    format!("{host}:{}", server.port_u16().unwrap_or(443))
}

/// Asks the proxy on `tcp` for a tunnel to `target` and reads its answer.
///
/// hyper-util's `Tunnel` does the same but keeps the proxy's status to
/// itself (every refusal is "unsuccessful"): a user behind a proxy that
/// answers `403` for a blocked host, or `502` for a server it cannot
/// reach, needs to see which.
async fn open_tunnel(
    mut tcp: TcpStream,
    proxy: &Proxy,
    target: &str,
) -> Result<TcpStream, ProxyError> {
    let broken = |cause: String| ProxyError::TunnelBroken {
        proxy: proxy.shown.clone(),
        target: target.to_string(),
        cause,
    };
    let mut request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n").into_bytes();
    if let Some(authorization) = &proxy.authorization {
        request.extend_from_slice(b"Proxy-Authorization: ");
        request.extend_from_slice(authorization.as_bytes());
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"\r\n");
    tcp.write_all(&request)
        .await
        .map_err(|error| broken(error.to_string()))?;
    let mut head = Vec::with_capacity(128);
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() == MAX_CONNECT_ANSWER_BYTES {
            return Err(broken(format!(
                "its answer's head is over {MAX_CONNECT_ANSWER_BYTES} bytes"
            )));
        }
        // A byte at a time: what follows the head is the tunnel's, never
        // this function's to read.
        match tcp.read_u8().await {
            Ok(byte) => head.push(byte),
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(broken("it closed the connection".into()));
            }
            Err(error) => return Err(broken(error.to_string())),
        }
    }
    match connect_answer(&head) {
        Some((200..=299, _)) => Ok(tcp),
        Some((407, status)) => Err(ProxyError::credentials(proxy, status)),
        Some((_, status)) => Err(ProxyError::TunnelRefused {
            proxy: proxy.shown.clone(),
            target: target.to_string(),
            status,
        }),
        None => Err(broken("its answer is not HTTP".into())),
    }
}

/// The status of a proxy's answer head to CONNECT, and how to show it
/// (`403 Forbidden`, the reason cut to printable ASCII); `None` if the head
/// does not start with an HTTP/1 status line.
fn connect_answer(head: &[u8]) -> Option<(u16, String)> {
    let line = head.split(|&byte| byte == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut parts = line.splitn(3, ' ');
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let code = parts.next()?;
    if code.len() != 3 || !code.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let status = code.parse().ok()?;
    let reason: String = parts
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(MAX_REASON_CHARS)
        .collect();
    let shown = match reason.trim() {
        "" => code.to_string(),
        reason => format!("{code} {reason}"),
    };
    Some((status, shown))
}

impl Connection for RoutedTcp {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.forwarding)
    }
}

impl Read for RoutedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl Write for RoutedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connect_answer_is_its_status_line() {
        let answers: [(&[u8], u16, &str); 5] = [
            (
                b"HTTP/1.1 200 Connection established\r\n\r\n",
                200,
                "200 Connection established",
            ),
            (b"HTTP/1.0 200\r\n\r\n", 200, "200"),
            (
                b"HTTP/1.1 403 Forbidden\r\nVia: squid\r\n\r\n",
                403,
                "403 Forbidden",
            ),
            (
                b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n",
                407,
                "407 Proxy Authentication Required",
            ),
            // A terminal's escape is no part of a message.
            (
                b"HTTP/1.1 502 Bad\x1b[31m Gateway\r\n\r\n",
                502,
                "502 Bad[31m Gateway",
            ),
        ];
        for (head, status, shown) in answers {
            assert_eq!(
                connect_answer(head),
                Some((status, shown.to_string())),
                "{}",
                String::from_utf8_lossy(head)
            );
        }
        let not_http: [&[u8]; 3] = [
            b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"HTTP/2 200\r\n\r\n",
        ];
        for head in not_http {
            assert_eq!(
                connect_answer(head),
                None,
                "{}",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[test]
    fn connect_names_the_server_in_authority_form() {
        for (server, target) in [
            ("https://mcp.example.com/mcp", "mcp.example.com:443"),
            (
                "https://mcp.example.com:8443/mcp?k=v",
                "mcp.example.com:8443",
            ),
            ("https://[::1]:9/", "[::1]:9"),
        ] {
            assert_eq!(connect_target(&server.parse().unwrap()), target);
        }
    }
}
