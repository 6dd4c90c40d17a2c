//! `FramerCodec` against `LinesCodec`, both inside a real `FramedRead` over
//! the same generated data in the same run.
//!
//! `cargo bench -p drainpipe-framer --features tokio-util --bench codec`
//!
//! The reader hands out at most 64 KiB per read, as a pipe does. Workloads
//! (see `drainpipe_framer::testing::workload`): *large*, 4 responses of
//! 8 MiB with escapes and multibyte text; *small*, 200k messages of
//! 120–310 bytes.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use drainpipe_framer::Config;
use drainpipe_framer::codec::{FramerCodec, FramerEvent};
use drainpipe_framer::testing::workload;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_stream::StreamExt;
use tokio_util::codec::{FramedRead, LinesCodec};

const LIMIT: usize = 16 << 20;
const READ: usize = 64 << 10;

/// An in-memory reader that returns at most `READ` bytes per read.
struct Chunked<'a>(&'a [u8]);

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self.0.len().min(buf.remaining()).min(READ);
        buf.put_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Poll::Ready(Ok(()))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

async fn lines_codec(data: &[u8]) -> usize {
    let mut framed = FramedRead::new(Chunked(data), LinesCodec::new_with_max_length(LIMIT));
    let mut frames = 0;
    while let Some(line) = framed.next().await {
        std::hint::black_box(line.expect("valid lines"));
        frames += 1;
    }
    frames
}

async fn framer_codec(data: &[u8], config: Config) -> usize {
    let mut framed = FramedRead::new(Chunked(data), FramerCodec::new(config));
    let mut frames = 0;
    while let Some(event) = framed.next().await {
        if let FramerEvent::Frame(message) = event.expect("no IO error") {
            std::hint::black_box(message);
            frames += 1;
        }
    }
    frames
}

fn bench_workload(c: &mut Criterion, name: &str, data: &[u8]) {
    let rt = runtime();
    let frames = memchr::memchr_iter(b'\n', data).count();
    let strict = Config::default().with_max_frame_bytes(LIMIT);
    let framing_only = strict.with_json_validation(false);
    assert_eq!(rt.block_on(lines_codec(data)), frames);
    assert_eq!(rt.block_on(framer_codec(data, strict)), frames);
    assert_eq!(rt.block_on(framer_codec(data, framing_only)), frames);
    let mut group = c.benchmark_group(format!("framed_read_{name}"));
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("lines_codec", READ), |b| {
        b.iter(|| rt.block_on(lines_codec(data)))
    });
    group.bench_function(BenchmarkId::new("framer_codec_strict_json", READ), |b| {
        b.iter(|| rt.block_on(framer_codec(data, strict)))
    });
    group.bench_function(BenchmarkId::new("framer_codec_frame_utf8", READ), |b| {
        b.iter(|| rt.block_on(framer_codec(data, framing_only)))
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    bench_workload(c, "large", &workload::large(4, 8 << 20, 1));
    bench_workload(c, "small", &workload::small(200_000, 2));
}

criterion_group!(codec, benches);
criterion_main!(codec);
