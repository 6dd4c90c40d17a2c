//! Helpers shared by the CLI tests: run `drainpipe` as a process under a
//! time bound that fails loudly, with real pipes.
#![allow(dead_code, unreachable_pub)]

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The `drainpipe` binary under test.
pub fn drainpipe(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_drainpipe"));
    command.args(args);
    command
}

/// The fixture server's own binary.
pub const FIXTURE: &str = env!("CARGO_BIN_EXE_drainpipe-fixture");

/// What a finished process left.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Finished {
    /// The exit code (panics if a signal ended the process).
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("ended by a signal: {self:?}"))
    }
}

/// Runs `command` with `input` on stdin (then closed); panics, with what it
/// printed so far, if it has not exited within `secs` seconds.
pub fn run(command: &mut Command, input: &[u8], secs: u64) -> Finished {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn drainpipe");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stdout.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    });
    let err = thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    });
    let deadline = started + Duration::from_secs(secs);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err.join().unwrap_or_default();
            panic!("timed out after {secs} s: {command:?}\nstderr so far:\n{stderr}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    let _ = writer.join();
    Finished {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        elapsed,
    }
}

/// Parses every stdout line as JSON.
pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The state letter of `pid` from /proc, or `None` if it is gone.
pub fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].chars().next()
}

/// Waits until `pid` no longer runs (gone or a zombie); panics after `secs`.
pub fn assert_gone(pid: u32, secs: u64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while matches!(proc_state(pid), Some(state) if state != 'Z') {
        assert!(
            Instant::now() < deadline,
            "still running after {secs} s: {what}"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// Peak resident memory of `pid` so far (VmHWM), in bytes.
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number");
    kib * 1024
}

/// As [`run`], but stdin stays open until a stdout line contains
/// `close_after` (a host that waits for its answer before hanging up).
pub fn run_until(command: &mut Command, input: &[u8], close_after: &str, secs: u64) -> Finished {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn drainpipe");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).expect("write the input");
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines_tx.send(line);
        }
    });
    let mut stderr = child.stderr.take().unwrap();
    let err = thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    });
    let mut stdout = String::new();
    let mut stdin = Some(stdin);
    loop {
        match lines_rx.recv_timeout(Duration::from_millis(20)) {
            Ok(line) => {
                if line.contains(close_after) {
                    stdin = None;
                }
                stdout.push_str(&line);
                stdout.push('\n');
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("timed out after {secs} s: {command:?}\nstdout so far:\n{stdout}");
        }
    }
    drop(stdin);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs} s: {command:?}"
        );
        thread::sleep(Duration::from_millis(5));
    };
    Finished {
        status,
        stdout,
        stderr: err.join().unwrap(),
        elapsed: started.elapsed(),
    }
}
