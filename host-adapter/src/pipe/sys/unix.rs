//! Unix: process groups and signals, and file modes.

use std::fs;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::ExitStatus;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::signal::unix::{SignalKind, signal};

use super::{Reached, Stop};
pub(crate) use stdio::{BlockingIn, RawOut};
use stdio::{DirectFile, QuietOut, SocketIn};

// The process table is read differently on each unix.
#[cfg(any(target_os = "linux", target_os = "android"))]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
mod stdio;

/// Makes the child `command` starts the leader of a new process group
/// (whose id is its pid).
pub(crate) fn lead_new_group(command: &mut tokio::process::Command) -> io::Result<()> {
    command.process_group(0);
    Ok(())
}

/// [`lead_new_group`] for a `std` command.
pub(crate) fn lead_new_group_std(command: &mut std::process::Command) -> io::Result<()> {
    command.process_group(0);
    Ok(())
}

/// A process group outlives drainpipe: the orphan guard (`supervise`) ends
/// it when drainpipe is killed.
pub(crate) const JOBS_DIE_WITH_OWNER: bool = false;

/// A process group, named by its leader's pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Group(Pid);

impl Group {
    /// The group led by the process `leader` (started by a command set up
    /// with [`lead_new_group`]).
    pub(crate) fn led_by(leader: u32) -> io::Result<Group> {
        let pid =
            i32::try_from(leader).map_err(|_| io::Error::other("pid does not fit a pid_t"))?;
        Ok(Group(Pid::from_raw(pid)))
    }

    /// The group `child` leads (it was started by a command set up with
    /// [`lead_new_group`]).
    pub(crate) fn adopt_tokio(child: &tokio::process::Child) -> io::Result<Group> {
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("child exited before it could be tracked"))?;
        Group::led_by(pid)
    }

    /// [`Group::adopt_tokio`] for a `std` child.
    pub(crate) fn adopt_std(child: &std::process::Child) -> io::Result<Group> {
        Group::led_by(child.id())
    }

    /// The leader's pid, which is also the group's id.
    pub(crate) fn leader(self) -> u32 {
        self.0.as_raw() as u32
    }

    /// Sends the step's signal to every member.
    pub(crate) fn stop(self, step: Stop) -> Reached {
        let signal = match step {
            Stop::Terminate => Signal::SIGTERM,
            Stop::Kill => Signal::SIGKILL,
        };
        reached(killpg(self.0, signal))
    }

    /// Whether any member is still there (zombies included).
    pub(crate) fn probe(self) -> Reached {
        reached(killpg(self.0, None))
    }
}

fn reached(result: nix::Result<()>) -> Reached {
    match result {
        Ok(()) => Reached::Members,
        Err(Errno::ESRCH) => Reached::Empty,
        Err(errno) => Reached::Failed(errno.into()),
    }
}

/// The signal that ended the process, if one did.
pub(crate) fn exit_signal(status: &ExitStatus) -> Option<i32> {
    status.signal()
}

/// The status of a process that exited with `code` (a remote session's
/// end, told as a child's).
#[cfg(feature = "remote")]
pub(crate) fn exit_status_of(code: i32) -> ExitStatus {
    std::os::unix::process::ExitStatusExt::from_raw((code & 0xff) << 8)
}

/// Ends the process `pid` now (SIGKILL).
pub(crate) fn kill_process(pid: u32) -> io::Result<()> {
    let pid = i32::try_from(pid).map_err(|_| io::Error::other("pid does not fit a pid_t"))?;
    Ok(kill(Pid::from_raw(pid), Signal::SIGKILL)?)
}

/// One process of [`process_table`].
pub(crate) struct ProcessEntry {
    /// Its parent's pid.
    pub(crate) parent: u32,
    /// Its process group's id.
    pub(crate) group: u32,
    /// When it started (clock ticks after boot on Linux, microseconds
    /// since the epoch on macOS): with the pid, names one process for good.
    pub(crate) started: u64,
}

// Every process now, by pid: from `/proc` on Linux, from libproc on macOS.
// Elsewhere it fails rather than answering with nothing, so the orphan
// guard says it cannot run instead of seeming to guard while it sees no
// process.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) use linux::process_table;
#[cfg(target_os = "macos")]
pub(crate) use macos::process_table;

#[cfg(target_os = "linux")]
pub(crate) use linux::wake_promptly;

/// Nothing to ask: no unix but Linux takes a per-thread scheduler slice.
#[cfg(not(target_os = "linux"))]
pub(crate) fn wake_promptly() {}

/// Fails: this unix has no process table drainpipe can read.
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos")))]
pub(crate) fn process_table() -> io::Result<std::collections::HashMap<u32, ProcessEntry>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no process table on this platform (the orphan guard reads /proc on Linux, libproc on macOS)",
    ))
}

/// Creates a directory only this user can open (mode 0700).
pub(crate) fn create_private_dir(path: &Path) -> io::Result<()> {
    fs::DirBuilder::new().mode(0o700).create(path)
}

/// Creates a new file only this user can read or write (mode 0600); fails
/// if it exists.
pub(crate) fn create_private_file(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Opens (creating if missing) a file only this user can read or write
/// (mode 0600), for an advisory lock; its content is never read.
#[cfg(feature = "remote")]
pub(crate) fn open_lock_file(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// Whether what `metadata` describes belongs to this process's user.
pub(crate) fn owned_by_me(metadata: &fs::Metadata) -> bool {
    metadata.uid() == nix::unistd::getuid().as_raw()
}

/// Whether a process `pid` exists (a signal-0 probe: one of another user
/// exists too).
pub(crate) fn process_exists(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    !matches!(kill(Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

/// This process's stdin. A pipe (what Python's and Rust's hosts give their
/// servers) or a stream socket (what Node's give) is read directly through
/// the runtime's reactor, a regular file in place; anything else (a
/// terminal, a device) through tokio's `stdin`, which reads on a blocking
/// thread, one hand-off per read. Needs a tokio runtime.
pub(crate) fn own_stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    if let Some(fd) = private_pipe(0, false)
        && let Ok(pipe) = tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
    {
        return Box::new(pipe);
    }
    if let Some(socket) = SocketIn::of(std::io::stdin().as_fd()) {
        return Box::new(socket);
    }
    if let Some(file) = DirectFile::of(std::io::stdin().as_fd(), false) {
        return Box::new(file);
    }
    Box::new(tokio::io::stdin())
}

/// This process's stdout: a pipe or a stream socket is written directly
/// through the reactor, a file or `/dev/null` in place, without the
/// blocking thread tokio's `stdout` hands every write to (a round trip per
/// write, which held the proxy to half the pipe's pace); a terminal keeps
/// that thread. With it, the descriptor as a [`RawOut`] when a write to it
/// never waits: the writer returned owns it.
pub(crate) fn own_stdout() -> (Box<dyn AsyncWrite + Unpin + Send>, Option<RawOut>) {
    // Opened non-blocking, a description of the proxy's own.
    if let Some(fd) = private_pipe(1, true) {
        let (pipe, raw) = QuietOut::pipe(fd);
        return (Box::new(pipe), Some(raw));
    }
    if let Some((socket, raw)) = QuietOut::of(std::io::stdout().as_fd()) {
        return (Box::new(socket), Some(raw));
    }
    if let Some(file) = DirectFile::of(std::io::stdout().as_fd(), true) {
        let raw = RawOut::of(file.as_fd());
        return (Box::new(file), raw);
    }
    (Box::new(tokio::io::stdout()), None)
}

/// This process's stdin for a reader on a thread of its own (see
/// [`BlockingIn`]): a pipe, a stream socket or a regular file; `None` for
/// anything else (a terminal), which [`own_stdin`] reads.
pub(crate) fn own_stdin_blocking() -> Option<BlockingIn> {
    use std::os::unix::fs::FileTypeExt;
    let stdin = fs::File::from(std::io::stdin().as_fd().try_clone_to_owned().ok()?);
    let kind = stdin.metadata().ok()?.file_type();
    (kind.is_fifo() || kind.is_socket() || kind.is_file()).then(|| BlockingIn::new(stdin.into()))
}

/// A child's stdout for a reader on a thread of its own: the same pipe
/// out of the reactor, blocking again (its description is the proxy's
/// alone); the stdout back if that cannot be done.
pub(crate) fn child_output(
    stdout: tokio::process::ChildStdout,
) -> Result<BlockingIn, tokio::process::ChildStdout> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let Ok(fd) = stdout.as_fd().try_clone_to_owned() else {
        return Err(stdout);
    };
    let Ok(flags) = fcntl(&fd, FcntlArg::F_GETFL) else {
        return Err(stdout);
    };
    let blocking = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
    if fcntl(&fd, FcntlArg::F_SETFL(blocking)).is_err() {
        return Err(stdout);
    }
    // The reactor's copy goes; the duplicate is the only one left.
    drop(stdout);
    Ok(BlockingIn::new(fd))
}

/// A child's stdin, written without the reactor unless a write must wait
/// (see [`QuietOut`]), and written without waiting beside its writer task
/// ([`RawOut`]); as it was if that cannot be done.
pub(crate) fn child_input(
    stdin: tokio::process::ChildStdin,
) -> (Box<dyn AsyncWrite + Unpin + Send>, Option<RawOut>) {
    // The reactor made the description non-blocking; it is the proxy's
    // alone (the child holds the other end).
    let quiet = RawOut::of(stdin.as_fd()).is_some_and(|raw| !raw.is_socket());
    let Some(fd) = quiet
        .then(|| stdin.as_fd().try_clone_to_owned().ok())
        .flatten()
    else {
        return (Box::new(stdin), None);
    };
    // The reactor's copy goes; the duplicate is the only one left.
    drop(stdin);
    let (pipe, raw) = QuietOut::pipe(fd);
    (Box::new(pipe), Some(raw))
}

/// If descriptor `fd` of this process is a pipe, the same pipe opened anew
/// (through `/proc/self/fd`, Linux), for reading or `write`: a description
/// of its own, which the reactor can make non-blocking without touching the
/// one shared with the host, a shell around the proxy, or stderr redirected
/// into the same pipe. Elsewhere `None` (macOS's `/dev/fd` would share the
/// description).
fn private_pipe(fd: i32, write: bool) -> Option<std::os::fd::OwnedFd> {
    use std::os::unix::fs::FileTypeExt;
    let path = format!("/proc/self/fd/{fd}");
    if !fs::metadata(&path).ok()?.file_type().is_fifo() {
        return None;
    }
    let file = fs::OpenOptions::new()
        .read(!write)
        .write(write)
        // Opening a pipe's end never waits for the other end this way.
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(&path)
        .ok()?;
    Some(file.into())
}

/// Calls `asked` each time this process is asked to stop: SIGTERM, SIGINT
/// (Ctrl+C) or SIGHUP (the terminal went away). Needs a tokio runtime.
pub(crate) fn on_stop_request(asked: impl Fn() + Clone + Send + 'static) -> io::Result<()> {
    for kind in [
        SignalKind::terminate(),
        SignalKind::interrupt(),
        SignalKind::hangup(),
    ] {
        let mut signals = signal(kind)?;
        let asked = asked.clone();
        tokio::spawn(async move {
            while signals.recv().await.is_some() {
                asked();
            }
        });
    }
    Ok(())
}
