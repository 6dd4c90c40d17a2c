//! The `drainpipe` subcommands, one file each, and what they share: exit
//! codes, the report style, and the way to start the built-in fixture server.

pub(crate) mod check;
pub(crate) mod demo;
pub(crate) mod frame;
pub(crate) mod install;
pub(crate) mod proxy;
#[cfg(feature = "remote")]
pub(crate) mod serve;
pub(crate) mod size;

use std::io::IsTerminal;
use std::time::Duration;

/// Every step behaved, every check passed, the input was read to its end.
pub(crate) const EXIT_OK: i32 = 0;
/// A demo step or a check row failed.
pub(crate) const EXIT_FAILED: i32 = 1;
/// The command line was wrong (clap uses the same code).
pub(crate) const EXIT_USAGE: i32 = 2;
/// Something around the work failed: a read or write error, a server that
/// could not be started by `check` or `demo`.
pub(crate) const EXIT_ENVIRONMENT: i32 = 3;

/// The exit codes, as `--help` shows them.
pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0    demo: every step behaved; check: every row passed; frame: input read to its end;
       install, uninstall: every file found was edited or needed no change
  1    demo: a step misbehaved; check: a row failed;
       install, uninstall: a config file could not be parsed, or none was found
  2    usage error
  3    environment error (server could not be started, read or write failure;
       install: a drainpipe binary in a build or temporary directory)
  proxy: the server's own exit code, or 128+N if signal N ended it;
         126 if the server could not be executed, 127 if it was not found;
         3 if a sandboxed framer failed (--sandbox)";

/// A multi-threaded tokio runtime with two workers: enough for a reader, a
/// writer and the caller, without taking a big machine's every core.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    two_workers().build().expect("a tokio runtime")
}

/// The builder of [`runtime`].
fn two_workers() -> tokio::runtime::Builder {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2).enable_all();
    builder
}

/// [`runtime`] for the proxy: its threads ask to run promptly when they
/// wake ([`drainpipe_host::proxy::on_io_thread_start`]); the thread that
/// calls `block_on` (and starts the server, which inherits it) does not.
pub(crate) fn proxy_runtime() -> tokio::runtime::Runtime {
    two_workers()
        .on_thread_start(drainpipe_host::proxy::on_io_thread_start)
        .build()
        .expect("a tokio runtime")
}

/// The fixture server built into this binary (`drainpipe fixture ARGS`).
pub(crate) fn fixture_command(args: &[&str]) -> std::io::Result<tokio::process::Command> {
    let exe = std::env::current_exe().map_err(|error| {
        std::io::Error::other(format!(
            "cannot find the drainpipe executable to start the fixture server: {error}"
        ))
    })?;
    let mut command = tokio::process::Command::new(exe);
    command.arg("fixture").args(args);
    Ok(command)
}

/// How reports mark a good and a bad line: colour only on a terminal, and
/// never when `NO_COLOR` is set.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Style {
    colour: bool,
}

impl Style {
    /// The style for this process's stdout.
    pub(crate) fn for_stdout() -> Self {
        Style {
            colour: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// `ok` / `FAIL`, padded to the same width.
    pub(crate) fn mark(self, good: bool) -> String {
        if good {
            self.paint("32", "ok  ")
        } else {
            self.paint("1;31", "FAIL")
        }
    }

    /// Any word in the pass colour or the fail colour.
    pub(crate) fn word(self, good: bool, text: &str) -> String {
        self.paint(if good { "32" } else { "1;31" }, text)
    }

    /// A heading.
    pub(crate) fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }
}

/// A duration for people: `840 µs`, `12 ms`, `2.1 s`.
pub(crate) fn took(duration: Duration) -> String {
    let micros = duration.as_micros();
    if micros < 1000 {
        format!("{micros} µs")
    } else if micros < 10_000 {
        format!("{:.1} ms", micros as f64 / 1000.0)
    } else if micros < 1_000_000 {
        format!("{} ms", micros / 1000)
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// Parses a duration: `500ms`, `2s`, `1.5s`, `1m`, or a number of seconds.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (try 500ms, 2s or 1m)"))?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        other => return Err(format!("unknown duration unit `{other}` (use ms, s or m)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|error| format!("`{text}`: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_print() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(took(Duration::from_micros(840)), "840 µs");
        assert_eq!(took(Duration::from_millis(12)), "12 ms");
        assert_eq!(took(Duration::from_millis(2100)), "2.1 s");
    }
}
