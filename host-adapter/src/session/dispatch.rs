//! The dispatcher: server requests and notifications on their way to
//! [`Session::next_incoming`](super::Session::next_incoming), bounded in
//! messages, handed over one batch per read.
//!
//! The bound is counted per message, as [`SessionConfig::dispatcher_capacity`]
//! says, but messages cross from the reader's task to the caller's in
//! batches: a server that writes a hundred thousand small notifications a
//! second costs a few thousand hand-offs, not a hundred thousand.
//!
//! [`SessionConfig::dispatcher_capacity`]: super::SessionConfig::dispatcher_capacity

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use drainpipe_framer::Id;
use drainpipe_framer::owned::OwnedId;
use tokio::sync::{Semaphore, mpsc};

use super::Incoming;

/// A dispatcher holding at most `capacity` messages not yet taken.
pub(crate) fn dispatcher(capacity: usize) -> (DispatchSender, DispatchReceiver) {
    let (batches, receiver) = mpsc::unbounded_channel();
    let room = Arc::new(Semaphore::new(capacity.max(1)));
    (
        DispatchSender {
            batches,
            room: room.clone(),
            batch: Batch::default(),
        },
        DispatchReceiver {
            batches: receiver,
            queue: VecDeque::new(),
            next: 0,
            room,
        },
    )
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
    room: Arc<Semaphore>,
    batch: Batch,
}

impl DispatchSender {
    /// Adds the message (its `method`, `id` and whole `line`) to the
    /// current batch if there is room; false if there is none.
    pub(crate) fn try_push(&mut self, method: &[u8], id: Option<Id<'_>>, line: &[u8]) -> bool {
        match self.room.try_acquire() {
            Ok(permit) => {
                permit.forget();
                self.batch.push(method, id, line);
                true
            }
            Err(_) => false,
        }
    }

    /// Hands over the current batch, then waits up to `wait` for room for
    /// `message`; gives it back if none came.
    pub(crate) async fn push_within(
        &mut self,
        message: Incoming,
        wait: Duration,
    ) -> Result<(), Incoming> {
        self.flush();
        // A session dropped meanwhile gives no room back: stop waiting then.
        let room = tokio::select! {
            room = tokio::time::timeout(wait, self.room.acquire()) => room,
            () = self.batches.closed() => return Err(message),
        };
        match room {
            Ok(Ok(permit)) => {
                permit.forget();
                let id = message.id.as_ref().map(OwnedId::as_id);
                self.batch
                    .push(message.method.as_bytes(), id, &message.bytes);
                Ok(())
            }
            _ => Err(message),
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

/// The session's end.
pub(crate) struct DispatchReceiver {
    batches: mpsc::UnboundedReceiver<Batch>,
    /// Batches received and not yet wholly taken.
    queue: VecDeque<Batch>,
    /// The next message to take in the front batch.
    next: usize,
    room: Arc<Semaphore>,
}

impl DispatchReceiver {
    /// The next message, in order; `None` once the reader is gone and every
    /// message was taken. Cancel-safe: a message is only taken when this
    /// returns it.
    pub(crate) async fn next(&mut self) -> Option<Incoming> {
        if self.queue.is_empty() {
            let batch = self.batches.recv().await?;
            self.queue.push_back(batch);
        }
        let message = self.take()?;
        self.room.add_permits(1);
        Some(message)
    }

    /// Every message handed over so far, at least one, in order, appended to
    /// `out`; false once the reader is gone and every message was taken.
    /// Cancel-safe, as [`DispatchReceiver::next`].
    pub(crate) async fn next_batch(&mut self, out: &mut Vec<Incoming>) -> bool {
        if self.queue.is_empty() {
            let Some(batch) = self.batches.recv().await else {
                return false;
            };
            self.queue.push_back(batch);
        }
        while let Ok(batch) = self.batches.try_recv() {
            self.queue.push_back(batch);
        }
        let before = out.len();
        while let Some(message) = self.take() {
            out.push(message);
        }
        self.room.add_permits(out.len() - before);
        true
    }

    /// Takes the next queued message, made here on the caller's thread. A
    /// batch leaves the queue with its last message, so a queue that is not
    /// empty always has one to take (batches are never handed over empty).
    fn take(&mut self) -> Option<Incoming> {
        let batch = self.queue.front_mut()?;
        let queued = &mut batch.messages[self.next];
        let message = Incoming {
            method: String::from_utf8_lossy(&batch.bytes[queued.method.clone()]).into_owned(),
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

    fn message(n: u8) -> Incoming {
        Incoming {
            method: "notifications/message".into(),
            id: None,
            bytes: vec![n],
        }
    }

    fn push(sender: &mut DispatchSender, n: u8) -> bool {
        sender.try_push(METHOD, None, &[n])
    }

    #[tokio::test]
    async fn room_is_counted_per_message_and_given_back_when_taken() {
        let (mut sender, mut receiver) = dispatcher(2);
        assert!(push(&mut sender, 1));
        assert!(push(&mut sender, 2));
        assert!(!push(&mut sender, 3));
        // Full: waiting hands the batch over, then times out.
        let refused = sender
            .push_within(message(3), Duration::from_millis(20))
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
        let (mut sender, mut receiver) = dispatcher(4);
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
}
