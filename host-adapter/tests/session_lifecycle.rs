//! How sessions start and end: backend selection, shutdown, and dropping.

mod session_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use drainpipe_framer::owned::OwnedEvent;
use drainpipe_framer::{Config, Stats};
use drainpipe_host::backend::{BackendError, FramerBackend, NativeFramer};
use drainpipe_host::session::{
    BackendChoice, CallError, ClientInfo, Ending, NegotiateError, Protocol, Revision, Session,
    SessionConfig,
};
use serde_json::json;
use session_support::*;

/// A backend that counts the bytes pushed through it, standing in for the
/// component: the session takes any [`FramerBackend`].
struct Counting {
    inner: NativeFramer,
    bytes: Arc<AtomicU64>,
}

impl FramerBackend for Counting {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<OwnedEvent>) -> Result<(), BackendError> {
        self.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        self.inner.push(chunk, out)
    }
    fn finish(&mut self, out: &mut Vec<OwnedEvent>) -> Result<(), BackendError> {
        self.inner.finish(out)
    }
    fn stats(&mut self) -> Result<Stats, BackendError> {
        self.inner.stats()
    }
    fn name(&self) -> &'static str {
        "counting"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_is_a_configuration_value() {
    let bytes = Arc::new(AtomicU64::new(0));
    let seen = bytes.clone();
    let backend = BackendChoice::Custom(Arc::new(move |config: Config| {
        Ok(Box::new(Counting {
            inner: NativeFramer::new(config),
            bytes: seen.clone(),
        }) as Box<dyn FramerBackend>)
    }));
    let session = start(
        &[],
        SessionConfig {
            backend,
            ..SessionConfig::default()
        },
    )
    .await;
    assert_usable(&session).await;
    let report = shutdown_clean(&session).await;
    assert_eq!(bytes.load(Ordering::Relaxed), report.metrics.stdout_bytes);
    assert!(report.metrics.stdout_bytes > 0);
}

/// A clean shutdown while a tool runs a subprocess with children: closing
/// stdin is enough, the server cancels its work and exits, nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_no_process_behind() {
    let session = start(&[], SessionConfig::default()).await;
    let pending = start_tool(&session, "spawn_forever", json!({"children": 2}), opts(30)).await;
    let note = within(10, "spawn notification", session.next_incoming())
        .await
        .expect("note");
    assert_eq!(note.method, "notifications/message");
    let server = session.pid();
    let mut tree = Vec::new();
    wait_until(10, "subprocess tree running", || {
        tree = descendants(server);
        tree.len() >= 3
    })
    .await;
    let report = shutdown_clean(&session).await;
    assert_eq!(report.ending, Ending::Exited, "stdin EOF was enough");
    assert_eq!(report.status.and_then(|s| s.code()), Some(0));
    assert_eq!(report.metrics.process_kills, 0);
    assert_all_gone(&tree, "the tool's subprocess tree").await;
    // Exactly one outcome: the server's cancelled-work answer if it got out
    // before stdout closed, otherwise session lost.
    match within(5, "the pending call ends", pending.outcome()).await {
        Ok(response) => assert_eq!(response.result["structuredContent"]["ending"], "Cancelled"),
        Err(error) => assert!(matches!(error, CallError::SessionLost { .. }), "{error:?}"),
    }
    // Shutdown is idempotent.
    assert_eq!(session.shutdown().await.ending, Ending::Exited);
}

/// Dropping every handle without shutdown kills the server's group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_handle_kills_the_server() {
    let session = start(&["--linger", "--ignore-sigterm"], SessionConfig::default()).await;
    let pid = session.pid();
    let clone = session.clone();
    drop(session);
    assert!(stat(pid).is_some(), "a clone still holds the session");
    assert_usable(&clone).await;
    drop(clone);
    assert_group_gone(pid).await;
}

/// Spawning something that does not exist fails at spawn, not later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawning_a_missing_program_fails_at_once() {
    let missing = tokio::process::Command::new("/nonexistent/drainpipe-server");
    assert!(Session::spawn(missing, SessionConfig::default()).is_err());
}

/// The fixture speaks enough MCP for any host: tools/list and ping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_lists_its_tools_and_answers_ping() {
    let session = start(&[], SessionConfig::default()).await;
    let listed = within(
        10,
        "tools/list",
        session.call("tools/list", json!({}), opts(5)),
    )
    .await;
    let listed = listed.expect("tools/list answers");
    let names: Vec<&str> = listed.result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("name"))
        .collect();
    for expected in [
        "large",
        "slow",
        "spawn_forever",
        "noisy_stderr",
        "stray_log",
        "malformed",
        "sized",
        "huge_field",
        "many_blocks",
        "tricky",
        "echo",
        "health",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let pong = within(10, "ping", session.call("ping", json!({}), opts(5))).await;
    assert_eq!(pong.expect("ping answers").result, json!({}));
    let unknown = within(
        10,
        "unknown method",
        session.call("no/such", json!({}), opts(5)),
    )
    .await;
    assert!(
        matches!(unknown, Err(CallError::JsonRpc { code: -32601, .. })),
        "{unknown:?}"
    );
    shutdown_clean(&session).await;
}

/// The fixture speaks only the 2025 revisions and answers the unknown
/// `server/discover` with an error: `auto` falls back to `initialize` on the
/// same process; pinned to 2026-07-28 the handshake fails and says why; a
/// second handshake is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negotiate_falls_back_to_initialize_and_pins_strictly() {
    let client = ClientInfo::new("drainpipe-tests", "0");
    let session = Session::spawn(fixture(&[]), SessionConfig::default()).expect("spawn");
    let negotiated = within(
        10,
        "negotiate",
        session.negotiate(Protocol::Auto, &client, opts(5)),
    )
    .await
    .expect("the fixture negotiates");
    assert_eq!(negotiated.revision, Revision::V2025_06_18);
    assert_eq!(negotiated.via, "initialize");
    assert!(!negotiated.restarted);
    assert_eq!(negotiated.server_info["name"], "drainpipe-fixture");
    assert_eq!(session.revision(), Some(Revision::V2025_06_18));
    assert_usable(&session).await;
    let again = session.negotiate(Protocol::Auto, &client, opts(5)).await;
    assert_eq!(again, Err(NegotiateError::Already(Revision::V2025_06_18)));
    shutdown_clean(&session).await;

    let session = Session::spawn(fixture(&[]), SessionConfig::default()).expect("spawn");
    let pinned = within(
        10,
        "negotiate",
        session.negotiate(Protocol::Pin(Revision::V2026_07_28), &client, opts(5)),
    )
    .await;
    match pinned {
        Err(NegotiateError::Call {
            method: "server/discover",
            error: CallError::JsonRpc { .. },
        }) => {}
        other => panic!("pinned to 2026-07-28, the fixture must fail it: {other:?}"),
    }
    assert_eq!(session.revision(), None);
    shutdown_clean(&session).await;

    // Pinned to a 2025 revision the fixture does not answer with: refused,
    // not silently another revision.
    let session = Session::spawn(fixture(&[]), SessionConfig::default()).expect("spawn");
    let pinned = within(
        10,
        "negotiate",
        session.negotiate(Protocol::Pin(Revision::V2025_11_25), &client, opts(5)),
    )
    .await;
    match pinned {
        Err(NegotiateError::NotOffered {
            method: "initialize",
            wanted: Revision::V2025_11_25,
            offered,
        }) => assert_eq!(offered, ["2025-06-18"]),
        other => panic!("a pin is exact: {other:?}"),
    }
    assert_eq!(session.revision(), None);
    shutdown_clean(&session).await;

    // Two handshakes at once: one runs, the other finds it done.
    let session = Session::spawn(fixture(&[]), SessionConfig::default()).expect("spawn");
    let (first, second) = within(10, "two negotiations", async {
        tokio::join!(
            session.negotiate(Protocol::Auto, &client, opts(5)),
            session.negotiate(Protocol::Auto, &client, opts(5)),
        )
    })
    .await;
    let outcomes = [first.is_ok(), second.is_ok()];
    assert_eq!(outcomes.iter().filter(|ok| **ok).count(), 1, "{outcomes:?}");
    let refused = if first.is_ok() { second } else { first };
    assert_eq!(refused, Err(NegotiateError::Already(Revision::V2025_06_18)));
    shutdown_clean(&session).await;
}

/// A server that ends on any opening but `initialize` (as servers on some
/// 2025-era SDKs do) is started a second time by `connect`, for the 2025
/// handshake, and the second one answers. Pinned, the loss is the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_starts_again_a_server_that_ends_on_discover() {
    let client = ClientInfo::new("drainpipe-tests", "0");
    let (session, negotiated) = within(
        20,
        "connect",
        Session::connect(
            || fixture(&["--initialize-first"]),
            SessionConfig::default(),
            Protocol::Auto,
            &client,
            opts(5),
        ),
    )
    .await
    .expect("spawn");
    let negotiated = negotiated.expect("the second start negotiates");
    assert!(negotiated.restarted);
    assert_eq!(negotiated.revision, Revision::V2025_06_18);
    assert_usable(&session).await;
    shutdown_clean(&session).await;

    // Pinned, there is no second start: the loss is the answer.
    let (session, outcome) = within(
        20,
        "connect",
        Session::connect(
            || fixture(&["--initialize-first"]),
            SessionConfig::default(),
            Protocol::Pin(Revision::V2026_07_28),
            &client,
            opts(5),
        ),
    )
    .await
    .expect("spawn");
    match outcome {
        Err(NegotiateError::Call {
            error: CallError::SessionLost { .. },
            ..
        }) => {}
        other => panic!("pinned, the ended server is the answer: {other:?}"),
    }
    let pid = session.pid();
    session.shutdown().await;
    assert_group_gone(pid).await;
}
