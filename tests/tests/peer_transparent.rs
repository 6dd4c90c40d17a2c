//! Guarantee: what the server writes reaches the host as the server wrote
//! it, byte for byte, through `drainpipe proxy`, `proxy --sandbox` and
//! `proxy --clip`; with `--clip` the only differences are the documented
//! ones: the `drainpipe_read` tool appended to the last page of
//! `tools/list`, `"resources":{}` appended to the capabilities of a server
//! that had none, results over the budget condensed, and the proxy's own
//! answers to the requests it serves. And no request reaches a server for a
//! method it did not announce because of what the proxy announced.
//!
//! Both ends are recorded outside the proxy, with `tee` on the server's
//! stdin and stdout and on the proxy's stdout, while an official SDK client
//! does what hosts do on connecting (`transparency-client.mjs`): the
//! handshake, every page of `tools/list`, `resources/list` and
//! `resources/templates/list` whenever resources are announced, then a few
//! tool calls (the Python SDK client, `transparency_client.py`, does the
//! same). The servers: the official `server-everything` and
//! `server-filesystem`, the Python SDK server, and for revision 2026-07-28
//! the v2 TypeScript server with the v2 client.
//!
//! Needs `bash tests/peers/setup.sh`; see `drainpipe_release::peers`.

use std::path::{Path, PathBuf};

use drainpipe_framer::testing::inserted;
use drainpipe_release::peers::{self, proxy_argv, run_client};
use drainpipe_release::text_file::TextFile;
use serde_json::{Value, json};

/// `--clip`'s budget here: the large file's result is over it, every other
/// line under it.
const BUDGET: usize = 64 << 10;
const RUN_SECS: u64 = 120;
/// The TypeScript SDK host (`tests/peers/node`).
const TS_CLIENT: &str = "transparency-client.mjs";

/// The three ways a host can run the proxy.
const MODES: [(&str, &[&str]); 3] = [
    ("proxy", &[]),
    ("proxy --sandbox", &["--sandbox"]),
    ("proxy --clip 64KiB", &["--clip", "64KiB"]),
];

/// The tool definition `--clip` appends, as the proxy writes it.
fn read_tool_definition() -> Value {
    json!({"name": "drainpipe_read"})
}

/// Where one run's bytes are recorded.
struct Recording {
    dir: PathBuf,
}

impl Recording {
    fn new(name: &str) -> Recording {
        let dir = std::env::temp_dir().join(format!(
            "drainpipe-transparent-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the recording directory");
        Recording { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// `server` with its stdin and stdout recorded.
    fn server(&self, server: &[String]) -> Vec<String> {
        let mut argv: Vec<String> = [
            "sh",
            "-c",
            r#"in=$1.$COPY; out=$2.$COPY; shift 2; tee "$in" | "$@" | tee "$out""#,
            "record-server",
        ]
        .map(String::from)
        .to_vec();
        argv.push(self.path("server.in"));
        argv.push(self.path("server.out"));
        argv.extend(server.iter().cloned());
        argv
    }

    /// `proxy` with its stdout recorded. Each copy a client starts (the
    /// TypeScript v2 client starts one to probe, then another) records to
    /// its own files, named by the shell's pid (`COPY`, which the proxy
    /// passes on to the server's recorder in its environment).
    fn proxy(&self, proxy: &[String]) -> Vec<String> {
        let mut argv: Vec<String> = [
            "sh",
            "-c",
            r#"export COPY=$$; out=$1.$COPY; shift; "$@" | tee "$out""#,
            "record-proxy",
        ]
        .map(String::from)
        .to_vec();
        argv.push(self.path("host.in"));
        argv.extend(proxy.iter().cloned());
        argv
    }

    /// The copies recorded.
    fn copies(&self) -> Vec<String> {
        let mut copies: Vec<String> = std::fs::read_dir(&self.dir)
            .expect("the recording directory")
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_prefix("host.in.").map(str::to_string)
            })
            .collect();
        copies.sort();
        copies
    }

    /// The complete lines of a recording (a line cut by the end of the
    /// run is not one).
    fn lines(&self, name: &str) -> Vec<Vec<u8>> {
        let bytes = std::fs::read(self.path(name)).unwrap_or_default();
        let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        lines.pop();
        lines
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn parse(line: &[u8]) -> Value {
    serde_json::from_slice(line)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(line)))
}

/// Whether `edited` is the server's `original` with exactly the insertion
/// `--clip` documents for a `tools/list` or handshake answer.
fn documented_insertion(original: &[u8], edited: &[u8]) -> bool {
    let Some(run) = inserted(original, edited) else {
        return false;
    };
    let run = run.strip_prefix(b",").unwrap_or(run);
    if run == br#""resources":{}"# || run == br#""capabilities":{"resources":{}}"# {
        return true;
    }
    // The tool: one object whose name is drainpipe_read, appended to `tools`.
    let Ok(tool) = serde_json::from_slice::<Value>(run) else {
        return false;
    };
    let tools = parse(edited)["result"]["tools"].clone();
    tool["name"] == read_tool_definition()["name"]
        && tools.as_array().and_then(|t| t.last()) == Some(&tool)
}

/// The id of the proxy's own `server/discover`.
const PROBE_ID: &str = "io.drainpipe/discover";

/// Checks one copy's recordings; `clip` says whether `--clip` was on.
/// Returns how many lines were edited.
fn check(recording: &Recording, copy: &str, clip: bool, what: &str) -> usize {
    let what = &format!("{what} (copy {copy})");
    let mut server_out = recording.lines(&format!("server.out.{copy}"));
    let host_in = recording.lines(&format!("host.in.{copy}"));
    let server_in: Vec<Value> = recording
        .lines(&format!("server.in.{copy}"))
        .iter()
        .map(|l| parse(l))
        .collect();
    assert!(!host_in.is_empty(), "{what}: nothing recorded");
    // The answer to the proxy's own server/discover goes nowhere; it is
    // asked only with --clip, at most once.
    let probes = server_in.iter().filter(|m| m["id"] == PROBE_ID).count();
    assert!(probes <= usize::from(clip), "{what}: {probes} probes");
    let handshake = server_out
        .iter()
        .map(|l| parse(l))
        .find(|m| m["result"].get("capabilities").is_some());
    server_out.retain(|l| parse(l)["id"] != PROBE_ID);
    // Requests the server saw, by id.
    let forwarded: Vec<&Value> = server_in
        .iter()
        .filter(|m| m.get("method").is_some())
        .filter_map(|m| m.get("id"))
        .collect();
    let mut at = 0;
    let mut edits = 0;
    let mut condensed = 0;
    let mut own = 0;
    for line in &host_in {
        if server_out.get(at) == Some(line) {
            at += 1;
            continue;
        }
        assert!(
            clip,
            "{what}: the host read a line the server did not write there:\n  host read:     {}\n  server wrote:  {}",
            String::from_utf8_lossy(line),
            server_out
                .get(at)
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .unwrap_or_default()
        );
        let message = parse(line);
        let is_response = message.get("result").is_some() || message.get("error").is_some();
        if is_response && !forwarded.contains(&&message["id"]) {
            // An answer of the proxy's own, to a request it served.
            own += 1;
            continue;
        }
        let original = server_out
            .get(at)
            .unwrap_or_else(|| panic!("{what}: the host read more than the server wrote"));
        if documented_insertion(original, line) {
            edits += 1;
        } else {
            assert!(
                original.len() > BUDGET && line.len() <= BUDGET,
                "{what}: a line under the budget was changed:\n  host read:     {}\n  server wrote:  {}",
                String::from_utf8_lossy(line),
                String::from_utf8_lossy(original)
            );
            assert!(
                message["result"]["_meta"]["io.drainpipe/truncated"].is_object(),
                "{what}: a condensed result without its marker"
            );
            condensed += 1;
        }
        at += 1;
    }
    // No resource method reached a server that announced no resources.
    let announced = handshake.map(|m| m["result"]["capabilities"].get("resources").is_some());
    if announced == Some(false) {
        for message in &server_in {
            let method = message["method"].as_str().unwrap_or_default();
            assert!(
                !method.starts_with("resources/"),
                "{what}: {method} reached a server that announced no resources"
            );
        }
    }
    drainpipe_release::figure(
        what,
        json!({"lines": host_in.len(), "edited": edits, "condensed": condensed, "own answers": own}),
    );
    edits
}

/// Runs the client (`client`, given its arguments) in front of `server`
/// through each mode and checks the recordings.
async fn through_each_mode(
    client: impl Fn(&[&str]) -> std::process::Command,
    name: &str,
    server: &[String],
    client_args: &[&str],
    server_has_resources: bool,
) {
    let drainpipe = peers::drainpipe().expect("gated by the caller");
    for (mode, proxy_args) in MODES {
        let clip = proxy_args.contains(&"--clip");
        let what = format!("{name} through {mode}");
        let recording = Recording::new(&format!("{name}-{}", mode.len()));
        let mut args: Vec<String> = proxy_args.iter().map(|a| a.to_string()).collect();
        args.extend(["--metrics", "none"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let proxied = recording.proxy(&proxy_argv(&drainpipe, &args, &recording.server(server)));
        let mut argv: Vec<&str> = client_args.to_vec();
        argv.push("--");
        argv.extend(proxied.iter().map(String::as_str));
        let run = run_client(client(&argv), RUN_SECS, &what).await;
        run.assert_nothing_left();
        let summary = &run.summary;
        let tools: Vec<&str> = summary["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(tools.contains(&"drainpipe_read"), clip, "{what}: {summary}");
        let resources = summary["capabilities"]
            .as_array()
            .expect("capabilities")
            .contains(&json!("resources"));
        assert_eq!(resources, clip || server_has_resources, "{what}: {summary}");
        let copies = recording.copies();
        assert!(!copies.is_empty(), "{what}: nothing recorded");
        let edits: usize = copies
            .iter()
            .map(|copy| check(&recording, copy, clip, &what))
            .sum();
        // At least the tool, and the capability where the server had none.
        let wanted = if !clip {
            0
        } else if server_has_resources {
            1
        } else {
            2
        };
        assert!(edits >= wanted, "{what}: {edits} edits, {wanted} at least");
    }
}

fn call(name: &str, arguments: Value) -> [String; 3] {
    ["--call".into(), name.into(), arguments.to_string()]
}

fn strs(args: &[[String; 3]]) -> Vec<&str> {
    args.iter().flatten().map(String::as_str).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_arrives_as_written() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    if peers::gate("the drainpipe binary", peers::drainpipe()).is_none() {
        return;
    }
    // One file over the budget (its text twice on the line: condensed with
    // --clip), one under it.
    let big = TextFile::new("transparent-big", 256 << 10);
    let small = big.dir.join("small.txt");
    std::fs::write(&small, "a small file, \"quoted\", with a tab\t and é\n").unwrap();
    let path = |p: &Path| p.display().to_string();
    let calls = [
        call("read_text_file", json!({"path": path(&small)})),
        call("list_directory", json!({"path": path(&big.dir)})),
        call("read_text_file", json!({"path": path(&big.path)})),
        call("get_file_info", json!({"path": path(&small)})),
    ];
    through_each_mode(
        |args| node.script(TS_CLIENT, args),
        "server-filesystem",
        &node.filesystem_server(&big.dir),
        &strs(&calls),
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_arrives_as_written() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    if peers::gate("the drainpipe binary", peers::drainpipe()).is_none() {
        return;
    }
    let calls = [
        call("echo", json!({"message": "caf\u{e9} \"q\" \\ 😀"})),
        call("get-sum", json!({"a": 123456789, "b": 1.5})),
    ];
    through_each_mode(
        |args| node.script(TS_CLIENT, args),
        "server-everything",
        &node.everything_server(),
        &strs(&calls),
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_sdk_server_arrives_as_written() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    if peers::gate("the drainpipe binary", peers::drainpipe()).is_none() {
        return;
    }
    let calls = [call("echo", json!({"text": "línea «ünï» \"q\" 😀"}))];
    // The Python SDK announces resources (and prompts) whether it has any.
    through_each_mode(
        |args| node.script(TS_CLIENT, args),
        "python-sdk server",
        &python.server(),
        &strs(&calls),
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_2026_07_28_era_arrives_as_written() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    if peers::gate("the drainpipe binary", peers::drainpipe()).is_none() {
        return;
    }
    let file = TextFile::new("transparent-v2", 4 << 10);
    let server = vec![
        node.node.display().to_string(),
        node.dir.join("v2-server.mjs").display().to_string(),
    ];
    let calls = [call(
        "read_text",
        json!({"path": file.path.display().to_string()}),
    )];
    let mut args = vec!["--sdk", "v2"];
    args.extend(strs(&calls));
    through_each_mode(
        |args| node.script(TS_CLIENT, args),
        "v2 server, 2026-07-28",
        &server,
        &args,
        false,
    )
    .await;
}

/// The Python SDK client in front of `server-filesystem` (no resources):
/// it lists resources when they are announced, as the TypeScript client
/// does, and the proxy answers them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_reads_what_the_server_wrote() {
    let Some(node) = peers::gate("the Node.js peer", peers::node()) else {
        return;
    };
    let Some(python) = peers::gate("the Python peer", peers::python()) else {
        return;
    };
    if peers::gate("the drainpipe binary", peers::drainpipe()).is_none() {
        return;
    }
    let file = TextFile::new("transparent-python", 4 << 10);
    let calls = [call(
        "read_text_file",
        json!({"path": file.path.display().to_string()}),
    )];
    through_each_mode(
        |args| python.script("transparency_client.py", args),
        "python-sdk client + server-filesystem",
        &node.filesystem_server(&file.dir),
        &strs(&calls),
        false,
    )
    .await;
}
