//! The 2024-11-05 revision's HTTP+SSE transport, for clients that predate
//! Streamable HTTP: `GET /sse` opens a session and its event stream, whose
//! first event names where to POST (`/messages?sessionId=…`); each POST is
//! accepted (202) and answered on the stream. The session, and its child,
//! end with the stream.

use std::sync::Arc;

use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use super::http::{Body, error, event_stream, header_has, read_messages};
use super::outlet::{EventBody, Gone};
use super::session::{Refused, Sessions};

/// The event stream's path.
pub(crate) const STREAM: &str = "/sse";
/// Where messages are POSTed.
pub(crate) const MESSAGES: &str = "/messages";

/// `GET /sse`: a new session, its stream beginning with the endpoint.
pub(crate) fn open(request: Request<Incoming>, sessions: &Arc<Sessions>) -> Response<Body> {
    if !header_has(
        request.headers(),
        hyper::header::ACCEPT,
        "text/event-stream",
    ) && request.headers().contains_key(hyper::header::ACCEPT)
    {
        return error(
            StatusCode::NOT_ACCEPTABLE,
            -32000,
            "Not Acceptable: the HTTP+SSE stream is text/event-stream",
        );
    }
    let session = match sessions.start(false) {
        Ok(session) => session,
        Err(Refused::Full) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                -32000,
                "Service Unavailable: too many sessions are open; try again later",
            );
        }
        Err(Refused::Stopping) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                -32000,
                "Service Unavailable: the server is stopping",
            );
        }
    };
    let endpoint = format!("{MESSAGES}?sessionId={}", session.id);
    let Some((outlet, rx)) = session.open_legacy(endpoint) else {
        return error(StatusCode::NOT_FOUND, -32001, "Session not found");
    };
    let gone = Gone {
        session: Arc::downgrade(&session),
        outlet,
    };
    event_stream(
        StatusCode::OK,
        EventBody::new(rx, None, gone, sessions.config.keep_alive),
    )
}

/// `POST /messages?sessionId=…`: the messages go to the session's child;
/// their answers come on its stream.
pub(crate) async fn message(request: Request<Incoming>, sessions: Arc<Sessions>) -> Response<Body> {
    let id = request.uri().query().and_then(|query| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("sessionId="))
            .map(str::to_string)
    });
    let Some(session) = id.as_deref().and_then(|id| sessions.get(id)) else {
        return error(
            StatusCode::NOT_FOUND,
            -32001,
            "Session not found: open the event stream (GET /sse) first",
        );
    };
    let config = sessions.config.clone();
    let (_, messages, lines) = match read_messages(request, &config).await {
        Ok(read) => read,
        Err(response) => return *response,
    };
    let asked = super::http::asked(&messages);
    if !session.register_legacy(&asked) {
        return error(
            StatusCode::NOT_FOUND,
            -32001,
            "Session not found: its stream ended",
        );
    }
    if !session.send(lines).await {
        return error(StatusCode::NOT_FOUND, -32001, "Session not found: it ended");
    }
    Response::builder()
        .status(StatusCode::ACCEPTED)
        .body(Empty::new().boxed_unsync())
        .expect("a response")
}
