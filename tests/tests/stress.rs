//! Guarantee: every request ends in exactly one outcome, under load, with
//! random cancellations, over one session — nothing is lost, nothing
//! reaches the wrong caller, and the session stays usable.
//!
//! CI runs the criterion's 10,000 requests (about a second); the heavy
//! variant, `DRAINPIPE_STRESS_FULL=1`, runs 100,000.
//! `DRAINPIPE_STRESS_SEED=N` replays a run (the seed is printed).

use std::sync::Arc;
use std::time::{Duration, Instant};

use drainpipe_host::session::{CallError, SessionConfig};
use drainpipe_release::*;
use serde_json::json;
use tokio::sync::Semaphore;

/// What the test did to one request, and so which outcomes are allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Awaited to the end: must answer, with its own payload.
    Answer,
    /// `Session::cancel` after a random delay: cancelled, or answered if
    /// the answer won the race.
    Cancel,
    /// A timeout shorter than the work: timed out, or answered.
    Timeout,
    /// The caller drops the future: the request is abandoned.
    Abandon,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_with_random_cancellations_each_end_once() {
    let total: u64 = if stress_full() { 100_000 } else { 10_000 };
    let seed = Rng::seed_from_env();
    eprintln!("stress: {total} requests, seed {seed} (DRAINPIPE_STRESS_SEED={seed} replays it)");
    let session = start_fixture(
        &[],
        SessionConfig {
            dispatcher_capacity: 1 << 16,
            ..SessionConfig::default()
        },
    )
    .await;
    // Progress notifications of `slow` are drained so the dispatcher never fills.
    let drain = {
        let session = session.clone();
        tokio::spawn(async move { while session.next_incoming().await.is_some() {} })
    };
    let in_flight = Arc::new(Semaphore::new(48));
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..total {
        let fate = match rng.below(10) {
            0..=5 => Fate::Answer,
            6 | 7 => Fate::Cancel,
            8 => Fate::Timeout,
            _ => Fate::Abandon,
        };
        let slow = rng.below(4) == 0;
        let delay = Duration::from_micros(rng.below(3000));
        let permit = in_flight.clone().acquire_owned().await.expect("semaphore");
        let session = session.clone();
        tasks.spawn(async move {
            let _permit = permit;
            let (name, args) = if slow {
                ("slow", json!({"steps": 2, "step_ms": 2}))
            } else {
                ("echo", json!({"n": n}))
            };
            let options = match fate {
                Fate::Timeout => opts_ms(3),
                _ => opts(30),
            };
            let pending = start_tool(&session, name, args, options).await;
            let id = pending.id();
            let outcome = match fate {
                Fate::Answer | Fate::Timeout => pending.outcome().await,
                Fate::Cancel => {
                    let waiter = tokio::spawn(pending.outcome());
                    tokio::time::sleep(delay).await;
                    session.cancel(id, "stress");
                    waiter.await.expect("waiter")
                }
                Fate::Abandon => {
                    let _ = tokio::time::timeout(delay, pending.outcome()).await;
                    return (n, fate, slow, None);
                }
            };
            (n, fate, slow, Some(outcome))
        });
    }
    let mut ended = vec![0u32; total as usize];
    let (mut answered, mut cancelled, mut timed_out, mut abandoned) = (0, 0, 0, 0);
    let results = within(120, "every stress request ended", async {
        let mut all = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            all.push(joined.expect("a request task panicked"));
        }
        all
    })
    .await;
    for (n, fate, slow, outcome) in results {
        ended[n as usize] += 1;
        match (fate, outcome) {
            (Fate::Abandon, None) => abandoned += 1,
            (_, Some(Ok(response))) => {
                answered += 1;
                if slow {
                    assert_eq!(first_text(&response), "done after 2 steps", "request {n}");
                } else {
                    assert_eq!(
                        response.result["structuredContent"],
                        json!({"n": n}),
                        "request {n} got its own answer"
                    );
                }
            }
            (Fate::Cancel, Some(Err(CallError::Cancelled { .. }))) => cancelled += 1,
            (Fate::Timeout, Some(Err(CallError::TimedOut { .. }))) => timed_out += 1,
            (fate, outcome) => panic!("request {n} ({fate:?}) ended wrongly: {outcome:?}"),
        }
    }
    assert!(
        ended.iter().all(|&count| count == 1),
        "every request ended exactly once"
    );
    let elapsed = started.elapsed();
    let metrics = session.metrics();
    eprintln!(
        "stress: {total} requests in {elapsed:?}: {answered} answered, {cancelled} cancelled, {timed_out} timed out, {abandoned} abandoned; {metrics:?}"
    );
    assert_eq!(
        metrics.requests_sent,
        total + 1,
        "each request was written once (+ initialize)"
    );
    assert!(
        cancelled > 0 && answered > 0,
        "the mix exercised both paths"
    );
    assert_eq!(
        metrics.malformed_frames + metrics.oversize_frames + metrics.not_protocol_lines,
        0
    );
    assert!(
        metrics.late_responses_dropped <= metrics.cancellations_sent,
        "only cancelled or abandoned requests have late responses: {metrics:?}"
    );
    assert!(session.lost().is_none());
    fixture_echo_quickly(&session, "after the stress run").await;
    shutdown_clean(&session).await;
    drain.abort();
}
