//! The server end: what the proxy engine talks to, whatever the server is.
//!
//! A child's three pipes and its process group, or the remote bridge's two
//! line streams and its session: the engine writes lines to `input`, reads
//! lines from `output`, and ends the server through [`ServerControl`],
//! never knowing which it has. A server end plugs in by filling a
//! [`ServerEnd`] and implementing [`ServerControl`] for what ends it, as
//! `ProcessControl` does here and `remote::Control` does in `remote/`.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::sync::mpsc;

use super::process::{ProcessControl, ShutdownTimeouts, Stopped};
use super::reader::Source;
use super::sys::{self, Stop};

/// The server the proxy talks to: a child's three pipes, or the remote
/// bridge's two line streams.
pub(crate) struct ServerEnd {
    pub(crate) input: Box<dyn AsyncWrite + Unpin + Send>,
    /// `input`'s descriptor, if a write to it never waits (a child's stdin
    /// on unix): the host's reader then writes to it while its writer is
    /// idle.
    pub(crate) input_raw: Option<sys::RawOut>,
    pub(crate) output: Source,
    pub(crate) stderr: Option<tokio::process::ChildStderr>,
    /// Requests the server's transport failed (the remote bridge): each is
    /// answered with its error if still waiting.
    pub(crate) failures: Option<mpsc::Receiver<Failure>>,
    /// A remote server's host and port (telemetry's `server.address`).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) remote: Option<(String, u16)>,
    pub(crate) control: Box<dyn ServerControl>,
}

/// A request the server's transport could not get an answer for: the id as
/// the host wrote it, the code and the message of its error.
pub(crate) struct Failure {
    pub(crate) id: Vec<u8>,
    pub(crate) code: i64,
    pub(crate) message: String,
    /// `data.drainpipe.limitBytes`, for an answer over the limit.
    pub(crate) limit: Option<u64>,
}

/// A wait of a [`ServerControl`].
pub(crate) type Waiting<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How the server ends: a process group to wait for and signal, or a
/// remote session.
pub(crate) trait ServerControl: Send + Sync {
    /// Waits until the server has ended on its own.
    fn ended(&self) -> Waiting<'_, ExitStatus>;

    /// Its input is closed: waits for it to end, then ends it (a child:
    /// SIGTERM, SIGKILL, what it left in its group; a remote session: its
    /// bodies dropped), each step bounded by `timeouts`.
    fn stop(&self, timeouts: ShutdownTimeouts) -> Waiting<'_, Stopped>;

    /// Asks the server to end now.
    fn terminate(&self);

    /// What [`terminate`](ServerControl::terminate) does, for the line
    /// that says why the proxy ends.
    fn what(&self) -> &'static str;
}

/// A child's process group.
impl ServerControl for ProcessControl {
    fn ended(&self) -> Waiting<'_, ExitStatus> {
        Box::pin(async move {
            loop {
                if let Some(status) = self.wait_exit(Duration::from_secs(3600)).await {
                    break status;
                }
            }
        })
    }

    fn stop(&self, timeouts: ShutdownTimeouts) -> Waiting<'_, Stopped> {
        Box::pin(ProcessControl::stop(self, timeouts))
    }

    fn terminate(&self) {
        self.signal_group(Stop::Terminate);
    }

    fn what(&self) -> &'static str {
        "SIGTERM to the server"
    }
}
