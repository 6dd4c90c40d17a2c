//! An rmcp client transport that runs the server as a guarded [`Session`].
//!
//! rmcp's own `TokioChildProcess` reads stdout with a 16 MiB line cap it does
//! not let you change, and drops a longer line with only a log message: the
//! request it answered then waits forever, since rmcp sets no default
//! timeout. [`GuardedChildProcess`] puts rmcp on top of drainpipe's session
//! instead, so every rmcp client gets:
//!
//! - a reader that never stops reading, with the transport limit checked
//!   before any JSON is parsed;
//! - an oversize or malformed answer turned into a JSON-RPC error **for that
//!   request** (see [`error_data`] for the codes), the moment the limit is
//!   crossed, while the session goes on;
//! - rmcp's `notifications/cancelled` delivered to the server under the
//!   session's own request id, and a timeout on every request
//!   ([`SessionConfig::default_timeout`]);
//! - stderr captured (head and tail), the server in its own process group
//!   and killed with everything it started, and metrics
//!   ([`Session::metrics`]).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use drainpipe_host::rmcp::GuardedChildProcess;
//! use drainpipe_host::session::SessionConfig;
//! use rmcp::ServiceExt;
//!
//! let transport = GuardedChildProcess::spawn(
//!     tokio::process::Command::new("my-mcp-server"),
//!     SessionConfig::default(),
//! )?;
//! let session = transport.session().clone(); // for metrics and stderr
//! let client = ().serve(transport).await?;
//! let tools = client.list_all_tools().await?;
//! println!("{} tools; {}", tools.len(), session.metrics().to_json());
//! client.cancel().await?;
//! # Ok(()) }
//! ```
//!
//! The session assigns its own numeric ids on the wire and maps them back to
//! rmcp's, so rmcp's ids never reach the server; ids the server gives its own
//! requests are echoed back byte for byte.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use drainpipe_framer::owned::OwnedId;
use rmcp::model::{
    ClientJsonRpcMessage, ErrorCode, ErrorData, JsonRpcMessage, NumberOrString,
    ServerJsonRpcMessage,
};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::session::{CallError, CallOptions, RequestId, Session, SessionConfig};

/// Messages for rmcp that may wait before it takes them. Protects host
/// **memory**: beyond this the forwarding task stops taking server messages
/// and the session's bounded dispatcher (and its policy) takes over.
const INBOX_MESSAGES: usize = 64;

/// Why [`GuardedChildProcess`] could not pass a message on. Failures of one
/// request (too large, timed out, server error) are not transport errors:
/// rmcp receives them as that request's JSON-RPC error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The session is gone (the server exited or was shut down) and rmcp has
    /// stopped receiving.
    #[error("transport closed: {0}")]
    Closed(String),
    /// A message rmcp asked to send could not be represented on the wire.
    #[error("cannot send message: {0}")]
    Encode(#[from] serde_json::Error),
    /// The session refused a notification or a response (e.g. the server
    /// stopped reading stdin for longer than the session timeout).
    #[error(transparent)]
    Call(#[from] CallError),
}

/// rmcp request ids in flight → the session's ids, for cancellation.
type IdMap = Arc<Mutex<HashMap<NumberOrString, RequestId>>>;

/// An rmcp client [`Transport`] over a guarded drainpipe [`Session`]. See the
/// [module docs](self).
pub struct GuardedChildProcess {
    session: Session,
    inbox: mpsc::Receiver<ServerJsonRpcMessage>,
    /// Weak so that `receive` ends once the server is gone and every request
    /// in flight has delivered its outcome.
    inbox_tx: mpsc::WeakSender<ServerJsonRpcMessage>,
    in_flight: IdMap,
    /// Stops the forwarding task (and with it its session handle) when the
    /// transport is dropped, so the server's process group can be killed.
    _stop: DropGuard,
}

impl std::fmt::Debug for GuardedChildProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedChildProcess")
            .field("session", &self.session)
            .finish()
    }
}

impl GuardedChildProcess {
    /// Starts `command` as a guarded session (see [`Session::spawn`]) and
    /// wraps it for rmcp. Must be called within a tokio runtime.
    pub fn spawn(command: impl Into<Command>, config: SessionConfig) -> io::Result<Self> {
        Ok(Self::from_session(Session::spawn(command, config)?))
    }

    /// Wraps a session that was spawned but not used yet.
    pub fn from_session(session: Session) -> Self {
        let (tx, inbox) = mpsc::channel(INBOX_MESSAGES);
        let stop = CancellationToken::new();
        let inbox_tx = tx.downgrade();
        tokio::spawn(forward_incoming(session.clone(), tx, stop.clone()));
        GuardedChildProcess {
            session,
            inbox,
            inbox_tx,
            in_flight: Arc::default(),
            _stop: stop.drop_guard(),
        }
    }

    /// The session underneath: metrics, stderr, pid, and
    /// [`Session::shutdown`] for a report. Clone it before handing the
    /// transport to rmcp. A clone keeps the server alive after rmcp drops
    /// the transport, until it is dropped or shut down too.
    pub fn session(&self) -> &Session {
        &self.session
    }
}

/// Passes the server's requests and notifications to rmcp, in order.
async fn forward_incoming(
    session: Session,
    inbox: mpsc::Sender<ServerJsonRpcMessage>,
    stop: CancellationToken,
) {
    loop {
        let incoming = tokio::select! {
            _ = stop.cancelled() => return,
            incoming = session.next_incoming() => incoming,
        };
        let Some(incoming) = incoming else { return };
        match serde_json::from_slice::<ServerJsonRpcMessage>(&incoming.bytes) {
            Ok(message) => {
                if inbox.send(message).await.is_err() {
                    return;
                }
            }
            Err(error) => {
                tracing::warn!(method = %incoming.method, %error, "server message rmcp cannot represent; dropped");
                if let Some(id) = &incoming.id {
                    let _ = session
                        .respond(
                            id,
                            Err((ErrorCode::INVALID_REQUEST.0.into(), error.to_string())),
                        )
                        .await;
                }
            }
        }
    }
}

/// The JSON-RPC error rmcp receives for a request that ended without a
/// result. A server's own error is passed through; the others carry
/// `data.drainpipe` naming the outcome (`too_large`, `malformed`,
/// `session_lost`, `timed_out`, `rejected`) so a client can tell them apart:
///
/// | outcome | code |
/// |---|---|
/// | response over the transport limit | -32603 (internal error) |
/// | malformed response | -32700 (parse error) |
/// | session lost, timed out, rejected | -32603 |
pub fn error_data(error: &CallError) -> ErrorData {
    let tagged = |code: ErrorCode, tag: &str, extra: Value| {
        let mut data = json!({ "drainpipe": tag });
        if let (Some(data), Value::Object(extra)) = (data.as_object_mut(), extra) {
            data.extend(extra);
        }
        ErrorData::new(code, error.to_string(), Some(data))
    };
    match error {
        CallError::JsonRpc {
            code,
            message,
            data,
        } => ErrorData::new(
            ErrorCode(i32::try_from(*code).unwrap_or(ErrorCode::INTERNAL_ERROR.0)),
            message.clone(),
            data.clone(),
        ),
        CallError::TooLarge {
            received_bytes,
            limit_bytes,
        } => tagged(
            ErrorCode::INTERNAL_ERROR,
            "too_large",
            json!({ "receivedBytes": received_bytes, "limitBytes": limit_bytes }),
        ),
        CallError::Malformed { .. } => tagged(ErrorCode::PARSE_ERROR, "malformed", Value::Null),
        CallError::SessionLost { .. } => {
            tagged(ErrorCode::INTERNAL_ERROR, "session_lost", Value::Null)
        }
        CallError::TimedOut { after } => tagged(
            ErrorCode::INTERNAL_ERROR,
            "timed_out",
            json!({ "afterMs": after.as_millis() as u64 }),
        ),
        CallError::Cancelled { .. } => tagged(ErrorCode::INTERNAL_ERROR, "cancelled", Value::Null),
        other => tagged(
            ErrorCode::INTERNAL_ERROR,
            "rejected",
            json!({ "detail": other.to_string() }),
        ),
    }
}

/// rmcp's view of an id the server chose, echoed back as written.
fn wire_id(id: &NumberOrString) -> OwnedId {
    match id {
        NumberOrString::Number(n) => OwnedId::Number(n.to_string().into_bytes()),
        NumberOrString::String(s) => {
            let quoted = serde_json::to_string(&**s).expect("a string serialises");
            OwnedId::String(quoted.as_bytes()[1..quoted.len() - 1].to_vec())
        }
    }
}

fn error_message(id: NumberOrString, error: ErrorData) -> ServerJsonRpcMessage {
    JsonRpcMessage::error(error, Some(id))
}

/// Turns the session's outcome of one request into what rmcp expects under
/// its own id; `None` when nothing must be delivered (rmcp cancelled it).
fn answer(
    id: NumberOrString,
    outcome: Result<crate::session::Response, CallError>,
) -> Option<ServerJsonRpcMessage> {
    match outcome {
        Ok(response) => {
            let wire = json!({ "jsonrpc": "2.0", "id": id, "result": response.result });
            Some(serde_json::from_value(wire).unwrap_or_else(|error| {
                error_message(
                    id,
                    ErrorData::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("result does not match the MCP schema: {error}"),
                        Some(json!({ "drainpipe": "malformed" })),
                    ),
                )
            }))
        }
        Err(CallError::Cancelled { .. }) => None,
        Err(error) => Some(error_message(id, error_data(&error))),
    }
}

impl Transport<RoleClient> for GuardedChildProcess {
    type Error = TransportError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), TransportError>> + Send + 'static {
        let session = self.session.clone();
        let inbox = self.inbox_tx.clone();
        let in_flight = self.in_flight.clone();
        async move {
            let value = serde_json::to_value(&item)?;
            let field = |name: &str| value.get(name).cloned();
            match item {
                JsonRpcMessage::Request(request) => {
                    let id = request.id;
                    let method = value["method"].as_str().unwrap_or_default().to_string();
                    let params = field("params").unwrap_or_else(|| json!({}));
                    let inbox = inbox
                        .upgrade()
                        .ok_or_else(|| TransportError::Closed("rmcp stopped receiving".into()))?;
                    let pending = match session.start(&method, params, CallOptions::default()).await
                    {
                        Ok(pending) => pending,
                        Err(error) => {
                            let _ = inbox.send(error_message(id, error_data(&error))).await;
                            return Ok(());
                        }
                    };
                    in_flight
                        .lock()
                        .expect("in-flight map")
                        .insert(id.clone(), pending.id());
                    // The outcome is awaited in its own task: rmcp's send must
                    // return once the request is on its way.
                    tokio::spawn(async move {
                        let outcome = pending.outcome().await;
                        in_flight.lock().expect("in-flight map").remove(&id);
                        if let Some(message) = answer(id, outcome) {
                            let _ = inbox.send(message).await;
                        }
                    });
                    Ok(())
                }
                JsonRpcMessage::Notification(_) => {
                    let method = value["method"].as_str().unwrap_or_default().to_string();
                    let params = field("params").unwrap_or_else(|| json!({}));
                    if method == "notifications/cancelled" {
                        // Cancel under the id the server knows; the session
                        // sends the notification itself.
                        let rmcp_id: Option<NumberOrString> = params
                            .get("requestId")
                            .and_then(|id| serde_json::from_value(id.clone()).ok());
                        let ours = rmcp_id
                            .and_then(|id| in_flight.lock().expect("in-flight map").remove(&id));
                        if let Some(ours) = ours {
                            let reason = params["reason"]
                                .as_str()
                                .unwrap_or("cancelled by the client");
                            session.cancel(ours, reason);
                        }
                        return Ok(());
                    }
                    Ok(session.notify(&method, params).await?)
                }
                JsonRpcMessage::Response(response) => Ok(session
                    .respond(
                        &wire_id(&response.id),
                        Ok(field("result").unwrap_or(Value::Null)),
                    )
                    .await?),
                JsonRpcMessage::Error(error) => {
                    let Some(id) = error.id else {
                        return Ok(());
                    };
                    let answer = Err((
                        i64::from(error.error.code.0),
                        error.error.message.into_owned(),
                    ));
                    Ok(session.respond(&wire_id(&id), answer).await?)
                }
            }
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        self.inbox.recv().await
    }

    async fn close(&mut self) -> Result<(), TransportError> {
        let report = self.session.shutdown().await;
        tracing::debug!(ending = ?report.ending, "rmcp transport closed");
        Ok(())
    }
}
