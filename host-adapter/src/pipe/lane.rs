//! One output pipe, written by its writer task and, while that task has
//! nothing to do, straight from whoever hands it a batch.
//!
//! A batch queued for the writer costs a wake-up of the writer's thread
//! before it is written; on a busy two-core machine that wake-up is most of
//! what a small message costs in the middle. When the writer is idle and
//! nothing is queued, the batch is written right away instead, with a write
//! that never waits ([`RawOut`]): a peer that is reading takes it whole.
//! What the pipe does not take at once becomes the writer's next write, so
//! a peer that stops reading still holds up only the writer, as before.
//!
//! Three rules keep the bytes whole and in order:
//! - one writer at a time: a direct write happens under the lane's lock,
//!   and only while the writer task is not between the start and the end
//!   of a write of its own (`busy`);
//! - nothing overtakes: a batch is written directly only when no batch is
//!   queued (`queued`) and no rest of a direct write waits (`head`);
//! - nothing outlives the descriptor: the writer closes the lane, under the
//!   lock, before it closes the pipe.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::sys::RawOut;

/// The lane of one output pipe (see the module's documentation).
#[derive(Debug)]
pub(crate) struct Lane {
    state: Mutex<State>,
    /// Wakes the writer when a direct write left a rest for it.
    rest: Notify,
}

#[derive(Debug)]
struct State {
    /// The pipe, until the writer closes it.
    out: Option<RawOut>,
    /// The writer task is writing.
    busy: bool,
    /// Batches handed to the writer's queue and not yet written.
    queued: usize,
    /// The bytes of a direct write the pipe did not take: the writer's next
    /// write.
    head: Option<Vec<u8>>,
}

/// What [`Lane::write_now`] did with a batch.
#[derive(Debug)]
pub(crate) enum Direct {
    /// Written, or its rest handed to the writer: the buffer is free.
    Done(Vec<u8>),
    /// Not written: the writer is busy or something is ahead. The caller
    /// queues it; it counts as queued from now on.
    Queue(Vec<u8>),
}

impl Lane {
    pub(crate) fn new(out: RawOut) -> Arc<Lane> {
        Arc::new(Lane {
            state: Mutex::new(State {
                out: Some(out),
                busy: false,
                queued: 0,
                head: None,
            }),
            rest: Notify::new(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing under the lock can panic halfway (plain fields and one
        // system call), so a poisoned lock still holds a consistent state.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes `bytes` now if the lane is free and `direct` (else they are
    /// counted as queued: the caller queues them).
    pub(crate) fn write_now(&self, mut bytes: Vec<u8>, direct: bool) -> Direct {
        let mut state = self.state();
        let free = direct && !state.busy && state.queued == 0 && state.head.is_none();
        let out = match state.out {
            Some(out) if free => out,
            _ => {
                state.queued += 1;
                return Direct::Queue(bytes);
            }
        };
        let mut written = 0;
        while written < bytes.len() {
            match out.try_write(&bytes[written..]) {
                Ok(n) if n > 0 => written += n,
                // Full, or failed: the writer writes the rest and meets the
                // failure (and ends) as it would have.
                _ => break,
            }
        }
        if written < bytes.len() {
            bytes.drain(..written);
            state.head = Some(bytes);
            drop(state);
            self.rest.notify_one();
            return Direct::Done(Vec::new());
        }
        Direct::Done(bytes)
    }

    /// A queued batch was written (or dropped unwritten).
    pub(crate) fn dequeued(&self) {
        let mut state = self.state();
        state.queued = state.queued.saturating_sub(1);
    }

    /// The writer starts a write: nobody writes directly until [`end`]. The
    /// rest of a direct write, if one waits, is to be written first.
    ///
    /// [`end`]: Lane::end
    pub(crate) fn begin(&self) -> Option<Vec<u8>> {
        let mut state = self.state();
        state.busy = true;
        state.head.take()
    }

    /// The writer's write ended.
    pub(crate) fn end(&self) {
        self.state().busy = false;
    }

    /// Until a direct write leaves a rest for the writer.
    pub(crate) async fn rest_waiting(&self) {
        self.rest.notified().await;
    }

    /// The writer is about to close the pipe: no direct write from now on.
    pub(crate) fn close(&self) {
        self.state().out = None;
    }
}

// The lane writes through a descriptor only unix hands out (`RawOut`).
#[cfg(all(test, unix))]
mod tests {
    use std::io::Read;
    use std::os::fd::AsFd;

    use nix::fcntl::{FcntlArg, OFlag, fcntl};

    use super::*;

    #[test]
    fn a_free_lane_writes_at_once_and_a_full_pipe_leaves_the_rest_first() {
        let (mut reader, writer) = std::io::pipe().expect("a pipe");
        fcntl(writer.as_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).expect("non-blocking");
        let lane = Lane::new(RawOut::of(writer.as_fd()).expect("a pipe never waits"));

        // Free: written at once, the buffer given back.
        assert!(matches!(lane.write_now(b"a\n".to_vec(), true), Direct::Done(b) if b == b"a\n"));
        let mut got = [0u8; 2];
        reader.read_exact(&mut got).expect("the direct write");
        assert_eq!(&got, b"a\n");

        // Not asked to, or something queued ahead: queued, in order.
        assert!(matches!(
            lane.write_now(b"b\n".to_vec(), false),
            Direct::Queue(_)
        ));
        assert!(matches!(
            lane.write_now(b"c\n".to_vec(), true),
            Direct::Queue(_)
        ));
        lane.dequeued();
        assert!(matches!(
            lane.write_now(b"d\n".to_vec(), true),
            Direct::Queue(_)
        ));
        lane.dequeued();
        lane.dequeued();

        // The writer busy: queued; idle again: direct.
        assert_eq!(lane.begin(), None);
        assert!(matches!(
            lane.write_now(b"e\n".to_vec(), true),
            Direct::Queue(_)
        ));
        lane.end();
        lane.dequeued();

        // More than the pipe holds: what it took is written, the rest is the
        // writer's next write, and nothing overtakes it.
        let large: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        assert!(matches!(lane.write_now(large.clone(), true), Direct::Done(b) if b.is_empty()));
        assert!(matches!(
            lane.write_now(b"f\n".to_vec(), true),
            Direct::Queue(_)
        ));
        let rest = lane.begin().expect("the rest of the large write");
        assert!(!rest.is_empty() && rest.len() < large.len());
        let taken = large.len() - rest.len();
        let mut first = vec![0u8; taken];
        reader.read_exact(&mut first).expect("what the pipe took");
        assert_eq!(
            first,
            large[..taken],
            "the pipe holds the start of the large write"
        );
        assert_eq!(rest, large[taken..], "the rest is the rest, whole");
        assert_eq!(lane.begin(), None, "the rest is handed over once");
        lane.end();

        // Closed: nobody writes through it any more.
        lane.dequeued();
        lane.close();
        assert!(matches!(
            lane.write_now(b"g\n".to_vec(), true),
            Direct::Queue(_)
        ));
    }
}
