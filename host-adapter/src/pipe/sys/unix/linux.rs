//! Linux: the process table from `/proc`.

use std::collections::HashMap;
use std::io;

use super::ProcessEntry;

/// Every process now, from `/proc/<pid>/stat`. Empty where `/proc` is not
/// mounted, so the orphan guard sees nothing to kill there.
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

/// The scheduler slice asked for each of the proxy's own threads: the
/// shortest the kernel takes.
const SLICE_NS: u64 = 100_000;

/// Asks the scheduler to run the calling thread soon after each wake-up,
/// not at the end of a busier thread's slice: an EEVDF slice of
/// [`SLICE_NS`] (`sched_setattr` with `sched_runtime`, Linux 6.12 and
/// later; earlier kernels ignore it). The proxy's threads wake for a few
/// microseconds of work at a time, on a path every message waits for:
/// with the host and the server busy on every core (a garbage collector's
/// threads, a build), a woken proxy used to wait out another thread's
/// slice (0.75 ms and more) before it could pass a message on, which made
/// a call through it slow where the same call straight was not. Its share
/// of the processor is unchanged (the weight, the nice value, stays); only
/// when it runs changes. Only a thread under the normal policy is
/// touched, and nothing else about it. Best effort: a refusal changes
/// nothing else.
pub(crate) fn wake_promptly() {
    let mut attr = sched_attr();
    let size = std::mem::size_of::<libc::sched_attr>() as libc::c_uint;
    // SAFETY: `sched_getattr` writes at most `size` bytes into `attr`, a
    // `sched_attr` of that size owned by this frame; 0 names this thread.
    #[allow(unsafe_code)]
    let got = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut attr, size, 0) };
    if got != 0 || attr.sched_policy != libc::SCHED_OTHER as u32 {
        return;
    }
    // The thread's own nice value and flags are given back as they were.
    attr.size = size;
    attr.sched_runtime = SLICE_NS;
    // SAFETY: `sched_setattr` only reads `attr`, whose `size` says how much.
    #[allow(unsafe_code)]
    let set = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr, 0) };
    if set != 0 {
        tracing::debug!(error = %io::Error::last_os_error(), "no short scheduler slice");
    }
}

/// A zeroed `sched_attr`, the form `sched_getattr` fills.
fn sched_attr() -> libc::sched_attr {
    libc::sched_attr {
        size: 0,
        sched_policy: 0,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: 0,
        sched_deadline: 0,
        sched_period: 0,
    }
}
