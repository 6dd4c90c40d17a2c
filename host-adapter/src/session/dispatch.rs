//! The dispatcher: server requests and notifications on their way to
//! [`Session::next_incoming`](super::Session::next_incoming), bounded in
//! messages, handed over one batch per read.
//!
//! The bound is counted per message, as [`SessionConfig::dispatcher_capacity`]
//! says, but messages cross from the reader's task to the caller's in
//! batches: a server that writes a hundred thousand small notifications a
//! second costs a few thousand hand-offs, not a hundred thousand.
//!
//! Taking a message costs no lock a waiting task could hold and no wake-up
//! unless the reader waits: the room is one atomic count (only the reader
//! adds to it, so it never goes past the bound), the reader is woken only
//! when it found the dispatcher full, and the received batches are behind a
//! plain mutex held only while a message is taken out. Only a caller that
//! finds nothing to take waits, on the channel, in turn with other callers.
//!
//! [`SessionConfig::dispatcher_capacity`]: super::SessionConfig::dispatcher_capacity

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drainpipe_framer::Id;
use drainpipe_framer::owned::OwnedId;
use tokio::sync::{Notify, mpsc};

use super::Incoming;

/// A dispatcher holding at most `capacity` messages not yet taken.
pub(crate) fn dispatcher(capacity: usize) -> (DispatchSender, DispatchReceiver) {
    let (batches, receiver) = mpsc::unbounded_channel();
    let room = Arc::new(Room {
        capacity: capacity.max(1),
        held: AtomicUsize::new(0),
        freed: Notify::new(),
    });
    (
        DispatchSender {
            batches,
            room: room.clone(),
            batch: Batch::default(),
        },
        DispatchReceiver {
            batches: tokio::sync::Mutex::new(receiver),
            taken: Mutex::new(Received::default()),
            room,
        },
    )
}

/// The dispatcher's bound: how many messages are handed over (or gathered
/// for it) and not yet taken.
struct Room {
    capacity: usize,
    held: AtomicUsize,
    /// Signalled when a message is taken from a full dispatcher: the reader
    /// may be waiting for room (`DispatchSender::push_within`).
    freed: Notify,
}

impl Room {
    /// Takes a unit of room if there is one. Called by the reader only, so
    /// the count cannot pass the bound between the check and the add.
    fn try_take(&self) -> bool {
        if self.held.load(Ordering::SeqCst) < self.capacity {
            self.held.fetch_add(1, Ordering::SeqCst);
            true
        } else {
            false
        }
    }

    /// Gives back the room of `count` messages taken.
    fn give(&self, count: usize) {
        if count == 0 {
            return;
        }
        // The reader waits only after it saw the count at the bound, and
        // nothing but the reader adds to it: so the first give after that
        // starts from the bound and wakes it (or leaves it a permit, if it
        // is about to wait). Below the bound nobody waits: no signal.
        if self.held.fetch_sub(count, Ordering::SeqCst) >= self.capacity {
            self.freed.notify_one();
        }
    }
}

/// The messages of one hand-over, their bytes in one buffer: the reader
/// copies each message once, into it, and the caller's thread makes the
/// [`Incoming`] it takes. Each message allocated on the reader's thread
/// and freed on the caller's cost more than finding it (issue #35); one
/// buffer per hand-over costs that once per read.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    messages: Vec<Queued>,
}

/// One message in a [`Batch`]: where its method and line are.
struct Queued {
    method: Range<usize>,
    id: Option<OwnedId>,
    line: Range<usize>,
}

impl Batch {
    fn push(&mut self, method: &[u8], id: Option<Id<'_>>, line: &[u8]) {
        let mut span = |bytes: &[u8]| {
            let start = self.bytes.len();
            self.bytes.extend_from_slice(bytes);
            start..self.bytes.len()
        };
        let method = span(method);
        let line = span(line);
        self.messages.push(Queued {
            method,
            id: id.map(OwnedId::from),
            line,
        });
    }

    fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

/// The reader's end. Messages gather in the current batch until
/// [`DispatchSender::flush`].
pub(crate) struct DispatchSender {
    /// Unbounded as a channel, bounded by `room`: every message in it holds
    /// a unit of room until it is taken.
    batches: mpsc::UnboundedSender<Batch>,
    room: Arc<Room>,
    batch: Batch,
}

impl DispatchSender {
    /// Adds the message (its `method`, `id` and whole `line`) to the
    /// current batch if there is room; false if there is none.
    pub(crate) fn try_push(&mut self, method: &[u8], id: Option<Id<'_>>, line: &[u8]) -> bool {
        let fits = self.room.try_take();
        if fits {
            self.batch.push(method, id, line);
        }
        fits
    }

    /// Hands over the current batch, then waits up to `wait` for room for
    /// `message`; gives it back if none came.
    pub(crate) async fn push_within(
        &mut self,
        message: Incoming,
        wait: Duration,
    ) -> Result<(), Incoming> {
        self.flush();
        let timeout = tokio::time::sleep(wait);
        tokio::pin!(timeout);
        loop {
            // Listening before looking: room given back between the look
            // and the wait still wakes it.
            let freed = self.room.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.room.try_take() {
                let id = message.id.as_ref().map(OwnedId::as_id);
                self.batch
                    .push(message.method.as_bytes(), id, &message.bytes);
                return Ok(());
            }
            tokio::select! {
                () = &mut freed => {}
                () = &mut timeout => return Err(message),
                // A session dropped meanwhile gives no room back.
                () = self.batches.closed() => return Err(message),
            }
        }
    }

    /// Hands over the messages gathered so far.
    pub(crate) fn flush(&mut self) {
        if !self.batch.is_empty() {
            // The next batch is sized like this one: a steady stream then
            // costs one allocation per buffer and hand-over, not a
            // doubling every few messages.
            let next = Batch {
                bytes: Vec::with_capacity(self.batch.bytes.len()),
                messages: Vec::with_capacity(self.batch.messages.len()),
            };
            let batch = std::mem::replace(&mut self.batch, next);
            // A closed receiver (every session handle dropped) takes nothing.
            let _ = self.batches.send(batch);
        }
    }

    /// Whether nobody will ever take messages again.
    pub(crate) fn is_closed(&self) -> bool {
        self.batches.is_closed()
    }
}

/// The session's end, shared by every caller of the session.
pub(crate) struct DispatchReceiver {
    /// Batches handed over and not yet received; a caller that finds
    /// nothing in `taken` waits here, one caller at a time.
    batches: tokio::sync::Mutex<mpsc::UnboundedReceiver<Batch>>,
    /// Batches received and not yet wholly taken.
    taken: Mutex<Received>,
    room: Arc<Room>,
}

/// Batches received, in order, and where the front one is up to.
#[derive(Default)]
struct Received {
    queue: VecDeque<Batch>,
    /// The next message to take in the front batch.
    next: usize,
}

impl DispatchReceiver {
    /// The next message, in order; `None` once the reader is gone and every
    /// message was taken. Cancel-safe: a message is only taken when this
    /// returns it.
    pub(crate) async fn next(&self) -> Option<Incoming> {
        loop {
            if let Some(message) = self.received().take() {
                self.room.give(1);
                return Some(message);
            }
            self.receive().await?;
        }
    }

    /// Every message handed over so far, at least one, in order, appended to
    /// `out`; false once the reader is gone and every message was taken.
    /// Cancel-safe, as [`DispatchReceiver::next`].
    pub(crate) async fn next_batch(&self, out: &mut Vec<Incoming>) -> bool {
        loop {
            // What else was handed over joins this batch, unless another
            // caller is waiting for the channel (it will have it).
            if let Ok(mut batches) = self.batches.try_lock() {
                let mut received = self.received();
                while let Ok(batch) = batches.try_recv() {
                    received.queue.push_back(batch);
                }
            }
            let before = out.len();
            {
                let mut received = self.received();
                while let Some(message) = received.take() {
                    out.push(message);
                }
            }
            if out.len() > before {
                self.room.give(out.len() - before);
                return true;
            }
            if self.receive().await.is_none() {
                return false;
            }
        }
    }

    /// Waits for the next batch and queues it; `None` once the reader is
    /// gone and nothing is left to receive. Returns at once if another
    /// caller queued something meanwhile.
    async fn receive(&self) -> Option<()> {
        let mut batches = self.batches.lock().await;
        if !self.received().queue.is_empty() {
            return Some(());
        }
        // Cancel-safe: a batch received is queued before anything else can
        // be polled.
        let batch = batches.recv().await?;
        self.received().queue.push_back(batch);
        Some(())
    }

    fn received(&self) -> std::sync::MutexGuard<'_, Received> {
        // Nothing panics while it is held.
        self.taken.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Received {
    /// Takes the next queued message, made here on the caller's thread. A
    /// batch leaves the queue with its last message, so a queue that is not
    /// empty always has one to take (batches are never handed over empty).
    fn take(&mut self) -> Option<Incoming> {
        let batch = self.queue.front_mut()?;
        let queued = &mut batch.messages[self.next];
        let method = &batch.bytes[queued.method.clone()];
        let message = Incoming {
            // The framer checked the line's UTF-8; the lossy form is only
            // for a backend that did not.
            method: std::str::from_utf8(method).map_or_else(
                |_| String::from_utf8_lossy(method).into_owned(),
                str::to_owned,
            ),
            id: queued.id.take(),
            bytes: batch.bytes[queued.line.clone()].to_vec(),
        };
        self.next += 1;
        if self.next == batch.messages.len() {
            self.queue.pop_front();
            self.next = 0;
        }
        Some(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METHOD: &[u8] = b"notifications/message";

    /// A notification whose whole line is `line`, as the reader holds one
    /// it could not push at once.
    fn message(line: &[u8]) -> Incoming {
        Incoming {
            method: "notifications/message".into(),
            id: None,
            bytes: line.to_vec(),
        }
    }

    fn push(sender: &mut DispatchSender, n: u8) -> bool {
        sender.try_push(METHOD, None, &[n])
    }

    #[tokio::test]
    async fn room_is_counted_per_message_and_given_back_when_taken() {
        let (mut sender, receiver) = dispatcher(2);
        assert!(push(&mut sender, 1));
        assert!(push(&mut sender, 2));
        assert!(!push(&mut sender, 3));
        // Full: waiting hands the batch over, then times out.
        let refused = sender
            .push_within(message(&[3]), Duration::from_millis(20))
            .await;
        assert!(refused.is_err());
        assert_eq!(receiver.next().await.map(|m| m.bytes), Some(vec![1]));
        // One taken: one fits.
        assert!(push(&mut sender, 3));
        sender.flush();
        assert_eq!(receiver.next().await.map(|m| m.bytes), Some(vec![2]));
        assert_eq!(receiver.next().await.map(|m| m.bytes), Some(vec![3]));
        // A batch: everything handed over, in order, in one call.
        for n in 4..=5 {
            assert!(push(&mut sender, n));
        }
        sender.flush();
        let mut taken = Vec::new();
        assert!(receiver.next_batch(&mut taken).await);
        let bytes: Vec<Vec<u8>> = taken.iter().map(|m| m.bytes.clone()).collect();
        assert_eq!(bytes, vec![vec![4], vec![5]]);
        // Their room is back: two fit again.
        assert!(push(&mut sender, 6));
        assert!(push(&mut sender, 7));
        sender.flush();
        drop(sender);
        taken.clear();
        assert!(receiver.next_batch(&mut taken).await);
        assert_eq!(taken.len(), 2);
        assert!(!receiver.next_batch(&mut taken).await);
        assert!(receiver.next().await.is_none());
    }

    #[tokio::test]
    async fn methods_ids_and_lines_cross_as_they_were_pushed() {
        let (mut sender, receiver) = dispatcher(4);
        assert!(sender.try_push(b"ping", Some(Id::String(b"a")), b"{\"id\":\"a\"}"));
        let waited = Incoming {
            method: "roots/list".into(),
            id: Some(OwnedId::Number(b"7".to_vec())),
            bytes: b"{\"id\":7}".to_vec(),
        };
        assert!(
            sender
                .push_within(waited, Duration::from_secs(5))
                .await
                .is_ok()
        );
        sender.flush();
        let first = receiver.next().await.expect("first");
        assert_eq!(first.method, "ping");
        assert_eq!(first.id, Some(OwnedId::String(b"a".to_vec())));
        assert_eq!(first.bytes, b"{\"id\":\"a\"}");
        let second = receiver.next().await.expect("second");
        assert_eq!(second.method, "roots/list");
        assert_eq!(second.id, Some(OwnedId::Number(b"7".to_vec())));
        assert_eq!(second.bytes, b"{\"id\":7}");
    }

    #[tokio::test]
    async fn a_reader_waiting_for_room_is_woken_when_one_is_taken() {
        let (mut sender, receiver) = dispatcher(1);
        assert!(push(&mut sender, 1));
        let waiting = tokio::spawn(async move {
            let pushed = sender
                .push_within(message(&[2]), Duration::from_secs(30))
                .await
                .is_ok();
            sender.flush();
            pushed
        });
        // Let it find the dispatcher full and wait.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(receiver.next().await.map(|m| m.bytes), Some(vec![1]));
        let pushed = tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the waiting reader was not woken by the room given back")
            .expect("reader task");
        assert!(pushed);
        assert_eq!(receiver.next().await.map(|m| m.bytes), Some(vec![2]));
        assert!(receiver.next().await.is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn callers_taking_at_once_get_every_message_once_in_order() {
        const COUNT: u32 = 20_000;
        let (mut sender, receiver) = dispatcher(16);
        let receiver = Arc::new(receiver);
        let callers: Vec<_> = (0..4)
            .map(|caller| {
                let receiver = receiver.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut batch = Vec::new();
                    loop {
                        // Half the callers take one at a time, half by the batch.
                        if caller % 2 == 0 {
                            match receiver.next().await {
                                Some(message) => seen.push(message),
                                None => break,
                            }
                        } else if receiver.next_batch(&mut batch).await {
                            seen.append(&mut batch);
                        } else {
                            break;
                        }
                    }
                    seen.into_iter()
                        .map(|m| u32::from_le_bytes(m.bytes.try_into().expect("four bytes")))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let reader = tokio::spawn(async move {
            for n in 0..COUNT {
                let line = n.to_le_bytes();
                if !sender.try_push(METHOD, None, &line) {
                    assert!(
                        sender
                            .push_within(message(&line), Duration::from_secs(30))
                            .await
                            .is_ok(),
                        "no room came back for message {n}"
                    );
                }
                if n % 7 == 0 {
                    sender.flush();
                }
            }
            sender.flush();
        });
        let all = tokio::time::timeout(Duration::from_secs(60), async {
            reader.await.expect("reader");
            let mut all = Vec::new();
            for caller in callers {
                let seen = caller.await.expect("caller");
                assert!(
                    seen.windows(2).all(|w| w[0] < w[1]),
                    "a caller saw messages out of order"
                );
                all.extend(seen);
            }
            all
        })
        .await
        .expect("the callers and the reader did not finish");
        let mut all = all;
        all.sort_unstable();
        assert_eq!(all, (0..COUNT).collect::<Vec<_>>());
    }
}
