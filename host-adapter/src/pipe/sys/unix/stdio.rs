//! The proxy's descriptors outside tokio's own types: this process's stdin
//! and stdout when they are a stream socket or a file, every pipe written
//! without the reactor until a write must wait ([`QuietOut`]), and the
//! blocking reads and never-waiting writes of the proxy's reader threads
//! ([`BlockingIn`], [`RawOut`]).
//!
//! A stream socket is what Node.js (libuv) gives a child for each `"pipe"`
//! of its stdio, so every host on the TypeScript SDK's
//! `StdioClientTransport` starts the proxy this way. Each call is made with
//! `MSG_DONTWAIT`: it never waits, while the socket's open file description
//! (shared with whoever else holds it: a shell around the proxy, stderr
//! pointed at the same socket) keeps its blocking mode. Stdin waits for
//! data on the runtime's reactor (when it is not read on a thread of its
//! own); stdout is sent to straight and joins the reactor only while the
//! host's buffer is full (see [`QuietOut`]). Left to tokio's
//! `stdin`/`stdout` instead, every read and every write is handed to a
//! blocking thread and back: two more thread wake-ups per message on a
//! machine whose cores the host and the server also want, which is what
//! made the proxy's slowest small calls slow.
//!
//! A regular file, or a device that is not a terminal (`/dev/null`), never
//! waits for another process: it is read or written in place, on the
//! worker, without that hand-over either. A terminal can be held (flow
//! control), so it stays with tokio's blocking thread.

use std::fs::File;
use std::io;
use std::io::{IsTerminal, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use nix::errno::Errno;
use nix::sys::socket::{MsgFlags, SockType, getsockopt, recv, send, sockopt};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// This process's stdin as a stream socket, on the reactor for reading
/// only.
pub(crate) struct SocketIn {
    fd: AsyncFd<OwnedFd>,
}

/// A pipe or a stream socket written without waiting (this process's
/// stdout, a child's stdin). It is on the reactor only while a write would
/// wait: registered for writing, a pipe or a socket wakes its poller each
/// time the peer reads (the kernel signals the room freed), which for a
/// small message is one more wake-up of the proxy per call, on another
/// core, for nothing. A write that finds room never asks.
pub(crate) struct QuietOut {
    state: Option<Out>,
    raw: RawOut,
}

enum Out {
    /// Not registered: writes go straight to the descriptor.
    Free(OwnedFd),
    /// A write found the buffer full: registered until one finds room.
    Waiting(AsyncFd<OwnedFd>),
}

/// A duplicate of `fd` (0 or 1), if it is a stream socket. The original
/// stays as it was.
fn stream_socket(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    if getsockopt(&fd, sockopt::SockType).ok()? != SockType::Stream {
        return None;
    }
    fd.try_clone_to_owned().ok()
}

/// `fd` on the reactor for `interest`; on failure `fd` back, with why.
fn register(fd: OwnedFd, interest: Interest) -> Result<AsyncFd<OwnedFd>, (OwnedFd, io::Error)> {
    // SAFETY: `register_with_interest` asks that the descriptor stay open
    // and the same for the `AsyncFd`'s life: it is an `OwnedFd` only the
    // `AsyncFd` holds, closed when it is dropped or given back by
    // `into_inner` (which deregisters it first).
    #[allow(unsafe_code)]
    let registered = unsafe { AsyncFd::register_with_interest(fd, interest) };
    registered.map_err(|error| error.into_parts())
}

impl SocketIn {
    /// Stdin as a [`SocketIn`], if it is a stream socket the reactor takes.
    pub(crate) fn of(fd: BorrowedFd<'_>) -> Option<SocketIn> {
        let fd = register(stream_socket(fd)?, Interest::READABLE).ok()?;
        Some(SocketIn { fd })
    }
}

impl QuietOut {
    /// Stdout as a [`QuietOut`], if it is a stream socket, and the same
    /// socket as a [`RawOut`] (owned by the `QuietOut`).
    pub(crate) fn of(fd: BorrowedFd<'_>) -> Option<(QuietOut, RawOut)> {
        Some(QuietOut::owning(stream_socket(fd)?, true))
    }

    /// `fd`, a pipe with a non-blocking description the proxy alone
    /// holds, and the same pipe as a [`RawOut`] (owned by the `QuietOut`).
    pub(crate) fn pipe(fd: OwnedFd) -> (QuietOut, RawOut) {
        QuietOut::owning(fd, false)
    }

    fn owning(fd: OwnedFd, socket: bool) -> (QuietOut, RawOut) {
        let raw = RawOut {
            fd: fd.as_raw_fd(),
            socket,
        };
        let out = QuietOut {
            state: Some(Out::Free(fd)),
            raw,
        };
        (out, raw)
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

impl AsyncRead for SocketIn {
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

/// What a send on a registered socket came to.
enum WaitedSend {
    /// No room yet: the task is woken when there is.
    Pending,
    /// The room was gone again by the send: wait again.
    Again,
    /// Part of the bytes taken, and the buffer full again.
    Part(usize),
    /// Every byte taken: there is room.
    All(usize),
    Failed(io::Error),
}

fn send_when_ready(
    waiting: &AsyncFd<OwnedFd>,
    raw: RawOut,
    cx: &mut Context<'_>,
    bytes: &[u8],
) -> WaitedSend {
    let mut ready = match waiting.poll_write_ready(cx) {
        Poll::Pending => return WaitedSend::Pending,
        Poll::Ready(Err(error)) => return WaitedSend::Failed(error),
        Poll::Ready(Ok(ready)) => ready,
    };
    // The descriptor is the one `raw` names, held open by `waiting`.
    let sent = ready.try_io(|_| raw.try_write(bytes));
    match sent {
        Ok(Ok(n)) if n < bytes.len() => {
            ready.clear_ready();
            WaitedSend::Part(n)
        }
        Ok(Ok(n)) => WaitedSend::All(n),
        Ok(Err(error)) => WaitedSend::Failed(error),
        // `try_io` cleared the readiness.
        Err(_would_block) => WaitedSend::Again,
    }
}

impl AsyncWrite for QuietOut {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            match self.state.take() {
                // The descriptor is the one `raw` names, held open here.
                Some(Out::Free(fd)) => match self.raw.try_write(bytes) {
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                        match register(fd, Interest::WRITABLE) {
                            Ok(waiting) => self.state = Some(Out::Waiting(waiting)),
                            Err((fd, error)) => {
                                self.state = Some(Out::Free(fd));
                                return Poll::Ready(Err(error));
                            }
                        }
                    }
                    sent => {
                        self.state = Some(Out::Free(fd));
                        return Poll::Ready(sent);
                    }
                },
                Some(Out::Waiting(waiting)) => {
                    let sent = send_when_ready(&waiting, self.raw, cx, bytes);
                    self.state = Some(match sent {
                        // Room again: off the reactor until a send waits.
                        WaitedSend::All(_) => Out::Free(waiting.into_inner()),
                        _ => Out::Waiting(waiting),
                    });
                    match sent {
                        WaitedSend::Pending => return Poll::Pending,
                        WaitedSend::Again => continue,
                        WaitedSend::All(n) | WaitedSend::Part(n) => return Poll::Ready(Ok(n)),
                        WaitedSend::Failed(error) => return Poll::Ready(Err(error)),
                    }
                }
                // Not reached: every arm above puts the descriptor back.
                None => {
                    return Poll::Ready(Err(io::Error::other(
                        "the host's socket is no longer held",
                    )));
                }
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

impl AsFd for DirectFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
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

/// A descriptor read in blocking calls, on a thread of its own (a proxy
/// direction's reader, see `pipe::reader::Source`): a child's stdout, or
/// this process's stdin when it is a pipe, a stream socket or a file.
///
/// A reader waiting in `read(2)` is woken by the kernel straight into its
/// read; one waiting on the reactor is woken there first and then runs the
/// read, a second hand-over on a machine whose cores the host and the
/// server want too (BENCHMARKS.md, "four relays"). Polled as an
/// `AsyncRead`, every read completes or fails before it returns: it is
/// only ever polled on that thread, never on a runtime worker.
pub(crate) struct BlockingIn {
    fd: OwnedFd,
}

impl BlockingIn {
    /// Reads `fd`, which may be shared with other processes: its mode is
    /// left as it is, and a description somebody else made non-blocking is
    /// waited on with `poll(2)`.
    pub(crate) fn new(fd: OwnedFd) -> BlockingIn {
        BlockingIn { fd }
    }

    /// Waits until `fd` has something to read (or its end).
    fn wait_readable(&self) -> io::Result<()> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        loop {
            let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::NONE) {
                Err(Errno::EINTR) => continue,
                waited => return waited.map(drop).map_err(io::Error::from),
            }
        }
    }
}

impl AsyncRead for BlockingIn {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let room = buf.initialize_unfilled();
        loop {
            match nix::unistd::read(&self.fd, room) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => self.wait_readable()?,
                Err(error) => return Poll::Ready(Err(error.into())),
            }
        }
    }
}

/// An output descriptor written without waiting, beside the writer task
/// that owns it (`pipe::lane::Lane`). It does not own the descriptor: the
/// lane writes through it only while the owner has not closed it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawOut {
    fd: RawFd,
    /// Sent to with `MSG_DONTWAIT`: a socket whose description is shared
    /// and blocking (what Node gives a child).
    socket: bool,
}

impl RawOut {
    /// `fd`, if a write to it can never wait: a non-blocking description,
    /// a stream socket (sent to with `MSG_DONTWAIT`), a regular file or a
    /// device that is not a terminal.
    pub(crate) fn of(fd: BorrowedFd<'_>) -> Option<RawOut> {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).ok()?);
        let raw = fd.as_raw_fd();
        if flags.contains(OFlag::O_NONBLOCK) {
            return Some(RawOut {
                fd: raw,
                socket: false,
            });
        }
        if getsockopt(&fd, sockopt::SockType).ok() == Some(SockType::Stream) {
            return Some(RawOut {
                fd: raw,
                socket: true,
            });
        }
        let file = File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        let never_waits = kind.is_file() || (kind.is_char_device() && !file.is_terminal());
        never_waits.then_some(RawOut {
            fd: raw,
            socket: false,
        })
    }

    /// Whether it is sent to as a socket.
    pub(crate) fn is_socket(&self) -> bool {
        self.socket
    }

    /// Writes what fits now; `WouldBlock` if nothing does.
    ///
    /// The caller guarantees the descriptor is still open (the lane's lock,
    /// which its owner takes to close it).
    pub(crate) fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        loop {
            let written = if self.socket {
                send(self.fd, bytes, send_flags())
            } else {
                // SAFETY: open for as long as the caller holds the lane's
                // lock (see above); borrowed for this call only.
                #[allow(unsafe_code)]
                let fd = unsafe { BorrowedFd::borrow_raw(self.fd) };
                nix::unistd::write(fd, bytes)
            };
            match written {
                Err(Errno::EINTR) => {}
                written => return written.map_err(io::Error::from),
            }
        }
    }
}
