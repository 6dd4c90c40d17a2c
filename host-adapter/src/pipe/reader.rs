//! The framing reader: reads a pipe for as long as it is open, pushes every
//! read through a [`FramerBackend`] and hands the events to a [`Route`].
//!
//! The loop itself never stops reading to wait for anyone: routing an event
//! never waits, and the only wait is the route's own, once per read, on a
//! bound it chose (the session's dispatcher, the proxy's queue towards a
//! slow peer). What the events mean is the route's: the session answers its
//! callers, the proxy forwards.

use std::future::Future;
use std::io;
use std::pin::Pin;

use drainpipe_framer::{Event, InPlaceFramer};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::backend::{BackendError, FramerBackend};
use crate::pipe::sys::{self, BlockingIn};

/// Where a reader reads: a stream polled through the runtime, or a
/// descriptor read in blocking calls on a thread of the reader's own.
pub(crate) enum Source {
    Reactor(Box<dyn AsyncRead + Unpin + Send>),
    Blocking(BlockingIn),
}

/// The end of a reader started by [`start`].
pub(crate) type Running = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Starts `read` (a reader's loop) on `source`: as a runtime task, or, for
/// a blocking source, on a thread named `name` that waits in `read(2)`
/// and runs everything the reader does between two reads (framing,
/// routing, the direct write of the batch) without a hand-over to another
/// thread. The returned future completes when the reader has ended. Needs
/// a tokio runtime.
pub(crate) fn start<F>(
    source: Source,
    name: &str,
    read: impl FnOnce(Box<dyn AsyncRead + Unpin + Send>) -> F + Send + 'static,
) -> io::Result<Running>
where
    F: Future<Output = ()> + Send + 'static,
{
    match source {
        Source::Reactor(input) => {
            let task = tokio::spawn(read(input));
            Ok(Box::pin(async move {
                let _ = task.await;
            }))
        }
        Source::Blocking(input) => {
            let runtime = tokio::runtime::Handle::current();
            // Dropped when the thread ends, whether or not it panicked.
            let (ended, end) = tokio::sync::oneshot::channel::<()>();
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || {
                    let _ended = ended;
                    sys::wake_promptly();
                    // The reader's own waits (room in a queue) are the
                    // runtime's, polled here; its reads block this thread.
                    runtime.block_on(read(Box::new(input)));
                })?;
            Ok(Box::pin(async move {
                let _ = end.await;
            }))
        }
    }
}

/// What a reader does with what it reads.
pub(crate) trait Route {
    /// One read, at stream offset `at`, before its events: the condensing
    /// tap sees a line's bytes by the time its event comes.
    fn read(&mut self, bytes: &[u8], at: u64);
    /// One event of the framer, in stream order. Never waits.
    fn event(&mut self, event: Event<'_>);
    /// After a read's events (`bytes` is that read; empty after the last
    /// events, at the end of the stream): hands on what they produced, and
    /// may wait for room to do so.
    fn after_read(&mut self, bytes: &[u8], at: u64) -> impl Future<Output = ()> + Send;
}

/// Why a reader ended.
#[derive(Debug)]
pub(crate) enum ReadEnd {
    /// End of file; the framer's last events were routed and handed on.
    Eof,
    /// A read failed: the stream ended there, as at end of file (a line cut
    /// by it is reported truncated).
    ReadFailed(io::Error),
    /// The framer failed on a read (only the sandboxed one can); that
    /// read's remaining events and the rest of the stream were not routed.
    Framer(BackendError),
    /// The framer failed at the end of the stream; the events it gave
    /// before failing were routed but not handed on.
    Finish(BackendError),
}

/// Reads `input` in chunks of `chunk_bytes` to its end (or a failure),
/// routing every event. A backend that frames in place is read straight
/// into its own buffer; any other gets each read as a chunk.
pub(crate) async fn read_framed(
    mut input: impl AsyncRead + Unpin,
    framer: &mut dyn FramerBackend,
    chunk_bytes: usize,
    route: &mut impl Route,
) -> ReadEnd {
    let chunk_bytes = chunk_bytes.max(1);
    if let Some(framer) = framer.in_place(chunk_bytes) {
        return read_in_place(input, framer, route).await;
    }
    // Stream offset of the next byte read.
    let mut position = 0u64;
    let mut chunk = vec![0u8; chunk_bytes];
    let failed = loop {
        let n = match input.read(&mut chunk).await {
            Ok(0) => break None,
            Ok(n) => n,
            Err(error) => break Some(error),
        };
        let (bytes, at) = (&chunk[..n], position);
        position += n as u64;
        route.read(bytes, at);
        if let Err(error) = framer.push_each(bytes, &mut |event| route.event(event)) {
            return ReadEnd::Framer(error);
        }
        route.after_read(bytes, at).await;
    };
    if let Err(error) = framer.finish_each(&mut |event| route.event(event)) {
        return ReadEnd::Finish(error);
    }
    route.after_read(&[], position).await;
    ended(failed)
}

/// [`read_framed`] for a framer that owns the buffer: each read lands right
/// after the unfinished line, so a line that spans reads is framed where it
/// was read, never copied to be assembled.
async fn read_in_place(
    mut input: impl AsyncRead + Unpin,
    framer: &mut InPlaceFramer,
    route: &mut impl Route,
) -> ReadEnd {
    let mut position = 0u64;
    let failed = loop {
        let room = framer.spare();
        let n = match input.read(room).await {
            Ok(0) => break None,
            Ok(n) => n,
            Err(error) => break Some(error),
        };
        let at = position;
        position += n as u64;
        route.read(&room[..n], at);
        framer.filled(n, |event| route.event(event));
        route.after_read(framer.last_read(), at).await;
    };
    framer.finish(|event| route.event(event));
    route.after_read(&[], position).await;
    ended(failed)
}

fn ended(failed: Option<io::Error>) -> ReadEnd {
    match failed {
        Some(error) => ReadEnd::ReadFailed(error),
        None => ReadEnd::Eof,
    }
}
