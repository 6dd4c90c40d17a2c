//! `drainpipe`: keeps MCP stdio servers from stalling on a full pipe.
//!
//! Parses the command line and hands over to one file per subcommand in
//! `src/commands/`. Logs and diagnostics go to stderr; stdout carries only each
//! subcommand's output.

mod commands;
mod fixture;

use clap::{Parser, Subcommand};

/// Keeps MCP stdio servers from stalling on a full pipe: a transport limit
/// checked before any JSON is parsed, a reader that never stops reading,
/// cancellation that reaches the producer.
#[derive(Debug, Parser)]
#[command(name = "drainpipe", version, after_help = commands::EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands; each one's help comes from its arguments' docs.
#[derive(Debug, Subcommand)]
enum Command {
    Demo(commands::demo::DemoArgs),
    Proxy(commands::proxy::ProxyArgs),
    #[cfg(feature = "remote")]
    Serve(commands::serve::ServeArgs),
    Check(commands::check::CheckArgs),
    Frame(commands::frame::FrameArgs),
    Install(commands::install::InstallArgs),
    Uninstall(commands::install::UninstallArgs),
    /// Watch a `drainpipe proxy` and, once it is gone (SIGKILL included),
    /// kill what it started (started by `proxy` itself).
    #[command(hide = true)]
    Supervise {
        /// The process to watch (its pipe is our stdin).
        #[arg(long)]
        parent: u32,
    },
    /// Run the built-in fixture server (used by `demo` and the tests).
    #[command(hide = true)]
    Fixture {
        /// The fixture's own switches (`drainpipe fixture --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Demo(args) => commands::demo::run(args),
        Command::Proxy(args) => commands::proxy::run(args),
        #[cfg(feature = "remote")]
        Command::Serve(args) => commands::serve::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Frame(args) => commands::frame::run(args),
        Command::Install(args) => commands::install::run_install(args),
        Command::Uninstall(args) => commands::install::run_uninstall(args),
        Command::Fixture { args } => run_fixture(args),
        Command::Supervise { parent } => {
            drainpipe_host::supervise::run(parent);
            0
        }
    };
    std::process::exit(code);
}

fn run_fixture(args: Vec<String>) -> i32 {
    fixture::set_self_args(&["fixture"]);
    match fixture::Options::parse(args) {
        Ok(Some(options)) => fixture::run(options),
        Ok(None) => {
            println!(
                "{}",
                fixture::USAGE.replace("drainpipe-fixture", "drainpipe fixture")
            );
            commands::EXIT_OK
        }
        Err(message) => {
            eprintln!("drainpipe fixture: {message} (see --help)");
            commands::EXIT_USAGE
        }
    }
}
