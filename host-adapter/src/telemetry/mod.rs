//! OpenTelemetry export (feature `otel`): traces and metrics over OTLP
//! HTTP/protobuf, on the MCP semantic conventions, with drainpipe's own
//! attributes and metrics in the `drainpipe.*` namespace.
//!
//! **Off unless configured**, the standard way: export starts when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or a signal's own
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `…_METRICS_ENDPOINT`) is set and
//! `OTEL_SDK_DISABLED` is not `true`. The exporter reads the other
//! `OTEL_EXPORTER_OTLP_*` variables (headers, timeout, compression), the
//! resource detectors read `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES` (the service is `drainpipe` unless they say
//! otherwise), and the SDK reads `OTEL_BSP_*` and `OTEL_METRIC_EXPORT_*`.
//! `OTEL_EXPORTER_OTLP_PROTOCOL` may only be `http/protobuf`, the one
//! protocol built in; another is said on stderr and HTTP/protobuf used.
//!
//! **Nothing waits on a collector.** Spans go to the SDK's batch processor,
//! whose own thread exports them with a blocking HTTP client; in front of
//! it a counting gate ([`Gate`]) holds at most [`MAX_QUEUED_SPANS`] spans
//! not yet exported and drops (and counts) the rest, so a slow or dead
//! collector costs a counter increment per span. Metrics are aggregated in
//! memory (bounded by the SDK's cardinality limit) and exported by the
//! SDK's periodic reader, on its own thread. At the end
//! ([`Telemetry::shutdown`]) the last batch gets at most
//! [`SHUTDOWN_GRACE`]: a collector that does not answer by then loses it,
//! and the process does not wait longer.
//!
//! What is recorded is in [`names`]; how a proxy session records it is in
//! `calls`.

pub(crate) mod calls;
pub mod names;
mod operation;
pub(crate) mod session;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, Span, SpanData, SpanExporter,
    SpanProcessor,
};

pub use crate::metrics::ExportCounts;
pub(crate) use calls::Calls;

/// Spans ended and not yet exported, at most: past it a span is dropped
/// and counted. Bounds the **memory** held for a collector that is slow
/// or gone (the SDK's own queue is this large, so it never fills).
pub const MAX_QUEUED_SPANS: usize = 2048;

/// How long [`Telemetry::shutdown`] waits for the last export. Bounds the
/// time a dead collector adds to the end of a proxy run.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);

/// The process's export ([`Telemetry::install`]).
static GLOBAL: OnceLock<Telemetry> = OnceLock::new();

/// Why export could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The OTLP exporter could not be built (a malformed endpoint or header).
    #[error("OpenTelemetry export could not start: {0}")]
    Exporter(String),
}

/// Export for this process: the providers and the counts of what became of
/// the spans. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    counts: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// Spans let through the gate and not yet exported or failed.
    queued: AtomicU64,
    exported: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
}

impl Telemetry {
    /// Export as the environment configures it; `None` when it does not
    /// (no OTLP endpoint set, or `OTEL_SDK_DISABLED=true`). Starts the SDK's
    /// export threads.
    pub fn from_env() -> Result<Option<Telemetry>, TelemetryError> {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        let disabled =
            std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let endpoint = set("OTEL_EXPORTER_OTLP_ENDPOINT")
            || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
        if disabled || !endpoint {
            return Ok(None);
        }
        Telemetry::start(None).map(Some)
    }

    /// Export to the collector at `endpoint` (a base URL such as
    /// `http://localhost:4318`; `/v1/traces` and `/v1/metrics` are
    /// appended), whatever the environment says of the endpoint; the other
    /// variables apply as in [`Telemetry::from_env`].
    pub fn to_endpoint(endpoint: &str) -> Result<Telemetry, TelemetryError> {
        Telemetry::start(Some(endpoint.trim_end_matches('/')))
    }

    fn start(endpoint: Option<&str>) -> Result<Telemetry, TelemetryError> {
        for name in [
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        ] {
            if let Ok(protocol) = std::env::var(name)
                && protocol != "http/protobuf"
            {
                eprintln!(
                    "drainpipe: {name}={protocol} is not built in; exporting over http/protobuf"
                );
            }
        }
        let error =
            |e: opentelemetry_otlp::ExporterBuildError| TelemetryError::Exporter(e.to_string());
        let mut spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary);
        let mut metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary);
        if let Some(endpoint) = endpoint {
            spans = spans.with_endpoint(format!("{endpoint}/v1/traces"));
            metrics = metrics.with_endpoint(format!("{endpoint}/v1/metrics"));
        }
        let spans = spans.build().map_err(error)?;
        let metrics = metrics.build().map_err(error)?;
        let resource = resource();
        let counts = Arc::new(Counts::default());
        let batch = BatchSpanProcessor::builder(Counted {
            inner: spans,
            counts: counts.clone(),
        })
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(MAX_QUEUED_SPANS)
                .build(),
        )
        .build();
        let tracer_provider = SdkTracerProvider::builder()
            .with_resource(resource.clone())
            .with_span_processor(Gate {
                inner: batch,
                counts: counts.clone(),
            })
            .build();
        let meter_provider = SdkMeterProvider::builder()
            .with_resource(resource)
            .with_periodic_exporter(metrics)
            .build();
        Ok(Telemetry {
            inner: Arc::new(Inner {
                tracer_provider,
                meter_provider,
                counts,
            }),
        })
    }

    /// Makes this the process's export, which every proxy run records into
    /// from then on. Once per process: false (and nothing changes) if one
    /// was installed already.
    pub fn install(&self) -> bool {
        GLOBAL.set(self.clone()).is_ok()
    }

    /// The process's export, if one was installed.
    pub fn global() -> Option<&'static Telemetry> {
        GLOBAL.get()
    }

    /// The tracer drainpipe's spans come from.
    pub(crate) fn tracer(&self) -> opentelemetry_sdk::trace::Tracer {
        self.inner.tracer_provider.tracer_with_scope(
            opentelemetry::InstrumentationScope::builder("drainpipe")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
        )
    }

    /// The meter drainpipe's metrics come from.
    pub(crate) fn meter(&self) -> opentelemetry::metrics::Meter {
        use opentelemetry::metrics::MeterProvider as _;
        self.inner.meter_provider.meter_with_scope(
            opentelemetry::InstrumentationScope::builder("drainpipe")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
        )
    }

    /// What became of the spans so far.
    pub fn counts(&self) -> ExportCounts {
        let c = &self.inner.counts;
        ExportCounts {
            spans_exported: c.exported.load(Ordering::Relaxed),
            spans_failed: c.failed.load(Ordering::Relaxed),
            spans_dropped: c.dropped.load(Ordering::Relaxed),
            spans_unsent: c.queued.load(Ordering::Relaxed),
        }
    }

    /// Exports what is left, waiting at most [`SHUTDOWN_GRACE`], and
    /// stops export. What the collector did not take by then is lost.
    pub fn shutdown(&self) -> ExportCounts {
        let inner = self.inner.clone();
        let (done, wait) = std::sync::mpsc::channel();
        // The SDK's meter shutdown waits for its exporter however long it
        // takes: it runs on a thread of its own, and is waited for only so
        // long.
        let spawned = std::thread::Builder::new()
            .name("drainpipe-otel-shutdown".into())
            .spawn(move || {
                let _ = inner.tracer_provider.shutdown_with_timeout(SHUTDOWN_GRACE);
                let _ = inner.meter_provider.shutdown_with_timeout(SHUTDOWN_GRACE);
                let _ = done.send(());
            });
        if spawned.is_ok() {
            let _ = wait.recv_timeout(SHUTDOWN_GRACE);
        }
        self.counts()
    }
}

/// The resource: what the detectors find in `OTEL_SERVICE_NAME` and
/// `OTEL_RESOURCE_ATTRIBUTES`, with `service.name` `drainpipe` when they
/// name no service.
fn resource() -> Resource {
    let named = std::env::var_os("OTEL_SERVICE_NAME").is_some()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| a.contains("service.name="));
    let builder = Resource::builder();
    let builder = if named {
        builder
    } else {
        builder.with_service_name("drainpipe")
    };
    builder
        .with_attributes([KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))])
        .build()
}

/// In front of the batch processor: lets a span through only while fewer
/// than [`MAX_QUEUED_SPANS`] wait for export, and counts the rest.
#[derive(Debug)]
struct Gate {
    inner: BatchSpanProcessor,
    counts: Arc<Counts>,
}

impl SpanProcessor for Gate {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        let queued = self.counts.queued.fetch_add(1, Ordering::Relaxed);
        if queued >= MAX_QUEUED_SPANS as u64 {
            self.counts.queued.fetch_sub(1, Ordering::Relaxed);
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The OTLP exporter, counting what it exported and what failed.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    counts: Arc<Counts>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len() as u64;
        let result = self.inner.export(batch).await;
        let counter = match result {
            Ok(()) => &self.counts.exported,
            Err(_) => &self.counts.failed,
        };
        counter.fetch_add(n, Ordering::Relaxed);
        self.counts.queued.fetch_sub(n, Ordering::Relaxed);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
