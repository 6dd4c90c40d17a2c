//! Unix: process groups and signals, and file modes.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::ExitStatus;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::{Reached, Stop};

// The process table is read differently on each unix.
#[cfg(any(target_os = "linux", target_os = "android"))]
mod linux;
#[cfg(target_os = "macos")]
mod macos;

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
