//! Per-session counters: what turns "the agent hung" into numbers.
//!
//! The reader, writer and callers update them with relaxed atomics (each
//! counter is independent; nobody derives one from another under a lock);
//! [`SessionMetrics`] is the snapshot a host reads, logs or exports as JSON.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

/// A snapshot of one session's counters. Sizes are bytes on the wire.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SessionMetrics {
    /// Bytes read from the server's stdout. If this stops growing while the
    /// server is alive and a call is pending, the server is stuck, not the host.
    pub stdout_bytes: u64,
    /// Complete messages framed from stdout.
    pub frames: u64,
    /// The largest complete frame, in bytes without its newline.
    pub largest_frame_bytes: u64,
    /// Lines rejected for passing the transport limit.
    pub oversize_frames: u64,
    /// Parse failures: lines that started like JSON but were not valid messages.
    pub malformed_frames: u64,
    /// Parse failures: lines that were not protocol at all (stray logs), diverted to `tracing`.
    pub not_protocol_lines: u64,
    /// Frames that were valid JSON but neither a response, a request nor a notification.
    pub unroutable_frames: u64,
    /// Bytes read from the server's stderr (all of them, captured or not).
    pub stderr_bytes: u64,
    /// Total time the stdout reader spent waiting for dispatcher space, in microseconds.
    pub dispatcher_wait_micros: u64,
    /// Server messages the dispatcher had no room for (the full-dispatcher policy applied).
    pub dispatcher_overflows: u64,
    /// Requests sent to the server.
    pub requests_sent: u64,
    /// `notifications/cancelled` sent to the server.
    pub cancellations_sent: u64,
    /// Responses whose request was no longer pending (cancelled, timed out,
    /// abandoned or never sent), dropped instead of delivered.
    pub late_responses_dropped: u64,
    /// Results over the transport limit condensed as they streamed, for
    /// calls that asked for it.
    pub results_condensed: u64,
    /// Times the session killed the server's process group (policy kills,
    /// and shutdowns that had to escalate to SIGKILL).
    pub process_kills: u64,
    /// Messages the session wanted to write (error replies, cancellations) but
    /// dropped because the server was not reading its stdin.
    pub writes_dropped: u64,
}

impl SessionMetrics {
    /// The snapshot as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("metrics are plain integers")
    }
}

/// The live counters behind [`SessionMetrics`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) stdout_bytes: AtomicU64,
    pub(crate) frames: AtomicU64,
    pub(crate) largest_frame_bytes: AtomicU64,
    pub(crate) oversize_frames: AtomicU64,
    pub(crate) malformed_frames: AtomicU64,
    pub(crate) not_protocol_lines: AtomicU64,
    pub(crate) unroutable_frames: AtomicU64,
    pub(crate) stderr_bytes: AtomicU64,
    pub(crate) dispatcher_wait_micros: AtomicU64,
    pub(crate) dispatcher_overflows: AtomicU64,
    pub(crate) requests_sent: AtomicU64,
    pub(crate) cancellations_sent: AtomicU64,
    pub(crate) late_responses_dropped: AtomicU64,
    pub(crate) results_condensed: AtomicU64,
    pub(crate) process_kills: AtomicU64,
    pub(crate) writes_dropped: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_wait(&self, waited: Duration) {
        let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        Self::add(&self.dispatcher_wait_micros, micros);
    }

    pub(crate) fn snapshot(&self) -> SessionMetrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        SessionMetrics {
            stdout_bytes: get(&self.stdout_bytes),
            frames: get(&self.frames),
            largest_frame_bytes: get(&self.largest_frame_bytes),
            oversize_frames: get(&self.oversize_frames),
            malformed_frames: get(&self.malformed_frames),
            not_protocol_lines: get(&self.not_protocol_lines),
            unroutable_frames: get(&self.unroutable_frames),
            stderr_bytes: get(&self.stderr_bytes),
            dispatcher_wait_micros: get(&self.dispatcher_wait_micros),
            dispatcher_overflows: get(&self.dispatcher_overflows),
            requests_sent: get(&self.requests_sent),
            cancellations_sent: get(&self.cancellations_sent),
            late_responses_dropped: get(&self.late_responses_dropped),
            results_condensed: get(&self.results_condensed),
            process_kills: get(&self.process_kills),
            writes_dropped: get(&self.writes_dropped),
        }
    }
}
