//! Request id → the work running for it, so `notifications/cancelled` can
//! stop that work and nothing else.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::sync::CancellationToken;

use crate::pipe::sys::{Group, Stop};

/// The id is already running; JSON-RPC ids must be unique among requests in
/// flight, so the second one is refused rather than silently replacing the first.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("work for request id {0} is already running")]
pub struct DuplicateWork(pub String);

#[derive(Debug)]
struct Entry {
    /// Tells the entry apart from a later one with the same id, so a
    /// finishing task never removes its successor.
    generation: u64,
    token: CancellationToken,
    abort: Option<AbortHandle>,
    /// Process group to kill on cancel, set once the work spawns one.
    process_group: Option<Group>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    next_generation: u64,
}

/// Active work by request id. Cheap to clone; clones share the table.
///
/// Ids are JSON-RPC id tokens as written (`7`, `"abc"`), so a number and a
/// string that look alike stay distinct.
#[derive(Clone, Debug, Default)]
pub struct CancellationRegistry {
    inner: Arc<Mutex<Inner>>,
}

/// Handed to the work: its cancellation token, and the way to register the
/// process group it starts.
#[derive(Debug)]
pub struct WorkContext {
    registry: CancellationRegistry,
    id: String,
    generation: u64,
    token: CancellationToken,
}

impl WorkContext {
    /// The request id this work runs for.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Fires when the request is cancelled (the task is also aborted, so this
    /// is for work that runs outside the task, e.g. a blocking thread).
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Records the process group the work started, so a cancel kills it even
    /// if the work itself cannot run any more.
    pub fn set_process_group(&self, pgid: u32) {
        let mut inner = self.registry.inner.lock().expect("registry");
        if let Some(entry) = inner
            .entries
            .get_mut(&self.id)
            .filter(|e| e.generation == self.generation)
        {
            entry.process_group = Group::led_by(pgid).ok();
        }
    }
}

impl Drop for WorkContext {
    fn drop(&mut self) {
        // The work finished (or was aborted): forget it, unless a newer entry
        // with the same id took its place.
        let mut inner = self.registry.inner.lock().expect("registry");
        if inner
            .entries
            .get(&self.id)
            .is_some_and(|e| e.generation == self.generation)
        {
            inner.entries.remove(&self.id);
        }
    }
}

impl CancellationRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `work` as a tokio task registered under `id` until it finishes.
    /// The entry is removed when the work ends, however it ends.
    pub fn spawn<F, Fut>(
        &self,
        id: impl Into<String>,
        work: F,
    ) -> Result<JoinHandle<Fut::Output>, DuplicateWork>
    where
        F: FnOnce(WorkContext) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let id = id.into();
        let token = CancellationToken::new();
        let generation = {
            let mut inner = self.inner.lock().expect("registry");
            if inner.entries.contains_key(&id) {
                return Err(DuplicateWork(id));
            }
            inner.next_generation += 1;
            let generation = inner.next_generation;
            inner.entries.insert(
                id.clone(),
                Entry {
                    generation,
                    token: token.clone(),
                    abort: None,
                    process_group: None,
                },
            );
            generation
        };
        let context = WorkContext {
            registry: self.clone(),
            id: id.clone(),
            generation,
            token,
        };
        let future = work(context);
        let task = tokio::spawn(future);
        let mut inner = self.inner.lock().expect("registry");
        if let Some(entry) = inner
            .entries
            .get_mut(&id)
            .filter(|e| e.generation == generation)
        {
            entry.abort = Some(task.abort_handle());
        }
        Ok(task)
    }

    /// Stops the work for `id`: fires its token, kills its process group,
    /// aborts its task and removes it. Returns false if nothing was running
    /// under that id (finished already, or never started): harmless.
    pub fn cancel(&self, id: &str) -> bool {
        let entry = self.inner.lock().expect("registry").entries.remove(id);
        match entry {
            Some(entry) => {
                stop(entry);
                true
            }
            None => false,
        }
    }

    /// Cancels everything (e.g. when the client went away). Returns how many.
    pub fn cancel_all(&self) -> usize {
        let entries: Vec<Entry> = self
            .inner
            .lock()
            .expect("registry")
            .entries
            .drain()
            .map(|(_, e)| e)
            .collect();
        let count = entries.len();
        entries.into_iter().for_each(stop);
        count
    }

    /// Whether work is running under `id`.
    pub fn is_active(&self, id: &str) -> bool {
        self.inner
            .lock()
            .expect("registry")
            .entries
            .contains_key(id)
    }

    /// How many pieces of work are running.
    pub fn len(&self) -> usize {
        self.inner.lock().expect("registry").entries.len()
    }

    /// Whether nothing is running.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn stop(entry: Entry) {
    entry.token.cancel();
    if let Some(pgid) = entry.process_group {
        // Killed here, not only by the task's drop: the group must die even
        // if the aborted task is never polled again.
        let _ = pgid.stop(Stop::Kill);
    }
    if let Some(abort) = entry.abort {
        abort.abort();
    }
}
