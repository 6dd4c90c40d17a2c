//! The queue between a direction's reader and its writer: whole lines,
//! gathered into one batch per read, bounded in bytes.
//!
//! A batch crosses from the reader's task to the writer's once and goes out
//! in one write, however many messages it holds: a server that logs a
//! hundred thousand small notifications a second costs the proxy a few
//! thousand task wake-ups and writes, not a hundred thousand of each.
//!
//! With a [`Lane`], a batch is not queued at all while the writer is idle
//! and nothing is queued: it is written at once (see `pipe::lane`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::pipe::lane::{Direct, Lane};

/// Written buffers kept for the next batches, at most this many: a batch
/// needs a fresh buffer per read otherwise, and one over the allocator's
/// mmap threshold costs page faults every time.
const SPARE_BUFFERS: usize = 4;
/// A buffer larger than this (it held a large message) is not kept: the
/// spares must not pin memory after a burst.
const SPARE_MAX_BYTES: usize = 1 << 20;

type Spares = Arc<Mutex<Vec<Vec<u8>>>>;

/// Whole lines, each with its newline, and the room they hold in the queue
/// (given back when the batch is dropped, after it was written, with its
/// buffer for reuse).
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) bytes: Vec<u8>,
    _room: OwnedSemaphorePermit,
    spares: Spares,
    /// The lane it was counted as queued on, told when it is written.
    lane: Option<Arc<Lane>>,
}

impl AsRef<[u8]> for Batch {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if let Some(lane) = &self.lane {
            lane.dequeued();
        }
        spare(&self.spares, std::mem::take(&mut self.bytes));
    }
}

/// Keeps `bytes` for a later batch, if it is worth keeping.
fn spare(spares: &Spares, mut bytes: Vec<u8>) {
    if bytes.capacity() <= SPARE_MAX_BYTES && bytes.capacity() > 0 {
        let mut spares = spares.lock().expect("spare buffers");
        if spares.len() < SPARE_BUFFERS {
            bytes.clear();
            spares.push(bytes);
        }
    }
}

/// The reader's end.
#[derive(Clone, Debug)]
pub(crate) struct Forward {
    batches: mpsc::Sender<Batch>,
    room: Arc<Semaphore>,
    capacity: u32,
    spares: Spares,
    /// Nanoseconds `send` waited for room: the time the reader, and so
    /// the peer it reads from, was held up by the peer that did not read.
    blocked: Arc<AtomicU64>,
    /// The writer's pipe, written directly while the writer is idle.
    lane: Option<Arc<Lane>>,
}

/// A queue holding at most `bytes` bytes of batches; a batch larger than
/// that waits until the queue is empty, then travels alone. With `lane`,
/// batches go straight to the writer's pipe when they can.
pub(crate) fn queue(bytes: usize, lane: Option<Arc<Lane>>) -> (Forward, mpsc::Receiver<Batch>) {
    let capacity = bytes.clamp(1, u32::MAX as usize) as u32;
    // Every batch holds at least one byte of room, so the byte bound also
    // bounds their number; the channel's own bound only has to be larger.
    let (batches, receiver) = mpsc::channel(capacity.min(4096) as usize);
    let forward = Forward {
        batches,
        room: Arc::new(Semaphore::new(capacity as usize)),
        capacity,
        spares: Spares::default(),
        blocked: Arc::default(),
        lane,
    };
    (forward, receiver)
}

impl Forward {
    /// Queues `bytes`, waiting for room; with `direct`, writes them at once
    /// instead if the lane is free. False if the writer is gone.
    pub(crate) async fn send(&self, bytes: Vec<u8>, direct: bool) -> bool {
        let bytes = match &self.lane {
            Some(lane) => match lane.write_now(bytes, direct) {
                Direct::Done(buffer) => {
                    spare(&self.spares, buffer);
                    return true;
                }
                Direct::Queue(bytes) => bytes,
            },
            None => bytes,
        };
        let want = bytes.len().clamp(1, self.capacity as usize) as u32;
        let room = match self.room.clone().try_acquire_many_owned(want) {
            Ok(room) => room,
            Err(tokio::sync::TryAcquireError::Closed) => return false,
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let waited = Instant::now();
                let Ok(room) = self.room.clone().acquire_many_owned(want).await else {
                    return false;
                };
                let nanos = waited.elapsed().as_nanos().min(u64::MAX as u128) as u64;
                self.blocked.fetch_add(nanos, Ordering::Relaxed);
                room
            }
        };
        let batch = Batch {
            bytes,
            _room: room,
            spares: self.spares.clone(),
            lane: self.lane.clone(),
        };
        self.batches.send(batch).await.is_ok()
    }

    /// Nanoseconds `send` has waited for room so far (shared by clones).
    pub(crate) fn blocked(&self) -> Arc<AtomicU64> {
        self.blocked.clone()
    }

    /// An empty buffer for the next batch: one already written, if any.
    pub(crate) fn buffer(&self) -> Vec<u8> {
        self.spares
            .lock()
            .expect("spare buffers")
            .pop()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_queue_holds_its_bytes_and_one_large_batch_alone() {
        let (forward, mut batches) = queue(10, None);
        assert!(forward.send(vec![b'a'; 6], false).await);
        assert!(forward.send(vec![b'b'; 4], false).await);
        // Full: a third waits for room.
        let waiting = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            forward.send(vec![b'c'; 1], false),
        )
        .await;
        assert!(waiting.is_err(), "the queue holds at most 10 bytes");
        let first = batches.recv().await.expect("a batch");
        assert_eq!(first.bytes, vec![b'a'; 6]);
        drop(first);
        // A batch over the bound waits for the queue to empty, then goes alone.
        let large = tokio::spawn({
            let forward = forward.clone();
            async move { forward.send(vec![b'd'; 100], false).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!large.is_finished(), "4 bytes still queued");
        assert_eq!(batches.recv().await.expect("b").bytes.len(), 4);
        assert!(large.await.expect("join"));
        assert_eq!(batches.recv().await.expect("d").bytes.len(), 100);
        drop(batches);
        assert!(!forward.send(vec![1], false).await, "the writer is gone");
    }
}
