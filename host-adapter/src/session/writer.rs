//! The stdin writer: the only task that touches the server's stdin.
//!
//! Callers and the reader hand it whole lines through a bounded queue. A
//! server that stops reading stdin blocks this task in `write`, and only this
//! task: callers wait for queue space under their own timeouts, the reader
//! never waits (it drops and counts what does not fit).

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Writes queued lines until the queue closes, a write fails or `close` fires;
/// then drops stdin, which is how the server learns the session is over.
pub(crate) async fn run(
    mut stdin: ChildStdin,
    mut queue: mpsc::Receiver<Vec<u8>>,
    close: CancellationToken,
) {
    loop {
        let line = tokio::select! {
            biased;
            _ = close.cancelled() => break,
            line = queue.recv() => match line {
                Some(line) => line,
                None => break,
            },
        };
        // `close` also interrupts a write that a server not reading stdin
        // would block forever.
        let written = tokio::select! {
            biased;
            _ = close.cancelled() => break,
            written = stdin.write_all(&line) => written,
        };
        if let Err(error) = written {
            tracing::debug!(%error, "server stdin closed");
            break;
        }
    }
    drop(stdin);
}
