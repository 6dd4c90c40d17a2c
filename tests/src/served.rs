//! `drainpipe serve` in front of the fixture, as the serve criteria start
//! it (`tests/serve.rs`, `tests/serve_churn.rs`): its address, its stderr,
//! the children it runs, and the messages a client sends.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http1::{Open, Reply, Request};
use crate::{drainpipe_binary, fixture_binary, procs};

/// A running `drainpipe serve` in front of the fixture or a peer server.
pub struct Serve {
    /// The serve process.
    pub child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
    /// What the server's command line holds, to find its processes among
    /// serve's descendants.
    marker: String,
}

impl Serve {
    /// `serve --listen 127.0.0.1:0 <args> -- drainpipe-fixture <fixture>`.
    pub fn start(args: &[&str], fixture: &[&str]) -> Serve {
        Self::start_with(args, fixture, &[])
    }

    /// As [`Serve::start`], with `env` set for serve.
    pub fn start_with(args: &[&str], fixture: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut server = vec![fixture_binary().display().to_string()];
        server.extend(fixture.iter().map(|s| s.to_string()));
        Self::spawn(args, &server, "drainpipe-fixture", env)
    }

    /// `serve --listen 127.0.0.1:0 <args> -- <server…>`; `marker` is what
    /// the server's command line holds.
    pub fn spawn(args: &[&str], server: &[String], marker: &str, env: &[(&str, &str)]) -> Serve {
        let mut command = Command::new(drainpipe_binary());
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .arg("--")
            .args(server)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start drainpipe serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let lines = BufReader::new(child.stderr.take().expect("stderr"));
        let kept = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.lines() {
                let Ok(line) = line else { break };
                {
                    let mut kept = kept.lock().expect("stderr");
                    kept.push_str(&line);
                    kept.push('\n');
                }
                if line.contains("listening on")
                    && let Some(rest) = line.split("://").nth(1)
                {
                    let addr = rest.split('/').next().unwrap_or_default().to_string();
                    let _ = addr_tx.send(addr);
                }
            }
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                // Not yet a `Serve`, whose drop would end it: ended here.
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "serve did not say where it listens; stderr:\n{}",
                    stderr.lock().unwrap()
                )
            });
        Serve {
            child,
            addr: addr.parse().expect("an address"),
            stderr,
            marker: marker.to_string(),
        }
    }

    /// What serve wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr").clone()
    }

    /// Waits until serve's stderr says `needle`; fails loudly after `secs`.
    pub fn wait_stderr(&self, needle: &str, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if self.stderr().contains(needle) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "serve's stderr never said {needle:?} in {secs}s:\n{}",
            self.stderr()
        );
    }

    /// The server processes serve has started and that still run.
    pub fn children(&self) -> Vec<u32> {
        procs::descendants(self.child.id())
            .into_iter()
            .filter(|&pid| procs::stat(pid).is_some_and(|s| s.state != 'Z'))
            .filter(|&pid| procs::cmdline(pid).contains(&self.marker))
            .collect()
    }

    /// The MCP endpoint's URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// SIGTERM: serve exits 0 within `secs`, and every server it ran is
    /// gone (found before the signal: once serve is gone, they would no
    /// longer be its descendants). Its stderr.
    pub fn stop(mut self, secs: u64) -> String {
        let children = self.children();
        crate::procs::signal(self.child.id(), nix::sys::signal::Signal::SIGTERM);
        assert_eq!(
            self.wait_exit(secs),
            Some(0),
            "serve's exit; stderr:\n{}",
            self.stderr()
        );
        wait_gone(&children, 10);
        self.stderr()
    }

    /// Waits until serve runs `count` fixtures; fails loudly after `secs`.
    pub fn wait_children(&self, count: usize, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if self.children().len() == count {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "serve runs {} fixtures, not {count}, after {secs}s; stderr:\n{}",
            self.children().len(),
            self.stderr()
        );
    }

    /// A POST of `body` (in `session`, if given), read whole.
    pub fn post(&self, session: Option<&str>, body: &Value) -> Reply {
        let mut request = Request::post("/mcp", body);
        if let Some(session) = session {
            request = request.with("mcp-session-id", session);
        }
        request.send(self.addr)
    }

    /// A new session, initialized; its id.
    pub fn initialize(&self) -> String {
        let reply = self.post(None, &initialize(1));
        assert_eq!(
            reply.status,
            200,
            "initialize: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let id = reply
            .header("mcp-session-id")
            .expect("initialize answers with Mcp-Session-Id")
            .to_string();
        let answer = &reply.events()[0];
        assert_eq!(answer["result"]["serverInfo"]["name"], "drainpipe-fixture");
        let notified = self.post(
            Some(&id),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert_eq!(notified.status, 202);
        id
    }

    /// Waits for serve to exit; its status code.
    pub fn wait_exit(&mut self, secs: u64) -> Option<i32> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("serve did not exit in {secs}s; stderr:\n{}", self.stderr());
    }
}

/// Waits until none of `pids` runs (zombies aside); fails loudly after
/// `secs`.
pub fn wait_gone(pids: &[u32], secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while pids
        .iter()
        .any(|&pid| procs::stat(pid).is_some_and(|s| s.state != 'Z'))
    {
        assert!(
            Instant::now() < deadline,
            "these processes outlived serve: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("serve's stderr:\n{}", self.stderr());
        }
        // A failed test leaves nothing running.
        let children = self.children();
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in children {
            procs::kill_pid(pid);
        }
    }
}

/// The first message on `open` that is an answer (notifications skipped).
pub fn answer_of(open: &mut Open) -> Value {
    loop {
        let message = open
            .next_message()
            .expect("an answer before the stream ended");
        if message.get("method").is_none() {
            return message;
        }
    }
}

/// An `initialize` request with the id `id`.
pub fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "serve-test", "version": "0"},
    }})
}

/// A `tools/call` of `tool` with `arguments`.
pub fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
}
