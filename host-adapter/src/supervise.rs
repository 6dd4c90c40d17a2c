//! The guard against orphans: a small process of its own that outlives its
//! parent (the proxy) and, when the parent is gone, by SIGKILL included,
//! kills every process it saw in the parent's tree and their process groups
//! (the server's among them), `setsid`'d descendants included.
//!
//! Why a process: nothing in a SIGKILLed process runs, and
//! `PR_SET_PDEATHSIG` must be set in the child between fork and exec, which
//! this crate does not do (it would take `unsafe`); it would also reach the
//! server alone, not its tree. How it knows: it holds the read end of a pipe
//! whose only writer is the parent; end of file means the parent is gone.
//! What it sees: every 100 ms it walks the process table (`/proc` on
//! Linux, libproc on macOS) for the parent's descendants and the members of
//! the groups they lead, remembering each by pid and start time (so a
//! reused pid is never killed); at the end it also takes the descendants of
//! what it remembered, then kills. A process started and detached (`setsid`
//! under a parent that already exited) in the last 100 ms before the parent
//! died can escape; one still under its parent cannot. Where there is no
//! table it can read (other unixes, Windows), it exits at once.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::pipe::sys::{self, Group, ProcessEntry, Stop};

/// How often the tree is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Starts `exe supervise --parent <this process>` (`exe` is the `drainpipe`
/// binary) in its own process group. Keep the returned child: its stdin is
/// the pipe, and dropping it, or this process ending in any way, tells the
/// supervisor to clean up.
///
/// `None` where no guard is needed: on Windows each server's Job Object
/// ends its tree when this process ends, however it ends.
pub fn spawn(exe: &Path) -> io::Result<Option<Child>> {
    if sys::JOBS_DIE_WITH_OWNER {
        return Ok(None);
    }
    let mut command = Command::new(exe);
    command
        .args(["supervise", "--parent"])
        .arg(std::process::id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    sys::lead_new_group_std(&mut command)?;
    let child = command.spawn()?;
    Group::adopt_std(&child)?;
    Ok(Some(child))
}

/// Ends the process `pid` now (SIGKILL; `TerminateProcess` on Windows): for
/// a checker that found an orphan it started.
pub fn kill_process(pid: u32) -> io::Result<()> {
    sys::kill_process(pid)
}

/// Starts one supervisor for this whole process, the first time it is
/// called (later calls do nothing): from then on, when this process ends,
/// by SIGKILL included, every process it started and their trees are
/// killed. For a host that runs sessions in its own process; `exe` is a
/// `drainpipe` binary.
pub fn guard_this_process(exe: &Path) -> io::Result<()> {
    static GUARD: std::sync::OnceLock<std::sync::Mutex<Option<Child>>> = std::sync::OnceLock::new();
    let guard = GUARD.get_or_init(|| std::sync::Mutex::new(None));
    let mut slot = guard.lock().expect("supervisor slot");
    if slot.is_none() {
        // Kept for the life of the process: its end closes the pipe.
        *slot = spawn(exe)?;
    }
    Ok(())
}

/// The supervisor's body (`drainpipe supervise`): watches until its stdin
/// ends, then kills everything it saw under `parent`, and their groups.
pub fn run(parent: u32) {
    if let Err(error) = sys::process_table() {
        // Nothing could be seen, so nothing would be killed: say so.
        tracing::error!(%error, "the orphan guard cannot run here");
        return;
    }
    let (ended, wait) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stdin = io::stdin();
        let mut buf = [0u8; 64];
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        let _ = ended.send(());
    });
    let me = std::process::id();
    let mut seen: HashMap<u32, u64> = HashMap::new();
    loop {
        remember(&[parent], me, &mut seen);
        match wait.recv_timeout(LOOK_EVERY) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => break,
        }
    }
    // The parent is gone: its children now hang elsewhere, but the tree
    // below them is intact; take what was born since the last look.
    let roots: Vec<u32> = seen.keys().copied().collect();
    remember(&roots, me, &mut seen);
    let now = processes();
    for (pid, started) in &seen {
        let Some(p) = now.get(pid).filter(|p| p.started == *started) else {
            continue;
        };
        if p.group == *pid
            && let Ok(group) = Group::led_by(*pid)
        {
            let _ = group.stop(Stop::Kill);
        }
        let _ = sys::kill_process(*pid);
    }
}

/// Every process now; empty where the table cannot be read.
fn processes() -> HashMap<u32, ProcessEntry> {
    sys::process_table().unwrap_or_default()
}

/// Adds to `seen` every descendant of `roots` and every member of a group
/// one of them leads (not `me`), each with its start time.
fn remember(roots: &[u32], me: u32, seen: &mut HashMap<u32, u64>) {
    let all = processes();
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, p) in &all {
        children.entry(p.parent).or_default().push(pid);
    }
    let mut stack: Vec<u32> = roots.to_vec();
    let mut visited: HashSet<u32> = HashSet::new();
    while let Some(pid) = stack.pop() {
        if !visited.insert(pid) {
            continue;
        }
        if let Some(kids) = children.get(&pid) {
            stack.extend(kids);
        }
    }
    visited.retain(|pid| !roots.contains(pid) && *pid != me);
    let leaders: HashSet<u32> = visited
        .iter()
        .copied()
        .chain(seen.keys().copied())
        .filter(|pid| all.get(pid).is_some_and(|p| p.group == *pid))
        .collect();
    for (&pid, p) in &all {
        if pid != me && (visited.contains(&pid) || leaders.contains(&p.group)) {
            seen.entry(pid).or_insert(p.started);
        }
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "macos")))]
mod tests {
    use super::*;

    /// The guard trusts the table's parent links, groups and start times:
    /// this test process must be in it with its real parent and group, and
    /// the same start time on a second look.
    #[test]
    fn the_table_names_this_process() {
        let me = std::process::id();
        let first = sys::process_table().expect("a process table");
        let entry = first.get(&me).expect("this process in the table");
        assert_eq!(entry.parent, nix::unistd::getppid().as_raw() as u32);
        assert_eq!(entry.group, nix::unistd::getpgrp().as_raw() as u32);
        let again = sys::process_table().expect("a process table");
        assert_eq!(again.get(&me).map(|p| p.started), Some(entry.started));
    }
}
