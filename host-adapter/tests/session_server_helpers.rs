//! The server-side helpers on real processes: a bounded subprocess and the
//! cancellation registry.

mod session_support;

use std::time::Duration;

use drainpipe_host::server::{
    BoundedSubprocess, CancellationRegistry, SubprocessEnding, SubprocessLimits,
};
use drainpipe_host::session::CaptureLimits;
use session_support::*;
use tokio_util::sync::CancellationToken;

fn printer(children: u32) -> tokio::process::Command {
    fixture(&["--print-forever", "--children", &children.to_string()])
}

fn small_limits() -> SubprocessLimits {
    SubprocessLimits {
        stdout: CaptureLimits {
            head_bytes: 256,
            tail_bytes: 256,
        },
        stderr: CaptureLimits {
            head_bytes: 256,
            tail_bytes: 256,
        },
        ..SubprocessLimits::default()
    }
}

/// A subprocess that prints forever, with two children, hits its time limit:
/// the whole group dies, output was drained the whole time, and the preview
/// stays within its budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_the_group_and_keeps_a_bounded_preview() {
    let limits = SubprocessLimits {
        timeout: Some(Duration::from_millis(400)),
        ..small_limits()
    };
    let subprocess = BoundedSubprocess::spawn(printer(2), limits).expect("spawn");
    let pid = subprocess.pid();
    let mut tree = Vec::new();
    wait_until(10, "the two children started", || {
        tree = descendants(pid);
        tree.len() >= 2
    })
    .await;
    tree.push(pid);
    let report = within(10, "bounded run", subprocess.run(CancellationToken::new())).await;
    assert_eq!(report.ending, SubprocessEnding::TimedOut);
    assert!(report.stdout.truncated, "{report:?}");
    assert!(
        report.stdout.head.starts_with("tick 0 from"),
        "{:?}",
        report.stdout.head
    );
    assert!(report.stdout.head.len() + report.stdout.tail.len() <= 512);
    assert!(report.stdout.seen_bytes > 512);
    assert!(
        !report.drain_timed_out,
        "the group held the pipes and died with it"
    );
    assert_all_gone(&tree, "subprocess and children").await;
    assert_group_gone(pid).await;
}

/// Cancellation through the token ends the run the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_kills_the_group() {
    let subprocess = BoundedSubprocess::spawn(printer(1), small_limits()).expect("spawn");
    let pid = subprocess.pid();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(subprocess.run(cancel.clone()));
    let mut tree = Vec::new();
    wait_until(10, "the child started", || {
        tree = descendants(pid);
        !tree.is_empty()
    })
    .await;
    tree.push(pid);
    cancel.cancel();
    let report = within(10, "cancelled run", run).await.expect("run task");
    assert_eq!(report.ending, SubprocessEnding::Cancelled);
    assert_all_gone(&tree, "subprocess and child").await;
    assert_group_gone(pid).await;
}

/// A subprocess that exits by itself is reported as such, with all its output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normal_exit_keeps_everything_that_fits() {
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", "printf 'out héllo'; printf 'err' >&2; exit 3"]);
    let subprocess = BoundedSubprocess::spawn(command, small_limits()).expect("spawn sh");
    let report = within(10, "sh run", subprocess.run(CancellationToken::new())).await;
    assert_eq!(report.ending, SubprocessEnding::Exited);
    assert_eq!(report.status.and_then(|s| s.code()), Some(3));
    assert_eq!(report.stdout.kept_text(), "out héllo");
    assert_eq!(report.stderr.kept_text(), "err");
    assert!(!report.stdout.truncated && !report.leftovers_killed);
}

/// The registry: a cancel stops the work, kills its group and forgets it; a
/// cancel for a finished or unknown id is harmless; ids are unique.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_cancels_work_and_its_processes() {
    let registry = CancellationRegistry::new();
    let (pid_tx, pid_rx) = tokio::sync::oneshot::channel();
    let task = registry
        .spawn("7", move |ctx| async move {
            let subprocess = BoundedSubprocess::spawn(printer(1), small_limits()).expect("spawn");
            ctx.set_process_group(subprocess.pid());
            let _ = pid_tx.send(subprocess.pid());
            subprocess.run(ctx.token()).await
        })
        .expect("first registration");
    assert!(
        registry.spawn("7", |_| async {}).is_err(),
        "a duplicate id is refused"
    );
    assert!(
        registry.is_active("7") && !registry.is_active("\"7\""),
        "numbers and strings differ"
    );
    let pid = within(10, "work started", pid_rx).await.expect("pid");
    let mut tree = Vec::new();
    wait_until(10, "the child started", || {
        tree = descendants(pid);
        !tree.is_empty()
    })
    .await;
    tree.push(pid);
    assert!(registry.cancel("7"));
    assert!(registry.is_empty());
    let joined = within(10, "aborted task", task).await;
    // Aborted, or it saw the token first and ended its run as cancelled.
    match joined {
        Ok(report) => assert_eq!(report.ending, SubprocessEnding::Cancelled),
        Err(error) => assert!(error.is_cancelled(), "{error}"),
    }
    assert_all_gone(&tree, "the work's processes").await;
    wait_until(5, "the subprocess was reaped", || stat(pid).is_none()).await;
    assert!(!registry.cancel("7"), "cancelling again is harmless");
    assert!(!registry.cancel("unknown"));

    let finished = registry.spawn("8", |_| async { 42 }).expect("register");
    assert_eq!(within(5, "finished work", finished).await.expect("ran"), 42);
    wait_until(5, "finished work is forgotten", || !registry.is_active("8")).await;
    assert!(
        !registry.cancel("8"),
        "a cancel for a finished id does nothing"
    );
}
