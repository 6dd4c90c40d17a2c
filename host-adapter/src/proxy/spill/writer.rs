//! The writer thread: decodes each spilled value's raw bytes (JSON string
//! escapes, then base64 for binary) into its file, within the quota.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use drainpipe_framer::budget::{SpillKind, Unescaper};

use super::{Command, FileState, Shared, State};
use crate::pipe::sys;

/// A file being written.
struct Open {
    out: BufWriter<File>,
    unescape: Unescaper,
    /// Decoded text not yet written (reused).
    text: Vec<u8>,
    /// Binary: base64 characters held until a group of four is complete.
    carry: Vec<u8>,
    binary: bool,
    /// The rest of a cut array: its bytes are JSON as reported, written
    /// as they come.
    json: bool,
    len: u64,
}

/// Runs until every sender is gone.
pub(super) fn run(shared: &Shared, commands: Receiver<Command>) {
    let mut open: HashMap<u64, Open> = HashMap::new();
    for command in commands {
        match command {
            Command::Open { file, kind } => {
                if shared.closed.load(Ordering::SeqCst) {
                    fail(shared, file, "the proxy is ending");
                    continue;
                }
                let created = sys::create_private_file(&shared.path(file));
                match created {
                    Ok(out) => {
                        open.insert(
                            file,
                            Open {
                                out: BufWriter::with_capacity(256 << 10, out),
                                unescape: Unescaper::new(),
                                text: Vec::new(),
                                carry: Vec::new(),
                                binary: kind == SpillKind::Binary,
                                json: kind.first().is_some(),
                                len: 0,
                            },
                        );
                    }
                    Err(error) => {
                        fail(shared, file, &format!("could not create its file: {error}"))
                    }
                }
            }
            Command::Raw { file, bytes } => {
                let Some(entry) = open.get_mut(&file) else {
                    continue;
                };
                if let Err(why) = write(shared, file, entry, &bytes, false) {
                    open.remove(&file);
                    fail(shared, file, &why);
                }
            }
            Command::End { file } => {
                let Some(mut entry) = open.remove(&file) else {
                    continue;
                };
                match write(shared, file, &mut entry, &[], true).and_then(|()| {
                    entry
                        .out
                        .flush()
                        .map_err(|e| format!("could not write its file: {e}"))
                }) {
                    Ok(()) => {
                        let mut state = shared.state();
                        if let Some(f) = state.files.get_mut(&file) {
                            f.state = FileState::Complete { len: entry.len };
                        }
                        drop(state);
                        shared.changed.notify_all();
                    }
                    Err(why) => fail(shared, file, &why),
                }
            }
            Command::Discard { file } => {
                open.remove(&file);
                let mut state = shared.state();
                remove(shared, &mut state, file);
                state.files.remove(&file);
                state.order.retain(|&f| f != file);
                drop(state);
                shared.changed.notify_all();
            }
        }
    }
}

/// Decodes `raw` (and at `last`, what is held) into the file.
fn write(
    shared: &Shared,
    file: u64,
    entry: &mut Open,
    raw: &[u8],
    last: bool,
) -> Result<(), String> {
    if entry.json {
        return append(shared, file, &mut entry.out, &mut entry.len, raw);
    }
    entry.text.clear();
    entry
        .unescape
        .feed(raw, &mut entry.text)
        .map_err(|e| format!("its text does not decode: {e}"))?;
    if last {
        let unescape = std::mem::take(&mut entry.unescape);
        unescape
            .finish(&mut entry.text)
            .map_err(|e| format!("its text does not decode: {e}"))?;
    }
    let decoded: Vec<u8>;
    let bytes: &[u8] = if entry.binary {
        // MIME-style base64 may carry line breaks: not part of the data.
        entry
            .carry
            .extend(entry.text.iter().filter(|b| !b.is_ascii_whitespace()));
        let whole = if last {
            entry.carry.len()
        } else {
            entry.carry.len() / 4 * 4
        };
        decoded = STANDARD
            .decode(&entry.carry[..whole])
            .map_err(|e| format!("its base64 does not decode: {e}"))?;
        entry.carry.drain(..whole);
        &decoded
    } else {
        &entry.text
    };
    append(shared, file, &mut entry.out, &mut entry.len, bytes)
}

/// Appends decoded `bytes` to the file (`len` long so far), within the
/// quota.
fn append(
    shared: &Shared,
    file: u64,
    out: &mut BufWriter<File>,
    len: &mut u64,
    bytes: &[u8],
) -> Result<(), String> {
    if bytes.is_empty() {
        return Ok(());
    }
    make_room(shared, file, bytes.len() as u64)?;
    out.write_all(bytes)
        .map_err(|e| format!("could not write its file: {e}"))?;
    *len += bytes.len() as u64;
    Ok(())
}

/// Counts `more` bytes for `file`, not linked yet. A value that passes
/// the quota on its own, or with the other values not linked yet, fails
/// here, before anything was evicted for it; room among the kept values is
/// made when it is linked ([`evict_for`]), so a value refused halfway, or
/// one never linked (not a tool result after all), costs no kept value.
fn make_room(shared: &Shared, file: u64, more: u64) -> Result<(), String> {
    let max = shared.config.max_bytes;
    let mut state = shared.state();
    let mine = state.files.get(&file).map_or(0, |e| e.on_disk);
    if mine + more > max {
        return Err(format!("it is larger than the spill quota of {max} bytes"));
    }
    if state.pending + more > max {
        return Err(format!(
            "the values not linked yet are larger than the spill quota of {max} bytes"
        ));
    }
    state.pending += more;
    state.total += more;
    if let Some(entry) = state.files.get_mut(&file) {
        entry.on_disk += more;
    }
    Ok(())
}

/// `mine` were just linked: evicts the oldest other linked values until
/// the kept values are within the quota again. Values not linked yet are
/// never evicted (they are counted apart, and bounded on their own).
pub(super) fn evict_for(shared: &Shared, state: &mut State, mine: &[u64]) {
    let max = shared.config.max_bytes;
    while state.total - state.pending > max {
        let oldest = state.order.iter().copied().find(|f| {
            !mine.contains(f)
                && state
                    .files
                    .get(f)
                    .is_some_and(|e| e.linked && matches!(e.state, FileState::Complete { .. }))
        });
        let Some(oldest) = oldest else {
            break;
        };
        remove(shared, state, oldest);
        state.evictions += 1;
        if let Some(entry) = state.files.get_mut(&oldest) {
            entry.state = FileState::Evicted;
        }
        state.order.retain(|&f| f != oldest);
    }
}

/// Deletes `file` from disk and the count.
fn remove(shared: &Shared, state: &mut State, file: u64) {
    let _ = fs::remove_file(shared.path(file));
    if let Some(entry) = state.files.get_mut(&file) {
        state.total -= entry.on_disk;
        if !entry.linked {
            state.pending -= entry.on_disk;
        }
        entry.on_disk = 0;
    }
}

/// Marks `file` not kept, removing what was written.
fn fail(shared: &Shared, file: u64, why: &str) {
    let mut state = shared.state();
    remove(shared, &mut state, file);
    if let Some(entry) = state.files.get_mut(&file) {
        entry.state = FileState::Failed(why.to_string());
    }
    state.order.retain(|&f| f != file);
    drop(state);
    shared.changed.notify_all();
}
