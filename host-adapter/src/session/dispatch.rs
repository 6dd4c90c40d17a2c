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
use std::sync::Arc;
use std::time::Duration;

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
            batch: Vec::new(),
        },
        DispatchReceiver {
            batches: receiver,
            queue: VecDeque::new(),
            room,
        },
    )
}

/// The reader's end. Messages gather in the current batch until
/// [`DispatchSender::flush`].
pub(crate) struct DispatchSender {
    /// Unbounded as a channel, bounded by `room`: every message in it holds
    /// a unit of room until it is taken.
    batches: mpsc::UnboundedSender<Vec<Incoming>>,
    room: Arc<Semaphore>,
    batch: Vec<Incoming>,
}

impl DispatchSender {
    /// Adds `message` to the current batch if there is room; gives it back
    /// if there is none.
    pub(crate) fn try_push(&mut self, message: Incoming) -> Result<(), Incoming> {
        match self.room.try_acquire() {
            Ok(permit) => {
                permit.forget();
                self.batch.push(message);
                Ok(())
            }
            Err(_) => Err(message),
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
                self.batch.push(message);
                Ok(())
            }
            _ => Err(message),
        }
    }

    /// Hands over the messages gathered so far.
    pub(crate) fn flush(&mut self) {
        if !self.batch.is_empty() {
            // A closed receiver (every session handle dropped) takes nothing.
            let _ = self.batches.send(std::mem::take(&mut self.batch));
        }
    }

    /// Whether nobody will ever take messages again.
    pub(crate) fn is_closed(&self) -> bool {
        self.batches.is_closed()
    }
}

/// The session's end.
pub(crate) struct DispatchReceiver {
    batches: mpsc::UnboundedReceiver<Vec<Incoming>>,
    queue: VecDeque<Incoming>,
    room: Arc<Semaphore>,
}

impl DispatchReceiver {
    /// The next message, in order; `None` once the reader is gone and every
    /// message was taken. Cancel-safe: a message is only taken when this
    /// returns it.
    pub(crate) async fn next(&mut self) -> Option<Incoming> {
        if self.queue.is_empty() {
            let batch = self.batches.recv().await?;
            self.queue.extend(batch);
        }
        let message = self.queue.pop_front()?;
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
            self.queue.extend(batch);
        }
        while let Ok(batch) = self.batches.try_recv() {
            self.queue.extend(batch);
        }
        let taken = self.queue.len();
        out.extend(self.queue.drain(..));
        self.room.add_permits(taken);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(n: u8) -> Incoming {
        Incoming {
            method: "notifications/message".into(),
            id: None,
            bytes: vec![n],
        }
    }

    #[tokio::test]
    async fn room_is_counted_per_message_and_given_back_when_taken() {
        let (mut sender, mut receiver) = dispatcher(2);
        assert!(sender.try_push(message(1)).is_ok());
        assert!(sender.try_push(message(2)).is_ok());
        assert_eq!(
            sender.try_push(message(3)).err().map(|m| m.bytes),
            Some(vec![3])
        );
        // Full: waiting hands the batch over, then times out.
        let refused = sender
            .push_within(message(3), Duration::from_millis(20))
            .await;
        assert!(refused.is_err());
        assert_eq!(receiver.next().await.map(|m| m.bytes), Some(vec![1]));
        // One taken: one fits.
        assert!(sender.try_push(message(3)).is_ok());
        sender.flush();
        assert_eq!(receiver.next().await.map(|m| m.bytes), Some(vec![2]));
        assert_eq!(receiver.next().await.map(|m| m.bytes), Some(vec![3]));
        // A batch: everything handed over, in order, in one call.
        for n in 4..=5 {
            assert!(sender.try_push(message(n)).is_ok());
        }
        sender.flush();
        let mut taken = Vec::new();
        assert!(receiver.next_batch(&mut taken).await);
        let bytes: Vec<Vec<u8>> = taken.iter().map(|m| m.bytes.clone()).collect();
        assert_eq!(bytes, vec![vec![4], vec![5]]);
        // Their room is back: two fit again.
        assert!(sender.try_push(message(6)).is_ok());
        assert!(sender.try_push(message(7)).is_ok());
        sender.flush();
        drop(sender);
        taken.clear();
        assert!(receiver.next_batch(&mut taken).await);
        assert_eq!(taken.len(), 2);
        assert!(!receiver.next_batch(&mut taken).await);
        assert!(receiver.next().await.is_none());
    }
}
