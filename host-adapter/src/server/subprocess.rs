//! A child process run under a budget: bounded output, bounded time, and a
//! cancellation that reaches every process it started.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use drainpipe_framer::budget::Capture;

use crate::pipe::sys::{self, Group, Reached, Stop};
use crate::session::{CaptureLimits, CaptureSnapshot};

/// The budget of one subprocess run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubprocessLimits {
    /// What is kept of stdout. Protects the tool's **memory** and the agent's
    /// **context**: the rest is counted and reported as dropped.
    pub stdout: CaptureLimits,
    /// What is kept of stderr; same protection.
    pub stderr: CaptureLimits,
    /// The longest the subprocess may run; `None` for no limit.
    pub timeout: Option<Duration>,
    /// After SIGTERM to the group, how long before SIGKILL.
    pub kill_grace: Duration,
    /// After the subprocess is gone, how long to keep draining pipes that a
    /// process outside its group may still hold open.
    pub drain_timeout: Duration,
}

impl Default for SubprocessLimits {
    /// 16 KiB head + tail per stream, no timeout, 500 ms grace, 1 s drain.
    fn default() -> Self {
        SubprocessLimits {
            stdout: CaptureLimits::default(),
            stderr: CaptureLimits::default(),
            timeout: None,
            kill_grace: Duration::from_millis(500),
            drain_timeout: Duration::from_secs(1),
        }
    }
}

/// Why a subprocess run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SubprocessEnding {
    /// It exited by itself.
    Exited,
    /// The cancellation token fired; the group was killed.
    Cancelled,
    /// [`SubprocessLimits::timeout`] passed; the group was killed.
    TimedOut,
}

/// What a run produced.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SubprocessReport {
    /// Why it ended.
    pub ending: SubprocessEnding,
    /// Its exit status, if it was reaped.
    pub status: Option<ExitStatus>,
    /// Bounded preview of stdout with the byte counts.
    pub stdout: CaptureSnapshot,
    /// Bounded preview of stderr with the byte counts.
    pub stderr: CaptureSnapshot,
    /// Processes of its group outlived it and were killed.
    pub leftovers_killed: bool,
    /// A pipe was still open after [`SubprocessLimits::drain_timeout`] (a
    /// process outside the group held it); the preview may miss its end.
    pub drain_timed_out: bool,
}

/// A spawned subprocess, leader of its own process group, whose output is
/// already being drained.
///
/// Dropping it (e.g. because the task running it was aborted) kills its
/// process group, so aborted work leaves no processes behind.
#[derive(Debug)]
pub struct BoundedSubprocess {
    /// Taken on drop, to be reaped in the background: an aborted run must
    /// leave no zombie behind.
    child: Option<Child>,
    group: GroupGuard,
    limits: SubprocessLimits,
    stdout: Drain,
    stderr: Drain,
}

type Drain = (Arc<Mutex<Capture>>, JoinHandle<()>);

impl BoundedSubprocess {
    /// Starts `command` with stdin from `/dev/null`, stdout and stderr piped
    /// and drained in the background. Needs a tokio runtime.
    pub fn spawn(command: impl Into<Command>, limits: SubprocessLimits) -> io::Result<Self> {
        let mut command = command.into();
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        sys::lead_new_group(&mut command)?;
        let mut child = command.spawn()?;
        let group = GroupGuard {
            group: Group::adopt_tokio(&child)?,
            armed: true,
        };
        let stdout = drain(
            child.stdout.take().expect("stdout was piped"),
            limits.stdout,
        );
        let stderr = drain(
            child.stderr.take().expect("stderr was piped"),
            limits.stderr,
        );
        Ok(BoundedSubprocess {
            child: Some(child),
            group,
            limits,
            stdout,
            stderr,
        })
    }

    /// The subprocess's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.group.group.leader()
    }

    /// Waits for the subprocess to exit, for `cancel`, or for the timeout;
    /// kills the group in the last two cases; then drains what is left.
    pub async fn run(mut self, cancel: CancellationToken) -> SubprocessReport {
        // Borrowed, not taken: if this future is dropped half-way (its task
        // aborted), `Drop` still finds the child to kill and reap.
        let child = self
            .child
            .as_mut()
            .expect("the child is there until run or drop");
        let timeout = async {
            match self.limits.timeout {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        let (ending, mut status) = tokio::select! {
            status = child.wait() => (SubprocessEnding::Exited, status.ok()),
            _ = cancel.cancelled() => (SubprocessEnding::Cancelled, None),
            _ = timeout => (SubprocessEnding::TimedOut, None),
        };
        if status.is_none() {
            self.group.signal(Stop::Terminate);
            status = match tokio::time::timeout(self.limits.kill_grace, child.wait()).await {
                Ok(status) => status.ok(),
                Err(_) => {
                    self.group.signal(Stop::Kill);
                    child.wait().await.ok()
                }
            };
        }
        self.child = None;
        // The leader is reaped only now, so the group id still names its group.
        let leftovers_killed = self.group.signal(Stop::Kill);
        let mut drain_timed_out = false;
        for task in [&mut self.stdout.1, &mut self.stderr.1] {
            if tokio::time::timeout(self.limits.drain_timeout, &mut *task)
                .await
                .is_err()
            {
                task.abort();
                drain_timed_out = true;
            }
        }
        if !self.group.alive() {
            self.group.armed = false;
        }
        SubprocessReport {
            ending,
            status,
            stdout: CaptureSnapshot::of(&self.stdout.0.lock().expect("capture")),
            stderr: CaptureSnapshot::of(&self.stderr.0.lock().expect("capture")),
            leftovers_killed,
            drain_timed_out,
        }
    }
}

impl Drop for BoundedSubprocess {
    fn drop(&mut self) {
        self.stdout.1.abort();
        self.stderr.1.abort();
        if let Some(mut child) = self.child.take() {
            // Dropped before `run` finished (its task was aborted): kill the
            // group now and reap the leader in the background.
            self.group.signal(Stop::Kill);
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = child.wait().await;
                });
            }
        }
    }
}

fn drain(mut pipe: impl AsyncRead + Unpin + Send + 'static, limits: CaptureLimits) -> Drain {
    let capture = Arc::new(Mutex::new(limits.capture()));
    let sink = capture.clone();
    let task = tokio::spawn(async move {
        let mut chunk = vec![0u8; 64 << 10];
        while let Ok(n) = pipe.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            sink.lock().expect("capture").write(&chunk[..n]);
        }
    });
    (capture, task)
}

/// Kills the process group on drop unless it was seen empty.
#[derive(Debug)]
struct GroupGuard {
    group: Group,
    armed: bool,
}

impl GroupGuard {
    /// Signals the group; false if it no longer exists.
    fn signal(&self, step: Stop) -> bool {
        match self.group.stop(step) {
            Reached::Members => true,
            Reached::Empty => false,
            Reached::Failed(error) => {
                tracing::warn!(%error, pgid = self.group.leader(), "could not signal a subprocess group");
                false
            }
        }
    }

    fn alive(&self) -> bool {
        matches!(self.group.probe(), Reached::Members)
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.signal(Stop::Kill);
        }
    }
}
