//! Helpers shared by the session tests: the fixture server, time bounds that
//! fail loudly, and process-table checks for zombies and orphans.
#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use drainpipe_host::session::{Response, Session, SessionConfig, ShutdownReport};
use nix::errno::Errno;
use nix::sys::signal::killpg;
use nix::unistd::Pid;
use serde_json::json;

/// `within`, `wait_until`, `opts`, `opts_ms`, `tool` and `start_tool`: the
/// release suite's own, so both suites bound time the same way.
#[path = "../../../tests/src/bounds.rs"]
mod bounds;
pub use bounds::*;

/// The fixture server with `args`.
pub fn fixture(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_drainpipe-fixture"));
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

/// The process state letter from /proc (`R`, `S`, `Z`, …), or `None` if the pid is gone.
pub fn state(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces.
    let after = &stat[stat.rfind(')')? + 2..];
    let mut fields = after.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Every descendant of `root`, by walking /proc's parent links.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        if let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>()
            && let Some((_, ppid)) = state(pid)
        {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// Waits until none of `pids` runs any more (gone, or a zombie waiting for
/// a parent that is not ours).
pub async fn assert_all_gone(pids: &[u32], what: &str) {
    wait_until(5, what, || {
        pids.iter()
            .all(|&pid| matches!(state(pid), None | Some(('Z', _))))
    })
    .await;
}

/// No process left in the group `pgid`, and the leader reaped (no zombie).
pub async fn assert_group_gone(pgid: u32) {
    wait_until(5, "the server's process group is empty", || {
        killpg(Pid::from_raw(pgid as i32), None) == Err(Errno::ESRCH)
    })
    .await;
    wait_until(5, "the server was reaped (no zombie)", || {
        state(pgid).is_none()
    })
    .await;
}

/// Shuts the session down and checks that nothing of it is left.
pub async fn shutdown_clean(session: &Session) -> ShutdownReport {
    let pid = session.pid();
    let report = within(20, "shutdown", session.shutdown()).await;
    assert_group_gone(pid).await;
    report
}
