//! The stderr drain: reads a child's stderr for as long as it is open and
//! hands every chunk on.
//!
//! Draining is the point: a server whose stderr pipe fills blocks in its own
//! logging and stops answering, just as it would on a full stdout. What
//! becomes of the bytes (a session's bounded capture and log lines, the
//! proxy's own stderr) is the caller's.

use tokio::io::{AsyncRead, AsyncReadExt};

/// Reads `stderr` in chunks of `chunk_bytes` until end of file (or a read
/// error), handing each chunk to `each`.
pub(crate) async fn drain(
    mut stderr: impl AsyncRead + Unpin,
    chunk_bytes: usize,
    mut each: impl FnMut(&[u8]),
) {
    let mut chunk = vec![0u8; chunk_bytes.max(1)];
    loop {
        match stderr.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => each(&chunk[..n]),
            Err(error) => {
                tracing::debug!(%error, "stderr read failed");
                break;
            }
        }
    }
}
