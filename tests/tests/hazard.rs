//! Guarantee: the client reads stdout continuously. The hazard, shown in
//! the same setup both ways: a parent that ignores stdout leaves the child
//! alive and blocked in its write (it reports backpressure on stderr), while
//! the guarded session receives the same response and never blocks.

use std::process::Stdio;
use std::time::{Duration, Instant};

use drainpipe_host::session::SessionConfig;
use drainpipe_release::procs::{assert_group_gone, stat};
use drainpipe_release::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"large"}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignoring_stdout_blocks_the_child_the_guarded_session_never_does() {
    // 1. Unguarded: stdout is piped and never read.
    let mut child = fixture(&[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the fixture");
    let pid = child.id().expect("pid");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(format!("{CALL}\n").as_bytes())
        .await
        .expect("request written");
    let _never_read = child.stdout.take().expect("stdout");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let started = within(10, "start of the write", stderr.next_line()).await;
    assert_eq!(
        started.expect("stderr").as_deref(),
        Some("large id=7: writing 8388609 bytes")
    );
    let report = within(10, "backpressure report", stderr.next_line()).await;
    assert_eq!(
        report.expect("stderr").as_deref(),
        Some("stdout backpressure observed (large id=7)")
    );
    let still_blocked = tokio::time::timeout(Duration::from_secs(1), stderr.next_line()).await;
    assert!(
        still_blocked.is_err(),
        "the write must still be stuck after 1 s: {still_blocked:?}"
    );
    let state = stat(pid).expect("the child is alive");
    assert_ne!(state.state, 'Z', "alive, not exited");
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the child is alive and blocked"
    );
    child.kill().await.expect("kill");
    assert_group_gone(pid).await;
    drainpipe_release::procs::assert_no_zombie_children();

    // 2. Guarded, same server, same request: the write completes and the
    // response arrives whole.
    let session = start_fixture(&[], limited(16 << 20)).await;
    let started = Instant::now();
    let response = within(
        30,
        "the guarded call",
        tool(&session, "large", json!({}), opts(25)),
    )
    .await
    .expect("the response arrives");
    let took = started.elapsed();
    assert_eq!(response.wire_bytes, 8 << 20);
    wait_until(5, "the server finished its write", || {
        session.stderr().kept_text().contains(&format!(
            "large id={}: wrote {} bytes",
            response.id,
            (8 << 20) + 1
        ))
    })
    .await;
    eprintln!("guarded: 8 MiB response in {took:?}");
    fixture_echo_quickly(&session, "after the large response").await;
    shutdown_clean(&session).await;
}

/// The guarded session also keeps reading while its caller is not waiting:
/// the response is parked in the call's slot, the server is never blocked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_session_reads_while_the_caller_is_busy() {
    let session = start_fixture(
        &[],
        SessionConfig {
            framer: drainpipe_framer::Config::default().with_max_frame_bytes(16 << 20),
            ..SessionConfig::default()
        },
    )
    .await;
    let pending = start_tool(&session, "large", json!({}), opts(30)).await;
    let label = format!("large id={}: wrote {} bytes", pending.id(), (8 << 20) + 1);
    wait_until(
        20,
        "the server's write finished with nobody awaiting the call",
        || session.stderr().kept_text().contains(&label),
    )
    .await;
    let response = within(10, "the parked response", pending.outcome())
        .await
        .expect("kept");
    assert_eq!(response.wire_bytes, 8 << 20);
    shutdown_clean(&session).await;
}
