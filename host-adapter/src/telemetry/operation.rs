//! One MCP request's span and its duration, as the convention names them:
//! shared by the proxy (`calls`) and the guarded session (`session`),
//! which differ only in where a request comes from and how it ends.

use std::collections::HashMap;
use std::time::Instant;

use opentelemetry::metrics::Histogram;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{Link, Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Span, Tracer};

use super::names::*;

/// What a request is, for its span.
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    /// `params.name`: the tool or prompt.
    pub(crate) name: Option<&'a str>,
    /// The id as a string (not for `null`).
    pub(crate) id: Option<String>,
    /// The protocol revision, if known.
    pub(crate) protocol: Option<&'a str>,
    /// Attributes beyond the convention's.
    pub(crate) extra: Vec<KeyValue>,
    /// How the server is reached: `network.transport`, and for a remote
    /// server `server.address` and `server.port`.
    pub(crate) peer: &'a [KeyValue],
}

/// A request's open span.
pub(crate) struct Operation {
    pub(crate) span: Span,
    started: Instant,
    /// The attributes its duration is recorded with.
    metric: Vec<KeyValue>,
    pub(crate) tool_call: bool,
}

impl Operation {
    /// Starts the `CLIENT` span of `request`, a child of `parent`, linked
    /// to `links`.
    pub(crate) fn start(
        tracer: &Tracer,
        request: Request<'_>,
        parent: &Context,
        links: Vec<Link>,
    ) -> Operation {
        let method = request.method;
        let target = match method {
            "tools/call" => request.name.map(|n| (GEN_AI_TOOL_NAME, n)),
            "prompts/get" => request.name.map(|n| (GEN_AI_PROMPT_NAME, n)),
            _ => None,
        };
        let mut metric = vec![KeyValue::new(MCP_METHOD_NAME, method.to_string())];
        metric.extend_from_slice(request.peer);
        if let Some((key, name)) = target {
            metric.push(KeyValue::new(key, name.to_string()));
        }
        if let Some(protocol) = request.protocol {
            metric.push(KeyValue::new(MCP_PROTOCOL_VERSION, protocol.to_string()));
        }
        let mut attributes = metric.clone();
        if let Some(id) = request.id {
            attributes.push(KeyValue::new(JSONRPC_REQUEST_ID, id));
        }
        if method == "tools/call" {
            attributes.push(KeyValue::new(GEN_AI_OPERATION_NAME, "execute_tool"));
        }
        attributes.extend(request.extra);
        let name = match target {
            Some((_, target)) => format!("{method} {target}"),
            None => method.to_string(),
        };
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .with_links(links)
            .start_with_context(tracer, parent);
        Operation {
            span,
            started: Instant::now(),
            metric,
            tool_call: method == "tools/call",
        }
    }

    /// The span's trace context as W3C headers (`traceparent`,
    /// `tracestate`), to pass on in `params._meta`.
    pub(crate) fn trace_context(&self) -> HashMap<String, String> {
        let cx = Context::new().with_remote_span_context(self.span.span_context().clone());
        let mut carrier = HashMap::new();
        TraceContextPropagator::new().inject_context(&cx, &mut carrier);
        carrier
    }

    /// Marks it failed with `error.type` `kind` (and the JSON-RPC `code`).
    pub(crate) fn fail(&mut self, kind: &str, code: Option<&str>, message: String) {
        self.span
            .set_attribute(KeyValue::new(ERROR_TYPE, kind.to_string()));
        self.metric
            .push(KeyValue::new(ERROR_TYPE, kind.to_string()));
        if let Some(code) = code {
            self.span
                .set_attribute(KeyValue::new(RPC_RESPONSE_STATUS_CODE, code.to_string()));
            self.metric
                .push(KeyValue::new(RPC_RESPONSE_STATUS_CODE, code.to_string()));
        }
        self.span.set_status(Status::error(message));
    }

    /// Ends the span; records its duration in `histogram`.
    pub(crate) fn end(mut self, histogram: &Histogram<f64>) {
        histogram.record(self.started.elapsed().as_secs_f64(), &self.metric);
        self.span.end();
    }
}
