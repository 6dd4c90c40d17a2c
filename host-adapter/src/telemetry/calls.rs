//! One proxy session's telemetry: a span per request the host sends, a span
//! for the session, the convention's duration histograms, and the
//! `drainpipe.*` metrics read from the proxy's own counters.
//!
//! A request's span starts when the proxy reads it from the host and ends
//! when the answer is forwarded to the host (the server's, or the proxy's
//! own error), or when the host cancels it. It is named
//! `{mcp.method.name} {target}` (the tool or prompt), of kind `CLIENT`,
//! and continues the host's trace when the request carries
//! `params._meta.traceparent`; else it is a child of the session's span.
//! A request in the 2026-07-28 envelope is passed on with the span's own
//! `traceparent`, so the server's spans are its children.
//!
//! The request and its answer are read with the framer's splice lookups,
//! which skip values without parsing them: a 100 MB result costs one scan
//! for `error` and `isError`, and nothing is decoded but short strings.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use drainpipe_framer::splice::{Span as Json, Splice};
use opentelemetry::metrics::{Histogram, Meter};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{Link, Span as _, SpanKind, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::Tracer;

use super::Telemetry;
use super::names::*;
use super::operation::{self, Operation};
use crate::metrics::{DirectionMetrics, ProxyMetrics};

/// Spans open at once, at most; past it a request is not traced. Bounds
/// the **memory** against a host that never reads answers (as the proxy's
/// table of requests in flight does).
const MAX_OPEN: usize = 65_536;

/// Where the proxy's live counters are, for the metrics read at each
/// export.
pub(crate) struct Live {
    pub(crate) metrics: Arc<Mutex<ProxyMetrics>>,
    /// Nanoseconds each reader waited for queue room: host→server,
    /// server→host.
    pub(crate) blocked: [Arc<AtomicU64>; 2],
    /// Bytes in the spill store and values evicted, if there is one.
    pub(crate) spill: Option<Arc<dyn Fn() -> (u64, u64) + Send + Sync>>,
    pub(crate) limit: u64,
    /// A remote server's host and port; `None` for a child on stdio.
    pub(crate) remote: Option<(String, u16)>,
}

/// How the answer to a request went, as far as the proxy knows.
pub(crate) struct Answer<'a> {
    /// The line the host gets (the server's, or condensed), no newline.
    pub(crate) line: &'a [u8],
    /// Bytes the server wrote, if the line is not them.
    pub(crate) original: Option<u64>,
    /// Values of it kept in the spill store and linked.
    pub(crate) spilled: u64,
}

/// One session's tracker (see the module docs).
pub(crate) struct Calls {
    tracer: Tracer,
    propagator: TraceContextPropagator,
    operation: Histogram<f64>,
    session_duration: Histogram<f64>,
    result_size: Histogram<u64>,
    kept_size: Histogram<u64>,
    session: Mutex<Session>,
    open: Mutex<HashMap<Vec<u8>, Operation>>,
    /// `network.transport`, and a remote server's address and port.
    peer: Vec<KeyValue>,
}

struct Session {
    context: Context,
    started: Instant,
    /// The revision `initialize` settled on, if seen.
    protocol: Option<String>,
    ended: bool,
}

impl Calls {
    /// A session's tracker; its metrics read `live` at each export.
    /// `budget` is the content budget, as the notice names it.
    pub(crate) fn start(telemetry: &Telemetry, live: Live, budget: Option<String>) -> Calls {
        let tracer = telemetry.tracer();
        let meter = telemetry.meter();
        let peer = match &live.remote {
            Some((address, port)) => vec![
                KeyValue::new(NETWORK_TRANSPORT, "tcp"),
                KeyValue::new(SERVER_ADDRESS, address.clone()),
                KeyValue::new(SERVER_PORT, i64::from(*port)),
            ],
            None => vec![KeyValue::new(NETWORK_TRANSPORT, "pipe")],
        };
        let mut attributes = peer.clone();
        attributes.push(KeyValue::new(TRANSPORT_LIMIT, live.limit as i64));
        if let Some(budget) = budget {
            attributes.push(KeyValue::new(CONTENT_BUDGET, budget));
        }
        let span = tracer
            .span_builder("drainpipe proxy")
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start(&tracer);
        observe(&meter, Arc::new(live));
        Calls {
            peer,
            operation: meter
                .f64_histogram(MCP_CLIENT_OPERATION_DURATION)
                .with_unit("s")
                .with_description("Duration of an MCP request, from the host's request to the answer forwarded to it")
                .with_boundaries(vec![
                    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
                    10.0, 30.0, 60.0, 300.0,
                ])
                .build(),
            session_duration: meter
                .f64_histogram(MCP_CLIENT_SESSION_DURATION)
                .with_unit("s")
                .with_description("Duration of an MCP session through the proxy")
                .build(),
            result_size: meter
                .u64_histogram(RESULT_SIZE)
                .with_unit("By")
                .with_description("Bytes of each tools/call result as the server wrote it")
                .with_boundaries(size_boundaries())
                .build(),
            kept_size: meter
                .u64_histogram(RESULT_KEPT_SIZE)
                .with_unit("By")
                .with_description("Bytes of each condensed tools/call result the host got")
                .with_boundaries(size_boundaries())
                .build(),
            tracer,
            propagator: TraceContextPropagator::new(),
            session: Mutex::new(Session {
                context: Context::new().with_span(span),
                started: Instant::now(),
                protocol: None,
                ended: false,
            }),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The host sent request `id` (its key, see `route::key_of`; `token`
    /// as written) for `method`: starts its span. Returns the line to send
    /// on instead, with the span's trace context, for a 2026-07-28 request.
    pub(crate) fn request(
        &self,
        key: Vec<u8>,
        token: &[u8],
        method: &[u8],
        line: &[u8],
    ) -> Option<Vec<u8>> {
        let method = String::from_utf8_lossy(method).into_owned();
        let request = Request::read(line);
        let (protocol, parent, session) = {
            let session = self.session.lock().expect("telemetry session");
            let protocol = request
                .protocol
                .clone()
                .or_else(|| session.protocol.clone());
            (
                protocol,
                session.context.clone(),
                session.context.span().span_context().clone(),
            )
        };
        let mut extra = vec![KeyValue::new(REQUEST_SIZE, line.len() as i64)];
        if method == "resources/read"
            && let Some(uri) = &request.uri
        {
            extra.push(KeyValue::new(MCP_RESOURCE_URI, uri.clone()));
        }
        let id = (token != b"null").then(|| {
            let id = match token {
                [b'"', inner @ .., b'"'] => inner,
                other => other,
            };
            String::from_utf8_lossy(id).into_owned()
        });
        // The host's trace, when it sent one; else the session's.
        let remote = request.traceparent.as_ref().map(|traceparent| {
            let mut carrier = HashMap::from([("traceparent".to_string(), traceparent.clone())]);
            if let Some(state) = &request.tracestate {
                carrier.insert("tracestate".to_string(), state.clone());
            }
            self.propagator.extract(&carrier)
        });
        let (parent, links) = match remote {
            Some(remote) if remote.span().span_context().is_valid() => {
                (remote, vec![Link::with_context(session)])
            }
            _ => (parent, Vec::new()),
        };
        let operation = Operation::start(
            &self.tracer,
            operation::Request {
                method: &method,
                name: request.name.as_deref(),
                id,
                protocol: protocol.as_deref(),
                extra,
                peer: &self.peer,
            },
            &parent,
            links,
        );
        let traced = request
            .modern
            .then(|| with_trace_context(line, &operation))
            .flatten();
        let mut open = self.open.lock().expect("telemetry calls");
        if open.len() < MAX_OPEN {
            open.insert(key, operation);
        }
        traced
    }

    /// The answer to `key` goes to the host.
    pub(crate) fn answered(&self, key: &[u8], answer: Answer<'_>) {
        let Some(mut call) = self.take(key) else {
            return;
        };
        let line = answer.line;
        let top = Json::whole(line);
        let error = top.and_then(|t| t.member(line, "error"));
        let original = answer.original.unwrap_or(line.len() as u64);
        call.span
            .set_attribute(KeyValue::new(RESPONSE_SIZE, original as i64));
        if let Some(error) = error {
            let code = error
                .member(line, "code")
                .map(|c| String::from_utf8_lossy(c.bytes(line)).into_owned())
                .unwrap_or_else(|| "error".into());
            let message = error
                .member(line, "message")
                .and_then(|m| m.string(line))
                .map(|m| m.into_owned())
                .unwrap_or_default();
            call.fail(&code, Some(&code), message);
        } else if call.tool_call {
            let condensed = answer.original.is_some();
            call.span
                .set_attribute(KeyValue::new(RESPONSE_CONDENSED, condensed));
            let attrs = [KeyValue::new(RESPONSE_CONDENSED, condensed)];
            self.result_size.record(original, &attrs);
            if condensed {
                let kept = line.len() as u64;
                call.span
                    .set_attribute(KeyValue::new(RESPONSE_KEPT_SIZE, kept as i64));
                call.span.set_attribute(KeyValue::new(
                    RESPONSE_SPILLED_VALUES,
                    answer.spilled as i64,
                ));
                self.kept_size.record(kept, &[]);
            }
            let is_error = top
                .and_then(|t| t.member(line, "result"))
                .and_then(|r| r.member(line, "isError"))
                .is_some_and(|e| e.bytes(line) == b"true");
            if is_error {
                call.fail("tool_error", None, String::new());
            }
        }
        self.end(call);
    }

    /// The proxy answered `key` itself with error `code` (`message`).
    pub(crate) fn failed(&self, key: &[u8], code: i64, message: &str) {
        let Some(mut call) = self.take(key) else {
            return;
        };
        let code = code.to_string();
        call.span.set_attribute(KeyValue::new(ANSWERED_BY, "proxy"));
        call.fail(&code, Some(&code), message.to_string());
        self.end(call);
    }

    /// The host cancelled `key`.
    pub(crate) fn cancelled(&self, key: &[u8]) {
        if let Some(mut call) = self.take(key) {
            call.fail("cancelled", None, "cancelled by the host".into());
            self.end(call);
        }
    }

    /// The handshake's answer named the session's revision.
    pub(crate) fn protocol(&self, version: String) {
        self.session.lock().expect("telemetry session").protocol = Some(version);
    }

    /// The session ended: spans still open end as unanswered, then the
    /// session's own.
    pub(crate) fn end_session(&self, metrics: &ProxyMetrics) {
        let open: Vec<Operation> = {
            let mut open = self.open.lock().expect("telemetry calls");
            open.drain().map(|(_, call)| call).collect()
        };
        for mut call in open {
            call.fail("unanswered", None, "the session ended first".into());
            self.end(call);
        }
        let mut session = self.session.lock().expect("telemetry session");
        if std::mem::replace(&mut session.ended, true) {
            return;
        }
        let mut attributes = self.peer.clone();
        if let Some(protocol) = &session.protocol {
            attributes.push(KeyValue::new(MCP_PROTOCOL_VERSION, protocol.clone()));
        }
        let span = session.context.span();
        if let Some(protocol) = &session.protocol {
            span.set_attribute(KeyValue::new(MCP_PROTOCOL_VERSION, protocol.clone()));
        }
        if let Some(code) = metrics.server_exit_code {
            span.set_attribute(KeyValue::new(SERVER_EXIT_CODE, code as i64));
            if code != 0 {
                let error = format!("exit_{code}");
                span.set_attribute(KeyValue::new(ERROR_TYPE, error.clone()));
                attributes.push(KeyValue::new(ERROR_TYPE, error));
            }
        } else if metrics.server_signal.is_some() {
            span.set_attribute(KeyValue::new(ERROR_TYPE, "signal"));
            attributes.push(KeyValue::new(ERROR_TYPE, "signal"));
        }
        for (key, value) in [
            ("drainpipe.host_requests", metrics.host_requests),
            ("drainpipe.results.condensed", metrics.results_condensed),
            ("drainpipe.spill.values", metrics.values_spilled),
            ("drainpipe.cancellations", metrics.cancellations_forwarded),
            ("drainpipe.errors.sent", metrics.errors_sent),
        ] {
            span.set_attribute(KeyValue::new(key, value as i64));
        }
        span.end();
        self.session_duration
            .record(session.started.elapsed().as_secs_f64(), &attributes);
    }

    fn take(&self, key: &[u8]) -> Option<Operation> {
        self.open.lock().expect("telemetry calls").remove(key)
    }

    fn end(&self, call: Operation) {
        call.end(&self.operation);
    }
}

/// What a request says that telemetry needs.
#[derive(Default)]
struct Request {
    name: Option<String>,
    uri: Option<String>,
    traceparent: Option<String>,
    tracestate: Option<String>,
    /// `params._meta`'s protocol revision (2026-07-28).
    protocol: Option<String>,
    /// It carries the 2026-07-28 envelope: its server reads trace context.
    modern: bool,
}

impl Request {
    fn read(line: &[u8]) -> Request {
        let params = Json::whole(line).and_then(|t| t.member(line, "params"));
        let string = |span: Option<Json>, key: &str| {
            span.and_then(|s| s.member(line, key))
                .and_then(|v| v.string(line))
                .map(|v| v.into_owned())
        };
        let meta = params.and_then(|p| p.member(line, "_meta"));
        let protocol = string(meta, "io.modelcontextprotocol/protocolVersion");
        Request {
            name: string(params, "name"),
            uri: string(params, "uri"),
            traceparent: string(meta, "traceparent"),
            tracestate: string(meta, "tracestate"),
            modern: protocol.is_some(),
            protocol,
        }
    }
}

/// `line` with `params._meta.traceparent` (and `tracestate`) set to
/// `operation`'s context: replaced where the host wrote them, else added;
/// every other byte as it was.
fn with_trace_context(line: &[u8], operation: &Operation) -> Option<Vec<u8>> {
    let carrier = operation.trace_context();
    let meta = Json::whole(line)?
        .member(line, "params")?
        .member(line, "_meta")?;
    if !meta.is_object(line) {
        return None;
    }
    let mut splice = Splice::new();
    for key in ["traceparent", "tracestate"] {
        let Some(value) = carrier.get(key) else {
            continue;
        };
        let quoted = serde_json::to_vec(value).ok()?;
        match meta.member(line, key) {
            Some(old) => splice.replace(old, &quoted),
            None => splice.append_member(line, meta, key, &quoted),
        }
    }
    Some(splice.apply(line))
}

/// Size buckets, in bytes: 1 KiB to 1 GiB by fours.
fn size_boundaries() -> Vec<f64> {
    (0..11).map(|k| (1024u64 << (2 * k)) as f64).collect()
}

/// A session total: its name, its description, and how it is read.
type Total = (&'static str, &'static str, fn(&ProxyMetrics) -> u64);

/// The `drainpipe.*` metrics read from the proxy's counters at each export
/// (one source for them and the exit-time block).
fn observe(meter: &Meter, live: Arc<Live>) {
    let directions = |m: &ProxyMetrics| {
        [
            ("host_to_server", m.host_to_server.clone()),
            ("server_to_host", m.server_to_host.clone()),
        ]
    };
    let per_direction = |name: &'static str,
                         unit: &'static str,
                         description: &'static str,
                         read: fn(&DirectionMetrics) -> u64| {
        let live = live.clone();
        meter
            .u64_observable_counter(name)
            .with_unit(unit)
            .with_description(description)
            .with_callback(move |observer| {
                let metrics = live.metrics.lock().expect("metrics").clone();
                for (direction, d) in directions(&metrics) {
                    observer.observe(read(&d), &[KeyValue::new(DIRECTION, direction)]);
                }
            })
            .build();
    };
    per_direction(MESSAGE_BYTES, "By", "Bytes read from each peer", |d| {
        d.bytes
    });
    per_direction(MESSAGES, "{message}", "Messages forwarded", |d| d.frames);
    per_direction(
        MESSAGE_OVERSIZE,
        "{message}",
        "Lines rejected for passing the transport limit",
        |d| d.oversize,
    );
    per_direction(
        MESSAGE_MALFORMED,
        "{message}",
        "Lines that were not valid JSON-RPC",
        |d| d.malformed,
    );
    let gauge_live = live.clone();
    meter
        .u64_observable_gauge(MESSAGE_LARGEST)
        .with_unit("By")
        .with_description("The largest message forwarded")
        .with_callback(move |observer| {
            let metrics = gauge_live.metrics.lock().expect("metrics").clone();
            for (direction, d) in directions(&metrics) {
                observer.observe(
                    d.largest_frame_bytes,
                    &[KeyValue::new(DIRECTION, direction)],
                );
            }
        })
        .build();
    let limit = live.limit;
    meter
        .u64_observable_gauge(TRANSPORT_LIMIT)
        .with_unit("By")
        .with_description("The transport limit: no longer message is buffered or forwarded")
        .with_callback(move |observer| observer.observe(limit, &[]))
        .build();
    let totals: [Total; 5] = [
        (
            RESULTS_CONDENSED,
            "Results condensed to the content budget",
            |m| m.results_condensed,
        ),
        (
            RESULTS_CONDENSE_FAILED,
            "Results over the budget that could not be condensed",
            |m| m.condense_failures,
        ),
        (
            SPILL_VALUES,
            "Cut values kept in the spill store and linked",
            |m| m.values_spilled,
        ),
        (
            CANCELLATIONS,
            "notifications/cancelled forwarded to the server",
            |m| m.cancellations_forwarded,
        ),
        (ERRORS_SENT, "Errors the proxy answered itself", |m| {
            m.errors_sent
        }),
    ];
    for (name, description, read) in totals {
        let live = live.clone();
        meter
            .u64_observable_counter(name)
            .with_description(description)
            .with_callback(move |observer| {
                let value = read(&live.metrics.lock().expect("metrics"));
                observer.observe(value, &[]);
            })
            .build();
    }
    let kills = live.clone();
    meter
        .u64_observable_counter(TREE_KILLS)
        .with_description("Times the server's process tree had to be killed")
        .with_callback(move |observer| {
            observer.observe(kills.metrics.lock().expect("metrics").tree_kills, &[]);
        })
        .build();
    let blocked = live.clone();
    meter
        .f64_observable_counter(BACKPRESSURE)
        .with_unit("s")
        .with_description("Time a reader waited for room in its queue: the peer it reads from was held up by the peer that did not read")
        .with_callback(move |observer| {
            for (direction, nanos) in ["host_to_server", "server_to_host"]
                .into_iter()
                .zip(&blocked.blocked)
            {
                let seconds = nanos.load(Ordering::Relaxed) as f64 / 1e9;
                observer.observe(seconds, &[KeyValue::new(DIRECTION, direction)]);
            }
        })
        .build();
    if let Some(spill) = live.spill.clone() {
        let evictions = spill.clone();
        meter
            .u64_observable_gauge(SPILL_BYTES)
            .with_unit("By")
            .with_description("Bytes in the spill store")
            .with_callback(move |observer| observer.observe(spill().0, &[]))
            .build();
        meter
            .u64_observable_counter(SPILL_EVICTIONS)
            .with_description("Values evicted from the spill store to stay within its quota")
            .with_callback(move |observer| observer.observe(evictions().1, &[]))
            .build();
    }
}
