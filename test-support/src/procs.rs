//! The process table, read from `/proc`: states, parents, groups. Every
//! criterion ends by proving that nothing it started is left running or
//! unreaped.

use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use crate::wait_until;

/// What `/proc/<pid>/stat` says about a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The state letter: `R`, `S`, `D`, `T` (stopped), `Z` (zombie), …
    pub state: char,
    /// The parent's pid.
    pub ppid: u32,
    /// The process group id.
    pub pgid: u32,
}

/// The process `pid` as `/proc` sees it, or `None` if it is gone.
pub fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself contain spaces.
    let after = &text[text.rfind(')')? + 2..];
    let mut fields = after.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgid })
}

/// Every process alive right now, with its stat.
fn table() -> Vec<(u32, Stat)> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        if let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>()
            && let Some(stat) = stat(pid)
        {
            all.push((pid, stat));
        }
    }
    all
}

/// Every descendant of `root` (children, their children, …).
pub fn descendants(root: u32) -> Vec<u32> {
    let all = table();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            all.iter()
                .filter(|(_, s)| s.ppid == parent)
                .map(|(pid, _)| *pid),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// Every process in the group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    table()
        .into_iter()
        .filter(|(_, s)| s.pgid == pgid)
        .map(|(pid, _)| pid)
        .collect()
}

/// Whether any process of the group `pgid` is still there (zombies count).
pub fn group_alive(pgid: u32) -> bool {
    killpg(Pid::from_raw(pgid as i32), None) != Err(Errno::ESRCH)
}

/// No process left in the group `pgid`, and its leader reaped (no zombie),
/// within 5 s. On failure the group's members and states are in the message.
pub async fn assert_group_gone(pgid: u32) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while group_alive(pgid) || stat(pgid).is_some() {
        if std::time::Instant::now() > deadline {
            let members: Vec<_> = group_members(pgid)
                .into_iter()
                .map(|pid| (pid, stat(pid)))
                .collect();
            panic!(
                "process group {pgid} still has processes (orphans or an unreaped leader): {members:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// None of `pids` runs any more: each is gone, or a zombie whose parent is
/// not this process (so not ours to reap), within 5 s.
pub async fn assert_all_gone(pids: &[u32], what: &str) {
    let me = std::process::id();
    wait_until(5, what, || {
        pids.iter()
            .all(|&pid| stat(pid).is_none_or(|s| s.state == 'Z' && s.ppid != me))
    })
    .await;
}

/// Those of `pids` still running (not gone, not a zombie) after waiting up
/// to `wait` for them to end.
pub async fn still_running(pids: &[u32], wait: Duration) -> Vec<u32> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        let running: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|&pid| stat(pid).is_some_and(|s| s.state != 'Z'))
            .collect();
        if running.is_empty() || std::time::Instant::now() > deadline {
            return running;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The command line of `pid`, for failure messages.
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            String::from_utf8_lossy(&raw)
                .replace('\0', " ")
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// Kills one process (cleanup of what a failed test left behind).
pub fn kill_pid(pid: u32) {
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
}

/// No child of this test process is a zombie (we reap what we start).
pub fn assert_no_zombie_children() {
    let me = std::process::id();
    let zombies: Vec<u32> = table()
        .into_iter()
        .filter(|(_, s)| s.ppid == me && s.state == 'Z')
        .map(|(pid, _)| pid)
        .collect();
    assert!(
        zombies.is_empty(),
        "zombie children of the test: {zombies:?}"
    );
}

/// Sends `signal` to `pid`; panics if the process is not there.
pub fn signal(pid: u32, signal: Signal) {
    kill(Pid::from_raw(pid as i32), signal)
        .unwrap_or_else(|e| panic!("{signal} to {pid} failed: {e}"));
}

/// Kills the whole group `pgid` (cleanup after a failed assertion path).
pub fn kill_group(pgid: u32) {
    let _ = killpg(Pid::from_raw(pgid as i32), Signal::SIGKILL);
}

/// Samples the descendants of a process every 20 ms while it runs, so a
/// test knows every process a peer started (a proxy, its server, the
/// server's children), even those that exit or get re-parented later.
pub struct DescendantWatch {
    seen: std::sync::Arc<std::sync::Mutex<Vec<u32>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DescendantWatch {
    /// Starts sampling the descendants of `root`.
    pub fn start(root: u32) -> Self {
        // One sample now, so a watch stopped at once still saw what runs.
        let seen = std::sync::Arc::new(std::sync::Mutex::new(descendants(root)));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (seen, stop) = (seen.clone(), stop.clone());
            move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let now = descendants(root);
                    let mut seen = seen.lock().expect("seen");
                    for pid in now {
                        if !seen.contains(&pid) {
                            seen.push(pid);
                        }
                    }
                    drop(seen);
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        });
        DescendantWatch {
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops sampling; returns every descendant seen.
    pub fn stop(mut self) -> Vec<u32> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.seen.lock().expect("seen").clone()
    }
}
