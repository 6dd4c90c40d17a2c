//! This process's stdin and stdout when they are not pipes (`unix.rs`
//! reopens a pipe for the reactor): a stream socket, or a file.
//!
//! A stream socket is what Node.js (libuv) gives a child for each `"pipe"`
//! of its stdio, so every host on the TypeScript SDK's
//! `StdioClientTransport` starts the proxy this way. It is read and written
//! through the runtime's reactor, each call with `MSG_DONTWAIT`: the call
//! never waits, while the socket's open file description (shared with
//! whoever else holds it: a shell around the proxy, stderr pointed at the
//! same socket) keeps its blocking mode. Left to tokio's `stdin`/`stdout`
//! instead, every read and every write is handed to a blocking thread and
//! back: two more thread wake-ups per message on a machine whose cores the
//! host and the server also want, which is what made the proxy's slowest
//! small calls slow.
//!
//! A regular file, or a device that is not a terminal (`/dev/null`), never
//! waits for another process: it is read or written in place, on the
//! worker, without that hand-over either. A terminal can be held (flow
//! control), so it stays with tokio's blocking thread.

use std::fs::File;
use std::io;
use std::io::{IsTerminal, Read, Write};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use nix::sys::socket::{MsgFlags, SockType, getsockopt, recv, send, sockopt};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A stream socket of this process's stdio, on the reactor.
pub(crate) struct StdioSocket {
    fd: AsyncFd<OwnedFd>,
}

impl StdioSocket {
    /// `fd` (0 or 1) as a [`StdioSocket`], if it is a stream socket; `None`
    /// for anything else or if the reactor will not take it. The
    /// descriptor is duplicated: the original stays as it was.
    pub(crate) fn of(fd: BorrowedFd<'_>) -> Option<StdioSocket> {
        if getsockopt(&fd, sockopt::SockType).ok()? != SockType::Stream {
            return None;
        }
        let fd = fd.try_clone_to_owned().ok()?;
        // SAFETY: `register` asks that the descriptor stay open and the
        // same for the `AsyncFd`'s life: it is the `OwnedFd` just made,
        // which only the `AsyncFd` holds and closes when dropped.
        #[allow(unsafe_code)]
        let fd = unsafe { AsyncFd::register(fd) }.ok()?;
        Some(StdioSocket { fd })
    }
}

/// Flags of every send: no waiting, and no SIGPIPE where the platform can
/// say so per call (elsewhere Rust's runtime ignores SIGPIPE, and a host
/// that went away is a write error, as with a pipe).
fn send_flags() -> MsgFlags {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    return MsgFlags::MSG_DONTWAIT;
}

impl AsyncRead for StdioSocket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut ready = ready!(self.fd.poll_read_ready(cx))?;
            let room = buf.initialize_unfilled();
            let asked = room.len();
            let read = ready.try_io(|fd| {
                recv(fd.as_raw_fd(), room, MsgFlags::MSG_DONTWAIT).map_err(io::Error::from)
            });
            match read {
                Ok(Ok(n)) => {
                    // Less than asked: the socket is empty now, so the next
                    // read waits for the reactor instead of a `recv` that
                    // would only say so (one system call less per message).
                    if n > 0 && n < asked {
                        ready.clear_ready();
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(error)) => return Poll::Ready(Err(error)),
                // Nothing there after all: readiness was cleared, wait again.
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for StdioSocket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut ready = ready!(self.fd.poll_write_ready(cx))?;
            let sent = ready
                .try_io(|fd| send(fd.as_raw_fd(), bytes, send_flags()).map_err(io::Error::from));
            match sent {
                Ok(Ok(n)) => {
                    // Part taken: the socket's buffer is full.
                    if n < bytes.len() {
                        ready.clear_ready();
                    }
                    return Poll::Ready(Ok(n));
                }
                Ok(Err(error)) => return Poll::Ready(Err(error)),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is held here: a sent byte is in the kernel's hands.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // No `shutdown(2)`: it would end the socket for every holder (stderr
        // pointed at it included). The host sees the end when the last
        // descriptor closes, as with a pipe.
        Poll::Ready(Ok(()))
    }
}

/// A regular file or a non-terminal device of this process's stdio, read
/// and written in place (see the module's documentation).
pub(crate) struct DirectFile {
    file: File,
}

impl DirectFile {
    /// `fd` as a [`DirectFile`] if it is a regular file, or a character
    /// device other than a terminal when `devices` (stdout: `/dev/null`;
    /// stdin takes files only, a device may wait for input forever).
    pub(crate) fn of(fd: BorrowedFd<'_>, devices: bool) -> Option<DirectFile> {
        let file = File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        let direct = kind.is_file() || (devices && kind.is_char_device() && !file.is_terminal());
        direct.then_some(DirectFile { file })
    }
}

impl AsyncRead for DirectFile {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self.file.read(buf.initialize_unfilled())?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for DirectFile {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(self.file.write(bytes))
    }

    fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.file.flush())
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}
