//! The proxy's own stdin and stdout as hosts give them: a stream socket
//! (Node.js, and so every host on the TypeScript SDK, gives its child a
//! socketpair per stdio stream), and regular files (`< requests > answers`).
//! Each must carry every message both ways, and a socket the proxy shares
//! with whoever else holds it must keep its blocking mode: the proxy reads
//! and writes it without `O_NONBLOCK` on the shared description.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};

use drainpipe_release::peers;
use drainpipe_release::*;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host-end","version":"0"}}}"#;

fn echo_call(id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"n":{id}}}}}}}"#
    )
}

/// `ids` as echo calls, each written once the one before is answered, and
/// each answered with its own echo.
fn calls_in_turn(
    mut writer: &UnixStream,
    reader: &mut BufReader<&UnixStream>,
    ids: std::ops::RangeInclusive<usize>,
) {
    let mut line = String::new();
    for id in ids {
        writeln!(writer, "{}", echo_call(id)).expect("a call");
        line.clear();
        reader.read_line(&mut line).expect("its answer");
        assert!(
            line.contains(&format!(r#""id":{id},"#)) && line.contains(&format!(r#"\"n\":{id}"#)),
            "call {id} answered with its own echo: {line}"
        );
    }
}

/// The open file description's flags of descriptor `fd` of process `pid`
/// (`/proc/PID/fdinfo/FD`, octal).
fn description_flags(pid: u32, fd: u32) -> u32 {
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).expect("fdinfo");
    let flags = info
        .lines()
        .find_map(|line| line.strip_prefix("flags:"))
        .expect("a flags line");
    u32::from_str_radix(flags.trim(), 8).expect("octal flags")
}

const O_NONBLOCK: u32 = 0o4000;
const EPOLLOUT: u32 = 0x4;

/// What process `pid`'s pollers watch of the file its descriptor `fd`
/// names: the event mask of each registration (`/proc/PID/fdinfo` of each
/// epoll descriptor lists `tfd: N events: MASK`, hex), matched by the
/// object `fd` links to, since the proxy registers duplicates.
fn watched(pid: u32, fd: u32) -> Vec<u32> {
    let target =
        std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).expect("the descriptor's object");
    watched_object(pid, &target)
}

/// What process `pid`'s pollers watch of `target` (what a descriptor
/// links to, as `pipe:[N]`).
fn watched_object(pid: u32, target: &std::path::Path) -> Vec<u32> {
    let link = |n: &str| std::fs::read_link(format!("/proc/{pid}/fd/{n}")).ok();
    let mut masks = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the proxy's fds")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if link(&name).is_none_or(|l| l.to_string_lossy() != "anon_inode:[eventpoll]") {
            continue;
        }
        let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{name}")) else {
            continue;
        };
        for line in info.lines().filter_map(|l| l.strip_prefix("tfd:")) {
            let mut words = line.split_whitespace();
            let watched_fd = words.next().expect("a descriptor");
            let mask = words
                .skip_while(|w| *w != "events:")
                .nth(1)
                .expect("a mask");
            if link(watched_fd).as_deref() == Some(target) {
                masks.push(u32::from_str_radix(mask, 16).expect("a hex mask"));
            }
        }
    }
    masks
}

/// The scheduler slice of a thread (`se.slice` in `/proc/.../sched`, in
/// ns), where the kernel says it.
fn slice(task: &std::path::Path) -> Option<u64> {
    let sched = std::fs::read_to_string(task.join("sched")).ok()?;
    let line = sched.lines().find(|l| l.starts_with("se.slice"))?;
    line.split_whitespace().last()?.parse().ok()
}

/// The proxy's runtime threads and its two readers ask for a short slice
/// (100 µs, Linux 6.12 and later take it), so a woken proxy passes a
/// message on before a busy neighbour's slice ends; the thread that starts
/// the server does not, so the server keeps the scheduling it would have
/// had without the proxy.
fn assert_slices(pid: u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    let mut version = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let (major, minor) = (version.next().unwrap_or(0), version.next().unwrap_or(0));
    let own = slice(std::path::Path::new("/proc/thread-self"));
    if (major, minor) < (6, 12) || own.is_none() {
        eprintln!("SKIP slices: kernel {release} takes no per-thread slice or does not show it");
        return;
    }
    let (mut workers, mut readers) = (0, 0);
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the proxy's threads")
        .flatten()
    {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let name = name.trim();
        if name == "tokio-rt-worker" || name.starts_with("read-") {
            workers += usize::from(name == "tokio-rt-worker");
            readers += usize::from(name != "tokio-rt-worker");
            assert_eq!(slice(&task.path()), Some(100_000), "thread {name}'s slice");
        }
    }
    assert!(workers > 0, "the proxy has runtime threads");
    assert_eq!(
        readers, 2,
        "the proxy reads the host and the server on threads of their own"
    );
    let children: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the proxy's threads")
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        !children.is_empty(),
        "the proxy's children (the server) are listed"
    );
    for child in &children {
        assert_eq!(
            slice(&std::path::Path::new("/proc").join(child)),
            own,
            "the proxy's child {child} keeps the slice it would have had"
        );
    }
}

/// The host's socket is read by a thread of its own in blocking reads and
/// sent to without the poller; so is the server's stdin written. Registered
/// for writing, either would wake a poller each time its reader takes a
/// message (the kernel signals the room freed), a wake-up per call on
/// another core, for nothing; polled for reading, the host's input would
/// cost a hand-over from the poller's thread to the reader's.
fn assert_not_polled(pid: u32, when: &str) {
    let stdin = watched(pid, 0);
    assert!(
        stdin.is_empty(),
        "{when}: the host's input is not polled: {stdin:x?}"
    );
    let stdout = watched(pid, 1);
    assert!(
        stdout.is_empty(),
        "{when}: the host's output is not polled: {stdout:x?}"
    );
    let mut servers = 0;
    for list in std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the proxy's threads")
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
    {
        for child in list.split_whitespace() {
            let stdin =
                std::fs::read_link(format!("/proc/{child}/fd/0")).expect("the server's stdin");
            let masks = watched_object(pid, &stdin);
            assert!(
                masks.iter().all(|mask| mask & EPOLLOUT == 0),
                "{when}: the server's stdin is not polled for writing: {masks:x?}"
            );
            servers += 1;
        }
    }
    assert!(servers > 0, "{when}: the proxy's server is listed");
}

/// `child`'s exit status, waited for at most `seconds` (then it is killed
/// and the test fails): for a body on a blocking thread `within` cannot stop.
fn wait_for(child: &mut std::process::Child, seconds: u64) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        if let Some(status) = child.try_wait().expect("the proxy's status") {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the proxy did not end within {seconds} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_on_sockets_gets_every_answer_and_its_sockets_stay_blocking() {
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    let fixture = fixture_binary();
    within(60, "calls over sockets", async move {
        tokio::task::spawn_blocking(move || {
            let (host_in, proxy_in) = UnixStream::pair().expect("a socketpair");
            let (host_out, proxy_out) = UnixStream::pair().expect("a socketpair");
            // This body blocks a thread `within` cannot stop: a read or
            // write that waits too long fails the test instead.
            for end in [&host_in, &host_out] {
                end.set_read_timeout(Some(std::time::Duration::from_secs(30))).expect("a timeout");
                end.set_write_timeout(Some(std::time::Duration::from_secs(30))).expect("a timeout");
            }
            let mut proxy = Command::new(drainpipe)
                .args(["proxy", "--metrics", "none", "--"])
                .arg(&fixture)
                .stdin(Stdio::from(std::os::fd::OwnedFd::from(proxy_in)))
                .stdout(Stdio::from(std::os::fd::OwnedFd::from(proxy_out)))
                .stderr(Stdio::null())
                .spawn()
                .expect("drainpipe proxy");
            let pid = proxy.id();
            let mut writer = &host_in;
            let mut reader = BufReader::new(&host_out);
            let mut line = String::new();
            writeln!(writer, "{INITIALIZE}").expect("initialize");
            reader.read_line(&mut line).expect("initialize answer");
            assert!(line.contains(r#""id":0"#), "initialize answered: {line}");
            // Sequential small calls, then a burst written before any is read.
            calls_in_turn(writer, &mut reader, 1..=200);
            assert_not_polled(pid, "after sequential calls");
            assert_slices(pid);
            let burst: String = (201..=1200).map(|id| echo_call(id) + "\n").collect();
            let writing = std::thread::spawn({
                let host_in = host_in.try_clone().expect("clone");
                move || (&host_in).write_all(burst.as_bytes()).expect("the burst")
            });
            let mut answered = std::collections::HashSet::new();
            while answered.len() < 1000 {
                line.clear();
                assert!(reader.read_line(&mut line).expect("an answer") > 0, "the proxy ended early");
                let answer: serde_json::Value = serde_json::from_str(&line).expect("a JSON answer");
                assert!(answer["result"].is_object(), "an echo result: {line}");
                answered.insert(answer["id"].as_u64().expect("an id"));
            }
            writing.join().expect("the burst written");
            assert_eq!(answered, (201..=1200).collect(), "every call of the burst answered once");
            // An answer larger than the socket holds, to a host that waits
            // before it reads: the proxy's send finds the socket full and
            // must wait for room (the only time it asks the reactor), then
            // go back to sending straight, as the next call shows.
            const LARGE: usize = 3 << 20;
            writeln!(
                writer,
                r#"{{"jsonrpc":"2.0","id":2000,"method":"tools/call","params":{{"name":"large","arguments":{{"bytes":{LARGE}}}}}}}"#
            )
            .expect("the large call");
            std::thread::sleep(std::time::Duration::from_millis(500));
            line.clear();
            reader.read_line(&mut line).expect("the large answer");
            assert_eq!(line.len(), LARGE + 1, "the large answer whole, with its newline");
            assert!(line.contains(r#""id":2000"#), "the large answer's id");
            calls_in_turn(writer, &mut reader, 2001..=2050);
            assert_not_polled(pid, "after a wait for room");
            // Read and written through the reactor: no thread of tokio's
            // blocking pool (which names its threads as the workers) was
            // started to hand each read and write over.
            let runtime_threads = std::fs::read_dir(format!("/proc/{pid}/task"))
                .expect("the proxy's threads")
                .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
                .filter(|name| name.trim() == "tokio-rt-worker")
                .count();
            assert!(
                runtime_threads <= 2,
                "{runtime_threads} runtime threads: the host's socket went through blocking threads (a hand-off per message)"
            );
            // The proxy's ends of both sockets: still blocking for anyone
            // else who holds them.
            for fd in [0, 1] {
                assert_eq!(
                    description_flags(pid, fd) & O_NONBLOCK,
                    0,
                    "the proxy's fd {fd} (a socket shared with its launcher) was left blocking"
                );
            }
            drop(host_in);
            let status = wait_for(&mut proxy, 30);
            assert!(status.success(), "the proxy ended with {status}");
            line.clear();
            assert_eq!(reader.read_line(&mut line).expect("end of output"), 0, "nothing after the end: {line}");
        })
        .await
        .expect("the socket host");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_reading_a_file_and_writing_a_file_gets_every_answer() {
    let Some(drainpipe) = peers::gate("the drainpipe binary", peers::drainpipe()) else {
        return;
    };
    // A server that answers each line before it reads the next, so that
    // every request has its result before the end of input ends it.
    let server = workspace_root().join("tests/peers/python/echo_server.py");
    let dir = std::env::temp_dir().join(format!("drainpipe-host-end-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let requests = dir.join("requests.jsonl");
    let answers = dir.join("answers.jsonl");
    let mut input = format!("{INITIALIZE}\n");
    for id in 1..=500 {
        input.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{id}"}}}}}}"#
        ));
        input.push('\n');
    }
    std::fs::write(&requests, input).expect("the requests");
    let mut proxy = tokio::process::Command::new(drainpipe)
        .args(["proxy", "--metrics", "none", "--", "python3"])
        .arg(&server)
        .stdin(std::fs::File::open(&requests).expect("open"))
        .stdout(std::fs::File::create(&answers).expect("create"))
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("drainpipe proxy");
    // The end of the file is the host's end of input: the server gets its
    // stdin closed after every request, answers them all and exits.
    let status = within(30, "the proxy ends after the file", proxy.wait())
        .await
        .expect("wait");
    assert!(status.success(), "the proxy ended with {status}");
    let written = std::fs::read_to_string(&answers).expect("the answers");
    let ids: std::collections::HashSet<u64> = written
        .lines()
        .map(|line| {
            let answer: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let id = answer["id"].as_u64().expect("an id");
            if id > 0 {
                assert_eq!(
                    answer["result"]["content"][0]["text"],
                    id.to_string(),
                    "its own echo: {line}"
                );
            }
            id
        })
        .collect();
    assert_eq!(written.lines().count(), 501, "one line per request");
    assert_eq!(ids, (0..=500).collect(), "every request answered");
    let _ = std::fs::remove_dir_all(&dir);
}
