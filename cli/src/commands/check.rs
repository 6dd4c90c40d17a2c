//! `drainpipe check -- <server command>`: release criteria for MCP stdio
//! servers, as a pass/fail table with the measured figures.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use drainpipe_framer::Config;
use drainpipe_host::session::{
    CallError, CallOptions, ClientInfo, Ending, NegotiateError, Negotiated, Protocol, Revision,
    Session, SessionConfig, ShutdownTimeouts,
};
use serde_json::{Value, json};

use super::size::{human, parse_size};
use super::{EXIT_ENVIRONMENT, EXIT_FAILED, EXIT_OK, Style, parse_duration, took};

/// Check an MCP server against drainpipe's release criteria.
///
/// Starts the server and checks: the handshake (protocol revision 2026-07-28
/// through `server/discover`, falling back to the 2025 `initialize`),
/// tools/list, the answer to a tool call whose result exceeds the transport
/// limit, cancellation of a long call followed by a second
/// request, stdout purity over the whole session, and shutdown without
/// orphans. Prints a pass/fail table with what was measured; exits non-zero
/// if a row failed. Rows that need a tool are skipped unless it is named.
#[derive(Debug, Args)]
#[command(after_help = super::EXIT_CODES)]
pub(crate) struct CheckArgs {
    /// The transport limit the server is held to, in bytes on the wire.
    #[arg(long, value_name = "SIZE", default_value = "4MiB", value_parser = parse_size)]
    max_frame: usize,
    /// A tool whose result, unbounded, would exceed the limit (e.g. a search
    /// with no cap). The server passes if it answers within the limit (best
    /// with `structuredContent.truncated`) or with an error.
    #[arg(long, value_name = "NAME")]
    large_tool: Option<String>,
    /// The arguments of `--large-tool`, as JSON.
    #[arg(long, value_name = "JSON", default_value = "{}", value_parser = parse_json)]
    large_args: Value,
    /// A long-running tool to cancel while it works (best if it sends progress
    /// notifications: then the check also sees whether the work stopped).
    #[arg(long, value_name = "NAME")]
    slow_tool: Option<String>,
    /// The arguments of `--slow-tool`, as JSON.
    #[arg(long, value_name = "JSON", default_value = "{}", value_parser = parse_json)]
    slow_args: Value,
    /// Cancel the slow call at its first notification, or after this long.
    #[arg(long, value_name = "DURATION", default_value = "300ms", value_parser = parse_duration)]
    cancel_after: Duration,
    /// The request after a cancellation must be answered within this.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    second_within: Duration,
    /// Timeout of every request.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    timeout: Duration,
    /// How long the server may take to exit after its stdin closes.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    grace: Duration,
    /// The protocol revision: `auto` tries 2026-07-28 (`server/discover`)
    /// and falls back to the 2025 `initialize`; a revision pins it
    /// (2026-07-28, 2025-11-25 or 2025-06-18).
    #[arg(long, value_name = "REVISION", default_value = "auto")]
    protocol: Protocol,
    /// The server command and its arguments.
    #[arg(required = true, last = true, value_name = "SERVER COMMAND")]
    server: Vec<String>,
}

/// The era the handshake settled on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
    /// 2026-07-28: the session adds the protocol envelope to every request.
    Modern,
    /// The 2025 revisions, after `initialize`.
    Legacy,
}

impl Era {
    fn of(revision: Revision) -> Era {
        if revision.is_stateless() {
            Era::Modern
        } else {
            Era::Legacy
        }
    }

    /// A small request that proves the server still answers: `ping`, which
    /// revision 2026-07-28 no longer has; `tools/list` there.
    async fn next_request(
        self,
        session: &Session,
        options: CallOptions,
    ) -> Result<drainpipe_host::session::Response, CallError> {
        let method = match self {
            Era::Modern => "tools/list",
            Era::Legacy => "ping",
        };
        session.call(method, json!({}), options).await
    }
}

fn parse_json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|error| format!("not JSON: {error}"))
}

/// The outcome of one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Pass,
    Fail,
    Skip,
}

struct Row {
    name: &'static str,
    verdict: Verdict,
    measured: String,
}

impl Row {
    fn new(name: &'static str, pass: bool, measured: impl Into<String>) -> Row {
        Row {
            name,
            verdict: if pass { Verdict::Pass } else { Verdict::Fail },
            measured: measured.into(),
        }
    }

    fn skip(name: &'static str, measured: impl Into<String>) -> Row {
        Row {
            name,
            verdict: Verdict::Skip,
            measured: measured.into(),
        }
    }
}

/// A notification the server sent, and when.
struct Seen {
    at: Instant,
    method: String,
    token: Option<Value>,
}

/// Runs `drainpipe check`; returns the exit code.
pub(crate) fn run(args: CheckArgs) -> i32 {
    let style = Style::for_stdout();
    let runtime = super::runtime();
    let rows = match runtime.block_on(check(&args)) {
        Ok(rows) => rows,
        Err(error) => {
            eprintln!(
                "drainpipe check: could not start `{}`: {error}",
                args.server[0]
            );
            return EXIT_ENVIRONMENT;
        }
    };
    println!(
        "{}",
        style.bold(&format!("drainpipe check: {}", args.server.join(" ")))
    );
    println!("  {:<22} {:<6} measured", "check", "result");
    for row in &rows {
        let verdict = match row.verdict {
            Verdict::Pass => style.word(true, "pass  "),
            Verdict::Fail => style.word(false, "FAIL  "),
            Verdict::Skip => "skip  ".to_string(),
        };
        println!("  {:<22} {verdict} {}", row.name, row.measured);
    }
    let count = |v| rows.iter().filter(|r| r.verdict == v).count();
    let failed = count(Verdict::Fail);
    println!(
        "{} passed, {} failed, {} skipped",
        count(Verdict::Pass),
        failed,
        count(Verdict::Skip)
    );
    if failed == 0 { EXIT_OK } else { EXIT_FAILED }
}

async fn check(args: &CheckArgs) -> std::io::Result<Vec<Row>> {
    let mut command = tokio::process::Command::new(&args.server[0]);
    command.args(&args.server[1..]);
    let config = SessionConfig {
        framer: Config::default().with_max_frame_bytes(args.max_frame),
        dispatcher_capacity: 4096,
        // Every stray line and oversize message is counted, never fatal: the
        // check reports them instead.
        max_not_protocol_lines: None,
        max_oversize_frames: None,
        default_timeout: args.timeout,
        shutdown: ShutdownTimeouts {
            after_close: args.grace,
            after_term: Duration::from_secs(1),
            after_kill: Duration::from_secs(2),
        },
        ..SessionConfig::default()
    };
    let options = CallOptions::timeout(args.timeout);
    let client = ClientInfo::new("drainpipe-check", env!("CARGO_PKG_VERSION"));
    let started = Instant::now();
    let (session, outcome) = Session::connect(
        || {
            let mut command = tokio::process::Command::new(&args.server[0]);
            command.args(&args.server[1..]);
            command
        },
        config,
        args.protocol,
        &client,
        options,
    )
    .await?;
    let handshake = handshake_row(&outcome, started.elapsed());
    let era = outcome.ok().map(|negotiated| Era::of(negotiated.revision));
    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let server_requests = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let listener = tokio::spawn(listen(
        session.clone(),
        seen.clone(),
        server_requests.clone(),
    ));
    let mut rows = vec![handshake];
    match era {
        Some(era) => {
            rows.push(tools_list(&session, args, options).await);
            rows.push(large_result(&session, args, options, era).await);
            rows.push(cancellation(&session, args, options, era, &seen).await);
        }
        None => {
            for name in ["tools/list", LARGE, CANCEL] {
                rows.push(Row::skip(name, "no handshake, so nothing to call"));
            }
        }
    }
    let metrics = session.metrics();
    // Revision 2026-07-28: servers must not send requests on stdout.
    let requests = match era {
        Some(Era::Modern) => server_requests.load(std::sync::atomic::Ordering::Relaxed),
        _ => 0,
    };
    let impure = metrics.not_protocol_lines
        + metrics.malformed_frames
        + metrics.unroutable_frames
        + requests;
    rows.push(Row::new(
        "stdout purity",
        impure == 0,
        if impure == 0 {
            format!(
                "{} messages, {} read, nothing but protocol",
                metrics.frames,
                human(metrics.stdout_bytes)
            )
        } else {
            format!(
                "stray lines {}, malformed {}, unroutable {}, requests {requests} among {} on stdout (logs belong on stderr; a 2026-07-28 server sends no requests)",
                metrics.not_protocol_lines,
                metrics.malformed_frames,
                metrics.unroutable_frames,
                metrics.frames + impure - requests
            )
        },
    ));
    rows.push(shutdown(session, args).await);
    listener.abort();
    Ok(rows)
}

/// Records notifications; answers the server's own requests with an error
/// (the checker offers no client features), so none waits, and counts them.
async fn listen(
    session: Session,
    seen: Arc<Mutex<Vec<Seen>>>,
    requests: Arc<std::sync::atomic::AtomicU64>,
) {
    while let Some(message) = session.next_incoming().await {
        if let Some(id) = &message.id {
            requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let _ = session
                .respond(
                    id,
                    Err((-32601, "drainpipe check offers no client features".into())),
                )
                .await;
            continue;
        }
        let token = message
            .json()
            .ok()
            .and_then(|v| v.get("params")?.get("progressToken").cloned());
        seen.lock().expect("seen").push(Seen {
            at: Instant::now(),
            method: message.method,
            token,
        });
    }
}

const HANDSHAKE: &str = "handshake";

/// The handshake's row: the revision it settled on and through which
/// request, or why it failed.
fn handshake_row(outcome: &Result<Negotiated, NegotiateError>, elapsed: Duration) -> Row {
    match outcome {
        Ok(negotiated) => Row::new(
            HANDSHAKE,
            true,
            format!(
                "{} answered in {}: {}, protocol {}{}",
                negotiated.via,
                took(elapsed),
                negotiated.server(),
                negotiated.revision,
                if negotiated.restarted {
                    " (the server ended on server/discover and was started again)"
                } else {
                    ""
                }
            ),
        ),
        Err(NegotiateError::Call {
            error: CallError::SessionLost { reason },
            method,
        }) => Row::new(
            HANDSHAKE,
            false,
            format!("{method}: the server ended ({reason})"),
        ),
        Err(error) => Row::new(HANDSHAKE, false, error.to_string()),
    }
}

async fn tools_list(session: &Session, args: &CheckArgs, options: CallOptions) -> Row {
    let started = Instant::now();
    match session.call("tools/list", json!({}), options).await {
        Ok(answer) => {
            let elapsed = started.elapsed();
            let Some(tools) = answer.result["tools"].as_array() else {
                return Row::new("tools/list", false, "the result has no `tools` array");
            };
            let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
            let missing: Vec<&str> = [&args.large_tool, &args.slow_tool]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .filter(|name| !names.contains(name))
                .collect();
            Row::new(
                "tools/list",
                missing.is_empty(),
                if missing.is_empty() {
                    format!(
                        "{} tools in {} ({})",
                        tools.len(),
                        took(elapsed),
                        human(answer.wire_bytes as u64)
                    )
                } else {
                    format!("not listed: {}", missing.join(", "))
                },
            )
        }
        Err(error) => Row::new("tools/list", false, error.to_string()),
    }
}

const LARGE: &str = "result over the limit";

async fn large_result(session: &Session, args: &CheckArgs, options: CallOptions, era: Era) -> Row {
    let Some(tool) = &args.large_tool else {
        return Row::skip(LARGE, "name a tool with --large-tool (and --large-args)");
    };
    let limit = human(args.max_frame as u64);
    let params = json!({"name": tool, "arguments": args.large_args});
    let started = Instant::now();
    let outcome = session.call("tools/call", params, options).await;
    let elapsed = took(started.elapsed());
    let (pass, mut measured) = match outcome {
        Ok(answer) => {
            let marked = answer.result["structuredContent"]["truncated"] == json!(true);
            (
                true,
                format!(
                    "{} response within the {limit} limit in {elapsed}, {}",
                    human(answer.wire_bytes as u64),
                    if marked {
                        "marked truncated"
                    } else {
                        "not marked truncated"
                    }
                ),
            )
        }
        Err(CallError::JsonRpc { code, message, .. }) => (
            true,
            format!(
                "answered with error {code} in {elapsed}: {}",
                clip_text(&message, 60)
            ),
        ),
        Err(CallError::TooLarge { .. }) => (
            false,
            format!(
                "the response passed the {limit} transport limit, known in {elapsed} (a host without a limit would have to buffer it whole)"
            ),
        ),
        Err(error) => (false, error.to_string()),
    };
    // The server must still answer after writing (or refusing) a large result.
    let started = Instant::now();
    match era.next_request(session, options).await {
        Ok(_) => measured.push_str(&format!("; next request in {}", took(started.elapsed()))),
        Err(error) => return Row::new(LARGE, false, format!("{measured}; next request: {error}")),
    }
    Row::new(LARGE, pass, measured)
}

const CANCEL: &str = "cancellation";

async fn cancellation(
    session: &Session,
    args: &CheckArgs,
    options: CallOptions,
    era: Era,
    seen: &Arc<Mutex<Vec<Seen>>>,
) -> Row {
    let Some(tool) = &args.slow_tool else {
        return Row::skip(
            CANCEL,
            "name a long-running tool with --slow-tool (and --slow-args)",
        );
    };
    // Servers that follow the spec report progress under this token; some
    // use the request id instead: both are recognised.
    let progress_token = json!("drainpipe-check-cancel");
    let params = json!({"name": tool, "arguments": args.slow_args,
                        "_meta": {"progressToken": progress_token}});
    let before = seen.lock().expect("seen").len();
    let started = Instant::now();
    let pending = match session.start("tools/call", params, options).await {
        Ok(pending) => pending,
        Err(error) => return Row::new(CANCEL, false, error.to_string()),
    };
    let id = pending.id();
    let deadline = started + args.cancel_after;
    while Instant::now() < deadline && seen.lock().expect("seen").len() == before {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let noticed = seen.lock().expect("seen").len() > before;
    let cancelled_at = Instant::now();
    if !session.cancel(id, "drainpipe check: cancellation test") {
        return Row::new(
            CANCEL,
            false,
            format!(
                "the call ended before it could be cancelled ({}): give a longer call",
                took(started.elapsed())
            ),
        );
    }
    let _ = pending.outcome().await;
    let when = if noticed {
        format!(
            "at its first notification ({})",
            took(cancelled_at - started)
        )
    } else {
        format!("after {}", took(cancelled_at - started))
    };
    let second_started = Instant::now();
    let second = era.next_request(session, options).await;
    let second_took = second_started.elapsed();
    let mut measured = format!("cancelled {when}; ");
    let mut pass = match second {
        Ok(_) => {
            measured.push_str(&format!("second request answered in {}", took(second_took)));
            second_took <= args.second_within
        }
        Err(error) => {
            measured.push_str(&format!("second request failed: {error}"));
            false
        }
    };
    // A notification already on its way when the cancel arrived is fair;
    // one produced well after it means the work never stopped.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let id_token = json!(id.0);
    let ours = |token: &Option<Value>| {
        token.as_ref() == Some(&id_token) || token.as_ref() == Some(&progress_token)
    };
    let settle = cancelled_at + Duration::from_millis(150);
    let seen = seen.lock().expect("seen");
    let progress_for_call = seen[before..]
        .iter()
        .filter(|s| s.method == "notifications/progress" && ours(&s.token))
        .count();
    let after = seen[before..]
        .iter()
        .filter(|s| s.at > settle && s.method == "notifications/progress" && ours(&s.token))
        .count();
    if after > 0 {
        pass = false;
        measured.push_str(&format!(
            "; the work went on: {after} progress notifications after the cancel"
        ));
    } else if progress_for_call > 0 {
        measured.push_str("; progress stopped");
    } else {
        measured.push_str("; no progress notifications to see the work stop");
    }
    if second_took > args.second_within {
        measured.push_str(&format!(" (limit {})", took(args.second_within)));
    }
    Row::new(CANCEL, pass, measured)
}

const SHUTDOWN: &str = "shutdown";

async fn shutdown(session: Session, args: &CheckArgs) -> Row {
    let pid = session.pid();
    let family = descendants(pid);
    let started = Instant::now();
    let report = session.shutdown().await;
    let elapsed = started.elapsed();
    let survivors: Vec<u32> = family.iter().copied().filter(|&p| running(p)).collect();
    for &survivor in &survivors {
        // Orphans of the server under test: the checker started them, so it ends them.
        let _ = drainpipe_host::supervise::kill_process(survivor);
    }
    let status = report
        .status
        .map(|s| s.to_string())
        .unwrap_or_else(|| "not reaped".into());
    let ending = match report.ending {
        Ending::Exited => format!("exited ({status}) {} after stdin closed", took(elapsed)),
        Ending::Terminated => format!(
            "did not exit within {} of stdin closing; SIGTERM ended it ({status})",
            took(args.grace)
        ),
        Ending::Killed => format!(
            "did not exit within {} of stdin closing, nor on SIGTERM; SIGKILL ended it",
            took(args.grace)
        ),
        Ending::Unreaped => "could not be reaped".to_string(),
    };
    let mut problems = Vec::new();
    if report.leftovers_killed {
        problems.push("left processes in its group (killed)".to_string());
    }
    if !survivors.is_empty() {
        problems.push(format!(
            "orphaned {} processes {survivors:?} (killed)",
            survivors.len()
        ));
    }
    let pass = report.ending == Ending::Exited && problems.is_empty();
    let measured = if problems.is_empty() {
        format!("{ending}; no processes left")
    } else {
        format!("{ending}; {}", problems.join("; "))
    };
    Row::new(SHUTDOWN, pass, measured)
}

fn clip_text(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let cut: String = text.chars().take(max_chars).collect();
    format!("{cut}…")
}

/// Whether `pid` runs (a zombie does not count: it only waits to be reaped).
fn running(pid: u32) -> bool {
    matches!(proc_state(pid), Some((state, _)) if state != 'Z')
}

/// The state letter and parent of `pid`, from /proc.
fn proc_state(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces.
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = after.split(' ');
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

/// Every process below `root`, by /proc's parent links (Linux). Elsewhere
/// none: the session's own probe of the server's group or job
/// (`leftovers_killed`) is what sees leftovers there. (Under wine, `/proc`
/// would be Linux's, whose pids are not the Windows ones.)
fn descendants(root: u32) -> Vec<u32> {
    if !cfg!(target_os = "linux") {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let links: Vec<(u32, u32)> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, proc_state(pid)?.1)))
        .collect();
    let mut found = vec![root];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        found.extend(
            links
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(pid, _)| *pid),
        );
        next += 1;
    }
    found.remove(0);
    found
}
