//! The server process: spawned as the leader of its own process group, so
//! one signal reaches it and every child it started that stayed in the group.
//!
//! A separate task owns the [`Child`] and reaps it; everyone else sees the
//! exit status through a `watch` channel and signals the group by id.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use crate::pipe::sys::{self, Group, Reached, Stop};

/// How the server process ended when it was stopped
/// ([`Session::shutdown`](crate::session::Session::shutdown), the proxy's
/// end).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Ending {
    /// It exited after stdin was closed (or earlier).
    Exited,
    /// It exited after SIGTERM to its group (on Windows: its job ended).
    Terminated,
    /// It had to be killed with SIGKILL.
    Killed,
    /// It could not be reaped within the timeouts.
    Unreaped,
}

/// How long each step of stopping a server may take
/// ([`Session::shutdown`](crate::session::Session::shutdown), the proxy's end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownTimeouts {
    /// After stdin is closed, how long the server gets to exit on its own.
    pub after_close: Duration,
    /// After SIGTERM to the group, how long before SIGKILL (on Windows the
    /// job already ended at the first step: this wait is for the reap).
    pub after_term: Duration,
    /// After SIGKILL, how long to wait for the reap and for stdout/stderr to
    /// reach end of file (a process outside the group could hold them open).
    pub after_kill: Duration,
}

impl Default for ShutdownTimeouts {
    /// 2 s, 1 s, 2 s.
    fn default() -> Self {
        ShutdownTimeouts {
            after_close: Duration::from_secs(2),
            after_term: Duration::from_secs(1),
            after_kill: Duration::from_secs(2),
        }
    }
}

impl ShutdownTimeouts {
    /// The longest an ending can take, every step waited out.
    pub fn total(&self) -> Duration {
        self.after_close + self.after_term + self.after_kill
    }
}

/// What a fresh spawn hands out: the control handle and the three pipes.
pub(crate) struct Spawned {
    pub(crate) control: ProcessControl,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
}

/// Signals and exit status of a spawned server's process group.
#[derive(Debug)]
pub(crate) struct ProcessControl {
    group: Group,
    exit: watch::Receiver<Option<ExitStatus>>,
    /// Set once the leader is reaped and the group was found empty: from then
    /// on the group id may be reused by an unrelated process, so the session
    /// must never signal it again.
    group_gone: AtomicBool,
}

/// Starts `command` with three pipes as the leader of a new process group and
/// a task that reaps it.
pub(crate) fn spawn(mut command: Command) -> io::Result<Spawned> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    sys::lead_new_group(&mut command)?;
    let mut child = command.spawn()?;
    let group = Group::adopt_tokio(&child)?;
    let stdin = child.stdin.take().expect("stdin was piped");
    let stdout = child.stdout.take().expect("stdout was piped");
    let stderr = child.stderr.take().expect("stderr was piped");
    let (tx, exit) = watch::channel(None);
    tokio::spawn(reap(child, tx));
    let control = ProcessControl {
        group,
        exit,
        group_gone: AtomicBool::new(false),
    };
    Ok(Spawned {
        control,
        stdin,
        stdout,
        stderr,
    })
}

async fn reap(mut child: Child, tx: watch::Sender<Option<ExitStatus>>) {
    match child.wait().await {
        Ok(status) => {
            let _ = tx.send(Some(status));
        }
        Err(error) => tracing::error!(%error, "could not wait for the server process"),
    }
}

impl ProcessControl {
    /// The leader's pid, which is also the process group id.
    pub(crate) fn pid(&self) -> u32 {
        self.group.leader()
    }

    /// The exit status, once the leader was reaped.
    pub(crate) fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Waits up to `limit` for the leader to exit.
    pub(crate) async fn wait_exit(&self, limit: Duration) -> Option<ExitStatus> {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => *status,
            _ => self.exit_status(),
        }
    }

    /// Takes `step` against the whole group. Returns false when nobody was
    /// left to receive it.
    pub(crate) fn signal_group(&self, step: Stop) -> bool {
        if self.group_gone.load(Ordering::Acquire) {
            return false;
        }
        match self.group.stop(step) {
            Reached::Members => true,
            Reached::Empty => {
                self.mark_gone_if_reaped();
                false
            }
            Reached::Failed(error) => {
                tracing::warn!(%error, pgid = self.group.leader(), "could not signal the server's process group");
                false
            }
        }
    }

    /// Whether any process of the group is still there (zombies included).
    pub(crate) fn group_alive(&self) -> bool {
        if self.group_gone.load(Ordering::Acquire) {
            return false;
        }
        match self.group.probe() {
            Reached::Members => true,
            Reached::Empty | Reached::Failed(_) => {
                self.mark_gone_if_reaped();
                false
            }
        }
    }

    fn mark_gone_if_reaped(&self) {
        // While the leader is unreaped its pid pins the group id; only after
        // reaping can the id be recycled.
        if self.exit_status().is_some() {
            self.group_gone.store(true, Ordering::Release);
        }
    }
}

/// What [`ProcessControl::stop`] did.
pub(crate) struct Stopped {
    pub(crate) status: Option<ExitStatus>,
    pub(crate) ending: Ending,
    /// SIGKILL was needed for the leader.
    pub(crate) killed: bool,
    pub(crate) leftovers_killed: bool,
}

impl ProcessControl {
    /// Waits for the server to exit (the caller has closed its stdin), then
    /// escalates: SIGTERM to the group, SIGKILL to the group; each step
    /// bounded by `timeouts`. Then kills whatever the leader left in its
    /// group and waits (bounded) until the group is empty.
    pub(crate) async fn stop(&self, timeouts: ShutdownTimeouts) -> Stopped {
        let mut ending = Ending::Exited;
        let mut killed = false;
        let mut status = self.wait_exit(timeouts.after_close).await;
        if status.is_none() {
            ending = Ending::Terminated;
            self.signal_group(Stop::Terminate);
            status = self.wait_exit(timeouts.after_term).await;
        }
        if status.is_none() {
            ending = Ending::Killed;
            killed = self.signal_group(Stop::Kill);
            status = self.wait_exit(timeouts.after_kill).await;
        }
        if status.is_none() {
            ending = Ending::Unreaped;
        }
        // The leader is gone; anything left in its group is an orphan in the making.
        let leftovers_killed = self.group_alive() && self.signal_group(Stop::Kill);
        if leftovers_killed {
            // Bounded: members reparented to an init that never reaps would
            // keep the group id alive as zombies.
            let deadline = tokio::time::Instant::now() + timeouts.after_kill;
            while self.group_alive() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        Stopped {
            status,
            ending,
            killed,
            leftovers_killed,
        }
    }
}

impl Drop for ProcessControl {
    fn drop(&mut self) {
        // The last handle went away without a shutdown: the server and its
        // group must not outlive the session.
        if self.exit_status().is_none() || self.group_alive() {
            self.signal_group(Stop::Kill);
        }
    }
}
