//! The spill store: the full original of every value the condenser cut
//! from a result, kept so the host and the agent can read the rest through
//! the same session (`resources/read` on its `resource_link`, or the
//! `drainpipe_read` tool).
//!
//! ```text
//!  server reader ──(raw pieces, per read)──► bounded channel ──► writer thread
//!   (condenser reports cut values)                               decodes (JSON escapes,
//!                                                                base64), writes files
//!  host reader ── resources/read, drainpipe_read ──► blocking task ──► to-host queue
//! ```
//!
//! - **Where**: a private directory under the system temp dir (0700, files
//!   0600, named by pid and a random token), removed when the proxy ends
//!   (after SIGTERM too, which ends the proxy in order); a directory left by
//!   a proxy that was killed is removed by the next one that starts. Its
//!   paths are never shown to the host: values are named
//!   `drainpipe://result/<n>/<k>`, `<n>` carrying the proxy's token, so a
//!   URI of another proxy is unknown here.
//! - **Bounds**: at most [`SpillConfig::max_bytes`] kept on disk (oldest
//!   values evicted first, when a new one is complete; a value larger than
//!   the quota on its own is not kept, and evicts nothing); while a value is
//!   written, up to twice that for a moment;
//!   in memory, the channel's messages (one per read and value) and the
//!   writer's buffers. A page read is at most the content budget.
//! - **Order**: a value's link is written only once its file is complete,
//!   so a host that reads a link finds the whole value.
//! - **One copy**: values with the same contents (a text and its mirror)
//!   share one file; a list's text blocks that are exactly its items
//!   pretty-printed are read from the items' file ([`mirror`]), theirs
//!   removed once the line is linked.

mod mirror;
mod read;
pub(crate) mod rpc;
mod writer;

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::hash::{BuildHasher, RandomState};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use drainpipe_framer::budget::{Link, Links, Spill, SpillKind, Spilled};

use self::mirror::Mirror;
use crate::pipe::sys;

/// The URI scheme and path of spilled values.
pub(crate) const URI_PREFIX: &str = "drainpipe://result/";

/// How the spill store is configured.
#[derive(Clone, Copy, Debug)]
pub struct SpillConfig {
    /// Bytes of spilled values kept on disk at most; past it the oldest are
    /// evicted when a new one is complete (their URIs then answer that they
    /// were), and a value larger than this on its own is not kept. While a
    /// value is written, the store may hold up to twice this for a moment.
    /// Protects the machine's **disk** (the temp dir is often memory).
    pub max_bytes: u64,
}

impl Default for SpillConfig {
    /// 1 GiB.
    fn default() -> Self {
        SpillConfig { max_bytes: 1 << 30 }
    }
}

/// How long linking waits for the writer to finish a value's file: it has
/// at most the channel's few messages to write first.
const COMPLETE_WAIT: Duration = Duration::from_secs(30);
/// Messages queued for the writer. Each holds the raw bytes of one value
/// from one read (at most a read, or the head kept when it was cut).
const CHANNEL_MESSAGES: usize = 16;

/// The state of one spilled value's file.
#[derive(Clone, Debug, PartialEq, Eq)]
enum FileState {
    /// Still being written.
    Writing,
    /// Complete: its decoded size.
    Complete { len: u64 },
    /// Removed to stay within the quota.
    Evicted,
    /// Not kept (the reason).
    Failed(String),
}

#[derive(Debug)]
struct FileEntry {
    kind: SpillKind,
    state: FileState,
    /// Bytes it holds on disk now.
    on_disk: u64,
    /// A link names it (else it is removed when its line is done).
    linked: bool,
}

/// What a link names: a file, with the media type the link gave, read as
/// it is or, for the `content` rest of a mirrored list, through the view
/// that renders its items as text blocks.
#[derive(Clone, Debug)]
struct Linked {
    file: u64,
    mime: String,
    mirror: Option<Arc<Mirror>>,
}

/// What the store knows, shared by the router, the writer and readers.
#[derive(Debug, Default)]
struct State {
    next_file: u64,
    files: HashMap<u64, FileEntry>,
    /// Files in the order they were begun: eviction takes the oldest.
    order: VecDeque<u64>,
    /// Bytes on disk.
    total: u64,
    /// Of those, the bytes of values no link names yet (being written, or
    /// of a line not linked yet): never more than the quota, and never
    /// evicted (a line's values are linked or discarded as a whole).
    pending: u64,
    next_result: u64,
    /// `<n>/<k>` → what its link names.
    links: HashMap<String, Linked>,
    /// Values evicted so far.
    evictions: u64,
}

#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    token: String,
    config: SpillConfig,
    state: Mutex<State>,
    changed: Condvar,
    /// The proxy is ending: no new files.
    closed: AtomicBool,
    /// Holds the directory's lock while the proxy lives.
    _lock: fs::File,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn path(&self, file: u64) -> PathBuf {
        self.dir.join(format!("{file}"))
    }
}

/// A message for the writer thread.
#[derive(Debug)]
enum Command {
    Open { file: u64, kind: SpillKind },
    Raw { file: u64, bytes: Vec<u8> },
    End { file: u64 },
    Discard { file: u64 },
}

/// The spill store of one proxy (cheap to clone; see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct SpillStore {
    shared: Arc<Shared>,
    commands: SyncSender<Command>,
}

impl SpillStore {
    /// Creates the private directory and starts the writer thread; first
    /// removes the directories of proxies of this user that died without
    /// removing theirs.
    pub(crate) fn start(config: SpillConfig) -> io::Result<SpillStore> {
        let temp = std::env::temp_dir();
        sweep_stale(&temp);
        let token = format!(
            "{:08x}",
            RandomState::new().hash_one(std::process::id()) as u32
        );
        let name = format!("drainpipe-spill-{}-{token}", std::process::id());
        // Made under a name the sweep ignores, locked, then given its own:
        // a sweep never sees it unlocked.
        let making = temp.join(format!(".{name}"));
        let dir = temp.join(name);
        sys::create_private_dir(&making)?;
        // Held while this proxy lives: the next proxy's sweep tells a live
        // directory from a stale one by it (a pid can be reused, or belong
        // to another namespace sharing the temp dir).
        let locked = sys::create_private_file(&making.join(LOCK_FILE))
            .and_then(|lock| {
                lock.try_lock().map_err(io::Error::from)?;
                Ok(lock)
            })
            .and_then(|lock| fs::rename(&making, &dir).map(|()| lock));
        let lock = match locked {
            Ok(lock) => lock,
            Err(error) => {
                let _ = fs::remove_dir_all(&making);
                return Err(error);
            }
        };
        let shared = Arc::new(Shared {
            dir,
            token,
            config,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            closed: AtomicBool::new(false),
            _lock: lock,
        });
        let (commands, receive) = sync_channel(CHANNEL_MESSAGES);
        let for_writer = shared.clone();
        std::thread::Builder::new()
            .name("drainpipe-spill".into())
            .spawn(move || writer::run(&for_writer, receive))?;
        Ok(SpillStore { shared, commands })
    }

    fn send(&self, command: Command) {
        // The writer only ends when every sender is gone.
        let _ = self.commands.send(command);
    }

    fn begin(&self, kind: SpillKind) -> u64 {
        let file = {
            let mut state = self.shared.state();
            let file = state.next_file;
            state.next_file += 1;
            state.files.insert(
                file,
                FileEntry {
                    kind,
                    state: FileState::Writing,
                    on_disk: 0,
                    linked: false,
                },
            );
            state.order.push_back(file);
            file
        };
        self.send(Command::Open { file, kind });
        file
    }

    /// Waits until `file` is no longer being written; its final state.
    fn wait(&self, file: u64) -> Option<FileState> {
        let state = self.shared.state();
        let (state, _) = self
            .shared
            .changed
            .wait_timeout_while(state, COMPLETE_WAIT, |s| {
                s.files
                    .get(&file)
                    .is_some_and(|f| f.state == FileState::Writing)
            })
            .unwrap_or_else(|e| e.into_inner());
        state.files.get(&file).map(|f| f.state.clone())
    }

    /// Stops keeping values and removes the directory. The writer ends
    /// when the last handle is dropped; a file it still has open is gone
    /// with the directory.
    /// Bytes on disk now, and values evicted so far.
    #[cfg(feature = "otel")]
    pub(crate) fn stats(&self) -> (u64, u64) {
        let state = self.shared.state();
        (state.total, state.evictions)
    }

    pub(crate) fn close(self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        for _ in 0..3 {
            if fs::remove_dir_all(&self.shared.dir).is_ok() || !self.shared.dir.exists() {
                break;
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The lock file in each spill directory.
const LOCK_FILE: &str = ".lock";

/// Removes `drainpipe-spill-<pid>-<token>` directories in `temp` that
/// belong to this user and whose proxy is gone: nobody holds their lock
/// (one without a lock file is left alone until it is a minute old: it may
/// be being created).
fn sweep_stale(temp: &Path) {
    let Ok(entries) = fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix("drainpipe-spill-"))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !entry.metadata().is_ok_and(|m| sys::owned_by_me(&m)) {
            continue;
        }
        let stale = match fs::File::open(entry.path().join(LOCK_FILE)) {
            Ok(file) => file.try_lock().is_ok(),
            // No lock file: left by a proxy that made none; stale once its
            // pid is gone and it is a minute old.
            Err(_) => {
                let gone = !sys::process_exists(pid);
                gone && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > Duration::from_secs(60)))
            }
        };
        if stale {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The values of one response line being spilled, as the condenser
/// reports them; what is not linked is removed when this is dropped.
#[derive(Debug)]
pub(crate) struct LineSpill {
    store: SpillStore,
    /// File of each value, by its number.
    files: Vec<u64>,
    /// Raw bytes of the open value not yet sent.
    pending: Vec<u8>,
    open: Option<u64>,
}

impl LineSpill {
    pub(crate) fn new(store: SpillStore) -> Self {
        LineSpill {
            store,
            files: Vec::new(),
            pending: Vec::new(),
            open: None,
        }
    }

    /// Takes one event of the condenser.
    pub(crate) fn on(&mut self, event: Spill<'_>) {
        match event {
            Spill::Start { kind, .. } => {
                self.flush();
                let file = self.store.begin(kind);
                self.files.push(file);
                self.open = Some(file);
            }
            Spill::Raw { bytes, .. } if self.open.is_some() => {
                self.pending.extend_from_slice(bytes);
                if self.pending.len() >= 256 << 10 {
                    self.flush();
                }
            }
            Spill::End { .. } => {
                self.flush();
                if let Some(file) = self.open.take() {
                    self.store.send(Command::End { file });
                }
            }
            _ => {}
        }
    }

    /// Sends what was gathered (call after each piece fed).
    pub(crate) fn flush(&mut self) {
        if let Some(file) = self.open
            && !self.pending.is_empty()
        {
            let bytes = std::mem::take(&mut self.pending);
            self.store.send(Command::Raw { file, bytes });
        }
    }

    /// Whether any value was reported.
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Writes the links of a condensed line into `frame`, for each complete
    /// value, once its file is complete: values with the same contents
    /// (a text and its mirror) share one file; the notice says `how` they
    /// are read. Returns how many were linked, and why any was not.
    pub(crate) fn link(
        &mut self,
        links: &Links,
        frame: &mut [u8],
        how: &str,
    ) -> (usize, Vec<String>) {
        self.flush();
        let mut problems = Vec::new();
        // Each value's file (by its number, which need not be its place:
        // see `Links::renumber`) and the file's final state.
        let files: Vec<Option<u64>> = links
            .values()
            .iter()
            .map(|value| self.files.get(value.value as usize).copied())
            .collect();
        let mut done: Vec<Option<u64>> = Vec::new();
        for (value, &file) in links.values().iter().zip(&files) {
            let state = match (file, value.complete) {
                (Some(file), true) => self.store.wait(file),
                _ => None,
            };
            done.push(match state {
                Some(FileState::Complete { len }) => Some(len),
                Some(FileState::Failed(why)) => {
                    problems.push(format!("{} not kept: {why}", value.pointer));
                    None
                }
                Some(FileState::Writing) => {
                    problems.push(format!(
                        "{} not kept: its file was not written in time",
                        value.pointer
                    ));
                    None
                }
                _ => None,
            });
        }
        // Same contents, one file: the later ones point at the first.
        let mut target: Vec<usize> = (0..done.len()).collect();
        for later in 0..done.len() {
            for earlier in 0..later {
                if target[earlier] == earlier
                    && let (Some(a), Some(b)) = (done[earlier], done[later])
                    && a == b
                    && let (Some(fa), Some(fb)) = (files[earlier], files[later])
                    && (fa == fb
                        || same_contents(&self.store.shared.path(fa), &self.store.shared.path(fb)))
                {
                    target[later] = earlier;
                    break;
                }
            }
        }
        let mirrored = self.mirrored(links.values(), &files, &done, &target);
        let (token, n) = {
            let mut state = self.store.shared.state();
            let n = state.next_result;
            state.next_result += 1;
            (self.store.shared.token.clone(), n)
        };
        let uris: Vec<String> = (0..done.len())
            .map(|k| format!("{URI_PREFIX}{token}-{n}/{}", target[k]))
            .collect();
        let written = links.fill(frame, how, |value| {
            let k = value.value as usize;
            let len = done.get(k).copied().flatten()?;
            Some(Link {
                uri: &uris[k],
                size: len,
            })
        });
        {
            let mut state = self.store.shared.state();
            let mut mine = Vec::new();
            for (k, value) in links.values().iter().enumerate() {
                if let Some((content, items, mirror)) = &mirrored
                    && *content == k
                    && let Some(file) = files[*items]
                {
                    // Its own file is left unlinked: removed with the line.
                    state.links.insert(
                        format!("{token}-{n}/{k}"),
                        Linked {
                            file,
                            mime: value.mime.clone(),
                            mirror: Some(mirror.clone()),
                        },
                    );
                    continue;
                }
                if target[k] == k
                    && done[k].is_some()
                    && let Some(file) = files[k]
                {
                    if let Some(entry) = state.files.get_mut(&file)
                        && !entry.linked
                    {
                        entry.linked = true;
                        let bytes = entry.on_disk;
                        state.pending -= bytes;
                    }
                    mine.push(file);
                    state.links.insert(
                        format!("{token}-{n}/{k}"),
                        Linked {
                            file,
                            mime: value.mime.clone(),
                            mirror: None,
                        },
                    );
                }
            }
            // Now that they are kept, older kept values make room for them.
            writer::evict_for(&self.store.shared, &mut state, &mine);
        }
        (written, problems)
    }

    /// A list the line mirrors in `content` and `structuredContent.result`
    /// (both cut, the blocks at the same item or later, both files
    /// complete): the `content` value's number, the items' and the view
    /// that reads the first from the second's file, when the first is
    /// exactly the second rendered (see `mirror`). A failed read of either
    /// file keeps both.
    fn mirrored(
        &self,
        values: &[Spilled],
        files: &[Option<u64>],
        done: &[Option<u64>],
        target: &[usize],
    ) -> Option<(usize, usize, Arc<Mirror>)> {
        let rest = |pointer: &str| {
            values.iter().enumerate().find_map(|(k, value)| {
                let first = value.kind.first()?;
                (value.pointer == pointer && target[k] == k && done[k].is_some())
                    .then_some((k, first, files[k]?))
            })
        };
        let (content, first, content_file) = rest("/content")?;
        let (items, items_first, items_file) = rest("/structuredContent/result")?;
        // The structured copy is often cut sooner (it keeps its last items
        // too): the blocks' rest is then the items' from a later one.
        let skip = first.checked_sub(items_first)?;
        if content_file == items_file {
            return None;
        }
        let path = |file| self.store.shared.path(file);
        let mirror = Mirror::check(&path(content_file), &path(items_file), skip).ok()??;
        Some((content, items, Arc::new(mirror)))
    }
}

impl Drop for LineSpill {
    fn drop(&mut self) {
        self.flush();
        if let Some(file) = self.open.take() {
            self.store.send(Command::Discard { file });
        }
        let unlinked: Vec<u64> = {
            let state = self.store.shared.state();
            self.files
                .iter()
                .copied()
                .filter(|f| !state.files.get(f).is_some_and(|e| e.linked))
                .collect()
        };
        for file in unlinked {
            self.store.send(Command::Discard { file });
        }
    }
}

/// Whether two complete files hold the same bytes.
fn same_contents(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    let (Ok(mut a), Ok(mut b)) = (fs::File::open(a), fs::File::open(b)) else {
        return false;
    };
    let mut x = vec![0u8; 1 << 20];
    let mut y = vec![0u8; 1 << 20];
    loop {
        let n = match read_full(&mut a, &mut x) {
            Ok(n) => n,
            Err(_) => return false,
        };
        let m = match read_full(&mut b, &mut y) {
            Ok(m) => m,
            Err(_) => return false,
        };
        if n != m || x[..n] != y[..m] {
            return false;
        }
        if n == 0 {
            return true;
        }
    }

    fn read_full(file: &mut fs::File, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match file.read(&mut buf[filled..])? {
                0 => break,
                n => filled += n,
            }
        }
        Ok(filled)
    }
}
