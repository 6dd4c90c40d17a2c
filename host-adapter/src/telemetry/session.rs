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

use std::collections::HashMap;
use std::time::Instant;

use opentelemetry::metrics::{Counter, Histogram};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Span, Tracer};
use serde_json::Value;

use super::Telemetry;
use super::names::*;
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
    span: Span,
    started: Instant,
    metric: Vec<KeyValue>,
    tool_call: bool,
    operation: Histogram<f64>,
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
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string);
        let target = match method {
            "tools/call" => name.map(|n| (GEN_AI_TOOL_NAME, n)),
            "prompts/get" => name.map(|n| (GEN_AI_PROMPT_NAME, n)),
            _ => None,
        };
        let mut metric = vec![
            KeyValue::new(MCP_METHOD_NAME, method.to_string()),
            KeyValue::new(NETWORK_TRANSPORT, "pipe"),
        ];
        if let Some((key, value)) = &target {
            metric.push(KeyValue::new(*key, value.clone()));
        }
        if let Some(protocol) = protocol {
            metric.push(KeyValue::new(MCP_PROTOCOL_VERSION, protocol.to_string()));
        }
        let mut attributes = metric.clone();
        attributes.push(KeyValue::new(JSONRPC_REQUEST_ID, id.to_string()));
        if method == "tools/call" {
            attributes.push(KeyValue::new(GEN_AI_OPERATION_NAME, "execute_tool"));
        }
        let current = Context::current();
        let parent = if current.span().span_context().is_valid() {
            current
        } else {
            self.context.clone()
        };
        let span_name = match &target {
            Some((_, target)) => format!("{method} {target}"),
            None => method.to_string(),
        };
        let span = self
            .tracer
            .span_builder(span_name)
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        if modern && let Some(object) = params.as_object_mut() {
            let cx = Context::new().with_remote_span_context(span.span_context().clone());
            let mut carrier: HashMap<String, String> = HashMap::new();
            TraceContextPropagator::new().inject_context(&cx, &mut carrier);
            let meta = object
                .entry("_meta")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(meta) = meta.as_object_mut() {
                for (key, value) in carrier {
                    meta.insert(key, Value::String(value));
                }
            }
        }
        CallTrace {
            span,
            started: Instant::now(),
            metric,
            tool_call: method == "tools/call",
            operation: self.operation.clone(),
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
                self.span
                    .set_attribute(KeyValue::new(RESPONSE_SIZE, response.wire_bytes as i64));
                let is_error =
                    self.tool_call && response.result.get("isError") == Some(&Value::Bool(true));
                if is_error {
                    self.fail("tool_error", None, String::new());
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
                self.fail(&kind, code.as_deref(), error.to_string());
            }
        }
        self.finish();
    }

    /// Ends the span of a request the caller dropped without its outcome.
    pub(crate) fn abandoned(mut self) {
        self.fail("abandoned", None, "the caller abandoned the request".into());
        self.finish();
    }

    fn fail(&mut self, kind: &str, code: Option<&str>, message: String) {
        self.span
            .set_attribute(KeyValue::new(ERROR_TYPE, kind.to_string()));
        self.metric
            .push(KeyValue::new(ERROR_TYPE, kind.to_string()));
        if let Some(code) = code {
            self.span
                .set_attribute(KeyValue::new(RPC_RESPONSE_STATUS_CODE, code.to_string()));
        }
        self.span.set_status(Status::error(message));
    }

    fn finish(mut self) {
        self.operation
            .record(self.started.elapsed().as_secs_f64(), &self.metric);
        self.span.end();
    }
}
