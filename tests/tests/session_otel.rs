//! Guarantee: a guarded session in a process that exports OpenTelemetry
//! (`Telemetry::install`) sends, to a real OTLP/HTTP receiver, a `CLIENT`
//! span per request on the MCP semantic conventions, children of the
//! session's span, ended by each request's one outcome (an answer, an
//! answer over the transport limit, a cancellation), and the session's
//! counters as `drainpipe.*` metrics when it ends.
//!
//! One test in this file: the export is the process's.

use std::time::Duration;

use drainpipe_host::session::{CallError, SessionConfig};
use drainpipe_host::telemetry::Telemetry;
use drainpipe_release::otlp::Receiver;
use drainpipe_release::*;
use serde_json::json;

#[test]
fn a_guarded_session_exports_its_calls() {
    let receiver = Receiver::start();
    // Export starts outside the runtime (its HTTP client blocks).
    let telemetry = Telemetry::to_endpoint(&receiver.endpoint()).expect("export starts");
    assert!(telemetry.install());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let mut config = SessionConfig::default();
        config.framer = config.framer.with_max_frame_bytes(1 << 20);
        let session = start_session(fixture(&[]), config).await;
        within(
            10,
            "echo",
            session.call_tool("echo", json!({"n": 1}), opts(5)),
        )
        .await
        .expect("echo answers");
        let large = within(
            30,
            "large",
            session.call_tool("large", json!({"bytes": 3 << 20}), opts(25)),
        )
        .await;
        assert!(
            matches!(large, Err(CallError::TooLarge { .. })),
            "{large:?}"
        );
        let slow = session
            .start_tool("slow", json!({"steps": 100, "step_ms": 50}), opts(25))
            .await
            .expect("slow starts");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(session.cancel(slow.id(), "enough"));
        let cancelled = within(5, "the cancelled call", slow.outcome()).await;
        assert!(matches!(cancelled, Err(CallError::Cancelled { .. })));
        within(30, "shutdown", session.shutdown()).await;
    });
    drop(runtime);
    let counts = telemetry.shutdown();
    assert!(counts.spans_exported >= 5, "{counts:?}");
    assert_eq!((counts.spans_dropped, counts.spans_failed), (0, 0));

    let spans = receiver.spans();
    let named = |name: &str| {
        spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no span {name}: {spans:?}"))
            .clone()
    };
    let session = named("drainpipe session");
    let echo = named("tools/call echo");
    assert_eq!(echo.kind, 3, "CLIENT");
    assert_eq!(
        (echo.trace_id.as_str(), echo.parent_span_id.as_str()),
        (session.trace_id.as_str(), session.span_id.as_str())
    );
    assert_eq!(echo.attr("gen_ai.tool.name"), Some("echo"));
    assert_eq!(
        echo.attr("mcp.protocol.version"),
        None,
        "no negotiate() here"
    );
    assert!(echo.attr("drainpipe.response.size").is_some());
    assert_eq!(
        named("tools/call large").attr("error.type"),
        Some("too_large")
    );
    assert_eq!(
        named("tools/call slow").attr("error.type"),
        Some("cancelled")
    );
    named("initialize");

    let points = receiver.points();
    let point = |metric: &str| {
        points
            .iter()
            .rev()
            .find(|p| p.metric == metric)
            .unwrap_or_else(|| panic!("no {metric}"))
            .clone()
    };
    let messages = point("drainpipe.messages");
    assert_eq!(
        messages
            .attributes
            .get("drainpipe.session")
            .map(String::as_str),
        Some("guarded")
    );
    assert!(messages.value >= 3.0, "{messages:?}");
    assert_eq!(point("drainpipe.message.oversize").value, 1.0);
    assert!(point("drainpipe.cancellations").value >= 1.0);
    assert!(point("mcp.client.operation.duration").count >= 1);
    assert_eq!(point("mcp.client.session.duration").count, 1);
}
