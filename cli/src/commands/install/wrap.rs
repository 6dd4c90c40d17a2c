//! What wrapping a server means, whatever the file format: which entries are
//! stdio servers, which are already behind drainpipe, the words that go in
//! front of the original command, and how they come off again.

use std::fmt;

/// How `install` rewrites a stdio server and how `uninstall` recognises one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Wrapper {
    /// The drainpipe binary written as each server's new `command`, or the
    /// package runner (`npx`, `uvx`) that starts it.
    pub(crate) command: String,
    /// The runner's words before `proxy` (`-y drainpipe@0.1.0` for npx,
    /// `drainpipe@0.1.0` for uvx); empty for a binary.
    pub(crate) launcher: Vec<String>,
    /// The words between `proxy` and `--` (already split, shell-like).
    pub(crate) proxy_args: Vec<String>,
    /// Whether `install` also puts remote servers (`url`) behind the proxy,
    /// as `drainpipe proxy --url` (see `remote`).
    pub(crate) remote: bool,
}

/// The package runners a wrapped entry may start drainpipe through, by the
/// file name of the command (`npx.cmd` on Windows).
const RUNNERS: [&str; 2] = ["npx", "uvx"];

impl Wrapper {
    /// The words that go in front of the original command:
    /// `proxy`, the proxy arguments, `--`.
    pub(crate) fn prefix(&self) -> Vec<String> {
        let mut words = Vec::with_capacity(self.launcher.len() + self.proxy_args.len() + 2);
        words.extend(self.launcher.iter().cloned());
        words.push("proxy".to_string());
        words.extend(self.proxy_args.iter().cloned());
        words.push("--".to_string());
        words
    }

    /// Whether `command` names a drainpipe binary: this wrapper's own command
    /// (when it is a binary, not a runner), or any path whose file name is
    /// `drainpipe` (`drainpipe.exe` on Windows), with either kind of slash.
    pub(crate) fn is_drainpipe(&self, command: &str) -> bool {
        if command == self.command && self.launcher.is_empty() {
            return true;
        }
        let name = file_name(command);
        name == "drainpipe" || name.eq_ignore_ascii_case("drainpipe.exe")
    }

    /// Whether a server is already behind drainpipe: its command is a
    /// drainpipe binary and its first argument is `proxy`, or its command is
    /// `npx` or `uvx` running the drainpipe package with `proxy` next (see
    /// [`proxy_index`]). Such a server is left as it is by `install`,
    /// whatever proxy arguments it has.
    pub(crate) fn is_wrapped(&self, command: &str, args: &[String]) -> bool {
        match proxy_index(command, args) {
            Some(0) => self.is_drainpipe(command),
            Some(_) => true,
            None => false,
        }
    }
}

/// A command's file name, whichever slash its path uses.
fn file_name(command: &str) -> &str {
    command.rsplit(['/', '\\']).next().unwrap_or(command)
}

/// Whether `command` is a package runner drainpipe can be started by.
fn is_runner(command: &str) -> bool {
    let name = file_name(command);
    let stem = name
        .rsplit_once('.')
        .filter(|(_, extension)| {
            ["cmd", "exe", "ps1"]
                .iter()
                .any(|e| extension.eq_ignore_ascii_case(e))
        })
        .map_or(name, |(stem, _)| stem);
    RUNNERS
        .iter()
        .any(|runner| stem.eq_ignore_ascii_case(runner))
}

/// Whether `word` names the drainpipe package for a runner: `drainpipe`,
/// `drainpipe@VERSION` (npm and uv) or `drainpipe==VERSION` (uv).
fn is_package(word: &str) -> bool {
    word == "drainpipe" || word.starts_with("drainpipe@") || word.starts_with("drainpipe==")
}

/// Where `proxy` is in a wrapped server's arguments: 0 when they start
/// with it (the command is then a binary, [`Wrapper::is_drainpipe`] tells
/// which); for `npx` or `uvx`, the word after the drainpipe package, when
/// only the runner's options (words starting with `-`, and the value of
/// uvx's `--from`) come before that package.
pub(crate) fn proxy_index(command: &str, args: &[String]) -> Option<usize> {
    if args.first().is_some_and(|first| first == "proxy") {
        return Some(0);
    }
    if !is_runner(command) {
        return None;
    }
    let mut at = 0;
    while let Some(word) = args.get(at) {
        if is_package(word) {
            return (args.get(at + 1)? == "proxy").then_some(at + 1);
        }
        if !word.starts_with('-') {
            return None;
        }
        // `uvx --from drainpipe==0.1.0 drainpipe proxy …` (or a wheel path).
        at += if word == "--from" { 2 } else { 1 };
    }
    None
}

/// Where the original command sits in the arguments of a wrapped server
/// (one [`Wrapper::is_wrapped`] accepts): the index of the word after the
/// first `--` that follows `proxy`.
///
/// A wrapped entry written by hand without `--` (the proxy accepts that) is
/// not taken apart: telling the proxy's options from the server's command
/// would need the proxy's option table, and a guess could cut the wrong word.
pub(crate) fn original_command_index(command: &str, args: &[String]) -> Result<usize, String> {
    let proxy = proxy_index(command, args)
        .ok_or_else(|| "it does not run `drainpipe proxy`".to_string())?;
    let separator = args
        .iter()
        .skip(proxy + 1)
        .position(|word| word == "--")
        .map(|at| at + proxy + 1)
        .ok_or_else(|| "its arguments have no `--` before the server command".to_string())?;
    if separator + 1 >= args.len() {
        return Err("nothing follows `--` in its arguments".to_string());
    }
    Ok(separator + 1)
}

/// The wrapper a wrapped server's arguments show, given where its original
/// command is ([`original_command_index`]).
pub(crate) fn wrapper_of(command: &str, args: &[String], original: usize) -> Wrapper {
    let proxy = proxy_index(command, args).unwrap_or(0);
    Wrapper {
        command: command.to_string(),
        launcher: args[..proxy].to_vec(),
        proxy_args: args[proxy + 1..original - 1].to_vec(),
        remote: false,
    }
}

/// What happened to one server entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// `install` put it behind drainpipe.
    Wrapped,
    /// `install` found it behind drainpipe already.
    AlreadyWrapped,
    /// `uninstall` took drainpipe away from it.
    Unwrapped,
    /// `uninstall` found it not behind drainpipe.
    NotWrapped,
    /// A remote server (`url`, `type: "http"`, …) left as it is: `install`
    /// without `--remote`, or an entry without a URL to give the proxy.
    Remote,
    /// Left alone, for the reason given (no command, arguments that are not
    /// a list of strings, …).
    Skipped(String),
}

impl Action {
    /// Whether the file changes because of this server.
    pub(crate) fn changes(&self) -> bool {
        matches!(self, Action::Wrapped | Action::Unwrapped)
    }
}

/// One server entry of a file and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServerReport {
    /// Where the entry lives when a file has several server maps, e.g. the
    /// project path of `~/.claude.json`'s `projects.<path>.mcpServers`.
    pub(crate) scope: Option<String>,
    /// The server's name (its key in the map).
    pub(crate) name: String,
    /// What happened.
    pub(crate) action: Action,
    /// For the report: the server's own command line (what it runs, with
    /// or without drainpipe in front), or a remote server's address.
    pub(crate) detail: String,
    /// For a server `uninstall` unwrapped: the drainpipe command and proxy
    /// arguments it had (to tell whether the backup is what `install` saw).
    pub(crate) wrapper: Option<Wrapper>,
}

/// The result of editing one file's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Edit {
    /// The new text (equal to the input when nothing changed).
    pub(crate) text: String,
    /// Every server entry found, in file order.
    pub(crate) servers: Vec<ServerReport>,
}

impl Edit {
    /// Whether any server changed.
    pub(crate) fn changed(&self) -> bool {
        self.servers.iter().any(|server| server.action.changes())
    }
}

/// A file that could not be parsed, with where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParseError {
    /// 1-based line.
    pub(crate) line: usize,
    /// 1-based column, in characters.
    pub(crate) column: usize,
    /// What the parser said.
    pub(crate) message: String,
}

impl ParseError {
    /// An error at byte `offset` of `text`.
    pub(crate) fn at(text: &str, offset: usize, message: impl Into<String>) -> Self {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |at| at + 1);
        let column = before[line_start..].chars().count() + 1;
        ParseError {
            line,
            column,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// Why a file's text could not be edited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EditError {
    /// The file does not parse.
    Parse(ParseError),
    /// The edited text failed the check against the intended change (a bug:
    /// nothing is written).
    Check(String),
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::Parse(error) => write!(f, "cannot parse it: {error}"),
            EditError::Check(message) => write!(f, "refusing to write it: {message}"),
        }
    }
}

impl std::error::Error for EditError {}

/// The largest char boundary at or below `at`.
fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A command line for people: words with spaces or quotes are quoted.
pub(crate) fn show_command(command: &str, args: &[String]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(|word| {
            if !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,%~".contains(c))
            {
                word.to_string()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapper() -> Wrapper {
        Wrapper {
            command: "/opt/dp/bin/dp".to_string(),
            launcher: Vec::new(),
            proxy_args: vec!["--clip".to_string(), "256KiB".to_string()],
            remote: false,
        }
    }

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn the_prefix_is_proxy_its_arguments_and_a_separator() {
        assert_eq!(
            wrapper().prefix(),
            words(&["proxy", "--clip", "256KiB", "--"])
        );
    }

    #[test]
    fn drainpipe_is_recognised_by_file_name_or_by_the_chosen_command() {
        let wrapper = wrapper();
        for command in [
            "drainpipe",
            "/usr/local/bin/drainpipe",
            r"C:\Users\me\.cargo\bin\drainpipe.exe",
            r"C:\tools\DRAINPIPE.EXE",
            "/opt/dp/bin/dp",
        ] {
            assert!(wrapper.is_drainpipe(command), "{command}");
        }
        for command in ["npx", "/usr/bin/drainpipe-fixture", "drainpipes", "dp"] {
            assert!(!wrapper.is_drainpipe(command), "{command}");
        }
        assert!(wrapper.is_wrapped("drainpipe", &words(&["proxy", "--", "x"])));
        assert!(!wrapper.is_wrapped("drainpipe", &words(&["check", "--", "x"])));
        assert!(!wrapper.is_wrapped("drainpipe", &[]));
        assert!(!wrapper.is_wrapped("npx", &words(&["proxy"])));
    }

    #[test]
    fn the_original_command_follows_the_first_separator() {
        let index = |command: &str, args: &[&str]| original_command_index(command, &words(args));
        assert_eq!(
            index("drainpipe", &["proxy", "--", "npx", "--", "-y"]),
            Ok(2)
        );
        assert_eq!(
            index("drainpipe", &["proxy", "--clip", "4KiB", "--", "uvx"]),
            Ok(4)
        );
        assert!(index("drainpipe", &["proxy", "npx"]).is_err());
        assert!(index("drainpipe", &["proxy", "--"]).is_err());
        assert_eq!(
            index("npx", &["-y", "drainpipe@0.1.0", "proxy", "--", "uvx", "x"]),
            Ok(4)
        );
        assert_eq!(
            index(
                "uvx",
                &["drainpipe@0.1.0", "proxy", "--clip", "1MB", "--", "s"]
            ),
            Ok(5)
        );
    }

    #[test]
    fn drainpipe_started_by_npx_or_uvx_is_recognised_as_wrapped() {
        // A binary wrapper recognises runner entries too (uninstall from a
        // cargo-installed drainpipe), and a runner wrapper recognises binaries.
        let runner = Wrapper {
            command: "npx".to_string(),
            launcher: words(&["-y", "drainpipe@0.1.0"]),
            proxy_args: Vec::new(),
            remote: false,
        };
        for wrapper in [wrapper(), runner.clone()] {
            for (command, args) in [
                ("npx", &["-y", "drainpipe@0.1.0", "proxy", "--", "x"][..]),
                ("npx", &["drainpipe", "proxy", "--", "x"]),
                (
                    r"C:\Program Files\nodejs\npx.cmd",
                    &["--yes", "drainpipe@latest", "proxy", "--", "x"],
                ),
                (
                    "uvx",
                    &["drainpipe@0.2.0", "proxy", "--clip", "1MB", "--", "x"],
                ),
                (
                    "/home/me/.local/bin/uvx",
                    &[
                        "--from",
                        "drainpipe==0.1.0",
                        "drainpipe",
                        "proxy",
                        "--",
                        "x",
                    ],
                ),
                ("drainpipe", &["proxy", "--", "x"]),
            ] {
                assert!(
                    wrapper.is_wrapped(command, &words(args)),
                    "{command} {args:?}"
                );
            }
            for (command, args) in [
                (
                    "npx",
                    &["-y", "@modelcontextprotocol/server-everything"][..],
                ),
                ("npx", &["-y", "drainpipe@0.1.0", "check", "--", "x"]),
                ("npx", &["some-server", "drainpipe", "proxy"]),
                ("uvx", &["drainpipes", "proxy", "--", "x"]),
                ("npm", &["exec", "drainpipe", "proxy", "--", "x"]),
                ("uvx", &["drainpipe"]),
            ] {
                assert!(
                    !wrapper.is_wrapped(command, &words(args)),
                    "{command} {args:?}"
                );
            }
        }
        // The runner itself is no drainpipe binary.
        assert!(!runner.is_wrapped("npx", &words(&["proxy", "--", "x"])));
        let args = words(&[
            "-y",
            "drainpipe@0.1.0",
            "proxy",
            "--clip",
            "1MB",
            "--",
            "s",
            "a",
        ]);
        let at = original_command_index("npx", &args).unwrap();
        assert_eq!(
            wrapper_of("npx", &args, at),
            Wrapper {
                command: "npx".to_string(),
                launcher: words(&["-y", "drainpipe@0.1.0"]),
                proxy_args: words(&["--clip", "1MB"]),
                remote: false,
            }
        );
        assert_eq!(
            runner.prefix(),
            words(&["-y", "drainpipe@0.1.0", "proxy", "--"])
        );
    }

    #[test]
    fn parse_errors_name_line_and_column() {
        let text = "{\n  \"a\": 1,\n  ünï x\n}";
        let at = text.find('x').unwrap();
        let error = ParseError::at(text, at, "unexpected word");
        assert_eq!((error.line, error.column), (3, 7));
        assert_eq!(error.to_string(), "line 3, column 7: unexpected word");
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        assert_eq!(
            show_command("npx", &words(&["-y", "@scope/pkg", "/my dir", "it's"])),
            r"npx -y @scope/pkg '/my dir' 'it'\''s'"
        );
    }
}
