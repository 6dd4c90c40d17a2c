//! One response stream of a session: a POST's answers (as events or one
//! JSON body) or the session's own GET stream.
//!
//! The session's router offers each message to an outlet and never waits:
//! the outlet queues it within [`super::ServeConfig::stream_bytes`] or
//! refuses it, and the stream's body takes it from there at the client's
//! pace. A refused message is the stream's client's loss alone; the router
//! goes on reading the child.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame};
use tokio::sync::mpsc;

use super::session::Session;

/// What a stream sends: a message (numbered on an event stream), or the
/// priming event that opens a POST stream.
#[derive(Clone, Debug)]
pub(crate) enum Item {
    Message {
        event: Option<u64>,
        bytes: Bytes,
    },
    Priming {
        event: u64,
        retry: Duration,
    },
    /// The 2024-11-05 transport's first event: where to POST.
    Endpoint(String),
}

impl Item {
    /// The message it carries.
    pub(crate) fn message(&self) -> Option<&Bytes> {
        match self {
            Item::Message { bytes, .. } => Some(bytes),
            Item::Priming { .. } | Item::Endpoint(_) => None,
        }
    }

    /// Its bytes as a server-sent event, in one piece or (a large message)
    /// in three: the message's own bytes are then sent as they are, not
    /// copied into the event.
    pub(crate) fn to_event(&self) -> Event {
        match self {
            Item::Message { event: id, bytes } if bytes.len() >= SPLIT_EVENT_AT => {
                let mut head = Vec::with_capacity(48);
                if let Some(id) = id {
                    head.extend_from_slice(format!("id: {id}\n").as_bytes());
                }
                head.extend_from_slice(b"event: message\ndata: ");
                Event::Parts([
                    Bytes::from(head),
                    bytes.clone(),
                    Bytes::from_static(b"\n\n"),
                ])
            }
            Item::Message { event: id, bytes } => Event::One(event(*id, bytes)),
            Item::Priming { event, retry } => Event::One(Bytes::from(format!(
                "id: {event}\nretry: {}\ndata: \n\n",
                retry.as_millis()
            ))),
            Item::Endpoint(url) => {
                Event::One(Bytes::from(format!("event: endpoint\ndata: {url}\n\n")))
            }
        }
    }

    fn len(&self) -> usize {
        self.message().map_or(32, Bytes::len)
    }
}

/// A message at least this long is sent as an event in three pieces (its
/// head, the message, the blank line) instead of copied into one: a
/// result of 100 MB is not held twice. Shorter ones go in one piece (one
/// HTTP/1.1 chunk, one write).
const SPLIT_EVENT_AT: usize = 64 << 10;

/// A server-sent event's bytes.
pub(crate) enum Event {
    One(Bytes),
    Parts([Bytes; 3]),
}

/// A stream's queue, shared by the router (which offers) and the body
/// (which takes).
pub(crate) struct Outlet {
    /// The stream's number in its session (a resumed stream keeps it).
    pub(crate) stream: u64,
    /// Writes server-sent events; otherwise the messages are gathered into
    /// one JSON body.
    pub(crate) events: bool,
    /// Not ended by its last answer: the session's own stream (and the
    /// 2024-11-05 transport's, which carries every answer).
    pub(crate) lasting: bool,
    tx: Mutex<Option<mpsc::UnboundedSender<Item>>>,
    queued: AtomicUsize,
    limit: usize,
    /// A message was refused: the stream's client lost it.
    overflowed: AtomicBool,
    /// The body gave its last byte: nothing of it is to be resumed.
    sent_whole: AtomicBool,
    /// The ids (normalised) of the requests this stream answers that are
    /// not answered yet, each with whether it may be cancelled.
    pub(crate) waiting: Mutex<HashMap<String, bool>>,
}

impl Outlet {
    pub(crate) fn new(
        stream: u64,
        events: bool,
        limit: usize,
    ) -> (Arc<Outlet>, mpsc::UnboundedReceiver<Item>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let outlet = Arc::new(Outlet {
            stream,
            events,
            lasting: stream == super::session::STANDALONE,
            tx: Mutex::new(Some(tx)),
            queued: AtomicUsize::new(0),
            limit,
            overflowed: AtomicBool::new(false),
            sent_whole: AtomicBool::new(false),
            waiting: Mutex::new(HashMap::new()),
        });
        (outlet, rx)
    }

    /// Queues `item` unless the stream is closed or holds `limit` bytes
    /// already (a message larger than the limit is queued alone). Never
    /// waits.
    pub(crate) fn offer(&self, message: Item) -> bool {
        let tx = self.tx.lock().expect("outlet");
        let Some(tx) = tx.as_ref() else {
            return false;
        };
        let len = message.len();
        let queued = self.queued.load(Ordering::Relaxed);
        if queued > 0 && queued + len > self.limit {
            self.overflowed.store(true, Ordering::Relaxed);
            return false;
        }
        self.queued.fetch_add(len, Ordering::Relaxed);
        if tx.send(message).is_err() {
            self.queued.fetch_sub(len, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Queues `item` whatever the stream holds (a small error in place of
    /// an answer it had no room for), unless the stream is closed.
    pub(crate) fn force(&self, item: Item) {
        if let Some(tx) = self.tx.lock().expect("outlet").as_ref() {
            self.queued.fetch_add(item.len(), Ordering::Relaxed);
            let _ = tx.send(item);
        }
    }

    /// No more messages: the body ends once it has sent what is queued.
    pub(crate) fn close(&self) {
        self.tx.lock().expect("outlet").take();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.tx.lock().expect("outlet").is_none()
    }

    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    /// Whether the body gave its last byte (the stream ended, not its
    /// client).
    pub(crate) fn sent_whole(&self) -> bool {
        self.sent_whole.load(Ordering::Relaxed)
    }

    pub(crate) fn taken(&self, len: usize) {
        self.queued.fetch_sub(len, Ordering::Relaxed);
    }
}

/// One server-sent event carrying `message`, with `id` if given.
pub(crate) fn event(id: Option<u64>, message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 48);
    if let Some(id) = id {
        out.extend_from_slice(format!("id: {id}\n").as_bytes());
    }
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(message);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The body of an event stream: what the outlet queues, a comment every
/// `keep_alive` when there is nothing else (a write to a vanished client
/// fails, and the stream ends), and, when dropped (sent whole, or its
/// client gone), the session told so.
pub(crate) struct EventBody {
    rx: mpsc::UnboundedReceiver<Item>,
    /// An item taken from `rx` before the body started (to choose the
    /// response's status), sent first.
    first: Option<Item>,
    outlet: Arc<Outlet>,
    /// The rest of an event sent in pieces.
    pending: std::collections::VecDeque<Bytes>,
    keep_alive: tokio::time::Interval,
    /// Held for its drop.
    _gone: Gone,
}

impl EventBody {
    /// The body of the stream `gone` guards (its outlet, and the session
    /// told when the body is dropped); `first` is sent before the rest.
    pub(crate) fn new(
        rx: mpsc::UnboundedReceiver<Item>,
        first: Option<Item>,
        gone: Gone,
        keep_alive: Duration,
    ) -> Self {
        let mut keep_alive =
            tokio::time::interval_at(tokio::time::Instant::now() + keep_alive, keep_alive);
        keep_alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        EventBody {
            rx,
            first,
            outlet: gone.outlet.clone(),
            pending: std::collections::VecDeque::new(),
            keep_alive,
            _gone: gone,
        }
    }
}

impl Body for EventBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(piece) = self.pending.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(piece))));
        }
        let item = match self.first.take() {
            Some(first) => Some(first),
            None => match self.rx.poll_recv(cx) {
                Poll::Ready(Some(item)) => Some(item),
                Poll::Ready(None) => {
                    self.outlet.sent_whole.store(true, Ordering::Relaxed);
                    return Poll::Ready(None);
                }
                Poll::Pending => None,
            },
        };
        if let Some(item) = item {
            self.outlet.taken(item.len());
            return Poll::Ready(Some(Ok(Frame::data(match item.to_event() {
                Event::One(bytes) => bytes,
                Event::Parts([head, message, tail]) => {
                    self.pending.extend([message, tail]);
                    head
                }
            }))));
        }
        match self.keep_alive.poll_tick(cx) {
            Poll::Ready(_) => Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                b": keep-alive\n\n",
            ))))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Tells the session that a stream is over when dropped: its unanswered
/// requests are then cancelled to the child.
pub(crate) struct Gone {
    pub(crate) session: Weak<Session>,
    pub(crate) outlet: Arc<Outlet>,
}

impl Drop for Gone {
    fn drop(&mut self) {
        self.outlet.close();
        if let Some(session) = self.session.upgrade() {
            session.stream_gone(&self.outlet);
        }
    }
}
