//! The tasks of one proxy run, tracked (`tokio_util`'s `TaskTracker`), so
//! that the run's end knows when they have ended and waits for them,
//! bounded, as a server's graceful shutdown waits for its connections.
//!
//! Two kinds: a task that ends by itself once the run ends its part (a
//! writer, once its pipe is closed or finished), and a task that matters
//! only while the run lasts (a watch on the host's input, the answers to
//! the transport's failures, the server's stderr, a read of a spilled
//! value), which the run's end drops wherever it waits: what it would
//! still do then has nobody to go to.
//!
//! The readers are not among them: they are started by `pipe::reader`, on
//! threads of their own or as runtime tasks, and the host's may wait in a
//! read for as long as the host keeps its end open.

use std::future::Future;
use std::time::Instant;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The tasks a proxy run spawns. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tasks {
    tracker: TaskTracker,
    /// Fired at the run's end.
    over: CancellationToken,
}

impl Tasks {
    /// Spawns `task`, which ends by itself; the run's end waits for it.
    pub(crate) fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn(task)
    }

    /// Spawns `task`, which matters only while the run lasts: at the
    /// run's end it is dropped wherever it waits.
    pub(crate) fn spawn_for_run(
        &self,
        task: impl Future<Output = ()> + Send + 'static,
    ) -> JoinHandle<()> {
        let over = self.over.clone();
        self.tracker.spawn(async move {
            tokio::select! {
                () = over.cancelled() => {}
                () = task => {}
            }
        })
    }

    /// The run's end: the tasks spawned for the run are dropped, and all
    /// of them are waited for until `deadline` (a writer still blocked on
    /// a peer that does not read is left to it). Whether all ended.
    pub(crate) async fn end(&self, deadline: Instant) -> bool {
        self.over.cancel();
        self.tracker.close();
        tokio::time::timeout_at(deadline.into(), self.tracker.wait())
            .await
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn the_end_drops_tasks_for_the_run_and_waits_for_the_others() {
        let tasks = Tasks::default();
        let (done, finished) = tokio::sync::oneshot::channel::<()>();
        tasks.spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let _ = done.send(());
        });
        let watching = tasks.spawn_for_run(std::future::pending());
        let started = Instant::now();
        assert!(tasks.end(started + Duration::from_secs(10)).await);
        assert!(finished.await.is_ok(), "the task that ends by itself ended");
        assert!(watching.await.is_ok(), "the one for the run was dropped");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn the_end_gives_up_on_a_task_at_the_deadline() {
        let tasks = Tasks::default();
        let stuck = tasks.spawn(std::future::pending::<()>());
        let started = Instant::now();
        assert!(!tasks.end(started + Duration::from_millis(50)).await);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!stuck.is_finished(), "left to itself, not aborted");
        stuck.abort();
    }
}
