//! The framer beside its peers, on the same generated data in the same run.
//!
//! `cargo bench -p drainpipe-framer --bench framing`
//!
//! Workloads (see `drainpipe_framer::testing::workload`):
//! - *large*: 4 responses of 8 MiB with quotes, backslashes and multibyte
//!   text, pushed in 64 KiB chunks;
//! - *small*: 1M messages of 120–310 bytes, pushed in 4 KiB and 64 KiB chunks.
//!
//! Peers: tokio-util `LinesCodec` (with a max length, fed the same chunks),
//! `BufRead::read_until`, `serde_json` parsing each line into `IgnoredAny`,
//! and a bare `memchr` newline scan (the floor for any framer).

use std::hint::black_box;
use std::io::BufRead;

use bytes::BytesMut;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use drainpipe_framer::testing::workload;
use drainpipe_framer::{Config, Event, Framer};
use tokio_util::codec::{Decoder, LinesCodec};

const LIMIT: usize = 16 << 20;

fn framer_count(data: &[u8], chunk: usize, config: Config) -> usize {
    let mut framer = Framer::new(config);
    let mut frames = 0usize;
    for piece in data.chunks(chunk) {
        framer.push(piece, |e| {
            if let Event::Frame(f) = e {
                frames += black_box(f.bytes.len()) & 1 | 1;
            }
        });
    }
    framer.finish(|_| {});
    frames
}

fn lines_codec_count(data: &[u8], chunk: usize) -> usize {
    let mut codec = LinesCodec::new_with_max_length(LIMIT);
    let mut buf = BytesMut::with_capacity(chunk * 2);
    let mut frames = 0;
    for piece in data.chunks(chunk) {
        buf.extend_from_slice(piece);
        while let Some(line) = codec.decode(&mut buf).expect("workload lines are valid") {
            black_box(&line);
            frames += 1;
        }
    }
    frames
}

fn read_until_count(data: &[u8], chunk: usize) -> usize {
    let mut reader = std::io::BufReader::with_capacity(chunk, data);
    let mut line = Vec::new();
    let mut frames = 0;
    while reader
        .read_until(b'\n', &mut line)
        .expect("reading a slice")
        > 0
    {
        black_box(&line);
        frames += 1;
        line.clear();
    }
    frames
}

fn serde_count(data: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', data)
        .scan(0, |start, end| {
            let line = &data[*start..end];
            *start = end + 1;
            Some(serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok())
        })
        .filter(|ok| *ok)
        .count()
}

fn bench_workload(c: &mut Criterion, name: &str, data: &[u8], chunks: &[usize]) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(10);
    let frames = memchr::memchr_iter(b'\n', data).count();
    let framing_only = Config::default()
        .with_max_frame_bytes(LIMIT)
        .with_json_validation(false);
    let strict = Config::default().with_max_frame_bytes(LIMIT);
    for &chunk in chunks {
        assert_eq!(framer_count(data, chunk, framing_only), frames);
        assert_eq!(framer_count(data, chunk, strict), frames);
        group.bench_with_input(
            BenchmarkId::new("drainpipe_frame_utf8", chunk),
            &chunk,
            |b, &chunk| b.iter(|| framer_count(data, chunk, framing_only)),
        );
        group.bench_with_input(
            BenchmarkId::new("drainpipe_strict_json", chunk),
            &chunk,
            |b, &chunk| b.iter(|| framer_count(data, chunk, strict)),
        );
        group.bench_with_input(
            BenchmarkId::new("lines_codec", chunk),
            &chunk,
            |b, &chunk| b.iter(|| lines_codec_count(data, chunk)),
        );
        group.bench_with_input(
            BenchmarkId::new("read_until", chunk),
            &chunk,
            |b, &chunk| b.iter(|| read_until_count(data, chunk)),
        );
    }
    assert_eq!(serde_count(data), frames);
    group.bench_function("serde_json_ignored_any", |b| b.iter(|| serde_count(data)));
    group.bench_function("memchr_newlines", |b| {
        b.iter(|| memchr::memchr_iter(b'\n', black_box(data)).count())
    });
    group.finish();
}

/// The large workload over a 1 MiB limit: every line is rejected and
/// discarded. With validation on, the discarded part still goes through the
/// validator (to find an `id` written after the limit); framing-only just
/// looks for the newline.
fn bench_over_the_limit(c: &mut Criterion, data: &[u8]) {
    let mut group = c.benchmark_group("large_over_the_limit");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(10);
    let over = |validate: bool| {
        Config::default()
            .with_max_frame_bytes(1 << 20)
            .with_json_validation(validate)
    };
    let discarded = |config: Config| {
        let mut framer = Framer::new(config);
        let mut ids = 0usize;
        for piece in data.chunks(64 << 10) {
            framer.push(piece, |e| {
                if let Event::Discarded { envelope, .. } = e {
                    ids += usize::from(black_box(envelope.id).is_some());
                }
            });
        }
        ids
    };
    assert_eq!(
        discarded(over(true)),
        memchr::memchr_iter(b'\n', data).count()
    );
    group.bench_function("drainpipe_strict_json_discarding", |b| {
        b.iter(|| discarded(over(true)))
    });
    group.bench_function("drainpipe_frame_utf8_discarding", |b| {
        b.iter(|| discarded(over(false)))
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    let large = workload::large(4, 8 << 20, 1);
    bench_workload(c, "large", &large, &[64 << 10]);
    bench_over_the_limit(c, &large);
    let small = workload::small(1_000_000, 2);
    bench_workload(c, "small", &small, &[4 << 10, 64 << 10]);
}

criterion_group!(framing, benches);
criterion_main!(framing);
