//! The writer of a pipe: the only task that touches a child's stdin (or the
//! proxy's own stdout).
//!
//! Everyone else hands it whole lines through bounded queues. A peer that
//! stops reading blocks this task in `write`, and only this task: callers
//! wait for queue space under their own bounds, readers never wait (they drop
//! and count what does not fit), and `close` interrupts even a write that
//! would block forever.

use std::sync::Arc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::lane::Lane;

/// How a writer knows it is done.
#[derive(Clone, Debug)]
pub(crate) enum WriterEnd {
    /// When the peer's messages end (the reader closed its queue): the
    /// server's stdin writer, which then closes stdin.
    FramesClosed,
    /// When this token fires: write what is queued, then stop. The host's
    /// stdout writer, which must also deliver the proxy's last errors.
    Finish(CancellationToken),
}

/// Writes batches from `frames` and lines from `replies` (if any) until `end`, a
/// failed write, or `close` (which also interrupts a write blocked on a peer
/// not reading); then shuts `out` down. `replies` go first: they are the
/// writer's own short answers, never held behind a peer's backlog. With a
/// `lane`, others write to `out` directly while this task is idle (see
/// `pipe::lane`): what they leave unwritten goes before anything else.
pub(crate) async fn write_lines<F: AsRef<[u8]>>(
    out: impl AsyncWrite + Unpin,
    mut frames: mpsc::Receiver<F>,
    mut replies: Option<mpsc::Receiver<Vec<u8>>>,
    close: CancellationToken,
    end: WriterEnd,
    lane: Option<Arc<Lane>>,
) {
    let (finish, end_with_frames) = match end {
        WriterEnd::FramesClosed => (CancellationToken::new(), true),
        WriterEnd::Finish(token) => (token, false),
    };
    let mut out = Writer { out, lane };
    let mut frames_open = true;
    loop {
        let written = tokio::select! {
            biased;
            () = close.cancelled() => break,
            () = rest_waiting(out.lane.as_deref()) => out.write(&[], &close).await,
            Some(line) = next_reply(&mut replies) => out.write(&line, &close).await,
            batch = frames.recv(), if frames_open => match batch {
                // The batch's room in the queue is given back once written.
                Some(batch) => out.write(batch.as_ref(), &close).await,
                None if end_with_frames => {
                    out.write(&[], &close).await;
                    break;
                }
                None => {
                    frames_open = false;
                    continue;
                }
            },
            () = finish.cancelled() => {
                let mut written = out.write(&[], &close).await;
                while written && let Ok(batch) = frames.try_recv() {
                    written = out.write(batch.as_ref(), &close).await;
                }
                while written && let Some(Ok(line)) = replies.as_mut().map(mpsc::Receiver::try_recv) {
                    written = out.write(&line, &close).await;
                }
                break;
            }
        };
        if !written {
            break;
        }
    }
    if let Some(lane) = &out.lane {
        lane.close();
    }
    let _ = out.out.shutdown().await;
}

/// The pipe and its lane. However the writer ends (even dropped in the
/// middle of a write), the lane is closed before the pipe is.
struct Writer<W: AsyncWrite + Unpin> {
    out: W,
    lane: Option<Arc<Lane>>,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    /// Writes what a direct write left unwritten, if anything, then `line`
    /// (which may be empty); nobody writes directly meanwhile. False if a
    /// write failed or `close` fired first.
    async fn write(&mut self, line: &[u8], close: &CancellationToken) -> bool {
        let rest = self.lane.as_ref().and_then(|lane| lane.begin());
        let mut written = true;
        if let Some(rest) = rest {
            written = write_one(&mut self.out, &rest, close).await;
        }
        if written && !line.is_empty() {
            written = write_one(&mut self.out, line, close).await;
        }
        if let Some(lane) = &self.lane {
            lane.end();
        }
        written
    }
}

impl<W: AsyncWrite + Unpin> Drop for Writer<W> {
    fn drop(&mut self) {
        if let Some(lane) = &self.lane {
            lane.close();
        }
    }
}

/// Until a direct write on `lane` leaves a rest; never without a lane.
async fn rest_waiting(lane: Option<&Lane>) {
    match lane {
        Some(lane) => lane.rest_waiting().await,
        None => std::future::pending().await,
    }
}

/// The next reply; never, for a writer without replies or once they ended.
async fn next_reply(replies: &mut Option<mpsc::Receiver<Vec<u8>>>) -> Option<Vec<u8>> {
    match replies {
        Some(queue) => queue.recv().await,
        None => std::future::pending().await,
    }
}

/// Writes `line` and flushes; false if that failed or `close` fired first.
async fn write_one(
    out: &mut (impl AsyncWrite + Unpin),
    line: &[u8],
    close: &CancellationToken,
) -> bool {
    tokio::select! {
        biased;
        () = close.cancelled() => false,
        written = async { out.write_all(line).await?; out.flush().await } => written.is_ok(),
    }
}
