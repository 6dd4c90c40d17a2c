//! What differs between platform families, behind one small interface: the
//! rest of the crate calls these and never says `cfg(unix)`.
//!
//! - Spawning a child as the leader of its own group (a process group on
//!   unix, a Job Object on Windows), so one call reaches it and everything
//!   it started: [`lead_new_group`] before the spawn, `Group::adopt_*`
//!   right after it.
//! - Stopping a group in steps ([`Stop::Terminate`], then [`Stop::Kill`])
//!   and asking whether anything of it is left.
//! - How an exit status names the signal that ended a process.
//! - The process table the orphan guard (`supervise`) walks.
//! - Files and directories only this user can open (the spill store), who
//!   owns a file, and whether a process exists.
//!
//! - This process's own stdin and stdout (the host's end of the proxy),
//!   and the requests to stop it (signals, console events).
//! - Reading a pipe in blocking calls on a thread of its own
//!   ([`BlockingIn`]) and writing one without waiting beside the task that
//!   owns it ([`RawOut`]): unix only; on Windows neither is ever made.
//! - Whether trees die with drainpipe by themselves
//!   ([`JOBS_DIE_WITH_OWNER`]), or need the orphan guard.
//!
//! `unix.rs` serves Linux and macOS, `windows.rs` Windows.

use std::io;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

pub(crate) use imp::JOBS_DIE_WITH_OWNER;
#[cfg(feature = "remote")]
pub(crate) use imp::exit_status_of;
#[cfg(feature = "remote")]
pub(crate) use imp::open_lock_file;
pub(crate) use imp::{BlockingIn, RawOut, child_input, child_output, own_stdin_blocking};
pub(crate) use imp::{Group, exit_signal, kill_process, lead_new_group, lead_new_group_std};
pub(crate) use imp::{ProcessEntry, process_table};
pub(crate) use imp::{create_private_dir, create_private_file, owned_by_me, process_exists};
pub(crate) use imp::{on_stop_request, own_stdin, own_stdout, wake_promptly};

/// One step of stopping a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Asks every member to end (SIGTERM): a server may still clean up.
    /// Windows has no such request for a console process (its polite step
    /// is the closed stdin before this): there it ends the job.
    Terminate,
    /// Ends every member now (SIGKILL, `TerminateJobObject`); nothing can
    /// refuse it.
    Kill,
}

/// What a call on a [`Group`] found.
#[derive(Debug)]
pub(crate) enum Reached {
    /// At least one member was there to receive it.
    Members,
    /// No process is left in the group (the id may already be reused once
    /// the leader was reaped: the caller stops using it then).
    Empty,
    /// The call failed for another reason (permissions, or a platform that
    /// cannot do it yet).
    Failed(io::Error),
}
