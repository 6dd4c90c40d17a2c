//! Windows: a Job Object per child.
//!
//! Each child is started suspended, put in a job of its own created with
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, and only then let run, so every
//! process it starts is born inside the job. The job's one handle is held
//! here, in a table keyed by the child's pid: when drainpipe ends, by any
//! means (a crash, `TerminateProcess`, SIGKILL of a wine process), the
//! handle closes and the system ends the whole tree. That is why no orphan
//! guard process is needed on Windows ([`JOBS_DIE_WITH_OWNER`]).
//!
//! Stopping: the polite step on Windows is closing the server's stdin and
//! waiting (the caller does both before it calls [`Group::stop`], as the
//! 2026-07-28 revision describes for Windows); a console process has no
//! signal to be asked with, so both [`Stop`] steps end the job
//! (`TerminateJobObject`).

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::windows::io::{AsRawHandle, OwnedHandle, RawHandle};
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{LazyLock, Mutex, MutexGuard};

use tokio::io::{AsyncRead, AsyncWrite};

use super::{Reached, Stop};

/// A job closes with drainpipe and takes its processes along: no guard
/// process has to outlive drainpipe to clean up.
pub(crate) const JOBS_DIE_WITH_OWNER: bool = true;

/// Exit code given to the processes of a terminated job (what `kill -9`
/// looks like to a Windows parent: 1, not 0).
const KILLED_EXIT_CODE: u32 = 1;

/// Every live child's job, by the child's pid. An entry leaves when its job
/// is found empty or is terminated; what is left closes when drainpipe does.
fn jobs() -> MutexGuard<'static, HashMap<u32, OwnedHandle>> {
    static JOBS: LazyLock<Mutex<HashMap<u32, OwnedHandle>>> = LazyLock::new(Mutex::default);
    // A panic elsewhere while the table was held leaves it whole (each
    // change is one insert or remove), so a poisoned lock is still usable.
    JOBS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts the child suspended: it runs only once [`Group::adopt_tokio`] (or
/// [`Group::adopt_std`]) has put it in its job, so nothing it starts can be
/// born outside the job.
pub(crate) fn lead_new_group(command: &mut tokio::process::Command) -> io::Result<()> {
    command.creation_flags(ffi::CREATE_SUSPENDED);
    Ok(())
}

/// [`lead_new_group`] for a `std` command.
pub(crate) fn lead_new_group_std(command: &mut std::process::Command) -> io::Result<()> {
    use std::os::windows::process::CommandExt;
    command.creation_flags(ffi::CREATE_SUSPENDED);
    Ok(())
}

/// A child's tree: the job held for the child's pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Group(u32);

impl Group {
    /// The tree of the process `leader`, as recorded when it was adopted. A
    /// pid that was never adopted names an empty group.
    pub(crate) fn led_by(leader: u32) -> io::Result<Group> {
        Ok(Group(leader))
    }

    /// Puts a child started by [`lead_new_group`] in a new job and lets it
    /// run. If that fails the child is ended: it must not run unguarded.
    pub(crate) fn adopt_tokio(child: &tokio::process::Child) -> io::Result<Group> {
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("child exited before it could be tracked"))?;
        let process = child
            .raw_handle()
            .ok_or_else(|| io::Error::other("child exited before it could be tracked"))?;
        adopt(pid, process)
    }

    /// [`Group::adopt_tokio`] for a `std` child.
    pub(crate) fn adopt_std(child: &std::process::Child) -> io::Result<Group> {
        adopt(child.id(), child.as_raw_handle())
    }

    /// The leader's pid.
    pub(crate) fn leader(self) -> u32 {
        self.0
    }

    /// Ends every process of the job (both steps: see the module docs) and
    /// lets the job go.
    pub(crate) fn stop(self, _step: Stop) -> Reached {
        let Some(job) = jobs().remove(&self.0) else {
            return Reached::Empty;
        };
        match active_processes(&job) {
            Ok(0) => Reached::Empty,
            Ok(_) => match ffi::terminate_job(&job, KILLED_EXIT_CODE) {
                Ok(()) => Reached::Members,
                Err(error) => Reached::Failed(error),
            },
            Err(error) => Reached::Failed(error),
        }
        // Dropping the handle closes the job; with KILL_ON_JOB_CLOSE that
        // alone would end what is left, so a failed terminate still ends it.
    }

    /// Whether any process of the job is still running. An empty job is let
    /// go: nothing can join it any more.
    pub(crate) fn probe(self) -> Reached {
        let mut jobs = jobs();
        let Some(job) = jobs.get(&self.0) else {
            return Reached::Empty;
        };
        match active_processes(job) {
            Ok(0) => {
                jobs.remove(&self.0);
                Reached::Empty
            }
            Ok(_) => Reached::Members,
            Err(error) => Reached::Failed(error),
        }
    }
}

fn adopt(pid: u32, process: RawHandle) -> io::Result<Group> {
    let job = ffi::create_job_killed_on_close()
        .and_then(|job| ffi::assign(&job, process).map(|()| job))
        .and_then(|job| ffi::resume_threads_of(pid).map(|()| job));
    match job {
        Ok(job) => {
            // A pid is reused only after its process is gone: an old entry
            // under it holds at most that tree's leftovers, which end here.
            jobs().insert(pid, job);
            Ok(Group(pid))
        }
        Err(error) => {
            let _ = ffi::terminate_process(process, KILLED_EXIT_CODE);
            Err(io::Error::new(
                error.kind(),
                format!("could not put the child in a job, so it was ended: {error}"),
            ))
        }
    }
}

fn active_processes(job: &OwnedHandle) -> io::Result<u32> {
    ffi::job_accounting(job).map(|info| info.ActiveProcesses)
}

/// No signals on Windows.
pub(crate) fn exit_signal(_status: &ExitStatus) -> Option<i32> {
    None
}

/// The status of a process that exited with `code` (a remote session's
/// end, told as a child's).
#[cfg(feature = "remote")]
pub(crate) fn exit_status_of(code: i32) -> ExitStatus {
    std::os::windows::process::ExitStatusExt::from_raw(code as u32)
}

/// Ends the process `pid` now (`TerminateProcess`).
pub(crate) fn kill_process(pid: u32) -> io::Result<()> {
    let process = ffi::open_process(pid, ffi::PROCESS_TERMINATE)?;
    ffi::terminate_process(process.as_raw_handle(), KILLED_EXIT_CODE)
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

/// Fails: no orphan guard runs on Windows, where jobs die with drainpipe
/// ([`JOBS_DIE_WITH_OWNER`]).
pub(crate) fn process_table() -> io::Result<HashMap<u32, ProcessEntry>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no orphan guard on Windows: each server's job ends with drainpipe",
    ))
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

/// Opens (creating if missing) a file for an advisory lock (private as its
/// directory is); its content is never read.
#[cfg(feature = "remote")]
pub(crate) fn open_lock_file(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Everything in the user's own temp dir is the user's.
pub(crate) fn owned_by_me(_metadata: &fs::Metadata) -> bool {
    true
}

/// Whether a process `pid` is still running. One this user may not open
/// is said to exist, so nothing is removed on its account.
pub(crate) fn process_exists(pid: u32) -> bool {
    match ffi::open_process(pid, ffi::PROCESS_QUERY_LIMITED_INFORMATION) {
        Ok(process) => ffi::still_active(&process),
        Err(error) => error.raw_os_error() != Some(ffi::ERROR_INVALID_PARAMETER as i32),
    }
}

/// This process's stdin, read on tokio's blocking thread (an anonymous
/// pipe on Windows cannot join the reactor). Reading and writing stay
/// apart: a read that waits never holds up [`own_stdout`].
pub(crate) fn own_stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    Box::new(tokio::io::stdin())
}

/// This process's stdout, written on a blocking thread of its own.
pub(crate) fn own_stdout() -> (Box<dyn AsyncWrite + Unpin + Send>, Option<RawOut>) {
    (Box::new(tokio::io::stdout()), None)
}

/// Never made on Windows: every pipe is read through the runtime.
pub(crate) enum BlockingIn {}

impl AsyncRead for BlockingIn {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        _: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match *self {}
    }
}

/// Never made on Windows: every pipe is written by its writer task alone.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RawOut {}

impl RawOut {
    pub(crate) fn try_write(&self, _: &[u8]) -> io::Result<usize> {
        match *self {}
    }
}

/// Windows: stdin is read through the runtime.
pub(crate) fn own_stdin_blocking() -> Option<BlockingIn> {
    None
}

/// Windows: a child's stdout stays on the runtime.
pub(crate) fn child_output(
    stdout: tokio::process::ChildStdout,
) -> Result<BlockingIn, tokio::process::ChildStdout> {
    Err(stdout)
}

/// Windows: a child's stdin is written by its writer task alone.
pub(crate) fn child_input(
    stdin: tokio::process::ChildStdin,
) -> (Box<dyn AsyncWrite + Unpin + Send>, Option<RawOut>) {
    (Box::new(stdin), None)
}

/// Nothing to ask: Windows takes no per-thread scheduler slice.
pub(crate) fn wake_promptly() {}

/// Calls `asked` each time this process is asked to stop: Ctrl+C,
/// Ctrl+Break, or its console closing. Needs a tokio runtime.
pub(crate) fn on_stop_request(asked: impl Fn() + Clone + Send + 'static) -> io::Result<()> {
    use tokio::signal::windows;
    let mut c = windows::ctrl_c()?;
    let mut brk = windows::ctrl_break()?;
    let mut close = windows::ctrl_close()?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                Some(()) = c.recv() => asked(),
                Some(()) = brk.recv() => asked(),
                Some(()) = close.recv() => asked(),
                else => break,
            }
        }
    });
    Ok(())
}

/// The Win32 calls, each wrapped so that its handles are owned and its
/// failures are `io::Error`s.
#[allow(unsafe_code)]
mod ffi {
    use std::io;
    use std::mem::{size_of, zeroed};
    use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

    use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE, STILL_ACTIVE};
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
    };
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
        JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
        QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
    };
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, OpenThread, PROCESS_ACCESS_RIGHTS, ResumeThread,
        THREAD_SUSPEND_RESUME, TerminateProcess,
    };

    pub(super) use windows_sys::Win32::Foundation::ERROR_INVALID_PARAMETER;
    pub(super) use windows_sys::Win32::System::Threading::{
        CREATE_SUSPENDED, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_TERMINATE,
    };

    fn check(ok: i32) -> io::Result<()> {
        if ok == 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Takes ownership of a handle a call returned, or its error.
    fn owned(handle: HANDLE) -> io::Result<OwnedHandle> {
        if handle.is_null() || handle == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the handle was just returned open by the system and is
        // owned by nobody else; OwnedHandle closes it once.
        Ok(unsafe { OwnedHandle::from_raw_handle(handle as RawHandle) })
    }

    /// A new anonymous job whose processes all end when its last handle
    /// closes.
    pub(super) fn create_job_killed_on_close() -> io::Result<OwnedHandle> {
        // SAFETY: null attributes and name are allowed (default security,
        // no name).
        let job = owned(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })?;
        // SAFETY: an all-zero JOBOBJECT_EXTENDED_LIMIT_INFORMATION is valid
        // (plain integers, no limits set).
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: `job` is open; the pointer and size describe `limits`,
        // which outlives the call.
        check(unsafe {
            SetInformationJobObject(
                job.as_raw_handle() as HANDLE,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        })?;
        Ok(job)
    }

    pub(super) fn assign(job: &OwnedHandle, process: RawHandle) -> io::Result<()> {
        // SAFETY: both handles are open for the duration of the call (the
        // process handle is owned by the caller's `Child`).
        check(unsafe { AssignProcessToJobObject(job.as_raw_handle() as HANDLE, process as HANDLE) })
    }

    /// Resumes every thread of process `pid` (a process created suspended
    /// has one). Fails if none was found.
    pub(super) fn resume_threads_of(pid: u32) -> io::Result<()> {
        // SAFETY: a thread snapshot of the whole system takes no pointer.
        let snapshot = owned(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) })?;
        // SAFETY: all-zero is a valid THREADENTRY32; dwSize is set below, as
        // Thread32First requires.
        let mut entry: THREADENTRY32 = unsafe { zeroed() };
        entry.dwSize = size_of::<THREADENTRY32>() as u32;
        let snapshot = snapshot.as_raw_handle() as HANDLE;
        let mut resumed = 0;
        // SAFETY: the snapshot is open and `entry` is a valid, sized entry.
        let mut more = unsafe { Thread32First(snapshot, &mut entry) } != 0;
        while more {
            if entry.th32OwnerProcessID == pid {
                // SAFETY: OpenThread takes plain values.
                let thread =
                    owned(unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) })?;
                // SAFETY: `thread` is open with THREAD_SUSPEND_RESUME.
                if unsafe { ResumeThread(thread.as_raw_handle() as HANDLE) } == u32::MAX {
                    return Err(io::Error::last_os_error());
                }
                resumed += 1;
            }
            // SAFETY: as for Thread32First.
            more = unsafe { Thread32Next(snapshot, &mut entry) } != 0;
        }
        if resumed == 0 {
            return Err(io::Error::other(
                "the suspended child has no thread to resume",
            ));
        }
        Ok(())
    }

    pub(super) fn job_accounting(
        job: &OwnedHandle,
    ) -> io::Result<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION> {
        // SAFETY: all-zero is a valid value of this plain-integer struct.
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { zeroed() };
        // SAFETY: `job` is open; the pointer and size describe `info`; the
        // returned-length pointer may be null.
        check(unsafe {
            QueryInformationJobObject(
                job.as_raw_handle() as HANDLE,
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        })?;
        Ok(info)
    }

    pub(super) fn terminate_job(job: &OwnedHandle, code: u32) -> io::Result<()> {
        // SAFETY: `job` is open (and was created with all access).
        check(unsafe { TerminateJobObject(job.as_raw_handle() as HANDLE, code) })
    }

    pub(super) fn terminate_process(process: RawHandle, code: u32) -> io::Result<()> {
        // SAFETY: the caller holds `process` open for the call.
        check(unsafe { TerminateProcess(process as HANDLE, code) })
    }

    pub(super) fn open_process(pid: u32, access: PROCESS_ACCESS_RIGHTS) -> io::Result<OwnedHandle> {
        // SAFETY: OpenProcess takes plain values.
        owned(unsafe { OpenProcess(access, 0, pid) })
    }

    /// Whether the process has not exited yet.
    pub(super) fn still_active(process: &OwnedHandle) -> bool {
        let mut code = 0u32;
        // SAFETY: `process` is open with query access; `code` outlives the
        // call.
        let ok = unsafe { GetExitCodeProcess(process.as_raw_handle() as HANDLE, &mut code) };
        ok == 0 || code == STILL_ACTIVE as u32
    }
}
