//! What the proxy counted, printed at exit.
//!
//! Plain counters, beneath everything that reads or writes them: the
//! proxy engine fills them, telemetry reads them at each export, and the
//! CLI prints them (through their re-exports in `proxy` and, for
//! `ExportCounts`, `telemetry`). This module uses nothing of the crate.

use std::fmt::Write as _;

use serde::Serialize;

/// Counters of one direction. Sizes are bytes on the wire.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DirectionMetrics {
    /// Bytes read from the peer.
    pub bytes: u64,
    /// Messages forwarded.
    pub frames: u64,
    /// The largest message forwarded, in bytes without its newline.
    pub largest_frame_bytes: u64,
    /// Lines rejected for passing the transport limit (never forwarded).
    pub oversize: u64,
    /// Lines that started like JSON but were not valid messages (never forwarded).
    pub malformed: u64,
    /// Bytes of rejected lines that were read and dropped.
    pub bytes_dropped: u64,
    /// Lines that were not protocol at all, diverted to stderr.
    pub not_protocol: u64,
    /// Valid JSON that was neither a request, a notification nor a response (not forwarded).
    pub unroutable: u64,
    /// Messages cut off by the end of the stream.
    pub truncated: u64,
    /// Milliseconds the reader waited for room in the queue toward the
    /// other peer: the time the peer it reads from was held up because
    /// the other one did not read (for `server_to_host`, the stall of a
    /// server whose host stopped reading).
    pub blocked_ms: u64,
}

/// What became of the spans this process ended (re-exported by
/// `telemetry`, which counts them).
#[cfg(feature = "otel")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ExportCounts {
    /// Spans handed to the exporter and accepted by the collector.
    pub spans_exported: u64,
    /// Spans whose export failed (the collector refused them, did not
    /// answer in time, or could not be reached).
    pub spans_failed: u64,
    /// Spans dropped before export:
    /// [`MAX_QUEUED_SPANS`](crate::telemetry::MAX_QUEUED_SPANS) were
    /// waiting.
    pub spans_dropped: u64,
    /// Spans still waiting for export when it stopped (the collector did
    /// not take them within
    /// [`SHUTDOWN_GRACE`](crate::telemetry::SHUTDOWN_GRACE)).
    pub spans_unsent: u64,
}

/// Everything the proxy counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ProxyMetrics {
    /// Messages from the server to the host.
    pub server_to_host: DirectionMetrics,
    /// Messages from the host to the server.
    pub host_to_server: DirectionMetrics,
    /// `notifications/cancelled` forwarded to the server.
    pub cancellations_forwarded: u64,
    /// JSON-RPC errors the proxy wrote itself (for rejected messages, and for
    /// requests still waiting when the server ended).
    pub errors_sent: u64,
    /// Errors the proxy meant to write but dropped because the peer was not reading.
    pub errors_dropped: u64,
    /// Rejected messages whose id was written after the limit (or the error)
    /// and named when the line ended, from the envelope of the whole line.
    pub ids_after_limit: u64,
    /// Rejected server responses that named no id before the limit,
    /// answered at once as the only host request in flight.
    pub answered_as_sole_request: u64,
    /// `tools/call` results condensed to the content budget.
    pub results_condensed: u64,
    /// Results over the content budget that could not be condensed (answered with an error).
    pub condense_failures: u64,
    /// Cut values linked to their full text in the spill store.
    pub values_spilled: u64,
    /// Reads of spilled values answered by the proxy (`resources/read`,
    /// `drainpipe_read`).
    pub spill_reads: u64,
    /// Host requests forwarded without tracking (more than the tracking bound in flight).
    pub untracked_requests: u64,
    /// Requests from the host forwarded to the server.
    pub host_requests: u64,
    /// Of those, `server/discover` (protocol revision 2026-07-28).
    pub discover_requests: u64,
    /// A probe session: the host sent `server/discover` and nothing else
    /// (as the TypeScript SDK v2 client does with a copy of the server
    /// before the real session).
    pub probe: bool,
    /// A framer failed (only the sandboxed one can, `--sandbox`): the proxy
    /// stopped the server and ended.
    pub framer_failed: bool,
    /// JSON-RPC batches from the host refused (each request in them answered
    /// with an error).
    pub batches_refused: u64,
    /// Host requests still waiting when the server ended (answered with an error).
    pub requests_failed_at_exit: u64,
    /// Bytes read from the server's stderr.
    pub server_stderr_bytes: u64,
    /// Bytes of stderr (the server's and the proxy's own) dropped because
    /// nobody read the proxy's stderr.
    pub stderr_bytes_dropped: u64,
    /// The server's exit code, if it exited.
    pub server_exit_code: Option<i32>,
    /// The signal that ended the server, if one did.
    pub server_signal: Option<i32>,
    /// Times the server's process tree had to be killed (SIGKILL, or its
    /// job ended on Windows) instead of exiting when asked.
    pub tree_kills: u64,
    /// What became of the OpenTelemetry spans, when export was on.
    #[cfg(feature = "otel")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<ExportCounts>,
    /// How long the proxy ran, in milliseconds.
    pub elapsed_ms: u64,
}

impl ProxyMetrics {
    /// The metrics as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("metrics are plain numbers")
    }

    /// The metrics as a few lines of text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let ending = match (self.server_exit_code, self.server_signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "not reaped".to_string(),
        };
        let _ = writeln!(
            out,
            "drainpipe proxy: server ended ({ending}) after {} ms",
            self.elapsed_ms
        );
        for (name, d) in [
            ("server->host", &self.server_to_host),
            ("host->server", &self.host_to_server),
        ] {
            let _ = writeln!(
                out,
                "  {name}: {} bytes, {} messages (largest {} bytes), {} oversize, {} malformed, {} not protocol, {} unroutable, {} truncated, blocked {} ms",
                d.bytes,
                d.frames,
                d.largest_frame_bytes,
                d.oversize,
                d.malformed,
                d.not_protocol,
                d.unroutable,
                d.truncated,
                d.blocked_ms
            );
        }
        let _ = writeln!(
            out,
            "  errors sent {} (dropped {}), cancellations forwarded {}, results condensed {} (failed {}), values spilled {}, spill reads {}, requests failed at exit {}, server stderr {} bytes, stderr dropped {} bytes",
            self.errors_sent,
            self.errors_dropped,
            self.cancellations_forwarded,
            self.results_condensed,
            self.condense_failures,
            self.values_spilled,
            self.spill_reads,
            self.requests_failed_at_exit,
            self.server_stderr_bytes,
            self.stderr_bytes_dropped
        );
        #[cfg(feature = "otel")]
        if let Some(t) = &self.telemetry {
            let _ = writeln!(
                out,
                "  telemetry: {} spans exported, {} failed, {} dropped (queue full), {} unsent at exit",
                t.spans_exported, t.spans_failed, t.spans_dropped, t.spans_unsent
            );
        }
        out
    }
}
