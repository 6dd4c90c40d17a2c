//! The writer of a pipe: the only task that touches a child's stdin (or the
//! proxy's own stdout).
//!
//! Everyone else hands it whole lines through bounded queues. A peer that
//! stops reading blocks this task in `write`, and only this task: callers
//! wait for queue space under their own bounds, readers never wait (they drop
//! and count what does not fit), and `close` interrupts even a write that
//! would block forever.

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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
/// writer's own short answers, never held behind a peer's backlog.
pub(crate) async fn write_lines<F: AsRef<[u8]>>(
    mut out: impl AsyncWrite + Unpin,
    mut frames: mpsc::Receiver<F>,
    mut replies: Option<mpsc::Receiver<Vec<u8>>>,
    close: CancellationToken,
    end: WriterEnd,
) {
    let (finish, end_with_frames) = match end {
        WriterEnd::FramesClosed => (CancellationToken::new(), true),
        WriterEnd::Finish(token) => (token, false),
    };
    let mut frames_open = true;
    loop {
        let written = tokio::select! {
            biased;
            () = close.cancelled() => break,
            Some(line) = next_reply(&mut replies) => write_one(&mut out, &line, &close).await,
            batch = frames.recv(), if frames_open => match batch {
                // The batch's room in the queue is given back once written.
                Some(batch) => write_one(&mut out, batch.as_ref(), &close).await,
                None if end_with_frames => break,
                None => {
                    frames_open = false;
                    continue;
                }
            },
            () = finish.cancelled() => {
                while let Ok(batch) = frames.try_recv() {
                    if !write_one(&mut out, batch.as_ref(), &close).await {
                        break;
                    }
                }
                while let Some(Ok(line)) = replies.as_mut().map(mpsc::Receiver::try_recv) {
                    if !write_one(&mut out, &line, &close).await {
                        break;
                    }
                }
                break;
            }
        };
        if !written {
            break;
        }
    }
    let _ = out.shutdown().await;
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
