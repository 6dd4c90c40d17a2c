//! Sessions: one child behind the proxy engine each, and the routing of
//! what it writes to the client's streams.
//!
//! A session's engine reads the client's messages from one end of an
//! in-process pipe and writes the child's to it; the session writes the
//! lines of each POST into that pipe and a router reads the other way,
//! never stopping:
//!
//! - an answer goes to the stream of the POST that asked (late ones, whose
//!   client went away, are dropped and counted);
//! - `notifications/progress` goes to the stream of the request that gave
//!   its `progressToken`;
//! - any other message of the server's (log lines, sampling, elicitation)
//!   goes to the newest POST stream still open, else to the session's own
//!   GET stream, where it is numbered and kept for a reconnecting client
//!   (`Last-Event-ID`).
//!
//! A session ends at `DELETE`, after [`super::ServeConfig::session_idle`]
//! with nothing asked, when this server stops, or when its child exits;
//! ending one closes the child's stdin, and the engine ends the child's
//! tree as `drainpipe proxy` does (grace, SIGTERM, SIGKILL).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use drainpipe_framer::{Config as FramerConfig, Envelope, Event, Framer, MessageKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::outlet::{Item, Outlet};
use super::shared::Hub;
use super::{CommandFactory, ServeConfig, ServeMetrics};
use crate::proxy::{self, INVALID_REQUEST, ProxyOutcome, SERVER_GONE, StderrSink, UNREAD};

/// Called when a session has ended, with its id and how its engine ended.
pub type OnEnd = Arc<dyn Fn(&str, &io::Result<ProxyOutcome>) + Send + Sync>;

/// Lines queued for one session's child before a POST waits: a client
/// writing faster than its child reads is held at its own POST.
const INPUT_QUEUE: usize = 64;

/// Bytes of the in-process pipe between a session and its engine.
const PIPE_BYTES: usize = 256 << 10;

/// Bytes asked of the engine's pipe per read.
const READ_BYTES: usize = 64 << 10;

/// A message at least this long keeps the buffer it was read into (no
/// copy: a 100 MB result is held once by the router, not twice); a shorter
/// one is copied out, so that it holds no larger buffer's memory while it
/// waits in a queue or in the replay.
const SHARE_AT: usize = 64 << 10;

/// Every open session.
pub(crate) struct Sessions {
    pub(crate) config: Arc<ServeConfig>,
    command: CommandFactory,
    sink: StderrSink,
    tasks: TaskTracker,
    on_end: OnEnd,
    map: Mutex<HashMap<String, Arc<Session>>>,
    /// Children started ahead for stateless requests ([`ServeConfig::pool`]).
    pool: Mutex<VecDeque<Arc<Session>>>,
    metrics: Mutex<ServeMetrics>,
    /// Set at a stop: no new session.
    draining: AtomicBool,
    /// The child every session shares ([`ServeConfig::shared`]).
    hub: Mutex<Option<Arc<Hub>>>,
}

/// Why a session could not be started.
pub(crate) enum Refused {
    /// `max_sessions` are open.
    Full,
    /// The server is stopping.
    Stopping,
}

impl Sessions {
    pub(crate) fn new(
        config: Arc<ServeConfig>,
        command: CommandFactory,
        sink: StderrSink,
        tasks: TaskTracker,
        on_end: OnEnd,
    ) -> Arc<Sessions> {
        Arc::new(Sessions {
            config,
            command,
            sink,
            tasks,
            on_end,
            map: Mutex::new(HashMap::new()),
            pool: Mutex::new(VecDeque::new()),
            metrics: Mutex::new(ServeMetrics::default()),
            draining: AtomicBool::new(false),
            hub: Mutex::new(None),
        })
    }

    pub(crate) fn count(&self, update: impl FnOnce(&mut ServeMetrics)) {
        update(&mut self.metrics.lock().expect("metrics"));
    }

    pub(crate) fn metrics(&self) -> ServeMetrics {
        self.metrics.lock().expect("metrics").clone()
    }

    /// The open session named `id`, marked as used now.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.map.lock().expect("sessions").get(id).cloned()?;
        if session.closing.is_cancelled() {
            // Ending: its child is given its grace, but takes nothing more.
            return None;
        }
        session.state.lock().expect("session").last_used = Instant::now();
        Some(session)
    }

    /// Starts a session: its child, its engine, its writer and its router
    /// (or, with [`ServeConfig::shared`], a place on the shared child).
    /// An `ephemeral` one serves one POST of a client that keeps no session
    /// (the 2026-07-28 revision's stateless requests) and ends with it.
    pub(crate) fn start(self: &Arc<Self>, ephemeral: bool) -> Result<Arc<Session>, Refused> {
        if self.draining.load(Ordering::Relaxed) {
            return Err(Refused::Stopping);
        }
        let id = session_id();
        let hub = self.config.shared.then(|| self.hub());
        let closing = CancellationToken::new();
        let session = Arc::new_cyclic(|me| Session {
            id: id.clone(),
            me: me.clone(),
            input: Mutex::new(None),
            hub: hub.clone(),
            closing: closing.clone(),
            ephemeral,
            legacy: AtomicBool::new(false),
            sessions: Arc::downgrade(self),
            state: Mutex::new(State::new()),
        });
        {
            let mut map = self.map.lock().expect("sessions");
            if map.len() >= self.config.max_sessions {
                drop(map);
                self.count(|m| m.sessions_refused += 1);
                return Err(Refused::Full);
            }
            map.insert(id.clone(), session.clone());
        }
        self.count(|m| m.sessions += 1);
        match hub {
            Some(hub) => hub.join(Arc::downgrade(&session)),
            None => {
                let (input, output) = self.engine(id, closing);
                *session.input.lock().expect("input") = Some(input);
                self.tasks
                    .spawn(route_output(output, session.clone(), self.framer()));
            }
        }
        Ok(session)
    }

    /// The shared child, started if there is none (or it ended).
    fn hub(self: &Arc<Self>) -> Arc<Hub> {
        let mut slot = self.hub.lock().expect("hub");
        if let Some(hub) = slot.as_ref().filter(|hub| !hub.ended()) {
            return hub.clone();
        }
        let closing = CancellationToken::new();
        let (input, output) = self.engine("shared".to_string(), closing.clone());
        let hub = Arc::new(Hub::new(input, closing, Arc::downgrade(self)));
        self.tasks
            .spawn(route_output(output, hub.clone(), self.framer()));
        *slot = Some(hub.clone());
        hub
    }

    /// The shared child ended: the next session starts another.
    pub(crate) fn hub_ended(&self, hub: &Hub) {
        let mut slot = self.hub.lock().expect("hub");
        if slot.as_ref().is_some_and(|h| std::ptr::eq(h.as_ref(), hub)) {
            *slot = None;
        }
    }

    /// The router's framer: the engine's transport limit, and room for
    /// the envelope of its own errors.
    fn framer(&self) -> FramerConfig {
        FramerConfig::default().with_max_frame_bytes(
            self.config
                .proxy
                .framer
                .max_frame_bytes()
                .saturating_add(1024),
        )
    }

    /// Starts a child behind the engine, named `id` in what is said of it:
    /// the sender of the lines for its stdin (written in order until
    /// `closing`, which closes its stdin), and the engine's output.
    fn engine(
        self: &Arc<Self>,
        id: String,
        closing: CancellationToken,
    ) -> (
        mpsc::Sender<Vec<u8>>,
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
    ) {
        let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
        let (their_read, their_write) = tokio::io::split(theirs);
        let (our_read, our_write) = tokio::io::split(ours);
        let (input, input_rx) = mpsc::channel(INPUT_QUEUE);
        self.tasks.spawn(write_input(our_write, input_rx, closing));
        let engine = proxy::run(
            (self.command)(),
            self.config.proxy,
            their_read,
            their_write,
            self.sink.clone(),
            // Never asked to stop: an ending session closes the child's
            // stdin, and the engine's own steps (grace, SIGTERM, SIGKILL)
            // bound the rest.
            CancellationToken::new(),
        );
        let sessions = self.clone();
        self.tasks.spawn(async move {
            let outcome = engine.await;
            if let Err(error) = &outcome {
                sessions.sink.line(&format!(
                    "serve: session {id}: could not start the server: {error}"
                ));
            }
            // The session leaves the map when its router has routed the
            // engine's last words (the errors for what waited) and ended.
            (sessions.on_end)(&id, &outcome);
        });
        (input, our_read)
    }

    /// A session for one stateless request: a warm one from the pool if
    /// there is one (the pool is then topped up), else a new one.
    pub(crate) fn take_ephemeral(self: &Arc<Self>) -> Result<Arc<Session>, Refused> {
        if self.draining.load(Ordering::Relaxed) {
            return Err(Refused::Stopping);
        }
        let warm = loop {
            let Some(session) = self.pool.lock().expect("pool").pop_front() else {
                break None;
            };
            // A pooled child that exited is no use.
            if !session.closing.is_cancelled() && !session.state.lock().expect("session").ended {
                break Some(session);
            }
        };
        let session = match warm {
            Some(session) => session,
            None => self.start(true)?,
        };
        self.refill();
        Ok(session)
    }

    /// Starts sessions until the pool holds [`ServeConfig::pool`] (or the
    /// session limit is reached).
    pub(crate) fn refill(self: &Arc<Self>) {
        if self.config.shared {
            // Every request goes to the one child already.
            return;
        }
        loop {
            if self.pool.lock().expect("pool").len() >= self.config.pool {
                return;
            }
            match self.start(true) {
                Ok(session) => self.pool.lock().expect("pool").push_back(session),
                Err(_) => return,
            }
        }
    }

    fn pooled(&self, session: &Arc<Session>) -> bool {
        self.pool
            .lock()
            .expect("pool")
            .iter()
            .any(|s| Arc::ptr_eq(s, session))
    }

    /// Ends the sessions idle past `session_idle`, until `stop`.
    pub(crate) async fn reap_idle(self: Arc<Self>, stop: CancellationToken) {
        let idle = self.config.session_idle;
        let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(1));
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
            for session in self.all() {
                session.expire_detached();
                if session.idle_for() > idle && !self.pooled(&session) {
                    self.sink.line(&format!(
                        "serve: session {} idle for {}s: ended",
                        session.id,
                        idle.as_secs()
                    ));
                    self.end(&session.id);
                }
            }
            let hub = self.hub.lock().expect("hub").clone();
            if let Some(hub) = hub
                && hub.idle_for() > idle
            {
                self.sink.line(&format!(
                    "serve: the shared server unused for {}s: ended",
                    idle.as_secs()
                ));
                hub.end();
            }
        }
    }

    /// The ephemeral session waiting for the request `id` (normalised): where
    /// a stateless client's `notifications/cancelled` goes.
    pub(crate) fn waiting_for(&self, id: &str) -> Option<Arc<Session>> {
        self.map
            .lock()
            .expect("sessions")
            .values()
            .find(|s| s.ephemeral && s.state.lock().expect("session").waiting.contains_key(id))
            .cloned()
    }

    /// Ends the session `id` (its child's stdin closed; the engine ends
    /// its tree). Whether there was one.
    pub(crate) fn end(&self, id: &str) -> bool {
        let session = self.map.lock().expect("sessions").get(id).cloned();
        match session {
            Some(session) => {
                session.end();
                true
            }
            None => false,
        }
    }

    /// Stops taking sessions; waits up to `within` for every open request
    /// to be answered.
    pub(crate) async fn drain(&self, within: Duration) {
        self.draining.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            let busy = self
                .map
                .lock()
                .expect("sessions")
                .values()
                .any(|s| !s.state.lock().expect("session").waiting.is_empty());
            if !busy {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Ends every session.
    pub(crate) fn end_all(&self) {
        for session in self.all() {
            session.end();
        }
        if let Some(hub) = self.hub.lock().expect("hub").take() {
            hub.end();
        }
    }

    /// Every open session, at this moment.
    fn all(&self) -> Vec<Arc<Session>> {
        self.map
            .lock()
            .expect("sessions")
            .values()
            .cloned()
            .collect()
    }
}

/// A 128-bit random session id in hex: not guessable, so one client cannot
/// reach another's session by counting.
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One session.
pub(crate) struct Session {
    pub(crate) id: String,
    me: Weak<Session>,
    /// Lines to its own child; `None` once the session is ending (and
    /// always on a shared child).
    input: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    /// The shared child it is on ([`ServeConfig::shared`]).
    hub: Option<Arc<Hub>>,
    /// Set when the session ends; closes its own child's stdin (the
    /// engine then ends it).
    closing: CancellationToken,
    /// Serves one POST and ends with it (no `Mcp-Session-Id`).
    pub(crate) ephemeral: bool,
    /// A session of the 2024-11-05 transport: it lives as long as its
    /// event stream, which carries every answer.
    legacy: AtomicBool,
    sessions: Weak<Sessions>,
    state: Mutex<State>,
}

/// The stream number of the session's own (GET) stream; POST streams are
/// numbered from 1.
pub(crate) const STANDALONE: u64 = 0;

struct State {
    /// Unanswered requests (normalised id) and the stream each answers on.
    waiting: HashMap<String, Arc<Outlet>>,
    /// `progressToken`s (normalised) and the stream of their request.
    progress: HashMap<String, Arc<Outlet>>,
    /// Open POST event streams, oldest first.
    posts: Vec<Arc<Outlet>>,
    /// The GET stream.
    standalone: Option<Arc<Outlet>>,
    /// POST streams whose client went away with requests unanswered, kept
    /// until the deadline for a client that resumes them (`Last-Event-ID`);
    /// then what they wait for is cancelled.
    detached: Vec<(Arc<Outlet>, Instant)>,
    /// Every event sent or meant for an event stream, numbered, for a
    /// client that reconnects; bounded by `replay_bytes`.
    replay: VecDeque<Replayed>,
    replay_bytes: usize,
    next_event: u64,
    next_stream: u64,
    /// The last event a live GET stream was given.
    delivered: u64,
    last_used: Instant,
    ended: bool,
}

/// One numbered event.
struct Replayed {
    event: u64,
    stream: u64,
    /// Empty for a stream's priming event.
    message: Bytes,
}

impl State {
    fn new() -> Self {
        State {
            waiting: HashMap::new(),
            progress: HashMap::new(),
            posts: Vec::new(),
            standalone: None,
            detached: Vec::new(),
            replay: VecDeque::new(),
            replay_bytes: 0,
            next_event: 1,
            next_stream: 1,
            delivered: 0,
            last_used: Instant::now(),
            ended: false,
        }
    }

    /// Numbers `message` for `stream` and keeps it for a reconnection.
    fn record(&mut self, stream: u64, message: Bytes, limit: usize) -> u64 {
        let event = self.next_event;
        self.next_event += 1;
        self.replay_bytes += message.len();
        self.replay.push_back(Replayed {
            event,
            stream,
            message,
        });
        while self.replay_bytes > limit && self.replay.len() > 1 {
            if let Some(old) = self.replay.pop_front() {
                self.replay_bytes -= old.message.len();
            }
        }
        event
    }

    /// Drops the events of `stream` from the replay.
    fn forget_stream(&mut self, stream: u64) {
        let mut freed = 0;
        self.replay.retain(|r| {
            let keep = r.stream != stream;
            if !keep {
                freed += r.message.len();
            }
            keep
        });
        self.replay_bytes -= freed;
    }

    /// Forgets `outlet` as a destination (it is closed or replaced).
    fn unlink(&mut self, outlet: &Arc<Outlet>) {
        self.posts.retain(|o| !Arc::ptr_eq(o, outlet));
        self.detached.retain(|(o, _)| !Arc::ptr_eq(o, outlet));
        self.progress.retain(|_, o| !Arc::ptr_eq(o, outlet));
        if self
            .standalone
            .as_ref()
            .is_some_and(|o| Arc::ptr_eq(o, outlet))
        {
            self.standalone = None;
        }
    }
}

/// A request of a POST: its id (normalised JSON), whether it may be
/// cancelled, its `progressToken` (normalised) if any.
pub(crate) struct Asked {
    pub(crate) id: String,
    pub(crate) cancellable: bool,
    pub(crate) progress: Option<String>,
}

impl Session {
    fn config(&self) -> Option<Arc<ServeConfig>> {
        self.sessions.upgrade().map(|s| s.config.clone())
    }

    fn idle_for(&self) -> Duration {
        let state = self.state.lock().expect("session");
        if state.waiting.is_empty() {
            state.last_used.elapsed()
        } else {
            Duration::ZERO
        }
    }

    /// Closes the child's stdin: the engine gives it its grace, then ends
    /// its tree. On a shared child, the session leaves it (what it asked is
    /// cancelled) and ends now. Never called with the state locked.
    pub(crate) fn end(&self) {
        self.input.lock().expect("input").take();
        let first = !self.closing.is_cancelled();
        self.closing.cancel();
        if let Some(hub) = &self.hub
            && first
        {
            hub.leave(self);
            self.finish();
        }
    }

    /// Opens the stream that answers `asked`. A request whose id is
    /// already waiting in this session is answered at once with an error
    /// (two answers could not be told apart). An event stream starts with
    /// a priming event (an id, the reconnection delay, no data): a client
    /// that loses the connection resumes with `Last-Event-ID`. `None` if
    /// the session ended.
    pub(crate) fn open_post(
        &self,
        events: bool,
        asked: &[Asked],
    ) -> Option<(Arc<Outlet>, mpsc::UnboundedReceiver<Item>)> {
        let config = self.config()?;
        let mut state = self.state.lock().expect("session");
        if state.ended {
            return None;
        }
        let stream = state.next_stream;
        state.next_stream += 1;
        let (outlet, rx) = Outlet::new(stream, events, config.stream_bytes);
        if events && !self.ephemeral {
            // (A stateless client has no session to resume in.)
            let event = state.record(stream, Bytes::new(), config.replay_bytes);
            outlet.offer(Item::Priming {
                event,
                retry: config.retry,
            });
        }
        let mut taken = Vec::new();
        {
            let mut waiting = outlet.waiting.lock().expect("outlet");
            for request in asked {
                if state.waiting.contains_key(&request.id) || waiting.contains_key(&request.id) {
                    taken.push(request.id.clone());
                    continue;
                }
                waiting.insert(request.id.clone(), request.cancellable);
                state.waiting.insert(request.id.clone(), outlet.clone());
                if let Some(token) = &request.progress {
                    state.progress.insert(token.clone(), outlet.clone());
                }
            }
        }
        for id in taken {
            let error = error_message(
                &id,
                INVALID_REQUEST,
                "a request with this id is already waiting in this session",
            );
            emit(&mut state, &outlet, error, config.replay_bytes);
        }
        if events {
            state.posts.push(outlet.clone());
        }
        if outlet.waiting.lock().expect("outlet").is_empty() {
            outlet.close();
        }
        Some((outlet, rx))
    }

    /// Opens a GET stream. After `Last-Event-ID` of a POST stream, it
    /// resumes that stream: its events after that one, then its answers
    /// still to come, and it ends with them. Otherwise it is the session's
    /// own stream, replacing the one open (which ends): the events after
    /// `last_event`, or those never delivered, first.
    pub(crate) fn open_get(
        &self,
        last_event: Option<u64>,
    ) -> Option<(Arc<Outlet>, mpsc::UnboundedReceiver<Item>)> {
        let config = self.config()?;
        let mut state = self.state.lock().expect("session");
        if state.ended {
            return None;
        }
        let stream = last_event
            .and_then(|last| state.replay.iter().find(|r| r.event == last))
            .map_or(STANDALONE, |r| r.stream);
        let limit = config.stream_bytes.max(config.replay_bytes);
        let (outlet, rx) = Outlet::new(stream, true, limit);
        let after = last_event.unwrap_or(state.delivered);
        let mut last = after;
        for replayed in state
            .replay
            .iter()
            .filter(|r| r.stream == stream && r.event > after && !r.message.is_empty())
        {
            let item = Item::Message {
                event: Some(replayed.event),
                bytes: replayed.message.clone(),
            };
            if !outlet.offer(item) {
                break;
            }
            last = replayed.event;
        }
        if stream == STANDALONE {
            if let Some(old) = state.standalone.take() {
                old.close();
            }
            state.delivered = state.delivered.max(last);
            state.standalone = Some(outlet.clone());
            return Some((outlet, rx));
        }
        // The POST stream resumed: what it waits for is now this one's.
        let old = state
            .posts
            .iter()
            .chain(state.detached.iter().map(|(o, _)| o))
            .find(|o| o.stream == stream)
            .cloned();
        if let Some(old) = old {
            let moved: Vec<(String, bool)> = old.waiting.lock().expect("outlet").drain().collect();
            for (id, _) in &moved {
                state.waiting.insert(id.clone(), outlet.clone());
            }
            for target in state.progress.values_mut() {
                if Arc::ptr_eq(target, &old) {
                    *target = outlet.clone();
                }
            }
            outlet.waiting.lock().expect("outlet").extend(moved);
            old.close();
            state.unlink(&old);
        }
        if outlet.waiting.lock().expect("outlet").is_empty() {
            outlet.close();
        } else {
            state.posts.push(outlet.clone());
        }
        Some((outlet, rx))
    }

    /// Opens the 2024-11-05 transport's event stream: it starts with the
    /// endpoint to POST to, then carries every message of the child's.
    pub(crate) fn open_legacy(
        &self,
        endpoint: String,
    ) -> Option<(Arc<Outlet>, mpsc::UnboundedReceiver<Item>)> {
        let config = self.config()?;
        let mut state = self.state.lock().expect("session");
        if state.ended {
            return None;
        }
        let (outlet, rx) = Outlet::new(STANDALONE, true, config.stream_bytes);
        outlet.offer(Item::Endpoint(endpoint));
        state.standalone = Some(outlet.clone());
        self.legacy.store(true, Ordering::Relaxed);
        Some((outlet, rx))
    }

    /// A 2024-11-05 POST's requests, answered on the session's stream.
    /// `false` if there is no such stream (any more).
    pub(crate) fn register_legacy(&self, asked: &[Asked]) -> bool {
        let mut state = self.state.lock().expect("session");
        let Some(outlet) = state.standalone.clone().filter(|_| !state.ended) else {
            return false;
        };
        let mut waiting = outlet.waiting.lock().expect("outlet");
        for request in asked {
            waiting.insert(request.id.clone(), request.cancellable);
            state.waiting.insert(request.id.clone(), outlet.clone());
        }
        true
    }

    /// Stops waiting for the request `id` (its client cancelled it): a late
    /// answer is dropped, and a stream left waiting for nothing ends.
    pub(crate) fn forget(&self, id: &str) {
        let mut state = self.state.lock().expect("session");
        let Some(outlet) = state.waiting.remove(id) else {
            return;
        };
        let done = {
            let mut waiting = outlet.waiting.lock().expect("outlet");
            waiting.remove(id);
            waiting.is_empty()
        };
        if done && !outlet.lasting {
            outlet.close();
            state.unlink(&outlet);
        }
    }

    /// Sends `lines` to the child, in order. `false` if the session ended.
    pub(crate) async fn send(&self, lines: Vec<Vec<u8>>) -> bool {
        if let Some(hub) = &self.hub {
            return !self.closing.is_cancelled() && hub.forward(&self.me, lines).await;
        }
        let input = self.input.lock().expect("input").clone();
        let Some(input) = input else {
            return false;
        };
        for line in lines {
            if input.send(line).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Queues `line` for the child without waiting (from a drop): behind
    /// every line queued before it, so a cancellation never overtakes its
    /// request. `false` if the session is ending.
    fn send_now(&self, line: Vec<u8>) -> bool {
        if let Some(hub) = &self.hub {
            return !self.closing.is_cancelled() && hub.forward_now(&self.me, line);
        }
        let Some(input) = self.input.lock().expect("input").clone() else {
            return false;
        };
        send_now(&input, line)
    }

    /// A stream's body is gone (sent whole, or its client went away). A
    /// POST stream with requests unanswered is kept for
    /// [`ServeConfig::resume_window`] for its client to resume; anything
    /// else it waited for is cancelled to the child now, and any late
    /// answer will be dropped.
    pub(crate) fn stream_gone(&self, outlet: &Arc<Outlet>) {
        let window = self.config().map_or(Duration::ZERO, |c| c.resume_window);
        let mut state = self.state.lock().expect("session");
        if outlet.sent_whole() && outlet.stream != STANDALONE {
            // Delivered whole: none of its events will be asked for again,
            // and a large answer (kept even past the replay's bound, as the
            // newest event) must not stay in memory with its session.
            state.forget_stream(outlet.stream);
        }
        let unanswered = !outlet.waiting.lock().expect("outlet").is_empty();
        let resumable =
            outlet.events && outlet.stream != STANDALONE && !window.is_zero() && !self.ephemeral;
        let still_linked = state.posts.iter().any(|o| Arc::ptr_eq(o, outlet));
        if unanswered && resumable && still_linked && !state.ended {
            state.posts.retain(|o| !Arc::ptr_eq(o, outlet));
            state
                .detached
                .push((outlet.clone(), Instant::now() + window));
            return;
        }
        let legacy_stream = self.legacy.load(Ordering::Relaxed)
            && state
                .standalone
                .as_ref()
                .is_some_and(|o| Arc::ptr_eq(o, outlet));
        state.unlink(outlet);
        let cancelled = self.cancel_waiting(&mut state, outlet);
        drop(state);
        if self.ephemeral || legacy_stream {
            self.end();
        }
        let dropped = u64::from(outlet.overflowed());
        self.count(|m| {
            m.cancelled_on_disconnect += cancelled;
            m.dropped_for_slow_clients += dropped;
        });
    }

    /// Cancels the requests of the streams detached past their window.
    fn expire_detached(&self) {
        let now = Instant::now();
        let mut state = self.state.lock().expect("session");
        let expired: Vec<Arc<Outlet>> = state
            .detached
            .iter()
            .filter(|(_, deadline)| *deadline <= now)
            .map(|(o, _)| o.clone())
            .collect();
        let mut cancelled = 0;
        for outlet in expired {
            state.unlink(&outlet);
            cancelled += self.cancel_waiting(&mut state, &outlet);
        }
        drop(state);
        if cancelled > 0 {
            self.count(|m| m.cancelled_on_disconnect += cancelled);
        }
    }

    /// Sends `notifications/cancelled` for each request `outlet` still
    /// waits for (never `initialize`), and stops waiting for them.
    fn cancel_waiting(&self, state: &mut State, outlet: &Outlet) -> u64 {
        let ids: Vec<(String, bool)> = outlet.waiting.lock().expect("outlet").drain().collect();
        let mut cancelled = 0;
        for (id, cancellable) in ids {
            state.waiting.remove(&id);
            if state.ended || !cancellable {
                continue;
            }
            let line = format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"the client went away"}}}}"#
            );
            if self.send_now(line.into_bytes()) {
                cancelled += 1;
            }
        }
        cancelled
    }

    /// Routes one message of the child's (`id` normalised).
    pub(crate) fn deliver(
        &self,
        message: &Bytes,
        kind: MessageKind,
        id: Option<String>,
        method: Option<&[u8]>,
    ) {
        let limit = self.config().map_or(0, |c| c.replay_bytes);
        let mut state = self.state.lock().expect("session");
        match kind {
            MessageKind::Response => {
                let Some(id) = id else { return };
                let Some(outlet) = state.waiting.remove(&id) else {
                    drop(state);
                    self.count(|m| m.late_answers_dropped += 1);
                    return;
                };
                let done = {
                    let mut waiting = outlet.waiting.lock().expect("outlet");
                    waiting.remove(&id);
                    waiting.is_empty()
                };
                // A detached stream's answer is kept for its resumption.
                let detached = outlet.is_closed();
                let delivered = emit(&mut state, &outlet, message.clone(), limit);
                let mut unread = 0;
                if !delivered && !detached {
                    // Its client did not read: it gets a short error for
                    // this request instead of a stream that just ends, and
                    // so does every other request the stream waits for (it
                    // ends here: their answers could not reach the client,
                    // so they are cancelled to the child).
                    let others: Vec<String> = outlet
                        .waiting
                        .lock()
                        .expect("outlet")
                        .keys()
                        .cloned()
                        .collect();
                    for lost in std::iter::once(&id).chain(&others) {
                        let bytes = error_message(
                            lost,
                            UNREAD,
                            "the answer was dropped: this client did not read its stream (past serve's --stream-queue)",
                        );
                        let event = outlet
                            .events
                            .then(|| state.record(outlet.stream, bytes.clone(), limit));
                        outlet.force(Item::Message { event, bytes });
                    }
                    unread = 1 + others.len() as u64;
                    self.cancel_waiting(&mut state, &outlet);
                }
                if (done && !outlet.lasting) || !delivered {
                    outlet.close();
                    state.posts.retain(|o| !Arc::ptr_eq(o, &outlet));
                    state.progress.retain(|_, o| !Arc::ptr_eq(o, &outlet));
                }
                if done && detached {
                    state.detached.retain(|(o, _)| !Arc::ptr_eq(o, &outlet));
                }
                drop(state);
                if (done || unread > 0) && self.ephemeral {
                    self.end();
                }
                if unread > 0 {
                    self.count(|m| m.dropped_for_slow_clients += unread);
                }
            }
            MessageKind::Request | MessageKind::Notification => {
                // Progress goes to the stream of the request that gave its
                // token, or to the session's own stream (never to another
                // request's); anything else to the newest open POST stream.
                let target = if method == Some(b"notifications/progress".as_slice()) {
                    progress_token(message).and_then(|token| state.progress.get(&token).cloned())
                } else {
                    state.posts.iter().rev().find(|o| !o.is_closed()).cloned()
                };
                if let Some(outlet) = target
                    && emit(&mut state, &outlet, message.clone(), limit)
                {
                    return;
                }
                // The session's own stream: numbered, and kept for the
                // next GET if none is open.
                let bytes = message.clone();
                let number = state.record(STANDALONE, bytes.clone(), limit);
                if let Some(outlet) = state.standalone.clone() {
                    let item = Item::Message {
                        event: Some(number),
                        bytes,
                    };
                    if outlet.offer(item) {
                        state.delivered = number;
                    } else {
                        drop(state);
                        self.count(|m| m.dropped_for_slow_clients += 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// The child's output ended: every request still waiting is answered
    /// with an error (the engine answers those it saw; these it never
    /// read), then every stream ends.
    pub(crate) fn finish(&self) {
        let limit = self.config().map_or(0, |c| c.replay_bytes);
        let mut state = self.state.lock().expect("session");
        state.ended = true;
        let waiting: Vec<(String, Arc<Outlet>)> = state.waiting.drain().collect();
        for (id, outlet) in waiting {
            outlet.waiting.lock().expect("outlet").remove(&id);
            let error = error_message(
                &id,
                SERVER_GONE,
                "the session's server ended without answering",
            );
            emit(&mut state, &outlet, error, limit);
        }
        let standalone = state.standalone.take();
        let detached: Vec<_> = state.detached.drain(..).map(|(o, _)| o).collect();
        for outlet in state.posts.drain(..).chain(standalone).chain(detached) {
            outlet.close();
        }
        state.progress.clear();
        drop(state);
        self.input.lock().expect("input").take();
        if let Some(sessions) = self.sessions.upgrade() {
            sessions.map.lock().expect("sessions").remove(&self.id);
        }
    }

    fn count(&self, update: impl FnOnce(&mut ServeMetrics)) {
        if let Some(sessions) = self.sessions.upgrade() {
            sessions.count(update);
        }
    }
}

/// Queues `line` for a child without waiting: behind every line queued
/// before it. `false` if the child's input is closed.
pub(crate) fn send_now(input: &mpsc::Sender<Vec<u8>>, line: Vec<u8>) -> bool {
    match input.try_send(line) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(line)) => {
            // The queue is full of lines sent before: wait for room on a
            // task of its own.
            let input = input.clone();
            tokio::spawn(async move {
                let _ = input.send(line).await;
            });
            true
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    }
}

/// Where the messages an engine writes go: a session's own child's to
/// that session, the shared child's through its hub.
pub(crate) trait Router: Send + Sync + 'static {
    /// One whole message (without its line end).
    fn message(&self, message: &Bytes, envelope: &Envelope<'_>);
    /// The engine's output ended (its child is gone).
    fn ended(&self);
}

impl Router for Session {
    fn message(&self, message: &Bytes, envelope: &Envelope<'_>) {
        let id = envelope.id.and_then(|id| {
            serde_json::from_slice::<serde_json::Value>(&id.to_json())
                .ok()
                .map(|v| normalise(&v))
        });
        self.deliver(message, envelope.kind(), id, envelope.method);
    }

    fn ended(&self) {
        self.finish();
    }
}

/// Sends `message` on `outlet`: on an event stream numbered (and kept for
/// a reconnection), else bare. Whether the outlet took it.
fn emit(state: &mut State, outlet: &Outlet, bytes: Bytes, limit: usize) -> bool {
    let event = outlet
        .events
        .then(|| state.record(outlet.stream, bytes.clone(), limit));
    outlet.offer(Item::Message { event, bytes })
}

/// An error answering the request `id` (normalised JSON), as a stream
/// carries it (no line end).
fn error_message(id: &str, code: i64, text: &str) -> Bytes {
    let line = crate::pipe::jsonrpc::error_line(id.as_bytes(), code, text);
    Bytes::copy_from_slice(line.strip_suffix(b"\n").unwrap_or(&line))
}

/// A JSON value as a map key: its canonical text, the same for an id
/// however a peer escaped it.
pub(crate) fn normalise(value: &serde_json::Value) -> String {
    value.to_string()
}

/// The `params.progressToken` of a progress notification, normalised.
fn progress_token(message: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Progress {
        params: Params,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "progressToken")]
        token: serde_json::Value,
    }
    let progress: Progress = serde_json::from_slice(message).ok()?;
    Some(normalise(&progress.params.token))
}

/// Writes the session's lines to its engine in the order they were
/// queued; at `closing`, or when every sender is gone, ends the engine's
/// input (the child's stdin is then closed).
async fn write_input(
    mut out: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    mut input: mpsc::Receiver<Vec<u8>>,
    closing: CancellationToken,
) {
    loop {
        let line = tokio::select! {
            line = input.recv() => match line {
                Some(line) => line,
                None => break,
            },
            () = closing.cancelled() => break,
        };
        let written = tokio::select! {
            written = async {
                out.write_all(&line).await?;
                out.write_all(b"\n").await
            } => written,
            () = closing.cancelled() => break,
        };
        if written.is_err() {
            break;
        }
    }
    let _ = out.shutdown().await;
}

/// Reads what the engine writes (the child's messages, and the engine's
/// own errors) and routes each whole message; never stops reading. Holds
/// the session until the engine closes the pipe: its last words (an error
/// for each request still waiting) are routed before the session ends.
async fn route_output<R: Router>(
    mut input: tokio::io::ReadHalf<tokio::io::DuplexStream>,
    router: Arc<R>,
    config: FramerConfig,
) {
    let limit = config.max_frame_bytes();
    let mut framer = Framer::new(config);
    let mut buf = BytesMut::with_capacity(READ_BYTES);
    // Past the limit with no line end (the engine never writes such a
    // line): dropped up to the next one.
    let mut skipping = false;
    loop {
        if buf.capacity() - buf.len() < READ_BYTES / 4 {
            buf.reserve(READ_BYTES);
        }
        let n = match input.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut scan = buf.len() - n;
        while let Some(at) = memchr::memchr(b'\n', &buf[scan..]) {
            let len = scan + at + 1;
            scan = 0;
            let line = if len >= SHARE_AT {
                // The message keeps the buffer it was read into; what was
                // read after it (less than a read) moves to one of its own,
                // so no later message holds the large one's memory.
                let line = buf.split_to(len).freeze();
                buf = BytesMut::from(&buf[..]);
                line
            } else {
                let line = Bytes::copy_from_slice(&buf[..len]);
                buf.advance(len);
                line
            };
            if std::mem::take(&mut skipping) {
                continue;
            }
            // A whole line in one push: the frame lies in `line`.
            framer.push(&line, |event| {
                if let Event::Frame(frame) = event {
                    router.message(&within(&line, frame.bytes), &frame.envelope);
                }
            });
        }
        if buf.len() > limit {
            buf.clear();
            skipping = true;
        }
    }
    router.ended();
}

/// `part` of `line` as a view of it (no copy), or a copy if it lies
/// elsewhere.
fn within(line: &Bytes, part: &[u8]) -> Bytes {
    let (base, at) = (line.as_ptr() as usize, part.as_ptr() as usize);
    if at >= base && at + part.len() <= base + line.len() {
        line.slice_ref(part)
    } else {
        Bytes::copy_from_slice(part)
    }
}
