//! `drainpipe install` and `drainpipe uninstall`: put `drainpipe proxy` in
//! front of every stdio MCP server a host starts, in the host's own config
//! files, and take it away again.
//!
//! The work is split by concern:
//! - `wrap`: what wrapping means, whatever the format;
//! - `remote`: a remote server as `drainpipe proxy --url` arguments (`--remote`);
//! - `jsonc`: JSON and JSON-with-comments files, edited by splicing text at
//!   the byte ranges the parser reports;
//! - `toml`: Codex's `config.toml`, edited with `toml_edit`;
//! - `file`: one file's format, plan, backup, diff and atomic write;
//! - `hosts`: the hosts and where their files are on each OS.

mod budget;
mod file;
mod hosts;
mod jsonc;
mod remote;
mod toml;
mod wrap;

use std::path::{Path, PathBuf};

use clap::{Args, FromArgMatches};

use self::file::{Backup, FileError, Format, Plan, Undo};
use self::hosts::{Host, Places};
use self::wrap::{Action, ServerReport, Wrapper, show_command};
use super::Style;

/// Put `drainpipe proxy` in front of every stdio MCP server your hosts start.
///
/// Edits each host's config file in place: a stdio server's `command`
/// becomes the drainpipe binary and its `args` become `proxy`, the
/// --proxy-args, `--`, then the original command and arguments. Unless
/// --proxy-args says `--clip`, the proxy gets the content budget that fits
/// the host's own cap on a tool result (each report says which and why). `env`,
/// `cwd`, comments, key order and formatting are kept. Remote servers
/// (unless --remote) and servers already behind drainpipe are left alone, so
/// running it again changes nothing. The original is saved beside the file as
/// `<file>.drainpipe-backup`, which `drainpipe uninstall` restores.
///
/// Without --host or --config, every known host's files that exist are
/// edited: Claude Desktop, Claude Code (~/.claude.json with its per-project
/// servers, ./.mcp.json), Cursor, VS Code, Zed, Codex, Windsurf and Gemini
/// CLI; per-project files are looked for in the current directory.
#[derive(Debug, Args)]
#[command(after_help = super::EXIT_CODES)]
pub(crate) struct InstallArgs {
    #[command(flatten)]
    target: Target,
    /// Print what would change, as a unified diff, and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Options for `drainpipe proxy`, written before `--` in every server
    /// wrapped now, split as a shell would: e.g. "--clip 256KiB --max-frame
    /// 8MiB". Checked against the proxy's options first. A `--clip` here
    /// replaces the one chosen for the host. Servers already wrapped keep
    /// theirs (uninstall, then install, to change them).
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    proxy_args: Option<String>,
    /// The drainpipe binary to write as each server's command. Default: the
    /// absolute path of this binary, refused when it lies in a cargo build
    /// directory (target/debug, target/release) or a temporary directory,
    /// where the host may not find it later; when it lies in npx's or uv's
    /// package cache, `npx -y drainpipe@VERSION` or `uvx drainpipe@VERSION`
    /// (this version) instead. This option is taken as given.
    #[arg(long, value_name = "PATH")]
    command: Option<String>,
    /// Put remote servers (`url`, `serverUrl`, `httpUrl`; Codex's `url`)
    /// behind the proxy too: each becomes a stdio server that runs
    /// `drainpipe proxy --url URL`, with a `--header 'Name: value'` per
    /// header. A header value's variable reference (`${env:TOKEN}`,
    /// `${TOKEN}`) is written as `${TOKEN}`, which the proxy expands from
    /// its environment; the variable goes into the entry's `env` (Codex:
    /// `env_vars`) where the host expands it there. Without it, remote
    /// servers are left as they are.
    #[arg(long)]
    remote: bool,
}

/// Take `drainpipe proxy` away from every MCP server that runs behind it.
///
/// Restores each file byte for byte from the backup `install` saved, when
/// the file has not changed since; otherwise unwraps each wrapped server in
/// place (the original command and arguments back, formatting kept) and
/// says so. A server is taken as wrapped when its command is a drainpipe
/// binary (or --command) and its arguments start with `proxy`: a server
/// wrapped by hand is unwrapped too.
#[derive(Debug, Args)]
#[command(after_help = super::EXIT_CODES)]
pub(crate) struct UninstallArgs {
    #[command(flatten)]
    target: Target,
    /// Print what would change, as a unified diff, and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Also take servers whose command is this path as wrapped (a path whose
    /// file name is `drainpipe` always is).
    #[arg(long, value_name = "PATH")]
    command: Option<String>,
}

/// Which files to edit.
#[derive(Debug, Args)]
struct Target {
    /// Edit this host's config files (those that exist). Without --host or
    /// --config: every known host's.
    #[arg(long, value_name = "NAME", conflicts_with = "config")]
    host: Option<Host>,
    /// Edit this file, of any known format (told by its name, else by its
    /// contents).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// The format of --config, when its name and contents do not tell.
    #[arg(long, value_name = "FORMAT", requires = "config")]
    format: Option<Format>,
}

/// Install or uninstall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Job {
    Install,
    Uninstall,
}

impl Job {
    fn name(self) -> &'static str {
        match self {
            Job::Install => "install",
            Job::Uninstall => "uninstall",
        }
    }
}

/// Runs `drainpipe install`; returns the exit code.
pub(crate) fn run_install(args: InstallArgs) -> i32 {
    let proxy_args = match split_proxy_args(args.proxy_args.as_deref().unwrap_or("")) {
        Ok(words) => words,
        Err(message) => {
            eprintln!("drainpipe install: --proxy-args: {message}");
            return super::EXIT_USAGE;
        }
    };
    let mut launcher = Vec::new();
    let command = match args.command {
        Some(command) => {
            if Path::new(&command).is_absolute() && !Path::new(&command).exists() {
                eprintln!("drainpipe install: warning: --command {command} does not exist");
            }
            command
        }
        None => match own_path() {
            Ok(Own::Binary(command)) => command,
            Ok(Own::Cached { runner, exe }) => {
                launcher = runner.launcher();
                let command = runner.command();
                println!(
                    "This drainpipe runs from {}'s package cache ({exe}), which can be cleaned: \
                     servers get `{}` instead of its path, the same version, fetched again \
                     when the cache is gone (--command PATH writes a binary's path).",
                    command,
                    show_command(command, &launcher) + " proxy …",
                );
                println!();
                command.to_string()
            }
            // A dry run writes nothing, so it shows what a real run would
            // write from here, and why that run would refuse.
            Err(Refused {
                path: Some(path),
                message,
            }) if args.dry_run => {
                eprintln!("drainpipe install: warning: {message}");
                eprintln!("drainpipe install: warning: this dry run shows {path} anyway");
                path
            }
            Err(Refused { message, .. }) => {
                eprintln!("drainpipe install: {message}");
                return super::EXIT_ENVIRONMENT;
            }
        },
    };
    let wrapper = Wrapper {
        command,
        launcher,
        proxy_args,
        remote: args.remote,
    };
    run(Job::Install, &args.target, args.dry_run, &wrapper)
}

/// Runs `drainpipe uninstall`; returns the exit code.
pub(crate) fn run_uninstall(args: UninstallArgs) -> i32 {
    let command = args.command.unwrap_or_else(|| "drainpipe".to_string());
    let wrapper = Wrapper {
        command,
        launcher: Vec::new(),
        proxy_args: Vec::new(),
        remote: false,
    };
    run(Job::Uninstall, &args.target, args.dry_run, &wrapper)
}

/// A file to edit: which host it belongs to (none for --config), where it
/// is, and its format when known beforehand.
struct Candidate {
    host: Option<Host>,
    path: PathBuf,
    format: Option<Format>,
}

fn run(job: Job, target: &Target, dry_run: bool, wrapper: &Wrapper) -> i32 {
    let style = Style::for_stdout();
    let places = match Places::from_env() {
        Ok(places) => places,
        Err(message) => {
            eprintln!("drainpipe {}: {message}", job.name());
            return super::EXIT_ENVIRONMENT;
        }
    };
    let candidates = match candidates(target, &places) {
        Ok(candidates) => candidates,
        Err(message) => {
            eprintln!("drainpipe {}: {message}", job.name());
            return super::EXIT_FAILED;
        }
    };
    let mut content_failed = false;
    let mut io_failed = false;
    let mut restart = Vec::new();
    for (index, candidate) in candidates.iter().enumerate() {
        if index > 0 {
            println!();
        }
        let shown = places.show(&candidate.path);
        let title = candidate.host.map_or("config", Host::title);
        println!("{}", style.bold(&format!("{title}: {shown}")));
        let wrapper = match job {
            Job::Install => with_budget(wrapper, candidate.host),
            Job::Uninstall => wrapper.clone(),
        };
        match handle(job, candidate, dry_run, &wrapper, &places, style) {
            Ok(true) => {
                if let Some(host) = candidate.host
                    && !restart.contains(&host.title())
                {
                    restart.push(host.title());
                }
            }
            Ok(false) => {}
            Err(FileError::Io(message)) => {
                println!("  {} {message}", style.word(false, "error:"));
                io_failed = true;
            }
            Err(FileError::Content(message)) => {
                println!(
                    "  {} {message}; the file is left as it is",
                    style.word(false, "error:")
                );
                content_failed = true;
            }
        }
    }
    if !restart.is_empty() {
        println!();
        println!(
            "Restart {} for the change to take effect.",
            restart.join(", ")
        );
    }
    if io_failed {
        super::EXIT_ENVIRONMENT
    } else if content_failed {
        super::EXIT_FAILED
    } else {
        super::EXIT_OK
    }
}

/// The wrapper for one host's file: with the `--clip` that fits the host's
/// cap (the documented default for `--config` or a host without one),
/// unless the user's proxy options name one. Says which, and why.
fn with_budget(wrapper: &Wrapper, host: Option<Host>) -> Wrapper {
    if budget::names_clip(&wrapper.proxy_args) {
        println!("  budget           the --clip of --proxy-args");
        return wrapper.clone();
    }
    let chosen = host.map_or(budget::DEFAULT, Host::budget);
    println!("  budget           --clip {}: {}", chosen.clip, chosen.why);
    let mut proxy_args = wrapper.proxy_args.clone();
    proxy_args.extend(["--clip".to_string(), chosen.clip.to_string()]);
    Wrapper {
        command: wrapper.command.clone(),
        launcher: wrapper.launcher.clone(),
        proxy_args,
        remote: wrapper.remote,
    }
}

/// The files to edit.
fn candidates(target: &Target, places: &Places) -> Result<Vec<Candidate>, String> {
    if let Some(path) = &target.config {
        return Ok(vec![Candidate {
            host: None,
            path: path.clone(),
            format: target.format,
        }]);
    }
    let hosts: Vec<Host> = match target.host {
        Some(host) => vec![host],
        None => Host::ALL.to_vec(),
    };
    let mut found = Vec::new();
    let mut looked = Vec::new();
    for host in hosts {
        for path in host.files(places) {
            if path.is_file() {
                found.push(Candidate {
                    host: Some(host),
                    path,
                    format: Some(host.format()),
                });
            } else {
                looked.push(format!("  {:<15} {}", host.title(), places.show(&path)));
            }
        }
    }
    if found.is_empty() {
        let which = match target.host {
            Some(host) => format!("no {} config file", host.title()),
            None => "no MCP host config file".to_string(),
        };
        return Err(format!(
            "found {which}; looked for:\n{}\n(use --config PATH for a file elsewhere)",
            looked.join("\n")
        ));
    }
    Ok(found)
}

/// Plans, reports and (unless a dry run) writes one file; `Ok(true)` when
/// it was written.
fn handle(
    job: Job,
    candidate: &Candidate,
    dry_run: bool,
    wrapper: &Wrapper,
    places: &Places,
    style: Style,
) -> Result<bool, FileError> {
    let (real, text) = file::read(&candidate.path)?;
    let format = match candidate.format {
        Some(format) => format,
        None => {
            Format::detect(&real, &text).map_err(|error| FileError::Content(error.to_string()))?
        }
    };
    let plan = match job {
        Job::Install => file::plan_install(real, text, format, wrapper)?,
        Job::Uninstall => file::plan_uninstall(real, text, format, wrapper)?,
    };
    report_servers(&plan.servers, style);
    if !plan.changes() {
        println!("  nothing to change");
        return Ok(false);
    }
    let backup = places.show(&file::backup_path(&plan.path));
    if dry_run {
        print!("{}", plan.diff(&places.show(&plan.path)));
        println!(
            "  dry run: {}; nothing written",
            outcome(&plan, &backup, true)
        );
        return Ok(false);
    }
    file::commit(&plan)?;
    println!("  {}", outcome(&plan, &backup, false));
    Ok(true)
}

/// One line per server: what happens to it, its name, its command line.
fn report_servers(servers: &[ServerReport], style: Style) {
    if servers.is_empty() {
        println!("  no MCP servers in it");
        return;
    }
    let names: Vec<String> = servers
        .iter()
        .map(|server| match &server.scope {
            Some(scope) => format!("{} (project {scope})", server.name),
            None => server.name.clone(),
        })
        .collect();
    let width = names
        .iter()
        .map(|name| name.chars().count())
        .max()
        .unwrap_or(0);
    for (server, name) in servers.iter().zip(&names) {
        let (label, good) = match &server.action {
            Action::Wrapped => ("wrap".to_string(), true),
            Action::Unwrapped => ("unwrap".to_string(), true),
            Action::AlreadyWrapped => ("already wrapped".to_string(), true),
            Action::NotWrapped => ("not wrapped".to_string(), true),
            Action::Remote => ("remote, left".to_string(), true),
            Action::Skipped(reason) => (format!("skipped: {reason}"), false),
        };
        let label = format!("{label:<16}");
        let label = if good {
            label
        } else {
            style.word(false, &label)
        };
        println!("  {label} {name:<width$}  {}", server.detail);
    }
}

/// What writing the plan does (or would do), in words.
fn outcome(plan: &Plan, backup: &str, dry_run: bool) -> String {
    match (plan.undo, &plan.backup, dry_run) {
        (None, Backup::Save, false) => format!("wrote it; the original is saved as {backup}"),
        (None, Backup::Save, true) => format!("would write it and save the original as {backup}"),
        (None, Backup::KeepStale, _) => format!(
            "{} the earlier backup {backup} (the file changed since that backup, so \
             uninstall will unwrap in place)",
            if dry_run {
                "would write it and keep"
            } else {
                "wrote it and kept"
            },
        ),
        (None, _, false) => "wrote it".to_string(),
        (None, _, true) => "would write it".to_string(),
        (Some(Undo::Restored), _, false) => {
            format!("restored it byte for byte from {backup}, and removed the backup")
        }
        (Some(Undo::Restored), _, true) => {
            format!("would restore it byte for byte from {backup}, and remove the backup")
        }
        (Some(Undo::Unwrapped), Backup::LeftStale, _) => format!(
            "{} in place: the file changed since install, so the backup {backup} no longer \
             matches and is left there",
            if dry_run { "would unwrap" } else { "unwrapped" },
        ),
        (Some(Undo::Unwrapped), _, _) => format!(
            "{} in place (no backup to restore)",
            if dry_run { "would unwrap" } else { "unwrapped" },
        ),
    }
}

/// Splits --proxy-args as a shell would and checks the words against
/// `drainpipe proxy`'s own options.
fn split_proxy_args(text: &str) -> Result<Vec<String>, String> {
    let words =
        shlex::split(text).ok_or_else(|| format!("cannot split `{text}`: unbalanced quotes"))?;
    if words.iter().any(|word| word == "--") {
        return Err("`--` is written by install itself, before the server command".to_string());
    }
    if let Some(word) = words
        .iter()
        .find(|word| ["--url", "--header"].contains(&word.split('=').next().unwrap_or("")))
    {
        return Err(format!(
            "`{word}` is written by install itself, from each remote server's entry (--remote)"
        ));
    }
    let command = <super::proxy::ProxyArgs as Args>::augment_args(
        clap::Command::new("drainpipe proxy").no_binary_name(true),
    );
    let argv = words.iter().map(String::as_str).chain(["--", "server"]);
    let matches = command.try_get_matches_from(argv).map_err(|error| {
        let text = error.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        format!("not options of drainpipe proxy: {first}")
    })?;
    super::proxy::ProxyArgs::from_arg_matches(&matches).map_err(|error| error.to_string())?;
    // The proxy takes the first word that is not one of its options for the
    // server command: anything else means a word that is no option.
    let server: Vec<&String> = matches
        .get_many::<String>("server")
        .map(Iterator::collect)
        .unwrap_or_default();
    if server.len() != 1 {
        let stray = server.first().map_or("", |word| word.as_str());
        return Err(format!("not options of drainpipe proxy: `{stray}`"));
    }
    Ok(words)
}

/// Why `install` will not write this binary's path, and the path (when
/// there is one to show).
struct Refused {
    path: Option<String>,
    message: String,
}

/// What `install` writes for this binary.
#[derive(Debug, PartialEq, Eq)]
enum Own {
    /// Its absolute path.
    Binary(String),
    /// A package runner's command: the binary lies in that runner's cache.
    Cached { runner: Runner, exe: String },
}

/// A package runner that starts drainpipe from its own cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runner {
    /// npm's `npx` (the `drainpipe` package and its per-platform binary
    /// package `@drainpipe/<os>-<cpu>`).
    Npx,
    /// uv's `uvx` (the `drainpipe` wheel).
    Uvx,
}

impl Runner {
    fn command(self) -> &'static str {
        match self {
            Runner::Npx => "npx",
            Runner::Uvx => "uvx",
        }
    }

    /// The runner's words before `proxy`: this very version, so a host
    /// runs what was installed, not whatever is newest when it starts.
    fn launcher(self) -> Vec<String> {
        let package = format!("drainpipe@{}", env!("CARGO_PKG_VERSION"));
        match self {
            Runner::Npx => vec!["-y".to_string(), package],
            Runner::Uvx => vec![package],
        }
    }
}

/// The runner whose cache `exe` lies in: npm's (a `_npx` directory, or a
/// `node_modules/@drainpipe/…` package) or uv's (its cache's
/// `archive-v*`/`builds-v*`, its `tools` directory, or under
/// `UV_CACHE_DIR`/`UV_TOOL_DIR`).
fn runner_of(exe: &Path, uv_dirs: &[PathBuf]) -> Option<Runner> {
    let parts: Vec<String> = exe
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    let npm = parts.iter().enumerate().any(|(at, part)| {
        part == "_npx"
            || (part == "node_modules"
                && parts.get(at + 1).is_some_and(|next| next == "@drainpipe"))
    });
    if npm {
        return Some(Runner::Npx);
    }
    let versioned = |part: &str, prefix: &str| {
        part.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
    };
    let uv = parts
        .iter()
        .position(|part| part.eq_ignore_ascii_case("uv"))
        .is_some_and(|at| {
            parts[at + 1..].iter().any(|part| {
                versioned(part, "archive-v") || versioned(part, "builds-v") || part == "tools"
            })
        });
    if uv
        || uv_dirs
            .iter()
            .any(|dir| !dir.as_os_str().is_empty() && exe.starts_with(dir))
    {
        return Some(Runner::Uvx);
    }
    None
}

/// This binary's absolute path, unless it lies where a host started later
/// might not find it; a runner's command when it lies in a runner's cache.
fn own_path() -> Result<Own, Refused> {
    let exe = std::env::current_exe().map_err(|error| Refused {
        path: None,
        message: format!("cannot tell where the drainpipe binary is: {error} (say --command PATH)"),
    })?;
    let Some(path) = exe.to_str().map(str::to_string) else {
        return Err(Refused {
            path: None,
            message: format!("{} is not UTF-8 (say --command PATH)", exe.display()),
        });
    };
    let uv_dirs: Vec<PathBuf> = ["UV_CACHE_DIR", "UV_TOOL_DIR"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .collect();
    if let Some(runner) = runner_of(&exe, &uv_dirs) {
        return Ok(Own::Cached { runner, exe: path });
    }
    if let Some(why) = transient_location(&exe) {
        return Err(Refused {
            message: format!(
                "refusing to write {path} into host configs: it is {why}, and a host started \
                 later may not find it there. Put drainpipe on PATH for good (`cargo install \
                 --locked --path cli` in the source tree) and run that one, or say --command \
                 PATH to write a path anyway"
            ),
            path: Some(path),
        });
    }
    Ok(Own::Binary(path))
}

/// Why `exe` is a poor path to write into a config: in a cargo build
/// directory (a directory with cargo's `CACHEDIR.TAG` and
/// `.rustc_info.json`, or `target/[TRIPLE/]debug|release` by name) or a
/// temporary directory.
fn transient_location(exe: &Path) -> Option<String> {
    for directory in exe.ancestors().skip(1) {
        if directory.join("CACHEDIR.TAG").is_file() && directory.join(".rustc_info.json").is_file()
        {
            return Some(format!(
                "inside the cargo build directory {} (the next build or `cargo clean` replaces \
                 or removes it)",
                directory.display()
            ));
        }
    }
    let parts: Vec<String> = exe
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    for (at, part) in parts.iter().enumerate() {
        if part == "target"
            && parts[at + 1..]
                .iter()
                .take(2)
                .any(|next| next == "debug" || next == "release")
        {
            return Some("inside a cargo build directory (target/…)".to_string());
        }
    }
    let mut temporary = vec![
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/var/folders"),
        PathBuf::from("/private/var/folders"),
        PathBuf::from("/private/tmp"),
    ];
    if let Ok(real) = std::env::temp_dir().canonicalize() {
        temporary.push(real);
    }
    temporary
        .iter()
        .find(|directory| exe.starts_with(directory))
        .map(|directory| format!("in the temporary directory {}", directory.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binaries_in_build_or_temporary_directories_are_refused() {
        for path in [
            "/home/me/src/drainpipe/target/debug/drainpipe",
            "/home/me/src/drainpipe/target/release/drainpipe",
            "/home/me/src/drainpipe/target/x86_64-unknown-linux-gnu/release/drainpipe",
            "/home/me/src/drainpipe/target/debug/deps/drainpipe-0123abcd",
            "/tmp/drainpipe",
            "/var/folders/xy/T/drainpipe",
        ] {
            assert!(transient_location(Path::new(path)).is_some(), "{path}");
        }
        for path in [
            "/home/me/.cargo/bin/drainpipe",
            "/usr/local/bin/drainpipe",
            "/opt/homebrew/bin/drainpipe",
            "/home/me/target-practice/drainpipe",
        ] {
            assert_eq!(transient_location(Path::new(path)), None, "{path}");
        }
        // This test's own binary lies in a cargo build directory.
        let exe = std::env::current_exe().unwrap();
        assert!(transient_location(&exe).is_some(), "{}", exe.display());
    }

    #[test]
    fn binaries_in_npx_or_uv_caches_are_started_by_their_runner() {
        for (path, runner) in [
            (
                "/home/me/.npm/_npx/6a9f2e/node_modules/@drainpipe/linux-x64/bin/drainpipe",
                Runner::Npx,
            ),
            (
                "/usr/lib/node_modules/drainpipe/node_modules/@drainpipe/linux-arm64/bin/drainpipe",
                Runner::Npx,
            ),
            (
                "/home/me/.cache/uv/archive-v0/Xy12ab/bin/drainpipe",
                Runner::Uvx,
            ),
            (
                "/Users/me/.cache/uv/builds-v0/.tmpAb/bin/drainpipe",
                Runner::Uvx,
            ),
            (
                "/home/me/.local/share/uv/tools/drainpipe/bin/drainpipe",
                Runner::Uvx,
            ),
            ("/srv/uvcache/archive-v0/Xy/bin/drainpipe", Runner::Uvx),
        ] {
            let uv_dirs = [PathBuf::from("/srv/uvcache")];
            assert_eq!(runner_of(Path::new(path), &uv_dirs), Some(runner), "{path}");
        }
        #[cfg(windows)]
        for (path, runner) in [
            (
                r"C:\Users\me\AppData\Local\npm-cache\_npx\6a9f\node_modules\@drainpipe\win32-x64\bin\drainpipe.exe",
                Runner::Npx,
            ),
            (
                r"C:\Users\me\AppData\Local\uv\cache\archive-v0\Xy12\Scripts\drainpipe.exe",
                Runner::Uvx,
            ),
        ] {
            assert_eq!(runner_of(Path::new(path), &[]), Some(runner), "{path}");
        }
        for path in [
            "/home/me/.cargo/bin/drainpipe",
            "/home/me/venv/bin/drainpipe",
            "/home/me/uv/archive/bin/drainpipe",
            "/home/me/node_modules/.bin/drainpipe",
        ] {
            assert_eq!(runner_of(Path::new(path), &[]), None, "{path}");
        }
        assert_eq!(
            Runner::Npx.launcher(),
            [
                "-y".to_string(),
                format!("drainpipe@{}", env!("CARGO_PKG_VERSION"))
            ]
        );
        assert_eq!(
            Runner::Uvx.launcher(),
            [format!("drainpipe@{}", env!("CARGO_PKG_VERSION"))]
        );
    }

    #[test]
    fn proxy_args_split_like_a_shell_and_must_be_proxy_options() {
        assert_eq!(split_proxy_args(""), Ok(Vec::new()));
        assert_eq!(
            split_proxy_args("--clip 256KiB --metrics-file '/tmp/my dir/{pid}.json'"),
            Ok(vec![
                "--clip".to_string(),
                "256KiB".to_string(),
                "--metrics-file".to_string(),
                "/tmp/my dir/{pid}.json".to_string(),
            ])
        );
        let unbalanced = split_proxy_args("--clip '256KiB").unwrap_err();
        assert!(unbalanced.contains("unbalanced"), "{unbalanced}");
        let unknown = split_proxy_args("--clipp 256KiB").unwrap_err();
        assert!(unknown.contains("--clipp"), "{unknown}");
        let bad_value = split_proxy_args("--max-frame lots").unwrap_err();
        assert!(bad_value.contains("lots"), "{bad_value}");
        assert!(split_proxy_args("-- npx").is_err());
    }
}
