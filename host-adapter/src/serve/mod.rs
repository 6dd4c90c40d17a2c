//! The proxy served over HTTP: any stdio MCP server made a Streamable HTTP
//! server, one child per session, for hosts that take remote servers only.
//!
//! ```text
//!  client ─POST─► guard ─► session ─(lines)─► proxy engine ─► child stdin
//!    ▲            (Host,     │ waiting: id → stream              │
//!    │             Origin,   ▼                                   ▼
//!    └─SSE/JSON◄─ outlet ◄─ router ◄─(frames)─ proxy engine ◄─ child stdout
//!  client ─GET──► the session's own stream (event ids, Last-Event-ID)
//! ```
//!
//! The HTTP side is a host end of the same engine `drainpipe proxy` runs
//! ([`crate::proxy::run`]): each session's child is behind the transport
//! limit, the content budget and the spill store, and ends with its session
//! as a proxied server ends with its host. What this module adds is what
//! a network brings:
//!
//! - **the guard** (`guard`): `Host` and `Origin` against an allow-list
//!   (DNS rebinding), a bearer token compared in constant time, a body
//!   limited before it is parsed;
//! - **sessions** (`session`): created by `initialize`, named by
//!   `Mcp-Session-Id`, ended by `DELETE`, by staying idle past
//!   [`ServeConfig::session_idle`], by their child exiting, or by this
//!   server stopping; at most [`ServeConfig::max_sessions`] at once;
//! - **outlets** (`outlet`): each response stream queues a bounded number
//!   of bytes; a client that does not read loses its own answers, never the
//!   child's progress or another session's; a client that goes away has
//!   its requests cancelled to the child (`notifications/cancelled`) and
//!   their late answers dropped;
//! - **revisions** (`stateless`, `legacy`): a 2026-07-28 client keeps no
//!   session, and its request is served by a child of its own; a
//!   2024-11-05 client gets the HTTP+SSE transport (`GET /sse`);
//! - **one shared child** (`shared`, `--shared`): every session's
//!   messages renumbered onto one child, for servers that take one client.

mod guard;
mod http;
mod legacy;
mod outlet;
mod session;
mod shared;
mod stateless;

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use guard::Guard;
pub use session::OnEnd;

use crate::proxy::{ProxyConfig, StderrSink};
use session::Sessions;

/// Makes the command of one session's server (a fresh child per session).
pub type CommandFactory = Arc<dyn Fn() -> tokio::process::Command + Send + Sync>;

/// How `serve` is configured. Start from `default()`.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The engine of each session: limits, content budget, spill store,
    /// sandbox, shutdown timeouts, as `drainpipe proxy` takes them. Its
    /// transport limit also bounds a POST body, checked before it is
    /// parsed.
    pub proxy: ProxyConfig,
    /// The MCP endpoint's path.
    pub path: String,
    /// Sessions open at once; past it `initialize` gets 503. Bounds the
    /// children, and with [`ServeConfig::stream_bytes`] the memory, one
    /// client's retries can take.
    pub max_sessions: usize,
    /// A session with no request for this long and nothing waiting for an
    /// answer is ended, its child with it: a client that vanished (no
    /// `DELETE`, no FIN) leaves no process behind. An open GET stream does
    /// not count as use.
    pub session_idle: Duration,
    /// Bytes queued per response stream for a client that reads slowly; a
    /// larger message is queued alone. Past it the stream's client loses
    /// its answers (an error for each, said in the metrics): a client that
    /// does not read costs this much memory, never the child's progress.
    pub stream_bytes: usize,
    /// Bytes of the session's own stream kept for a client that reconnects
    /// with `Last-Event-ID`; older events are dropped.
    pub replay_bytes: usize,
    /// How long a POST stream whose client went away keeps its requests
    /// for the client to resume it (`Last-Event-ID`, as the 2025-11-25
    /// revision lets a client do); past it they are cancelled to the child.
    /// Zero cancels at once.
    pub resume_window: Duration,
    /// The reconnection delay each event stream asks its client for
    /// (`retry:`).
    pub retry: Duration,
    /// How often an open event stream with nothing to say sends a comment:
    /// a write to a client that vanished then fails, and its stream ends.
    pub keep_alive: Duration,
    /// On a stop: how long open requests get to be answered before every
    /// session is ended.
    pub drain: Duration,
    /// Children started ahead for stateless requests (2026-07-28): each
    /// serves one request, as one started for it would, without the wait
    /// for a child to start. They count toward `max_sessions`.
    pub pool: usize,
    /// Every session on one child (started by the first, kept across
    /// sessions), for servers that take one client only: request ids and
    /// progress tokens are renumbered so two clients never collide, and
    /// `initialize` is answered from the child's first answer. No pool.
    pub shared: bool,
    /// Who may call: `Host`, `Origin`, the bearer token.
    pub guard: Guard,
    /// Serve HTTPS with this certificate and key ([`tls_config`]); `None`
    /// for plain HTTP (on loopback, or behind a TLS reverse proxy).
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for ServeConfig {
    /// `/mcp`, 32 sessions, 10 minutes idle, 4 MiB per stream, 1 MiB of
    /// replay, 5 s to resume a stream, 1 s to reconnect, a keep-alive every
    /// 15 s, 10 s to drain, loopback names only.
    fn default() -> Self {
        ServeConfig {
            proxy: ProxyConfig::default(),
            path: "/mcp".to_string(),
            max_sessions: 32,
            session_idle: Duration::from_secs(600),
            stream_bytes: 4 << 20,
            replay_bytes: 1 << 20,
            resume_window: Duration::from_secs(5),
            retry: Duration::from_secs(1),
            keep_alive: Duration::from_secs(15),
            drain: Duration::from_secs(10),
            guard: Guard::loopback(),
            pool: 0,
            shared: false,
            tls: None,
        }
    }
}

/// What a `serve` run counted.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ServeMetrics {
    /// Sessions started (each a child).
    pub sessions: u64,
    /// Sessions refused for `max_sessions`.
    pub sessions_refused: u64,
    /// Requests refused by the guard (Host, Origin, token).
    pub refused: u64,
    /// Requests cancelled to the child because their client went away.
    pub cancelled_on_disconnect: u64,
    /// Answers that arrived for a request nobody waited for any more.
    pub late_answers_dropped: u64,
    /// Answers and server messages lost because their client did not read.
    pub dropped_for_slow_clients: u64,
}

/// Serves `command` (a fresh child per session) on `listener` until `stop`;
/// then stops taking sessions, gives open requests [`ServeConfig::drain`]
/// and ends every session and its child. `on_session_end` gets each
/// session's id and the engine's outcome (its metrics). Must be called
/// within a tokio runtime.
pub async fn run(
    listener: TcpListener,
    command: CommandFactory,
    config: ServeConfig,
    sink: StderrSink,
    stop: CancellationToken,
    on_session_end: OnEnd,
) -> io::Result<ServeMetrics> {
    let config = Arc::new(config);
    let tasks = TaskTracker::new();
    let sessions = Sessions::new(
        config.clone(),
        command,
        sink.clone(),
        tasks.clone(),
        on_session_end,
    );
    let connections = CancellationToken::new();
    tasks.spawn(sessions.clone().reap_idle(stop.clone()));
    sessions.refill();
    loop {
        let (stream, peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors, most often: wait instead of spinning.
                    sink.line(&format!("serve: accept failed: {error}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        keep_alive(&stream, config.keep_alive);
        let _ = stream.set_nodelay(true);
        let (sessions, connections) = (sessions.clone(), connections.clone());
        match &config.tls {
            None => {
                tasks.spawn(http::connection(stream, peer, sessions, connections));
            }
            Some(tls) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
                let sink = sink.clone();
                tasks.spawn(async move {
                    // A handshake that never ends holds a task, not the server.
                    match tokio::time::timeout(HANDSHAKE_BOUND, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => {
                            http::connection(stream, peer, sessions, connections).await;
                        }
                        Ok(Err(error)) => {
                            sink.line(&format!("serve: TLS handshake with {peer} failed: {error}"))
                        }
                        Err(_) => sink.line(&format!("serve: TLS handshake with {peer} timed out")),
                    }
                });
            }
        }
    }
    drop(listener);
    sink.line("serve: stopping: no new sessions; open requests get their answers");
    sessions.drain(config.drain).await;
    sessions.end_all();
    connections.cancel();
    tasks.close();
    let bound = config.drain + config.proxy.shutdown.total() + Duration::from_secs(5);
    if tokio::time::timeout(bound, tasks.wait()).await.is_err() {
        sink.line("serve: some sessions did not end in time");
    }
    Ok(sessions.metrics())
}

/// The longest a client may take over its TLS handshake.
const HANDSHAKE_BOUND: Duration = Duration::from_secs(10);

/// The TLS configuration of a server with the certificate chain in
/// `cert` and the private key in `key` (PEM files), offering HTTP/2 and
/// HTTP/1.1.
pub fn tls_config(cert: &Path, key: &Path) -> io::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|error| invalid(format!("{}: {error}", cert.display())))?;
    if chain.is_empty() {
        return Err(invalid(format!("{}: no certificate in it", cert.display())));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|error| invalid(format!("{}: {error}", key.display())))?;
    // ring, as the remote client uses (remote/http.rs says why).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| invalid(error.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|error| invalid(format!("the certificate and the key: {error}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Whether `addr` is reachable from this machine only.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// TCP keepalive probes after `idle` of silence: a client whose machine or
/// network vanished (no FIN) is found by the kernel, and its streams end.
fn keep_alive(stream: &tokio::net::TcpStream, idle: Duration) {
    let probes = socket2::TcpKeepalive::new()
        .with_time(idle)
        .with_interval(Duration::from_secs(5));
    let _ = socket2::SockRef::from(stream).set_tcp_keepalive(&probes);
}
