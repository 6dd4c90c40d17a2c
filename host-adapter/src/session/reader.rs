//! The stdout reader: reads whenever the OS has bytes, frames them, routes
//! whole messages, and never waits on a consumer.
//!
//! Responses go straight into their caller's one-shot slot (never full: one
//! slot per request, bounded by `max_in_flight`). Server requests and
//! notifications go to the bounded dispatcher; when it is full the reader
//! waits at most `dispatcher_wait` once, then applies the configured policy
//! and stops waiting until a message fits again.
//!
//! Routing a read never waits: the messages of one read are handed to the
//! dispatcher together (before any answer in the same read completes its
//! call, so a caller sees what came first no later). A message that finds
//! the dispatcher full is set aside with every one after it in that read
//! (at most a read's worth, outside the dispatcher's count while they
//! wait), and dispatched, waiting as above, once the read is routed.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use drainpipe_framer::budget::{CondenseError, Condensed};
use drainpipe_framer::owned::{OwnedEnvelope, OwnedEvent, OwnedId};
use drainpipe_framer::{Envelope, Event, Id};
use tokio::process::ChildStdout;

use super::dispatch::DispatchSender;
use super::metrics::Counters;
use super::requests::{CallError, numeric_id};
use super::{DispatcherFullPolicy, Incoming, OversizePolicy, Shared};
use crate::backend::FramerBackend;
use crate::condense::LineTap;
use crate::pipe::jsonrpc::{HOST_BUSY, response_line};
use crate::pipe::reader::{ReadEnd, Route, read_framed};

pub(crate) async fn run(
    stdout: ChildStdout,
    mut backend: Box<dyn FramerBackend>,
    dispatcher: DispatchSender,
    shared: Arc<Shared>,
) {
    let mut route = SessionRoute {
        router: Router {
            shared: shared.clone(),
            dispatcher,
            oversize_seen: 0,
            not_protocol_seen: 0,
            rejected: None,
            tap: None,
            at_line_start: true,
        },
        overflow: Vec::new(),
    };
    let chunk_bytes = shared.config.read_chunk_bytes;
    let ended = match read_framed(stdout, &mut *backend, chunk_bytes, &mut route).await {
        ReadEnd::Eof => None,
        ReadEnd::ReadFailed(error) => Some(format!("reading server stdout failed: {error}")),
        ReadEnd::Framer(error) => {
            // The backend is unusable; keep nothing more from this server.
            shared.kill(&error.to_string());
            Some(error.to_string())
        }
        ReadEnd::Finish(error) => {
            tracing::warn!(%error, "framer backend failed at end of stream");
            route.after_read(&[], 0).await;
            None
        }
    };
    route.router.dispatcher.flush();
    let reason = ended.unwrap_or_else(|| match shared.process.exit_status() {
        Some(status) => format!("server closed stdout and exited ({status})"),
        None => "server closed stdout".to_string(),
    });
    shared.lose(&reason);
}

/// The session's side of the framing reader.
struct SessionRoute {
    router: Router,
    /// Messages for the dispatcher that found no room while a read was
    /// routed (routing never waits); dispatched, waiting, right after it.
    overflow: Vec<Incoming>,
}

impl Route for SessionRoute {
    fn read(&mut self, bytes: &[u8], at: u64) {
        Counters::add(
            &self.router.shared.counters.stdout_bytes,
            bytes.len() as u64,
        );
        self.router.tap(bytes, at);
    }

    fn event(&mut self, event: Event<'_>) {
        self.router.on_event(event, &mut self.overflow);
    }

    async fn after_read(&mut self, _: &[u8], _: u64) {
        for message in self.overflow.drain(..) {
            self.router.dispatch(message).await;
        }
        // The messages of one read cross to the caller together.
        self.router.dispatcher.flush();
    }
}

struct Router {
    shared: Arc<Shared>,
    dispatcher: DispatchSender,
    oversize_seen: u64,
    not_protocol_seen: u64,
    /// The line being discarded, while nobody was failed for it yet: its
    /// `Discarded` carries the envelope of the whole line, which names the
    /// request when the id came after the limit.
    rejected: Option<Unattributed>,
    /// Condenses lines that cross reads as they stream, once a call asked
    /// for condensing (to the largest budget pending then; a call with a
    /// smaller one condenses the result again in its own task).
    tap: Option<LineTap>,
    /// The last read ended a line (or nothing was read): a tap started at
    /// the next read starts with a whole line.
    at_line_start: bool,
}

/// A rejected line that named no request when it was rejected.
struct Unattributed {
    offset: u64,
    error: CallError,
}

impl Router {
    /// Routes one event. Never waits: a message for a full dispatcher is
    /// put in `overflow`, and so is every one after it.
    fn on_event(&mut self, event: Event<'_>, overflow: &mut Vec<Incoming>) {
        match event {
            Event::Frame(frame) => {
                let counters = &self.shared.counters;
                Counters::bump(&counters.frames);
                counters
                    .largest_frame_bytes
                    .fetch_max(frame.bytes.len() as u64, Ordering::Relaxed);
                self.frame(frame.bytes, &frame.envelope, overflow);
            }
            other => self.route_rejection(other.into()),
        }
    }

    /// Routes everything but a complete message: rejections, stray lines,
    /// and the ends of rejected lines.
    fn route_rejection(&mut self, event: OwnedEvent) {
        let shared = self.shared.clone();
        let counters = &shared.counters;
        let config = &shared.config;
        match event {
            // Routed by `on_event`.
            OwnedEvent::Frame { .. } => {}
            OwnedEvent::Oversize {
                envelope,
                looks_like_json,
                offset,
            } => {
                Counters::bump(&counters.oversize_frames);
                self.oversize_seen += 1;
                let limit = config.framer.max_frame_bytes() as u64;
                tracing::warn!(
                    offset,
                    looks_like_json,
                    limit,
                    "server message over the transport limit"
                );
                self.reject(
                    offset,
                    &envelope,
                    CallError::TooLarge {
                        received_bytes: limit + 1,
                        limit_bytes: limit,
                    },
                );
                if config.oversize == OversizePolicy::KillSession {
                    self.shared.kill(&format!(
                        "server sent a message over the transport limit of {limit} bytes"
                    ));
                } else if config
                    .max_oversize_frames
                    .is_some_and(|max| self.oversize_seen > max)
                {
                    self.shared.kill(&format!(
                        "more than {} oversize messages",
                        self.oversize_seen - 1
                    ));
                }
            }
            OwnedEvent::Malformed {
                error,
                envelope,
                offset,
            } => {
                Counters::bump(&counters.malformed_frames);
                tracing::warn!(offset, %error, "malformed message from server");
                self.reject(offset, &envelope, CallError::malformed(error));
            }
            OwnedEvent::NotProtocol { line, offset } => {
                Counters::bump(&counters.not_protocol_lines);
                self.not_protocol_seen += 1;
                let shown = &line[..line.len().min(config.stderr_log_line_bytes)];
                tracing::warn!(offset, line = %String::from_utf8_lossy(shown), "non-protocol line on server stdout");
                if config
                    .max_not_protocol_lines
                    .is_some_and(|max| self.not_protocol_seen > max)
                {
                    self.shared.kill(&format!(
                        "more than {} non-protocol lines on stdout",
                        self.not_protocol_seen - 1
                    ));
                }
            }
            OwnedEvent::Truncated { envelope, len, .. } => {
                self.fail(
                    &envelope,
                    CallError::SessionLost {
                        reason: format!(
                            "server stdout ended inside the response after {len} bytes"
                        ),
                    },
                );
            }
            OwnedEvent::Discarded {
                offset,
                len,
                at_eof,
                envelope,
                well_formed,
            } => {
                tracing::debug!(offset, len, at_eof, "rejected line ended");
                let tapped = self.tap.as_mut().and_then(|tap| tap.take(offset));
                if let Some(rejected) = self.rejected.take_if(|r| r.offset == offset) {
                    if well_formed && self.deliver_condensed(&envelope, tapped) {
                        return;
                    }
                    let error = match rejected.error {
                        // Now the whole size is known.
                        CallError::TooLarge { limit_bytes, .. } => CallError::TooLarge {
                            received_bytes: len,
                            limit_bytes,
                        },
                        other => other,
                    };
                    self.fail(&envelope, error);
                }
            }
        }
    }

    /// Feeds the tap the chunk read at stream offset `at`, starting it when
    /// a pending call first asks for condensing.
    fn tap(&mut self, chunk: &[u8], at: u64) {
        if self.tap.is_none()
            && let Some(budget) = self
                .shared
                .pending
                .lock()
                .expect("pending map")
                .largest_condense_budget()
        {
            self.tap = Some(LineTap::starting_at(budget, at, !self.at_line_start));
        }
        if let Some(tap) = self.tap.as_mut() {
            tap.push(chunk, at);
        }
        if let Some(&last) = chunk.last() {
            self.at_line_start = last == b'\n';
        }
    }

    /// Whether request `id` asked for its result condensed.
    fn condensing(&self, id: u64) -> bool {
        self.shared
            .pending
            .lock()
            .expect("pending map")
            .condense_budget(id)
            .is_some()
    }

    /// A line was rejected at `offset` with what was seen before the limit
    /// (or the error): fail the request it answers now where that is
    /// certain, else wait for its `Discarded`. A call that asked for its
    /// result condensed waits for the line's end too: it gets the condensed
    /// result then.
    fn reject(&mut self, offset: u64, envelope: &OwnedEnvelope, error: CallError) {
        if envelope.method.is_some() {
            return; // A request or notification: nobody here waits for it.
        }
        if let Some(id) = envelope.id.as_ref() {
            if our_id(id).is_some_and(|id| self.condensing(id)) {
                self.rejected = Some(Unattributed { offset, error });
            } else {
                self.fail(envelope, error);
            }
            return;
        }
        // Shaped as a response (`result` or `error` came first, as the
        // TypeScript SDK writes them) while exactly one request is pending
        // and no ended one may still be answered: it can only be that one's.
        let sole = (envelope.has_result || envelope.has_error)
            .then(|| {
                self.shared
                    .pending
                    .lock()
                    .expect("pending map")
                    .sole_pending()
            })
            .flatten();
        match sole {
            Some(id) if !self.condensing(id) => {
                self.shared
                    .pending
                    .lock()
                    .expect("pending map")
                    .complete(id, Err(error));
            }
            _ => self.rejected = Some(Unattributed { offset, error }),
        }
    }

    /// Delivers the condensed form of a result over the transport limit to
    /// the call that asked for it; false if `envelope` names no such call
    /// or nothing was condensed.
    fn deliver_condensed(
        &mut self,
        envelope: &OwnedEnvelope,
        tapped: Option<Result<Condensed, CondenseError>>,
    ) -> bool {
        let Some(id) = envelope.id.as_ref().and_then(our_id) else {
            return false;
        };
        if envelope.method.is_some() || !envelope.has_result || !self.condensing(id) {
            return false;
        }
        let delivery = match tapped {
            Some(Ok(Condensed::Cut { frame, .. })) => Ok(frame),
            Some(Err(error)) => Err(CallError::Uncondensable {
                reason: error.to_string(),
            }),
            _ => return false,
        };
        Counters::bump(&self.shared.counters.results_condensed);
        self.shared
            .pending
            .lock()
            .expect("pending map")
            .complete(id, delivery);
        true
    }

    /// Fails the request a rejected line was answering, if its id was seen.
    fn fail(&self, envelope: &OwnedEnvelope, error: CallError) {
        if envelope.method.is_some() {
            return;
        }
        if let Some(id) = envelope.id.as_ref().and_then(our_id) {
            let mut pending = self.shared.pending.lock().expect("pending map");
            if !pending.complete(id, Err(error)) {
                pending.answered_late(id);
            }
        }
    }

    fn frame(&mut self, bytes: &[u8], envelope: &Envelope<'_>, overflow: &mut Vec<Incoming>) {
        let shared = &self.shared;
        match (envelope.method, envelope.id) {
            (None, id) if envelope.has_result || envelope.has_error => {
                // What the server sent before this answer (progress, say)
                // reaches the caller no later than the answer does.
                self.dispatcher.flush();
                let ours = id.as_ref().and_then(borrowed_our_id);
                let delivered = match ours {
                    Some(id) => shared
                        .pending
                        .lock()
                        .expect("pending map")
                        .complete(id, Ok(bytes.to_vec())),
                    None => false,
                };
                if !delivered {
                    if let Some(id) = ours {
                        shared
                            .pending
                            .lock()
                            .expect("pending map")
                            .answered_late(id);
                    }
                    Counters::bump(&shared.counters.late_responses_dropped);
                    tracing::debug!(?id, "response for no pending request dropped");
                }
            }
            (Some(method), id) => {
                if !overflow.is_empty() || !self.try_dispatch(method, id, bytes) {
                    overflow.push(Incoming {
                        method: String::from_utf8_lossy(method).into_owned(),
                        id: id.map(OwnedId::from),
                        bytes: bytes.to_vec(),
                    });
                }
            }
            (None, _) => {
                Counters::bump(&shared.counters.unroutable_frames);
                tracing::warn!("server message is neither request, notification nor response");
            }
        }
    }

    /// Hands the message to the dispatcher if it has room (or drops it if
    /// nobody takes messages any more); false if it has none.
    fn try_dispatch(&mut self, method: &[u8], id: Option<Id<'_>>, line: &[u8]) -> bool {
        if self.dispatcher.is_closed() {
            return true;
        }
        if !self.dispatcher.try_push(method, id, line) {
            return false;
        }
        let overflowing = &self.shared.dispatcher_overflowing;
        if overflowing.load(Ordering::Relaxed) {
            overflowing.store(false, Ordering::Relaxed);
        }
        true
    }

    /// Dispatches `message`, waiting for room (once, then the full-
    /// dispatcher policy applies).
    async fn dispatch(&mut self, message: Incoming) {
        let id = message.id.as_ref().map(OwnedId::as_id);
        if self.try_dispatch(message.method.as_bytes(), id, &message.bytes) {
            return;
        }
        let shared = &self.shared;
        let message = if shared.dispatcher_overflowing.load(Ordering::Relaxed) {
            message
        } else {
            let started = Instant::now();
            let pushed = self
                .dispatcher
                .push_within(message, shared.config.dispatcher_wait)
                .await;
            shared.counters.add_wait(started.elapsed());
            match pushed {
                Ok(()) => return,
                // Nobody takes messages any more: nothing to refuse.
                Err(_) if self.dispatcher.is_closed() => return,
                Err(message) => message,
            }
        };
        shared.dispatcher_overflowing.store(true, Ordering::Relaxed);
        Counters::bump(&shared.counters.dispatcher_overflows);
        match shared.config.dispatcher_full {
            DispatcherFullPolicy::KillSession => {
                shared.kill("the dispatcher stayed full");
                return;
            }
            DispatcherFullPolicy::CancelWork => {
                let ids =
                    shared
                        .pending
                        .lock()
                        .expect("pending map")
                        .fail_all(&CallError::Cancelled {
                            reason: "the dispatcher is full".into(),
                        });
                for id in ids {
                    shared.send_cancellation(super::RequestId(id), "host dispatcher is full");
                }
            }
            DispatcherFullPolicy::RejectNew => {}
        }
        if let Some(id) = &message.id {
            shared.try_write(response_line(
                id,
                Err((HOST_BUSY, "host is busy: dispatcher full".into())),
            ));
        }
        tracing::warn!(method = %message.method, "dispatcher full: server message refused");
    }
}

/// The numeric id this session would have issued, if `id` is one.
fn borrowed_our_id(id: &Id<'_>) -> Option<u64> {
    match id {
        Id::Number(raw) => numeric_id(raw),
        _ => None,
    }
}

/// The numeric id this session would have issued, if `id` is one.
fn our_id(id: &OwnedId) -> Option<u64> {
    match id {
        OwnedId::Number(raw) => numeric_id(raw),
        _ => None,
    }
}
