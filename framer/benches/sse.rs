//! The event-stream framer beside a peer, on the same generated data in the
//! same run.
//!
//! `cargo bench -p drainpipe-framer --bench sse`
//!
//! Workloads: the line framer's (see `drainpipe_framer::testing::workload`)
//! with each message sent as a Streamable HTTP server sends it (`event:
//! message`, `id: <n>`, `data: <message>`, a blank line), pushed in 16 KiB
//! chunks:
//! - *small*: 200k events of 140–330 bytes;
//! - *large*: 4 events of ~8 MiB.
//!
//! Peer: `eventsource-stream` (fed the same chunks as a stream of byte
//! slices, polled on a current-thread tokio runtime), alone and with each
//! event's data then parsed by `serde_json` into `IgnoredAny`, which is the
//! least a client must do before it can route a message: our framer does
//! both in one pass, with a byte limit per event. Beside them `SseRelay`,
//! what `proxy --url` reads answers with: the same parsing and validation,
//! each event's data handed on in pieces (here: its bytes summed) instead
//! of kept.

use std::convert::Infallible;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use drainpipe_framer::sse::{
    MAX_EVENT_ID_BYTES, RelayEvent, SseConfig, SseEvent, SseFramer, SseRelay,
};
use drainpipe_framer::testing::workload;
use eventsource_stream::Eventsource;
use tokio_stream::StreamExt;

const CHUNK: usize = 16 << 10;

/// Each line of `messages` as one event.
fn events(messages: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(messages.len() * 11 / 10);
    for (n, line) in messages
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        body.extend_from_slice(format!("event: message\nid: {n}\ndata: ").as_bytes());
        body.extend_from_slice(line);
        body.extend_from_slice(b"\n\n");
    }
    body
}

fn drainpipe_count(body: &[u8]) -> usize {
    let mut framer = SseFramer::new(SseConfig::default().with_max_event_bytes(16 << 20));
    let mut messages = 0usize;
    for piece in body.chunks(CHUNK) {
        framer.push(piece, |e| {
            if let SseEvent::Message(m) = e {
                black_box(m.envelope.id);
                messages += 1;
            }
        });
    }
    framer.finish(|_| {});
    messages
}

fn relay_count(body: &[u8]) -> usize {
    let mut relay = SseRelay::new(
        drainpipe_framer::Config::DEFAULT_MAX_DEPTH,
        MAX_EVENT_ID_BYTES,
    );
    let mut messages = 0usize;
    let mut bytes = 0usize;
    for piece in body.chunks(CHUNK) {
        relay.push(piece, |e| match e {
            RelayEvent::Data(data) => bytes += data.len(),
            RelayEvent::End(end) if end.has_data && end.invalid.is_none() => {
                black_box(end.envelope.id);
                messages += 1;
            }
            _ => {}
        });
    }
    relay.finish(|_| {});
    black_box(bytes);
    messages
}

fn peer_count(runtime: &tokio::runtime::Runtime, body: &[u8], parse: bool) -> usize {
    runtime.block_on(async {
        let chunks = tokio_stream::iter(body.chunks(CHUNK).map(Ok::<_, Infallible>));
        let mut stream = chunks.eventsource();
        let mut messages = 0usize;
        while let Some(event) = stream.next().await {
            let event = event.expect("workload events are valid");
            if parse {
                let parsed = serde_json::from_str::<serde::de::IgnoredAny>(&event.data);
                messages += parsed.is_ok() as usize;
            } else {
                messages += black_box(event.data.len()) & 1 | 1;
            }
        }
        messages
    })
}

fn bench_workload(c: &mut Criterion, name: &str, body: &[u8], count: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    assert_eq!(drainpipe_count(body), count);
    assert_eq!(relay_count(body), count);
    assert_eq!(peer_count(&runtime, body, false), count);
    assert_eq!(peer_count(&runtime, body, true), count);
    let mut group = c.benchmark_group(format!("sse_{name}"));
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.sample_size(10);
    group.bench_function("drainpipe_strict_json", |b| {
        b.iter(|| drainpipe_count(body))
    });
    group.bench_function("drainpipe_relay", |b| b.iter(|| relay_count(body)));
    group.bench_function("eventsource_stream", |b| {
        b.iter(|| peer_count(&runtime, body, false))
    });
    group.bench_function("eventsource_stream_serde_json", |b| {
        b.iter(|| peer_count(&runtime, body, true))
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    let small = events(&workload::small(200_000, 2));
    bench_workload(c, "small", &small, 200_000);
    let large = events(&workload::large(4, 8 << 20, 1));
    bench_workload(c, "large", &large, 4);
}

criterion_group!(sse, benches);
criterion_main!(sse);
