//! What a session can be configured with: limits, policies, the backend.

use crate::pipe::process::ShutdownTimeouts;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use drainpipe_framer::Config as FramerConfig;
use drainpipe_framer::budget::{Clip, Keep, Unit};

use super::CaptureLimits;
#[cfg(doc)]
use super::{CallError, Session};
use crate::backend::{BackendError, FramerBackend};

/// Builds the framer backend for a new session from the framer limits.
pub type BackendFactory =
    Arc<dyn Fn(FramerConfig) -> Result<Box<dyn FramerBackend>, BackendError> + Send + Sync>;

/// Which framer the session pushes stdout through.
#[derive(Clone, Default)]
pub enum BackendChoice {
    /// The framer compiled into the host.
    #[default]
    Native,
    /// Any other backend, e.g. the WebAssembly component: called once per session.
    Custom(BackendFactory),
}

impl fmt::Debug for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendChoice::Native => f.write_str("Native"),
            BackendChoice::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// What the reader does when the dispatcher (the bounded queue of server
/// requests and notifications for [`Session::next_incoming`]) stays full for
/// longer than [`SessionConfig::dispatcher_wait`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DispatcherFullPolicy {
    /// Answer a server request that does not fit with a JSON-RPC error, drop a
    /// notification that does not fit (counted), and refuse new calls with
    /// [`CallError::Rejected`] until the dispatcher has room again.
    #[default]
    RejectNew,
    /// As `RejectNew`, and also cancel every call in flight: their work is
    /// what keeps producing the messages nobody consumes.
    CancelWork,
    /// Kill the server's process group; the session is lost.
    KillSession,
}

/// What happens when a line passes the transport limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OversizePolicy {
    /// Discard the line, fail the request it answers (if the id was seen
    /// before the limit) with [`CallError::TooLarge`], keep the session.
    #[default]
    Recover,
    /// Fail the request and kill the session.
    KillSession,
}

/// Everything a session can be configured with. Start from `default()`.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// The framer's limits; `max_frame_bytes` is the transport limit for
    /// server→host messages, and also applied to requests the host sends.
    pub framer: FramerConfig,
    /// Which framer implementation runs.
    pub backend: BackendChoice,
    /// Bytes read from stdout (and stderr) per read call. Bounds the reader's
    /// own buffer; it does not limit messages.
    pub read_chunk_bytes: usize,
    /// Server requests and notifications queued for [`Session::next_incoming`].
    /// Protects host **memory** from a consumer that stopped consuming: at most
    /// this many messages (each at most `max_frame_bytes`) wait.
    pub dispatcher_capacity: usize,
    /// How long the reader may wait for dispatcher space before applying
    /// [`SessionConfig::dispatcher_full`]. While the dispatcher stays full it
    /// does not wait again, so a flood costs one wait, not one per message.
    pub dispatcher_wait: Duration,
    /// See [`DispatcherFullPolicy`].
    pub dispatcher_full: DispatcherFullPolicy,
    /// See [`OversizePolicy`].
    pub oversize: OversizePolicy,
    /// Oversize lines tolerated per session before it is killed; `None` for
    /// no limit. Protects host **CPU** from a server that only produces
    /// garbage the framer must scan and discard.
    pub max_oversize_frames: Option<u64>,
    /// Non-protocol lines on stdout tolerated per session before it is
    /// killed; `None` for no limit. Same protection as above, for stray logs.
    pub max_not_protocol_lines: Option<u64>,
    /// Requests waiting for a response at once. Protects host **memory**: each
    /// may hold one response of up to `max_frame_bytes` until its caller reads it.
    pub max_in_flight: usize,
    /// Lines queued for the stdin writer. Bounds memory while a server is not
    /// reading its stdin; callers then wait (under their timeouts).
    pub writer_queue: usize,
    /// Timeout of a call whose [`CallOptions::timeout`] is `None`.
    pub default_timeout: Duration,
    /// The longest timeout any call may ask for.
    pub max_timeout: Duration,
    /// Send `notifications/cancelled` when a call times out, so the server
    /// can stop working on it.
    pub cancel_on_timeout: bool,
    /// Head and tail of stderr kept in memory.
    pub stderr_capture: CaptureLimits,
    /// The longest piece of one stderr line logged to `tracing`, in bytes.
    pub stderr_log_line_bytes: usize,
    /// See [`ShutdownTimeouts`].
    pub shutdown: ShutdownTimeouts,
    /// A `drainpipe` binary to start the orphan guard with
    /// ([`guard_this_process`](crate::supervise::guard_this_process)): if
    /// this process dies, by SIGKILL included, the servers it started and
    /// their trees die with it (Linux). `None` (the default): a server
    /// outlives a killed host. The guard watches every process this one
    /// starts, not only servers.
    pub orphan_guard: Option<std::path::PathBuf>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            framer: FramerConfig::default(),
            backend: BackendChoice::Native,
            read_chunk_bytes: 64 << 10,
            dispatcher_capacity: 256,
            dispatcher_wait: Duration::from_millis(10),
            dispatcher_full: DispatcherFullPolicy::RejectNew,
            oversize: OversizePolicy::Recover,
            max_oversize_frames: Some(64),
            max_not_protocol_lines: Some(10_000),
            max_in_flight: 256,
            writer_queue: 256,
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(3600),
            cancel_on_timeout: true,
            stderr_capture: CaptureLimits::default(),
            stderr_log_line_bytes: 4096,
            shutdown: ShutdownTimeouts::default(),
            orphan_guard: None,
        }
    }
}

/// Per-call options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// How long to wait for the outcome; `None` for
    /// [`SessionConfig::default_timeout`]. Capped at [`SessionConfig::max_timeout`].
    pub timeout: Option<Duration>,
    /// The content budget of the result, in bytes on the wire of the whole
    /// response: a larger result, over the transport limit too, is condensed
    /// as it streams (see [`drainpipe_framer::budget::Condenser`]) instead of
    /// failing. Protects the agent's **context**. `None` (the default): a
    /// result over the transport limit is [`CallError::TooLarge`](super::CallError::TooLarge).
    /// At least [`MIN_CONDENSE_BUDGET`](drainpipe_framer::budget::MIN_CONDENSE_BUDGET).
    pub condense_to: Option<usize>,
    /// The unit `condense_to` counts in: bytes of the whole response (the
    /// default), or characters or tokens of what a host shows the model
    /// (see [`drainpipe_framer::budget::Clip`]).
    pub condense_unit: Unit,
    /// What a cut text keeps: both ends (the default), its beginning or its
    /// end ([`Keep`]).
    pub condense_keep: Keep,
}

impl CallOptions {
    /// Options with this timeout.
    pub fn timeout(timeout: Duration) -> Self {
        CallOptions {
            timeout: Some(timeout),
            ..CallOptions::default()
        }
    }

    /// These options with the result condensed to `budget_bytes` (see
    /// [`CallOptions::condense_to`]).
    pub fn condensed_to(mut self, budget_bytes: usize) -> Self {
        self.condense_to = Some(budget_bytes);
        self.condense_unit = Unit::Bytes;
        self
    }

    /// These options with the result condensed to `clip`, in its unit.
    pub fn condensed_within(mut self, clip: Clip) -> Self {
        self.condense_to = Some(clip.amount);
        self.condense_unit = clip.unit;
        self.condense_keep = clip.keep;
        self
    }

    /// The content budget asked for, if any.
    pub fn clip(&self) -> Option<Clip> {
        self.condense_to.map(|amount| Clip {
            amount,
            unit: self.condense_unit,
            keep: self.condense_keep,
        })
    }
}
