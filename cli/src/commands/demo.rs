//! `drainpipe demo`: the hazard and the fix, against the built-in fixture
//! server, in a report a person reads in ten seconds.

use std::process::Stdio;
use std::time::{Duration, Instant};

use clap::Args;
use drainpipe_framer::Config;
use drainpipe_host::session::{
    CallError, CallOptions, Session, SessionConfig, SessionMetrics, ShutdownReport,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::size::{human, parse_size};
use super::{EXIT_ENVIRONMENT, EXIT_FAILED, EXIT_OK, Style, fixture_command, took};

/// Show the hazard and the fix against a built-in server, in seconds.
///
/// Runs the built-in MCP server four times: a parent that stops reading
/// stdout stalls it; a guarded session gets the same
/// response or fails exactly that request at the transport limit;
/// cancellation during output, then a second request; the session metrics.
#[derive(Debug, Args)]
#[command(after_help = super::EXIT_CODES)]
pub(crate) struct DemoArgs {
    /// Size of the large response the server writes.
    #[arg(long, value_name = "SIZE", default_value = "8MiB", value_parser = parse_size)]
    response: usize,
    /// The transport limit below the response size, for the rejection.
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = parse_size)]
    low_limit: usize,
}

/// One line of the report and whether it is good.
struct Line {
    good: bool,
    text: String,
}

/// What a step found.
#[derive(Default)]
struct Step {
    lines: Vec<Line>,
}

impl Step {
    fn check(&mut self, good: bool, text: impl Into<String>) -> bool {
        self.lines.push(Line {
            good,
            text: text.into(),
        });
        good
    }

    fn good(&self) -> bool {
        !self.lines.is_empty() && self.lines.iter().all(|l| l.good)
    }
}

/// Runs `drainpipe demo`; returns the exit code.
pub(crate) fn run(args: DemoArgs) -> i32 {
    let style = Style::for_stdout();
    if let Err(error) = fixture_command(&[]) {
        eprintln!("drainpipe demo: {error}");
        return EXIT_ENVIRONMENT;
    }
    let started = Instant::now();
    let runtime = super::runtime();
    let response = args.response as u64;
    println!(
        "{}",
        style.bold(&format!(
            "drainpipe demo: an MCP stdio server answers with {} on stdout",
            human(response)
        ))
    );
    let mut all_good = true;
    let mut metrics: Vec<(String, SessionMetrics)> = Vec::new();
    let steps: [(&str, StepFn); 3] = [
        (
            "1. The hazard: a parent that does not read the server's stdout",
            hazard,
        ),
        (
            "2. The fix: a guarded session that never stops reading",
            fix,
        ),
        (
            "3. Cancellation during output, then a second request",
            cancel,
        ),
    ];
    for (title, step_fn) in steps {
        println!("\n{}", style.bold(title));
        let step = runtime.block_on(async {
            match tokio::time::timeout(Duration::from_secs(60), step_fn(&args, &mut metrics)).await
            {
                Ok(step) => step,
                Err(_) => {
                    let mut step = Step::default();
                    step.check(false, "the step did not finish within 60 s");
                    step
                }
            }
        });
        for line in &step.lines {
            println!("   {} {}", style.mark(line.good), line.text);
        }
        all_good &= step.good();
    }
    println!("\n{}", style.bold("4. Session metrics"));
    print_metrics(&metrics);
    println!(
        "\n{} in {}",
        if all_good {
            style.word(true, "Every step behaved as expected")
        } else {
            style.word(false, "Some step did not behave as expected")
        },
        took(started.elapsed())
    );
    if all_good { EXIT_OK } else { EXIT_FAILED }
}

type StepFn = for<'a> fn(
    &'a DemoArgs,
    &'a mut Vec<(String, SessionMetrics)>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Step> + 'a>>;

fn hazard<'a>(
    args: &'a DemoArgs,
    _: &'a mut Vec<(String, SessionMetrics)>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Step> + 'a>> {
    Box::pin(async move {
        let mut step = Step::default();
        if let Err(error) = hazard_inner(args, &mut step).await {
            step.check(false, format!("could not run the fixture server: {error}"));
        }
        step
    })
}

async fn hazard_inner(args: &DemoArgs, step: &mut Step) -> std::io::Result<()> {
    let mut child = fixture_command(&[])?
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().unwrap_or_default();
    let mut stdin = child.stdin.take().expect("piped");
    // Held open and never read: exactly what a stalled host does.
    let _stdout = child.stdout.take().expect("piped");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped")).lines();
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "large", "arguments": {"bytes": args.response}}});
    stdin.write_all(format!("{request}\n").as_bytes()).await?;
    let sent = Instant::now();
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(line)) = stderr.next_line().await {
            if line.contains("stdout backpressure observed") {
                return Some(line);
            }
        }
        None
    })
    .await;
    match seen {
        Ok(Some(line)) => step.check(
            true,
            format!(
                "server stderr, {} after the request: \"{line}\"",
                took(sent.elapsed())
            ),
        ),
        _ => step.check(
            false,
            "no \"stdout backpressure observed\" on the server's stderr",
        ),
    };
    let watch = Duration::from_secs(1);
    let finished = tokio::time::timeout(watch, async {
        while let Ok(Some(line)) = stderr.next_line().await {
            if line.contains(": wrote ") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    let alive = child.try_wait()?.is_none();
    let blocked_in = blocked_thread(pid);
    step.check(
        !finished && alive,
        if !finished && alive {
            format!(
                "{} later the write has not finished; the server (pid {pid}) is alive{}",
                took(watch),
                blocked_in
                    .map(|w| format!(", a thread waiting in {w}"))
                    .unwrap_or_default()
            )
        } else if finished {
            "the write finished although nobody read stdout".to_string()
        } else {
            "the server exited instead of blocking".to_string()
        },
    );
    child.kill().await?;
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    step.check(
        status.is_ok(),
        "the demo killed it: nothing else would have ended the wait",
    );
    Ok(())
}

/// The kernel function a thread of `pid` sleeps in, if one waits on a pipe
/// (Linux's `/proc`; elsewhere the server's own report says it).
fn blocked_thread(pid: u32) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    tasks.flatten().find_map(|task| {
        let wchan = std::fs::read_to_string(task.path().join("wchan")).ok()?;
        wchan
            .contains("pipe")
            .then(|| format!("{}()", wchan.trim()))
    })
}

fn session_config(limit: usize) -> SessionConfig {
    SessionConfig {
        framer: Config::default().with_max_frame_bytes(limit),
        ..SessionConfig::default()
    }
}

fn opts(secs: u64) -> CallOptions {
    CallOptions::timeout(Duration::from_secs(secs))
}

async fn start_session(limit: usize) -> Result<Session, String> {
    let command = fixture_command(&[]).map_err(|e| e.to_string())?;
    let session = Session::spawn(command, session_config(limit)).map_err(|e| e.to_string())?;
    session
        .call("initialize", json!({}), opts(10))
        .await
        .map_err(|e| format!("initialize failed: {e}"))?;
    Ok(session)
}

async fn echo_latency(session: &Session) -> Result<Duration, CallError> {
    let started = Instant::now();
    let params = json!({"name": "echo", "arguments": {"again": true}});
    session.call("tools/call", params, opts(5)).await?;
    Ok(started.elapsed())
}

async fn finish(
    session: Session,
    label: &str,
    metrics: &mut Vec<(String, SessionMetrics)>,
) -> ShutdownReport {
    let report = session.shutdown().await;
    metrics.push((label.to_string(), report.metrics.clone()));
    report
}

fn fix<'a>(
    args: &'a DemoArgs,
    metrics: &'a mut Vec<(String, SessionMetrics)>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Step> + 'a>> {
    Box::pin(async move {
        let mut step = Step::default();
        let response = args.response;
        let large = json!({"name": "large", "arguments": {"bytes": response}});
        // A limit above the response: the same response arrives whole.
        let high = (response * 2).max(Config::DEFAULT_MAX_FRAME_BYTES);
        match start_session(high).await {
            Ok(session) => {
                let started = Instant::now();
                let outcome = session.call("tools/call", large.clone(), opts(30)).await;
                match outcome {
                    Ok(answer) => step.check(
                        answer.wire_bytes == response,
                        format!(
                            "limit {}: the {} response arrived whole in {}",
                            human(high as u64),
                            human(answer.wire_bytes as u64),
                            took(started.elapsed())
                        ),
                    ),
                    Err(error) => {
                        step.check(false, format!("limit {}: {error}", human(high as u64)))
                    }
                };
                finish(session, "limit above", metrics).await;
            }
            Err(error) => {
                step.check(false, error);
            }
        }
        // A limit below it: exactly that request fails, the session goes on.
        let low = args.low_limit;
        match start_session(low).await {
            Ok(session) => {
                let started = Instant::now();
                let outcome = session.call("tools/call", large, opts(30)).await;
                let failed_in = started.elapsed();
                let rejected = matches!(outcome, Err(CallError::TooLarge { .. }));
                step.check(
                    rejected,
                    match &outcome {
                        Err(error @ CallError::TooLarge { .. }) => format!(
                            "limit {}: that request failed in {}: {error}",
                            human(low as u64),
                            took(failed_in)
                        ),
                        Ok(_) => format!("limit {}: the response was accepted", human(low as u64)),
                        Err(error) => {
                            format!("limit {}: wrong failure: {error}", human(low as u64))
                        }
                    },
                );
                let completed = tokio::time::timeout(Duration::from_secs(10), async {
                    while !session.stderr().kept_text().contains(": wrote ") {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                })
                .await
                .is_ok();
                match echo_latency(&session).await {
                    Ok(latency) => step.check(
                        completed,
                        if completed {
                            format!(
                                "the server's write completed (the reader discarded the rest); the same session answered the next request in {}",
                                took(latency)
                            )
                        } else {
                            "the server's write never completed".to_string()
                        },
                    ),
                    Err(error) => step.check(false, format!("the next request failed: {error}")),
                };
                finish(session, "limit below", metrics).await;
            }
            Err(error) => {
                step.check(false, error);
            }
        }
        step
    })
}

fn cancel<'a>(
    args: &'a DemoArgs,
    metrics: &'a mut Vec<(String, SessionMetrics)>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Step> + 'a>> {
    Box::pin(async move {
        let mut step = Step::default();
        let response = args.response;
        let limit = (response * 2).max(Config::DEFAULT_MAX_FRAME_BYTES);
        let session = match start_session(limit).await {
            Ok(session) => session,
            Err(error) => {
                step.check(false, error);
                return step;
            }
        };
        // Paced at 4 ms per 16 KiB piece: 8 MiB takes about two seconds.
        let piece_delay_ms = 4;
        let paced = Duration::from_millis(piece_delay_ms * (response as u64).div_ceil(16 << 10));
        let large = json!({"name": "large", "arguments": {"bytes": response, "piece_delay_ms": piece_delay_ms}});
        let before = session.metrics().stdout_bytes;
        let pending = match session.start("tools/call", large, opts(30)).await {
            Ok(pending) => pending,
            Err(error) => {
                step.check(false, format!("the request was not sent: {error}"));
                return step;
            }
        };
        let id = pending.id();
        let threshold = before + (256 << 10);
        let waited = tokio::time::timeout(Duration::from_secs(10), async {
            while session.metrics().stdout_bytes < threshold {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await;
        if waited.is_err() {
            step.check(false, "the response never started");
            finish(session, "cancel", metrics).await;
            return step;
        }
        let received = session.metrics().stdout_bytes - before;
        let cancelled_at = Instant::now();
        session.cancel(id, "the agent has seen enough");
        let outcome = pending.outcome().await;
        let freed = cancelled_at.elapsed();
        step.check(
            matches!(outcome, Err(CallError::Cancelled { .. })),
            format!(
                "cancelled after {} of the paced {} response arrived; the caller was freed in {}",
                human(received),
                human(response as u64),
                took(freed)
            ),
        );
        match echo_latency(&session).await {
            Ok(_) => {
                let after = cancelled_at.elapsed();
                step.check(
                    after < Duration::from_secs(1),
                    format!(
                        "a second request answered {} after the cancel (the paced write alone takes about {})",
                        took(after),
                        took(paced)
                    ),
                );
            }
            Err(error) => {
                step.check(false, format!("the second request failed: {error}"));
            }
        }
        let dropped = tokio::time::timeout(Duration::from_secs(10), async {
            while session.metrics().late_responses_dropped == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .is_ok();
        step.check(
            dropped,
            "the server finished the line it had begun; the reader drained it and dropped the late response",
        );
        finish(session, "cancel", metrics).await;
        step
    })
}

fn print_metrics(sessions: &[(String, SessionMetrics)]) {
    type Show = fn(&SessionMetrics) -> String;
    let rows: [(&str, Show); 8] = [
        ("stdout read", |m| human(m.stdout_bytes)),
        ("frames", |m| m.frames.to_string()),
        ("largest frame", |m| human(m.largest_frame_bytes)),
        ("oversize frames", |m| m.oversize_frames.to_string()),
        ("requests sent", |m| m.requests_sent.to_string()),
        ("cancellations sent", |m| m.cancellations_sent.to_string()),
        ("late responses dropped", |m| {
            m.late_responses_dropped.to_string()
        }),
        ("server stderr", |m| human(m.stderr_bytes)),
    ];
    let width = 14;
    let mut header = format!("   {:<24}", "");
    for (label, _) in sessions {
        header.push_str(&format!("{label:>width$}"));
    }
    println!("{}", header.trim_end());
    for (name, value) in rows {
        let mut line = format!("   {name:<24}");
        for (_, metrics) in sessions {
            line.push_str(&format!("{:>width$}", value(metrics)));
        }
        println!("{line}");
    }
}
