//! `drainpipe serve -- <server command>`: a stdio server served over
//! Streamable HTTP, one guarded child per session.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use drainpipe_host::proxy::StderrSink;
use drainpipe_host::serve::{self, Guard, ServeConfig};
use tokio_util::sync::CancellationToken;

use super::parse_duration;
use super::proxy::{EngineArgs, MetricsFormat, watch_signals};
use super::size::parse_size;

/// Serve a stdio MCP server over Streamable HTTP, for hosts that take
/// remote servers only (claude.ai, ChatGPT, agent platforms).
///
/// Each session (an `initialize` from a client) gets a child of its own,
/// behind the same guard as `drainpipe proxy`: the transport limit, the
/// content budget and its spill store, cancellation to the process tree.
/// The child ends with its session: at DELETE, after --session-idle with
/// nothing asked, or when serve stops (SIGTERM: open requests get
/// --drain to be answered, then every child is ended). Listens on
/// loopback unless told; beyond it a bearer token (--token) is required,
/// or --auth none said out loud.
#[derive(Debug, Args)]
#[command(after_help = super::EXIT_CODES)]
pub(crate) struct ServeArgs {
    /// The address to listen on. A port of 0 takes any free port (the
    /// address is printed to stderr).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The MCP endpoint's path.
    #[arg(long, value_name = "PATH", default_value = "/mcp")]
    path: String,
    /// The bearer token every request must carry (`Authorization: Bearer
    /// …`); write `${NAME}` to read it from the environment. Compared in
    /// constant time, never logged.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// `none`: serve beyond loopback without a token (behind a reverse
    /// proxy that authenticates, or on a network you trust).
    #[arg(long, value_name = "MODE", conflicts_with = "token")]
    auth: Option<AuthArg>,
    /// A host name requests may address (the `Host` header; any port);
    /// repeat for more. Default on loopback: localhost, 127.0.0.1, [::1];
    /// beyond it, any name (say which to guard against DNS rebinding).
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
    /// An origin browsers may call from (`https://app.example`); repeat for
    /// more. Requests with another `Origin` are refused; those without one
    /// (not from a browser) are not concerned.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Sessions open at once (each a child); past it `initialize` gets 503.
    #[arg(long, value_name = "N", default_value_t = 32)]
    max_sessions: usize,
    /// A session with nothing asked for this long is ended, and its child:
    /// a client that vanished leaves no process behind.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    session_idle: Duration,
    /// Bytes queued per response stream for a client that reads slowly;
    /// past it that client loses its answers, never another's.
    #[arg(long, value_name = "SIZE", default_value = "4MiB", value_parser = parse_size)]
    stream_queue: usize,
    /// How long a request whose client lost its event stream waits for the
    /// client to resume it (`Last-Event-ID`) before it is cancelled to the
    /// child. 0 cancels at once.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    resume_window: Duration,
    /// Children kept started for stateless (2026-07-28) requests, each
    /// serving one request without the wait for a child to start; they
    /// count toward --max-sessions. 0 starts one per request.
    #[arg(long, value_name = "N", default_value_t = 0, conflicts_with = "shared")]
    pool: usize,
    /// Every session on one child, for servers that take one client only:
    /// request ids and progress tokens are renumbered so clients never
    /// collide, `initialize` is answered from the child's first answer,
    /// and the child lives across sessions (until unused for
    /// --session-idle).
    #[arg(long)]
    shared: bool,
    /// On SIGTERM: how long open requests get to be answered before every
    /// session and its child are ended.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    drain: Duration,
    /// Serve HTTPS with this certificate chain (PEM); with --tls-key.
    #[arg(long, value_name = "PATH", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
    /// Each session's metrics, printed to stderr when it ends.
    #[arg(long, value_name = "FORMAT", default_value = "none")]
    metrics: MetricsFormat,
    /// The server command and its arguments, after `--`.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true,
        value_name = "SERVER COMMAND"
    )]
    server: Vec<String>,
}

/// `--auth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum AuthArg {
    /// No token: anyone who reaches the address may call.
    None,
}

/// Runs `drainpipe serve` until a stop signal; returns the exit code.
pub(crate) fn run(args: ServeArgs) -> i32 {
    if args.server[0].starts_with('-') {
        eprintln!(
            "drainpipe serve: unknown option {}: the server command comes after serve's options (see --help)",
            args.server[0]
        );
        return super::EXIT_USAGE;
    }
    let loopback = serve::is_loopback(&args.listen);
    let token = args
        .token
        .as_deref()
        .map(drainpipe_host::remote::expand_env);
    if token.as_deref() == Some("") {
        eprintln!("drainpipe serve: --token is empty (is its variable set?)");
        return super::EXIT_USAGE;
    }
    if !loopback && token.is_none() && args.auth != Some(AuthArg::None) {
        eprintln!(
            "drainpipe serve: {} is reachable beyond this machine: give --token ${{VAR}}, or --auth none to serve without one",
            args.listen
        );
        return super::EXIT_USAGE;
    }
    if !args.path.starts_with('/') {
        eprintln!("drainpipe serve: --path must start with /");
        return super::EXIT_USAGE;
    }
    let mut hosts: Vec<String> = args.allow_hosts.clone();
    if loopback {
        hosts.extend(Guard::loopback().hosts.unwrap_or_default());
    }
    let guard = Guard {
        hosts: (!hosts.is_empty()).then_some(hosts),
        origins: args.allow_origins.clone(),
        token,
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => match serve::tls_config(cert, key) {
            Ok(tls) => Some(tls),
            Err(error) => {
                eprintln!("drainpipe serve: --tls-cert/--tls-key: {error}");
                return super::EXIT_USAGE;
            }
        },
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let config = ServeConfig {
        proxy: args.engine.config(),
        path: args.path.clone(),
        max_sessions: args.max_sessions.max(1),
        session_idle: args.session_idle,
        stream_bytes: args.stream_queue,
        resume_window: args.resume_window,
        pool: args.pool,
        shared: args.shared,
        drain: args.drain,
        guard,
        tls,
        ..ServeConfig::default()
    };
    // Kept until this function returns; if this process dies instead, the
    // supervisor ends every child it started.
    let _supervisor = std::env::current_exe()
        .and_then(|exe| drainpipe_host::supervise::spawn(&exe))
        .map_err(|error| eprintln!("drainpipe: no orphan guard: {error}"))
        .ok();
    let (sink, closer) = StderrSink::stderr();
    let command_words = args.server.clone();
    let command: serve::CommandFactory = Arc::new(move || {
        let mut command = tokio::process::Command::new(&command_words[0]);
        command.args(&command_words[1..]);
        command
    });
    let format = args.metrics;
    let report_sink = sink.clone();
    let on_end: serve::OnEnd = Arc::new(move |id, outcome| {
        let Ok(outcome) = outcome else { return };
        match format {
            MetricsFormat::Json => report_sink.line(&format!(
                "serve: session {id} ended: {}",
                outcome.metrics.to_json()
            )),
            MetricsFormat::Text => {
                report_sink.line(&format!("serve: session {id} ended"));
                report_sink.write(outcome.metrics.to_text().as_bytes());
            }
            MetricsFormat::None => {}
        }
    });
    let runtime = super::proxy_runtime();
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        let local = listener.local_addr()?;
        if !loopback && args.auth == Some(AuthArg::None) {
            sink.line(&format!(
                "serve: WARNING: {local} is served with no token: anyone who can reach it may call every tool"
            ));
        }
        sink.line(&format!("serve: listening on {scheme}://{local}{}", args.path));
        let stop = CancellationToken::new();
        watch_signals(stop.clone(), sink.clone())?;
        serve::run(listener, command, config, sink.clone(), stop, on_end).await
    });
    let code = match result {
        Ok(metrics) => {
            sink.line(&format!(
                "serve: stopped after {} sessions ({} refused at the limit, {} requests refused by the guard, {} cancelled when their client went away)",
                metrics.sessions,
                metrics.sessions_refused,
                metrics.refused,
                metrics.cancelled_on_disconnect
            ));
            super::EXIT_OK
        }
        Err(error) => {
            sink.line(&format!(
                "serve: could not listen on {}: {error}",
                args.listen
            ));
            super::EXIT_ENVIRONMENT
        }
    };
    drop(sink);
    closer.close(Duration::from_secs(1));
    code
}
