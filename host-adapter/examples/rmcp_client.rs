//! An rmcp client on a guarded drainpipe session: the "Use with rmcp"
//! example of the README.
//!
//! ```text
//! cargo run -p drainpipe-host --features rmcp --example rmcp_client -- SERVER [ARGS...]
//! ```
//!
//! Lists the server's tools, calls `echo` if it has one, and prints the
//! session's metrics and the head of its stderr.

use std::time::Duration;

use drainpipe_framer::Config;
use drainpipe_host::rmcp::GuardedChildProcess;
use drainpipe_host::session::SessionConfig;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let program = args.next().ok_or("usage: rmcp_client SERVER [ARGS...]")?;
    let mut command = tokio::process::Command::new(program);
    command.args(args);

    let config = SessionConfig {
        // Answers over 4 MiB fail their request at once instead of hanging it.
        framer: Config::default().with_max_frame_bytes(4 << 20),
        // No request waits longer than this for its answer.
        default_timeout: Duration::from_secs(30),
        ..SessionConfig::default()
    };
    let transport = GuardedChildProcess::spawn(command, config)?;
    let session = transport.session().clone();
    let client = ().serve(transport).await?;

    let tools = client.list_all_tools().await?;
    println!(
        "tools: {:?}",
        tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>()
    );
    if tools.iter().any(|t| t.name == "echo") {
        let arguments = json!({"text": "hello"}).as_object().cloned();
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = arguments;
        match client.call_tool(params).await {
            Ok(result) => println!("echo: {:?}", result.content),
            // Too large, timed out, server gone: one request's error, the
            // session goes on.
            Err(error) => println!("echo failed: {error}"),
        }
    }

    client.cancel().await?;
    let report = session.shutdown().await;
    println!("metrics: {}", report.metrics.to_json());
    println!("stderr: {}", report.stderr.head);
    Ok(())
}
