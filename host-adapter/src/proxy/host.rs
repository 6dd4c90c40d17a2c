//! The host's end of the proxy when it is this process's own stdin and
//! stdout: what [`host_stdin`](super::host_stdin) and
//! [`host_stdout`](super::host_stdout) give, and what `serve` finds in them.
//!
//! Where the platform allows it, stdin is read on a thread of its own in
//! blocking calls, and stdout is written directly by the server's reader
//! while its writer is idle (`pipe::lane`): a small message then crosses
//! the proxy on the thread the kernel woke for it. Anything else (a
//! terminal; Windows) goes through the runtime, as any other stream.

use std::any::Any;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::pipe::reader::Source;
use crate::pipe::sys::{self, BlockingIn, RawOut};

/// This process's stdin, as the proxy's host input.
pub struct HostStdin {
    input: HostIn,
}

enum HostIn {
    /// Not read yet, and readable in blocking calls.
    Blocking(BlockingIn),
    Reactor(Box<dyn AsyncRead + Unpin + Send>),
}

impl HostStdin {
    pub(super) fn new() -> HostStdin {
        let input = match sys::own_stdin_blocking() {
            Some(blocking) => HostIn::Blocking(blocking),
            None => HostIn::Reactor(sys::own_stdin()),
        };
        HostStdin { input }
    }

    fn into_source(self) -> Source {
        match self.input {
            HostIn::Blocking(blocking) => Source::Blocking(blocking),
            HostIn::Reactor(reader) => Source::Reactor(reader),
        }
    }
}

impl AsyncRead for HostStdin {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // Read as a stream (not by the proxy): through the runtime, never
        // in a blocking call on its worker.
        loop {
            match &mut self.input {
                HostIn::Reactor(reader) => return Pin::new(reader).poll_read(cx, buf),
                HostIn::Blocking(_) => self.input = HostIn::Reactor(sys::own_stdin()),
            }
        }
    }
}

/// This process's stdout, as the proxy's host output.
pub struct HostStdout {
    output: Box<dyn AsyncWrite + Unpin + Send>,
    /// The same descriptor (owned by `output`), if a write to it never
    /// waits.
    raw: Option<RawOut>,
}

impl HostStdout {
    pub(super) fn new() -> HostStdout {
        let (output, raw) = sys::own_stdout();
        HostStdout { output, raw }
    }
}

impl AsyncWrite for HostStdout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.output).poll_write(cx, bytes)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.output).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.output).poll_shutdown(cx)
    }
}

/// The host's input as a reader's source: this process's stdin read on a
/// thread when it can be, any other stream through the runtime.
pub(super) fn source(input: impl AsyncRead + Unpin + Send + 'static) -> Source {
    let mut input = Some(input);
    if let Some(stdin) = (&mut input as &mut dyn Any).downcast_mut::<Option<HostStdin>>()
        && let Some(stdin) = stdin.take()
    {
        return stdin.into_source();
    }
    // Taken above only when it was stdin.
    input.map_or_else(
        || Source::Reactor(Box::new(tokio::io::empty())),
        |input| Source::Reactor(Box::new(input)),
    )
}

/// The host's output written without waiting, if it is this process's
/// stdout and can be.
pub(super) fn raw_output(output: &(impl AsyncWrite + 'static)) -> Option<RawOut> {
    (output as &dyn Any)
        .downcast_ref::<HostStdout>()
        .and_then(|stdout| stdout.raw)
}
