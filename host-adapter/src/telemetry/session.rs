//! A guarded session's telemetry: a `CLIENT` span per request the session
//! sends, a span for the session, the convention's duration histograms,
//! and the session's counters as `drainpipe.*` metrics when it ends.
//!
//! A request's span is a child of the caller's current OpenTelemetry
//! context when it has a span, else of the session's, and ends with the
//! request's one outcome (or when the caller abandons it). In a
//! 2026-07-28 session the request carries the span's `traceparent` in
//! `params._meta`, so the server's spans are its children.
//!
//! The counters become metrics once, when the session ends (`drainpipe.*`
//! with `drainpipe.session=guarded`): adding them as they change would
//! touch the reader's hot path, and observing them live would keep every
//! session's counters alive for as long as the process exports.

use std::time::Instant;

use opentelemetry::metrics::{Counter, Histogram};
use opentelemetry::trace::{Span as _, SpanKind, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::Tracer;
use serde_json::Value;

use super::Telemetry;
use super::names::*;
use super::operation::{Operation, Request};
use crate::session::{CallError, Response, SessionMetrics};

/// A session counter as a metric, and how it is read.
type Tally = (Counter<u64>, fn(&SessionMetrics) -> u64);

/// One session's tracker.
pub(crate) struct SessionTrace {
    tracer: Tracer,
    operation: Histogram<f64>,
    session_duration: Histogram<f64>,
    counters: Vec<Tally>,
    context: Context,
    started: Instant,
}

/// One request's span, ended with its outcome.
pub(crate) struct CallTrace {
    operation: Operation,
    histogram: Histogram<f64>,
}

impl SessionTrace {
    /// A session's tracker, if the process exports.
    pub(crate) fn start() -> Option<SessionTrace> {
        let telemetry = Telemetry::global()?;
        let tracer = telemetry.tracer();
        let meter = telemetry.meter();
        let span = tracer
            .span_builder("drainpipe session")
            .with_kind(SpanKind::Internal)
            .with_attributes([KeyValue::new(NETWORK_TRANSPORT, "pipe")])
            .start(&tracer);
        let counter = |name: &'static str, description: &'static str| {
            meter
                .u64_counter(name)
                .with_description(description)
                .build()
        };
        let counters: Vec<Tally> = vec![
            (counter(MESSAGE_BYTES, "Bytes read from each peer"), |m| {
                m.stdout_bytes
            }),
            (counter(MESSAGES, "Messages forwarded"), |m| m.frames),
            (
                counter(
                    MESSAGE_OVERSIZE,
                    "Lines rejected for passing the transport limit",
                ),
                |m| m.oversize_frames,
            ),
            (
                counter(MESSAGE_MALFORMED, "Lines that were not valid JSON-RPC"),
                |m| m.malformed_frames,
            ),
            (
                counter(RESULTS_CONDENSED, "Results condensed to the content budget"),
                |m| m.results_condensed,
            ),
            (
                counter(CANCELLATIONS, "notifications/cancelled sent to the server"),
                |m| m.cancellations_sent,
            ),
            (
                counter(
                    TREE_KILLS,
                    "Times the server's process tree had to be killed",
                ),
                |m| m.process_kills,
            ),
        ];
        Some(SessionTrace {
            operation: meter
                .f64_histogram(MCP_CLIENT_OPERATION_DURATION)
                .with_unit("s")
                .build(),
            session_duration: meter
                .f64_histogram(MCP_CLIENT_SESSION_DURATION)
                .with_unit("s")
                .build(),
            counters,
            context: Context::new().with_span(span),
            started: Instant::now(),
            tracer,
        })
    }

    /// Starts the span of a request for `method` with `params`; in a
    /// 2026-07-28 session (`modern`) puts its trace context in
    /// `params._meta`.
    pub(crate) fn call(
        &self,
        id: u64,
        method: &str,
        params: &mut Value,
        protocol: Option<&str>,
        modern: bool,
    ) -> CallTrace {
        let current = Context::current();
        let parent = if current.span().span_context().is_valid() {
            current
        } else {
            self.context.clone()
        };
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string);
        let operation = Operation::start(
            &self.tracer,
            Request {
                method,
                name: name.as_deref(),
                id: Some(id.to_string()),
                protocol,
                extra: Vec::new(),
                peer: &[KeyValue::new(NETWORK_TRANSPORT, "pipe")],
            },
            &parent,
            Vec::new(),
        );
        if modern
            && let Some(object) = params.as_object_mut()
            && let Some(meta) = object
                .entry("_meta")
                .or_insert_with(|| Value::Object(Default::default()))
                .as_object_mut()
        {
            for (key, value) in operation.trace_context() {
                meta.insert(key, Value::String(value));
            }
        }
        CallTrace {
            operation,
            histogram: self.operation.clone(),
        }
    }

    /// The session ended with `metrics`.
    pub(crate) fn end(
        &self,
        metrics: &SessionMetrics,
        protocol: Option<&str>,
        error: Option<&str>,
    ) {
        let mut attributes = vec![
            KeyValue::new(NETWORK_TRANSPORT, "pipe"),
            KeyValue::new("drainpipe.session", "guarded"),
        ];
        if let Some(protocol) = protocol {
            attributes.push(KeyValue::new(MCP_PROTOCOL_VERSION, protocol.to_string()));
        }
        for (counter, read) in &self.counters {
            counter.add(read(metrics), &attributes[1..2]);
        }
        let span = self.context.span();
        span.set_attribute(KeyValue::new(
            "drainpipe.dispatcher.wait",
            metrics.dispatcher_wait_micros as f64 / 1e6,
        ));
        span.set_attribute(KeyValue::new(
            "drainpipe.message.largest",
            metrics.largest_frame_bytes as i64,
        ));
        if let Some(protocol) = protocol {
            span.set_attribute(KeyValue::new(MCP_PROTOCOL_VERSION, protocol.to_string()));
        }
        if let Some(error) = error {
            span.set_attribute(KeyValue::new(ERROR_TYPE, error.to_string()));
            attributes.push(KeyValue::new(ERROR_TYPE, error.to_string()));
        }
        span.end();
        self.session_duration
            .record(self.started.elapsed().as_secs_f64(), &attributes[..1]);
    }
}

impl CallTrace {
    /// Ends the span with the request's outcome.
    pub(crate) fn end(mut self, outcome: &Result<Response, CallError>) {
        match outcome {
            Ok(response) => {
                self.operation
                    .span
                    .set_attribute(KeyValue::new(RESPONSE_SIZE, response.wire_bytes as i64));
                let is_error = self.operation.tool_call
                    && response.result.get("isError") == Some(&Value::Bool(true));
                if is_error {
                    self.operation.fail("tool_error", None, String::new());
                }
            }
            Err(error) => {
                let (kind, code) = match error {
                    CallError::JsonRpc { code, .. } => (code.to_string(), Some(code.to_string())),
                    CallError::Cancelled { .. } => ("cancelled".into(), None),
                    CallError::TimedOut { .. } => ("timeout".into(), None),
                    CallError::TooLarge { .. } => ("too_large".into(), None),
                    CallError::Malformed { .. } => ("malformed".into(), None),
                    CallError::SessionLost { .. } => ("session_lost".into(), None),
                    CallError::Uncondensable { .. } => ("uncondensable".into(), None),
                    _ => ("rejected".into(), None),
                };
                self.operation
                    .fail(&kind, code.as_deref(), error.to_string());
            }
        }
        self.operation.end(&self.histogram);
    }

    /// Ends the span of a request the caller dropped without its outcome.
    pub(crate) fn abandoned(mut self) {
        self.operation
            .fail("abandoned", None, "the caller abandoned the request".into());
        self.operation.end(&self.histogram);
    }
}
