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
