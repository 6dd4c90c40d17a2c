//! The two framed directions. Each reader frames what it reads with its own
//! [`Framer`] and decides, per event, what goes on, what is answered with an
//! error, and what is diverted to stderr.
//!
//! Deciding never waits: the messages of one read that go on are gathered
//! into one batch, which is queued once the read is routed. A message that
//! goes on unchanged is copied once, from the read (or the framer's
//! assembly of a message that spanned reads) into the batch, and costs no
//! allocation of its own; only messages with an id or a rejection are
//! looked at further.

use std::sync::{Arc, Mutex};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use drainpipe_framer::budget::{Clip, CondenseError, Condensed, Unit};
use drainpipe_framer::owned::{OwnedEnvelope, OwnedEvent, OwnedId};
use drainpipe_framer::{Envelope, Event, Id, JsonError, JsonErrorKind};
use tokio_util::sync::CancellationToken;

use crate::backend::{BackendError, FramerBackend, NativeFramer};
use crate::metrics::{DirectionMetrics, ProxyMetrics};
use crate::pipe::in_flight::InFlight as Table;
use crate::pipe::reader::{ReadEnd, Route, read_framed};
use crate::pipe::sink::StderrSink;
use tokio::io::AsyncRead;
use tokio::sync::Semaphore;
use tokio::sync::mpsc;

mod discover;

pub(crate) use discover::{Discovery, PROBE_ID};

use super::ProxyConfig;
use super::batch::{BatchCapture, Captured, request_ids};
use super::observe::Observer;
use super::queue::Forward;
use super::spill::rpc::{
    Own, ToolsList, add_read_tool, answer, handshake, has_resource_links, own_request,
};
use super::spill::{LineSpill, SpillStore};
use super::tasks::Tasks;
use crate::condense::{LineTap, SpillWanted, Tapped, condense_frame_spilling};
use crate::pipe::jsonrpc::{
    INVALID_REQUEST, OVER_BUDGET, PARSE_ERROR, SERVER_BUSY, SERVER_GONE, TOO_LARGE,
    sized_error_line,
};

/// A batch from a read shorter than this share of the read size is written
/// straight to the other peer when its writer is idle (see `pipe::lane`);
/// one from a longer read is queued. Small messages then skip a wake-up of
/// the writer (latency), and a peer writing in bulk keeps the reader and
/// the writer working side by side (throughput: on one thread, reading
/// would wait for every write).
const DIRECT_READ_SHARE: usize = 4;

/// Host requests still waiting for the server's answer, matched by the
/// value of their id ([`Id::canonical`](drainpipe_framer::Id::canonical)):
/// a server may echo `"é"` as `"\u00e9"` or `1E2` as `100.0`. Each keeps the
/// host's own spelling, for the proxy's answers, and whether it is a
/// `tools/call` (whose result may be condensed). Every method takes an id
/// token as written by either peer.
#[derive(Debug)]
pub(crate) struct InFlight(Table<Vec<u8>, (Vec<u8>, Kind)>);

/// The key an id token is matched by.
pub(crate) fn key_of(token: &[u8]) -> Vec<u8> {
    let id = match token {
        [b'"', inner @ .., b'"'] => Id::String(inner),
        b"null" => Id::Null,
        number => Id::Number(number),
    };
    id.canonical()
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight(Table::new(Self::MAX_TRACKED, Self::MAX_TRACKED))
    }
}

impl InFlight {
    /// The server's transport failed `id` (the remote bridge: a stream that
    /// stalled, broke or was over the limit): ends it if it is still
    /// waiting, and says so. A request already answered, or failed by the
    /// proxy itself, is not answered twice.
    pub(crate) fn fail(&mut self, id: &[u8]) -> bool {
        self.take(id).is_some()
    }

    /// Requests tracked at most, and cancelled ones remembered at most;
    /// past the first, new ones are forwarded untracked (no condensing, no
    /// error at exit). Bounds the proxy's **memory** against a host that
    /// never reads answers.
    pub(crate) const MAX_TRACKED: usize = 65_536;

    fn insert(&mut self, id: Vec<u8>, kind: Kind) -> bool {
        self.0.insert(key_of(&id), (id, kind))
    }

    /// Ends `id`; gives the host's spelling of it and what it asked, if it
    /// was in flight.
    fn take(&mut self, id: &[u8]) -> Option<(Vec<u8>, Kind)> {
        self.0.answered(&key_of(id))
    }

    /// Whether `id` is a `tools/call` in flight.
    fn is_tool_call(&self, id: &[u8]) -> bool {
        self.0
            .get(&key_of(id))
            .is_some_and(|&(_, kind)| kind == Kind::ToolCall)
    }

    /// Whether any `tools/call` is waiting for its answer.
    pub(crate) fn has_tool_call(&self) -> bool {
        self.0.values().any(|&(_, kind)| kind == Kind::ToolCall)
    }

    /// The host cancelled `id`: the server need not answer it, but may.
    fn cancel(&mut self, id: &[u8]) {
        self.0.end_unanswered(&key_of(id));
    }

    /// A response for `id` arrived while it was not in flight.
    fn answered_late(&mut self, id: &[u8]) {
        self.0.answered_late(&key_of(id));
    }

    /// The request a response that names no id must be answering (its
    /// host's spelling; see [`Table::sole`]).
    fn sole(&self) -> Option<Vec<u8>> {
        self.0.sole().map(|(_, (token, _))| token.clone())
    }

    /// Empties the table; returns the ids that were still waiting, as the
    /// host wrote them.
    pub(crate) fn drain(&mut self) -> Vec<Vec<u8>> {
        self.0
            .drain()
            .into_iter()
            .map(|(_, (token, _))| token)
            .collect()
    }
}

/// What a host request asked, as far as the proxy's answer to it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `tools/call`: its result may be condensed.
    ToolCall,
    /// `tools/list`: `drainpipe_read` is added to its last page.
    ToolsList,
    /// `initialize` or `server/discover`: `resources` is added to the
    /// capabilities.
    Handshake,
    /// The proxy's own `server/discover` (see `discover`): its answer is
    /// read, never forwarded.
    Probe,
    Other,
}

impl Kind {
    fn of(method: &[u8]) -> Kind {
        match method {
            b"tools/call" => Kind::ToolCall,
            b"tools/list" => Kind::ToolsList,
            b"initialize" | b"server/discover" => Kind::Handshake,
            _ => Kind::Other,
        }
    }
}

/// Which way a reader carries messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// The host's requests and notifications, and its answers to the server.
    HostToServer,
    /// The server's answers, notifications and requests.
    ServerToHost,
}

/// Everything a reader needs besides its input.
pub(crate) struct Router {
    pub(crate) direction: Direction,
    pub(crate) config: ProxyConfig,
    pub(crate) in_flight: Arc<Mutex<InFlight>>,
    pub(crate) metrics: Arc<Mutex<ProxyMetrics>>,
    pub(crate) sink: StderrSink,
    /// Batches of whole lines going on, in the reader's direction (bounded
    /// in bytes: a peer that does not read makes this reader wait, and only
    /// this reader).
    pub(crate) forward: Forward,
    /// The proxy's own answers back to the peer this reader reads from.
    /// Never waited on: an answer that does not fit is dropped and counted.
    pub(crate) reply: mpsc::Sender<Vec<u8>>,
    /// The proxy's own answers to the other peer (an error for the host when
    /// the server's response was rejected, and the reverse).
    pub(crate) answer_other: mpsc::Sender<Vec<u8>>,
    /// The lines of the current read that go on, each with its newline.
    pub(crate) out: Vec<u8>,
    /// How many lines `out` holds, and the longest (without its newline).
    pub(crate) out_lines: u64,
    pub(crate) out_largest: u64,
    /// Fired when this reader's framer fails (the sandboxed one can): the
    /// proxy then ends, as if asked to stop.
    pub(crate) failed: CancellationToken,
    /// Spilling (`--clip` with a spill store): where cut values are kept,
    /// and, for the host's reader, how its reads are answered.
    pub(crate) spill: Option<SpillRoute>,
    /// Telemetry, when it is on.
    pub(crate) observer: Observer,
}

/// What a reader needs for spilling.
#[derive(Clone)]
pub(crate) struct SpillRoute {
    pub(crate) store: SpillStore,
    /// Answers to reads, into the host's queue (bounded in bytes).
    pub(crate) answers: Forward,
    /// Reads answered at once, at most: each holds a page in memory.
    pub(crate) reads: Arc<Semaphore>,
    /// The server has its own `drainpipe_read`: calls to it go there.
    pub(crate) server_tool: Arc<AtomicBool>,
    /// The revision settled on has `resource_link` (2025-06-18 and later,
    /// or no `initialize` seen): else nothing is spilled or linked.
    pub(crate) links: Arc<AtomicBool>,
    /// The proxy added `resources` to the capabilities (the server
    /// announced none): the resource methods are then the proxy's to
    /// answer, and none of them reaches the server.
    pub(crate) resources_added: Arc<AtomicBool>,
    /// Whether the server's handshake was seen, and the resource requests
    /// waiting for the proxy's own `server/discover` (see `discover`).
    pub(crate) discovery: Arc<Mutex<Discovery>>,
    /// Reads taken and not yet answered: past [`SpillRoute::MAX_WAITING`]
    /// a read is refused at once.
    pub(crate) waiting: Arc<AtomicUsize>,
    /// The run's tasks: each read is answered in one, for the run.
    pub(crate) tasks: Tasks,
}

impl SpillRoute {
    /// Reads waiting at most. Bounds the proxy's **memory** against a host
    /// that sends reads and never reads the answers.
    pub(crate) const MAX_WAITING: usize = 64;
}

/// A line that was rejected while its id was not seen yet: its
/// `Discarded` carries the envelope of the whole line, which names the
/// request when the id came after the limit.
struct Unattributed {
    offset: u64,
    code: i64,
    what: String,
}

impl Router {
    fn peer(&self) -> &'static str {
        match self.direction {
            Direction::HostToServer => "host",
            Direction::ServerToHost => "server",
        }
    }

    fn with_metrics(&self, update: impl FnOnce(&mut DirectionMetrics, &mut ProxyMetrics)) {
        let mut all = self.metrics.lock().expect("metrics");
        let mut direction = match self.direction {
            Direction::HostToServer => all.host_to_server.clone(),
            Direction::ServerToHost => all.server_to_host.clone(),
        };
        update(&mut direction, &mut all);
        match self.direction {
            Direction::HostToServer => all.host_to_server = direction,
            Direction::ServerToHost => all.server_to_host = direction,
        }
    }

    /// This reader's framer: native, or the component (`--sandbox`).
    fn framer(&self) -> Result<Box<dyn FramerBackend>, BackendError> {
        if !self.config.sandbox {
            return Ok(Box::new(NativeFramer::new(self.config.framer)));
        }
        #[cfg(feature = "component")]
        {
            use crate::component::{GuestLimits, Sandbox};
            // Its memory cap sized for this proxy's reads.
            let config = self.config.framer;
            let limits = GuestLimits::for_config(&config, self.config.read_chunk_bytes.max(1));
            let framer = Sandbox::shared()?.framer(config, limits)?;
            Ok(Box::new(framer))
        }
        #[cfg(not(feature = "component"))]
        Err(BackendError::Unavailable {
            message: "drainpipe-host was built without its `component` feature".into(),
        })
    }

    /// Reads `input` to its end (or a read error), routing every event.
    pub(crate) async fn run(mut self, input: impl AsyncRead + Unpin) {
        let mut framer = match self.framer() {
            Ok(framer) => framer,
            Err(error) => {
                self.sink
                    .line(&format!("the {} reader cannot start: {error}", self.peer()));
                self.failed.cancel();
                return;
            }
        };
        // Results over the content budget are condensed as they stream.
        let tap = match (self.direction, self.config.clip) {
            (Direction::ServerToHost, Some(clip)) => {
                Some(LineTap::new(clip).with_spill(self.spill.as_ref().map(|s| {
                    // A line is spilled only while it may be a tool's
                    // result the host can follow a link from.
                    let (links, in_flight) = (s.links.clone(), self.in_flight.clone());
                    let wanted = SpillWanted(Box::new(move || {
                        links.load(Ordering::Relaxed)
                            && in_flight.lock().expect("in flight").has_tool_call()
                    }));
                    (s.store.clone(), wanted)
                })))
            }
            _ => None,
        };
        let chunk_bytes = self.config.read_chunk_bytes;
        let batch = BatchCapture::new(self.config.framer.max_frame_bytes());
        let mut route = ProxyRoute {
            router: &mut self,
            watch: None,
            tap,
            batch,
            batch_starts: Vec::new(),
        };
        match read_framed(input, &mut *framer, chunk_bytes, &mut route).await {
            ReadEnd::Eof => {}
            ReadEnd::ReadFailed(error) => {
                self.sink
                    .line(&format!("reading {} output failed: {error}", self.peer()));
            }
            ReadEnd::Framer(error) | ReadEnd::Finish(error) => self.backend_failed(&error),
        }
    }

    /// This reader's framer failed (only the sandboxed one can): nothing
    /// more can be framed safely, so the proxy ends.
    fn backend_failed(&mut self, error: &BackendError) {
        self.sink.line(&format!(
            "the {} reader's framer failed: {error}; ending the proxy",
            self.peer()
        ));
        self.failed.cancel();
    }

    /// Queues the lines gathered from one read (`read` bytes), waiting for
    /// room, and counts them.
    async fn flush(&mut self, read: u64) {
        let (lines, largest) = (self.out_lines, self.out_largest);
        self.out_lines = 0;
        self.out_largest = 0;
        let sent = if self.out.is_empty() {
            false
        } else {
            let out = std::mem::take(&mut self.out);
            // A long read says the peer writes faster than one message at
            // a time: its batch is queued, so the writer writes it while
            // this reader reads on. A short one is written at once if it can
            // be (no wake-up of the writer on the way).
            let direct = read < (self.config.read_chunk_bytes / DIRECT_READ_SHARE) as u64;
            self.forward.send(out, direct).await
        };
        self.with_metrics(|d, _| {
            d.bytes += read;
            if sent {
                d.frames += lines;
                d.largest_frame_bytes = d.largest_frame_bytes.max(largest);
            }
        });
    }

    /// Adds a line (without its newline) to the batch of this read.
    fn forward_line(&mut self, bytes: &[u8]) {
        if self.out.capacity() == 0 {
            self.out = self.forward.buffer();
        }
        self.out.reserve(bytes.len() + 1);
        self.out.extend_from_slice(bytes);
        self.out.push(b'\n');
        self.out_lines += 1;
        self.out_largest = self.out_largest.max(bytes.len() as u64);
    }

    /// Routes one event of the framer. Complete messages are looked at
    /// where they lie; the rare others are made owned first.
    fn on_event(
        &mut self,
        event: Event<'_>,
        watch: &mut Option<Unattributed>,
        tap: &mut Option<LineTap>,
        batch_starts: &mut Vec<u64>,
    ) {
        match event {
            Event::Frame(frame) => {
                let tapped = tap.as_mut().and_then(|tap| tap.take_spilled(frame.offset));
                self.frame(frame.bytes, &frame.envelope, tapped);
            }
            other => {
                if let Event::Malformed { offset, error, .. } = &other
                    && error.kind == JsonErrorKind::TopLevelNotObject
                {
                    batch_starts.push(*offset);
                }
                self.route(other.into(), watch, tap);
            }
        }
    }

    /// Routes an event other than a complete message.
    fn route(
        &mut self,
        event: OwnedEvent,
        watch: &mut Option<Unattributed>,
        tap: &mut Option<LineTap>,
    ) {
        match event {
            OwnedEvent::Frame {
                bytes, envelope, ..
            } => self.frame(&bytes, &envelope.as_envelope(), None),
            OwnedEvent::Oversize {
                offset,
                envelope,
                looks_like_json,
            } => {
                self.with_metrics(|d, _| d.oversize += 1);
                let limit = self.config.framer.max_frame_bytes();
                let what = format!(
                    "{} message at offset {offset} is over the transport limit of {limit} bytes",
                    self.peer()
                );
                let condensing = tap.is_some()
                    && looks_like_json
                    && envelope.method.is_none()
                    && !envelope.has_error;
                if condensing {
                    // A result of any size is condensed, not failed: the
                    // answer waits for the line's end.
                    *watch = Some(Unattributed {
                        offset,
                        code: TOO_LARGE,
                        what,
                    });
                } else if looks_like_json {
                    *watch = self.reject_or_wait(offset, &envelope, TOO_LARGE, what);
                } else {
                    self.reject(&envelope, TOO_LARGE, &what);
                }
            }
            OwnedEvent::Malformed {
                offset,
                error,
                envelope,
            } => {
                self.with_metrics(|d, _| d.malformed += 1);
                let what = malformed_text(self.peer(), offset, error);
                *watch = self.reject_or_wait(offset, &envelope, PARSE_ERROR, what);
            }
            OwnedEvent::Discarded {
                offset,
                len,
                envelope,
                well_formed,
                ..
            } => {
                self.with_metrics(|d, _| d.bytes_dropped += len);
                let tapped = tap.as_mut().and_then(|tap| tap.take_spilled(offset));
                if let Some(waiting) = watch.take_if(|w| w.offset == offset) {
                    // The envelope of the whole line: an id written after
                    // the limit (as the TypeScript SDK writes it) is here.
                    let what = format!("{} ({len} bytes in all)", waiting.what);
                    if envelope.id.is_some() {
                        self.with_metrics(|_, m| m.ids_after_limit += 1);
                    }
                    let condensed = match tapped {
                        Some((outcome, spilled)) if well_formed => {
                            self.condensed_result(&envelope, None, outcome, spilled)
                        }
                        _ => false,
                    };
                    if !condensed {
                        self.reject(&envelope, waiting.code, &what);
                    }
                }
            }
            OwnedEvent::NotProtocol { offset, line } => {
                self.with_metrics(|d, _| d.not_protocol += 1);
                let shown = &line[..line.len().min(self.config.max_diverted_line_bytes)];
                self.sink.line(&format!(
                    "not protocol, from the {} (offset {offset}, {} bytes): {}",
                    self.peer(),
                    line.len(),
                    String::from_utf8_lossy(shown)
                ));
            }
            OwnedEvent::Truncated {
                offset,
                len,
                envelope,
            } => {
                self.with_metrics(|d, _| d.truncated += 1);
                let what = format!(
                    "{} output ended inside a message at offset {offset} after {len} bytes",
                    self.peer()
                );
                self.reject(&envelope, SERVER_GONE, &what);
            }
        }
    }

    /// Routes a complete message (`bytes`, without its newline). `tapped`
    /// is its condensed form when it crossed reads over the content budget.
    fn frame(&mut self, bytes: &[u8], envelope: &Envelope<'_>, tapped: Option<Tapped>) {
        let is_response = envelope.method.is_none() && (envelope.has_result || envelope.has_error);
        // Notifications, the bulk of most streams, need nothing more.
        if envelope.id.is_none() && envelope.method.is_some() {
            if self.direction == Direction::HostToServer
                && envelope.method == Some(b"notifications/cancelled".as_slice())
            {
                self.with_metrics(|_, m| m.cancellations_forwarded += 1);
                // The server need not answer a cancelled request: stop
                // waiting for it, so it is not failed again at exit.
                if let Some(id) = cancelled_request(bytes) {
                    self.in_flight.lock().expect("in flight").cancel(&id);
                    self.observer.cancelled(&id);
                }
            }
            self.forward_line(bytes);
            return;
        }
        let id = envelope.id.as_ref().map(Id::to_json);
        // The line to send on instead of `bytes` (with trace context).
        let mut traced = None;
        match (self.direction, envelope.method, id) {
            (Direction::HostToServer, Some(method), Some(id)) => {
                if let Some(spill) = &self.spill
                    && let Some(own) = own_request(
                        method,
                        bytes,
                        spill.server_tool.load(Ordering::Relaxed),
                        spill.resources_added.load(Ordering::Relaxed),
                    )
                {
                    self.answer_own(spill.clone(), own, id);
                    return;
                }
                if let Some(spill) = self.spill.clone()
                    && self.discover_or_hold(&spill, method, bytes, &id)
                {
                    return;
                }
                let discover = method == b"server/discover";
                traced = self.observer.request(&id, method, bytes);
                let tracked = self
                    .in_flight
                    .lock()
                    .expect("in flight")
                    .insert(id, Kind::of(method));
                self.with_metrics(|_, m| {
                    m.host_requests += 1;
                    m.discover_requests += u64::from(discover);
                    m.untracked_requests += u64::from(!tracked);
                });
            }
            (Direction::ServerToHost, None, Some(id))
                if envelope.has_result
                    && self
                        .config
                        .clip
                        .is_some_and(|clip| !clip.surely_fits(bytes.len()))
                    && self.is_tool_call(&id) =>
            {
                let Some(clip) = self.config.clip else { return };
                let store = self
                    .spill
                    .as_ref()
                    .filter(|s| s.links.load(Ordering::Relaxed))
                    .map(|s| &s.store);
                let (outcome, spilled) =
                    tapped.unwrap_or_else(|| condense_frame_spilling(bytes, clip, store));
                let mut line = Vec::with_capacity(bytes.len() + 1);
                line.extend_from_slice(bytes);
                line.push(b'\n');
                self.condensed_result(
                    &OwnedEnvelope::from(*envelope),
                    Some(line),
                    outcome,
                    spilled,
                );
                return;
            }
            (Direction::ServerToHost, None, Some(id)) if is_response => {
                let taken = {
                    let mut in_flight = self.in_flight.lock().expect("in flight");
                    let taken = in_flight.take(&id);
                    if taken.is_none() {
                        in_flight.answered_late(&id);
                    }
                    taken
                };
                if let Some((_, Kind::Probe)) = taken {
                    self.settle_probe(bytes, envelope.has_result);
                    return;
                }
                if let Some((_, Kind::Handshake)) = taken
                    && envelope.has_result
                {
                    self.observer.handshake(bytes);
                }
                self.observer.answered(&id, bytes, None, 0);
                if let Some((_, kind)) = taken
                    && envelope.has_result
                    && self.announce_spill(bytes, kind)
                {
                    return;
                }
            }
            (_, None, _) if !is_response => {
                self.with_metrics(|d, _| d.unroutable += 1);
                self.sink.line(&format!(
                    "{} message is neither a request, a notification nor a response; not forwarded",
                    self.peer()
                ));
                return;
            }
            _ => {}
        }
        self.forward_line(traced.as_deref().unwrap_or(bytes));
    }

    /// Adds what spilling needs to what the server announces: the
    /// `drainpipe_read` tool to the last page of `tools/list`, `resources`
    /// to the capabilities, spliced into the server's own bytes. Returns
    /// whether the line went on changed.
    fn announce_spill(&mut self, bytes: &[u8], kind: Kind) -> bool {
        let Some(spill) = &self.spill else {
            return false;
        };
        let max = self.config.framer.max_frame_bytes();
        let changed = match kind {
            // The server's own tool, seen on an earlier page, wins.
            Kind::ToolsList if spill.server_tool.load(Ordering::Relaxed) => None,
            Kind::ToolsList => match add_read_tool(bytes) {
                ToolsList::Added(line) => Some(line),
                ToolsList::ServerHasOne => {
                    spill.server_tool.store(true, Ordering::Relaxed);
                    self.sink.line(
                        "the server has its own drainpipe_read tool: left alone (spilled values stay readable with resources/read)",
                    );
                    None
                }
                ToolsList::Unchanged => None,
            },
            Kind::Handshake => {
                spill.discovery.lock().expect("discovery").settle();
                let said = handshake(bytes);
                if let Some(revision) = &said.protocol
                    && !has_resource_links(revision)
                {
                    spill.links.store(false, Ordering::Relaxed);
                    self.sink.line(&format!(
                        "protocol {revision} has no resource_link: what --clip cuts is not kept"
                    ));
                }
                if said.line.as_ref().is_some_and(|line| line.len() <= max) {
                    spill.resources_added.store(true, Ordering::Relaxed);
                    self.sink.line(
                        "the server announces no resources: the proxy added the capability and answers the resource methods itself",
                    );
                }
                said.line
            }
            _ => None,
        };
        match changed {
            Some(line) if line.len() <= max => {
                self.forward_line(&line);
                true
            }
            _ => false,
        }
    }

    /// Answers a request for a spilled value, off the reactor, into the
    /// host's queue (waiting for room there, never here).
    fn answer_own(&mut self, spill: SpillRoute, own: Own, id: Vec<u8>) {
        self.with_metrics(|_, m| m.spill_reads += 1);
        if spill.waiting.fetch_add(1, Ordering::Relaxed) >= SpillRoute::MAX_WAITING {
            spill.waiting.fetch_sub(1, Ordering::Relaxed);
            self.send_error(
                true,
                &id,
                SERVER_BUSY,
                "too many reads of spilled values are waiting for their answers; try again",
            );
            return;
        }
        // A page in bytes within the amount is within it in any unit.
        let budget = self.config.clip.map_or(0, |clip| clip.amount);
        let tasks = spill.tasks.clone();
        tasks.spawn_for_run(async move {
            let Ok(_permit) = spill.reads.clone().acquire_owned().await else {
                return;
            };
            let store = spill.store.clone();
            let line = tokio::task::spawn_blocking(move || answer(&store, own, &id, budget)).await;
            if let Ok(line) = line {
                spill.answers.send(line, true).await;
            }
            spill.waiting.fetch_sub(1, Ordering::Relaxed);
        });
    }

    /// Whether `id` is a `tools/call` the host is waiting for.
    fn is_tool_call(&self, id: &[u8]) -> bool {
        self.in_flight.lock().expect("in flight").is_tool_call(id)
    }

    /// Answers a `tools/call` result over the content budget with its
    /// condensed form (or, if it fits after all, `original`); a result that
    /// cannot be condensed becomes an error, so the budget always holds.
    /// Returns false, answering nobody, if `envelope` names no `tools/call`
    /// the host is waiting for.
    fn condensed_result(
        &mut self,
        envelope: &OwnedEnvelope,
        original: Option<Vec<u8>>,
        outcome: Result<Condensed, CondenseError>,
        spilled: Option<LineSpill>,
    ) -> bool {
        let Some(id) = envelope.id.as_ref().map(id_token) else {
            return false;
        };
        if envelope.method.is_some() || !envelope.has_result || !self.is_tool_call(&id) {
            return false;
        }
        // Errors go back with the host's own spelling of the id.
        let id = match self.in_flight.lock().expect("in flight").take(&id) {
            Some((host_id, _)) => host_id,
            None => id,
        };
        let Some(clip) = self.config.clip else {
            return false;
        };
        let shown = String::from_utf8_lossy(&id).into_owned();
        let mut values_linked = 0;
        let line = match (outcome, original) {
            (
                Ok(Condensed::Cut {
                    mut frame,
                    original_bytes,
                    cuts,
                    links,
                    ..
                }),
                _,
            ) => {
                self.with_metrics(|_, m| m.results_condensed += 1);
                if let (Some(links), Some(mut spilled)) = (links, spilled)
                    && !spilled.is_empty()
                {
                    // The notice names the way to read them: the added
                    // tool only when it is the proxy's.
                    let how = match &self.spill {
                        Some(spill) if spill.server_tool.load(Ordering::Relaxed) => {
                            "read it with resources/read"
                        }
                        _ => "read it with resources/read or the drainpipe_read tool",
                    };
                    let (linked, problems) = spilled.link(&links, &mut frame, how);
                    self.with_metrics(|_, m| m.values_spilled += linked as u64);
                    values_linked = linked as u64;
                    for problem in problems {
                        self.sink.line(&format!("id {shown}: {problem}"));
                    }
                }
                self.sink.line(&format!(
                    "condensed the result for id {shown} from {original_bytes} to {} bytes ({cuts} value(s) cut; content budget {clip})",
                    frame.len()
                ));
                self.observer
                    .answered(&id, &frame, Some(original_bytes), values_linked);
                frame.push(b'\n');
                frame
            }
            (Ok(Condensed::Unchanged), Some(original)) => {
                self.observer
                    .answered(&id, &original[..original.len() - 1], None, 0);
                original
            }
            (outcome, _) => {
                self.with_metrics(|_, m| m.condense_failures += 1);
                let why = match outcome {
                    Err(error) => error.to_string(),
                    _ => "the result is over the transport limit".into(),
                };
                let message = format!(
                    "the result is over the content budget of {clip} and could not be condensed: {why}"
                );
                self.sink.line(&format!("{message} (id {shown})"));
                self.observer.failed(&id, OVER_BUDGET, &message);
                sized_error_line(
                    &id,
                    OVER_BUDGET,
                    &message,
                    &[(limit_key(clip), clip.amount as u64)],
                )
            }
        };
        self.forward_line(&line[..line.len() - 1]);
        true
    }

    /// A line was rejected with what was seen before the limit (or the
    /// error). Answers now if its id is known, or if it is shaped as the
    /// server's response while exactly one host request is in flight (it
    /// can only be that one's); otherwise returns the rejection, for the
    /// line's `Discarded` to attribute by the whole line's envelope.
    fn reject_or_wait(
        &mut self,
        offset: u64,
        envelope: &OwnedEnvelope,
        code: i64,
        what: String,
    ) -> Option<Unattributed> {
        if envelope.id.is_some() {
            self.reject(envelope, code, &what);
            return None;
        }
        let shaped_as_response = envelope.method.is_none()
            && (envelope.has_result || envelope.has_error)
            && self.direction == Direction::ServerToHost;
        let sole = shaped_as_response
            .then(|| self.in_flight.lock().expect("in flight").sole())
            .flatten();
        if let Some(id) = sole {
            self.with_metrics(|_, m| m.answered_as_sole_request += 1);
            self.answer_requester(&id, code, &format!("{what} (the only request waiting)"));
            return None;
        }
        self.sink.line(&format!(
            "{what}; no id before it, attributing it when the line ends"
        ));
        Some(Unattributed { offset, code, what })
    }

    /// Finds the batch lines among the lines of the read `chunk` (at
    /// stream offset `at`) that are not objects (`starts`, their offsets),
    /// and one begun in an earlier read, and answers each request in a
    /// batch that ended.
    fn batches(&mut self, batch: &mut BatchCapture, chunk: &[u8], at: u64, starts: &[u64]) {
        let mut captured = Vec::new();
        if batch.capturing() {
            captured.push(batch.push(chunk));
        }
        for offset in starts {
            if let Some(from) = offset.checked_sub(at).map(|from| from as usize)
                && from < chunk.len()
                && chunk[from..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
            {
                captured.push(batch.start(chunk, from));
            }
        }
        for outcome in captured {
            match outcome {
                Captured::Line(line) => {
                    let ids = request_ids(&line);
                    self.with_metrics(|_, m| m.batches_refused += 1);
                    for id in &ids {
                        self.send_error(
                            true,
                            id,
                            INVALID_REQUEST,
                            "JSON-RPC batches are not accepted (MCP removed them in 2025-06-18): send each message on its own line",
                        );
                    }
                    self.sink.line(&format!(
                        "a JSON-RPC batch from the host was refused; answered its {} request(s) with an error",
                        ids.len()
                    ));
                }
                Captured::TooLong => self.sink.line(
                    "a JSON-RPC batch from the host passed the transport limit; its requests cannot be named",
                ),
                Captured::Pending => {}
            }
        }
    }

    /// Answers for a message that will not be forwarded, when its id is known:
    /// a request gets an error from the proxy; a response (whose requester is
    /// the other peer) becomes an error for that requester. Returns whether
    /// anyone was answered.
    fn reject(&mut self, envelope: &OwnedEnvelope, code: i64, what: &str) -> bool {
        let Some(id) = envelope.id.as_ref().map(id_token) else {
            self.sink
                .line(&format!("{what}; no id seen, nobody to answer"));
            return false;
        };
        let shown = String::from_utf8_lossy(&id).into_owned();
        let is_response = envelope.has_result || envelope.has_error;
        // A host line rejected before its `method` or `result` was seen is
        // most likely a request: the host may be waiting for it.
        let from_requester = envelope.method.is_some()
            || (!is_response && self.direction == Direction::HostToServer);
        if from_requester {
            self.send_error(true, &id, code, what);
            self.sink.line(&format!(
                "{what}; answered the {} for id {shown}",
                self.peer()
            ));
            return true;
        }
        self.answer_requester(&id, code, what)
    }

    /// Fails request `id` of the other peer with an error, if it is waiting.
    fn answer_requester(&mut self, id: &[u8], code: i64, what: &str) -> bool {
        let shown = String::from_utf8_lossy(id).into_owned();
        let waiting = match self.direction {
            // Only host requests are tracked (answered with the host's own
            // spelling of the id); a server request the host's answer was
            // for is answered in any case (it cannot be checked).
            Direction::ServerToHost => self
                .in_flight
                .lock()
                .expect("in flight")
                .take(id)
                .map(|(host_id, _)| host_id),
            Direction::HostToServer => Some(id.to_vec()),
        };
        let Some(target) = waiting else {
            self.sink
                .line(&format!("{what}; id {shown} is not waiting for an answer"));
            return false;
        };
        self.send_error(false, &target, code, what);
        let other = match self.direction {
            Direction::HostToServer => "server",
            Direction::ServerToHost => "host",
        };
        self.sink.line(&format!(
            "{what}; answered the {other} with an error for id {shown}"
        ));
        true
    }

    fn send_error(&mut self, to_reader_peer: bool, id: &[u8], code: i64, message: &str) {
        let queue = if to_reader_peer {
            &self.reply
        } else {
            &self.answer_other
        };
        // The limit that was passed, for `data.drainpipe`.
        let limit = match code {
            TOO_LARGE => Some(self.config.framer.max_frame_bytes() as u64),
            OVER_BUDGET => self.config.clip.map(|clip| clip.amount as u64),
            _ => None,
        };
        let key = match (code, self.config.clip) {
            (OVER_BUDGET, Some(clip)) => limit_key(clip),
            _ => "limitBytes",
        };
        let sizes: &[(&str, u64)] = match &limit {
            Some(limit) => &[(key, *limit)],
            None => &[],
        };
        let sent = queue
            .try_send(sized_error_line(id, code, message, sizes))
            .is_ok();
        // An error for a request of the host ends its span.
        let to_host = to_reader_peer == (self.direction == Direction::HostToServer);
        if to_host {
            self.observer.failed(id, code, message);
        }
        self.with_metrics(|_, m| {
            if sent {
                m.errors_sent += 1;
            } else {
                m.errors_dropped += 1;
            }
        });
    }
}

fn malformed_text(peer: &str, offset: u64, error: JsonError) -> String {
    format!("{peer} message at offset {offset} is malformed ({error}); not forwarded")
}

/// The `params.requestId` of a `notifications/cancelled`, as a JSON token
/// (re-serialised; matched by value, so its spelling does not matter).
fn cancelled_request(frame: &[u8]) -> Option<Vec<u8>> {
    let message: serde_json::Value = serde_json::from_slice(frame).ok()?;
    let id = message.get("params")?.get("requestId")?;
    serde_json::to_vec(id).ok()
}

/// A proxy reader's side of the framing reader.
struct ProxyRoute<'a> {
    router: &'a mut Router,
    /// A rejected line that named no request yet (its id may come later).
    watch: Option<Unattributed>,
    /// Condenses results over the content budget as they stream.
    tap: Option<LineTap>,
    /// Batch lines from the host, captured to answer their requests.
    batch: BatchCapture,
    /// Where the batch lines of the current read start.
    batch_starts: Vec<u64>,
}

impl Route for ProxyRoute<'_> {
    fn read(&mut self, bytes: &[u8], at: u64) {
        // The tap sees the read first: a line that ends in it is condensed
        // by the time its event is routed.
        if let Some(tap) = self.tap.as_mut() {
            tap.push(bytes, at);
        }
    }

    fn event(&mut self, event: Event<'_>) {
        self.router.on_event(
            event,
            &mut self.watch,
            &mut self.tap,
            &mut self.batch_starts,
        );
    }

    async fn after_read(&mut self, bytes: &[u8], at: u64) {
        if self.router.direction == Direction::HostToServer && !bytes.is_empty() {
            self.router
                .batches(&mut self.batch, bytes, at, &self.batch_starts);
            self.batch_starts.clear();
        }
        self.router.flush(bytes.len() as u64).await;
    }
}

/// The id as the JSON token it was written as.
pub(crate) fn id_token(id: &OwnedId) -> Vec<u8> {
    id.as_id().to_json()
}

/// The member of `data.drainpipe` that gives a content budget, by its unit.
fn limit_key(clip: Clip) -> &'static str {
    match clip.unit {
        Unit::Chars => "limitChars",
        Unit::Tokens => "limitTokens",
        _ => "limitBytes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_names_its_request_as_written() {
        let frame = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": "a-1","reason":"x"}}"#;
        assert_eq!(cancelled_request(frame), Some(b"\"a-1\"".to_vec()));
        let frame = br#"{"method":"notifications/cancelled","params":{"requestId":17}}"#;
        assert_eq!(cancelled_request(frame), Some(b"17".to_vec()));
        assert_eq!(
            cancelled_request(br#"{"method":"notifications/cancelled"}"#),
            None
        );
    }
}
