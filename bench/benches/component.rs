//! The framer component against the native framer, same data, same run:
//! throughput on the *large* and *small* workloads (64 KiB chunks), with
//! strict validation and framing only, through each way out of the guest
//! (packed events decoded to borrowed events, typed batches, owned events);
//! and what it costs to get a session: cold compile, cached load,
//! instantiation. For scale, the same run measures the OS pipe: a child
//! process writes the *large* workload into a real pipe and this process
//! drains it, alone and while framing it natively or in the component.
//!
//! `cargo bench -p drainpipe-bench --bench component`

use std::hint::black_box;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group};
use drainpipe_framer::owned::OwnedEvent;
use drainpipe_framer::testing::workload;
use drainpipe_framer::{Config, Event, Framer};
use drainpipe_host::backend::{FramerBackend, NativeFramer};
use drainpipe_host::component::{
    COMPONENT_WASM, ComponentFramer, GuestLimits, Sandbox, SandboxOptions,
};
use wasmtime::component::Component;

const CHUNK: usize = 64 * 1024;

fn large() -> Vec<u8> {
    workload::large(4, 8 << 20, 1)
}

fn workloads() -> Vec<(&'static str, Vec<u8>)> {
    vec![("large", large()), ("small", workload::small(1_000_000, 2))]
}

/// Set in the child that writes into the pipe: how many times to write the
/// *large* workload.
const WRITER_ENV: &str = "DRAINPIPE_BENCH_PIPE_WRITES";

/// The two modes a host runs the framer in: strict JSON validation with the
/// envelope peek (the default), and framing only (byte limit + UTF-8).
const MODES: [(&str, bool); 2] = [("strict", true), ("framing", false)];

fn config() -> Config {
    Config::default().with_max_frame_bytes(16 << 20)
}

fn native_callback(framer: &mut Framer, data: &[u8]) -> u64 {
    let mut frames = 0u64;
    for chunk in data.chunks(CHUNK) {
        framer.push(chunk, |event| {
            if let Event::Frame(f) = event {
                frames += f.bytes.len() as u64;
            }
        });
    }
    framer.finish(|_| {});
    frames
}

fn through_backend(
    backend: &mut dyn FramerBackend,
    data: &[u8],
    events: &mut Vec<OwnedEvent>,
) -> usize {
    let mut n = 0;
    for chunk in data.chunks(CHUNK) {
        events.clear();
        backend.push(chunk, events).unwrap();
        n += events.len();
    }
    backend.finish(events).unwrap();
    n
}

fn component_callback(framer: &mut ComponentFramer, data: &[u8]) -> u64 {
    let mut frames = 0u64;
    for chunk in data.chunks(CHUNK) {
        framer
            .push_events(chunk, |event| {
                if let Event::Frame(f) = event {
                    frames += f.bytes.len() as u64;
                }
            })
            .unwrap();
    }
    framer.finish_events(|_| {}).unwrap();
    frames
}

fn component_typed(framer: &mut ComponentFramer, data: &[u8]) -> usize {
    let mut n = 0;
    for chunk in data.chunks(CHUNK) {
        n += framer.push_batch(chunk).unwrap().events.len();
    }
    n + framer.finish_batch().unwrap().events.len()
}

fn throughput(c: &mut Criterion) {
    let sandbox = Sandbox::shared().unwrap();
    let unchecked = Sandbox::new(&SandboxOptions {
        call_deadlines: false,
        ..SandboxOptions::default()
    })
    .unwrap();
    let limits = GuestLimits::for_config(&config(), CHUNK);
    for (name, data) in workloads() {
        for (mode, validate) in MODES {
            let config = config().with_json_validation(validate);
            let mut group = c.benchmark_group(format!("throughput/{name}/{mode}"));
            group.throughput(Throughput::Bytes(data.len() as u64));
            group.sample_size(10);
            group.measurement_time(Duration::from_secs(6));
            let mut native = Framer::new(config);
            group.bench_function("native, borrowed events", |b| {
                b.iter(|| native_callback(&mut native, black_box(&data)))
            });
            let mut guest = sandbox.framer(config, limits).unwrap();
            group.bench_function("component, borrowed events (packed)", |b| {
                b.iter(|| component_callback(&mut guest, black_box(&data)))
            });
            let mut fast = unchecked.framer(config, limits).unwrap();
            group.bench_function("component without call deadlines, borrowed events", |b| {
                b.iter(|| component_callback(&mut fast, black_box(&data)))
            });
            group.bench_function("component, typed batches", |b| {
                b.iter(|| component_typed(&mut guest, black_box(&data)))
            });
            let mut events = Vec::new();
            let mut native = NativeFramer::new(config);
            group.bench_function("native, owned events", |b| {
                b.iter(|| through_backend(&mut native, black_box(&data), &mut events))
            });
            group.bench_function("component, owned events", |b| {
                b.iter(|| through_backend(&mut guest, black_box(&data), &mut events))
            });
            group.finish();
        }
    }
}

/// The child's side: generate the data, say so with one byte on stderr,
/// then write it `writes` times to stdout (a pipe) and exit.
fn pipe_writer(writes: u64) {
    let data = large();
    let mut out = std::fs::File::from(
        std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .expect("stdout is open"),
    );
    std::io::stderr().write_all(b"r").expect("stderr is open");
    for _ in 0..writes {
        out.write_all(&data).expect("the reader drains the pipe");
    }
}

/// Spawns the writer for `writes` copies, waits until it is ready, then
/// times reading everything in 64 KiB reads, passing each read to `each`.
fn drain_pipe(writes: u64, mut each: impl FnMut(&[u8])) -> Duration {
    let mut child = Command::new(std::env::current_exe().expect("the bench binary"))
        .env(WRITER_ENV, writes.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the writer starts");
    let mut ready = [0u8; 1];
    child
        .stderr
        .take()
        .unwrap()
        .read_exact(&mut ready)
        .expect("the writer is ready");
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = vec![0u8; CHUNK];
    let started = Instant::now();
    loop {
        let n = stdout.read(&mut buf).expect("reading the pipe");
        if n == 0 {
            break;
        }
        each(&buf[..n]);
    }
    let elapsed = started.elapsed();
    assert!(child.wait().unwrap().success(), "the writer failed");
    elapsed
}

fn pipe(c: &mut Criterion) {
    let bytes = large().len() as u64;
    let sandbox = Sandbox::shared().unwrap();
    let limits = GuestLimits::for_config(&config(), CHUNK);
    let mut group = c.benchmark_group("pipe/large");
    group.throughput(Throughput::Bytes(bytes));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(6));
    group.bench_function("OS pipe, drained", |b| {
        b.iter_custom(|iters| {
            drain_pipe(iters, |chunk| {
                black_box(chunk);
            })
        })
    });
    for (mode, validate) in MODES {
        let config = config().with_json_validation(validate);
        let mut native = Framer::new(config);
        group.bench_function(format!("OS pipe + native framer, {mode}"), |b| {
            b.iter_custom(|iters| {
                drain_pipe(iters, |chunk| {
                    native.push(chunk, |e| {
                        black_box(e);
                    })
                })
            })
        });
        let mut guest = sandbox.framer(config, limits).unwrap();
        group.bench_function(format!("OS pipe + component, {mode}"), |b| {
            b.iter_custom(|iters| {
                drain_pipe(iters, |chunk| {
                    guest
                        .push_events(chunk, |e| {
                            black_box(e);
                        })
                        .unwrap()
                })
            })
        });
    }
    group.finish();
}

fn loading(c: &mut Criterion) {
    let mut group = c.benchmark_group("load");
    group.sample_size(20);
    let engine = wasmtime::Engine::new(&Sandbox::engine_config()).unwrap();
    group.bench_function("Component::new, cold", |b| {
        b.iter(|| Component::new(&engine, COMPONENT_WASM).unwrap())
    });
    let component = Component::new(&engine, COMPONENT_WASM).unwrap();
    group.bench_function("Component::serialize", |b| {
        b.iter(|| component.serialize().unwrap())
    });

    // The path a host takes at start-up: a fresh engine whose cache already
    // holds the compiled code (read, checked and mapped; no compilation).
    let dir = std::env::temp_dir().join(format!("drainpipe-bench-cache-{}", std::process::id()));
    let options = SandboxOptions {
        cache_dir: Some(dir.clone()),
        ..SandboxOptions::default()
    };
    drop(Sandbox::new(&options).unwrap());
    group.bench_function("Sandbox::new, cached code", |b| {
        b.iter(|| {
            let sandbox = Sandbox::new(&options).unwrap();
            assert_eq!(sandbox.cache_hits(), 1);
            sandbox
        })
    });
    group.bench_function("Sandbox::new, no cache", |b| {
        b.iter(|| Sandbox::new(&SandboxOptions::default()).unwrap())
    });
    let _ = std::fs::remove_dir_all(&dir);

    let sandbox = Sandbox::shared().unwrap();
    let config = Config::default();
    let limits = GuestLimits::for_config(&config, CHUNK);
    group.bench_function(
        "session (instantiate_pre + constructor), default limits",
        |b| b.iter(|| sandbox.framer(config, limits).unwrap()),
    );
    group.finish();
}

criterion_group!(benches, throughput, pipe, loading);

fn main() {
    if let Some(writes) = std::env::var_os(WRITER_ENV) {
        pipe_writer(
            writes
                .to_str()
                .and_then(|w| w.parse().ok())
                .expect("a count"),
        );
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
