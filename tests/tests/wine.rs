//! Guarantee, on Windows: the Windows builds of `drainpipe` and
//! `drainpipe-fixture`, run under wine and driven from Linux over real
//! pipes, keep the proxy's promises: an oversize answer fails exactly its
//! request (id first or last) and the session lives; a `--clip` result
//! reads back whole; a cancel reaches the tool's child processes; and the
//! proxy killed from outside leaves no process of the server's tree (the
//! Job Object's `KILL_ON_JOB_CLOSE`, no supervisor), within 2 s.
//!
//! Each test is `#[ignore]`d: it needs the Windows build, the ProcessPrng
//! shim beside it and wine, which `scripts/test-all.sh` prepares before it
//! runs them with `--ignored`. Run alone, set `DRAINPIPE_WINE_BIN_DIR` (the
//! folder with `drainpipe.exe`, `drainpipe-fixture.exe` and
//! `bcryptprimitives.dll`), `DRAINPIPE_WINE` (the `wine64` loader) and
//! `WINEPREFIX`.
//!
//! Under wine each Windows process is a Linux process whose environment
//! holds what its Windows parent passed on: a mark set on the proxy finds
//! the server's whole tree in `/proc`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use drainpipe_host::session::{CallError, Session};
use drainpipe_release::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Where the Windows build and the loader are, from the environment; a
/// clear failure when the test was asked for without them.
struct Wine {
    loader: PathBuf,
    bins: PathBuf,
}

fn wine() -> Wine {
    let var = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                panic!("{name} is not set: scripts/test-all.sh sets it up (see this file's docs)")
            })
    };
    let wine = Wine {
        loader: var("DRAINPIPE_WINE"),
        bins: var("DRAINPIPE_WINE_BIN_DIR"),
    };
    var("WINEPREFIX");
    for exe in [
        "drainpipe.exe",
        "drainpipe-fixture.exe",
        "bcryptprimitives.dll",
    ] {
        assert!(
            wine.bins.join(exe).is_file(),
            "{} is missing",
            wine.bins.join(exe).display()
        );
    }
    wine
}

/// A unix path as a Windows program under wine names it (`Z:` is `/`).
fn windows_path(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// `wine64 drainpipe.exe proxy <args> -- drainpipe-fixture.exe <fixture
/// args>`, its tree marked with `mark`.
fn proxy_command(
    wine: &Wine,
    proxy_args: &[&str],
    fixture_args: &[&str],
    mark: &str,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&wine.loader);
    command
        .arg(wine.bins.join("drainpipe.exe"))
        .arg("proxy")
        .args(proxy_args)
        .arg("--")
        .arg(windows_path(&wine.bins.join("drainpipe-fixture.exe")))
        .args(fixture_args)
        .env("WINEDEBUG", "-all")
        .env("DRAINPIPE_WINE_MARK", mark);
    command
}

/// A mark no other test or run shares.
fn mark(test: &str) -> String {
    format!("{test}-{}", std::process::id())
}

/// The live (not zombie) Linux processes carrying `mark`, with their
/// command lines.
fn marked(mark: &str) -> Vec<(u32, String)> {
    let needle = format!("DRAINPIPE_WINE_MARK={mark}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let carries = environ
            .split(|&b| b == 0)
            .any(|var| var == needle.as_bytes());
        if carries && procs::stat(pid).is_some_and(|s| s.state != 'Z') {
            found.push((pid, procs::cmdline(pid)));
        }
    }
    found
}

/// The marked processes running a fixture (the server and the
/// subprocesses of its tools): their program, the first word of the
/// command line or, while wine's loader starts it, the second.
fn fixtures(mark: &str) -> Vec<(u32, String)> {
    marked(mark)
        .into_iter()
        .filter(|(_, cmdline)| {
            let mut words = cmdline.split(' ');
            let first = words.next().unwrap_or_default();
            let program = if first.ends_with("wine64") {
                words.next().unwrap_or_default()
            } else {
                first
            };
            program.ends_with("drainpipe-fixture.exe")
        })
        .collect()
}

/// Waits up to `limit` for no marked fixture process to be left; the ones
/// left, if any.
async fn fixtures_gone_within(mark: &str, limit: Duration) -> Vec<(u32, String)> {
    let until = tokio::time::Instant::now() + limit;
    loop {
        let left = fixtures(mark);
        if left.is_empty() || tokio::time::Instant::now() >= until {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (30 s at most) until `count` fixture processes carry `mark`: the
/// server and the tree its tool started.
async fn tree_started(mark: &str, count: usize) {
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    while fixtures(mark).len() < count {
        assert!(
            tokio::time::Instant::now() < until,
            "the tool's tree did not start: {:?}",
            marked(mark)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Shuts the session down and checks, 5 s at most after, that no fixture
/// process is left (killing any, so a failure leaks nothing).
async fn end_cleanly(session: &Session, mark: &str) {
    shutdown_clean(session).await;
    let left = fixtures_gone_within(mark, Duration::from_secs(5)).await;
    kill_marked(mark);
    assert!(left.is_empty(), "left after shutdown: {left:?}");
}

/// Kills what a failed test left, so it cannot outlive the run.
fn kill_marked(mark: &str) {
    for (pid, _) in marked(mark) {
        procs::kill_pid(pid);
    }
}

/// A session on the proxy under wine. Wine starts slowly: the handshake
/// gets a generous bound.
async fn session(wine: &Wine, proxy_args: &[&str], mark: &str) -> Session {
    start_session(
        proxy_command(wine, proxy_args, &[], mark),
        limited(16 << 20),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Windows build and wine: scripts/test-all.sh runs it"]
async fn oversize_fails_its_request_and_the_session_lives_under_wine() {
    let wine = wine();
    let mark = mark("oversize");
    let session = session(
        &wine,
        &["--max-frame", "256KiB", "--metrics", "none"],
        &mark,
    )
    .await;
    for id_last in [false, true] {
        let over = within(
            30,
            "oversize through the Windows proxy",
            tool(
                &session,
                "sized",
                json!({"bytes": (256 << 10) + 1, "id_last": id_last}),
                opts(25),
            ),
        )
        .await;
        match over {
            Err(CallError::JsonRpc { code, .. }) => {
                assert_eq!(code, drainpipe_host::proxy::TOO_LARGE, "id_last={id_last}")
            }
            other => panic!("id_last={id_last}: expected an error for that id, got {other:?}"),
        }
        let echo = within(
            30,
            "an echo after the oversize",
            tool(&session, "echo", json!({"text": "still here"}), opts(25)),
        )
        .await
        .expect("the next request is answered");
        assert_eq!(echo.result["structuredContent"]["text"], "still here");
    }
    // Just under the limit passes whole.
    let at = within(
        30,
        "a result just under the limit",
        tool(
            &session,
            "sized",
            json!({"bytes": (256 << 10) - 1}),
            opts(25),
        ),
    )
    .await
    .expect("a result under the limit passes");
    assert!(at.result["content"].is_array(), "{}", at.result);
    end_cleanly(&session, &mark).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Windows build and wine: scripts/test-all.sh runs it"]
async fn a_clipped_result_reads_back_whole_under_wine() {
    let wine = wine();
    let mark = mark("clip");
    let session = session(&wine, &["--clip", "64KiB", "--metrics", "none"], &mark).await;
    let mut text = String::new();
    for i in 0.. {
        if text.len() >= 1 << 20 {
            break;
        }
        text.push_str(&format!("line {i}: «ünïcødé» \"q\" \\ tab\t😀 end\n"));
    }
    let result = within(
        60,
        "a large echo through the Windows proxy",
        tool(&session, "echo", json!({"text": text}), opts(55)),
    )
    .await
    .expect("a condensed result")
    .result;
    assert!(
        serde_json::to_vec(&result).unwrap().len() <= 64 << 10,
        "the result is within --clip"
    );
    let link = result["content"]
        .as_array()
        .expect("content")
        .iter()
        .find(|b| b["type"] == "resource_link" && b["name"] == "structuredContent/text")
        .unwrap_or_else(|| panic!("no link to the cut text: {result}"))
        .clone();
    assert_eq!(link["size"], json!(text.len()));
    let uri = link["uri"].as_str().expect("the link's uri");
    let (all, _pages) = page_through(&session, uri, 64 << 10).await;
    assert!(
        all == text.as_bytes(),
        "read back {} of {} bytes, not the same",
        all.len(),
        text.len()
    );
    end_cleanly(&session, &mark).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Windows build and wine: scripts/test-all.sh runs it"]
async fn a_cancel_reaches_the_tools_children_under_wine() {
    let wine = wine();
    let mark = mark("cancel");
    let session = session(&wine, &["--metrics", "none"], &mark).await;
    let pending = start_tool(&session, "spawn_forever", json!({"children": 2}), opts(60)).await;
    // The server, its subprocess and that one's two children.
    tree_started(&mark, 4).await;
    let server: Vec<u32> = fixtures(&mark)
        .into_iter()
        .filter(|(_, cmdline)| !cmdline.contains("--print-forever"))
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(server.len(), 1, "one server: {:?}", fixtures(&mark));
    assert!(
        session.cancel(pending.id(), "the test cancels"),
        "the call was still pending"
    );
    let outcome = within(10, "the cancelled call", pending.outcome()).await;
    assert!(
        matches!(outcome, Err(CallError::Cancelled { .. })),
        "{outcome:?}"
    );
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut left = fixtures(&mark);
    while left.len() > 1 && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = fixtures(&mark);
    }
    let workers: Vec<_> = left
        .iter()
        .filter(|(pid, _)| !server.contains(pid))
        .collect();
    if !workers.is_empty() {
        kill_marked(&mark);
        panic!("the tool's processes outlived the cancel by 5 s: {workers:?}");
    }
    let echo = within(
        30,
        "an echo after the cancel",
        tool(&session, "echo", json!({"text": "next"}), opts(25)),
    )
    .await
    .expect("the next request is answered");
    assert_eq!(echo.result["structuredContent"]["text"], "next");
    end_cleanly(&session, &mark).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Windows build and wine: scripts/test-all.sh runs it"]
async fn a_killed_proxy_takes_the_servers_tree_along_under_wine() {
    let wine = wine();
    let mark = mark("killed");
    // A server that outlives its stdin, and work it left behind that
    // touches no pipe, as the trees that pile up do: once the proxy is
    // gone, only its job can end them (the server's own end, from a broken
    // pipe, does not take the detached work along).
    let mut proxy = proxy_command(&wine, &["--metrics", "none"], &["--linger"], &mark);
    proxy
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut proxy = proxy.spawn().expect("start the Windows proxy");
    let mut stdin = proxy.stdin.take().unwrap();
    let mut stdout = BufReader::new(proxy.stdout.take().unwrap()).lines();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "spawn_detached", "arguments": {"children": 2}}}),
    ] {
        let line = format!("{message}\n");
        within(10, "a write to the proxy", stdin.write_all(line.as_bytes()))
            .await
            .expect("write to the proxy");
    }
    // The tool answers once its subprocess runs.
    within(60, "the tool's subprocess starts", async {
        while let Some(line) = stdout.next_line().await.expect("read the proxy") {
            if line.contains("\"pid\"") {
                return;
            }
        }
        panic!("the proxy's stdout ended before the tool answered");
    })
    .await;
    tree_started(&mark, 4).await;
    let pid = proxy.id().expect("the proxy runs");
    procs::kill_pid(pid);
    within(10, "the killed proxy is reaped", proxy.wait())
        .await
        .expect("reap the proxy");
    let left = fixtures_gone_within(&mark, Duration::from_secs(2)).await;
    kill_marked(&mark);
    assert!(
        left.is_empty(),
        "2 s after the proxy was killed, the server's tree is still there: {left:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Windows build and wine: scripts/test-all.sh runs it"]
async fn every_waiting_request_is_answered_when_the_server_dies_under_wine() {
    let wine = wine();
    let mark = mark("gone");
    let session = session(&wine, &["--metrics", "none"], &mark).await;
    let mut pending = Vec::new();
    for _ in 0..3 {
        pending.push(
            start_tool(
                &session,
                "slow",
                json!({"steps": 1000, "step_ms": 100}),
                opts(60),
            )
            .await,
        );
    }
    // The server dies (killed from outside, as a crash would end it).
    let servers = fixtures(&mark);
    assert_eq!(servers.len(), 1, "one server: {servers:?}");
    procs::kill_pid(servers[0].0);
    for call in pending {
        let outcome = within(30, "a request waiting at the server's end", call.outcome()).await;
        match outcome {
            Err(CallError::JsonRpc { code, .. }) => {
                assert_eq!(code, drainpipe_host::proxy::SERVER_GONE)
            }
            other => panic!("expected the server-gone error, got {other:?}"),
        }
    }
    let report = within(30, "the session ends", session.shutdown()).await;
    kill_marked(&mark);
    assert!(report.status.is_some(), "the proxy exited: {report:?}");
}

/// Runs `wine64 drainpipe.exe <args>` to its end within `secs`; its exit
/// code and output (stdout, then stderr).
async fn run_drainpipe(wine: &Wine, args: &[&str], secs: u64) -> (Option<i32>, String) {
    let mut command = tokio::process::Command::new(&wine.loader);
    command
        .arg(wine.bins.join("drainpipe.exe"))
        .args(args)
        .env("WINEDEBUG", "-all")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = within(secs, "drainpipe.exe to finish", command.output())
        .await
        .expect("run drainpipe.exe");
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.code(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Windows build and wine: scripts/test-all.sh runs it"]
async fn demo_and_check_pass_under_wine() {
    let wine = wine();
    // The demo finds the fixture beside itself.
    let (code, out) = run_drainpipe(&wine, &["demo"], 120).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("stdout backpressure observed"), "{out}");
    assert!(out.contains("Every step behaved as expected"), "{out}");
    let fixture = windows_path(&wine.bins.join("drainpipe-fixture.exe"));
    let (code, out) = run_drainpipe(
        &wine,
        &[
            "check",
            "--large-tool",
            "large",
            "--slow-tool",
            "slow",
            "--",
            &fixture,
        ],
        120,
    )
    .await;
    // The fixture's `large` is unbounded on purpose: the check must fail
    // that row, and pass the others (shutdown seen through the job).
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("5 passed, 1 failed"), "{out}");
    assert!(out.contains("result over the limit  FAIL"), "{out}");
    assert!(out.contains("progress stopped"), "{out}");
    assert!(out.contains("no processes left"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Windows build and wine: scripts/test-all.sh runs it"]
async fn install_and_uninstall_edit_the_appdata_config_under_wine() {
    let wine = wine();
    // %APPDATA% of the prefix's user (wine names it after the Linux user).
    let users = PathBuf::from(std::env::var_os("WINEPREFIX").unwrap()).join("drive_c/users");
    let roaming = std::fs::read_dir(&users)
        .expect("the prefix has users")
        .flatten()
        .map(|user| user.path().join("AppData/Roaming"))
        .find(|dir| dir.is_dir() && !dir.starts_with(users.join("Public")))
        .expect("a user's AppData\\Roaming");
    let dir = roaming.join("Claude");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("claude_desktop_config.json");
    let original = "{\n  \"mcpServers\": {\n    \"files\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"C:\\\\Users\\\\me\"]}\n  }\n}\n";
    std::fs::write(&config, original).unwrap();
    let exe = r"C:\Program Files\drainpipe\drainpipe.exe";
    let (code, out) = run_drainpipe(
        &wine,
        &[
            "install",
            "--host",
            "claude-desktop",
            "--command",
            exe,
            "--proxy-args",
            "--clip 256KiB",
        ],
        60,
    )
    .await;
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(r"C:\users\") && !out.contains(r"\\?\"),
        "the %APPDATA% file, named as written: {out}"
    );
    let wrapped: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(
        wrapped["mcpServers"]["files"],
        json!({"command": exe, "args": ["proxy", "--clip", "256KiB", "--", "npx", "-y",
               "@modelcontextprotocol/server-filesystem", "C:\\Users\\me"]})
    );
    let (code, out) = run_drainpipe(&wine, &["uninstall", "--host", "claude-desktop"], 60).await;
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original, "{out}");
    assert!(
        !dir.join("claude_desktop_config.json.drainpipe-backup")
            .exists(),
        "the backup is removed once restored"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
