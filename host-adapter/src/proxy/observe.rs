//! The proxy's telemetry hooks: with feature `otel` and export configured
//! ([`crate::telemetry`]), a session's spans and metrics; else nothing, at
//! the cost of one branch per request (and no code at all without the
//! feature).

#[cfg(feature = "otel")]
use std::sync::Arc;

/// What the routers tell telemetry (see the module docs). Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Observer {
    #[cfg(feature = "otel")]
    calls: Option<Arc<crate::telemetry::Calls>>,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

#[cfg(feature = "otel")]
impl Observer {
    /// Observes a session into the process's telemetry, if it is on.
    pub(crate) fn start(
        live: impl FnOnce() -> crate::telemetry::calls::Live,
        budget: Option<String>,
    ) -> Observer {
        let calls = crate::telemetry::Telemetry::global()
            .map(|telemetry| Arc::new(crate::telemetry::Calls::start(telemetry, live(), budget)));
        Observer { calls }
    }

    /// Host request `id` (as written) goes to the server; returns the line
    /// to send instead (with the request span's trace context).
    pub(crate) fn request(&self, id: &[u8], method: &[u8], line: &[u8]) -> Option<Vec<u8>> {
        let calls = self.calls.as_ref()?;
        calls.request(super::route::key_of(id), id, method, line)
    }

    /// The answer to `id` goes to the host: `line` (no newline), which is
    /// condensed from `original` bytes when that is given, with `spilled`
    /// values linked.
    pub(crate) fn answered(&self, id: &[u8], line: &[u8], original: Option<u64>, spilled: u64) {
        if let Some(calls) = &self.calls {
            let answer = crate::telemetry::calls::Answer {
                line,
                original,
                spilled,
            };
            calls.answered(&super::route::key_of(id), answer);
        }
    }

    /// The proxy answered host request `id` itself with error `code`.
    pub(crate) fn failed(&self, id: &[u8], code: i64, message: &str) {
        if let Some(calls) = &self.calls {
            calls.failed(&super::route::key_of(id), code, message);
        }
    }

    /// The host cancelled `id`.
    pub(crate) fn cancelled(&self, id: &[u8]) {
        if let Some(calls) = &self.calls {
            calls.cancelled(&super::route::key_of(id));
        }
    }

    /// The handshake's answer `line` passes to the host: the session's
    /// revision.
    pub(crate) fn handshake(&self, line: &[u8]) {
        if let Some(calls) = &self.calls
            && let Some(version) = crate::proxy::spill::rpc::handshake(line).protocol
        {
            calls.protocol(version);
        }
    }

    /// The session ended with `metrics`.
    pub(crate) fn end(&self, metrics: &super::ProxyMetrics) {
        if let Some(calls) = &self.calls {
            calls.end_session(metrics);
        }
    }
}

#[cfg(not(feature = "otel"))]
impl Observer {
    pub(crate) fn request(&self, _: &[u8], _: &[u8], _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    pub(crate) fn answered(&self, _: &[u8], _: &[u8], _: Option<u64>, _: u64) {}
    pub(crate) fn failed(&self, _: &[u8], _: i64, _: &str) {}
    pub(crate) fn cancelled(&self, _: &[u8]) {}
    pub(crate) fn handshake(&self, _: &[u8]) {}
    pub(crate) fn end(&self, _: &super::ProxyMetrics) {}
}
