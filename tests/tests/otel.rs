//! Guarantee: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, `drainpipe proxy`
//! under the official TypeScript client exports, to a real OTLP/HTTP
//! receiver (decoding with the official protobuf definitions), a `CLIENT`
//! span per request on the MCP semantic conventions (`tools/call echo`, a
//! child of the host's trace when the host sent `traceparent`), a session
//! span, the convention's duration histograms and the `drainpipe.*`
//! metrics, for an ordinary call, an answer over the transport limit, a
//! condensed and spilled result and a cancellation. And that without an
//! endpoint nothing is exported.
//!
//! Needs `bash tests/peers/setup.sh` (the Node peer); see
//! `drainpipe_release::peers`.

use std::time::Duration;

use drainpipe_host::proxy::TOO_LARGE;
use drainpipe_release::otlp::{ReceivedPoint, ReceivedSpan, Receiver};
use drainpipe_release::peers::{self, proxy_argv, run_client};
use drainpipe_release::*;
use serde_json::json;

/// The host's trace: what a host that traces writes in `params._meta`.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const HOST_SPAN: &str = "00f067aa0ba902b7";

/// Runs the client's `telemetry` calls through `proxy <proxy_args>` in
/// front of the fixture, exporting to `receiver`; returns the client's
/// summary.
async fn traced(receiver: &Receiver, proxy_args: &[&str], large: u64) -> Option<serde_json::Value> {
    let node = peers::gate("the Node.js peer", peers::node())?;
    let drainpipe = peers::gate("the drainpipe binary", peers::drainpipe())?;
    let server = vec![fixture_binary().display().to_string()];
    let proxied = proxy_argv(&drainpipe, proxy_args, &server);
    let traceparent = format!("00-{TRACE_ID}-{HOST_SPAN}-01");
    let large = large.to_string();
    let mut args = vec![
        "telemetry",
        "--traceparent",
        &traceparent,
        "--large-bytes",
        &large,
        "--",
    ];
    args.extend(proxied.iter().map(String::as_str));
    let mut client = node.script("sdk-client.mjs", &args);
    client
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_SERVICE_NAME", "drainpipe-release")
        .env_remove("OTEL_SDK_DISABLED");
    let what = format!("typescript-sdk client + proxy {proxy_args:?} exporting to a receiver");
    let run = run_client(client, 120, &what).await;
    run.assert_nothing_left();
    Some(run.summary)
}

fn span<'a>(spans: &'a [ReceivedSpan], name: &str) -> &'a ReceivedSpan {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        panic!("no span {name:?} among {names:?}")
    })
}

/// The last value exported for `metric` with `attribute` (if given).
fn last(points: &[ReceivedPoint], metric: &str, attribute: Option<(&str, &str)>) -> ReceivedPoint {
    points
        .iter()
        .rev()
        .find(|p| {
            p.metric == metric
                && attribute.is_none_or(|(k, v)| p.attributes.get(k).map(String::as_str) == Some(v))
        })
        .unwrap_or_else(|| panic!("no {metric} {attribute:?} exported"))
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_exports_mcp_spans_and_drainpipe_metrics() {
    let receiver = Receiver::start();
    // No content budget: the 3 MiB answer passes the 1 MiB transport limit.
    let Some(summary) = traced(
        &receiver,
        &["--max-frame", "1MiB", "--metrics", "none"],
        3 << 20,
    )
    .await
    else {
        return;
    };
    assert_eq!(summary["large"]["error"], json!(TOO_LARGE), "{summary}");
    assert_eq!(summary["slow"], "cancelled", "{summary}");
    let session = receiver
        .wait_for_span("drainpipe proxy", Duration::from_secs(10))
        .expect("the session span was exported");
    let spans = receiver.spans();

    // The ordinary call: the convention's name, kind and attributes, a
    // child of the host's span in the host's trace, linked to the session.
    let echo = span(&spans, "tools/call echo");
    assert_eq!(echo.kind, 3, "CLIENT");
    assert_eq!(echo.trace_id, TRACE_ID);
    assert_eq!(echo.parent_span_id, HOST_SPAN);
    assert_eq!(echo.links, std::slice::from_ref(&session.span_id));
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "pipe"),
    ] {
        assert_eq!(echo.attr(key), Some(value), "{key}: {echo:?}");
    }
    assert!(echo.attr("jsonrpc.request.id").is_some(), "{echo:?}");
    assert!(
        echo.attr("mcp.protocol.version")
            .is_some_and(|v| v.starts_with("20")),
        "{echo:?}"
    );
    assert!(
        echo.attr("drainpipe.response.size")
            .is_some_and(|s| s.parse::<u64>().unwrap() > 0)
    );
    assert_eq!(echo.attr("error.type"), None);
    assert_eq!(
        echo.resource.get("service.name").map(String::as_str),
        Some("drainpipe-release")
    );

    // The answer over the transport limit: the proxy's own error.
    let large = span(&spans, "tools/call large");
    assert_eq!(
        large.attr("error.type"),
        Some(TOO_LARGE.to_string().as_str()),
        "{large:?}"
    );
    assert_eq!(
        large.attr("rpc.response.status_code"),
        Some(TOO_LARGE.to_string().as_str())
    );
    assert_eq!(large.attr("drainpipe.answered_by"), Some("proxy"));
    assert_eq!(large.status_code, 2, "ERROR");
    // Without the host's trace, a call is a child of the session's span.
    assert_eq!(large.trace_id, session.trace_id);
    assert_eq!(large.parent_span_id, session.span_id);

    // The cancellation.
    let slow = span(&spans, "tools/call slow");
    assert_eq!(slow.attr("error.type"), Some("cancelled"), "{slow:?}");
    assert!(spans.iter().any(|s| s.name == "initialize"));
    assert_eq!(session.kind, 1, "INTERNAL");
    assert_eq!(session.attr("drainpipe.transport.limit"), Some("1048576"));

    // The convention's histograms and drainpipe's counters.
    let points = receiver.points();
    let calls = last(
        &points,
        "mcp.client.operation.duration",
        Some(("gen_ai.tool.name", "echo")),
    );
    assert_eq!(calls.unit, "s");
    assert!(calls.count >= 2, "{calls:?}");
    last(
        &points,
        "mcp.client.operation.duration",
        Some(("error.type", "cancelled")),
    );
    assert_eq!(last(&points, "mcp.client.session.duration", None).count, 1);
    let oversize = last(
        &points,
        "drainpipe.message.oversize",
        Some(("drainpipe.direction", "server_to_host")),
    );
    assert_eq!(oversize.value, 1.0);
    assert!(last(&points, "drainpipe.cancellations", None).value >= 1.0);
    let bytes = last(
        &points,
        "drainpipe.message.bytes",
        Some(("drainpipe.direction", "server_to_host")),
    );
    assert!(bytes.value > (3 << 20) as f64, "{bytes:?}");
    assert_eq!(
        last(&points, "drainpipe.transport.limit", None).value,
        1_048_576.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_condensed_and_spilled_result_is_measured() {
    let receiver = Receiver::start();
    let Some(summary) = traced(
        &receiver,
        &["--clip", "64KiB", "--metrics", "none"],
        2 << 20,
    )
    .await
    else {
        return;
    };
    assert_eq!(summary["large"]["condensed"], true, "{summary}");
    assert!(summary["large"]["links"].as_u64() >= Some(1), "{summary}");
    receiver
        .wait_for_span("drainpipe proxy", Duration::from_secs(10))
        .expect("the session span was exported");
    let spans = receiver.spans();
    let large = span(&spans, "tools/call large");
    assert_eq!(
        large.attr("drainpipe.response.condensed"),
        Some("true"),
        "{large:?}"
    );
    let original: u64 = large
        .attr("drainpipe.response.size")
        .unwrap()
        .parse()
        .unwrap();
    let kept: u64 = large
        .attr("drainpipe.response.kept_size")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        original >= 2 << 20 && kept <= 64 << 10,
        "{original} -> {kept}"
    );
    assert!(
        large
            .attr("drainpipe.response.spilled_values")
            .is_some_and(|n| n != "0")
    );
    assert_eq!(large.attr("error.type"), None);

    figure(
        "the span of a condensed and spilled tools/call, as a receiver decodes it",
        json!({"name": large.name, "kind": large.kind, "attributes": large.attributes}),
    );
    let points = receiver.points();
    assert_eq!(
        last(&points, "drainpipe.results.condensed", None).value,
        1.0
    );
    assert!(last(&points, "drainpipe.spill.values", None).value >= 1.0);
    last(&points, "drainpipe.spill.bytes", None);
    let sizes = last(
        &points,
        "drainpipe.result.size",
        Some(("drainpipe.response.condensed", "true")),
    );
    assert_eq!((sizes.count, sizes.unit.as_str()), (1, "By"));
    assert!(sizes.value >= (2 << 20) as f64);
    let kept = last(&points, "drainpipe.result.kept_size", None);
    assert!(
        kept.count == 1 && kept.value <= (64 << 10) as f64,
        "{kept:?}"
    );
}

/// A 2026-07-28 request goes on with the proxy's span as its trace
/// context, so the server's spans become the proxy's children: the
/// official SDK v2 server (`v2-server.mjs`, its `trace_context` tool)
/// reports the `traceparent` it received, which names the proxy's span in
/// the host's trace. A 2025 request (the same client in `legacy` mode)
/// goes on as the host wrote it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_server_gets_the_proxys_trace_context() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let server = vec![
        node.node.display().to_string(),
        node.dir.join("v2-server.mjs").display().to_string(),
    ];
    let proxied = proxy_argv(&drainpipe, &["--metrics", "none"], &server);
    let host = format!("00-{TRACE_ID}-{HOST_SPAN}-01");
    for mode in ["pin", "legacy"] {
        let receiver = Receiver::start();
        let mut args = vec!["trace", "--traceparent", &host, "--mode", mode, "--"];
        args.extend(proxied.iter().map(String::as_str));
        let mut client = node.script("sdk-v2-client.mjs", &args);
        client
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
            .env_remove("OTEL_SDK_DISABLED");
        let run = run_client(client, 120, &format!("SDK v2 client ({mode}) + v2 server")).await;
        run.assert_nothing_left();
        let saw = run.summary["server_saw"]["traceparent"]
            .as_str()
            .unwrap_or_else(|| panic!("{mode}: {}", run.summary))
            .to_string();
        receiver
            .wait_for_span("drainpipe proxy", Duration::from_secs(10))
            .expect("the session span was exported");
        let spans = receiver.spans();
        let call = span(&spans, "tools/call trace_context");
        assert_eq!(call.trace_id, TRACE_ID, "{mode}");
        assert_eq!(call.parent_span_id, HOST_SPAN, "{mode}");
        if mode == "pin" {
            assert_eq!(call.attr("mcp.protocol.version"), Some("2026-07-28"));
            assert_eq!(saw, format!("00-{TRACE_ID}-{}-01", call.span_id), "{mode}");
        } else {
            assert_eq!(saw, host, "{mode}: a 2025 request goes on as written");
        }
    }
}
