//! Time bounds that fail loudly and the short forms of a tool call.

use std::future::Future;
use std::time::{Duration, Instant};

use drainpipe_host::session::{CallError, CallOptions, PendingCall, Response, Session};
use serde_json::Value;

/// Runs `future` or panics after `secs` seconds, naming what hung.
pub async fn within<F: Future>(secs: u64, what: &str, future: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(secs), future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {secs} s: {what}"),
    }
}

/// Polls `condition` every 5 ms for up to `secs` seconds; panics with `what`
/// if it never holds.
pub async fn wait_until(secs: u64, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "condition never held within {secs} s: {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Call options with a timeout in seconds.
pub fn opts(secs: u64) -> CallOptions {
    CallOptions::timeout(Duration::from_secs(secs))
}

/// Call options with a timeout in milliseconds.
pub fn opts_ms(ms: u64) -> CallOptions {
    CallOptions::timeout(Duration::from_millis(ms))
}

/// `tools/call` of `name` with `arguments`.
pub async fn tool(
    session: &Session,
    name: &str,
    arguments: Value,
    options: CallOptions,
) -> Result<Response, CallError> {
    session.call_tool(name, arguments, options).await
}

/// Starts `tools/call` of `name` without waiting for it.
pub async fn start_tool(
    session: &Session,
    name: &str,
    arguments: Value,
    options: CallOptions,
) -> PendingCall {
    session
        .start_tool(name, arguments, options)
        .await
        .expect("request sent")
}
