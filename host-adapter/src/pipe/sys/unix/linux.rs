//! Linux: the process table from `/proc`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;
use std::io::Read;

use super::ProcessEntry;

/// Every process now, from `/proc/<pid>/stat`. Empty where `/proc` is not
/// mounted, so the orphan guard sees nothing to kill there.
///
/// The guard walks this every 100 ms for as long as the proxy runs, on a
/// machine that may run one proxy per MCP server: each `stat` is read with
/// one `read` into a buffer kept for the walk (it fits: a name of at most
/// 64 bytes and 52 numbers), not grown from a few bytes as
/// `read_to_string` would, and parsed as bytes, so a process whose name is
/// not UTF-8 is seen too.
pub(crate) fn process_table() -> io::Result<HashMap<u32, ProcessEntry>> {
    let mut all = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Ok(all);
    };
    let mut buf = vec![0u8; 4096];
    let mut path = String::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        path.clear();
        let _ = write!(path, "/proc/{pid}/stat");
        let Some(stat) = read_whole(&path, &mut buf) else {
            continue;
        };
        if let Some(process) = parse_stat(stat) {
            all.insert(pid, process);
        }
    }
    Ok(all)
}

/// The file at `path`, read into `buf` (grown when a read fills it).
fn read_whole<'a>(path: &str, buf: &'a mut Vec<u8>) -> Option<&'a [u8]> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match file.read(&mut buf[filled..]) {
            Ok(0) => return Some(&buf[..filled]),
            Ok(n) => {
                filled += n;
                // A proc file that did not fill the buffer gave all it had:
                // the read that would say so is saved.
                if filled < buf.len() {
                    return Some(&buf[..filled]);
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// `pid (comm) state ppid pgrp …`: the name may hold spaces and
/// parentheses, so fields are counted after the last `)`.
fn parse_stat(stat: &[u8]) -> Option<ProcessEntry> {
    let after = &stat[stat.iter().rposition(|&b| b == b')')? + 1..];
    let mut fields = after
        .split(|b| b.is_ascii_whitespace())
        .filter(|field| !field.is_empty());
    let mut number =
        |skip: usize| -> Option<u64> { std::str::from_utf8(fields.nth(skip)?).ok()?.parse().ok() };
    // Fields after the name: 0 state, 1 ppid, 2 pgrp, … 19 starttime.
    let parent = number(1)?;
    let group = number(0)?;
    let started = number(16)?;
    Some(ProcessEntry {
        parent: parent as u32,
        group: group as u32,
        started,
    })
}

/// The scheduler slice asked for each of the proxy's own threads: the
/// shortest the kernel takes.
#[cfg(target_os = "linux")]
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
#[cfg(target_os = "linux")]
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
#[cfg(target_os = "linux")]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_after_the_last_parenthesis_of_the_name() {
        // A name with spaces, parentheses and a byte that is not UTF-8.
        let mut line = b"4242 (a) b (\xff) ".to_vec();
        line.extend_from_slice(
            b"S 17 4242 4242 0 -1 4194560 10 0 0 0 1 2 0 0 20 0 1 0 987654 5689344 300\n",
        );
        let entry = parse_stat(&line).expect("an entry");
        assert_eq!(
            (entry.parent, entry.group, entry.started),
            (17, 4242, 987654)
        );
        assert!(parse_stat(b"4242 (cut short) S 17").is_none());
    }
}
