//! Support for drainpipe's release suite: where the binaries and the real
//! MCP peers are, time bounds that fail loudly, the guarded session set up
//! the way every criterion uses it, and process-table checks for zombies and
//! orphans.
//!
//! The criteria themselves are the files in `tests/`; `README.md` says in
//! plain words what they hold the code to.
#![forbid(unsafe_code)]

pub mod http1;
pub mod otlp;
pub mod peers;
pub mod served;
pub mod spill_dir;
pub mod text_file;
pub mod tls;

pub use drainpipe_test_support::bins::{
    binary, binary_dir, drainpipe_binary, fixture_binary, workspace_root,
};
pub use drainpipe_test_support::fixture::fixture;
pub use drainpipe_test_support::procs;
pub use drainpipe_test_support::{opts, opts_ms, start_tool, tool, wait_until, within};

use std::future::Future;
use std::time::{Duration, Instant};

use drainpipe_host::session::{CallError, Response, Session, SessionConfig, ShutdownReport};
use serde_json::{Value, json};

/// The longest a small request may take to answer right after a fault or a
/// cancellation, for the criteria that say "answers quickly". Generous for a
/// loaded 2-core CI machine; a healthy run answers in about a millisecond.
pub const QUICK: Duration = Duration::from_secs(2);

/// The `initialize` parameters a real host sends.
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "drainpipe-release", "version": "0"},
    })
}

/// Spawns `command` behind a guarded session and runs the MCP handshake.
pub async fn start_session(command: tokio::process::Command, config: SessionConfig) -> Session {
    let session = Session::spawn(command, config).expect("spawn the server");
    let init = within(
        30,
        "initialize",
        session.call("initialize", initialize_params(), opts(25)),
    )
    .await;
    if let Err(error) = init {
        let stderr = session.stderr().kept_text();
        panic!("initialize failed: {error}; server stderr:\n{stderr}");
    }
    within(
        5,
        "notifications/initialized",
        session.notify("notifications/initialized", json!({})),
    )
    .await
    .expect("initialized notification sent");
    session
}

/// A session on the fixture with `args`, initialized.
pub async fn start_fixture(args: &[&str], config: SessionConfig) -> Session {
    start_session(fixture(args), config).await
}

/// A session configuration with the transport limit `max_frame_bytes`.
pub fn limited(max_frame_bytes: usize) -> SessionConfig {
    SessionConfig {
        framer: drainpipe_framer::Config::default().with_max_frame_bytes(max_frame_bytes),
        ..SessionConfig::default()
    }
}

/// The first text block of a tool result.
pub fn first_text(response: &Response) -> &str {
    response.result["content"][0]["text"]
        .as_str()
        .expect("a text block")
}

/// The recovery criterion: a small, independent request answers, and within
/// [`QUICK`]. `call` makes that request (a different tool per server).
/// Returns how long it took.
pub async fn answers_quickly<F, Fut>(what: &str, call: F) -> Duration
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Response, CallError>>,
{
    let started = Instant::now();
    let outcome = within(10, what, call()).await;
    let took = started.elapsed();
    if let Err(error) = outcome {
        panic!("{what}: the small request failed: {error}");
    }
    assert!(took < QUICK, "{what}: the small request took {took:?}");
    took
}

/// The fixture's small request: `echo`, checked for its payload.
pub async fn fixture_echo_quickly(session: &Session, what: &str) -> Duration {
    answers_quickly(what, || async {
        let response = tool(session, "echo", json!({"again": what}), opts(5)).await?;
        assert_eq!(response.result["structuredContent"], json!({"again": what}));
        Ok(response)
    })
    .await
}

/// Shuts the session down and checks nothing of it is left: the group is
/// empty and the leader was reaped.
pub async fn shutdown_clean(session: &Session) -> ShutdownReport {
    let pid = session.pid();
    let report = within(20, "shutdown", session.shutdown()).await;
    procs::assert_group_gone(pid).await;
    report
}

/// Whether the heavy variants were asked for (`DRAINPIPE_STRESS_FULL=1`).
pub fn stress_full() -> bool {
    std::env::var("DRAINPIPE_STRESS_FULL").is_ok_and(|v| v == "1")
}

/// A small deterministic generator (xorshift64*): the stress tests print
/// their seed so a failure can be replayed with `DRAINPIPE_STRESS_SEED`.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced by a fixed odd constant).
    pub fn new(seed: u64) -> Self {
        Rng(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// The seed from `DRAINPIPE_STRESS_SEED`, or one from the clock.
    pub fn seed_from_env() -> u64 {
        std::env::var("DRAINPIPE_STRESS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Prints a measured figure and appends it, as one JSON line, to
/// `target/drainpipe-release-figures.jsonl`, so a run leaves its numbers
/// behind (`cargo test` hides what passing tests print).
pub fn figure(name: &str, value: Value) {
    let line = json!({"figure": name, "value": value});
    eprintln!("figure: {line}");
    let path = binary_dir()
        .parent()
        .map(|target| target.join("drainpipe-release-figures.jsonl"));
    if let Some(path) = path {
        use std::io::Write;
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "{line}");
        }
    }
}

/// Round-trip times of `rounds` sequential small calls made by `call`
/// (after 20 warm-up calls): `(median, p90)`.
pub async fn round_trips<F, Fut>(rounds: usize, mut call: F) -> (Duration, Duration)
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<Response, CallError>>,
{
    for i in 0..20 {
        call(usize::MAX - i).await.expect("warm-up call");
    }
    let mut samples = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let started = Instant::now();
        call(i).await.expect("round trip");
        samples.push(started.elapsed());
    }
    samples.sort();
    (samples[samples.len() / 2], samples[samples.len() * 9 / 10])
}

/// `resources/read` of `uri` (20 s at most); the result.
pub async fn read_resource(session: &Session, uri: &str) -> Result<Value, CallError> {
    within(
        20,
        "resources/read",
        session.call("resources/read", json!({"uri": uri}), opts(15)),
    )
    .await
    .map(|r| r.result)
}

/// Pages through `uri`; the bytes put together, and the pages.
pub async fn page_through(session: &Session, uri: &str, budget: usize) -> (Vec<u8>, usize) {
    let mut all = Vec::new();
    let mut next = Some(uri.to_string());
    let mut pages = 0;
    while let Some(at) = next {
        let page = read_resource(session, &at).await.expect("a page");
        assert!(
            serde_json::to_vec(&page).unwrap().len() < budget,
            "a page within the budget"
        );
        all.extend_from_slice(
            page["contents"][0]["text"]
                .as_str()
                .expect("text")
                .as_bytes(),
        );
        next = page["_meta"]["io.drainpipe/next"]
            .as_str()
            .map(str::to_string);
        pages += 1;
        assert!(pages < 10_000, "paging ends");
    }
    (all, pages)
}
