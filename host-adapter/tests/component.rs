//! The framer component against `wit/` and against the native framer:
//! - it imports nothing and exports exactly the interface in `wit/`;
//! - it gives the same events and counters as the native framer on the
//!   adversarial corpus and the benchmark workloads, under many chunkings;
//! - a failing guest (memory cap, deadline) ends only its own session.

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use drainpipe_framer::owned::OwnedEvent;
use drainpipe_framer::testing::{Rng, workload};
use drainpipe_framer::{Config, Event, Id, Stats};
use drainpipe_host::backend::{BackendError, FramerBackend, NativeFramer};
use drainpipe_host::component::{
    COMPONENT_WASM, ComponentFramer, DEFAULT_MAX_CHUNK_BYTES, FULL_COMPONENT_WASM, GuestLimits,
    Sandbox, SandboxOptions, owned_events, resolve, wit,
};
use wit_parser::{Resolve, Type, TypeDefKind, WorldItem};

/// Runs `f` on its own thread and fails loudly if it takes longer than
/// `limit`: a hung guest must fail the test, not hang the suite.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("test did not finish within {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("test thread panicked"),
    }
}

fn sandbox() -> &'static Sandbox {
    Sandbox::shared().expect("the framer component loads")
}

fn component(config: Config, max_chunk: usize) -> ComponentFramer {
    sandbox()
        .framer(config, GuestLimits::for_config(&config, max_chunk))
        .expect("a session starts")
}

/// Pushes `stream` in the given chunk lengths (cycled), then finishes.
fn run(
    backend: &mut dyn FramerBackend,
    stream: &[u8],
    lengths: &[usize],
) -> (Vec<OwnedEvent>, Stats) {
    let mut events = Vec::new();
    let mut rest = stream;
    let mut step = 0;
    while !rest.is_empty() {
        let len = lengths[step % lengths.len()].clamp(1, rest.len());
        step += 1;
        let (chunk, tail) = rest.split_at(len);
        backend.push(chunk, &mut events).expect("push");
        rest = tail;
    }
    backend.finish(&mut events).expect("finish");
    (events, backend.stats().expect("stats"))
}

/// The component through its typed `push`/`finish` (the `FramerBackend`
/// impl of `ComponentFramer` takes the packed path).
struct TypedBatches(ComponentFramer);

impl FramerBackend for TypedBatches {
    fn push(
        &mut self,
        chunk: &[u8],
        out: &mut Vec<OwnedEvent>,
    ) -> Result<(), drainpipe_host::backend::BackendError> {
        let batch = self.0.push_batch(chunk)?;
        out.extend(owned_events(&batch, chunk)?);
        Ok(())
    }

    fn finish(
        &mut self,
        out: &mut Vec<OwnedEvent>,
    ) -> Result<(), drainpipe_host::backend::BackendError> {
        let batch = self.0.finish_batch()?;
        out.extend(owned_events(&batch, &[])?);
        Ok(())
    }

    fn stats(&mut self) -> Result<Stats, drainpipe_host::backend::BackendError> {
        self.0.stats()
    }

    fn name(&self) -> &'static str {
        "component, typed batches"
    }
}

/// Native and component (packed and typed) agree on every event and counter.
fn assert_parity(config: Config, stream: &[u8], lengths: &[usize], what: &str) {
    let max_chunk = lengths
        .iter()
        .copied()
        .max()
        .unwrap_or(1)
        .min(stream.len().max(1));
    let native = run(&mut NativeFramer::new(config), stream, lengths);
    let packed: &mut dyn FramerBackend = &mut component(config, max_chunk);
    let typed: &mut dyn FramerBackend = &mut TypedBatches(component(config, max_chunk));
    for guest in [packed, typed] {
        let name = guest.name();
        let guest = run(guest, stream, lengths);
        assert_eq!(
            native.0.len(),
            guest.0.len(),
            "{what}, {name}: event count, chunks {lengths:?}"
        );
        for (i, (n, g)) in native.0.iter().zip(&guest.0).enumerate() {
            assert_eq!(n, g, "{what}, {name}: event {i}, chunks {lengths:?}");
        }
        assert_eq!(
            native.1, guest.1,
            "{what}, {name}: stats, chunks {lengths:?}"
        );
    }
}

fn chunkings(stream_len: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = Rng::new(seed);
    let random: Vec<usize> = (0..64).map(|_| 1 + rng.below(97)).collect();
    vec![
        vec![1],
        vec![2],
        vec![3],
        vec![7],
        vec![64],
        vec![4096],
        vec![1, 5, 2, 13],
        random,
        vec![stream_len.max(1)],
    ]
}

fn configs() -> [(Config, &'static str); 4] {
    [
        (Config::default().with_max_frame_bytes(64), "limit 64"),
        (Config::default(), "defaults"),
        (
            Config::default()
                .with_max_frame_bytes(64)
                .with_json_validation(false),
            "limit 64, no validation",
        ),
        (Config::default().with_max_depth(16), "depth 16"),
    ]
}

#[test]
fn component_fits_the_size_goal() {
    assert!(
        COMPONENT_WASM.len() <= 64 * 1024,
        "component is {} bytes, goal 64 KiB",
        COMPONENT_WASM.len()
    );
}

#[test]
fn components_import_nothing() {
    for (name, wasm) in [
        ("framer", COMPONENT_WASM),
        ("drainpipe", FULL_COMPONENT_WASM),
    ] {
        let decoded = wit_component::decode(wasm).expect("the component decodes");
        let wit_component::DecodedWasm::Component(resolve, world) = decoded else {
            panic!("{name}: expected a component, found a WIT package");
        };
        let imports: Vec<String> = resolve.worlds[world]
            .imports
            .keys()
            .map(|k| resolve.name_world_key(k))
            .collect();
        assert!(
            imports.is_empty(),
            "{name} must import nothing, imports {imports:?}"
        );

        // And wasmtime agrees: it instantiates with a bare linker.
        let engine = wasmtime::Engine::new(&Sandbox::engine_config()).unwrap();
        let component = wasmtime::component::Component::new(&engine, wasm).unwrap();
        assert_eq!(
            component.component_type().imports(&engine).count(),
            0,
            "{name}"
        );
        let mut store = wasmtime::Store::new(&engine, ());
        store.set_epoch_deadline(u64::MAX);
        wasmtime::component::Linker::<()>::new(&engine)
            .instantiate(&mut store, &component)
            .unwrap_or_else(|e| panic!("{name} instantiates with a bare linker: {e:#}"));
    }
}

/// A structural description of a WIT type, independent of ids and docs, so
/// two `Resolve`s can be compared.
fn describe(resolve: &Resolve, ty: &Type) -> String {
    let Type::Id(id) = ty else {
        return format!("{ty:?}");
    };
    let def = &resolve.types[*id];
    let name = def.name.clone().unwrap_or_default();
    let body = match &def.kind {
        TypeDefKind::Record(r) => {
            let fields: Vec<String> = r
                .fields
                .iter()
                .map(|f| format!("{}: {}", f.name, describe(resolve, &f.ty)))
                .collect();
            format!("record {{ {} }}", fields.join(", "))
        }
        TypeDefKind::Variant(v) => {
            let cases: Vec<String> = v
                .cases
                .iter()
                .map(|c| {
                    format!(
                        "{}({})",
                        c.name,
                        c.ty.as_ref()
                            .map(|t| describe(resolve, t))
                            .unwrap_or_default()
                    )
                })
                .collect();
            format!("variant {{ {} }}", cases.join(", "))
        }
        TypeDefKind::Enum(e) => {
            let cases: Vec<&str> = e.cases.iter().map(|c| c.name.as_str()).collect();
            format!("enum {{ {} }}", cases.join(", "))
        }
        TypeDefKind::Option(t) => format!("option<{}>", describe(resolve, t)),
        TypeDefKind::Result(r) => {
            let side =
                |t: &Option<Type>| t.as_ref().map(|t| describe(resolve, t)).unwrap_or_default();
            format!("result<{}, {}>", side(&r.ok), side(&r.err))
        }
        TypeDefKind::List(t) => format!("list<{}>", describe(resolve, t)),
        TypeDefKind::Type(t) => describe(resolve, t),
        TypeDefKind::Resource => "resource".to_string(),
        TypeDefKind::Handle(wit_parser::Handle::Own(r)) => {
            format!("own<{}>", describe(resolve, &Type::Id(*r)))
        }
        TypeDefKind::Handle(wit_parser::Handle::Borrow(r)) => {
            format!("borrow<{}>", describe(resolve, &Type::Id(*r)))
        }
        other => format!("{other:?}"),
    };
    format!("{name}={body}")
}

fn interface_shape(resolve: &Resolve, interface: wit_parser::InterfaceId) -> Vec<String> {
    let iface = &resolve.interfaces[interface];
    let mut shape: Vec<String> = iface
        .types
        .values()
        .map(|id| describe(resolve, &Type::Id(*id)))
        .collect();
    for f in iface.functions.values() {
        let params: Vec<String> = f
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, describe(resolve, &p.ty)))
            .collect();
        let result = f
            .result
            .as_ref()
            .map(|t| describe(resolve, t))
            .unwrap_or_default();
        shape.push(format!(
            "func {}({}) -> {result}",
            f.name,
            params.join(", ")
        ));
    }
    shape.sort();
    shape
}

fn exported_interfaces(
    resolve: &Resolve,
    world: wit_parser::WorldId,
) -> Vec<(String, wit_parser::InterfaceId)> {
    resolve.worlds[world]
        .exports
        .iter()
        .map(|(key, item)| match item {
            WorldItem::Interface { id, .. } => (resolve.name_world_key(key), *id),
            other => panic!("unexpected export {other:?}"),
        })
        .collect()
}

#[test]
fn exports_match_the_wit_package() {
    let mut source = Resolve::default();
    let wit_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("wit");
    let (package, _) = source.push_path(&wit_dir).expect("wit/ parses");
    for (world_name, wasm, interfaces) in [
        (
            "framer",
            COMPONENT_WASM,
            &["drainpipe:framer/framing@0.1.0"][..],
        ),
        (
            "drainpipe",
            FULL_COMPONENT_WASM,
            &[
                "drainpipe:framer/framing@0.1.0",
                "drainpipe:framer/budget@0.1.0",
                "drainpipe:framer/sse@0.1.0",
            ],
        ),
    ] {
        let expected_world = source
            .select_world(&[package], Some(world_name))
            .expect("world in wit/");
        let wit_component::DecodedWasm::Component(decoded, world) =
            wit_component::decode(wasm).unwrap()
        else {
            panic!("expected a component");
        };
        let exports = exported_interfaces(&decoded, world);
        let expected = exported_interfaces(&source, expected_world);
        let names = |list: &[(String, _)]| list.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&exports), names(&expected), "world {world_name}");
        assert_eq!(names(&exports), interfaces, "world {world_name}");
        for ((name, got), (_, want)) in exports.iter().zip(&expected) {
            assert_eq!(
                interface_shape(&decoded, *got),
                interface_shape(&source, *want),
                "interface {name}"
            );
        }
    }
}

#[test]
fn parity_on_the_adversarial_corpus() {
    within(Duration::from_secs(300), || {
        for (config, name) in configs() {
            for (i, stream) in workload::adversarial().iter().enumerate() {
                for lengths in chunkings(stream.len(), i as u64) {
                    assert_parity(
                        config,
                        stream,
                        &lengths,
                        &format!("adversarial #{i}, {name}"),
                    );
                }
            }
        }
    });
}

#[test]
fn parity_on_the_small_workload() {
    within(Duration::from_secs(300), || {
        let stream = workload::small(3_000, 7);
        for lengths in [
            vec![65536],
            vec![4096],
            vec![777],
            vec![1, 13, 200, 5],
            vec![stream.len()],
        ] {
            assert_parity(Config::default(), &stream, &lengths, "small");
        }
        // Limits that reject some of the messages.
        let strict = Config::default()
            .with_max_frame_bytes(200)
            .with_max_depth(3);
        for lengths in [vec![65536], vec![97], vec![3]] {
            assert_parity(strict, &stream, &lengths, "small, strict limits");
        }
    });
}

#[test]
fn parity_on_the_large_workload() {
    within(Duration::from_secs(300), || {
        let stream = workload::large(3, 512 * 1024, 11);
        let config = Config::default().with_max_frame_bytes(1 << 20);
        for lengths in [vec![65536], vec![4093], vec![1 << 20], vec![stream.len()]] {
            assert_parity(config, &stream, &lengths, "large");
        }
        // One frame over the limit, the others under it.
        let tight = Config::default().with_max_frame_bytes(520 * 1024);
        assert_parity(tight, &stream, &[65536], "large, tight limit");
    });
}

#[test]
fn frames_inside_a_chunk_are_spans_not_copies() {
    let mut framer = component(Config::default(), 1 << 16);
    let chunk = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nlog line\n{\"id\":2,";
    let batch = framer.push_batch(chunk).unwrap();
    assert_eq!(batch.events.len(), 2);
    let wit::Event::Frame(frame) = &batch.events[0] else {
        panic!("expected a frame, got {:?}", batch.events[0])
    };
    assert!(
        matches!(
            frame.bytes,
            wit::BytesRef::Chunk(wit::Span { start: 0, len: 36 })
        ),
        "{:?}",
        frame.bytes
    );
    assert_eq!(
        resolve(&frame.bytes, chunk, &batch.carried).unwrap(),
        &chunk[..36]
    );
    let wit::Event::NotProtocol(line) = &batch.events[1] else {
        panic!("expected a log line")
    };
    assert!(matches!(
        line.line,
        wit::BytesRef::Chunk(wit::Span { start: 37, len: 8 })
    ));
    let wit::Event::Frame(frame) = &batch.events[0] else {
        unreachable!()
    };
    let field = |at: &Option<wit::BytesRef>| {
        resolve(at.as_ref().unwrap(), chunk, &batch.carried)
            .unwrap()
            .to_vec()
    };
    assert_eq!(field(&frame.envelope.jsonrpc), b"2.0");
    let Some(wit::Id::Number(id)) = &frame.envelope.id else {
        panic!("numeric id expected")
    };
    assert_eq!(resolve(id, chunk, &batch.carried).unwrap(), b"1");
    // Nothing is copied beyond the envelope fields.
    assert!(batch.carried.len() <= 4, "carried {:?}", batch.carried);

    // The frame that spans two pushes is assembled by the guest and carried.
    let rest = b"\"result\":2}\n";
    let batch = framer.push_batch(rest).unwrap();
    let wit::Event::Frame(frame) = &batch.events[0] else {
        panic!("expected a frame")
    };
    assert!(matches!(frame.bytes, wit::BytesRef::Carried(_)));
    assert_eq!(
        resolve(&frame.bytes, rest, &batch.carried).unwrap(),
        b"{\"id\":2,\"result\":2}"
    );
}

#[test]
fn packed_events_borrow_the_chunk() {
    let mut framer = component(Config::default(), 1 << 16);
    let chunk = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nlog line\n{\"id\":2,";
    let batch = framer.push_packed(chunk).unwrap();
    assert_eq!(batch.words.len(), 2 * drainpipe_framer::packed::EVENT_WORDS);
    // No bytes come back: the frame, the log line and the envelope fields
    // are all spans of the chunk, and the host keeps the unfinished
    // `{"id":2,` itself.
    assert_eq!((batch.join, batch.keep), (0, 8));

    let mut framer = component(Config::default(), 1 << 16);
    let mut seen = Vec::new();
    framer
        .push_events(chunk, |event| match event {
            Event::Frame(frame) => {
                assert!(std::ptr::eq(frame.bytes, &chunk[..36]));
                assert_eq!(frame.chunk_start, Some(0));
                assert_eq!(frame.envelope.id, Some(Id::Number(b"1")));
                seen.push("frame");
            }
            Event::NotProtocol { line, .. } => {
                assert!(std::ptr::eq(line, &chunk[37..45]));
                seen.push("line");
            }
            other => panic!("{other:?}"),
        })
        .unwrap();
    // The frame that spans two pushes is assembled by the host (the held
    // line), not copied out of the guest.
    framer
        .push_events(b"\"result\":2}\n", |event| match event {
            Event::Frame(frame) => {
                assert_eq!(frame.bytes, b"{\"id\":2,\"result\":2}");
                assert_eq!(frame.chunk_start, None);
                seen.push("assembled");
            }
            other => panic!("{other:?}"),
        })
        .unwrap();
    assert_eq!(seen, ["frame", "line", "assembled"]);
}

#[test]
fn out_of_range_spans_are_refused() {
    let at = wit::BytesRef::Chunk(wit::Span {
        start: 3,
        len: u32::MAX,
    });
    assert_eq!(resolve(&at, b"abcdef", b""), None);
    let at = wit::BytesRef::Carried(wit::Span { start: 7, len: 0 });
    assert_eq!(resolve(&at, b"", b"abc"), None);
}

#[test]
fn worst_case_chunks_fit_the_default_caps() {
    within(Duration::from_secs(60), || {
        // The most events per byte: a line every two or three bytes.
        for line in [&b"a\n"[..], b"{}\n", b"[\n", b"{\"id\":1}\n", b"\"\n"] {
            let chunk: Vec<u8> = line
                .iter()
                .copied()
                .cycle()
                .take(DEFAULT_MAX_CHUNK_BYTES)
                .collect();
            for config in [Config::default(), Config::default().with_max_frame_bytes(1)] {
                let mut framer = ComponentFramer::new(config).unwrap();
                let mut events = Vec::new();
                for _ in 0..3 {
                    framer
                        .push(&chunk, &mut events)
                        .unwrap_or_else(|e| panic!("{line:?}: {e}"));
                }
                assert!(
                    events.len() >= 3 * DEFAULT_MAX_CHUNK_BYTES / 12,
                    "{line:?}: {} events",
                    events.len()
                );
            }
        }
    });
}

#[test]
fn memory_cap_ends_only_that_session() {
    within(Duration::from_secs(60), || {
        let config = Config::default();
        let limits = GuestLimits {
            memory_bytes: 3 << 20,
            call_deadline: Duration::from_secs(5),
        };
        let mut framer = sandbox()
            .framer(config, limits)
            .expect("3 MiB is enough to start");
        let mut events = Vec::new();
        let big = vec![b' '; 8 << 20];
        let err = framer
            .push(&big, &mut events)
            .expect_err("an 8 MiB chunk cannot fit in 3 MiB");
        match &err {
            BackendError::MemoryCap { cap, asked } => {
                assert_eq!(*cap, 3 << 20);
                assert!(*asked > *cap, "asked for {asked}");
            }
            other => panic!("expected the memory cap, got {other:?}"),
        }
        assert!(
            err.to_string().contains("memory cap of 3145728 bytes"),
            "{err}"
        );
        // The instance is never used again...
        let again = framer
            .push(b"{}\n", &mut events)
            .expect_err("a failed session stays failed");
        assert_eq!(again, err);
        assert!(framer.stats().is_err());
        // ...and the next session gets a fresh one.
        let mut next = sandbox().framer(config, limits).unwrap();
        next.push(b"{\"id\":1,\"result\":0}\n", &mut events)
            .unwrap();
        assert_eq!(events.len(), 1);
    });
}

#[test]
fn deadline_stops_a_long_call() {
    within(Duration::from_secs(120), || {
        // ~64 MiB of small messages: a few hundred ms of guest work,
        // far past a 1 ms deadline (a few 5 ms ticks at most).
        let stream = workload::small(300_000, 3);
        let config = Config::default();
        let limits = GuestLimits {
            memory_bytes: 1 << 30,
            call_deadline: Duration::from_millis(1),
        };
        let mut framer = sandbox().framer(config, limits).unwrap();
        let started = Instant::now();
        let mut events = Vec::new();
        let err = framer
            .push(&stream, &mut events)
            .expect_err("the deadline must stop the call");
        assert_eq!(
            err,
            BackendError::Deadline {
                deadline: Duration::from_millis(1)
            }
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        assert!(events.is_empty());

        // A zero deadline traps the constructor itself.
        let zero = GuestLimits {
            call_deadline: Duration::ZERO,
            ..limits
        };
        let err = sandbox()
            .framer(config, zero)
            .expect_err("nothing runs with a zero deadline");
        assert_eq!(
            err,
            BackendError::Deadline {
                deadline: Duration::ZERO
            }
        );

        // Fresh sessions are unaffected. (A generous deadline: the epoch
        // keeps running while the host lifts 300 000 events, and an
        // unoptimised test build lifts slowly.)
        let ok = GuestLimits {
            call_deadline: Duration::from_secs(60),
            memory_bytes: 1 << 30,
        };
        let (events, stats) = run(
            &mut sandbox().framer(config, ok).unwrap(),
            &stream,
            &[stream.len()],
        );
        assert_eq!(stats.frames, 300_000);
        assert_eq!(events.len(), 300_000);
    });
}

#[test]
fn a_sandbox_without_deadlines_runs_the_same_call_to_the_end() {
    within(Duration::from_secs(120), || {
        let stream = workload::small(300_000, 3);
        let config = Config::default();
        let sandbox = Sandbox::new(&SandboxOptions {
            call_deadlines: false,
            ..SandboxOptions::default()
        })
        .unwrap();
        // The 1 ms deadline that stops this push above is not enforced here.
        let limits = GuestLimits {
            memory_bytes: 1 << 30,
            call_deadline: Duration::from_millis(1),
        };
        let mut guest = sandbox.framer(config, limits).unwrap();
        let (events, stats) = run(&mut guest, &stream, &[stream.len()]);
        assert_eq!(stats.frames, 300_000);
        let (native, _) = run(&mut NativeFramer::new(config), &stream, &[stream.len()]);
        assert!(events == native, "events differ from the native framer's");
    });
}

#[test]
fn compiled_code_is_cached_between_sandboxes() {
    within(Duration::from_secs(120), || {
        let dir = std::env::temp_dir().join(format!("drainpipe-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let options = SandboxOptions {
            cache_dir: Some(dir.clone()),
            ..SandboxOptions::default()
        };
        let first = Sandbox::new(&options).unwrap();
        assert_eq!(
            (first.cache_hits(), first.cache_misses()),
            (0, 1),
            "first load compiles"
        );
        let second = Sandbox::new(&options).unwrap();
        assert_eq!(
            (second.cache_hits(), second.cache_misses()),
            (1, 0),
            "second load reuses the code"
        );
        let mut events = Vec::new();
        let mut framer = second
            .framer(
                Config::default(),
                GuestLimits::for_config(&Config::default(), 64),
            )
            .unwrap();
        framer
            .push(b"{\"id\":1,\"result\":0}\n", &mut events)
            .unwrap();
        assert_eq!(events.len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Host bindings for the full component, to check the budget half.
mod full {
    wasmtime::component::bindgen!({ path: "wit", world: "drainpipe" });
}

/// An instance of the full component, without deadlines.
fn full_instance() -> (wasmtime::Store<()>, full::Drainpipe) {
    let engine = wasmtime::Engine::new(&Sandbox::engine_config()).unwrap();
    let component = wasmtime::component::Component::new(&engine, FULL_COMPONENT_WASM).unwrap();
    let mut store = wasmtime::Store::new(&engine, ());
    store.set_epoch_deadline(u64::MAX);
    let linker = wasmtime::component::Linker::new(&engine);
    let bindings = full::Drainpipe::instantiate(&mut store, &component, &linker).unwrap();
    (store, bindings)
}

#[test]
fn a_budget_in_characters_in_the_component_matches_the_native_ladder() {
    use drainpipe_framer::budget::{Clip, Condensed, Keep, Ladder, shown_size, utf16_len};
    use drainpipe_framer::testing::condense::{kept_ends, tool_response};
    use full::exports::drainpipe::framer::budget as guest;

    within(Duration::from_secs(120), || {
        let (mut store, bindings) = full_instance();
        let condenser = bindings.drainpipe_framer_budget().condenser();
        let mut rng = Rng::new(8);
        let mut frames: Vec<Vec<u8>> = (0..8).map(|_| tool_response(&mut rng)).collect();
        let log = "step «ünïcødé» 😀 ok\n".repeat(20_000) + "error: the last line";
        frames.push(
            serde_json::to_vec(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": log}]}}))
                .unwrap(),
        );
        let mut cut = 0;
        for frame in &frames {
            for (amount, keep, wit_keep) in [
                (8_000usize, Keep::Ends, guest::Keep::Ends),
                (20_000, Keep::Tail, guest::Keep::Tail),
                (5_000, Keep::Head, guest::Keep::Head),
            ] {
                let clip = Clip::chars(amount).keeping(keep);
                let mut ladder = Ladder::for_clip(clip).unwrap();
                for piece in frame.chunks(4096) {
                    let _ = ladder.feed(piece);
                }
                let native = ladder.finish(&mut |line, to_come| {
                    shown_size(line, &mut utf16_len)
                        .is_some_and(|n| n + to_come as u64 <= amount as u64)
                });
                let handle = condenser
                    .call_within(&mut store, amount as u32, guest::Unit::Chars, wit_keep)
                    .unwrap()
                    .expect("a condenser in characters");
                let mut fed = Ok(());
                for piece in frame.chunks(4096) {
                    fed = fed.and(condenser.call_feed(&mut store, handle, piece).unwrap());
                }
                let got = condenser.call_finish(&mut store, handle).unwrap();
                handle.resource_drop(&mut store).unwrap();
                match (native, got) {
                    (Ok(Condensed::Cut { frame: mine, .. }), Ok(guest::Condensed::Cut(theirs))) => {
                        assert_eq!(mine, theirs, "{clip} keep {keep}");
                        let shown = shown_size(&theirs, &mut utf16_len).unwrap();
                        assert!(shown <= amount as u64, "{shown} characters shown");
                        cut += 1;
                    }
                    (Ok(Condensed::Unchanged), Ok(guest::Condensed::Unchanged)) => {}
                    (Err(_), Err(_)) => {}
                    (native, got) => panic!("native {native:?}, component {got:?}"),
                }
            }
        }
        assert!(cut >= 10, "only {cut} frames cut");
        // The log keeps its last line, after a true mark.
        let handle = condenser
            .call_within(&mut store, 8_000, guest::Unit::Chars, guest::Keep::Ends)
            .unwrap()
            .unwrap();
        condenser
            .call_feed(&mut store, handle, frames.last().unwrap())
            .unwrap()
            .unwrap();
        let Ok(guest::Condensed::Cut(frame)) = condenser.call_finish(&mut store, handle).unwrap()
        else {
            panic!("the log is cut")
        };
        let value: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        let text = value["result"]["content"][0]["text"].as_str().unwrap();
        assert!(kept_ends(&log, text) && text.ends_with("error: the last line"));
    });
}

/// Tokens are counted by the caller: the component offers its results
/// (`candidates`), the caller counts them with its tokenizer and takes one.
/// With `o200k_base`, that is the result the native ladder takes.
#[cfg(feature = "tokens")]
#[test]
fn a_budget_in_tokens_counted_by_the_caller_matches_the_native_ladder() {
    use drainpipe_framer::budget::{Clip, Condensed, Keep, Ladder, shown_size};
    use drainpipe_framer::testing::condense::{kept_ends, tool_response};
    use full::exports::drainpipe::framer::budget as guest;

    within(Duration::from_secs(300), || {
        let (mut store, bindings) = full_instance();
        let condenser = bindings.drainpipe_framer_budget().condenser();
        let mut count = |text: &str| bpe_openai::o200k_base().count(text) as u64;
        let mut rng = Rng::new(9);
        let mut frames: Vec<Vec<u8>> = (0..4).map(|_| tool_response(&mut rng)).collect();
        // Within the amount: the rungs above the line give it alike.
        let short = "a short answer, a few tokens each line\n".repeat(250);
        frames.push(
            serde_json::to_vec(&serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": short}]}}))
                .unwrap(),
        );
        let log =
            "step «ünïcødé» 😀 ok, the build goes on\n".repeat(8_000) + "error: the last line";
        frames.push(
            serde_json::to_vec(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": log}]}}))
                .unwrap(),
        );
        let amount = 6_000usize;
        let mut above_rung_0 = 0;
        for frame in &frames {
            let mut ladder = Ladder::for_clip(Clip::tokens(amount).keeping(Keep::Ends)).unwrap();
            for piece in frame.chunks(4096) {
                let _ = ladder.feed(piece);
            }
            let native = ladder.finish(&mut |line, to_come| {
                shown_size(line, &mut count).is_some_and(|n| n + to_come as u64 <= amount as u64)
            });
            let handle = condenser
                .call_within(
                    &mut store,
                    amount as u32,
                    guest::Unit::Tokens,
                    guest::Keep::Ends,
                )
                .unwrap()
                .expect("a condenser in tokens");
            for piece in frame.chunks(4096) {
                let _ = condenser.call_feed(&mut store, handle, piece).unwrap();
            }
            let candidates = condenser.call_candidates(&mut store, handle).unwrap();
            let got = candidates.and_then(|candidates| {
                // A result several rungs give alike is offered once.
                for pair in candidates.windows(2) {
                    let [a, b] = [&pair[0], &pair[1]];
                    assert!(
                        (&a.texts, &a.structured, a.to_come)
                            != (&b.texts, &b.structured, b.to_come),
                        "rungs {} and {} offered alike",
                        a.rung,
                        b.rung
                    );
                }
                let rung = candidates
                    .iter()
                    .find(|c| {
                        let texts: u64 = c.texts.iter().map(|t| count(t)).sum();
                        let structured = c.structured.as_deref().map_or(0, &mut count);
                        texts.max(structured) + u64::from(c.to_come) <= amount as u64
                    })
                    .map_or(0, |c| c.rung);
                condenser.call_take(&mut store, handle, rung).unwrap()
            });
            // Once taken, the condenser is spent.
            assert!(matches!(
                condenser.call_take(&mut store, handle, 0).unwrap(),
                Err(guest::CondenseError::Incomplete)
            ));
            handle.resource_drop(&mut store).unwrap();
            match (native, got) {
                (Ok(Condensed::Cut { frame: mine, .. }), Ok(guest::Condensed::Cut(theirs))) => {
                    assert_eq!(mine, theirs);
                    let tokens = shown_size(&theirs, &mut count).unwrap();
                    assert!(tokens <= amount as u64, "{tokens} tokens shown");
                    above_rung_0 += usize::from(theirs.len() > amount);
                }
                (Ok(Condensed::Unchanged), Ok(guest::Condensed::Unchanged)) => {}
                (Err(_), Err(_)) => {}
                (native, got) => panic!("native {native:?}, component {got:?}"),
            }
        }
        // The log's bytes run several to a token: counting let a larger rung
        // than the amount in bytes be taken.
        assert!(above_rung_0 >= 1, "no result above the amount in bytes");

        // `finish` alone, uncounted, gives the amount in bytes: within the
        // amount in tokens by any byte-level tokenizer.
        let handle = condenser
            .call_within(
                &mut store,
                amount as u32,
                guest::Unit::Tokens,
                guest::Keep::Ends,
            )
            .unwrap()
            .unwrap();
        condenser
            .call_feed(&mut store, handle, frames.last().unwrap())
            .unwrap()
            .unwrap();
        let Ok(guest::Condensed::Cut(frame)) = condenser.call_finish(&mut store, handle).unwrap()
        else {
            panic!("the log is cut")
        };
        assert!(frame.len() <= amount);
        let value: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        let text = value["result"]["content"][0]["text"].as_str().unwrap();
        assert!(kept_ends(&log, text) && text.ends_with("error: the last line"));
    });
}

#[test]
fn budget_in_the_component_matches_the_native_budget() {
    use drainpipe_framer::budget::{
        Capture, CondenseError, Condensed, Condenser, MIN_CONDENSE_BUDGET,
    };
    use drainpipe_framer::testing::condense::tool_response;
    use full::exports::drainpipe::framer::budget as guest;

    within(Duration::from_secs(120), || {
        let (mut store, bindings) = full_instance();
        let budget = bindings.drainpipe_framer_budget();

        let mut rng = Rng::new(5);
        let mut frames: Vec<Vec<u8>> = (0..12).map(|_| tool_response(&mut rng)).collect();
        frames.push(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,\"message\":\"x\"}}".to_vec(),
        );
        frames.push(b"[1,2]".to_vec());
        frames.push(b"{\"id\":1,\"result\":".to_vec());
        let condenser = budget.condenser();
        let mut condensed = 0;
        let mut mismatches = Vec::new();
        for frame in &frames {
            for budget_bytes in [100usize, MIN_CONDENSE_BUDGET, 20_000, 1 << 20] {
                let native = Condenser::new(budget_bytes).and_then(|mut condenser| {
                    frame
                        .chunks(4096)
                        .try_for_each(|piece| condenser.feed(piece))?;
                    condenser.finish()
                });
                let handle = condenser
                    .call_constructor(&mut store, budget_bytes as u32)
                    .unwrap();
                let mut fed = Ok(());
                for piece in frame.chunks(4096) {
                    fed = condenser.call_feed(&mut store, handle, piece).unwrap();
                    if fed.is_err() {
                        break;
                    }
                }
                let got = fed.and_then(|()| condenser.call_finish(&mut store, handle).unwrap());
                handle.resource_drop(&mut store).unwrap();
                // Both sides as one comparable form.
                #[derive(Debug, PartialEq)]
                enum Outcome {
                    Unchanged,
                    Cut(Vec<u8>),
                    Error(CondenseError),
                }
                let got = match got {
                    Ok(guest::Condensed::Unchanged) => Outcome::Unchanged,
                    Ok(guest::Condensed::Cut(frame)) => Outcome::Cut(frame),
                    Err(guest::CondenseError::BudgetTooSmall(_)) => {
                        Outcome::Error(CondenseError::BudgetTooSmall {
                            budget: budget_bytes,
                        })
                    }
                    Err(guest::CondenseError::Overflow(at)) => {
                        Outcome::Error(CondenseError::Overflow { at })
                    }
                    Err(guest::CondenseError::NotAnObject) => {
                        Outcome::Error(CondenseError::NotAnObject)
                    }
                    Err(guest::CondenseError::Incomplete) => {
                        Outcome::Error(CondenseError::Incomplete)
                    }
                };
                let native = match native {
                    Ok(Condensed::Cut { frame, .. }) => Outcome::Cut(frame),
                    Ok(_) => Outcome::Unchanged,
                    Err(error) => Outcome::Error(error),
                };
                condensed += usize::from(matches!(native, Outcome::Cut(_)));
                if native != got {
                    let short = |o: &Outcome| match o {
                        Outcome::Cut(f) => format!("cut to {} bytes", f.len()),
                        other => format!("{other:?}"),
                    };
                    mismatches.push(format!(
                        "frame {} bytes, budget {budget_bytes}: native {}, component {}",
                        frame.len(),
                        short(&native),
                        short(&got)
                    ));
                }
            }
        }
        // The guest is wasm32: anything in the core whose result depends on
        // the width of `usize` shows up here.
        assert!(
            mismatches.is_empty(),
            "{} mismatches between native and wasm32:\n{}",
            mismatches.len(),
            mismatches.join("\n")
        );
        assert!(
            condensed >= 10,
            "only {condensed} frames were actually condensed"
        );

        // Capture: same report, head, tail and rendering for any chunking.
        let stream = workload::small(200, 9);
        for (budget_bytes, head_bytes) in [(64u32, 16u32), (1000, 500), (1 << 20, 100)] {
            let mut native = Capture::with_head(budget_bytes as usize, head_bytes as usize);
            let capture = budget.capture();
            let handle = capture
                .call_constructor(&mut store, budget_bytes, head_bytes)
                .unwrap();
            for chunk in stream.chunks(777) {
                native.write(chunk);
                capture.call_write(&mut store, handle, chunk).unwrap();
            }
            let report = capture.call_report(&mut store, handle).unwrap();
            let n = native.report();
            assert_eq!(
                (report.seen, report.kept, report.dropped, report.truncated),
                (n.seen, n.kept, n.dropped, n.truncated)
            );
            assert_eq!(
                capture.call_head(&mut store, handle).unwrap(),
                native.head()
            );
            assert_eq!(
                capture.call_tail(&mut store, handle).unwrap(),
                native.tail()
            );
            assert_eq!(
                capture.call_render(&mut store, handle).unwrap(),
                native.render()
            );
            handle.resource_drop(&mut store).unwrap();
        }
    });
}

#[test]
fn json_error_codes_follow_the_wit_enum() {
    // `JsonErrorKind::code` is the one table between the framer's kinds and
    // the WIT enum's discriminants (the host and the guest convert by it).
    let mut resolve = Resolve::default();
    let wit_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("wit");
    resolve.push_path(&wit_dir).expect("wit/ parses");
    let cases: Vec<String> = resolve
        .types
        .iter()
        .find(|(_, def)| def.name.as_deref() == Some("json-error-kind"))
        .and_then(|(_, def)| match &def.kind {
            TypeDefKind::Enum(e) => Some(e.cases.iter().map(|c| c.name.clone()).collect()),
            _ => None,
        })
        .expect("the enum json-error-kind");
    let ours: Vec<&str> = drainpipe_framer::JsonErrorKind::ALL
        .iter()
        .map(|kind| kind.wit_name())
        .collect();
    assert_eq!(cases, ours);
    for (code, kind) in drainpipe_framer::JsonErrorKind::ALL.iter().enumerate() {
        assert_eq!(usize::from(kind.code()), code, "{kind:?}");
    }
}
