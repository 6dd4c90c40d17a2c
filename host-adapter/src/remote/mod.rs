//! A remote MCP server as the proxy's server: Streamable HTTP (revisions
//! 2025-03-26 to 2026-07-28), or the 2024-11-05 HTTP+SSE transport where
//! the server has only that.
//!
//! ```text
//!  proxy ─(lines)─► bridge ──► POST one message ─► 202, or an answer body
//!                     │                                 (JSON or SSE)
//!                     │        GET: the server's own stream (SSE)
//!                     │                 │                  │
//!  proxy ◄─(lines)── Lines ◄── BodyLines per body ◄────────┘
//! ```
//!
//! The proxy does not know it: it writes the host's messages as lines to
//! what it takes for a server's stdin and reads lines from what it takes
//! for its stdout. Everything it does for a child (the transport limit
//! before any parse, `--clip` condensing as the answer streams, the spill
//! store, exactly one answer per request, metrics) is the same code here.
//! This module only moves messages between lines and HTTP:
//!
//! - each message the host sends is one POST; a request's answer body is
//!   read to its end (several messages may come before the answer), a
//!   notification's or response's `202` ends there;
//! - `Mcp-Session-Id` and `MCP-Protocol-Version` from the initialize answer
//!   go on every later request; a `GET` stream for the server's own
//!   messages opens once the session is initialized (`405`: the server has
//!   none), and the host's next message waits until the server has
//!   answered that GET (at most [`OWN_STREAM_WAIT`]), so nothing the server
//!   sends on it in reply to that message is lost; `DELETE` ends the
//!   session when the host closes stdin;
//! - a body that sends nothing for the idle timeout, breaks, or ends
//!   before answering its request is resumed with `Last-Event-ID` when its
//!   events had ids, else its request is answered with an error; an answer
//!   the proxy already gave is then dropped as late, so each request is
//!   answered exactly once;
//! - a first POST refused with `400`, `404` or `405` makes the bridge try
//!   the older transport: a `GET` for the `endpoint` event, then POSTs to
//!   that endpoint and every answer on the `GET` stream;
//! - each POST carries the headers revision 2026-07-28 asks for beside the
//!   message (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` and the message's own
//!   `MCP-Protocol-Version`: [`headers`]), learnt from `tools/list`
//!   answers where the server's tools ask for them;
//! - with OAuth on, every request goes through the token source
//!   ([`oauth`]): the bearer on it, and one retry after a `401` once the
//!   tokens are renewed.

mod headers;
mod http;
mod oauth;
mod out;

pub use oauth::{OAuthConfig, OAuthGrant, OAuthMode, PreRegisteredClient};

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use drainpipe_framer::owned::OwnedEnvelope;
use drainpipe_framer::{Config, Event, Framer};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Uri};
use tokio::io::{AsyncReadExt, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::pipe::jsonrpc::{SERVER_GONE, TOO_LARGE};
use crate::pipe::process::{self, ShutdownTimeouts, Stopped};
use crate::pipe::server_end::{Failure, ServerControl, Waiting};
use crate::pipe::sink::StderrSink;
use crate::pipe::sys;
use http::{
    Http, HttpError, MAX_ERROR_BODY_BYTES, Network, Timeouts, next_chunk, read_body, short_text,
    shown,
};
use out::{BodyKind, BodyLines, Lines, Passed};

/// JSON-RPC's code for a request whose parameters cannot be sent as they
/// are (a call to a tool the client refuses).
const INVALID_PARAMS: i64 = -32602;

const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// How many times a body that ended before its answer is resumed with
/// `Last-Event-ID` before its request is failed: a server that keeps
/// dropping the stream must not keep a request waiting forever.
const MAX_RESUMES: u32 = 3;

/// How long a server's own stream (the GET, or the older transport's
/// stream) may be silent before it is read again from a new request: such
/// a stream carries no answer a request waits for, and may be quiet for
/// hours.
const QUIET_STREAM: Duration = Duration::from_secs(24 * 3600);

/// How long the host's messages after `notifications/initialized` wait for
/// the server to answer the GET of its own stream. A server may send a
/// request there as soon as the host's first call arrives (an elicitation,
/// a sampling request), and the TypeScript SDK's server drops what it
/// sends on a stream not yet open: its tool then waits out its own
/// timeout. Bounded, because a server that holds the GET's head until it
/// has something to send would otherwise hold the host's first call.
const OWN_STREAM_WAIT: Duration = Duration::from_secs(5);

/// The longest HTTP error body read as a JSON-RPC error for the request:
/// far over a real one (an error with a list of versions), bounding what a
/// failing server makes the proxy hold.
const MAX_REFUSAL_BYTES: usize = 64 << 10;

/// Bytes of lines in flight between the bridge and the proxy, each way.
const PIPE_BYTES: usize = 256 << 10;

/// Which transport to speak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP, falling back to HTTP+SSE if the first POST is
    /// refused with 400, 404 or 405 (what `mcp-remote` does).
    #[default]
    Auto,
    /// Streamable HTTP only.
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport only (`url` is the SSE endpoint).
    Sse,
}

/// A remote server and how to reach it.
#[derive(Clone, Debug)]
pub struct RemoteConfig {
    /// The server's MCP endpoint (`https://…/mcp`).
    pub url: String,
    /// Headers sent on every request (`Authorization`, an API key), values
    /// as given. Never logged, never in an error, a metric or a span.
    pub headers: Vec<(String, String)>,
    /// Which transport.
    pub transport: Transport,
    /// The longest a body may send nothing (keep-alive comments count):
    /// past it the request it answers is failed, so a stalled stream never
    /// holds a request forever. Also bounds waiting for a response's head
    /// once connected.
    pub idle_timeout: Duration,
    /// The longest making a connection may take: DNS, the TCP connect, a
    /// proxy's CONNECT tunnel and the TLS handshake together. Past it the
    /// request fails, so a server or proxy that is down, unreachable, or
    /// accepts and then says nothing is not waited on for `idle_timeout`.
    pub connect_timeout: Duration,
    /// Whether and how to authorize with OAuth.
    pub oauth: OAuthConfig,
}

impl RemoteConfig {
    /// `url` with no headers, automatic transport, 5 min idle timeout and
    /// 30 s to connect.
    pub fn new(url: impl Into<String>) -> RemoteConfig {
        RemoteConfig {
            url: url.into(),
            headers: Vec::new(),
            transport: Transport::Auto,
            idle_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(30),
            oauth: OAuthConfig::default(),
        }
    }
}

/// The bridge as the proxy sees it: a server's stdin and stdout, and its
/// control.
pub(crate) struct Connection {
    pub(crate) input: DuplexStream,
    pub(crate) output: DuplexStream,
    /// Requests the bridge could not get an answer for.
    pub(crate) failures: mpsc::Receiver<Failure>,
    /// The server's host and port, as its URL names them.
    pub(crate) peer: (String, u16),
    pub(crate) control: Control,
}

/// Whether the remote session ended, and asking it to.
#[derive(Clone)]
pub(crate) struct Control {
    ended: CancellationToken,
    abort: CancellationToken,
    code: Arc<AtomicI32>,
}

impl Control {
    /// Waits until the bridge has ended; its code: 0 after the host closed
    /// its input and the session was ended, 1 if the server went away.
    pub(crate) async fn ended(&self) -> i32 {
        self.ended.cancelled().await;
        self.code.load(Ordering::Relaxed)
    }

    /// Stops at once: bodies being read are dropped (their requests are
    /// answered by the proxy as for a server that exited).
    pub(crate) fn abort(&self) {
        self.abort.cancel();
    }
}

/// The remote session, as the proxy ends it.
impl ServerControl for Control {
    fn ended(&self) -> Waiting<'_, std::process::ExitStatus> {
        Box::pin(async move { sys::exit_status_of(Control::ended(self).await) })
    }

    fn stop(&self, timeouts: ShutdownTimeouts) -> Waiting<'_, Stopped> {
        Box::pin(async move {
            let mut ending = process::Ending::Exited;
            let code = match tokio::time::timeout(timeouts.after_close, Control::ended(self)).await
            {
                Ok(code) => code,
                Err(_) => {
                    ending = process::Ending::Terminated;
                    self.abort();
                    tokio::time::timeout(timeouts.after_term, Control::ended(self))
                        .await
                        .unwrap_or(1)
                }
            };
            Stopped {
                status: Some(sys::exit_status_of(code)),
                ending,
                killed: false,
                leftovers_killed: false,
            }
        })
    }

    fn terminate(&self) {
        self.abort();
    }

    fn what(&self) -> &'static str {
        "ending the remote session"
    }
}

/// Starts the bridge to `config.url`. Fails only on a bad URL or header;
/// the server is first reached with the host's first message.
pub(crate) fn connect(
    config: &RemoteConfig,
    framer: Config,
    condensing: bool,
    sink: StderrSink,
) -> io::Result<Connection> {
    let url: Uri = config.url.parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "--url is not a valid URL".to_string(),
        )
    })?;
    if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "--url must be an http:// or https:// URL, not {}",
                shown(&url)
            ),
        ));
    }
    let https = url.scheme_str() == Some("https");
    let peer = (
        url.host()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_string(),
        url.port_u16().unwrap_or(if https { 443 } else { 80 }),
    );
    let headers = config
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), expand_env(value)))
        .collect::<Vec<_>>();
    let network = Network::from_env(&mut |warning| sink.line(&warning))?;
    let timeouts = Timeouts {
        connect: config.connect_timeout,
        response_head: config.idle_timeout,
    };
    let http = Http::new(&headers, timeouts, network)?;
    let auth = oauth::TokenSource::for_config(
        &config.oauth,
        &url,
        &http,
        sink.clone(),
        config.idle_timeout,
    )?;
    let (proxy_in, bridge_in) = tokio::io::duplex(PIPE_BYTES);
    let (bridge_out, proxy_out) = tokio::io::duplex(PIPE_BYTES);
    let (failed, failures) = mpsc::channel(1024);
    let control = Control {
        ended: CancellationToken::new(),
        abort: CancellationToken::new(),
        code: Arc::new(AtomicI32::new(0)),
    };
    let shared = Arc::new(Shared {
        http,
        auth,
        url,
        transport: config.transport,
        idle: config.idle_timeout,
        max_depth: framer.max_depth(),
        limit: (!condensing).then_some(framer.max_frame_bytes()),
        lines: Lines::new(bridge_out),
        session: Mutex::new(Session::default()),
        tools: Mutex::new(headers::ToolHeaders::default()),
        sink,
        gone: AtomicBool::new(false),
        control: control.clone(),
        own_stream: CancellationToken::new(),
        waiting: Mutex::new(HashSet::new()),
        failed,
    });
    tokio::spawn(bridge(shared, bridge_in, framer));
    Ok(Connection {
        input: proxy_in,
        output: proxy_out,
        failures,
        peer,
        control,
    })
}

/// `${NAME}` in `value` (a header, a client id or secret) replaced by the
/// environment variable `NAME` (empty if unset), so that a secret stays in
/// the environment and out of the host's configuration file.
pub fn expand_env(value: &str) -> String {
    expand_vars(value, |name| std::env::var(name).ok())
}

/// [`expand_env`] with the variables from `lookup`.
fn expand_vars(value: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        let name = &rest[start + 2..start + 2 + len];
        out.push_str(&rest[..start]);
        if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.is_empty() {
            out.push_str(&lookup(name).unwrap_or_default());
        } else {
            out.push_str(&rest[start..start + 3 + len]);
        }
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    out
}

/// What the server said about the session.
#[derive(Default)]
struct Session {
    /// Decided by the first POST.
    mode: Option<Mode>,
    id: Option<HeaderValue>,
    protocol_version: Option<HeaderValue>,
    /// The GET stream was started.
    listening: bool,
}

#[derive(Clone, Debug)]
enum Mode {
    Streamable,
    /// The older transport: messages are POSTed to `endpoint`, answers
    /// come on the GET stream.
    Legacy {
        endpoint: Uri,
    },
}

struct Shared {
    http: Http,
    /// OAuth's bearer tokens, when it is on.
    auth: Option<oauth::TokenSource>,
    url: Uri,
    transport: Transport,
    idle: Duration,
    max_depth: u32,
    /// The transport limit when the proxy does not condense (see
    /// [`BodyLines::limit`]); `None` when it does, as it needs every byte.
    limit: Option<usize>,
    lines: Lines,
    session: Mutex<Session>,
    /// The `x-mcp-header` marks of the server's tools.
    tools: Mutex<headers::ToolHeaders>,
    sink: StderrSink,
    /// The server is gone (its session ended, or the older transport's
    /// stream broke): every later request fails at once.
    gone: AtomicBool,
    control: Control,
    /// Cancelled once the server has answered the first GET of its own
    /// stream, whatever it answered, or that stream will not be opened.
    own_stream: CancellationToken,
    /// The older transport: requests whose answer is awaited on the GET
    /// stream, by canonical id.
    waiting: Mutex<HashSet<Vec<u8>>>,
    /// Where requests without an answer are reported to the proxy, which
    /// answers each one still waiting.
    failed: mpsc::Sender<Failure>,
}

/// One message from the host.
struct Outgoing {
    bytes: Bytes,
    /// The request's id as written, when it is a request.
    id: Option<Vec<u8>>,
    /// Its canonical form, to match an answer by.
    key: Option<Vec<u8>>,
    method: Option<Vec<u8>>,
}

impl Outgoing {
    /// `notifications/initialized`: the server's own stream opens after it.
    fn is_initialized(&self) -> bool {
        self.method.as_deref() == Some(b"notifications/initialized")
    }
}

async fn bridge(shared: Arc<Shared>, mut input: DuplexStream, framer: Config) {
    let mut framer = Framer::new(framer);
    let mut tasks = JoinSet::new();
    let mut chunk = vec![0u8; 64 << 10];
    let abort = shared.control.abort.clone();
    loop {
        let read = tokio::select! {
            () = abort.cancelled() => break,
            read = input.read(&mut chunk) => read,
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut messages = Vec::new();
        framer.push(&chunk[..n], |event| {
            if let Event::Frame(frame) = event {
                let envelope = frame.envelope;
                let request = envelope.method.is_some() && envelope.id.is_some();
                messages.push(Outgoing {
                    bytes: Bytes::copy_from_slice(frame.bytes),
                    id: request
                        .then(|| envelope.id.map(|id| id.to_json()))
                        .flatten(),
                    key: request
                        .then(|| envelope.id.map(|id| id.canonical()))
                        .flatten(),
                    method: envelope.method.map(<[u8]>::to_vec),
                });
            }
        });
        for message in messages {
            // Until the transport is known, one message at a time: the
            // first POST decides it. `notifications/initialized` too: the
            // server's own stream opens after it, before the next message
            // goes (see `OWN_STREAM_WAIT`).
            let decided = shared.session.lock().expect("session").mode.is_some();
            if decided && !message.is_initialized() {
                tasks.spawn(shared.clone().send(message));
            } else {
                tokio::select! {
                    () = abort.cancelled() => break,
                    () = shared.clone().send(message) => {}
                }
            }
        }
        // Finished tasks are reaped as we go.
        while tasks.try_join_next().is_some() {}
    }
    // The host closed its input: what it asked is answered (the proxy
    // bounds this wait), then the session ends.
    tokio::select! {
        () = abort.cancelled() => tasks.abort_all(),
        () = async { while tasks.join_next().await.is_some() {} } => {}
    }
    if !abort.is_cancelled() {
        shared.end_session().await;
    }
    shared.lines.close().await;
    shared.control.ended.cancel();
}

impl Shared {
    /// Sends one message and reads what answers it.
    async fn send(self: Arc<Self>, message: Outgoing) {
        if self.gone.load(Ordering::Relaxed) {
            let reason = "the remote session has ended";
            self.fail(&message, reason).await;
            return;
        }
        let mode = self.session.lock().expect("session").mode.clone();
        let mode = match mode {
            Some(mode) => mode,
            None => match self.transport {
                Transport::Sse => match self.open_legacy().await {
                    Ok(mode) => mode,
                    Err(why) => return self.fail_gone(&message, &why).await,
                },
                _ => Mode::Streamable,
            },
        };
        match mode {
            Mode::Streamable => self.post_streamable(message).await,
            Mode::Legacy { endpoint } => self.post_legacy(&endpoint, message).await,
        }
    }

    /// Sends `request`: through the token source when OAuth is on (the
    /// bearer on it, one retry after a `401`), else as it is.
    async fn http_send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, HttpError> {
        match &self.auth {
            Some(auth) => auth.send(&self.http, request).await,
            None => self.http.send(request).await,
        }
    }

    fn request(&self, method: Method, uri: &Uri, body: Bytes) -> Request<Full<Bytes>> {
        let mut request = Request::builder()
            .method(method)
            .uri(uri.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .body(Full::new(body))
            .expect("a request from parts already checked");
        let headers = request.headers_mut();
        let session = self.session.lock().expect("session");
        if let Some(id) = &session.id {
            headers.insert(SESSION_ID, id.clone());
        }
        if let Some(version) = &session.protocol_version {
            headers.insert(PROTOCOL_VERSION, version.clone());
        }
        request
    }

    async fn post_streamable(self: Arc<Self>, message: Outgoing) {
        let mut request = self.request(Method::POST, &self.url, message.bytes.clone());
        request
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let refused = headers::add(
            &message.bytes,
            &self.tools.lock().expect("tools"),
            request.headers_mut(),
        );
        if let Err(why) = refused {
            return self.fail_with(&message, INVALID_PARAMS, &why).await;
        }
        let first = self.session.lock().expect("session").mode.is_none();
        let response = match self.http_send(request).await {
            Ok(response) => response,
            Err(error) => {
                if first {
                    self.session.lock().expect("session").mode = Some(Mode::Streamable);
                }
                return self.fail(&message, &error.to_string()).await;
            }
        };
        let status = response.status();
        let session_id = response.headers().get(SESSION_ID).cloned();
        let mut response = Some(response);
        let mut refusal = None;
        if !status.is_success()
            && !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
            && message.key.is_some()
            && response.as_ref().map(body_kind) == Some(BodyKind::Json)
        {
            let body = response.take().expect("not taken yet").into_body();
            match self.pass_refusal(body, &message).await {
                Ok(()) => {
                    if first {
                        self.session.lock().expect("session").mode = Some(Mode::Streamable);
                    }
                    return;
                }
                Err(text) => refusal = Some(text),
            }
        }
        if first {
            if self.transport == Transport::Auto
                && matches!(
                    status,
                    StatusCode::BAD_REQUEST
                        | StatusCode::NOT_FOUND
                        | StatusCode::METHOD_NOT_ALLOWED
                )
            {
                self.sink.line(&format!(
                    "{} answered the first POST with {status}: trying the HTTP+SSE transport",
                    shown(&self.url)
                ));
                match self.open_legacy().await {
                    Ok(Mode::Legacy { endpoint }) => {
                        return self.post_legacy(&endpoint, message).await;
                    }
                    Ok(Mode::Streamable) => {}
                    Err(why) => return self.fail_gone(&message, &why).await,
                }
            }
            let mut session = self.session.lock().expect("session");
            session.mode = Some(Mode::Streamable);
            if let Some(mut id) = session_id {
                id.set_sensitive(true);
                session.id = Some(id);
            }
        }
        if status == StatusCode::NOT_FOUND && self.session.lock().expect("session").id.is_some() {
            // The server forgot the session: the host must start again.
            self.gone.store(true, Ordering::Relaxed);
            self.control.code.store(1, Ordering::Relaxed);
            self.fail(
                &message,
                "the server ended the session (HTTP 404): restart the server",
            )
            .await;
            self.control.abort();
            return;
        }
        let response = match response {
            Some(response) if status.is_success() => response,
            response => {
                let text = match (refusal, response) {
                    (Some(text), _) => text,
                    (None, Some(response)) => {
                        let mut body = response.into_body();
                        short_text(&mut body, MAX_ERROR_BODY_BYTES, self.idle).await
                    }
                    (None, None) => String::new(),
                };
                let why = match status {
                    StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => format!(
                        "{} refused the request: HTTP {status} (not authorized: see the OAuth lines above, or give --header 'Authorization: Bearer ${{TOKEN}}'){}",
                        shown(&self.url),
                        said(&text)
                    ),
                    _ => format!("{} answered HTTP {status}{}", shown(&self.url), said(&text)),
                };
                return self.fail(&message, &why).await;
            }
        };
        let capture = match message.method.as_deref() {
            Some(b"initialize") => Capture::Initialize,
            Some(b"tools/list") => Capture::ToolsList,
            _ => Capture::Nothing,
        };
        let initialized = message.is_initialized();
        if status == StatusCode::ACCEPTED || message.key.is_none() {
            // A notification or a response: nothing more comes, unless the
            // server answers with a stream anyway.
            if initialized {
                self.clone().listen();
                self.own_stream_open().await;
            }
            if status == StatusCode::ACCEPTED {
                return;
            }
        }
        let kind = body_kind(&response);
        let mut lines = BodyLines::new(self.lines.clone(), kind, self.max_depth).limit(self.limit);
        lines.capture_messages = capture != Capture::Nothing;
        if capture == Capture::ToolsList {
            lines.capture_bytes = headers::MAX_TOOLS_LIST_BYTES;
        }
        let answered = self
            .read_answer(response.into_body(), &mut lines, &message, capture)
            .await;
        if answered || message.key.is_none() {
            return;
        }
        // The body ended before the answer: resume from its last event.
        let mut resumes = 0;
        let mut why = "the server ended the answer's stream without answering".to_string();
        while resumes < MAX_RESUMES && !lines.last_event_id().is_empty() {
            resumes += 1;
            tokio::time::sleep(Duration::from_millis(
                lines.retry_ms.unwrap_or(100).min(5_000),
            ))
            .await;
            let mut request = self.request(Method::GET, &self.url, Bytes::new());
            request
                .headers_mut()
                .insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            if let Ok(id) = HeaderValue::from_bytes(lines.last_event_id()) {
                request.headers_mut().insert(LAST_EVENT_ID, id);
            }
            match self.http_send(request).await {
                Ok(response) if response.status().is_success() => {
                    lines.reconnected();
                    if self
                        .read_answer(response.into_body(), &mut lines, &message, Capture::Nothing)
                        .await
                    {
                        return;
                    }
                }
                Ok(response) => {
                    why = format!("resuming the answer's stream: HTTP {}", response.status());
                    break;
                }
                Err(error) => {
                    why = format!("resuming the answer's stream: {error}");
                    break;
                }
            }
        }
        self.fail(&message, &why).await;
    }

    /// The JSON body of an HTTP error: passed on as `message`'s answer when
    /// it is a JSON-RPC error for it (revision 2026-07-28 answers a request
    /// for a revision the server lacks with `400` and `-32022`, naming the
    /// ones it has: the host's client needs that to retry), else its text
    /// for the proxy's own error.
    async fn pass_refusal(&self, mut body: Incoming, message: &Outgoing) -> Result<(), String> {
        let bytes = read_body(&mut body, MAX_REFUSAL_BYTES, self.idle)
            .await
            .map_err(|why| format!("(its body: {why})"))?;
        #[derive(serde::Deserialize)]
        struct Refusal {
            id: serde_json::Value,
            error: serde_json::Value,
        }
        let answers = serde_json::from_slice::<Refusal>(&bytes).is_ok_and(|refusal| {
            refusal.error.is_object()
                && message.id.as_deref().is_some_and(|id| {
                    serde_json::from_slice::<serde_json::Value>(id).ok() == Some(refusal.id)
                })
        });
        if !answers {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_ERROR_BODY_BYTES)]);
            return Err(text.trim().to_string());
        }
        let mut lines = BodyLines::new(self.lines.clone(), BodyKind::Json, self.max_depth);
        lines.push(&bytes).await;
        let (passed, _) = lines.end().await;
        if passed
            .iter()
            .any(|p| matches!(p, Passed::Message { valid: true, .. }))
        {
            Ok(())
        } else {
            Err(
                String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_ERROR_BODY_BYTES)])
                    .trim()
                    .to_string(),
            )
        }
    }

    /// Reads a body into the lines; true when it answered `message`'s
    /// request with a valid message. A stalled or broken body is ended and
    /// reported to stderr.
    async fn read_answer(
        &self,
        mut body: Incoming,
        lines: &mut BodyLines,
        message: &Outgoing,
        capture: Capture,
    ) -> bool {
        let mut answered = false;
        // Notes what a body passed on; true if a message was over the limit.
        let note = |passed: Vec<Passed>, answered: &mut bool| {
            let mut captured = None;
            let mut oversize = false;
            for item in passed {
                match item {
                    Passed::Oversize => oversize = true,
                    Passed::Captured(data) => captured = Some(data),
                    Passed::Message { envelope, valid } => {
                        if is_answer(&envelope, message)
                            && let Some(data) = captured.take()
                        {
                            match capture {
                                Capture::Initialize => {
                                    if let Some(version) = protocol_version(data) {
                                        self.session.lock().expect("session").protocol_version =
                                            Some(version);
                                    }
                                }
                                Capture::ToolsList => {
                                    self.tools.lock().expect("tools").learn(&data);
                                }
                                Capture::Nothing => {}
                            }
                        }
                        if valid && is_answer(&envelope, message) {
                            *answered = true;
                        }
                    }
                }
            }
            oversize
        };
        let abort = self.control.abort.clone();
        loop {
            let next = tokio::select! {
                () = abort.cancelled() => Err("the proxy is stopping".to_string()),
                next = next_chunk(&mut body, self.idle) => next,
            };
            match next {
                Ok(Some(chunk)) => {
                    let passed = lines.push(&chunk).await;
                    if note(passed, &mut answered) && !answered {
                        // The answer is over the transport limit, its id
                        // most likely still to come (the SDKs write it
                        // last): the POST names the request. The rest of
                        // the body is not read; dropping it closes the
                        // connection, so the server stops writing.
                        let limit = self.limit.unwrap_or_default();
                        let why = format!(
                            "the server's answer is over the transport limit of {limit} bytes; nothing of it was parsed"
                        );
                        self.fail_with(message, TOO_LARGE, &why).await;
                        return true;
                    }
                }
                Ok(None) => {
                    let (passed, _) = lines.end().await;
                    note(passed, &mut answered);
                    return answered;
                }
                Err(why) => {
                    let (passed, inside) = lines.end().await;
                    note(passed, &mut answered);
                    if !answered {
                        let at = if inside { " inside a message" } else { "" };
                        self.sink.line(&format!(
                            "the answer's stream from {} stopped{at}: {why}",
                            shown(&self.url)
                        ));
                    }
                    return answered;
                }
            }
        }
    }

    /// Waits until the server has answered the first GET of its own stream
    /// (at most `OWN_STREAM_WAIT`).
    async fn own_stream_open(&self) {
        tokio::select! {
            () = self.own_stream.cancelled() => {}
            () = self.control.abort.cancelled() => {}
            () = tokio::time::sleep(OWN_STREAM_WAIT) => self.sink.line(&format!(
                "{} has not answered the GET of its own stream in {} s: going on without it",
                shown(&self.url),
                OWN_STREAM_WAIT.as_secs()
            )),
        }
    }

    /// Opens the server's own stream (GET) once the session is
    /// initialized, and keeps it open: reconnected with `Last-Event-ID`
    /// when it ends, given up at `405` (the server has none) or when the
    /// session ends.
    fn listen(self: Arc<Self>) {
        {
            let mut session = self.session.lock().expect("session");
            if session.listening {
                return;
            }
            session.listening = true;
        }
        tokio::spawn(async move {
            // Cancels `own_stream` when the first GET is answered, or when
            // this task ends before that.
            let mut first = Some(self.own_stream.clone().drop_guard());
            let mut lines = BodyLines::new(self.lines.clone(), BodyKind::Events, self.max_depth)
                .limit(self.limit);
            let abort = self.control.abort.clone();
            let mut failures = 0u32;
            while !abort.is_cancelled() && !self.gone.load(Ordering::Relaxed) {
                let mut request = self.request(Method::GET, &self.url, Bytes::new());
                request
                    .headers_mut()
                    .insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
                if let Ok(id) = HeaderValue::from_bytes(lines.last_event_id())
                    && !lines.last_event_id().is_empty()
                {
                    request.headers_mut().insert(LAST_EVENT_ID, id);
                }
                let response = tokio::select! {
                    () = abort.cancelled() => return,
                    response = self.http_send(request) => response,
                };
                drop(first.take());
                match response {
                    Ok(response) if response.status().is_success() => {
                        failures = 0;
                        let mut body = response.into_body();
                        loop {
                            let next = tokio::select! {
                                () = abort.cancelled() => return,
                                next = next_chunk(&mut body, QUIET_STREAM) => next,
                            };
                            match next {
                                Ok(Some(chunk)) => {
                                    lines.push(&chunk).await;
                                }
                                _ => break,
                            }
                        }
                        lines.end().await;
                        lines.reconnected();
                    }
                    Ok(response) if response.status() == StatusCode::METHOD_NOT_ALLOWED => return,
                    Ok(response) if response.status() == StatusCode::NOT_FOUND => return,
                    Ok(_) | Err(_) => failures += 1,
                }
                let wait = lines.retry_ms.unwrap_or(1000).clamp(100, 30_000) << failures.min(4);
                tokio::select! {
                    () = abort.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_millis(wait.min(60_000))) => {}
                }
            }
        });
    }

    /// Ends the session (`DELETE`), if the server gave one.
    async fn end_session(&self) {
        let (id, mode) = {
            let session = self.session.lock().expect("session");
            (session.id.clone(), session.mode.clone())
        };
        if let (Some(_), Some(Mode::Streamable)) = (id, mode) {
            let request = self.request(Method::DELETE, &self.url, Bytes::new());
            let _ = tokio::time::timeout(Duration::from_secs(5), self.http_send(request)).await;
        }
    }

    /// The older transport: opens the GET stream, waits for its `endpoint`
    /// event, and leaves a task reading every message on it.
    async fn open_legacy(self: &Arc<Self>) -> Result<Mode, String> {
        let mut request = self.request(Method::GET, &self.url, Bytes::new());
        request
            .headers_mut()
            .insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let response = self
            .http_send(request)
            .await
            .map_err(|error| error.to_string())?;
        if !response.status().is_success() {
            return Err(format!(
                "{} answered the HTTP+SSE stream's GET with HTTP {}",
                shown(&self.url),
                response.status()
            ));
        }
        let mut body = response.into_body();
        let mut lines = BodyLines::new(self.lines.clone(), BodyKind::Events, self.max_depth)
            .capture_type(b"endpoint")
            .limit(self.limit);
        let endpoint = loop {
            match next_chunk(&mut body, self.idle).await {
                Ok(Some(chunk)) => {
                    let passed = lines.push(&chunk).await;
                    if let Some(data) = passed.into_iter().find_map(|p| match p {
                        Passed::Captured(data) => Some(data),
                        _ => None,
                    }) {
                        break data;
                    }
                }
                Ok(None) => {
                    return Err("the HTTP+SSE stream ended before its endpoint event".into());
                }
                Err(why) => return Err(format!("waiting for the HTTP+SSE endpoint event: {why}")),
            }
        };
        let endpoint = String::from_utf8_lossy(&endpoint).trim().to_string();
        let endpoint = resolve(&self.url, &endpoint)
            .ok_or_else(|| "the HTTP+SSE endpoint event holds no usable URL".to_string())?;
        let mode = Mode::Legacy { endpoint };
        self.session.lock().expect("session").mode = Some(mode.clone());
        let shared = self.clone();
        tokio::spawn(async move {
            let abort = shared.control.abort.clone();
            loop {
                let next = tokio::select! {
                    () = abort.cancelled() => return,
                    next = next_chunk(&mut body, QUIET_STREAM) => next,
                };
                match next {
                    Ok(Some(chunk)) => {
                        let passed = lines.push(&chunk).await;
                        shared.answered_legacy(passed);
                    }
                    end => {
                        let (passed, _) = lines.end().await;
                        shared.answered_legacy(passed);
                        let why = match end {
                            Err(why) => format!("the HTTP+SSE stream broke: {why}"),
                            _ => "the HTTP+SSE stream ended".to_string(),
                        };
                        shared.sink.line(&why);
                        // No way to resume it: the session is over, and
                        // whatever waits is answered by the proxy.
                        shared.gone.store(true, Ordering::Relaxed);
                        shared.control.code.store(1, Ordering::Relaxed);
                        shared.control.abort();
                        return;
                    }
                }
            }
        });
        Ok(mode)
    }

    fn answered_legacy(&self, passed: Vec<Passed>) {
        let mut waiting = self.waiting.lock().expect("waiting");
        for item in passed {
            if let Passed::Message { envelope, .. } = item
                && envelope.method.is_none()
                && let Some(id) = &envelope.id
            {
                waiting.remove(&id.canonical());
            }
        }
    }

    async fn post_legacy(&self, endpoint: &Uri, message: Outgoing) {
        if let Some(key) = &message.key {
            self.waiting.lock().expect("waiting").insert(key.clone());
        }
        let mut request = self.request(Method::POST, endpoint, message.bytes.clone());
        request
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        match self.http_send(request).await {
            Ok(response) if response.status().is_success() => {}
            Ok(response) => {
                let status = response.status();
                let text =
                    short_text(&mut response.into_body(), MAX_ERROR_BODY_BYTES, self.idle).await;
                if self.forget_legacy(&message) {
                    self.fail(
                        &message,
                        &format!("{} answered HTTP {status}{}", shown(endpoint), said(&text)),
                    )
                    .await;
                }
            }
            Err(error) => {
                if self.forget_legacy(&message) {
                    self.fail(&message, &error.to_string()).await;
                }
            }
        }
    }

    /// Stops waiting for `message`'s answer; true if it was still awaited.
    fn forget_legacy(&self, message: &Outgoing) -> bool {
        match &message.key {
            Some(key) => self.waiting.lock().expect("waiting").remove(key),
            None => false,
        }
    }

    /// Answers `message` (if it is a request) with an error, as the server.
    async fn fail(&self, message: &Outgoing, why: &str) {
        self.fail_with(message, SERVER_GONE, why).await;
    }

    async fn fail_with(&self, message: &Outgoing, code: i64, why: &str) {
        if let Some(id) = &message.id {
            let failure = Failure {
                id: id.clone(),
                code,
                message: why.to_string(),
                limit: (code == TOO_LARGE).then_some(self.limit.unwrap_or_default() as u64),
            };
            let _ = self.failed.send(failure).await;
        } else {
            self.sink.line(&format!(
                "a message to {} was not delivered: {why}",
                shown(&self.url)
            ));
        }
    }

    /// The server cannot be reached at all: this request fails and the
    /// proxy ends, as it would for a server that cannot start.
    async fn fail_gone(&self, message: &Outgoing, why: &str) {
        self.sink.line(why);
        self.fail(message, why).await;
        self.gone.store(true, Ordering::Relaxed);
        self.control.code.store(1, Ordering::Relaxed);
        self.control.abort();
    }
}

/// Whether `envelope` is the answer to `message`'s request.
fn is_answer(envelope: &OwnedEnvelope, message: &Outgoing) -> bool {
    envelope.method.is_none()
        && (envelope.has_result || envelope.has_error)
        && envelope.id.as_ref().map(|id| id.canonical()) == message.key
}

fn body_kind(response: &Response<Incoming>) -> BodyKind {
    let events = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("text/event-stream"));
    if events {
        BodyKind::Events
    } else {
        BodyKind::Json
    }
}

/// Which answer is read for the bridge itself as well.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Capture {
    Nothing,
    /// The protocol version, for the later requests' headers.
    Initialize,
    /// The tools' `x-mcp-header` marks ([`headers`]).
    ToolsList,
}

/// `result.protocolVersion` of an initialize answer.
fn protocol_version(data: Vec<u8>) -> Option<HeaderValue> {
    let value: serde_json::Value = serde_json::from_slice(&data).ok()?;
    let version = value.get("result")?.get("protocolVersion")?.as_str()?;
    HeaderValue::from_str(version).ok()
}

/// An endpoint as the older transport sends it (a path, or a URL) made
/// absolute against the stream's URL.
fn resolve(base: &Uri, endpoint: &str) -> Option<Uri> {
    let base = url::Url::parse(&base.to_string()).ok()?;
    let joined = base.join(endpoint).ok()?;
    if joined.origin() != base.origin() {
        // The transport's rules: the endpoint is on the same origin.
        return None;
    }
    joined.as_str().parse().ok()
}

fn said(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {}", text.chars().take(300).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_references_in_header_values_are_expanded() {
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_string());
        assert_eq!(expand_vars("Bearer ${TOKEN}", env), "Bearer s3cret");
        assert_eq!(expand_vars("a ${NOT-A-NAME} b", env), "a ${NOT-A-NAME} b");
        assert_eq!(expand_vars("no reference", env), "no reference");
        assert_eq!(expand_vars("${UNSET}!", env), "!");
        assert_eq!(expand_vars("${open", env), "${open");
        assert_eq!(expand_vars("${TOKEN}${TOKEN}", env), "s3crets3cret");
    }

    #[test]
    fn the_older_transports_endpoint_stays_on_the_streams_origin() {
        let base: Uri = "http://127.0.0.1:8080/sse".parse().unwrap();
        assert_eq!(
            resolve(&base, "/messages?sessionId=abc")
                .unwrap()
                .to_string(),
            "http://127.0.0.1:8080/messages?sessionId=abc"
        );
        assert!(resolve(&base, "http://elsewhere.example/messages").is_none());
    }
}
