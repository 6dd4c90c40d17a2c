//! `drainpipe proxy -- <server command>`: the guarded proxy as a process.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use drainpipe_framer::Config;
use drainpipe_host::proxy::{self, ProxyConfig, ProxyMetrics, SpillConfig, StderrSink};
use drainpipe_host::session::ShutdownTimeouts;
use tokio_util::sync::CancellationToken;

use super::parse_duration;
use super::size::{parse_clip, parse_size};
use drainpipe_framer::budget::{Clip, Keep};

/// Run an MCP server behind a guarded stdio proxy.
///
/// Put `drainpipe proxy --` in front of the server command in a host's
/// configuration, or `drainpipe proxy --url https://…/mcp` in place of a
/// remote server's URL (the host then starts drainpipe as a stdio server).
/// Both
/// directions are framed with a transport limit; an oversize or malformed
/// message is never forwarded, and the request it answered gets a JSON-RPC
/// error instead; stray lines on the server's stdout go to stderr; the
/// server's stdout and stderr are always drained. Exits with the server's
/// status.
#[derive(Debug, Args)]
#[command(after_help = super::EXIT_CODES)]
pub(crate) struct ProxyArgs {
    #[command(flatten)]
    engine: EngineArgs,
    /// Metrics printed when the proxy exits.
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    metrics: MetricsFormat,
    /// Write the metrics to this file instead of stderr. `{pid}` in the path
    /// becomes the proxy's process id, so that two proxies (a host may start
    /// the same server twice, as the TypeScript SDK v2 client does to probe
    /// it) never write the same file; without it the last one wins.
    #[arg(long, value_name = "PATH")]
    metrics_file: Option<PathBuf>,
    /// A remote server instead of a command: its MCP endpoint over
    /// Streamable HTTP (`https://…/mcp`), or over the older HTTP+SSE
    /// transport, tried when the server refuses the first POST (see
    /// --transport). Every guarantee above holds for its answers.
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "URL", conflicts_with = "sandbox")]
    url: Option<String>,
    /// With --url: a header sent on every request (`Authorization: Bearer
    /// ${TOKEN}`); repeat for more. `${NAME}` is replaced by the environment
    /// variable NAME, so a token stays out of the host's configuration
    /// file. Header values are never written to logs, metrics or errors.
    #[cfg(feature = "remote")]
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url", value_parser = parse_header)]
    headers: Vec<(String, String)>,
    /// With --url: `auto` (Streamable HTTP, then HTTP+SSE if the first POST
    /// gets 400, 404 or 405), `streamable-http`, or `sse` (the URL is the
    /// HTTP+SSE stream).
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "KIND", default_value = "auto", requires = "url")]
    transport: TransportArg,
    /// With --url: the longest an answer may send nothing, keep-alive
    /// comments included; past it its request gets an error instead of a
    /// hang. Also bounds the wait for a response once connected.
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration, requires = "url")]
    idle_timeout: Duration,
    /// With --url: the longest making a connection may take (DNS, the TCP
    /// connect, a proxy's tunnel and the TLS handshake); past it the request
    /// gets an error, so a server or proxy that is down, or accepts and
    /// then says nothing, is not waited on for --idle-timeout.
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, requires = "url")]
    connect_timeout: Duration,
    /// With --url: authorize with OAuth as MCP specifies (discovery,
    /// dynamic client registration, authorization code with PKCE in the
    /// browser, refresh, step-up) and fail at start if tokens cannot be
    /// stored. Without it OAuth still starts on any 401 unless an
    /// `Authorization` header or --no-oauth is given. The URL to approve is
    /// printed to stderr (and opened in a browser unless
    /// DRAINPIPE_NO_BROWSER is set or there is no display); tokens are
    /// stored for the next run, private to the user (see --oauth-dir).
    #[cfg(feature = "remote")]
    #[arg(long, requires = "url", conflicts_with = "no_oauth")]
    oauth: bool,
    /// With --url: never authorize with OAuth; a 401 is an error for its
    /// request.
    #[cfg(feature = "remote")]
    #[arg(long, requires = "url")]
    no_oauth: bool,
    /// With --url: the OAuth client id of a client registered with the
    /// authorization server beforehand (servers without dynamic
    /// registration, such as GitHub's). `${NAME}` is read from the
    /// environment.
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "ID", requires = "url")]
    oauth_client_id: Option<String>,
    /// With --url: that client's secret; write `${NAME}` to read it from
    /// the environment, so it stays out of the host's configuration file.
    /// Never logged.
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "SECRET", requires = "oauth_client_id")]
    oauth_client_secret: Option<String>,
    /// With --url: the URL of this client's metadata document, used as its
    /// client id where the authorization server supports Client ID
    /// Metadata Documents (no registration then).
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "URL", requires = "url")]
    oauth_client_metadata_url: Option<String>,
    /// With --url: the scopes to ask for (space-separated) instead of those
    /// the server suggests.
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "SCOPES", requires = "url")]
    oauth_scope: Option<String>,
    /// With --url: the `resource` to ask tokens for (RFC 8707) instead of
    /// the one the server's metadata names.
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "URI", requires = "url")]
    oauth_resource: Option<String>,
    /// With --url: one more parameter of the authorization request
    /// (`access_type=offline`); repeat for more. The flow's own parameters
    /// (PKCE, state, redirect, client, resource, scope) cannot be replaced.
    #[cfg(feature = "remote")]
    #[arg(long = "oauth-param", value_name = "NAME=VALUE", requires = "url", value_parser = parse_param)]
    oauth_params: Vec<(String, String)>,
    /// With --url: how tokens are obtained: `authorization-code` (a user
    /// approves in the browser) or `client-credentials` (machine to
    /// machine: the client of --oauth-client-id signs in as itself with its
    /// --oauth-client-secret, no browser).
    #[cfg(feature = "remote")]
    #[arg(
        long,
        value_name = "GRANT",
        default_value = "authorization-code",
        requires = "url",
        requires_if("client-credentials", "oauth_client_id")
    )]
    oauth_grant: GrantArg,
    /// With --url: where OAuth tokens and client registrations are kept,
    /// one file per server URL (0600, in a 0700 directory). Default:
    /// $XDG_CONFIG_HOME/drainpipe/oauth, else ~/.config/drainpipe/oauth
    /// (%APPDATA%\drainpipe\oauth on Windows).
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "DIR", requires = "url")]
    oauth_dir: Option<PathBuf>,
    /// With --url: the port on 127.0.0.1 the browser is sent back to after
    /// approving (for an authorization server that only accepts a
    /// registered redirect URI). Default: the port registered before if
    /// free, else any free port.
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "PORT", requires = "url")]
    oauth_port: Option<u16>,
    /// The server command and its arguments, after `--` or not (for hosts
    /// that swallow `--`): every word from the first one that is not a
    /// proxy option on belongs to the server.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "SERVER COMMAND"
    )]
    #[cfg_attr(feature = "remote", arg(required_unless_present = "url"))]
    #[cfg_attr(not(feature = "remote"), arg(required = true))]
    server: Vec<String>,
}

/// The engine's options, the same for `proxy` and for each session of
/// `serve`.
#[derive(Debug, Args)]
pub(crate) struct EngineArgs {
    /// The transport limit, both directions: the longest message forwarded,
    /// in bytes on the wire (e.g. 4MiB, 512KiB, 1GB).
    #[arg(long, value_name = "SIZE", default_value = "4MiB", value_parser = parse_size)]
    max_frame: usize,
    /// Condense `tools/call` results to this content budget, whatever their
    /// size, over --max-frame too: long texts keep their beginning and their
    /// end (--keep), long arrays their first elements, and
    /// `_meta["io.drainpipe/truncated"]` plus a last text block say what was
    /// cut. In bytes of the whole response
    /// (`256KiB`), or in what a host shows the model: characters
    /// (`50000chars`, UTF-16 units as JavaScript counts them) or tokens
    /// (`25000tokens`, by OpenAI's o200k_base). At least 3496 of any unit.
    /// Off by default: a result over --max-frame is then an error for its
    /// request.
    #[arg(long, value_name = "SIZE", value_parser = parse_clip)]
    clip: Option<Clip>,
    /// With --clip: what a cut text keeps. `ends`: its first and its last
    /// half, with a mark between saying how many bytes were left out there
    /// and from which byte to read them (logs and command output end with
    /// what matters); `head`: its beginning; `tail`: its end.
    #[arg(long, value_name = "PART", default_value = "ends")]
    keep: Keep,
    /// With --clip: the full value of everything cut is kept in a private
    /// spill directory (removed when the proxy exits), linked from the
    /// result (`resource_link`, `drainpipe://result/...`) and read back
    /// through the same session with `resources/read` or the added
    /// `drainpipe_read` tool. This bounds the directory: past it the oldest
    /// values are evicted. 0 keeps nothing. Needs --clip of at least 6KiB.
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = parse_size)]
    spill_max: usize,
    /// Frame both directions inside the WebAssembly component (wasmtime, one
    /// capped instance per direction) instead of natively: a fault in the
    /// framer then ends this proxy with an error, never the host.
    #[arg(long)]
    sandbox: bool,
    /// The deepest nesting of objects and arrays accepted in a message.
    #[arg(long, value_name = "N", default_value_t = Config::DEFAULT_MAX_DEPTH)]
    max_depth: u32,
    /// Bytes of whole messages queued per direction for a peer that reads
    /// slowly (a larger message is queued alone); at least 64KiB.
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = parse_queue)]
    queue: usize,
    /// After the host closes stdin, how long the server gets to exit before
    /// SIGTERM (then 2 s more before SIGKILL).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    grace: Duration,
}

impl EngineArgs {
    /// The engine's configuration from these options. A budget in tokens
    /// has its counter built now, on a thread of its own, so that the
    /// first result does not wait for it.
    pub(crate) fn config(&self) -> ProxyConfig {
        #[cfg(feature = "tokens")]
        if self
            .clip
            .is_some_and(|clip| clip.unit == drainpipe_framer::budget::Unit::Tokens)
        {
            drainpipe_host::tokens::warm();
        }
        ProxyConfig {
            framer: Config::default()
                .with_max_frame_bytes(self.max_frame)
                .with_max_depth(self.max_depth),
            clip: self.clip.map(|clip| clip.keeping(self.keep)),
            sandbox: self.sandbox,
            spill: (self.spill_max > 0).then_some(SpillConfig {
                max_bytes: self.spill_max as u64,
            }),
            queue_bytes: self.queue,
            shutdown: ShutdownTimeouts {
                after_close: self.grace,
                ..ProxyConfig::default().shutdown
            },
            ..ProxyConfig::default()
        }
    }
}

/// `--transport`.
#[cfg(feature = "remote")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TransportArg {
    Auto,
    StreamableHttp,
    Sse,
}

/// `--oauth-grant`.
#[cfg(feature = "remote")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum GrantArg {
    AuthorizationCode,
    ClientCredentials,
}

/// `Name: value`, split at the first colon.
#[cfg(feature = "remote")]
fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| "a header is `Name: value`".to_string())?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("{name:?} is not a header name"));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// `name=value`, split at the first `=`.
#[cfg(feature = "remote")]
fn parse_param(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err("a parameter is `name=value`".to_string()),
    }
}

/// How the exit metrics are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum MetricsFormat {
    /// A few lines for people.
    Text,
    /// One line of JSON.
    Json,
    /// Nothing.
    None,
}

/// Runs `drainpipe proxy`; returns the exit code (the server's).
pub(crate) fn run(args: ProxyArgs) -> i32 {
    #[cfg(feature = "remote")]
    let remote = args.url.as_ref().map(|url| {
        let mut remote = drainpipe_host::remote::RemoteConfig::new(url.clone());
        remote.headers = args.headers.clone();
        remote.idle_timeout = args.idle_timeout;
        remote.connect_timeout = args.connect_timeout;
        let authorization_given = args
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        remote.oauth = drainpipe_host::remote::OAuthConfig {
            mode: match (args.oauth, args.no_oauth || authorization_given) {
                (true, _) => drainpipe_host::remote::OAuthMode::Always,
                (false, true) => drainpipe_host::remote::OAuthMode::Off,
                (false, false) => drainpipe_host::remote::OAuthMode::OnChallenge,
            },
            dir: args.oauth_dir.clone(),
            port: args.oauth_port,
            client: args.oauth_client_id.as_ref().map(|id| {
                drainpipe_host::remote::PreRegisteredClient {
                    id: drainpipe_host::remote::expand_env(id),
                    secret: args
                        .oauth_client_secret
                        .as_deref()
                        .map(drainpipe_host::remote::expand_env),
                }
            }),
            client_metadata_url: args.oauth_client_metadata_url.clone(),
            scope: args.oauth_scope.clone(),
            resource: args.oauth_resource.clone(),
            params: args.oauth_params.clone(),
            grant: match args.oauth_grant {
                GrantArg::AuthorizationCode => {
                    drainpipe_host::remote::OAuthGrant::AuthorizationCode
                }
                GrantArg::ClientCredentials => {
                    drainpipe_host::remote::OAuthGrant::ClientCredentials
                }
            },
        };
        remote.transport = match args.transport {
            TransportArg::Auto => drainpipe_host::remote::Transport::Auto,
            TransportArg::StreamableHttp => drainpipe_host::remote::Transport::StreamableHttp,
            TransportArg::Sse => drainpipe_host::remote::Transport::Sse,
        };
        remote
    });
    #[cfg(not(feature = "remote"))]
    let remote: Option<()> = None;
    if remote.is_some() && !args.server.is_empty() {
        eprintln!("drainpipe proxy: --url or a server command, not both");
        return super::EXIT_USAGE;
    }
    // Without `--`, a mistyped option would be taken for the server command.
    if args
        .server
        .first()
        .is_some_and(|word| word.starts_with('-'))
    {
        eprintln!(
            "drainpipe proxy: unknown option {}: the server command comes after the proxy's options (see --help)",
            args.server[0]
        );
        return super::EXIT_USAGE;
    }
    // Kept until this function returns; if this process dies instead, its
    // end of the pipe closes all the same and the supervisor cleans up.
    let _supervisor = std::env::current_exe()
        .and_then(|exe| drainpipe_host::supervise::spawn(&exe))
        .map_err(|error| eprintln!("drainpipe: no orphan guard: {error}"))
        .ok();
    let config = args.engine.config();
    // Export starts outside the runtime: its HTTP client is a blocking
    // one, on the SDK's own threads.
    #[cfg(feature = "otel")]
    let telemetry = match drainpipe_host::telemetry::Telemetry::from_env() {
        Ok(telemetry) => telemetry.inspect(|t| {
            t.install();
        }),
        Err(error) => {
            eprintln!("drainpipe: {error}; going on without it");
            None
        }
    };
    let (sink, closer) = StderrSink::stderr();
    let runtime = super::proxy_runtime();
    let outcome = runtime.block_on(async {
        let stop = CancellationToken::new();
        watch_signals(stop.clone(), sink.clone())?;
        #[cfg(feature = "remote")]
        if let Some(remote) = &remote {
            return proxy::run_remote(
                remote,
                config,
                proxy::host_stdin(),
                proxy::host_stdout(),
                sink.clone(),
                stop,
            )
            .await;
        }
        let mut command = tokio::process::Command::new(&args.server[0]);
        command.args(&args.server[1..]);
        proxy::run(
            command,
            config,
            proxy::host_stdin(),
            proxy::host_stdout(),
            sink.clone(),
            stop,
        )
        .await
    });
    // The host has had every answer: it sees the end of the proxy's output
    // now, not after the teardown (and the last export, up to its grace
    // with a collector that does not answer).
    release_stdout();
    #[cfg(feature = "otel")]
    let outcome = outcome.map(|mut outcome| {
        if let Some(telemetry) = &telemetry {
            outcome.metrics.telemetry = Some(telemetry.shutdown());
        }
        outcome
    });
    let code = match outcome {
        Ok(outcome) => {
            report(&args, &outcome.metrics, &sink);
            if outcome.metrics.framer_failed {
                // Whatever the server said on its way out: this proxy
                // failed its host.
                super::EXIT_ENVIRONMENT
            } else {
                outcome.exit_code()
            }
        }
        Err(error) if args.server.is_empty() => {
            sink.line(&format!("could not use --url: {error}"));
            super::EXIT_USAGE
        }
        Err(error) => {
            sink.line(&format!("could not start `{}`: {error}", args.server[0]));
            match error.kind() {
                io::ErrorKind::NotFound => 127,
                _ => 126,
            }
        }
    };
    drop(sink);
    closer.close(Duration::from_secs(1));
    // The host's stdin may still be open in a blocked read: do not wait for it.
    std::process::exit(code)
}

/// Points this process's stdout at the null device, closing the host's
/// pipe (nothing else holds its write end).
pub(crate) fn release_stdout() {
    #[cfg(unix)]
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
    }
}

fn report(args: &ProxyArgs, metrics: &ProxyMetrics, sink: &StderrSink) {
    let text = match args.metrics {
        MetricsFormat::Text => metrics.to_text(),
        MetricsFormat::Json => metrics.to_json() + "\n",
        MetricsFormat::None => return,
    };
    match &args.metrics_file {
        Some(path) => {
            // `{pid}`: one file per proxy (a host may start two at once).
            let path = PathBuf::from(
                path.to_string_lossy()
                    .replace("{pid}", &std::process::id().to_string()),
            );
            if let Err(error) = std::fs::write(&path, &text) {
                sink.line(&format!(
                    "could not write metrics to {}: {error}",
                    path.display()
                ));
            }
        }
        None => {
            sink.write(text.as_bytes());
        }
    }
}

/// SIGTERM, SIGINT and SIGHUP (Ctrl+C, Ctrl+Break and the console closing
/// on Windows) ask the server to stop; the proxy exits when it has.
pub(crate) fn watch_signals(stop: CancellationToken, sink: StderrSink) -> io::Result<()> {
    proxy::on_stop_request(move || {
        if stop.is_cancelled() {
            sink.line("second signal: waiting for the server to end");
        }
        stop.cancel();
    })
}

/// `--queue`: a size of at least 64 KiB. A smaller queue holds less than a
/// read, so every batch would wait for an empty queue; a bare small number
/// is most likely a count of messages, which the option no longer takes.
fn parse_queue(text: &str) -> Result<usize, String> {
    const MIN: usize = 64 << 10;
    let bytes = parse_size(text)?;
    if bytes < MIN {
        return Err(format!(
            "{text} is below the smallest queue, 64KiB (the queue is counted in bytes, e.g. 1MiB)"
        ));
    }
    Ok(bytes)
}
