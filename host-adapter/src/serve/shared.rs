//! `--shared`: every session on one child, for servers that take one
//! client only (one login, a lock on a file, a start that costs minutes).
//!
//! Sessions stay apart on the HTTP side (their own ids, streams, replay,
//! limits, idle time); what they send the child goes through the hub, and
//! what the child writes comes back through it to the one session it is
//! for. Two clients may use the same request id and the same progress
//! token (both SDKs count from 0): the child must never see them, so:
//!
//! - **request ids**: each request gets the next number of the hub's own;
//!   its answer goes back with the client's id, byte for byte as the
//!   client wrote it, to its session only;
//! - **progress tokens**: a request's `params._meta.progressToken` becomes
//!   that same number (servers that name progress by the request id then
//!   name it right too), and the child's `notifications/progress` get the
//!   client's token back;
//! - **`notifications/cancelled`** is sent on with the child's id for the
//!   session's own request; one naming anything else is dropped (a client
//!   cannot cancel another's request);
//! - **`initialize`**: the first is sent to the child; later ones wait for
//!   its answer, then each gets that result under its own id; only the
//!   first `notifications/initialized` is sent on; a later client's, when
//!   it declared roots, becomes `notifications/roots/list_changed`, so the
//!   server asks for the roots again (of the client that just came).
//!   Every client sees the server as the first client set it up (its
//!   protocol revision, its capabilities): said in the README;
//! - **the child's requests** (sampling, elicitation, roots) go to the
//!   session whose request the child took last and still works on, else
//!   to the newest session: over stdio nothing says which call one serves;
//! - **other notifications** (log messages, list changes) go to every
//!   session.
//!
//! The child is started by the first session, lives across sessions, and
//! ends once none has used it for [`super::ServeConfig::session_idle`], at
//! a stop, or on its own: then every session ends (an error for each
//! request waiting) and the next `initialize` starts a new child.
//!
//! Lock order: a session's state, then the hub's. The hub never holds its
//! lock while it hands a message to a session ([`Delivery`]).

use std::collections::HashMap;
use std::sync::{Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use drainpipe_framer::splice::{Span, Splice};
use drainpipe_framer::{Envelope, Id, MessageKind};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::session::{Router, Session, Sessions, normalise};

/// The one child every session shares.
pub(crate) struct Hub {
    /// Lines to the child's engine; `None` once it is ending.
    input: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    /// Closes the child's stdin (the engine then ends its tree).
    closing: CancellationToken,
    sessions: Weak<Sessions>,
    state: Mutex<HubState>,
}

struct HubState {
    /// The next id (and progress token) given to a request.
    next: u64,
    /// Requests the child has, by the id it was given.
    asked: HashMap<u64, Forwarded>,
    /// The sessions on this child.
    fronts: Vec<Weak<Session>>,
    init: Init,
    /// `initialize` requests waiting for the first one's answer.
    init_waiters: Vec<Forwarded>,
    /// The first `notifications/initialized` was sent on.
    initialized: bool,
    /// The sessions whose `initialize` declared roots.
    with_roots: Vec<Weak<Session>>,
    /// When the last session left (or the hub started).
    alone_since: Instant,
    ended: bool,
}

/// A request sent on to the child, and whose it is.
struct Forwarded {
    front: Weak<Session>,
    /// The client's id as it wrote it.
    id: Vec<u8>,
    /// The client's id normalised (how its session knows it).
    key: String,
    /// The client's progress token as it wrote it.
    token: Option<Vec<u8>>,
    initialize: bool,
}

enum Init {
    /// No `initialize` was sent to the child yet (or the last one failed).
    Unasked,
    /// One is out.
    Asked,
    /// The child's `result` to the first, given to every later one.
    Answered(Bytes),
}

/// A message for one session, handed over once the hub's lock is released.
struct Delivery {
    front: Weak<Session>,
    message: Bytes,
    kind: MessageKind,
    key: Option<String>,
    method: Option<&'static [u8]>,
}

impl Delivery {
    fn answer(to: &Forwarded, message: Vec<u8>) -> Delivery {
        Delivery {
            front: to.front.clone(),
            message: Bytes::from(message),
            kind: MessageKind::Response,
            key: Some(to.key.clone()),
            method: None,
        }
    }

    fn send(self) {
        if let Some(front) = self.front.upgrade() {
            front.deliver(&self.message, self.kind, self.key, self.method);
        }
    }
}

impl Hub {
    pub(crate) fn new(
        input: mpsc::Sender<Vec<u8>>,
        closing: CancellationToken,
        sessions: Weak<Sessions>,
    ) -> Hub {
        Hub {
            input: Mutex::new(Some(input)),
            closing,
            sessions,
            state: Mutex::new(HubState {
                next: 1,
                asked: HashMap::new(),
                fronts: Vec::new(),
                init: Init::Unasked,
                init_waiters: Vec::new(),
                initialized: false,
                with_roots: Vec::new(),
                alone_since: Instant::now(),
                ended: false,
            }),
        }
    }

    /// Whether the child is gone or going: a new session needs a new hub.
    pub(crate) fn ended(&self) -> bool {
        self.closing.is_cancelled() || self.state.lock().expect("hub").ended
    }

    /// A session joins.
    pub(crate) fn join(&self, front: Weak<Session>) {
        self.state.lock().expect("hub").fronts.push(front);
    }

    /// How long no session has been on the child (zero while one is, or
    /// while a live session's request is out).
    pub(crate) fn idle_for(&self) -> Duration {
        let state = self.state.lock().expect("hub");
        let live = |f: &Weak<Session>| f.strong_count() > 0;
        if state.fronts.iter().any(live) || state.asked.values().any(|a| live(&a.front)) {
            Duration::ZERO
        } else {
            state.alone_since.elapsed()
        }
    }

    /// Closes the child's stdin: the engine gives it its grace, then ends
    /// its tree.
    pub(crate) fn end(&self) {
        self.input.lock().expect("input").take();
        self.closing.cancel();
    }

    /// Sends `lines` of the session `front` to the child, rewritten.
    /// `false` if the child is gone.
    pub(crate) async fn forward(&self, front: &Weak<Session>, lines: Vec<Vec<u8>>) -> bool {
        let Some(lines) = self.rewrite_all(front, lines) else {
            return false;
        };
        let Some(input) = self.input.lock().expect("input").clone() else {
            return false;
        };
        for line in lines {
            if input.send(line).await.is_err() {
                return false;
            }
        }
        true
    }

    /// As [`Hub::forward`], without waiting (from a drop).
    pub(crate) fn forward_now(&self, front: &Weak<Session>, line: Vec<u8>) -> bool {
        let Some(lines) = self.rewrite_all(front, vec![line]) else {
            return false;
        };
        let Some(input) = self.input.lock().expect("input").clone() else {
            return false;
        };
        for line in lines {
            super::session::send_now(&input, line);
        }
        true
    }

    fn rewrite_all(&self, front: &Weak<Session>, lines: Vec<Vec<u8>>) -> Option<Vec<Vec<u8>>> {
        let mut deliveries = Vec::new();
        let lines = {
            let mut state = self.state.lock().expect("hub");
            if state.ended {
                return None;
            }
            lines
                .into_iter()
                .filter_map(|line| state.rewrite(front, line, &mut deliveries))
                .collect()
        };
        for delivery in deliveries {
            delivery.send();
        }
        Some(lines)
    }

    /// The session `front` leaves: what it asked that the child still
    /// works on is cancelled, and their answers will be dropped.
    pub(crate) fn leave(&self, front: &Session) {
        let lines: Vec<Vec<u8>> = {
            let mut state = self.state.lock().expect("hub");
            let me = front as *const Session;
            state
                .fronts
                .retain(|f| f.as_ptr() != me && f.strong_count() > 0);
            if state.fronts.is_empty() {
                state.alone_since = Instant::now();
            }
            state.init_waiters.retain(|w| w.front.as_ptr() != me);
            state.with_roots.retain(|f| f.as_ptr() != me);
            // Its `initialize`, if still out, stays: its answer is every
            // later client's.
            let mine: Vec<u64> = state
                .asked
                .iter()
                .filter(|(_, f)| f.front.as_ptr() == me && !f.initialize)
                .map(|(n, _)| *n)
                .collect();
            for &n in &mine {
                state.asked.remove(&n);
            }
            mine.into_iter().map(cancel_line).collect()
        };
        let Some(input) = self.input.lock().expect("input").clone() else {
            return;
        };
        for line in lines {
            super::session::send_now(&input, line);
        }
    }

    fn count_late(&self) {
        if let Some(sessions) = self.sessions.upgrade() {
            sessions.count(|m| m.late_answers_dropped += 1);
        }
    }
}

impl HubState {
    /// One line of a session's, as the child gets it (`None`: not sent).
    fn rewrite(
        &mut self,
        front: &Weak<Session>,
        line: Vec<u8>,
        deliveries: &mut Vec<Delivery>,
    ) -> Option<Vec<u8>> {
        let Some(top) = Span::whole(&line) else {
            return Some(line);
        };
        let method = top
            .member(&line, "method")
            .and_then(|m| m.string(&line).map(|s| s.into_owned()));
        let id = top.member(&line, "id");
        match (method.as_deref(), id) {
            (Some("initialize"), Some(id)) => {
                let roots = top
                    .member(&line, "params")
                    .and_then(|p| p.member(&line, "capabilities"))
                    .and_then(|c| c.member(&line, "roots"))
                    .is_some();
                if roots {
                    self.with_roots.push(front.clone());
                }
                let asked = Forwarded {
                    front: front.clone(),
                    id: id.bytes(&line).to_vec(),
                    key: key_of(id.bytes(&line))?,
                    token: None,
                    initialize: true,
                };
                match &self.init {
                    Init::Answered(result) => {
                        deliveries.push(Delivery::answer(&asked, answer_line(&asked.id, result)));
                        None
                    }
                    Init::Asked => {
                        self.init_waiters.push(asked);
                        None
                    }
                    Init::Unasked => {
                        self.init = Init::Asked;
                        Some(self.renumber(line, top, id, asked))
                    }
                }
            }
            (Some("notifications/initialized"), None) => {
                if !std::mem::replace(&mut self.initialized, true) {
                    Some(line)
                } else if self.with_roots.iter().any(|f| same(f, front)) {
                    Some(
                        br#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#
                            .to_vec(),
                    )
                } else {
                    None
                }
            }
            (Some("notifications/cancelled"), None) => {
                let request = top
                    .member(&line, "params")
                    .and_then(|p| p.member(&line, "requestId"))?;
                let key = key_of(request.bytes(&line))?;
                let n = self
                    .asked
                    .iter()
                    .find(|(_, f)| f.key == key && same(&f.front, front) && !f.initialize)
                    .map(|(n, _)| *n)?;
                let mut splice = Splice::new();
                splice.replace(request, n.to_string().as_bytes());
                Some(splice.apply(&line))
            }
            (Some(_), Some(id)) => {
                let key = key_of(id.bytes(&line))?;
                // A second request of the same id in the same session was
                // answered with an error by the session; the child never
                // sees it.
                if self
                    .asked
                    .values()
                    .any(|f| f.key == key && same(&f.front, front))
                {
                    return None;
                }
                let asked = Forwarded {
                    front: front.clone(),
                    id: id.bytes(&line).to_vec(),
                    key,
                    token: None,
                    initialize: false,
                };
                Some(self.renumber(line, top, id, asked))
            }
            // The client's answers to the child's requests and its other
            // notifications go as they are.
            _ => Some(line),
        }
    }

    /// `line` with the next number as its id and progress token; the
    /// request recorded under it.
    fn renumber(&mut self, line: Vec<u8>, top: Span, id: Span, mut asked: Forwarded) -> Vec<u8> {
        let n = self.next;
        self.next += 1;
        let number = n.to_string();
        let mut splice = Splice::new();
        splice.replace(id, number.as_bytes());
        if let Some(token) = top
            .member(&line, "params")
            .and_then(|p| p.member(&line, "_meta"))
            .and_then(|m| m.member(&line, "progressToken"))
        {
            asked.token = Some(token.bytes(&line).to_vec());
            splice.replace(token, number.as_bytes());
        }
        self.asked.insert(n, asked);
        splice.apply(&line)
    }

    /// The child answered the first `initialize`: a result is kept for
    /// every later one (and given to those waiting); an error is given to
    /// those waiting, and the next `initialize` is sent to the child.
    fn answered_initialize(&mut self, message: &[u8], deliveries: &mut Vec<Delivery>) {
        let top = Span::whole(message);
        let result = top.and_then(|t| t.member(message, "result"));
        let id = top.and_then(|t| t.member(message, "id"));
        self.init = match result {
            Some(result) => Init::Answered(Bytes::copy_from_slice(result.bytes(message))),
            None => Init::Unasked,
        };
        for waiter in std::mem::take(&mut self.init_waiters) {
            let line = match (&self.init, id) {
                (Init::Answered(result), _) => answer_line(&waiter.id, result),
                (_, Some(id)) => {
                    let mut splice = Splice::new();
                    splice.replace(id, &waiter.id);
                    splice.apply(message)
                }
                _ => continue,
            };
            deliveries.push(Delivery::answer(&waiter, line));
        }
    }

    /// The session the child's own request goes to.
    fn requester(&self) -> Option<Weak<Session>> {
        let working = self
            .asked
            .iter()
            .filter(|(_, f)| f.front.strong_count() > 0 && !f.initialize)
            .max_by_key(|(n, _)| **n)
            .map(|(_, f)| f.front.clone());
        working.or_else(|| {
            self.fronts
                .iter()
                .rev()
                .find(|f| f.strong_count() > 0)
                .cloned()
        })
    }
}

impl Router for Hub {
    fn message(&self, message: &Bytes, envelope: &Envelope<'_>) {
        let mut deliveries = Vec::new();
        let mut late = false;
        {
            let mut state = self.state.lock().expect("hub");
            match envelope.kind() {
                MessageKind::Response => {
                    let Some((n, span)) = envelope.id.and_then(|id| numbered(message, id)) else {
                        return;
                    };
                    match state.asked.remove(&n) {
                        Some(asked) => {
                            if asked.initialize {
                                state.answered_initialize(message, &mut deliveries);
                            }
                            let mut splice = Splice::new();
                            splice.replace(span, &asked.id);
                            deliveries.push(Delivery::answer(&asked, splice.apply(message)));
                        }
                        None => late = true,
                    }
                }
                MessageKind::Notification
                    if envelope.method == Some(b"notifications/progress".as_slice()) =>
                {
                    let token = Span::whole(message)
                        .and_then(|top| top.member(message, "params"))
                        .and_then(|p| p.member(message, "progressToken"));
                    let owner = token.and_then(|span| {
                        let n: u64 = std::str::from_utf8(span.bytes(message))
                            .ok()?
                            .parse()
                            .ok()?;
                        let asked = state.asked.get(&n)?;
                        Some((span, asked.token.clone()?, asked.front.clone()))
                    });
                    // Progress for no request of a session's goes nowhere.
                    if let Some((span, token, front)) = owner {
                        let mut splice = Splice::new();
                        splice.replace(span, &token);
                        deliveries.push(Delivery {
                            front,
                            message: Bytes::from(splice.apply(message)),
                            kind: MessageKind::Notification,
                            key: None,
                            method: Some(b"notifications/progress"),
                        });
                    }
                }
                MessageKind::Notification => {
                    for front in state.fronts.iter().filter(|f| f.strong_count() > 0) {
                        deliveries.push(Delivery {
                            front: front.clone(),
                            message: message.clone(),
                            kind: MessageKind::Notification,
                            key: None,
                            method: None,
                        });
                    }
                }
                MessageKind::Request => {
                    if let Some(front) = state.requester() {
                        deliveries.push(Delivery {
                            front,
                            message: message.clone(),
                            kind: MessageKind::Request,
                            key: None,
                            method: None,
                        });
                    }
                }
                _ => {}
            }
        }
        if late {
            self.count_late();
        }
        for delivery in deliveries {
            delivery.send();
        }
    }

    fn ended(&self) {
        let fronts = {
            let mut state = self.state.lock().expect("hub");
            state.ended = true;
            state.asked.clear();
            state.init_waiters.clear();
            std::mem::take(&mut state.fronts)
        };
        self.end();
        if let Some(sessions) = self.sessions.upgrade() {
            sessions.hub_ended(self);
        }
        for front in fronts.iter().filter_map(Weak::upgrade) {
            front.finish();
        }
    }
}

/// The number the hub gave a request, from the child's answer to it, and
/// where the id lies in the answer. The framer's envelope points into the
/// message (no search through a large result); when it does not, the id
/// is looked up.
fn numbered(message: &[u8], id: Id<'_>) -> Option<(u64, Span)> {
    let Id::Number(raw) = id else {
        return None;
    };
    let n: u64 = std::str::from_utf8(raw).ok()?.parse().ok()?;
    let base = message.as_ptr() as usize;
    let at = raw.as_ptr() as usize;
    let span = if at >= base && at + raw.len() <= base + message.len() {
        Span {
            start: at - base,
            end: at - base + raw.len(),
        }
    } else {
        Span::whole(message)?.member(message, "id")?
    };
    Some((n, span))
}

/// An answer to `id` with `result`.
fn answer_line(id: &[u8], result: &[u8]) -> Vec<u8> {
    let mut line = Vec::with_capacity(id.len() + result.len() + 32);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    line.extend_from_slice(id);
    line.extend_from_slice(br#","result":"#);
    line.extend_from_slice(result);
    line.push(b'}');
    line
}

fn cancel_line(n: u64) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{n},"reason":"the client went away"}}}}"#
    )
    .into_bytes()
}

/// A JSON value's normalised text (`None` if it is not JSON).
fn key_of(value: &[u8]) -> Option<String> {
    serde_json::from_slice::<serde_json::Value>(value)
        .ok()
        .map(|v| normalise(&v))
}

fn same(a: &Weak<Session>, b: &Weak<Session>) -> bool {
    a.as_ptr() == b.as_ptr()
}
