//! The real MCP peers the suite runs against, installed by
//! `bash tests/peers/setup.sh`: Node.js with the official TypeScript SDK and
//! `server-everything` in `tests/peers/node/node_modules`, and the official
//! Python SDK (and proxy.py) in `tests/peers/python/.venv`.
//!
//! A test that needs a missing peer fails when `DRAINPIPE_REQUIRE_PEERS=1`
//! (CI sets it) and is skipped with a printed note otherwise.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::OnceLock;

use crate::workspace_root;

/// The one command that installs every peer.
pub const SETUP: &str = "bash tests/peers/setup.sh";

/// Whether missing peers are failures (`DRAINPIPE_REQUIRE_PEERS=1`).
pub fn required() -> bool {
    std::env::var("DRAINPIPE_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// `Some(found)`, or — when it is missing — a panic naming the setup
/// command under `DRAINPIPE_REQUIRE_PEERS=1`, else a printed note and `None`.
pub fn gate<T>(what: &str, found: Result<T, String>) -> Option<T> {
    match found {
        Ok(found) => Some(found),
        Err(why) if required() => {
            panic!("{what} is missing: {why}. Install the peers with `{SETUP}`.")
        }
        Err(why) => {
            eprintln!(
                "note: skipping, {what} is missing ({why}); install it with `{SETUP}` (set DRAINPIPE_REQUIRE_PEERS=1 to make this a failure)"
            );
            None
        }
    }
}

/// Node.js and the packages of `tests/peers/node`.
#[derive(Clone, Debug)]
pub struct NodePeer {
    /// `tests/peers/node`.
    pub dir: PathBuf,
    /// The `node` executable.
    pub node: PathBuf,
}

impl NodePeer {
    /// `node <script> args…`, run in `tests/peers/node`.
    pub fn script(&self, script: &str, args: &[&str]) -> StdCommand {
        let mut command = StdCommand::new(&self.node);
        command.current_dir(&self.dir).arg(script).args(args);
        command
    }

    /// The oversized server written here (`oversized-server.mjs`).
    pub fn oversized_server(&self) -> Vec<String> {
        vec![
            self.node.display().to_string(),
            self.dir.join("oversized-server.mjs").display().to_string(),
        ]
    }

    /// The official `server-filesystem` serving `root`, from the pinned
    /// install. Built on the TypeScript SDK 1.x: it writes `id` last, and
    /// `read_text_file` sends the text twice (`content` and
    /// `structuredContent`).
    pub fn filesystem_server(&self, root: &Path) -> Vec<String> {
        vec![
            self.node.display().to_string(),
            self.dir
                .join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
                .display()
                .to_string(),
            root.display().to_string(),
        ]
    }

    /// `server-everything` on stdio, from the pinned install.
    pub fn everything_server(&self) -> Vec<String> {
        vec![
            self.node.display().to_string(),
            self.dir
                .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
                .display()
                .to_string(),
            "stdio".into(),
        ]
    }
}

/// The Node peer, if installed.
pub fn node() -> Result<NodePeer, String> {
    static FOUND: OnceLock<Result<NodePeer, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let dir = workspace_root().join("tests/peers/node");
            let node = which("node").ok_or("`node` is not on PATH")?;
            for package in [
                "@modelcontextprotocol/sdk",
                "@modelcontextprotocol/server-everything",
                "@modelcontextprotocol/server-filesystem",
            ] {
                let manifest = dir.join("node_modules").join(package).join("package.json");
                if !manifest.is_file() {
                    return Err(format!("{} is not installed", manifest.display()));
                }
            }
            Ok(NodePeer { dir, node })
        })
        .clone()
}

/// The Python interpreter that has the official SDK, and `tests/peers/python`.
#[derive(Clone, Debug)]
pub struct PythonPeer {
    /// `tests/peers/python`.
    pub dir: PathBuf,
    /// The interpreter (the venv's, or `DRAINPIPE_PYTHON`).
    pub python: PathBuf,
}

impl PythonPeer {
    /// `python <script> args…` (unbuffered), run in `tests/peers/python`.
    pub fn script(&self, script: &str, args: &[&str]) -> StdCommand {
        let mut command = StdCommand::new(&self.python);
        command
            .current_dir(&self.dir)
            .arg("-u")
            .arg(script)
            .args(args);
        command
    }

    /// The server written with the SDK (`server.py`), as a command line.
    pub fn server(&self) -> Vec<String> {
        vec![
            self.python.display().to_string(),
            "-u".into(),
            self.dir.join("server.py").display().to_string(),
        ]
    }
}

/// The Python peer, if installed.
pub fn python() -> Result<PythonPeer, String> {
    static FOUND: OnceLock<Result<PythonPeer, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let dir = workspace_root().join("tests/peers/python");
            let python = match std::env::var_os("DRAINPIPE_PYTHON") {
                Some(python) => PathBuf::from(python),
                None => dir.join(".venv/bin/python"),
            };
            if !python.exists() {
                return Err(format!("{} does not exist", python.display()));
            }
            let probe = StdCommand::new(&python)
                .args(["-c", "import mcp.server.mcpserver, mcp.client.stdio"])
                .output()
                .map_err(|e| format!("could not run {}: {e}", python.display()))?;
            if !probe.status.success() {
                return Err(format!(
                    "{} cannot import the MCP SDK: {}",
                    python.display(),
                    String::from_utf8_lossy(&probe.stderr).trim()
                ));
            }
            Ok(PythonPeer { dir, python })
        })
        .clone()
}

/// The Python peer, when its venv also has proxy.py: the HTTP proxy the
/// network tests (`peer_remote_network.rs`) run as `python -m proxy`.
pub fn http_proxy() -> Result<PythonPeer, String> {
    static FOUND: OnceLock<Result<PythonPeer, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let peer = python()?;
            let probe = StdCommand::new(&peer.python)
                .args(["-c", "import proxy"])
                .output()
                .map_err(|e| format!("could not run {}: {e}", peer.python.display()))?;
            if !probe.status.success() {
                return Err(format!(
                    "{} cannot import proxy.py: {}",
                    peer.python.display(),
                    String::from_utf8_lossy(&probe.stderr).trim()
                ));
            }
            Ok(peer)
        })
        .clone()
}

/// The `drainpipe` binary (for `drainpipe proxy`), built from this workspace.
pub fn drainpipe() -> Result<PathBuf, String> {
    crate::binary("drainpipe")
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `drainpipe proxy [proxy_args] -- server…` as a command line.
pub fn proxy_argv(drainpipe: &Path, proxy_args: &[&str], server: &[String]) -> Vec<String> {
    let mut argv = vec![drainpipe.display().to_string(), "proxy".to_string()];
    argv.extend(proxy_args.iter().map(|a| a.to_string()));
    argv.push("--".into());
    argv.extend(server.iter().cloned());
    argv
}

/// `drainpipe proxy --url <url> --metrics none <args>` as a command line,
/// or `None` (said why) when the binary is missing and peers are optional.
pub fn remote_proxy_argv(url: &str, args: &[&str]) -> Option<Vec<String>> {
    let drainpipe = gate("the drainpipe binary", drainpipe())?;
    let mut argv = vec![
        drainpipe.display().to_string(),
        "proxy".into(),
        "--url".into(),
        url.into(),
        "--metrics".into(),
        "none".into(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    Some(argv)
}

/// A tokio command from a command line.
pub fn command(argv: &[String]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&argv[0]);
    command.args(&argv[1..]);
    command
}

/// What a peer client printed as its last stdout line (a JSON summary).
#[derive(Debug)]
pub struct ClientRun {
    /// What the run was, for messages.
    pub what: String,
    /// The parsed summary.
    pub summary: serde_json::Value,
    /// The client's stderr (and its server's and proxy's, which inherit it).
    pub stderr: String,
    /// Processes the client started that were still running 5 s after it
    /// exited (already killed, so one failure does not leak into the next
    /// test): pid and command line.
    pub leftovers: Vec<(u32, String)>,
}

impl ClientRun {
    /// Panics if the client left any process behind (an orphan).
    pub fn assert_nothing_left(&self) {
        assert!(
            self.leftovers.is_empty(),
            "{}: processes left behind after the client exited (now killed): {:?}\nclient stderr:\n{}",
            self.what,
            self.leftovers,
            self.stderr
        );
    }
}

/// Runs a peer client to its end within `secs` seconds; panics with its
/// output if it fails or times out. What it left behind is killed and
/// reported in [`ClientRun::leftovers`]: check it with
/// [`ClientRun::assert_nothing_left`] (after recording the figures).
pub async fn run_client(mut client: StdCommand, secs: u64, what: &str) -> ClientRun {
    use std::process::Stdio;
    client
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut client = tokio::process::Command::from(client);
    client.kill_on_drop(true).process_group(0);
    let child = client
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: could not start the client: {e}"));
    let pid = child.id().expect("pid");
    let watch = crate::procs::DescendantWatch::start(pid);
    let output = match tokio::time::timeout(
        std::time::Duration::from_secs(secs),
        child.wait_with_output(),
    )
    .await
    {
        Ok(output) => output.expect("client output"),
        Err(_) => {
            let seen = watch.stop();
            crate::procs::kill_group(pid);
            for pid in &seen {
                crate::procs::kill_group(*pid);
            }
            panic!("{what}: the client did not finish within {secs} s");
        }
    };
    let seen = watch.stop();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let summary = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .unwrap_or(serde_json::Value::Null);
    assert!(
        output.status.success() && summary["ok"] == serde_json::json!(true),
        "{what}: the client failed ({}):\nsummary: {summary}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    let left = crate::procs::still_running(&seen, std::time::Duration::from_secs(5)).await;
    let leftovers: Vec<(u32, String)> = left
        .iter()
        .map(|&pid| (pid, crate::procs::cmdline(pid)))
        .collect();
    for &pid in &left {
        crate::procs::kill_pid(pid);
    }
    ClientRun {
        what: what.to_string(),
        summary,
        stderr,
        leftovers,
    }
}

/// A peer server on loopback (the remote tests' HTTP servers), killed with
/// its process group when dropped.
pub struct Listening {
    child: tokio::process::Child,
    /// The port it printed (`listening <port>`).
    pub port: u16,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Listening {
    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// What it printed on stdout after `listening <port>`, so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().expect("lines").clone()
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            crate::procs::kill_group(pid);
        }
    }
}

/// Starts a server that prints `listening <port>` as its first stdout line
/// (in its own process group; its stderr inherited); waits at most 30 s
/// for that line.
pub async fn listen(command: StdCommand, what: &str) -> Listening {
    use std::process::Stdio;
    use tokio::io::AsyncBufReadExt;
    let mut command = tokio::process::Command::from(command);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: could not start: {e}"));
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let first = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("{what}: no `listening <port>` line within 30 s"))
        .unwrap_or_else(|e| panic!("{what}: reading its stdout: {e}"))
        .unwrap_or_else(|| panic!("{what}: exited before listening"));
    let port = first
        .strip_prefix("listening ")
        .and_then(|port| port.trim().parse().ok())
        .unwrap_or_else(|| panic!("{what}: first line {first:?} is not `listening <port>`"));
    // The rest of its stdout is kept (and drained, so it never blocks).
    let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = kept.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            keep.lock().expect("lines").push(line);
        }
    });
    Listening {
        child,
        port,
        lines: kept,
    }
}

/// The peak resident memory (`VmHWM`, bytes) seen of the processes whose
/// command line holds `marker`, sampled every 20 ms until `until` ends.
/// `VmHWM` is the process's own peak: the last sample before it exits is
/// its peak but for its last 20 ms.
pub async fn peak_rss_while<T>(
    marker: &str,
    until: impl std::future::Future<Output = T>,
) -> (T, u64) {
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (peak, stop, marker) = (peak.clone(), stop.clone(), marker.to_string());
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                    let Some(pid) = entry
                        .file_name()
                        .to_str()
                        .and_then(|p| p.parse::<u32>().ok())
                    else {
                        continue;
                    };
                    if !crate::procs::cmdline(pid).contains(&marker) {
                        continue;
                    }
                    let status =
                        std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                    if let Some(kib) = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmHWM:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                    {
                        peak.fetch_max(kib * 1024, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
    };
    let out = until.await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = sampler.await;
    (out, peak.load(std::sync::atomic::Ordering::Relaxed))
}
