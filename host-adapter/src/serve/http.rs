//! The HTTP side of `serve`: each connection, each request, the MCP
//! endpoint's three methods (Streamable HTTP) and `/healthz`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use super::outlet::{EventBody, Gone};
use super::session::{Asked, Refused, Session, Sessions, normalise};
use super::{legacy, stateless};
use crate::pipe::jsonrpc::{INVALID_REQUEST, PARSE_ERROR, TOO_LARGE};

pub(super) type Body = UnsyncBoxBody<Bytes, Infallible>;

const SESSION_HEADER: &str = "mcp-session-id";

/// The longest a client may take to send a request's head.
const HEAD_BOUND: Duration = Duration::from_secs(30);

/// How long a connection gets to finish its responses once the server
/// stops (its sessions are ended by then, so its streams end too).
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Serves one connection (HTTP/1.1 or HTTP/2, over TCP or TLS) until it
/// closes or `stop`.
pub(crate) async fn connection(
    stream: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    _peer: SocketAddr,
    sessions: Arc<Sessions>,
    stop: CancellationToken,
) {
    let keep_alive = sessions.config.keep_alive;
    let service = service_fn(move |request| {
        let sessions = sessions.clone();
        async move { Ok::<_, Infallible>(handle(request, sessions).await) }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // A client that opens a connection and never finishes a request's head
    // (slowloris) is closed after HEAD_BOUND; an HTTP/2 peer that stops
    // answering pings is dropped (its streams end, their requests are
    // cancelled) instead of holding the connection for good.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_BOUND);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(keep_alive)
        .keep_alive_timeout(keep_alive + Duration::from_secs(5));
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(CLOSE_GRACE, connection).await;
        }
    }
}

async fn handle(request: Request<Incoming>, sessions: Arc<Sessions>) -> Response<Body> {
    // For a load balancer's probe, which names no host of ours and carries
    // no token: it learns that the process answers, nothing more.
    if request.uri().path() == "/healthz" {
        return respond(StatusCode::OK, "application/json", r#"{"status":"ok"}"#);
    }
    let authority = request.uri().authority().map(|a| a.as_str());
    if let Err(refusal) = sessions.config.guard.check(authority, request.headers()) {
        sessions.count(|m| m.refused += 1);
        let status = StatusCode::from_u16(refusal.status()).expect("a status");
        let mut response = error(status, -32000, refusal.message());
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        return response;
    }
    match (request.method(), request.uri().path()) {
        (&Method::GET, legacy::STREAM) => return legacy::open(request, &sessions),
        (&Method::POST, legacy::MESSAGES) => return legacy::message(request, sessions).await,
        _ => {}
    }
    if request.uri().path() != sessions.config.path {
        return error(
            StatusCode::NOT_FOUND,
            -32000,
            "Not Found: the MCP endpoint is elsewhere",
        );
    }
    match *request.method() {
        Method::POST => post(request, sessions).await,
        Method::GET => get(request, &sessions),
        Method::DELETE => delete(request, &sessions),
        _ => {
            let mut response = error(
                StatusCode::METHOD_NOT_ALLOWED,
                -32000,
                "Method Not Allowed: POST, GET or DELETE",
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

/// A POST: one message or a batch from the client.
async fn post(request: Request<Incoming>, sessions: Arc<Sessions>) -> Response<Body> {
    let config = sessions.config.clone();
    let headers = request.headers().clone();
    if !header_has(&headers, header::CONTENT_TYPE, "application/json") {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32000,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let events = header_has(&headers, header::ACCEPT, "text/event-stream");
    let json = header_has(&headers, header::ACCEPT, "application/json")
        || header_has(&headers, header::ACCEPT, "*/*");
    if !events && !json {
        return error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: Accept must include application/json or text/event-stream",
        );
    }
    let (batch, messages, lines) = match read_messages(request, &config).await {
        Ok(read) => read,
        Err(response) => return *response,
    };
    let initialize = messages
        .iter()
        .any(|m| m.get("method").and_then(Value::as_str) == Some("initialize"));
    // The id errors below answer, when the body is one request.
    let id = (messages.len() == 1)
        .then(|| messages[0].get("id"))
        .flatten();
    let named = headers.contains_key(SESSION_HEADER);
    let asks = messages
        .iter()
        .any(|m| m.get("method").is_some() && m.get("id").is_some());
    // A client of the 2026-07-28 revision keeps no session: every request
    // carries its revision and capabilities, and this server checks what
    // the revision makes the HTTP server's to check.
    let stateless = !named && stateless::is_stateless(&headers, &messages);
    if stateless && let Err(refusal) = stateless::check(&headers, &messages) {
        return refusal.response();
    }
    let session = if (initialize && !stateless) || (!named && asks) {
        if initialize && messages.len() > 1 {
            return error_for(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "Invalid Request: initialize must be sent alone",
                None,
            );
        }
        // A request with no session and no initialize: a client that
        // keeps none (2026-07-28). A child serves this POST alone.
        let started = if stateless || !initialize {
            sessions.take_ephemeral()
        } else {
            sessions.start(false)
        };
        match started {
            Ok(session) => session,
            Err(Refused::Full) => {
                let mut response = error_for(
                    StatusCode::SERVICE_UNAVAILABLE,
                    -32000,
                    "Service Unavailable: too many sessions are open; try again later",
                    id,
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                return response;
            }
            Err(Refused::Stopping) => {
                return error_for(
                    StatusCode::SERVICE_UNAVAILABLE,
                    -32000,
                    "Service Unavailable: the server is stopping",
                    id,
                );
            }
        }
    } else if !named {
        // Notifications of a client that keeps no session: a cancellation
        // reaches the child serving its request; the rest has nowhere to go.
        for message in &messages {
            if message.get("method").and_then(Value::as_str) == Some("notifications/cancelled")
                && let Some(request) = message.pointer("/params/requestId")
                && let Some(session) = sessions.waiting_for(&normalise(request))
            {
                let line = serde_json::to_vec(message).expect("a parsed value serialises");
                session.send(vec![line]).await;
            }
        }
        return Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Empty::new().boxed_unsync())
            .expect("a response");
    } else {
        match session_of(&headers, &sessions) {
            Ok(session) => session,
            Err(missing) => return missing.response_for(id),
        }
    };
    let asked = asked(&messages);
    // The requests the client cancels: no answer is owed for them (the
    // server must not send one), so nothing waits for one.
    for cancelled in messages
        .iter()
        .filter(|m| m.get("method").and_then(Value::as_str) == Some("notifications/cancelled"))
        .filter_map(|m| m.pointer("/params/requestId"))
    {
        session.forget(&normalise(cancelled));
    }
    if asked.is_empty() {
        // Notifications and the client's answers: accepted once queued.
        return if session.send(lines).await {
            with_session(
                Response::builder()
                    .status(StatusCode::ACCEPTED)
                    .body(Empty::new().boxed_unsync())
                    .expect("a response"),
                &session,
            )
        } else {
            session_gone()
        };
    }
    let Some((outlet, mut rx)) = session.open_post(events, &asked) else {
        return session_gone();
    };
    // The stream (or the guard of the JSON answer) exists before the lines
    // are sent: if this client goes away from here on, what it asked is
    // cancelled. A session that ends now answers what it registered with
    // errors.
    let gone = Gone {
        session: Arc::downgrade(&session),
        outlet: outlet.clone(),
    };
    if events && !session.ephemeral {
        let body = EventBody::new(rx, None, gone, config.keep_alive);
        let _ = session.send(lines).await;
        return with_session(event_stream(StatusCode::OK, body), &session);
    }
    let _ = session.send(lines).await;
    if events {
        // A stateless request's status says how it was answered (400 for
        // a refusal, 404 for a method the server lacks): the head waits
        // for the first message. An answer first is the whole response.
        let Some(first) = rx.recv().await else {
            return session_gone();
        };
        if let Some(status) = first.message().and_then(|m| stateless::status_of(m)) {
            let bytes = first.message().cloned().unwrap_or_default();
            return json_response(status, bytes);
        }
        // The guard goes with the stream: the rest of it is the body's.
        let body = EventBody::new(rx, Some(first), gone, config.keep_alive);
        return event_stream(StatusCode::OK, body);
    }
    // One JSON body: every answer gathered first (the client waits on this
    // request; if it goes away, `gone` cancels what is left).
    let mut answers: Vec<Bytes> = Vec::new();
    while let Some(answer) = rx.recv().await {
        if let Some(message) = answer.message() {
            answers.push(message.clone());
        }
    }
    drop(gone);
    let status = if session.ephemeral && answers.len() == 1 {
        stateless::status_of(&answers[0]).unwrap_or(StatusCode::OK)
    } else {
        StatusCode::OK
    };
    let body = if !batch && answers.len() == 1 {
        answers.pop().expect("one answer")
    } else {
        let mut joined = Vec::from(&b"["[..]);
        for (i, answer) in answers.iter().enumerate() {
            if i > 0 {
                joined.push(b',');
            }
            joined.extend_from_slice(answer);
        }
        joined.push(b']');
        Bytes::from(joined)
    };
    with_session(json_response(status, body), &session)
}

pub(super) fn event_stream(status: StatusCode, body: EventBody) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body.boxed_unsync())
        .expect("a response")
}

fn json_response(status: StatusCode, body: Bytes) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(body).boxed_unsync())
        .expect("a response")
}

/// A POST's body as JSON-RPC messages (one, or a batch), each parsed and
/// as the line the child reads: the bytes the client sent, line ends
/// (whitespace in JSON) made spaces, so the child gets the client's own
/// key order and numbers. Or the response refusing the body. The transport
/// limit holds for a body as for a line: over it, the body is refused
/// before it is read whole, never parsed.
pub(super) async fn read_messages(
    request: Request<Incoming>,
    config: &super::ServeConfig,
) -> Result<(bool, Vec<Value>, Vec<Vec<u8>>), Box<Response<Body>>> {
    let limit = config.proxy.framer.max_frame_bytes();
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(Box::new(too_large(limit)));
    }
    let refuse = |status, code, message: &str| Err(Box::new(error(status, code, message)));
    let body = match Limited::new(request.into_body(), limit).collect().await {
        Ok(body) => body.to_bytes(),
        Err(failure) if failure.is::<http_body_util::LengthLimitError>() => {
            return Err(Box::new(too_large(limit)));
        }
        Err(_) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                -32000,
                "Bad Request: the body ended early",
            );
        }
    };
    let not_json = || {
        refuse(
            StatusCode::BAD_REQUEST,
            PARSE_ERROR,
            "Parse error: the body is not JSON",
        )
    };
    let batch = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    let raws: Vec<Box<RawValue>> = if batch {
        match serde_json::from_slice(&body) {
            Ok(raws) => raws,
            Err(_) => return not_json(),
        }
    } else {
        match serde_json::from_slice(&body) {
            Ok(raw) => vec![raw],
            Err(_) => return not_json(),
        }
    };
    let mut messages = Vec::with_capacity(raws.len());
    let mut lines = Vec::with_capacity(raws.len());
    for raw in &raws {
        let Ok(message @ Value::Object(_)) = serde_json::from_str::<Value>(raw.get()) else {
            return refuse(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "Invalid Request: every message is a JSON object",
            );
        };
        messages.push(message);
        let mut line = raw.get().as_bytes().to_vec();
        for b in &mut line {
            if *b == b'\n' || *b == b'\r' {
                *b = b' ';
            }
        }
        lines.push(line);
    }
    if messages.is_empty() {
        return refuse(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "Invalid Request: a JSON-RPC message or a batch of them",
        );
    }
    Ok((batch, messages, lines))
}

/// The requests among `messages`: their ids, whether each may be
/// cancelled, their progress tokens.
pub(super) fn asked(messages: &[Value]) -> Vec<Asked> {
    messages
        .iter()
        .filter(|m| m.get("method").is_some())
        .filter_map(|m| {
            let id = m.get("id")?;
            let method = m.get("method").and_then(Value::as_str);
            Some(Asked {
                id: normalise(id),
                cancellable: method != Some("initialize"),
                progress: m.pointer("/params/_meta/progressToken").map(normalise),
            })
        })
        .collect()
}

/// A GET: the session's own event stream.
fn get(request: Request<Incoming>, sessions: &Arc<Sessions>) -> Response<Body> {
    let headers = request.headers();
    if !header_has(headers, header::ACCEPT, "text/event-stream") {
        return error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: Accept must include text/event-stream",
        );
    }
    let session = match session_of(headers, sessions) {
        Ok(session) => session,
        Err(missing) => return missing.response(),
    };
    let last_event = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let Some((outlet, rx)) = session.open_get(last_event) else {
        return session_gone();
    };
    let gone = Gone {
        session: Arc::downgrade(&session),
        outlet,
    };
    let body = EventBody::new(rx, None, gone, sessions.config.keep_alive);
    with_session(event_stream(StatusCode::OK, body), &session)
}

/// A DELETE: the session ends, and its child with it.
fn delete(request: Request<Incoming>, sessions: &Arc<Sessions>) -> Response<Body> {
    let session = match session_of(request.headers(), sessions) {
        Ok(session) => session,
        Err(missing) => return missing.response(),
    };
    sessions.end(&session.id);
    Response::builder()
        .status(StatusCode::OK)
        .body(Empty::new().boxed_unsync())
        .expect("a response")
}

/// Why a request names no open session.
enum NoSession {
    /// No `Mcp-Session-Id`: 400.
    Unnamed,
    /// One that ended or never was: 404 (the client initializes anew).
    Gone,
}

impl NoSession {
    fn response(self) -> Response<Body> {
        self.response_for(None)
    }

    fn response_for(self, id: Option<&Value>) -> Response<Body> {
        match self {
            NoSession::Unnamed => error_for(
                StatusCode::BAD_REQUEST,
                -32000,
                "Bad Request: Mcp-Session-Id header is required",
                id,
            ),
            NoSession::Gone => error_for(
                StatusCode::NOT_FOUND,
                -32001,
                "Session not found: it ended or never was; initialize a new one",
                id,
            ),
        }
    }
}

/// The open session the request names.
fn session_of(headers: &HeaderMap, sessions: &Sessions) -> Result<Arc<Session>, NoSession> {
    let id = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or(NoSession::Unnamed)?;
    sessions.get(id).ok_or(NoSession::Gone)
}

fn session_gone() -> Response<Body> {
    NoSession::Gone.response()
}

pub(super) fn too_large(limit: usize) -> Response<Body> {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        TOO_LARGE,
        &format!("the body is over the transport limit ({limit} bytes)"),
    )
}

fn with_session(mut response: Response<Body>, session: &Session) -> Response<Body> {
    if session.ephemeral {
        return response;
    }
    if let Ok(value) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

/// Whether the header's value mentions `what` (case ignored): enough for
/// media types in Content-Type and Accept.
pub(super) fn header_has(headers: &HeaderMap, name: header::HeaderName, what: &str) -> bool {
    headers.get_all(name).iter().any(|value| {
        value
            .to_str()
            .is_ok_and(|v| v.to_ascii_lowercase().contains(what))
    })
}

fn respond(status: StatusCode, content_type: &'static str, body: &'static str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from_static(body.as_bytes())).boxed_unsync())
        .expect("a response")
}

/// A JSON-RPC error with no id, as the body of an HTTP error.
pub(super) fn error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    error_for(status, code, message, None)
}

/// A JSON-RPC error answering `id` (null if unknown), as the body of an
/// HTTP error.
pub(super) fn error_for(
    status: StatusCode,
    code: i64,
    message: &str,
    id: Option<&Value>,
) -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": { "code": code, "message": message },
    });
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed_unsync())
        .expect("a response")
}
