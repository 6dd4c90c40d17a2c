//! macOS: the process table from libproc (`proc_listallpids`, then
//! `proc_pidinfo` for each pid), since there is no `/proc`. libproc is
//! C, so the two calls are `unsafe`; each sits in its own small function,
//! with why it is sound, and the rest is safe code over what they return.

use std::collections::HashMap;
use std::io;
use std::mem;

use libc::c_int;

use super::ProcessEntry;

/// Every process this user may read now (a non-root user reads only its
/// own: the ones the guard can kill), from libproc.
pub(crate) fn process_table() -> io::Result<HashMap<u32, ProcessEntry>> {
    let mut all = HashMap::new();
    for pid in all_pids()? {
        // Gone since the list was taken, or another user's (the kernel
        // answers only for one's own): neither can be killed from here.
        // What such a process starts is then not seen as a descendant, so
        // a setuid program in the tree hides what it starts.
        let (Ok(key), Some(info)) = (u32::try_from(pid), bsd_info(pid)) else {
            continue;
        };
        all.insert(
            key,
            ProcessEntry {
                parent: info.pbi_ppid,
                group: info.pbi_pgid,
                // Microseconds since the epoch: no two processes with one
                // pid start in the same microsecond.
                started: info
                    .pbi_start_tvsec
                    .saturating_mul(1_000_000)
                    .saturating_add(info.pbi_start_tvusec),
            },
        );
    }
    Ok(all)
}

/// Every pid now. Processes can start between asking how many there are
/// and reading the list, and a full buffer may have cut the list short, so
/// the buffer has room to spare and a full one is read again, twice as big.
#[allow(unsafe_code)]
fn all_pids() -> io::Result<Vec<c_int>> {
    // SAFETY: a null buffer of size 0 only asks for the number of pids;
    // nothing is written.
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    // 0 is failure too (libproc says so for a denied call): this process
    // at least is running.
    let Ok(count @ 1..) = usize::try_from(count) else {
        return Err(io::Error::last_os_error());
    };
    let mut room = count + count / 4 + 64;
    loop {
        let mut pids: Vec<c_int> = vec![0; room];
        let bytes = room
            .checked_mul(mem::size_of::<c_int>())
            .and_then(|bytes| c_int::try_from(bytes).ok())
            .ok_or_else(|| io::Error::other("too many processes to list"))?;
        // SAFETY: `pids` is `room` initialised c_ints, `bytes` bytes in
        // all, and is not touched while the call runs; the kernel copies
        // at most `bytes` bytes into it and answers how many pids it wrote.
        let listed = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
        let Ok(listed @ 1..) = usize::try_from(listed) else {
            return Err(io::Error::last_os_error());
        };
        if listed < room {
            pids.truncate(listed);
            return Ok(pids);
        }
        room *= 2;
    }
}

/// What the kernel says of `pid` (`PROC_PIDTBSDINFO`), if it is still
/// there and this user may read it.
#[allow(unsafe_code)]
fn bsd_info(pid: c_int) -> Option<libc::proc_bsdinfo> {
    const SIZE: usize = mem::size_of::<libc::proc_bsdinfo>();
    // SAFETY: `proc_bsdinfo` is integers and arrays of `c_char` only, for
    // which all zero bytes is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { mem::zeroed() };
    // The third argument 0 leaves zombies out: they cannot be killed and
    // their children are already someone else's.
    // SAFETY: `info` is a live, writable `proc_bsdinfo`, `SIZE` bytes, the
    // size `PROC_PIDTBSDINFO` fills; the kernel writes at most the size it
    // is given.
    let written = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            std::ptr::from_mut(&mut info).cast(),
            SIZE as c_int,
        )
    };
    // It answers the bytes it wrote: fewer than the whole struct (0 or -1
    // on failure) means the process is gone or not this user's.
    (usize::try_from(written).is_ok_and(|written| written >= SIZE)).then_some(info)
}
