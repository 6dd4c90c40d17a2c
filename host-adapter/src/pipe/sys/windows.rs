//! Windows: not guarded yet. Every operation that would have to stop a
//! process tree fails with [`io::ErrorKind::Unsupported`], so a session, the
//! proxy or a bounded subprocess refuses to start instead of running a
//! server it could not stop. The plan (issue #32): a Job Object with
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` per child (the tree dies with the
//! handle, which also makes the orphan guard unnecessary), stopped in steps
//! by closing stdin, waiting, then `TerminateJobObject`.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::Path;
use std::process::ExitStatus;

use super::{Reached, Stop};

fn unsupported(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("drainpipe cannot {what} on Windows yet (issue #32)"),
    )
}

/// Refuses: without a job to hold the child's tree, it could not be
/// stopped.
pub(crate) fn lead_new_group(_command: &mut tokio::process::Command) -> io::Result<()> {
    Err(unsupported("guard a child process tree"))
}

/// [`lead_new_group`] for a `std` command.
pub(crate) fn lead_new_group_std(_command: &mut std::process::Command) -> io::Result<()> {
    Err(unsupported("guard a child process tree"))
}

/// A child's tree, named by the child's pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Group(u32);

impl Group {
    /// The tree of the process `leader`.
    pub(crate) fn led_by(leader: u32) -> io::Result<Group> {
        Ok(Group(leader))
    }

    /// The leader's pid.
    pub(crate) fn leader(self) -> u32 {
        self.0
    }

    /// Fails: stopping a tree needs its job.
    pub(crate) fn stop(self, _step: Stop) -> Reached {
        Reached::Failed(unsupported("stop a process tree"))
    }

    /// Fails: seeing a tree needs its job.
    pub(crate) fn probe(self) -> Reached {
        Reached::Failed(unsupported("watch a process tree"))
    }
}

/// No signals on Windows.
pub(crate) fn exit_signal(_status: &ExitStatus) -> Option<i32> {
    None
}

/// Fails (`TerminateProcess` needs a handle this layer does not hold yet).
pub(crate) fn kill_process(_pid: u32) -> io::Result<()> {
    Err(unsupported("kill a process by id"))
}

/// One process of [`process_table`].
pub(crate) struct ProcessEntry {
    /// Its parent's pid.
    pub(crate) parent: u32,
    /// Its group (the pid itself: Windows has no process groups).
    pub(crate) group: u32,
    /// When it started, so a reused pid is not mistaken for it.
    pub(crate) started: u64,
}

/// Fails: the orphan guard is not needed once children live in jobs that
/// die with drainpipe, and is not written for Windows.
pub(crate) fn process_table() -> io::Result<HashMap<u32, ProcessEntry>> {
    Err(unsupported("walk the process table"))
}

/// Creates a directory. Under the user's temp dir (`%TEMP%`, in the
/// user's profile) it inherits an ACL that lets only the user (and the
/// system and administrators) open it.
pub(crate) fn create_private_dir(path: &Path) -> io::Result<()> {
    fs::create_dir(path)
}

/// Creates a new file (private as its directory is, see
/// [`create_private_dir`]); fails if it exists.
pub(crate) fn create_private_file(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

/// Everything in the user's own temp dir is the user's.
pub(crate) fn owned_by_me(_metadata: &fs::Metadata) -> bool {
    true
}

/// Not known yet: said to exist, so nothing is removed on its account.
pub(crate) fn process_exists(_pid: u32) -> bool {
    true
}
