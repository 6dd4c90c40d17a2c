//! The fixture server in a session, for the tests of any crate: started,
//! used and shut down the way every session test does it.

use std::time::{Duration, Instant};

use drainpipe_host::session::{Response, Session, SessionConfig, ShutdownReport};
use serde_json::json;

use crate::bins::fixture_binary;
use crate::bounds::{opts, tool, within};
use crate::procs::assert_group_gone;

/// The fixture server with `args`.
pub fn fixture(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(fixture_binary());
    command.args(args);
    command
}

/// A session on the fixture, initialized.
pub async fn start(args: &[&str], config: SessionConfig) -> Session {
    let session = Session::spawn(fixture(args), config).expect("spawn the fixture");
    let init = within(
        10,
        "initialize",
        session.call("initialize", json!({}), opts(5)),
    )
    .await;
    init.expect("initialize answers");
    session
}

/// The first text block of a tool result.
pub fn first_text(response: &Response) -> String {
    response.result["content"][0]["text"]
        .as_str()
        .expect("a text block")
        .to_string()
}

/// Proves the session still works: an `echo` round trip within 5 s.
pub async fn assert_usable(session: &Session) -> Duration {
    let started = Instant::now();
    let echoed = within(
        10,
        "second request",
        tool(session, "echo", json!({"again": true}), opts(5)),
    )
    .await;
    let echoed = echoed.expect("the second request succeeds");
    assert_eq!(echoed.result["structuredContent"], json!({"again": true}));
    started.elapsed()
}

/// Shuts the session down and checks that nothing of it is left.
pub async fn shutdown_clean(session: &Session) -> ShutdownReport {
    let pid = session.pid();
    let report = within(20, "shutdown", session.shutdown()).await;
    assert_group_gone(pid).await;
    report
}
