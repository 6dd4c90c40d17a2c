//! Churn: `drainpipe serve` sessions end the three ways clients end (their
//! process killed mid-call, their machine gone without a FIN, a `DELETE`),
//! one after another, and none leaves a child or memory behind.
//!
//! 150 sessions over about 30 s here; `DRAINPIPE_CHURN_SESSIONS=1000
//! DRAINPIPE_CHURN_SECONDS=600` is the ten-minute run (BENCHMARKS.md).

#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drainpipe_release::http1::Request;
use drainpipe_release::served::{Serve, call, initialize};
use drainpipe_release::{drainpipe_binary, procs};
use nix::sys::signal::Signal;
use serde_json::json;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// serve's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("serve's status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// A call slow enough to be in flight when its client goes: 40 steps of
/// 50 ms.
fn slow(id: u64) -> serde_json::Value {
    call(id, "slow", json!({"steps": 40, "step_ms": 50}))
}

/// A client process (`drainpipe proxy --url`, a real HTTP client) killed
/// with SIGKILL while its call runs: the kernel closes its sockets.
fn killed(serve: &Serve) {
    let url = format!("http://{}/mcp", serve.addr);
    let mut client = Command::new(drainpipe_binary())
        .args(["proxy", "--no-oauth", "--metrics", "none", "--url", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a client");
    let mut stdin = client.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(client.stdout.take().expect("stdout"));
    writeln!(stdin, "{}", initialize(1)).expect("write");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let _ = tx.send(line);
        // Keep reading, so the client never blocks on its stdout.
        let _ = std::io::copy(&mut stdout, &mut std::io::sink());
    });
    let answered = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("initialize answered");
    assert!(answered.contains("drainpipe-fixture"), "{answered}");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .expect("write");
    writeln!(stdin, "{}", slow(2)).expect("write");
    std::thread::sleep(Duration::from_millis(300));
    procs::signal(client.id(), Signal::SIGKILL);
    let _ = client.wait();
}

/// A TCP relay that forwards until told to vanish, then forwards nothing
/// and closes nothing: to serve, a client whose machine left the network.
struct Relay {
    addr: std::net::SocketAddr,
    vanished: Arc<AtomicBool>,
}

fn relay(to: std::net::SocketAddr, held: Arc<Mutex<Vec<Arc<TcpStream>>>>) -> Relay {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("address");
    let vanished = Arc::new(AtomicBool::new(false));
    let stop = vanished.clone();
    std::thread::spawn(move || {
        // Until the client vanishes: once it has, nothing more connects,
        // and the listener closes.
        while !stop.load(Ordering::Relaxed) {
            let client = match listener.accept() {
                Ok((client, _)) => client,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                Err(_) => return,
            };
            client.set_nonblocking(false).expect("blocking");
            let server = Arc::new(TcpStream::connect(to).expect("connect to serve"));
            let client = Arc::new(client);
            for (from, into, serve_side) in [
                (client.clone(), server.clone(), server.clone()),
                (server.clone(), client.clone(), server.clone()),
            ] {
                let (stop, held) = (stop.clone(), held.clone());
                from.set_read_timeout(Some(Duration::from_millis(50)))
                    .expect("timeout");
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 << 10];
                    loop {
                        if stop.load(Ordering::Relaxed) {
                            // Silence: no byte and no FIN reach serve; its
                            // socket stays open until the test ends. The
                            // client's side is let go.
                            held.lock().unwrap().push(serve_side);
                            return;
                        }
                        match (&*from).read(&mut buf) {
                            Ok(0) => {
                                let _ = into.shutdown(std::net::Shutdown::Write);
                                return;
                            }
                            Ok(n) => {
                                if (&*into).write_all(&buf[..n]).is_err() {
                                    return;
                                }
                            }
                            Err(e)
                                if matches!(
                                    e.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => return,
                        }
                    }
                });
            }
        }
    });
    Relay { addr, vanished }
}

/// A client whose network vanished mid-call: no FIN ever reaches serve.
fn vanished(serve: &Serve, held: &Arc<Mutex<Vec<Arc<TcpStream>>>>) {
    let relay = relay(serve.addr, held.clone());
    let reply = Request::post("/mcp", &initialize(1)).send(relay.addr);
    assert_eq!(reply.status, 200);
    let session = reply
        .header("mcp-session-id")
        .expect("a session")
        .to_string();
    let mut open = Request::post("/mcp", &slow(2))
        .with("mcp-session-id", session)
        .open(relay.addr);
    open.next_event().expect("the priming event");
    relay.vanished.store(true, Ordering::Relaxed);
    drop(open);
}

/// A client that ends its session with DELETE.
fn deleted(serve: &Serve) {
    let reply = serve.post(None, &initialize(1));
    assert_eq!(reply.status, 200);
    let session = reply
        .header("mcp-session-id")
        .expect("a session")
        .to_string();
    let answered = serve.post(
        Some(&session),
        &call(2, "slow", json!({"steps": 2, "step_ms": 10})),
    );
    assert_eq!(answered.events().last().expect("an answer")["id"], 2);
    let deleted = Request::delete("/mcp")
        .with("mcp-session-id", session)
        .send(serve.addr);
    assert_eq!(deleted.status, 200);
}

#[test]
fn churn_leaves_no_child_and_no_memory() {
    let sessions = env_or("DRAINPIPE_CHURN_SESSIONS", 150) as usize;
    let seconds = env_or("DRAINPIPE_CHURN_SECONDS", 30);
    let serve = Serve::start(
        &[
            "--session-idle",
            "2s",
            "--resume-window",
            "0s",
            "--max-sessions",
            "256",
        ],
        &[],
    );
    // The baseline: serve after ten sessions came and went.
    let warming = Instant::now();
    for _ in 0..10 {
        deleted(&serve);
    }
    serve.wait_children(0, 30);
    let baseline = rss_kib(serve.child.id());
    eprintln!(
        "churn: warmed up in {:.1}s",
        warming.elapsed().as_secs_f64()
    );

    let held = Arc::new(Mutex::new(Vec::new()));
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    let pace = Duration::from_secs(seconds) / sessions as u32;
    let mut peak_children = 0;
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= sessions {
                        return;
                    }
                    // Spread over the run, as clients arrive.
                    let due = started + pace * i as u32;
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    match i % 3 {
                        0 => killed(&serve),
                        1 => vanished(&serve, &held),
                        _ => deleted(&serve),
                    }
                }
            });
        }
        while next.load(Ordering::Relaxed) < sessions {
            peak_children = peak_children.max(serve.children().len());
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let churned = started.elapsed();
    // Every session ends: killed and vanished ones by their idle timeout
    // once their call is over, the rest by DELETE.
    let draining = Instant::now();
    serve.wait_children(0, 60);
    let after = rss_kib(serve.child.id());
    eprintln!(
        "churn: {sessions} sessions in {:.1}s (a third killed, a third vanished, a third deleted), \
         at most {peak_children} children at once, none left {:.1}s later; serve's RSS {baseline} KiB before, {after} KiB after",
        churned.as_secs_f64(),
        draining.elapsed().as_secs_f64()
    );
    assert!(
        !serve.stderr().contains("panicked"),
        "serve panicked:\n{}",
        serve.stderr()
    );
    // Memory back to its baseline: what a session holds is freed with it
    // (the allocator keeps some pages; a leak of a session's buffers, 64
    // KiB and up each, would be hundreds of MiB here).
    assert!(
        after <= baseline + 32 * 1024,
        "serve's RSS grew from {baseline} KiB to {after} KiB over {sessions} sessions"
    );
    let ending = Instant::now();
    drop(held);
    drop(serve);
    eprintln!("churn: ended in {:.1}s", ending.elapsed().as_secs_f64());
}
