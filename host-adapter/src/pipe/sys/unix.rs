//! Unix: process groups and signals, and file modes.

use std::collections::HashMap;
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
    /// Clock ticks after boot: with the pid, names one process for good.
    pub(crate) started: u64,
}

/// Every process now, from `/proc/<pid>/stat` (Linux). Empty where `/proc`
/// is not there (macOS), so the orphan guard sees nothing to kill there.
pub(crate) fn process_table() -> io::Result<HashMap<u32, ProcessEntry>> {
    let mut all = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Ok(all);
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`: the name may hold spaces and
        // parentheses, so fields are counted after the last `)`.
        let Some(after) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        let number = |at: usize| fields.get(at).and_then(|f| f.parse::<u64>().ok());
        if let (Some(parent), Some(group), Some(started)) = (number(1), number(2), number(19)) {
            all.insert(
                pid,
                ProcessEntry {
                    parent: parent as u32,
                    group: group as u32,
                    started,
                },
            );
        }
    }
    Ok(all)
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
