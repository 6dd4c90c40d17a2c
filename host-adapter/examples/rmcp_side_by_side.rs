//! Plain rmcp (`TokioChildProcess`) and rmcp over drainpipe
//! (`GuardedChildProcess`) on the same server, the same oversize result and
//! the same cancellation; prints outcome, time and peak RSS of each.
//!
//! ```text
//! cargo build -p drainpipe-cli --bin drainpipe-fixture
//! cargo run -p drainpipe-host --features rmcp --example rmcp_side_by_side [-- RESULT_MIB [SERVER ARGS...]]
//! ```
//!
//! Each side runs in a fresh process of this example, so its peak RSS
//! (`VmHWM`) is its own. The server is the fixture (`drainpipe-fixture`, next
//! to this example's target directory, or `$DRAINPIPE_FIXTURE`) unless a
//! server command follows the size; the oversize call is the fixture's
//! `sized` tool, or `big` for any other server (e.g. the Python peer in
//! `tests/peers/python/server.py`).

use std::process::Stdio;
use std::time::{Duration, Instant};

use drainpipe_framer::Config;
use drainpipe_host::rmcp::GuardedChildProcess;
use drainpipe_host::session::SessionConfig;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, JsonObject};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

/// How long a call may take before it counts as hung.
const PATIENCE: Duration = Duration::from_secs(10);
/// drainpipe's transport limit in the first comparison: rmcp's own line cap,
/// so both sides accept exactly the same messages.
const LIMIT_BYTES: usize = 16 << 20;
/// A limit rmcp's child-process transport cannot be given: what it costs.
const SMALL_LIMIT_BYTES: usize = 1 << 20;

fn server(args: &[String]) -> tokio::process::Command {
    match args.split_first() {
        Some((program, rest)) => {
            let mut command = tokio::process::Command::new(program);
            command.args(rest);
            command
        }
        None => {
            let fixture = std::env::var_os("DRAINPIPE_FIXTURE").map_or_else(
                || {
                    let exe = std::env::current_exe().expect("own path");
                    // target/<profile>/examples/this → target/<profile>/drainpipe-fixture
                    exe.parent()
                        .and_then(|p| p.parent())
                        .expect("target dir")
                        .join("drainpipe-fixture")
                },
                Into::into,
            );
            if !fixture.exists() {
                eprintln!(
                    "{} not found: run `cargo build -p drainpipe-cli --bin drainpipe-fixture` first, or set DRAINPIPE_FIXTURE",
                    fixture.display()
                );
                std::process::exit(2);
            }
            tokio::process::Command::new(fixture)
        }
    }
}

fn call_params(tool: &'static str, arguments: Value) -> CallToolRequestParams {
    let arguments: JsonObject = arguments.as_object().expect("an object").clone();
    CallToolRequestParams::new(tool).with_arguments(arguments)
}

/// The oversize call, then a cancelled slow call and a health check.
async fn scenario(
    client: &RunningService<RoleClient, ()>,
    fixture: bool,
    result_bytes: u64,
) -> Value {
    let (tool, args) = if fixture {
        ("sized", json!({"bytes": result_bytes}))
    } else {
        ("big", json!({"bytes": result_bytes}))
    };
    let started = Instant::now();
    let oversize =
        match tokio::time::timeout(PATIENCE, client.call_tool(call_params(tool, args))).await {
            Err(_) => format!("HUNG: no answer after {} s", PATIENCE.as_secs()),
            Ok(Ok(result)) => format!("answered ({} content blocks)", result.content.len()),
            Ok(Err(error)) => format!("error: {error}"),
        };
    let oversize_ms = started.elapsed().as_millis() as u64;

    let started = Instant::now();
    let cancel = async {
        let handle = client
            .send_cancellable_request(
                ClientRequest::CallToolRequest(CallToolRequest::new(call_params(
                    "slow",
                    json!({"steps": 200, "step_ms": 50}),
                ))),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(|e| e.to_string())?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        handle
            .cancel(Some("side by side".into()))
            .await
            .map_err(|e| e.to_string())?;
        client
            .call_tool(call_params("health", json!({})))
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>("cancelled; next call answered")
    };
    let cancellation = match tokio::time::timeout(PATIENCE, cancel).await {
        Err(_) => format!("HUNG: no answer after {} s", PATIENCE.as_secs()),
        Ok(Ok(done)) => done.to_string(),
        Ok(Err(error)) => format!("error: {error}"),
    };
    json!({
        "oversize": oversize, "oversize_ms": oversize_ms,
        "cancellation": cancellation, "cancellation_ms": started.elapsed().as_millis() as u64,
    })
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// One side, in this process: prints one JSON line.
async fn run_side(side: &str, result_bytes: u64, server_args: &[String]) {
    let fixture = server_args.is_empty();
    let mut outcome = match side {
        "plain" => {
            let (transport, _stderr) = TokioChildProcess::builder(server(server_args))
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn");
            let client = ().serve(transport).await.expect("initialize");
            let outcome = scenario(&client, fixture, result_bytes).await;
            let _ = tokio::time::timeout(PATIENCE, client.cancel()).await;
            outcome
        }
        guarded => {
            let limit = if guarded == "guarded-small" {
                SMALL_LIMIT_BYTES
            } else {
                LIMIT_BYTES
            };
            let config = SessionConfig {
                framer: Config::default().with_max_frame_bytes(limit),
                ..SessionConfig::default()
            };
            let transport = GuardedChildProcess::spawn(server(server_args), config).expect("spawn");
            let session = transport.session().clone();
            let client = ().serve(transport).await.expect("initialize");
            let mut outcome = scenario(&client, fixture, result_bytes).await;
            let _ = tokio::time::timeout(PATIENCE, client.cancel()).await;
            let report = session.shutdown().await;
            outcome["metrics"] =
                serde_json::from_str(&report.metrics.to_json()).unwrap_or(Value::Null);
            outcome
        }
    };
    outcome["side"] = json!(side);
    outcome["peak_rss_mib"] = json!(peak_rss_kib() as f64 / 1024.0);
    println!("{outcome}");
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(side) = args.first().filter(|a| *a == "--side") {
        let _ = side;
        let result_bytes = args[2].parse().expect("bytes");
        return run_side(&args[1], result_bytes, &args[3..]).await;
    }
    let result_mib: u64 = args
        .first()
        .map_or(64, |a| a.parse().expect("RESULT_MIB is a number"));
    let server_args = args.get(1..).unwrap_or_default();
    println!(
        "oversize result: {result_mib} MiB on one line; rmcp's line cap and drainpipe's limit: {} MiB",
        LIMIT_BYTES >> 20
    );
    for side in ["plain", "guarded", "guarded-small"] {
        let out = std::process::Command::new(std::env::current_exe().expect("own path"))
            .args(["--side", side, &(result_mib << 20).to_string()])
            .args(server_args)
            .stderr(Stdio::inherit())
            .output()
            .expect("run one side");
        let line = String::from_utf8_lossy(&out.stdout);
        let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
            println!("{side}: failed ({}): {line}", out.status);
            continue;
        };
        let name = match side {
            "plain" => "rmcp TokioChildProcess (16 MiB line cap, fixed)".to_string(),
            "guarded" => format!("rmcp over drainpipe, limit {} MiB", LIMIT_BYTES >> 20),
            _ => format!("rmcp over drainpipe, limit {} MiB", SMALL_LIMIT_BYTES >> 20),
        };
        println!("\n{name}:");
        println!(
            "  oversize result: {} ({} ms)",
            v["oversize"].as_str().unwrap_or("?"),
            v["oversize_ms"]
        );
        println!(
            "  cancellation:    {} ({} ms)",
            v["cancellation"].as_str().unwrap_or("?"),
            v["cancellation_ms"]
        );
        println!(
            "  peak RSS:        {:.1} MiB",
            v["peak_rss_mib"].as_f64().unwrap_or(0.0)
        );
        if !v["metrics"].is_null() {
            println!("  metrics:         {}", v["metrics"]);
        }
    }
}
