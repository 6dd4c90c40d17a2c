//! Requests in flight: every one ends in exactly one [`CallError`] or
//! [`Response`], delivered through its own one-shot slot.
//!
//! The invariant is kept by ownership: the slot's sender lives in the
//! [`PendingMap`] and whoever removes it (the reader with a response, a
//! timeout, a cancel, a session loss) is the only one who can deliver.
//! A response whose id is no longer in the map is dropped and counted, so it
//! can never reach another caller.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use drainpipe_framer::JsonError;
use drainpipe_framer::budget::Clip;
use serde::Deserialize;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::Shared;
use crate::pipe::in_flight::InFlight;

/// The id the session gave a request. Ids are numbers, unique per session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A successful answer to a request.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Response {
    /// The request it answers.
    pub id: RequestId,
    /// The `result` member.
    pub result: serde_json::Value,
    /// Size of the response line on the wire, without its newline.
    pub wire_bytes: usize,
}

/// How a request ended when it did not end in a [`Response`]. One variant per
/// outcome; a request gets exactly one.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    JsonRpc {
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
        /// The optional `data` member.
        data: Option<serde_json::Value>,
    },
    /// The request was cancelled (by [`Session::cancel`](super::Session::cancel)
    /// or by the full-dispatcher policy); a response that arrives later is dropped.
    #[error("request cancelled: {reason}")]
    Cancelled {
        /// Why.
        reason: String,
    },
    /// The response passed the transport limit. The request failed the
    /// moment that was certain, without ever buffering the line: when the
    /// limit was crossed if the id came before it (or this was the only
    /// request pending), else when the id streamed past (an id written
    /// last, as the TypeScript SDK does).
    #[error(
        "response too large: more than {limit_bytes} bytes (at least {received_bytes} received)"
    )]
    TooLarge {
        /// Bytes of the response line received when it was rejected: a lower
        /// bound of its size.
        received_bytes: u64,
        /// The transport limit, in bytes on the wire.
        limit_bytes: u64,
    },
    /// The response line carried this request's id but was not valid JSON-RPC.
    #[error("malformed response: {detail}")]
    Malformed {
        /// What was wrong.
        detail: String,
    },
    /// The server went away (exited, closed stdout, killed by policy, or
    /// stdout ended inside the response) before answering.
    #[error("session lost: {reason}")]
    SessionLost {
        /// What happened to the session.
        reason: String,
    },
    /// No outcome within the request's timeout.
    #[error("no response within {after:?}")]
    TimedOut {
        /// The timeout that passed.
        after: Duration,
    },
    /// The result is over the call's content budget
    /// ([`CallOptions::condense_to`](super::CallOptions::condense_to)) and
    /// could not be condensed into it (what cannot be cut did not fit).
    #[error("the result could not be condensed: {reason}")]
    Uncondensable {
        /// Why.
        reason: String,
    },
    /// The request was never sent: the session refused it.
    #[error("request rejected before sending: {reason}")]
    Rejected {
        /// Why.
        reason: Rejection,
    },
}

/// Why the session refused to send a request. One cause per variant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    /// The dispatcher is full and the policy is to reject
    /// ([`DispatcherFullPolicy::Reject`](super::DispatcherFullPolicy)).
    #[error("the dispatcher is full")]
    DispatcherFull,
    /// The request's own line is over the transport limit.
    #[error("request is {bytes} bytes, over the transport limit of {limit}")]
    TooLarge {
        /// Bytes of the request line, without its newline.
        bytes: usize,
        /// The transport limit.
        limit: usize,
    },
    /// As many requests as `max_in_flight` are waiting already.
    #[error("{in_flight} requests already in flight")]
    TooManyInFlight {
        /// Requests waiting.
        in_flight: usize,
    },
    /// [`CallOptions::condense_to`](super::CallOptions::condense_to) asked
    /// for a budget the condenser cannot work in.
    #[error("a content budget of {budget} bytes is below the smallest, {minimum} bytes")]
    BudgetTooSmall {
        /// The budget asked for.
        budget: usize,
        /// The smallest budget.
        minimum: usize,
    },
}

impl CallError {
    pub(crate) fn malformed(error: JsonError) -> Self {
        CallError::Malformed {
            detail: error.to_string(),
        }
    }
}

/// What the reader or a failure path puts in a request's slot.
pub(crate) type Delivery = Result<Vec<u8>, CallError>;

/// The map from request id to the slot of the caller waiting for it, on
/// the in-flight table shared with the proxy.
#[derive(Debug)]
pub(crate) struct PendingMap(InFlight<u64, Slot>);

/// What a pending call keeps: where its outcome goes, and the content
/// budget it asked for condensing to.
#[derive(Debug)]
pub(crate) struct Slot {
    tx: oneshot::Sender<Delivery>,
    condense: Option<Clip>,
}

impl Default for PendingMap {
    fn default() -> Self {
        // Calls are bounded by `SessionConfig::max_in_flight` before they
        // get here.
        PendingMap(InFlight::new(usize::MAX, Self::MAX_UNANSWERED))
    }
}

impl PendingMap {
    /// Requests ended unanswered that are remembered, at most. Bounds the
    /// **memory** of a session whose server never answers what it was told
    /// to cancel; past it, attribution without an id stops for good.
    const MAX_UNANSWERED: usize = 4096;

    pub(crate) fn insert(
        &mut self,
        id: u64,
        condense: Option<Clip>,
    ) -> oneshot::Receiver<Delivery> {
        let (tx, rx) = oneshot::channel();
        self.0.insert(id, Slot { tx, condense });
        rx
    }

    /// The content budget `id` asked for, if it is pending and asked.
    pub(crate) fn condense_budget(&self, id: u64) -> Option<Clip> {
        self.0.get(&id).and_then(|slot| slot.condense)
    }

    /// The largest content budget among the pending calls (by its amount;
    /// a call with another budget condenses the tapped result again).
    pub(crate) fn largest_condense_budget(&self) -> Option<Clip> {
        self.0
            .values()
            .filter_map(|slot| slot.condense)
            .max_by_key(|clip| clip.amount)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Delivers the outcome of `id` if it is still pending. Returns false when
    /// it was not (already ended) or its caller has gone away.
    pub(crate) fn complete(&mut self, id: u64, outcome: Delivery) -> bool {
        self.0
            .answered(&id)
            .is_some_and(|slot| slot.tx.send(outcome).is_ok())
    }

    /// Ends `id` with `error` before the server answered (a cancellation):
    /// its answer may still come. Returns false when it was not pending or
    /// its caller has gone away.
    pub(crate) fn end_unanswered(&mut self, id: u64, error: CallError) -> bool {
        self.0
            .end_unanswered(&id)
            .is_some_and(|slot| slot.tx.send(Err(error)).is_ok())
    }

    /// Removes `id` without delivering (the caller is ending it itself,
    /// without the server's answer).
    pub(crate) fn take(&mut self, id: u64) -> bool {
        self.0.end_unanswered(&id).is_some()
    }

    /// Ends every pending request with a copy of `error` (none of them
    /// answered by the server); returns their ids.
    pub(crate) fn fail_all(&mut self, error: &CallError) -> Vec<u64> {
        let ended = self.0.end_all_unanswered();
        let mut ids = Vec::with_capacity(ended.len());
        for (id, slot) in ended {
            let _ = slot.tx.send(Err(error.clone()));
            ids.push(id);
        }
        ids
    }

    /// The server's late answer to `id` arrived (and was dropped).
    pub(crate) fn answered_late(&mut self, id: u64) {
        self.0.answered_late(&id);
    }

    /// The one request a response that names no id must be answering (see
    /// [`InFlight::sole`]).
    pub(crate) fn sole_pending(&self) -> Option<u64> {
        self.0.sole().map(|(&id, _)| id)
    }
}

/// The numeric id this session issued that a JSON-RPC number token names,
/// compared by value: `7`, `7.0` and `0.7e1` all name 7.
pub(crate) fn numeric_id(token: &[u8]) -> Option<u64> {
    let key = drainpipe_framer::Id::Number(token).canonical();
    if key == b"n0" {
        return Some(0);
    }
    // `n+<significant digits>e<power of the first digit>`.
    let rest = key.strip_prefix(b"n+")?;
    let e = rest.iter().rposition(|&b| b == b'e')?;
    let digits = std::str::from_utf8(&rest[..e]).ok()?;
    let power: i64 = std::str::from_utf8(&rest[e + 1..]).ok()?.parse().ok()?;
    let zeros = power.checked_sub(digits.len() as i64 - 1)?;
    if !(0..=20).contains(&zeros) {
        return None; // Fractional, or past u64.
    }
    let mut whole = digits.to_string();
    whole.extend(std::iter::repeat_n('0', zeros as usize));
    whole.parse().ok()
}

/// A request that was sent and has not been awaited yet.
///
/// Await it with [`PendingCall::outcome`]. Dropping it without awaiting
/// abandons the request: it is removed from the session and the server is
/// told with `notifications/cancelled`, so its response, if any, is dropped.
#[must_use = "dropping a PendingCall cancels the request"]
pub struct PendingCall {
    pub(crate) id: RequestId,
    pub(crate) slot: Option<oneshot::Receiver<Delivery>>,
    /// The request reached the writer queue, so the server may be working on it.
    pub(crate) sent: bool,
    pub(crate) deadline: Instant,
    pub(crate) timeout: Duration,
    pub(crate) cancel_on_timeout: bool,
    /// The content budget of the result, if condensing was asked for.
    pub(crate) condense_to: Option<Clip>,
    pub(crate) shared: Arc<Shared>,
    /// The request's span, when the process exports telemetry.
    #[cfg(feature = "otel")]
    pub(crate) trace: Option<crate::telemetry::session::CallTrace>,
}

impl fmt::Debug for PendingCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingCall")
            .field("id", &self.id)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl PendingCall {
    /// The request's id, for [`Session::cancel`](super::Session::cancel).
    pub fn id(&self) -> RequestId {
        self.id
    }

    /// Waits for the request's one outcome.
    pub async fn outcome(mut self) -> Result<Response, CallError> {
        let outcome = self.wait().await;
        #[cfg(feature = "otel")]
        if let Some(trace) = self.trace.take() {
            trace.end(&outcome);
        }
        outcome
    }

    async fn wait(&mut self) -> Result<Response, CallError> {
        // The slot stays in `self` while waiting: if this future is dropped
        // half-way, `Drop` still sees a pending request and cancels it.
        let deadline = self.deadline;
        let slot = self
            .slot
            .as_mut()
            .expect("the slot is there until the outcome");
        let delivered = match tokio::time::timeout_at(deadline, &mut *slot).await {
            Ok(delivered) => delivered,
            Err(_elapsed) => {
                let still_pending = self
                    .shared
                    .pending
                    .lock()
                    .expect("pending map")
                    .take(self.id.0);
                if still_pending {
                    if self.cancel_on_timeout {
                        self.shared.send_cancellation(self.id, "request timed out");
                    }
                    self.slot = None;
                    return Err(CallError::TimedOut {
                        after: self.timeout,
                    });
                }
                // Someone ended it at the same moment; their outcome is in the slot.
                slot.await
            }
        };
        self.slot = None;
        match delivered {
            Ok(Ok(bytes)) => {
                // Condensed here, in the caller's task, never in the reader.
                let bytes = match self.condense_to {
                    Some(clip) if !clip.surely_fits(bytes.len()) => condense(bytes, clip)?,
                    _ => bytes,
                };
                parse_response(self.id, bytes)
            }
            Ok(Err(error)) => Err(error),
            Err(_closed) => Err(CallError::SessionLost {
                reason: "session dropped".into(),
            }),
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(trace) = self.trace.take() {
            trace.abandoned();
        }
        let was_pending = self.slot.is_some()
            && self
                .shared
                .pending
                .lock()
                .expect("pending map")
                .take(self.id.0);
        if was_pending && self.sent {
            self.shared
                .send_cancellation(self.id, "caller abandoned the request");
        }
    }
}

#[derive(Deserialize)]
struct WireError {
    code: i64,
    message: String,
    #[serde(default)]
    data: Option<serde_json::Value>,
}

/// `bytes`, a response that may be over `clip`, condensed into it.
fn condense(bytes: Vec<u8>, clip: Clip) -> Result<Vec<u8>, CallError> {
    use drainpipe_framer::budget::Condensed;
    match crate::condense::condense_frame(&bytes, clip) {
        Ok(Condensed::Cut { frame, .. }) => Ok(frame),
        Ok(_) => Ok(bytes),
        Err(error) => Err(CallError::Uncondensable {
            reason: error.to_string(),
        }),
    }
}

/// Turns a response frame into the caller's outcome. Runs in the caller's
/// task, so a large result is parsed there and never slows the reader.
fn parse_response(id: RequestId, bytes: Vec<u8>) -> Result<Response, CallError> {
    let mut object: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&bytes)
        .map_err(|e| CallError::Malformed {
            detail: e.to_string(),
        })?;
    if let Some(error) = object.remove("error") {
        let error: WireError = serde_json::from_value(error).map_err(|e| CallError::Malformed {
            detail: format!("error member: {e}"),
        })?;
        return Err(CallError::JsonRpc {
            code: error.code,
            message: error.message,
            data: error.data,
        });
    }
    match object.remove("result") {
        Some(result) => Ok(Response {
            id,
            result,
            wire_bytes: bytes.len(),
        }),
        None => Err(CallError::Malformed {
            detail: "response has neither result nor error".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::numeric_id;

    #[test]
    fn our_ids_are_recognised_by_value() {
        for (token, id) in [
            (&b"7"[..], Some(7)),
            (b"7.0", Some(7)),
            (b"0.7e1", Some(7)),
            (b"1E2", Some(100)),
            (b"0", Some(0)),
            (b"-0.0", Some(0)),
            (b"7.5", None),
            (b"-7", None),
            (b"1e30", None),
            (b"18446744073709551615", Some(u64::MAX)),
        ] {
            assert_eq!(numeric_id(token), id, "{}", String::from_utf8_lossy(token));
        }
    }
}
