//! `drainpipe install` and `drainpipe uninstall` as processes, on config
//! files of every host format under a throwaway home directory: wrap,
//! idempotence, byte-for-byte uninstall, dry runs that write nothing, parse
//! errors that name the line, the refusal of a build-directory binary, and a
//! wrapped entry that really runs.

mod cli_support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use cli_support::*;
use serde_json::Value;

/// The binary under test, which the configs point at through `--command`
/// (it lives in a cargo build directory, which install refuses by itself).
const DRAINPIPE: &str = env!("CARGO_BIN_EXE_drainpipe");

/// A fresh home directory with a project directory in it, removed on drop.
struct Home {
    root: PathBuf,
}

impl Home {
    fn new(tag: &str) -> Home {
        let root = std::env::temp_dir().join(format!(
            "drainpipe-cli-install-{tag}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("project")).unwrap();
        Home { root }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// Writes `text` at `relative`, making its directories.
    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    /// `drainpipe ARGS` with this home, run from its project directory, with
    /// nothing from the caller's environment that moves config directories.
    fn drainpipe(&self, args: &[&str]) -> Command {
        let mut command = drainpipe(args);
        command
            .env("HOME", &self.root)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CODEX_HOME")
            .env("NO_COLOR", "1")
            .current_dir(self.path("project"));
        command
    }

    fn run(&self, args: &[&str]) -> Finished {
        run(&mut self.drainpipe(args), b"", 30)
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

fn backup(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(".drainpipe-backup");
    path.with_file_name(name)
}

const CLAUDE_DESKTOP: &str = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/projects"],
      "env": { "DEBUG": "1" }
    },
    "linear": { "url": "https://mcp.linear.app/sse" },
    "guarded": {
      "command": "/usr/local/bin/drainpipe",
      "args": ["proxy", "--", "node", "server.js"]
    }
  }
}
"#;

const CLAUDE_CODE: &str = r#"{
  "numStartups": 3,
  "mcpServers": {},
  "projects": {
    "/home/me/app": {
      "allowedTools": [],
      "mcpServers": {
        "db": { "type": "stdio", "command": "node", "args": ["db.js"], "env": {} },
        "docs": { "type": "http", "url": "https://docs.example/mcp" }
      }
    }
  }
}
"#;

const CURSOR: &str = r#"{
  "mcpServers": {
    "sqlite": {
      "command": "uvx",
      "args": ["mcp-server-sqlite", "--db-path", "/home/me/test.db"],
      "cwd": "/home/me"
    }
  }
}
"#;

const VSCODE: &str = r#"// Workspace MCP servers
{
	"inputs": [],
	"servers": {
		"memory": {
			"type": "stdio",
			"command": "npx",
			"args": [
				"-y", // no prompt
				"@modelcontextprotocol/server-memory"
			],
		},
		"github": { "type": "http", "url": "https://api.githubcopilot.com/mcp/" },
	},
}
"#;

const ZED: &str = r#"// Zed settings
{
  "theme": "One Dark",
  "context_servers": {
    "sqlite": {
      "source": "custom",
      "command": "npx",
      "args": ["-y", "mcp-server-sqlite"],
      "env": {}
    },
    "older": {
      "command": { "path": "python3", "args": ["-m", "srv"], "env": {} },
      "settings": {}
    }
  }
}
"#;

const CODEX: &str = r#"# Codex
model = "o4-mini"

[mcp_servers.git]
command = "uvx" # the runner
args = ["mcp-server-git"]
cwd = "/home/me/repo"

[mcp_servers.git.env]
GIT_AUTHOR_NAME = "me"

[mcp_servers.docs]
url = "https://docs.example/mcp"
"#;

/// Every format in its host's place.
fn every_host(home: &Home) -> Vec<(PathBuf, &'static str)> {
    vec![
        (
            home.write(".config/Claude/claude_desktop_config.json", CLAUDE_DESKTOP),
            CLAUDE_DESKTOP,
        ),
        (home.write(".claude.json", CLAUDE_CODE), CLAUDE_CODE),
        (home.write(".cursor/mcp.json", CURSOR), CURSOR),
        (home.write("project/.vscode/mcp.json", VSCODE), VSCODE),
        (home.write(".config/zed/settings.json", ZED), ZED),
        (home.write(".codex/config.toml", CODEX), CODEX),
    ]
}

#[test]
fn install_wraps_every_host_and_uninstall_restores_every_byte() {
    let home = Home::new("every");
    let files = every_host(&home);
    let done = home.run(&["install", "--command", DRAINPIPE]);
    assert_eq!(done.code(), 0, "{}\n{}", done.stdout, done.stderr);
    for (title, file) in [
        (
            "Claude Desktop",
            "~/.config/Claude/claude_desktop_config.json",
        ),
        ("Claude Code", "~/.claude.json"),
        ("Cursor", "~/.cursor/mcp.json"),
        ("VS Code", "~/project/.vscode/mcp.json"),
        ("Zed", "~/.config/zed/settings.json"),
        ("Codex", "~/.codex/config.toml"),
    ] {
        assert!(
            done.stdout.contains(&format!("{title}: {file}\n")),
            "{title}: {}",
            done.stdout
        );
    }
    let quoted = serde_json::to_string(DRAINPIPE).unwrap();
    for (path, original) in &files {
        let now = fs::read_to_string(path).unwrap();
        assert_ne!(&now, original, "{} unchanged", path.display());
        assert!(now.contains(&quoted), "{now}");
        assert_eq!(&fs::read_to_string(backup(path)).unwrap(), original);
    }
    // Remote and already-wrapped servers are left, env and cwd kept,
    // comments kept.
    let desktop: Value = serde_json::from_str(&fs::read_to_string(&files[0].0).unwrap()).unwrap();
    let servers = &desktop["mcpServers"];
    assert_eq!(servers["filesystem"]["command"], DRAINPIPE);
    assert_eq!(
        servers["filesystem"]["args"],
        serde_json::json!([
            "proxy",
            "--clip",
            "1MB",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/home/me/projects"
        ])
    );
    // Each host's file gets the budget that fits the host's cap, and says
    // which and why.
    for (budget, host) in [
        ("--clip 1MB: Claude Desktop refuses", "Claude Desktop"),
        ("--clip 50000chars: Claude Code moves", "Claude Code"),
        ("--clip 256KiB: the default", "Cursor"),
        ("--clip 8000: VS Code moves", "VS Code"),
        ("--clip 256KiB: the default", "Zed"),
        ("--clip 10000: Codex cuts", "Codex"),
    ] {
        let section = done.stdout.split(&format!("{host}: ")).nth(1).unwrap();
        assert!(
            section.lines().nth(1).unwrap().contains(budget),
            "{host}: {}",
            done.stdout
        );
    }
    assert_eq!(servers["filesystem"]["env"]["DEBUG"], "1");
    assert_eq!(
        servers["linear"],
        serde_json::json!({"url": "https://mcp.linear.app/sse"})
    );
    assert_eq!(servers["guarded"]["command"], "/usr/local/bin/drainpipe");
    let code: Value = serde_json::from_str(&fs::read_to_string(&files[1].0).unwrap()).unwrap();
    let project = &code["projects"]["/home/me/app"]["mcpServers"];
    assert_eq!(project["db"]["command"], DRAINPIPE);
    assert_eq!(
        project["db"]["args"],
        serde_json::json!(["proxy", "--clip", "50000chars", "--", "node", "db.js"])
    );
    assert_eq!(project["docs"]["url"], "https://docs.example/mcp");
    let cursor: Value = serde_json::from_str(&fs::read_to_string(&files[2].0).unwrap()).unwrap();
    assert_eq!(cursor["mcpServers"]["sqlite"]["cwd"], "/home/me");
    let vscode = fs::read_to_string(&files[3].0).unwrap();
    assert!(vscode.starts_with("// Workspace MCP servers\n"), "{vscode}");
    assert!(
        vscode.contains("\t\t\t\t\"npx\",\n\t\t\t\t\"-y\", // no prompt\n"),
        "{vscode}"
    );
    assert!(
        vscode.contains(
            r#""github": { "type": "http", "url": "https://api.githubcopilot.com/mcp/" },"#
        )
    );
    let zed = fs::read_to_string(&files[4].0).unwrap();
    assert!(zed.contains(&format!(
        r#""command": {{ "path": {quoted}, "args": ["proxy", "--clip", "256KiB", "--", "python3", "-m", "srv"], "env": {{}} }},"#
    )), "{zed}");
    let codex = fs::read_to_string(&files[5].0).unwrap();
    assert!(codex.contains(&format!(
        "command = {quoted} # the runner\nargs = [\"proxy\", \"--clip\", \"10000\", \"--\", \"uvx\", \"mcp-server-git\"]\ncwd = \"/home/me/repo\"\n"
    )), "{codex}");
    assert!(codex.contains("[mcp_servers.docs]\nurl = \"https://docs.example/mcp\"\n"));
    assert!(
        done.stdout
            .contains("Restart Claude Desktop, Claude Code, Cursor, VS Code, Zed, Codex")
    );

    // A second install changes nothing, byte for byte.
    let wrapped: Vec<Vec<u8>> = files
        .iter()
        .map(|(path, _)| fs::read(path).unwrap())
        .collect();
    let again = home.run(&["install", "--command", DRAINPIPE]);
    assert_eq!(again.code(), 0, "{}", again.stdout);
    assert_eq!(
        again.stdout.matches("nothing to change").count(),
        files.len(),
        "{}",
        again.stdout
    );
    for ((path, _), before) in files.iter().zip(&wrapped) {
        assert_eq!(&fs::read(path).unwrap(), before, "{}", path.display());
    }

    // Uninstall restores every file byte for byte and removes the backups.
    let undo = home.run(&["uninstall"]);
    assert_eq!(undo.code(), 0, "{}\n{}", undo.stdout, undo.stderr);
    assert_eq!(
        undo.stdout.matches("restored it byte for byte").count(),
        files.len(),
        "{}",
        undo.stdout
    );
    for (path, original) in &files {
        assert_eq!(
            &fs::read_to_string(path).unwrap(),
            original,
            "{}",
            path.display()
        );
        assert!(!backup(path).exists(), "{}", backup(path).display());
    }
}

#[test]
fn a_file_edited_after_install_is_unwrapped_in_place() {
    let home = Home::new("edited");
    let path = home.write("project/.mcp.json", CURSOR);
    let done = home.run(&["install", "--host", "claude-code", "--command", DRAINPIPE]);
    assert_eq!(done.code(), 0, "{}", done.stdout);
    let edited = fs::read_to_string(&path)
        .unwrap()
        .replace("\"cwd\"", "\"timeout\": 30,\n      \"cwd\"");
    fs::write(&path, &edited).unwrap();
    let undo = home.run(&["uninstall", "--host", "claude-code"]);
    assert_eq!(undo.code(), 0, "{}", undo.stdout);
    assert!(
        undo.stdout
            .contains("unwrapped in place: the file changed since install"),
        "{}",
        undo.stdout
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        CURSOR.replace("\"cwd\"", "\"timeout\": 30,\n      \"cwd\"")
    );
    assert!(backup(&path).exists(), "the unused backup is left");
}

#[test]
fn dry_run_prints_a_diff_and_writes_nothing() {
    let home = Home::new("dry");
    let path = home.write("configs/claude_desktop_config.json", CLAUDE_DESKTOP);
    let config = path.to_str().unwrap();
    let done = home.run(&[
        "install",
        "--config",
        config,
        "--dry-run",
        "--command",
        "/opt/bin/drainpipe",
    ]);
    assert_eq!(done.code(), 0, "{}\n{}", done.stdout, done.stderr);
    let diff = [
        "@@ -1,8 +1,8 @@",
        " {",
        "   \"mcpServers\": {",
        "     \"filesystem\": {",
        "-      \"command\": \"npx\",",
        "-      \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/me/projects\"],",
        "+      \"command\": \"/opt/bin/drainpipe\",",
        "+      \"args\": [\"proxy\", \"--clip\", \"256KiB\", \"--\", \"npx\", \"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/me/projects\"],",
        "       \"env\": { \"DEBUG\": \"1\" }",
        "     },",
    ]
    .join("\n");
    assert!(
        done.stdout.contains(
            "--- ~/configs/claude_desktop_config.json\n+++ ~/configs/claude_desktop_config.json\n"
        ),
        "{}",
        done.stdout
    );
    assert!(done.stdout.contains(&diff), "{}", done.stdout);
    assert!(
        done.stdout.contains("dry run: would write it"),
        "{}",
        done.stdout
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), CLAUDE_DESKTOP);
    assert!(!backup(&path).exists());
    // Uninstall's dry run too.
    let done = home.run(&["uninstall", "--config", config, "--dry-run"]);
    assert_eq!(done.code(), 0);
    assert!(
        done.stdout.contains("+      \"command\": \"node\","),
        "{}",
        done.stdout
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), CLAUDE_DESKTOP);
}

#[test]
fn a_file_that_does_not_parse_is_left_alone_and_its_line_named() {
    let home = Home::new("broken");
    let broken = "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"npx\" }\n    \"b\": { \"command\": \"uvx\" }\n  }\n}\n";
    let bad = home.write(".cursor/mcp.json", broken);
    let good = home.write(".codex/config.toml", CODEX);
    let done = home.run(&["install", "--command", DRAINPIPE]);
    assert_eq!(done.code(), 1, "{}", done.stdout);
    assert!(
        done.stdout.contains(
            "error: cannot parse it: line 3, column 30: Expected comma; the file is left as it is"
        ),
        "{}",
        done.stdout
    );
    assert_eq!(fs::read_to_string(&bad).unwrap(), broken);
    assert!(!backup(&bad).exists());
    // The other host's file is still done.
    assert!(fs::read_to_string(&good).unwrap().contains("\"proxy\""));
    let toml = home.write(
        "other/config.toml",
        "[mcp_servers.a]\ncommand = \"x\"\nargs = [\"y\"\n",
    );
    let done = home.run(&[
        "install",
        "--config",
        toml.to_str().unwrap(),
        "--command",
        DRAINPIPE,
    ]);
    assert_eq!(done.code(), 1);
    assert!(
        done.stdout.contains("cannot parse it: line 3,"),
        "{}",
        done.stdout
    );
}

#[test]
fn a_binary_in_a_build_directory_is_refused_unless_command_says_so() {
    let home = Home::new("refuse");
    let path = home.write(".cursor/mcp.json", CURSOR);
    let done = home.run(&["install"]);
    assert_eq!(done.code(), 3, "{}", done.stdout);
    assert!(done.stderr.contains("refusing to write"), "{}", done.stderr);
    assert!(
        done.stderr.contains("cargo build directory"),
        "{}",
        done.stderr
    );
    assert!(done.stderr.contains("--command PATH"), "{}", done.stderr);
    assert!(
        done.stderr.contains("cargo install --locked --path cli"),
        "{}",
        done.stderr
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), CURSOR);
    // A dry run writes nothing: it shows what this binary would write, with
    // the warning.
    let done = home.run(&["install", "--dry-run"]);
    assert_eq!(done.code(), 0, "{}\n{}", done.stdout, done.stderr);
    assert!(done.stderr.contains("refusing to write"), "{}", done.stderr);
    assert!(
        done.stderr.contains("this dry run shows"),
        "{}",
        done.stderr
    );
    assert!(
        done.stdout.contains("+      \"command\": "),
        "{}",
        done.stdout
    );
    assert!(
        done.stdout.contains("dry run: would write it"),
        "{}",
        done.stdout
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), CURSOR);
    // --command is written as given, and uninstall knows it by name.
    let done = home.run(&["install", "--command", "/opt/tools/drainpipe"]);
    assert_eq!(done.code(), 0, "{}", done.stderr);
    let written: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        written["mcpServers"]["sqlite"]["command"],
        "/opt/tools/drainpipe"
    );
    assert!(
        done.stderr.contains("/opt/tools/drainpipe does not exist"),
        "{}",
        done.stderr
    );
    assert_eq!(home.run(&["uninstall"]).code(), 0);
    assert_eq!(fs::read_to_string(&path).unwrap(), CURSOR);
}

#[test]
fn proxy_args_are_checked_then_written_before_the_separator() {
    let home = Home::new("proxy-args");
    let path = home.write(".cursor/mcp.json", CURSOR);
    let done = home.run(&[
        "install",
        "--command",
        DRAINPIPE,
        "--proxy-args",
        "--clipp 256KiB",
    ]);
    assert_eq!(done.code(), 2, "{}", done.stdout);
    assert!(done.stderr.contains("--clipp"), "{}", done.stderr);
    assert_eq!(fs::read_to_string(&path).unwrap(), CURSOR);
    let done = home.run(&[
        "install",
        "--command",
        DRAINPIPE,
        "--proxy-args",
        "--clip 64KiB --metrics-file '/tmp/dp {pid}.json'",
    ]);
    assert_eq!(done.code(), 0, "{}", done.stderr);
    // The user's --clip replaces the host's.
    assert!(
        done.stdout
            .contains("budget           the --clip of --proxy-args"),
        "{}",
        done.stdout
    );
    let written: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        written["mcpServers"]["sqlite"]["args"],
        serde_json::json!([
            "proxy",
            "--clip",
            "64KiB",
            "--metrics-file",
            "/tmp/dp {pid}.json",
            "--",
            "uvx",
            "mcp-server-sqlite",
            "--db-path",
            "/home/me/test.db"
        ])
    );
    assert_eq!(home.run(&["uninstall"]).code(), 0);
    assert_eq!(fs::read_to_string(&path).unwrap(), CURSOR);
}

#[test]
fn format_is_told_by_contents_or_forced() {
    let home = Home::new("format");
    let both =
        r#"{ "servers": { "a": { "command": "x" } }, "mcpServers": { "b": { "command": "y" } } }"#;
    let path = home.write("any/servers.json", both);
    let config = path.to_str().unwrap();
    let done = home.run(&["install", "--config", config, "--command", DRAINPIPE]);
    assert_eq!(done.code(), 1, "{}", done.stdout);
    assert!(done.stdout.contains("say --format"), "{}", done.stdout);
    assert_eq!(fs::read_to_string(&path).unwrap(), both);
    let done = home.run(&[
        "install",
        "--config",
        config,
        "--format",
        "vscode",
        "--command",
        DRAINPIPE,
    ]);
    assert_eq!(done.code(), 0, "{}", done.stdout);
    let written: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written["servers"]["a"]["command"], DRAINPIPE);
    assert_eq!(written["mcpServers"]["b"]["command"], "y");
    // --format needs --config; --host and --config exclude each other.
    assert_eq!(home.run(&["install", "--format", "zed"]).code(), 2);
    assert_eq!(
        home.run(&["install", "--host", "zed", "--config", config])
            .code(),
        2
    );
}

#[test]
fn no_config_found_says_where_it_looked() {
    let home = Home::new("none");
    let done = home.run(&["install", "--command", DRAINPIPE]);
    assert_eq!(done.code(), 1, "{}", done.stdout);
    assert!(
        done.stderr.contains("found no MCP host config file"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr
            .contains("~/.config/Claude/claude_desktop_config.json"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr.contains("~/.codex/config.toml"),
        "{}",
        done.stderr
    );
    let done = home.run(&["uninstall", "--host", "zed"]);
    assert_eq!(done.code(), 1);
    assert!(
        done.stderr.contains("found no Zed config file"),
        "{}",
        done.stderr
    );
}

/// The edited entry, started as a host would start it, serves MCP through
/// the proxy.
#[test]
fn the_wrapped_entry_runs_the_server_behind_the_proxy() {
    let home = Home::new("runs");
    let original = format!(
        "{{\n  \"mcpServers\": {{\n    \"fixture\": {{\n      \"command\": {},\n      \"args\": [\"fixture\"]\n    }}\n  }}\n}}\n",
        serde_json::to_string(DRAINPIPE).unwrap()
    );
    let path = home.write(".cursor/mcp.json", &original);
    let done = home.run(&[
        "install",
        "--command",
        DRAINPIPE,
        "--proxy-args",
        "--metrics none",
    ]);
    assert_eq!(done.code(), 0, "{}", done.stdout);
    let config: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let entry = &config["mcpServers"]["fixture"];
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|word| word.as_str().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            "proxy",
            "--metrics",
            "none",
            "--clip",
            "256KiB",
            "--",
            DRAINPIPE,
            "fixture"
        ]
    );
    let mut server = Command::new(entry["command"].as_str().unwrap());
    server.args(&args);
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        "\n",
    );
    let done = run_until(&mut server, input.as_bytes(), r#""id":2"#, 30);
    assert_eq!(done.code(), 0, "{}", done.stderr);
    let lines = json_lines(&done.stdout);
    let initialize = lines
        .iter()
        .find(|line| line["id"] == 1)
        .expect("an initialize answer");
    assert!(
        initialize["result"]["serverInfo"]["name"].is_string(),
        "{initialize}"
    );
    let tools = lines
        .iter()
        .find(|line| line["id"] == 2)
        .expect("a tools/list answer");
    assert!(
        !tools["result"]["tools"].as_array().unwrap().is_empty(),
        "{tools}"
    );
}

/// `drainpipe install` run from a copy of the binary at `relative` in the
/// home directory (where npx or uvx would have put it).
fn run_copy(home: &Home, relative: &str, args: &[&str]) -> Finished {
    let copy = home.path(relative);
    if !copy.exists() {
        fs::create_dir_all(copy.parent().unwrap()).unwrap();
        // Copied by `cp`, not `fs::copy`: a file this process holds open
        // for writing is inherited by every child another test thread
        // forks meanwhile, until that child execs, and running the copy in
        // that window fails with ETXTBSY ("Text file busy"; it did, once in
        // six runs of these tests under load). The writing descriptor only
        // ever lives in `cp`, which has exited before the copy runs.
        let copied = Command::new("cp")
            .arg(DRAINPIPE)
            .arg(&copy)
            .status()
            .expect("run cp");
        assert!(
            copied.success(),
            "cp {DRAINPIPE} {}: {copied}",
            copy.display()
        );
    }
    let mut command = Command::new(&copy);
    command
        .args(args)
        .env("HOME", &home.root)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("UV_CACHE_DIR")
        .env_remove("UV_TOOL_DIR")
        .env("NO_COLOR", "1")
        .current_dir(home.path("project"));
    run(&mut command, b"", 30)
}

#[test]
fn from_an_npx_or_uvx_cache_install_writes_the_runner_and_this_version() {
    let version = env!("CARGO_PKG_VERSION");
    for (relative, runner, launcher) in [
        (
            ".npm/_npx/6a9f2e/node_modules/@drainpipe/linux-x64/bin/drainpipe",
            "npx",
            format!(r#""-y", "drainpipe@{version}", "#),
        ),
        (
            ".cache/uv/archive-v0/Xy12ab/bin/drainpipe",
            "uvx",
            format!(r#""drainpipe@{version}", "#),
        ),
    ] {
        let home = Home::new(&format!("runner-{runner}"));
        let path = home.write(".config/Claude/claude_desktop_config.json", CLAUDE_DESKTOP);
        let host = ["--host", "claude-desktop"];
        // The dry run says why, and shows the runner's command line.
        let done = run_copy(&home, relative, &["install", "--dry-run", host[0], host[1]]);
        assert_eq!(done.code(), 0, "{}\n{}", done.stdout, done.stderr);
        assert!(
            done.stdout.contains(&format!("{runner}'s package cache")),
            "{}",
            done.stdout
        );
        // (The server's own command is `npx` too: only `args` changes for npx.)
        let command = format!("+      \"command\": \"{runner}\",\n");
        assert_eq!(
            done.stdout.contains(&command),
            runner == "uvx",
            "{}",
            done.stdout
        );
        let written = format!(
            "+      \"args\": [{launcher}\"proxy\", \"--clip\", \"1MB\", \"--\", \"npx\", \"-y\","
        );
        assert!(done.stdout.contains(&written), "{}", done.stdout);
        assert!(done.stdout.contains("already wrapped"), "{}", done.stdout);
        assert_eq!(fs::read_to_string(&path).unwrap(), CLAUDE_DESKTOP);
        // Written, then recognised as wrapped by a second run.
        let done = run_copy(&home, relative, &["install", host[0], host[1]]);
        assert_eq!(done.code(), 0, "{}\n{}", done.stdout, done.stderr);
        let config: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        let server = &config["mcpServers"]["filesystem"];
        assert_eq!(server["command"], runner);
        let args: Vec<&str> = server["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|word| word.as_str().unwrap())
            .collect();
        let package = format!("drainpipe@{version}");
        let proxy = args.iter().position(|word| *word == "proxy").unwrap();
        assert_eq!(args[proxy - 1], package, "{args:?}");
        assert_eq!(
            &args[proxy..],
            [
                "proxy",
                "--clip",
                "1MB",
                "--",
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/home/me/projects"
            ]
        );
        let again = run_copy(&home, relative, &["install", host[0], host[1]]);
        assert_eq!(again.code(), 0, "{}", again.stderr);
        assert!(
            again.stdout.contains("nothing to change"),
            "{}",
            again.stdout
        );
        // --command still wins over the runner.
        let forced = run_copy(
            &home,
            relative,
            &[
                "install",
                "--dry-run",
                "--config",
                path.to_str().unwrap(),
                "--command",
                "/opt/dp",
            ],
        );
        assert!(
            !forced.stdout.contains("package cache"),
            "{}",
            forced.stdout
        );
        // Uninstall (from a binary elsewhere) recognises the runner's entries
        // and brings the file back byte for byte.
        let done = home.run(&["uninstall", host[0], host[1]]);
        assert_eq!(done.code(), 0, "{}\n{}", done.stdout, done.stderr);
        assert!(done.stdout.contains("unwrap"), "{}", done.stdout);
        assert_eq!(fs::read_to_string(&path).unwrap(), CLAUDE_DESKTOP);
        // And in place, when there is no backup to restore.
        run_copy(&home, relative, &["install", host[0], host[1]]);
        fs::remove_file(backup(&path)).unwrap();
        let done = home.run(&["uninstall", host[0], host[1]]);
        assert_eq!(done.code(), 0, "{}\n{}", done.stdout, done.stderr);
        let config: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(config["mcpServers"]["filesystem"]["command"], "npx");
        assert_eq!(
            config["mcpServers"]["filesystem"]["args"][1],
            "@modelcontextprotocol/server-filesystem"
        );
    }
}

/// Cursor's file with a remote server that sends a token from the
/// environment, and a stdio one.
const CURSOR_REMOTE: &str = r#"{
  "mcpServers": {
    "linear": {
      "url": "https://mcp.linear.app/mcp",
      "headers": { "Authorization": "Bearer ${env:LINEAR_TOKEN}" }
    },
    "local": { "command": "node", "args": ["server.js"] }
  }
}
"#;

#[test]
fn install_remote_wraps_url_servers_and_uninstall_restores_every_byte() {
    let home = Home::new("remote");
    let path = home.write(".cursor/mcp.json", CURSOR_REMOTE);
    // Without --remote the remote server is left.
    let dry = home.run(&[
        "install",
        "--host",
        "cursor",
        "--dry-run",
        "--command",
        DRAINPIPE,
    ]);
    assert_eq!(dry.code(), 0, "{}\n{}", dry.stdout, dry.stderr);
    assert!(dry.stdout.contains("remote, left"), "{}", dry.stdout);
    let dry = home.run(&[
        "install",
        "--host",
        "cursor",
        "--remote",
        "--dry-run",
        "--command",
        DRAINPIPE,
    ]);
    assert_eq!(dry.code(), 0, "{}\n{}", dry.stdout, dry.stderr);
    let wrapped_line = "+      \"args\": [\"proxy\", \"--clip\", \"256KiB\", \"--url\", \"https://mcp.linear.app/mcp\", \"--header\", \"Authorization: Bearer ${LINEAR_TOKEN}\"],";
    assert!(dry.stdout.contains(wrapped_line), "{}", dry.stdout);
    assert!(
        dry.stdout
            .contains("+      \"env\": { \"LINEAR_TOKEN\": \"${env:LINEAR_TOKEN}\" }"),
        "{}",
        dry.stdout
    );
    assert!(
        dry.stdout
            .contains("  wrap             linear  https://mcp.linear.app/mcp"),
        "{}",
        dry.stdout
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), CURSOR_REMOTE);
    let done = home.run(&[
        "install",
        "--host",
        "cursor",
        "--remote",
        "--command",
        DRAINPIPE,
    ]);
    assert_eq!(done.code(), 0, "{}\n{}", done.stdout, done.stderr);
    let wrapped = fs::read_to_string(&path).unwrap();
    let json: Value = serde_json::from_str(&wrapped).unwrap();
    let linear = &json["mcpServers"]["linear"];
    assert_eq!(linear["command"], DRAINPIPE);
    assert!(linear.get("url").is_none() && linear.get("headers").is_none());
    // A second run wraps nothing twice.
    let again = home.run(&[
        "install",
        "--host",
        "cursor",
        "--remote",
        "--command",
        DRAINPIPE,
    ]);
    assert!(again.stdout.contains("already wrapped"), "{}", again.stdout);
    assert_eq!(fs::read_to_string(&path).unwrap(), wrapped);
    let undo = home.run(&["uninstall", "--host", "cursor"]);
    assert_eq!(undo.code(), 0, "{}\n{}", undo.stdout, undo.stderr);
    assert!(undo.stdout.contains("byte for byte"), "{}", undo.stdout);
    assert_eq!(fs::read_to_string(&path).unwrap(), CURSOR_REMOTE);
    assert!(!backup(&path).exists());
    // --proxy-args may not say what each entry's --url and --header say.
    let refused = home.run(&["install", "--remote", "--proxy-args", "--header X:y"]);
    assert_ne!(refused.code(), 0);
    assert!(refused.stderr.contains("--header"), "{}", refused.stderr);
}
