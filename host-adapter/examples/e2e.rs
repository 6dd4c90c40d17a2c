//! End-to-end figures for the guarded session, on real child processes and
//! OS pipes (see BENCHMARKS.md for the commands and results).
//!
//! ```text
//! e2e throughput [GIB]        a child writes GIB GiB of 16 KiB frames: plain pipe drain,
//!                             guarded session (native framer), guarded session (component)
//! e2e flood <GIB> <native|component>
//!                             a child writes GIB GiB on one line, max_frame 1 MiB; run it
//!                             under `/usr/bin/time -v` for the peak RSS
//! e2e id-last [MIB]           the fixture answers with MIB MiB (default 200), `id` last,
//!                             over a 4 MiB limit: when the limit was crossed, when the
//!                             error came and when the line ended, with the request alone
//!                             and with another pending (needs `cargo build --release
//!                             -p drainpipe-cli --bins` for the fixture)
//! e2e proxy-result [MIB]      `drainpipe proxy` in front of the fixture answering with MIB
//!                             MiB (default 200), id last: forwarded whole (--max-frame
//!                             above it), rejected (4 MiB limit), condensed (--clip 256KiB,
//!                             both ends kept; and --keep head), condensed with the cut
//!                             text spilled to the temp dir, and
//!                             condensed to 262144chars and to 65536tokens (no spill);
//!                             time to the answer and to the next one (the line drained),
//!                             and the proxy's peak RSS (VmHWM)
//! e2e pipe-speed [COUNT]      a server writes COUNT (default 300000) notifications of 100 B,
//!                             1 KiB and 64 KiB (COUNT/16 of those; 64 KiB also from
//!                             producers writing 1 MiB at a time, in Rust and in Python):
//!                             the same server drained
//!                             from a plain pipe, through one more `cat`, through `drainpipe
//!                             proxy` (native and --sandbox), by the guarded session's
//!                             reader; messages/s, MB/s, the share of the plain pipe's rate
//!                             (medians of 5 interleaved rounds), and the proxy's peak RSS
//! e2e latency [CALLS] [--rounds N] [--clients raw,node] [--servers rust,python,sdk]
//!             [--paths direct,relay,relay-poll,relay-tokio,relay-framed,proxy,clip,sandbox,session,
//!                     governor,ultra-lean] [--burners 0,2]
//!                             CALLS (default 10000) sequential small `tools/call echo`
//!                             round trips per path (N interleaved rounds, default 20),
//!                             direct to the server, through a plain relay (`e2e relay`,
//!                             two copying threads: the floor; `--poll`, one thread in
//!                             poll(2); `--tokio`, a two-worker runtime; `--framed`, the
//!                             threads through the framer), `drainpipe proxy` (plain,
//!                             --clip 64KiB, --sandbox), a guarded session and the rival
//!                             proxies (`bash bench/rivals/setup.sh`), made by a raw Rust
//!                             client and by the TypeScript SDK's client in Node.js,
//!                             against a raw JSON-RPC echo server (this binary's
//!                             `echo-server`), a stdlib-only Python echo server and the
//!                             Python SDK's server, quiet and beside two CPU burners
//!                             (`e2e burn`): p50, p90, p99, p99.9
//! ```

use std::time::{Duration, Instant};

use drainpipe_framer::Config;
use drainpipe_host::component::ComponentFramer;
use drainpipe_host::session::{BackendChoice, Session, SessionConfig};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

const FRAME_BYTES: usize = 16 << 10;

/// A shell command that writes `bytes` bytes of newline-delimited JSON-RPC
/// notifications of `FRAME_BYTES` each (the last one may be cut short).
fn frames_child(bytes: u64) -> Command {
    let padding = "x".repeat(FRAME_BYTES - 80);
    let line = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{padding}"}}}}"#
    );
    let mut command = Command::new("sh");
    command.args(["-c", &format!("yes '{line}' | head -c {bytes}")]);
    command
}

/// A shell command that writes `bytes` bytes with no newline at all.
fn single_line_child(bytes: u64) -> Command {
    let mut command = Command::new("sh");
    command.args([
        "-c",
        &format!("printf '{{\"id\":1,\"result\":\"'; head -c {bytes} /dev/zero | tr '\\0' x"),
    ]);
    command
}

fn config(backend: &str, max_frame_bytes: usize) -> SessionConfig {
    let mut config = SessionConfig {
        framer: Config::default().with_max_frame_bytes(max_frame_bytes),
        default_timeout: Duration::from_secs(600),
        ..SessionConfig::default()
    };
    if backend == "component" {
        config.backend = BackendChoice::Custom(std::sync::Arc::new(|framer: Config| {
            ComponentFramer::new(framer)
                .map(|b| Box::new(b) as Box<dyn drainpipe_host::backend::FramerBackend>)
        }));
    }
    config
}

async fn plain_drain(bytes: u64) -> (u64, Duration) {
    let started = Instant::now();
    let mut child = frames_child(bytes)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sh");
    let mut stdout = child.stdout.take().expect("piped");
    let mut buf = vec![0u8; 64 << 10];
    let mut total = 0u64;
    loop {
        let n = stdout.read(&mut buf).await.expect("read");
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    child.wait().await.expect("wait");
    (total, started.elapsed())
}

async fn guarded(bytes: u64, backend: &str) -> (u64, u64, Duration) {
    let started = Instant::now();
    let session = Session::spawn(frames_child(bytes), config(backend, 1 << 20)).expect("spawn");
    let mut frames = 0u64;
    while let Some(message) = session.next_incoming().await {
        frames += u64::from(!message.bytes.is_empty());
    }
    let elapsed = started.elapsed();
    let metrics = session.metrics();
    session.shutdown().await;
    (metrics.stdout_bytes, frames, elapsed)
}

async fn flood(gib: u64, backend: &str) {
    let bytes = gib << 30;
    let started = Instant::now();
    let session =
        Session::spawn(single_line_child(bytes), config(backend, 1 << 20)).expect("spawn");
    while session.next_incoming().await.is_some() {}
    let metrics = session.metrics();
    session.shutdown().await;
    println!(
        "flood {gib} GiB ({backend}): {} bytes read, {} oversize, in {:.2?}; peak RSS: see /usr/bin/time -v",
        metrics.stdout_bytes,
        metrics.oversize_frames,
        started.elapsed()
    );
}

/// The fixture built beside this example (`target/<profile>/drainpipe-fixture`).
fn fixture() -> Command {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe
        .parent()
        .and_then(|examples| examples.parent())
        .expect("target dir");
    let path = dir.join("drainpipe-fixture");
    assert!(
        path.is_file(),
        "{} is missing: cargo build --release -p drainpipe-cli --bins",
        path.display()
    );
    Command::new(path)
}

/// The `drainpipe` binary built beside the fixture (`cargo build --release
/// -p drainpipe-cli --bins`).
fn built_drainpipe() -> std::path::PathBuf {
    let fixture = fixture();
    std::path::Path::new(fixture.as_std().get_program()).with_file_name("drainpipe")
}

/// One id-last oversize answer of `mib` MiB: returns (limit crossed, error,
/// line ended), each from the moment the request was sent.
async fn id_last(mib: u64, others_pending: bool) -> (Duration, Duration, Duration) {
    let limit = 4u64 << 20;
    let bytes = mib << 20;
    let session = Session::spawn(fixture(), config("native", limit as usize)).expect("spawn");
    let options = || drainpipe_host::session::CallOptions::timeout(Duration::from_secs(600));
    let slow = if others_pending {
        let arguments = serde_json::json!({"steps": 100, "step_ms": 100});
        Some(
            session
                .start_tool("slow", arguments, options())
                .await
                .expect("slow sent"),
        )
    } else {
        None
    };
    let arguments = serde_json::json!({"bytes": bytes, "id_last": true});
    let before = session.metrics().stdout_bytes;
    let started = Instant::now();
    let call = session
        .start_tool("sized", arguments, options())
        .await
        .expect("sent");
    // Watch the bytes read, to see when the limit and the line's end passed.
    let watcher = {
        let session = session.clone();
        tokio::spawn(async move {
            let mut crossed = None;
            loop {
                let read = session.metrics().stdout_bytes - before;
                if crossed.is_none() && read > limit {
                    crossed = Some(started.elapsed());
                }
                if read >= bytes {
                    return (crossed.expect("crossed first"), started.elapsed());
                }
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        })
    };
    let outcome = call.outcome().await;
    let error_at = started.elapsed();
    assert!(
        matches!(
            outcome,
            Err(drainpipe_host::session::CallError::TooLarge { .. })
        ),
        "{outcome:?}"
    );
    let (crossed, ended) = watcher.await.expect("watcher");
    drop(slow);
    session.shutdown().await;
    (crossed, error_at, ended)
}

/// Through `drainpipe proxy ARGS -- drainpipe-fixture`: the time from the
/// request to the end of its answer, and to the answer of the next request
/// (sent then); the answer's size; the proxy's peak RSS in KiB.
async fn proxy_result(mib: u64, proxy_args: &[&str]) -> (Duration, Duration, usize, u64) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let fixture = fixture();
    let dir = fixture.as_std().get_program().to_owned();
    let mut child = Command::new(built_drainpipe())
        .arg("proxy")
        .args(proxy_args)
        .args(["--metrics", "none", "--"])
        .arg(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("drainpipe proxy");
    let pid = child.id().expect("pid");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::with_capacity(1 << 20, child.stdout.take().expect("stdout"));
    let request = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"e2e\",\"version\":\"0\"}}}}}}\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{{\"name\":\"sized\",\"arguments\":{{\"bytes\":{},\"id_last\":true}}}}}}\n",
        mib << 20
    );
    let mut lines = request.split_inclusive('\n');
    let (initialize, call) = (lines.next().unwrap(), lines.next().unwrap());
    stdin
        .write_all(initialize.as_bytes())
        .await
        .expect("initialize");
    let mut line = Vec::new();
    stdout
        .read_until(b'\n', &mut line)
        .await
        .expect("initialize answer");
    let started = Instant::now();
    stdin.write_all(call.as_bytes()).await.expect("request");
    line.clear();
    stdout
        .read_until(b'\n', &mut line)
        .await
        .expect("the answer");
    let took = started.elapsed();
    let answer_len = line.len();
    // The next request is answered once the server has written the whole
    // line and the proxy has drained it: the time to drain and reject.
    let echo = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{}}}\n";
    stdin.write_all(echo.as_bytes()).await.expect("echo");
    line.clear();
    stdout.read_until(b'\n', &mut line).await.expect("the echo");
    let next = started.elapsed();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    drop(stdin);
    let _ = child.wait().await;
    (took, next, answer_len, peak)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("throughput") => {
            let gib: u64 = args.get(1).map_or(1, |s| s.parse().expect("GiB"));
            let bytes = gib << 30;
            let rate = |b: u64, d: Duration| b as f64 / d.as_secs_f64() / 1e9;
            let (plain, plain_time) = plain_drain(bytes).await;
            println!(
                "plain pipe drain:        {:>6.2} GB/s ({plain} bytes)",
                rate(plain, plain_time)
            );
            for backend in ["native", "component"] {
                let (read, frames, time) = guarded(bytes, backend).await;
                println!(
                    "guarded session, {backend:<9}: {:>6.2} GB/s ({read} bytes, {frames} frames) = {:.0}% of the plain drain",
                    rate(read, time),
                    100.0 * rate(read, time) / rate(plain, plain_time)
                );
            }
        }
        Some("flood") => {
            let gib: u64 = args.get(1).map_or(1, |s| s.parse().expect("GiB"));
            flood(gib, args.get(2).map_or("native", String::as_str)).await;
        }
        Some("id-last") => {
            let mib: u64 = args.get(1).map_or(200, |s| s.parse().expect("MiB"));
            for others in [false, true] {
                let (crossed, error, ended) = id_last(mib, others).await;
                println!(
                    "{mib} MiB id-last answer, {}: limit crossed at {crossed:.1?}, error at {error:.1?} ({:+.1} ms from the limit), line ended at {ended:.1?}",
                    if others {
                        "another request pending"
                    } else {
                        "the only request pending"
                    },
                    (error.as_secs_f64() - crossed.as_secs_f64()) * 1e3,
                );
            }
        }
        Some("proxy-result") => {
            let mib: u64 = args.get(1).map_or(200, |s| s.parse().expect("MiB"));
            let above = format!("{}MiB", mib + 16);
            for (what, proxy_args) in [
                ("forwarded whole", vec!["--max-frame", above.as_str()]),
                ("rejected", vec![]),
                ("condensed", vec!["--clip", "256KiB", "--spill-max", "0"]),
                (
                    "head only",
                    vec!["--clip", "256KiB", "--keep", "head", "--spill-max", "0"],
                ),
                (
                    "condensed+spill",
                    vec!["--clip", "256KiB", "--spill-max", "4GiB"],
                ),
                (
                    "in characters",
                    vec!["--clip", "262144chars", "--spill-max", "0"],
                ),
                (
                    "in tokens",
                    vec!["--clip", "65536tokens", "--spill-max", "0"],
                ),
            ] {
                let (took, next, bytes, peak) = proxy_result(mib, &proxy_args).await;
                println!(
                    "{mib} MiB result, {what:<15}: answer of {bytes} bytes in {took:.2?}, next answer at {next:.2?}; proxy peak RSS {:.1} MiB",
                    peak as f64 / 1024.0
                );
            }
        }
        Some("pipe-speed") => {
            let count: u64 = args.get(1).map_or(300_000, |s| s.parse().expect("COUNT"));
            pipe_speed(count).await;
        }
        Some("whole") => {
            let rounds: usize = args.get(1).map_or(5, |s| s.parse().expect("ROUNDS"));
            whole(rounds, args.get(2).map(std::path::PathBuf::from)).await;
        }
        Some("session-speed") => {
            // One session run of `pipe-speed`'s 100 B load, for a profiler.
            let count = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(300_000);
            let load = Load {
                count,
                size: 100,
                producer: Producer::Yes,
            };
            let (lines, _, took, _) = if args.get(2).is_some_and(|a| a == "block-on") {
                session_run(load, false).await
            } else {
                in_task(session_run(load, false)).await
            };
            println!("{lines} messages in {took:?}");
        }
        Some("latency") => {
            latency(LatencyPlan::parse(&args[1..])).await;
        }
        Some("echo-server") => echo_server(),
        Some("burn") => burn(),
        Some("relay") => relay(&args[1..]),
        Some("fast-producer") => fast_producer(
            args.get(1).and_then(|s| s.parse().ok()).expect("COUNT"),
            args.get(2).and_then(|s| s.parse().ok()).expect("SIZE"),
        ),
        Some("otel-cost") => {
            let calls: usize = args.get(1).map_or(5_000, |s| s.parse().expect("CALLS"));
            let count: u64 = args.get(2).map_or(300_000, |s| s.parse().expect("COUNT"));
            otel_cost(calls, count).await;
        }
        _ => eprintln!(
            "usage: e2e throughput [GIB] | e2e flood <GIB> <native|component> | e2e id-last [MIB] | e2e proxy-result [MIB] | e2e pipe-speed [COUNT] | e2e whole [ROUNDS] [DRAINPIPE] | e2e otel-cost [CALLS] [COUNT] | e2e latency [CALLS] [--rounds N] [--clients raw,node] [--servers rust,python,sdk] [--paths direct,relay,relay-poll,relay-tokio,relay-framed,proxy,clip,sandbox,session,governor,ultra-lean] [--burners 0,2] | e2e relay [--poll | --tokio | --framed] <command…> | e2e session-speed [COUNT] [block-on]"
        ),
    }
}

/// Every pipe-speed notification up to its padding.
const NOTIFICATION_HEAD: &str =
    r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":""#;

/// What the pipe-speed server writes: `count` notifications of `size`
/// bytes, from `producer`.
#[derive(Clone, Copy)]
struct Load {
    count: u64,
    size: usize,
    producer: Producer,
}

/// Who writes a load's notifications.
#[derive(Clone, Copy, PartialEq)]
enum Producer {
    /// `yes | head`: 4–8 KiB writes, the pace `head` sets.
    Yes,
    /// This binary's `fast-producer`: whole 1 MiB writes.
    Rust,
    /// The same 1 MiB writes from Python (`sys.stdout.buffer.write`), as a
    /// Python server that answers with large results writes them.
    Python,
}

/// What the Python producer runs (`python3 -c`, then COUNT and SIZE): the
/// same lines as `fast-producer`, 1 MiB of them per write.
const PYTHON_PRODUCER: &str = r#"import sys
count, size = int(sys.argv[1]), int(sys.argv[2])
head = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
tail = b'"}}\n'
line = head + b"x" * (size - len(head) - len(tail)) + tail
per = max(1, (1 << 20) // size)
out = sys.stdout.buffer
while count > 0:
    n = min(count, per)
    out.write(line * n)
    count -= n
out.flush()
"#;

/// A server that writes `load`'s notifications (newline included) as fast
/// as a pipe takes them, then exits.
fn notifications_child(
    Load {
        count,
        size,
        producer,
    }: Load,
) -> Command {
    if producer == Producer::Rust {
        let mut command = Command::new(std::env::current_exe().expect("current exe"));
        command.args(["fast-producer", &count.to_string(), &size.to_string()]);
        return command;
    }
    if producer == Producer::Python {
        let mut command = Command::new("python3");
        command
            .args(["-c", PYTHON_PRODUCER])
            .args([count.to_string(), size.to_string()]);
        return command;
    }
    let head = NOTIFICATION_HEAD;
    let tail = r#""}}"#;
    let padding = "x".repeat(size - 1 - head.len() - tail.len());
    let mut command = Command::new("sh");
    command.args([
        "-c",
        &format!("yes '{head}{padding}{tail}' | head -n {count}"),
    ]);
    command
}

/// Reads `stdout` to its end; returns the bytes and newlines read.
async fn drain_counting(mut stdout: impl tokio::io::AsyncRead + Unpin) -> (u64, u64) {
    let mut buf = vec![0u8; 64 << 10];
    let (mut bytes, mut lines) = (0u64, 0u64);
    loop {
        let n = stdout.read(&mut buf).await.expect("read");
        if n == 0 {
            return (bytes, lines);
        }
        bytes += n as u64;
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
    }
}

/// The peak RSS (VmHWM) of `pid` so far, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// One run of one path: (messages, bytes, time, the proxy's peak RSS in KiB).
type Run = (u64, u64, Duration, u64);

async fn pipe_speed(count: u64) {
    const ROUNDS: usize = 5;
    let drainpipe = built_drainpipe();
    println!(
        "| size | path | messages | time (median of {ROUNDS}) | messages/s | MB/s | share of the pipe | peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (size, count, producer) in [
        (100usize, count, Producer::Yes),
        (1024, count, Producer::Yes),
        (64 << 10, (count / 16).max(1), Producer::Yes),
        (64 << 10, (count / 16).max(1), Producer::Rust),
        (64 << 10, (count / 16).max(1), Producer::Python),
    ] {
        let load = Load {
            count,
            size,
            producer,
        };
        let mut runs: [Vec<Run>; 9] = Default::default();
        // Interleaved, so a busy moment of the machine hits every path alike.
        // Every reading end runs as a spawned task, as a tokio application's
        // long-lived reader does, but the last: the same session taken from
        // `block_on` (the body of `#[tokio::main]`), whose thread is not a
        // worker, so each read's hand-over wakes it from a futex.
        for _ in 0..ROUNDS {
            runs[0].push(in_task(plain_pipe_run(load, 0)).await);
            runs[1].push(in_task(plain_pipe_run(load, 1)).await);
            let path = drainpipe.clone();
            runs[2].push(in_task(async move { proxy_run(&path, &[], load).await }).await);
            let path = drainpipe.clone();
            runs[3]
                .push(in_task(async move { proxy_run(&path, &["--sandbox"], load).await }).await);
            runs[4].push(in_task(session_run(load, false)).await);
            runs[5].push(in_task(session_run(load, true)).await);
            runs[6].push(session_run(load, false).await);
            runs[7].push(to_dev_null(None, load).await);
            runs[8].push(to_dev_null(Some(&drainpipe), load).await);
        }
        let median = |runs: &mut Vec<Run>| {
            runs.sort_by_key(|run| run.2);
            runs[runs.len() / 2]
        };
        let pipe = median(&mut runs[0]);
        let paths = [
            // Pipes escaped: these names go into a Markdown table.
            "plain pipe (server \\| cat)",
            "server \\| cat \\| cat",
            "drainpipe proxy",
            "drainpipe proxy --sandbox",
            "guarded session, next_incoming",
            "guarded session, next_incoming_batch",
            "guarded session, next_incoming from block_on",
            "server \\| cat > /dev/null (to its exit)",
            "drainpipe proxy > /dev/null (to its exit)",
        ];
        for (path, runs) in paths.into_iter().zip(runs.iter_mut()) {
            let (lines, bytes, took, _) = median(runs);
            let peak = runs.iter().map(|run| run.3).max().unwrap_or(0);
            println!(
                "| {size} B{} | {path} | {lines} | {took:.2?} | {:.0} k | {:.0} | {:.0}% | {} |",
                match producer {
                    Producer::Yes => "",
                    Producer::Rust => ", 1 MiB writes (Rust)",
                    Producer::Python => ", 1 MiB writes (Python)",
                },
                lines as f64 / took.as_secs_f64() / 1e3,
                bytes as f64 / took.as_secs_f64() / 1e6,
                100.0 * pipe.2.as_secs_f64() / took.as_secs_f64(),
                if peak > 0 {
                    format!("{:.1} MiB", peak as f64 / 1024.0)
                } else {
                    String::new()
                }
            );
        }
    }
}

/// The headline rows: the pipe as a user runs it. `writer | cat >
/// /dev/null` against `drainpipe proxy -- writer > /dev/null`, each timed
/// from its start to the exit of its last process (the writer's start-up
/// included in both), nothing sampling beside them, `rounds` interleaved
/// rounds, medians. The writers send notifications of exactly the row's
/// size in writes of about 1 MiB, from Python and from Rust: 8,000 of
/// 64 KiB, 500 of 1 MiB, 300,000 of 1 KiB, 1,000,000 of 100 B. The proxy
/// is `drainpipe` (another build, to compare), else the one built beside
/// this bench.
async fn whole(rounds: usize, drainpipe: Option<std::path::PathBuf>) {
    let drainpipe = drainpipe.unwrap_or_else(built_drainpipe);
    println!(
        "| lines | writer | `cat`, median of {rounds} | proxy, median of {rounds} | the proxy's share of `cat`'s speed | goal |"
    );
    println!("|---|---|---:|---:|---:|---:|");
    for (count, size, goal) in [
        (8_000u64, 64usize << 10, "90 %"),
        (500, 1 << 20, "90 %"),
        (300_000, 1 << 10, "—"),
        (1_000_000, 100, "75 %"),
    ] {
        for producer in [Producer::Python, Producer::Rust] {
            let load = Load {
                count,
                size,
                producer,
            };
            let (mut cats, mut proxies) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                cats.push(to_dev_null(None, load).await.2);
                proxies.push(to_dev_null(Some(&drainpipe), load).await.2);
            }
            cats.sort();
            proxies.sort();
            let (cat, proxy) = (cats[rounds / 2], proxies[rounds / 2]);
            let size = match size {
                s if s >= 1 << 20 => format!("{} MiB", s >> 20),
                s if s >= 1 << 10 => format!("{} KiB", s >> 10),
                s => format!("{s} B"),
            };
            println!(
                "| {count} of {size} | {} | {} ms | {} ms | {:.0} % | {goal} |",
                match producer {
                    Producer::Python => "Python",
                    _ => "Rust",
                },
                cat.as_millis(),
                proxy.as_millis(),
                100.0 * cat.as_secs_f64() / proxy.as_secs_f64(),
            );
        }
    }
}

/// `server | cat > /dev/null`, or with `drainpipe`, `drainpipe proxy --
/// server > /dev/null` (its stdin left open): the time until `cat`, or the
/// proxy, has exited. No reader here: what the proxy costs when its output
/// is not a pipe (a file, `/dev/null`), start and end included.
async fn to_dev_null(drainpipe: Option<&std::path::Path>, load: Load) -> Run {
    let server = notifications_child(load);
    let started = Instant::now();
    let (mut last, others) = match drainpipe {
        Some(drainpipe) => {
            let proxy = proxy_command(drainpipe, &[], server.as_std())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("drainpipe proxy");
            (proxy, None)
        }
        None => {
            let mut server = server;
            let mut server = server
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("server");
            let cat = cat_after(&mut server, std::process::Stdio::null());
            (cat, Some(server))
        }
    };
    last.wait().await.expect("wait");
    let took = started.elapsed();
    if let Some(mut server) = others {
        server.wait().await.expect("wait");
    }
    let bytes = load.count * load.size as u64;
    (load.count, bytes, took, 0)
}

/// A `cat` reading `server`'s stdout (taken from it), writing to `stdout`.
fn cat_after(
    server: &mut tokio::process::Child,
    stdout: std::process::Stdio,
) -> tokio::process::Child {
    let out: std::process::Stdio = server
        .stdout
        .take()
        .expect("piped")
        .try_into()
        .expect("a pipe");
    Command::new("cat")
        .stdin(out)
        .stdout(stdout)
        .spawn()
        .expect("cat")
}

/// Runs one path's reading end as a spawned task on the runtime's workers.
async fn in_task(run: impl std::future::Future<Output = Run> + Send + 'static) -> Run {
    tokio::spawn(run).await.expect("the bench's task")
}

/// `server | cat`: the server's stdout read here, as fast as it comes; with
/// `cats` = 1, `server | cat | cat` (one more pipe hop: a real `cat` between
/// the server and this reader, as the proxy is).
async fn plain_pipe_run(load: Load, cats: usize) -> Run {
    let started = Instant::now();
    let mut server = notifications_child(load)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("server");
    let mut cat = None;
    let stdout: Box<dyn tokio::io::AsyncRead + Unpin + Send> = if cats == 0 {
        Box::new(server.stdout.take().expect("piped"))
    } else {
        let mut child = cat_after(&mut server, std::process::Stdio::piped());
        let stdout = child.stdout.take().expect("piped");
        cat = Some(child);
        Box::new(stdout)
    };
    let (bytes, lines) = drain_counting(stdout).await;
    let took = started.elapsed();
    server.wait().await.expect("wait");
    if let Some(mut cat) = cat {
        cat.wait().await.expect("wait");
    }
    (lines, bytes, took, 0)
}

/// `e2e fast-producer COUNT SIZE`: COUNT notifications of SIZE bytes
/// written to stdout in 1 MiB writes, as fast as the pipe takes them.
fn fast_producer(count: u64, size: usize) {
    use std::io::Write;
    let tail = "\"}}\n";
    let mut line = Vec::with_capacity(size);
    line.extend_from_slice(NOTIFICATION_HEAD.as_bytes());
    line.resize(size - tail.len(), b'x');
    line.extend_from_slice(tail.as_bytes());
    let per_write = ((1usize << 20) / size).max(1);
    let buffer = line.repeat(per_write);
    let mut stdout = std::io::stdout().lock();
    let mut left = count;
    while left > 0 {
        let lines = left.min(per_write as u64) as usize;
        if stdout.write_all(&buffer[..lines * size]).is_err() {
            return;
        }
        left -= lines as u64;
    }
}

/// `drainpipe proxy -- server`, strict validation on (the default), its
/// stdout read here; the proxy's VmHWM sampled every 5 ms.
async fn proxy_run(drainpipe: &std::path::Path, extra: &[&str], load: Load) -> Run {
    proxy_run_env(drainpipe, extra, None, load).await
}

/// `drainpipe proxy --metrics none EXTRA -- server`, its stdin piped (held
/// open by the caller) and killed if dropped; stdout is the caller's.
fn proxy_command(
    drainpipe: &std::path::Path,
    extra: &[&str],
    server: &std::process::Command,
) -> Command {
    let mut command = Command::new(drainpipe);
    command
        .args(["proxy", "--metrics", "none"])
        .args(extra)
        .arg("--")
        .arg(server.get_program())
        .args(server.get_args())
        .stdin(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

/// [`proxy_run`], exporting telemetry to `endpoint` if given.
async fn proxy_run_env(
    drainpipe: &std::path::Path,
    extra: &[&str],
    endpoint: Option<&str>,
    load: Load,
) -> Run {
    use std::sync::atomic::{AtomicU64, Ordering};
    let server = notifications_child(load);
    let server = server.as_std();
    let started = Instant::now();
    let mut child = proxy_command(drainpipe, extra, server);
    export_to(&mut child, endpoint);
    let mut child = child
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("drainpipe proxy");
    let pid = child.id().expect("pid");
    let stdin = child.stdin.take();
    let peak = std::sync::Arc::new(AtomicU64::new(0));
    let watch = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                let now = peak_rss_kib(pid);
                if now == 0 {
                    break;
                }
                peak.fetch_max(now, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let (bytes, lines) = drain_counting(child.stdout.take().expect("piped")).await;
    let took = started.elapsed();
    drop(stdin);
    child.wait().await.expect("wait");
    watch.abort();
    (lines, bytes, took, peak.load(Ordering::Relaxed))
}

/// The guarded session's reader and dispatcher, every message taken with
/// `next_incoming`, or with `next_incoming_batch` if `batched`.
async fn session_run(load: Load, batched: bool) -> Run {
    let started = Instant::now();
    let session =
        Session::spawn(notifications_child(load), config("native", 4 << 20)).expect("spawn");
    let mut lines = 0u64;
    if batched {
        let mut batch = Vec::new();
        while session.next_incoming_batch(&mut batch).await {
            lines += batch.len() as u64;
            batch.clear();
        }
    } else {
        while session.next_incoming().await.is_some() {
            lines += 1;
        }
    }
    let took = started.elapsed();
    let bytes = session.metrics().stdout_bytes;
    session.shutdown().await;
    (lines, bytes, took, 0)
}

/// Sets or clears the OTLP endpoint of a `drainpipe` command.
fn export_to(command: &mut Command, endpoint: Option<&str>) {
    command
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
        .env_remove("OTEL_SDK_DISABLED");
    match endpoint {
        Some(endpoint) => command.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        None => command.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT"),
    };
}

/// A collector for the bench: accepts OTLP/HTTP requests and answers each
/// `200` at once (`answer`), or accepts connections and never answers.
fn collector(answer: bool) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().expect("clone");
                let mut reader = BufReader::new(stream);
                if !answer {
                    let mut sink = [0u8; 65536];
                    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                    return;
                }
                loop {
                    let mut length = 0usize;
                    let mut first = true;
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 {
                            return;
                        }
                        let header = header.trim_end();
                        if header.is_empty() && !first {
                            break;
                        }
                        first = false;
                        if let Some((name, value)) = header.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err()
                        || writer
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                            .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// `calls` sequential `tools/call echo` through `drainpipe proxy` in front
/// of the fixture, exporting to `endpoint` if given: the round trips'
/// durations, sorted, and the time from closing the proxy's stdin to the
/// end of its stdout and to its exit.
async fn echo_round_trips(
    drainpipe: &std::path::Path,
    endpoint: Option<&str>,
    calls: usize,
) -> (Vec<Duration>, Duration, Duration) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let fixture = fixture();
    let mut child = proxy_command(drainpipe, &[], fixture.as_std());
    export_to(&mut child, endpoint);
    let mut child = child
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("drainpipe proxy");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = Vec::new();
    stdin
        .write_all(INITIALIZE.as_bytes())
        .await
        .expect("initialize");
    stdout
        .read_until(b'\n', &mut line)
        .await
        .expect("initialize answer");
    let mut took = Vec::with_capacity(calls);
    for id in 1..=calls + 100 {
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"n\":{id}}}}}}}\n"
        );
        let started = Instant::now();
        stdin.write_all(request.as_bytes()).await.expect("request");
        line.clear();
        stdout.read_until(b'\n', &mut line).await.expect("answer");
        // The first 100 warm up.
        if id > 100 {
            took.push(started.elapsed());
        }
    }
    let closing = Instant::now();
    drop(stdin);
    line.clear();
    while stdout.read_until(b'\n', &mut line).await.expect("end") > 0 {
        line.clear();
    }
    let end_of_output = closing.elapsed();
    child.wait().await.expect("wait");
    let exited = closing.elapsed();
    took.sort();
    (took, end_of_output, exited)
}

/// What OpenTelemetry export costs the proxy: export off, to a collector
/// that answers, and to one that accepts connections and never answers.
async fn otel_cost(calls: usize, count: u64) {
    const ROUNDS: usize = 5;
    let drainpipe = built_drainpipe();
    let answering = collector(true);
    let black_hole = collector(false);
    let settings: [(&str, Option<&str>); 3] = [
        ("export off", None),
        ("export to a collector", Some(answering.as_str())),
        ("export to a black hole", Some(black_hole.as_str())),
    ];
    println!(
        "| export | 100 B notifications: time (median of {ROUNDS}) | share of export off | {calls} echo calls: p50 | p99 | end of output after stdin closed | exit |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut pipe: [Vec<Duration>; 3] = Default::default();
    let mut trips: [Vec<(Vec<Duration>, Duration, Duration)>; 3] = Default::default();
    for _ in 0..ROUNDS {
        for (k, (_, endpoint)) in settings.iter().enumerate() {
            pipe[k].push(
                proxy_run_env(
                    &drainpipe,
                    &[],
                    *endpoint,
                    Load {
                        count,
                        size: 100,
                        producer: Producer::Yes,
                    },
                )
                .await
                .2,
            );
            trips[k].push(echo_round_trips(&drainpipe, *endpoint, calls).await);
        }
    }
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let off = median(pipe[0].clone());
    for (k, (what, _)) in settings.iter().enumerate() {
        let time = median(pipe[k].clone());
        // The round trips of all rounds together; the exit times' medians.
        let mut all: Vec<Duration> = trips[k].iter().flat_map(|t| t.0.iter().copied()).collect();
        all.sort();
        let pick = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)];
        let end = median(trips[k].iter().map(|t| t.1).collect());
        let exit = median(trips[k].iter().map(|t| t.2).collect());
        println!(
            "| {what} | {time:.2?} | {:.0}% | {:.0} µs | {:.0} µs | {end:.1?} | {exit:.1?} |",
            100.0 * off.as_secs_f64() / time.as_secs_f64(),
            pick(0.5).as_secs_f64() * 1e6,
            pick(0.99).as_secs_f64() * 1e6,
        );
    }
}

/// A raw JSON-RPC echo server: every request line is answered at once with
/// a small `tools/call`-shaped result carrying its `id`; notifications get
/// nothing. Blocking std IO, one line at a time: the fastest server a
/// round trip can have, so what a path adds shows.
fn echo_server() {
    use std::io::{BufRead, Write};
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id") else {
            continue;
        };
        // The call's own text back (what the Node client checks), "ok"
        // for anything else.
        let text = &message["params"]["arguments"]["text"];
        let text = if text.is_string() {
            text.to_string()
        } else {
            "\"ok\"".to_string()
        };
        let answer = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{{\"tools\":{{}}}},\"serverInfo\":{{\"name\":\"echo\",\"version\":\"0\"}},\"content\":[{{\"type\":\"text\",\"text\":{text}}}]}}}}\n"
        );
        if stdout
            .write_all(answer.as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return;
        }
    }
}

/// The servers of the latency bench, by the name `--servers` takes: this
/// binary's raw echo server, a Python echo server on the standard library
/// alone (`tests/peers/python/echo_server.py`: one line in, one line out,
/// as many hand-written servers are), and the official Python SDK's server
/// (`tests/peers/python`, if installed).
fn latency_servers(wanted: &[String]) -> Vec<(&'static str, std::process::Command)> {
    let peers = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers");
    let mut servers = Vec::new();
    let mut raw = std::process::Command::new(std::env::current_exe().expect("current exe"));
    raw.arg("echo-server");
    servers.push(("rust", "raw JSON-RPC echo (Rust)", raw));
    let mut stdlib = std::process::Command::new("python3");
    stdlib.arg(peers.join("python/echo_server.py"));
    servers.push(("python", "Python echo, stdlib only", stdlib));
    let python = peers.join("python/.venv/bin/python");
    if python.is_file() {
        let mut sdk = std::process::Command::new(python);
        sdk.arg(peers.join("python/server.py"));
        servers.push(("sdk", "Python SDK server (FastMCP)", sdk));
    } else {
        eprintln!("skipping the Python SDK server: run bash tests/peers/setup.sh");
    }
    servers
        .into_iter()
        .filter(|(key, _, _)| wanted.iter().any(|w| w == key))
        .map(|(_, name, command)| (name, command))
        .collect()
}

/// The handshake every raw client here opens with, and its notification.
const INITIALIZE: &str = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"e2e\",\"version\":\"0\"}}}\n";
const INITIALIZED: &str = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
/// Calls made before any is counted, on each fresh process.
const LATENCY_WARM_UP: usize = 100;

/// Who makes the calls: this binary, writing and reading raw lines on
/// blocking std pipes (it adds as little as a client can), or the official
/// TypeScript SDK's client in Node.js (`tests/peers/node/latency-client.mjs`),
/// as most agents' hosts are, which gives its child sockets, not pipes.
#[derive(Clone, Copy, PartialEq)]
enum Client {
    Raw,
    Node,
}

/// What stands between the client and the server.
#[derive(Clone, Copy)]
enum Via {
    Direct,
    /// `drainpipe proxy` with these options.
    Proxy(&'static [&'static str]),
    /// A guarded session (`Session::call`); the raw client only.
    Session,
    /// Another stdio proxy: the command before the server's.
    Rival(&'static str, &'static [&'static str]),
    /// `e2e relay`: the least any process between the two can add.
    Relay(RelayLoop),
}

/// Every path of the latency bench, by the name `--paths` takes.
const LATENCY_PATHS: [(&str, &str, Via); 11] = [
    ("direct", "direct", Via::Direct),
    (
        "relay",
        "plain relay (e2e relay)",
        Via::Relay(RelayLoop::Threads),
    ),
    (
        "relay-poll",
        "poll(2) relay (e2e relay --poll)",
        Via::Relay(RelayLoop::Poll),
    ),
    (
        "relay-tokio",
        "tokio relay (e2e relay --tokio)",
        Via::Relay(RelayLoop::Tokio),
    ),
    (
        "relay-framed",
        "framing relay, two threads (e2e relay --framed)",
        Via::Relay(RelayLoop::Framed),
    ),
    ("proxy", "drainpipe proxy", Via::Proxy(&[])),
    (
        "clip",
        "drainpipe proxy --clip 64KiB",
        Via::Proxy(&["--clip", "64KiB"]),
    ),
    (
        "sandbox",
        "drainpipe proxy --sandbox",
        Via::Proxy(&["--sandbox"]),
    ),
    ("session", "guarded session (Session::call)", Via::Session),
    (
        "governor",
        "tool-result-size-governor 1.0.0",
        Via::Rival("tool-result-governor-proxy", &["--"]),
    ),
    (
        "ultra-lean",
        "ultra-lean-mcp-proxy 0.3.2",
        Via::Rival("ultra-lean-mcp-proxy", &["proxy", "--"]),
    ),
];

/// The command a client starts for `via` in front of `server`; `None` for
/// the session, or a rival that is not installed (`bench/rivals/setup.sh`).
fn latency_command(
    via: Via,
    server: &std::process::Command,
    drainpipe: &std::path::Path,
) -> Option<std::process::Command> {
    let mut command = match via {
        Via::Direct => return Some(clone_command(server)),
        Via::Session => return None,
        Via::Relay(how) => {
            let mut command =
                std::process::Command::new(std::env::current_exe().expect("this binary"));
            command.arg("relay").args(how.flag());
            command
        }
        Via::Proxy(args) => {
            let mut command = std::process::Command::new(drainpipe);
            command
                .args(["proxy", "--metrics", "none"])
                .args(args)
                .arg("--");
            command.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
            command
        }
        Via::Rival(program, args) => {
            let bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../bench/rivals/.venv/bin")
                .join(program);
            if !bin.is_file() {
                return None;
            }
            let mut command = std::process::Command::new(bin);
            command.args(args);
            command
        }
    };
    command.arg(server.get_program()).args(server.get_args());
    Some(command)
}

/// `calls` sequential `tools/call echo` written and read as raw lines on
/// blocking std pipes by this process, through `command`.
/// The first [`LATENCY_WARM_UP`] calls are not counted.
fn raw_round_trips(mut command: std::process::Command, calls: usize) -> Vec<Duration> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = Vec::new();
    stdin.write_all(INITIALIZE.as_bytes()).expect("initialize");
    stdout
        .read_until(b'\n', &mut line)
        .expect("initialize answer");
    stdin
        .write_all(INITIALIZED.as_bytes())
        .expect("initialized");
    let mut took = Vec::with_capacity(calls);
    for id in 1..=calls + LATENCY_WARM_UP {
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hi\"}}}}}}\n"
        );
        let started = Instant::now();
        stdin.write_all(request.as_bytes()).expect("request");
        line.clear();
        stdout.read_until(b'\n', &mut line).expect("answer");
        let elapsed = started.elapsed();
        assert!(
            line.windows(7).any(|w| w == b"\"text\":"),
            "not an echo answer: {}",
            String::from_utf8_lossy(&line)
        );
        if id > LATENCY_WARM_UP {
            took.push(elapsed);
        }
    }
    drop(stdin);
    let _ = child.wait();
    took
}

/// The same calls made by the TypeScript SDK's client in Node.js, which
/// starts `command` itself and reports each call's time.
fn node_round_trips(command: &std::process::Command, calls: usize) -> Vec<Duration> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/peers/node/latency-client.mjs");
    let output = std::process::Command::new("node")
        .arg(script)
        .args(["--calls", &calls.to_string()])
        .args(["--warm-up", &LATENCY_WARM_UP.to_string()])
        .arg("--")
        .arg(command.get_program())
        .args(command.get_args())
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("node latency-client.mjs");
    assert!(
        output.status.success(),
        "the Node client failed: {}",
        output.status
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("its report");
    report["ns"]
        .as_array()
        .expect("ns")
        .iter()
        .map(|ns| Duration::from_nanos(ns.as_u64().expect("a time")))
        .collect()
}

/// The same calls through a guarded session (`Session::call`), the caller
/// on this runtime.
async fn session_round_trips(server: &std::process::Command, calls: usize) -> Vec<Duration> {
    let mut command = Command::from(clone_command(server));
    command.stderr(std::process::Stdio::null());
    let session = Session::spawn(command, config("native", 4 << 20)).expect("spawn");
    let options = drainpipe_host::session::CallOptions::default();
    let initialize: serde_json::Value = serde_json::from_str(INITIALIZE).expect("initialize");
    session
        .call("initialize", initialize["params"].clone(), options)
        .await
        .expect("initialize");
    session
        .notify("notifications/initialized", serde_json::json!({}))
        .await
        .expect("initialized");
    let mut took = Vec::with_capacity(calls);
    for call in 0..calls + LATENCY_WARM_UP {
        let started = Instant::now();
        let answer = session
            .call_tool("echo", serde_json::json!({"text": "hi"}), options)
            .await
            .expect("echo");
        let elapsed = started.elapsed();
        drop(answer);
        if call >= LATENCY_WARM_UP {
            took.push(elapsed);
        }
    }
    session.shutdown().await;
    took
}

/// A process that spins on one core until killed: the load of a laptop
/// whose other programs are busy (`e2e burn`).
fn burn() {
    let mut x = 0u64;
    loop {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// How `e2e relay` waits for its two inputs.
#[derive(Clone, Copy)]
enum RelayLoop {
    /// One thread per direction, blocking reads and writes.
    Threads,
    /// One thread waiting in `poll(2)` for either input, then blocking
    /// reads and writes: an event loop with nothing else in it.
    Poll,
    /// The threads, each read through the framer (`InPlaceFramer`, the
    /// proxy's limits) and only its frames written on, gathered into one
    /// write per read as the proxy does: what a proxy reading each
    /// direction on a thread of its own would cost, routing aside.
    Framed,
    /// A tokio runtime with two workers (as `drainpipe proxy` runs), one
    /// task per direction copying through the reactor, the host's end read
    /// and written as the proxy does (`proxy::host_stdin`, `host_stdout`).
    Tokio,
}

impl RelayLoop {
    /// `--poll`, `--tokio`, `--framed`, or the threads.
    fn parse(args: &[String]) -> (RelayLoop, &[String]) {
        match args.first().map(String::as_str) {
            Some("--poll") => (RelayLoop::Poll, &args[1..]),
            Some("--tokio") => (RelayLoop::Tokio, &args[1..]),
            Some("--framed") => (RelayLoop::Framed, &args[1..]),
            _ => (RelayLoop::Threads, args),
        }
    }

    /// The option that selects it.
    fn flag(self) -> Option<&'static str> {
        match self {
            RelayLoop::Threads => None,
            RelayLoop::Poll => Some("--poll"),
            RelayLoop::Tokio => Some("--tokio"),
            RelayLoop::Framed => Some("--framed"),
        }
    }
}

/// `e2e relay [--poll | --tokio | --framed] <command…>`: starts the
/// command and copies this process's stdin to its stdin and its stdout to
/// this process's stdout. The floor for a stdio proxy: what a process in
/// the middle costs before it does any work (two more wake-ups per call);
/// with `--poll` and `--tokio`, what waiting in an event loop adds to that;
/// with `--framed`, what framing adds without one.
fn relay(args: &[String]) {
    let (how, command) = RelayLoop::parse(args);
    let (program, args) = command
        .split_first()
        .expect("e2e relay [--poll | --tokio | --framed] <command…>");
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the relayed command");
    let to_child = child.stdin.take().expect("stdin");
    let from_child = child.stdout.take().expect("stdout");
    match how {
        RelayLoop::Threads => relay_threads(to_child, from_child, relay_plain),
        RelayLoop::Framed => relay_threads(to_child, from_child, relay_framed),
        RelayLoop::Poll => relay_poll(to_child, from_child),
        // `main` runs in a runtime already: the relay's own starts on a
        // thread outside it.
        RelayLoop::Tokio => std::thread::spawn(move || relay_tokio(to_child, from_child))
            .join()
            .expect("the tokio relay"),
    }
    let _ = child.wait();
}

/// One read of `from` into `buf`, written to `to` whole: false once
/// either side has ended.
fn relay_copy(mut from: impl std::io::Read, mut to: impl std::io::Write, buf: &mut [u8]) -> bool {
    match from.read(buf) {
        Ok(n) if n > 0 => to.write_all(&buf[..n]).and_then(|()| to.flush()).is_ok(),
        _ => false,
    }
}

/// One thread per direction, each running `direction` from its input to
/// its output until either ends.
fn relay_threads(
    to_child: std::process::ChildStdin,
    from_child: std::process::ChildStdout,
    direction: fn(&mut dyn std::io::Read, &mut dyn std::io::Write),
) {
    std::thread::spawn(move || direction(&mut std::io::stdin().lock(), &mut { to_child }));
    direction(&mut { from_child }, &mut std::io::stdout().lock());
}

/// Copies `from` to `to`, a read at a time, until either ends.
fn relay_plain(from: &mut dyn std::io::Read, to: &mut dyn std::io::Write) {
    let mut buf = vec![0u8; 64 << 10];
    while relay_copy(&mut *from, &mut *to, &mut buf) {}
}

/// Reads `from` through the framer until it ends, writing the frames of
/// each read to `to` in one write.
fn relay_framed(from: &mut dyn std::io::Read, to: &mut dyn std::io::Write) {
    use drainpipe_framer::{Event, InPlaceFramer};
    let mut framer = InPlaceFramer::new(Config::default(), 64 << 10);
    let mut out = Vec::new();
    loop {
        let n = match from.read(framer.spare()) {
            Ok(n) if n > 0 => n,
            _ => return,
        };
        framer.filled(n, |event| {
            if let Event::Frame(frame) = event {
                out.extend_from_slice(frame.bytes);
                out.push(b'\n');
            }
        });
        if !out.is_empty() && to.write_all(&out).and_then(|()| to.flush()).is_err() {
            return;
        }
        out.clear();
    }
}

fn relay_poll(mut to_child: std::process::ChildStdin, mut from_child: std::process::ChildStdout) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let (stdin, mut input, mut out) = (
        std::io::stdin(),
        std::io::stdin().lock(),
        std::io::stdout().lock(),
    );
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let mut fds = [
            PollFd::new(stdin.as_fd(), PollFlags::POLLIN),
            PollFd::new(from_child.as_fd(), PollFlags::POLLIN),
        ];
        if poll(&mut fds, PollTimeout::NONE).is_err() {
            return;
        }
        let ready = fds.map(|fd| fd.any().unwrap_or(true));
        if ready[0] && !relay_copy(&mut input, &mut to_child, &mut buf) {
            return;
        }
        if ready[1] && !relay_copy(&mut from_child, &mut out, &mut buf) {
            return;
        }
    }
}

fn relay_tokio(to_child: std::process::ChildStdin, from_child: std::process::ChildStdout) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut to_child = tokio::process::ChildStdin::from_std(to_child).expect("stdin");
        let mut from_child = tokio::process::ChildStdout::from_std(from_child).expect("stdout");
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut drainpipe_host::proxy::host_stdin(), &mut to_child).await;
        });
        let _ = tokio::io::copy(&mut from_child, &mut drainpipe_host::proxy::host_stdout()).await;
    });
}

/// What `e2e latency` runs: every comma-separated list option, and the
/// calls counted per path, split over `rounds` interleaved rounds.
struct LatencyPlan {
    calls: usize,
    rounds: usize,
    clients: Vec<String>,
    servers: Vec<String>,
    paths: Vec<String>,
    burners: Vec<usize>,
}

impl LatencyPlan {
    /// `[CALLS] [--rounds N] [--clients raw,node] [--servers rust,python,sdk]
    /// [--paths direct,proxy,…] [--burners 0,2]`
    fn parse(args: &[String]) -> LatencyPlan {
        let option = |name: &str, fallback: &str| -> Vec<String> {
            args.iter()
                .position(|a| a == name)
                .and_then(|at| args.get(at + 1))
                .map_or(fallback, String::as_str)
                .split(',')
                .map(str::to_string)
                .collect()
        };
        let all_paths: Vec<&str> = LATENCY_PATHS.iter().map(|(key, _, _)| *key).collect();
        LatencyPlan {
            calls: args
                .first()
                .filter(|a| !a.starts_with("--"))
                .map_or(10_000, |a| a.parse().expect("CALLS")),
            rounds: option("--rounds", "20")[0].parse().expect("--rounds N"),
            clients: option("--clients", "raw,node"),
            servers: option("--servers", "rust,python,sdk"),
            paths: option("--paths", &all_paths.join(",")),
            burners: option("--burners", "0,2")
                .iter()
                .map(|n| n.parse().expect("--burners N,M"))
                .collect(),
        }
    }
}

/// Sequential small calls, direct and through every path, by each client
/// against each server, quiet and beside CPU burners: p50, p90, p99 and
/// p99.9 of `calls` round trips per path (`rounds` interleaved rounds of
/// `calls / rounds`, each on fresh processes, pooled).
async fn latency(plan: LatencyPlan) {
    let drainpipe = built_drainpipe();
    let clients: Vec<Client> = [("raw", Client::Raw), ("node", Client::Node)]
        .into_iter()
        .filter(|(key, _)| plan.clients.iter().any(|c| c == key))
        .map(|(_, client)| client)
        .collect();
    let per_round = plan.calls.div_ceil(plan.rounds);
    println!(
        "| load | client | server | path | calls | p50 | p90 | p99 | p99.9 | p50 − direct | p99 − direct |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for &burners in &plan.burners {
        let mut burning: Vec<std::process::Child> = (0..burners)
            .map(|_| {
                std::process::Command::new(std::env::current_exe().expect("current exe"))
                    .arg("burn")
                    .spawn()
                    .expect("a burner")
            })
            .collect();
        let load = match burners {
            0 => "quiet".to_string(),
            n => format!("{n} CPU burners"),
        };
        for (server_name, server) in latency_servers(&plan.servers) {
            for &client in &clients {
                let paths: Vec<(&str, Via)> = LATENCY_PATHS
                    .iter()
                    .filter(|(key, _, _)| plan.paths.iter().any(|p| p == key))
                    .filter(|(_, _, via)| client == Client::Raw || !matches!(via, Via::Session))
                    .filter(|(_, name, via)| {
                        let installed = matches!(via, Via::Session)
                            || latency_command(*via, &server, &drainpipe).is_some();
                        if !installed {
                            eprintln!("skipping {name}: run bash bench/rivals/setup.sh");
                        }
                        installed
                    })
                    .map(|(_, name, via)| (*name, *via))
                    .collect();
                let mut took: Vec<Vec<Duration>> = vec![Vec::new(); paths.len()];
                for _ in 0..plan.rounds {
                    for (k, &(_, via)) in paths.iter().enumerate() {
                        let trips = match (via, client) {
                            (Via::Session, _) => session_round_trips(&server, per_round).await,
                            (via, client) => {
                                let command =
                                    latency_command(via, &server, &drainpipe).expect("a command");
                                tokio::task::spawn_blocking(move || match client {
                                    Client::Raw => raw_round_trips(command, per_round),
                                    Client::Node => node_round_trips(&command, per_round),
                                })
                                .await
                                .expect("round trips")
                            }
                        };
                        took[k].extend(trips);
                    }
                }
                let client_name = match client {
                    Client::Raw => "raw (Rust)",
                    Client::Node => "TypeScript SDK (Node)",
                };
                print_latencies(
                    &format!("{load} | {client_name} | {server_name}"),
                    &paths,
                    &mut took,
                );
            }
        }
        for burner in &mut burning {
            let _ = burner.kill();
            let _ = burner.wait();
        }
    }
}

/// One table row per path, `took` in `paths`' order (sorted here); the
/// first path is the one the others are compared with.
fn print_latencies(prefix: &str, paths: &[(&str, Via)], took: &mut [Vec<Duration>]) {
    let at = |trips: &[Duration], q: f64| {
        trips[((trips.len() as f64 * q) as usize).min(trips.len() - 1)]
    };
    for trips in took.iter_mut() {
        trips.sort();
    }
    let (base50, base99) = (at(&took[0], 0.5), at(&took[0], 0.99));
    let us = |d: Duration| format!("{} µs", d.as_micros());
    let delta = |d: Duration, base: Duration| {
        format!("{:+} µs", d.as_micros() as i64 - base.as_micros() as i64)
    };
    for ((path, _), trips) in paths.iter().zip(took.iter()) {
        let (p50, p99) = (at(trips, 0.5), at(trips, 0.99));
        println!(
            "| {prefix} | {path} | {} | {} | {} | {} | {} | {} | {} |",
            trips.len(),
            us(p50),
            us(at(trips, 0.9)),
            us(p99),
            us(at(trips, 0.999)),
            delta(p50, base50),
            delta(p99, base99),
        );
    }
}

/// A new command with `command`'s program and arguments (a `Command` is
/// spent by each spawn's configuration; the servers are spawned per round).
fn clone_command(command: &std::process::Command) -> std::process::Command {
    let mut clone = std::process::Command::new(command.get_program());
    clone.args(command.get_args());
    clone
}
