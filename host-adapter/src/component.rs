//! The framer as a WebAssembly component, run in a capped wasmtime sandbox.
//!
//! The component (`wit/framer.wit`, built from `host-adapter/guest` by this
//! crate's build script) is compiled once per process; each session gets its
//! own [`Store`] and instance from a pre-instantiated
//! [`InstancePre`](wasmtime::component::InstancePre), so a guest that traps
//! takes down only its own session. Every store has a memory
//! cap and every call an epoch deadline, both set before instantiation: a
//! guest bug can neither exhaust the host's memory nor hang its reader.
//!
//! ```
//! use drainpipe_framer::Config;
//! use drainpipe_host::backend::FramerBackend;
//! use drainpipe_host::component::ComponentFramer;
//!
//! let mut framer = ComponentFramer::new(Config::default())?;
//! let mut events = Vec::new();
//! framer.push(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", &mut events)?;
//! assert_eq!(events.len(), 1);
//! # Ok::<(), drainpipe_host::backend::BackendError>(())
//! ```

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use drainpipe_framer::owned::{OwnedEnvelope, OwnedEvent, OwnedId};
use drainpipe_framer::packed;
use drainpipe_framer::{Config, Event, JsonError, JsonErrorKind, Stats};
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap};

use crate::backend::{BackendError, FramerBackend};

mod cache;

/// Generated from `wit/framer.wit`; the types are checked against the
/// component once, when the [`InstancePre`](wasmtime::component::InstancePre)
/// is indexed.
#[allow(missing_docs, unreachable_pub, clippy::all)]
mod bindings {
    wasmtime::component::bindgen!({ path: "wit", world: "framer" });
}

/// The WIT types of `drainpipe:framer/framing`, as the host sees them.
pub mod wit {
    pub use super::bindings::exports::drainpipe::framer::framing::{
        Batch, BytesRef, Discarded, Envelope, Event, Frame, Id, JsonError, JsonErrorKind, Limits,
        Malformed, NotProtocol, Oversize, PackedBatch, Span, Stats, Truncated,
    };
}

/// The framer component (world `framer` of `wit/framer.wit`), as built by
/// this crate's build script: a `no_std` guest that imports nothing. This is
/// the one [`Sandbox`] runs.
pub const COMPONENT_WASM: &[u8] = include_bytes!(env!("DRAINPIPE_FRAMER_COMPONENT"));

/// The full component (world `drainpipe`: the framer and the result budget),
/// for hosts that want clipping and capture in the sandbox too. Larger, as
/// clipping parses JSON values; imports nothing either.
pub const FULL_COMPONENT_WASM: &[u8] = include_bytes!(env!("DRAINPIPE_FULL_COMPONENT"));

/// How often the epoch advances. The deadline of a call is counted in these
/// ticks, so this is also the deadline's resolution.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Memory the guest needs before it holds any data: its stack, statics and
/// allocator overhead.
const GUEST_BASE_MEMORY_BYTES: usize = 4 << 20;

/// Guest memory per byte of a chunk, for the events of one push in the worst
/// case: two events every two bytes (`[\n` under a 1-byte limit: malformed,
/// then discarded), each held once as a Rust value (with vector growth) and
/// once lowered for the host, about 270 bytes per chunk byte in all.
/// `tests/component.rs` pushes such chunks under the default caps.
const GUEST_EVENT_BYTES_PER_CHUNK_BYTE: usize = 384;

/// The chunk size [`ComponentFramer::new`] provisions memory for: what one
/// read of a pipe returns on Linux.
pub const DEFAULT_MAX_CHUNK_BYTES: usize = 64 * 1024;

/// Process-wide settings of the sandbox.
#[derive(Clone, Debug)]
pub struct SandboxOptions {
    /// Where compiled code is cached between processes (in its `compiled`
    /// folder), keyed by wasmtime's version, the engine's settings and a
    /// hash of the component, so a changed component or engine never loads
    /// stale code. `None` compiles at every start (~15 ms).
    pub cache_dir: Option<PathBuf>,
    /// Enforce [`GuestLimits::call_deadline`] (the default). Protects the
    /// host's **reader** from a guest that loops: without it such a call
    /// never returns and the session's reader stops, the failure drainpipe
    /// exists to prevent. The price is a check at every loop head and call
    /// in the guest (wasmtime's epoch interruption), measured in
    /// `BENCHMARKS.md`. Turn it off only for a component you built and
    /// fuzzed yourself, when that price matters.
    pub call_deadlines: bool,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            cache_dir: None,
            call_deadlines: true,
        }
    }
}

impl SandboxOptions {
    /// The environment's choice: `$DRAINPIPE_CACHE_DIR` (empty turns the
    /// cache off), else `$XDG_CACHE_HOME/drainpipe`, else
    /// `$HOME/.cache/drainpipe`.
    pub fn from_env() -> Self {
        let var = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let cache_dir = match std::env::var_os("DRAINPIPE_CACHE_DIR") {
            Some(dir) if dir.is_empty() => None,
            Some(dir) => Some(PathBuf::from(dir)),
            None => var("XDG_CACHE_HOME")
                .or_else(|| var("HOME").map(|home| home.join(".cache")))
                .map(|dir| dir.join("drainpipe")),
        };
        SandboxOptions {
            cache_dir,
            ..SandboxOptions::default()
        }
    }
}

/// Per-session caps on the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuestLimits {
    /// The most linear memory the guest may grow to, in bytes. Protects the
    /// host's **memory** from a guest bug. It must hold the framer's buffer
    /// (`max_frame_bytes`), one copy of a frame that spanned chunks, the
    /// largest chunk pushed and the events it can produce, plus the guest's
    /// own few MiB; growing past it traps the session.
    pub memory_bytes: usize,
    /// How long one call into the guest may take. Protects the host's
    /// **reader** from a guest that loops: the call traps instead. Counted
    /// in 5 ms epoch ticks from the start of the call, so it also covers
    /// the host's copying of the chunk in and the events out. Not enforced
    /// in a sandbox built with [`SandboxOptions::call_deadlines`] off.
    pub call_deadline: Duration,
}

impl GuestLimits {
    /// Caps that fit `config`, for chunks up to `max_chunk_bytes`: memory for
    /// the buffered frame, its carried copy and the vector growth around
    /// them, and for the most events one chunk can produce; one second per
    /// call (a 64 KiB chunk takes well under a millisecond, so only a bug
    /// comes near it).
    pub fn for_config(config: &Config, max_chunk_bytes: usize) -> Self {
        GuestLimits {
            memory_bytes: GUEST_BASE_MEMORY_BYTES
                .saturating_add(config.max_frame_bytes().saturating_mul(4))
                .saturating_add(max_chunk_bytes.saturating_mul(GUEST_EVENT_BYTES_PER_CHUNK_BYTE)),
            call_deadline: Duration::from_secs(1),
        }
    }
}

/// The compiled component and the engine that runs it. Build one per
/// process ([`Sandbox::shared`]); sessions are cheap.
pub struct Sandbox {
    engine: Engine,
    pre: bindings::FramerPre<GuestState>,
    /// How [`Sandbox::new`] got the compiled component: counted for
    /// [`Sandbox::cache_hits`] and [`Sandbox::cache_misses`].
    loaded: cache::Loaded,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Compiles [`COMPONENT_WASM`] (or loads it from the cache) and starts
    /// the epoch ticker that enforces call deadlines.
    pub fn new(options: &SandboxOptions) -> Result<Self, BackendError> {
        let engine = engine(options)?;
        let (component, loaded) = match &options.cache_dir {
            Some(dir) => cache::load_or_compile(&engine, COMPONENT_WASM, &dir.join("compiled"))?,
            None => (
                Component::new(&engine, COMPONENT_WASM)
                    .map_err(setup("compiling the component"))?,
                cache::Loaded::NoCache,
            ),
        };
        let mut sandbox = Self::from_component(engine, &component)?;
        sandbox.loaded = loaded;
        Ok(sandbox)
    }

    /// The process-wide sandbox, built on first use with
    /// [`SandboxOptions::from_env`].
    pub fn shared() -> Result<&'static Sandbox, BackendError> {
        static SHARED: OnceLock<Result<Sandbox, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| Sandbox::new(&SandboxOptions::from_env()).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| BackendError::Unavailable {
                message: message.clone(),
            })
    }

    /// A sandbox over an already compiled `component` (which must come from
    /// `engine`, built with [`Sandbox::engine_config`]).
    pub fn from_component(engine: Engine, component: &Component) -> Result<Self, BackendError> {
        // A bare linker: the component imports nothing.
        let linker = Linker::new(&engine);
        let instance_pre = linker
            .instantiate_pre(component)
            .map_err(setup("linking the component"))?;
        let pre = bindings::FramerPre::new(instance_pre)
            .map_err(setup("finding the component's exports"))?;
        start_epoch_ticker(&engine);
        Ok(Sandbox {
            engine,
            pre,
            loaded: cache::Loaded::NoCache,
        })
    }

    /// The engine settings the sandbox needs (epoch interruption), for
    /// callers that compile the component themselves.
    pub fn engine_config() -> wasmtime::Config {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        config
    }

    /// Loads of compiled code from the cache by this sandbox (0 or 1).
    pub fn cache_hits(&self) -> usize {
        usize::from(self.loaded == cache::Loaded::Hit)
    }

    /// Compilations that missed the cache (0 or 1; 0 without a cache).
    pub fn cache_misses(&self) -> usize {
        usize::from(self.loaded == cache::Loaded::Miss)
    }

    /// The engine the component runs on.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// A fresh instance holding one framer with `config`, under `limits`.
    pub fn framer(
        &self,
        config: Config,
        limits: GuestLimits,
    ) -> Result<ComponentFramer, BackendError> {
        let state = GuestState {
            limiter: Limiter {
                limits: StoreLimitsBuilder::new()
                    .memory_size(limits.memory_bytes)
                    .build(),
                denied_memory: None,
            },
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        let deadline_ticks = deadline_ticks(limits.call_deadline);
        // Both start at zero: set them before the guest runs any code.
        store.set_epoch_deadline(deadline_ticks);
        let mut framer = ComponentFramer {
            store,
            bindings: None,
            resource: None,
            limits,
            deadline_ticks,
            failure: None,
            held: packed::HeldLine::default(),
        };
        let bindings = self
            .pre
            .instantiate(&mut framer.store)
            .map_err(|e| framer.fail(e))?;
        let wit_limits = wit::Limits {
            max_frame_bytes: u32::try_from(config.max_frame_bytes()).unwrap_or(u32::MAX),
            max_depth: config.max_depth(),
            validate_json: config.json_validation(),
        };
        let resource = bindings
            .drainpipe_framer_framing()
            .framer()
            .call_constructor(&mut framer.store, wit_limits)
            .map_err(|e| framer.fail(e))?;
        framer.bindings = Some(bindings);
        framer.resource = Some(resource);
        Ok(framer)
    }
}

fn engine(options: &SandboxOptions) -> Result<Engine, BackendError> {
    let mut config = Sandbox::engine_config();
    config.epoch_interruption(options.call_deadlines);
    Engine::new(&config).map_err(setup("creating the wasmtime engine"))
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until the engine is
/// dropped.
fn start_epoch_ticker(engine: &Engine) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("drainpipe-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        });
    if let Err(e) = spawned {
        // Without the ticker no deadline ever fires; calls still run.
        tracing::error!("cannot start the epoch ticker, guest calls have no deadline: {e}");
    }
}

fn deadline_ticks(deadline: Duration) -> u64 {
    if deadline.is_zero() {
        // No time at all: the guest traps at its first check.
        return 0;
    }
    // Round up, plus one: the tick in progress may be almost over.
    (deadline.as_nanos().div_ceil(EPOCH_TICK.as_nanos()) as u64).saturating_add(1)
}

fn setup(what: &'static str) -> impl Fn(wasmtime::Error) -> BackendError {
    move |e| BackendError::Unavailable {
        message: format!("{what}: {e:#}"),
    }
}

/// What a session's store holds.
struct GuestState {
    limiter: Limiter,
}

/// [`StoreLimits`] plus a note of the growth it refused, so the error can say
/// "memory cap" rather than a bare trap.
struct Limiter {
    limits: StoreLimits,
    denied_memory: Option<usize>,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if !allowed {
            self.denied_memory = Some(desired);
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }
}

/// One session's framer inside its own component instance.
///
/// After the guest fails (trap, memory cap, deadline) the instance is never
/// called again: every later call returns the same error. Start a new
/// session with [`Sandbox::framer`] for a fresh instance.
pub struct ComponentFramer {
    store: Store<GuestState>,
    bindings: Option<bindings::Framer>,
    resource: Option<ResourceAny>,
    limits: GuestLimits,
    deadline_ticks: u64,
    failure: Option<BackendError>,
    /// The unfinished line, kept here for `push_events` (the guest's packed
    /// batches say what to keep; at most `max_frame_bytes` + 1).
    held: packed::HeldLine,
}

impl std::fmt::Debug for ComponentFramer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentFramer")
            .field("limits", &self.limits)
            .field("failure", &self.failure)
            .finish_non_exhaustive()
    }
}

impl ComponentFramer {
    /// A session on the process-wide [`Sandbox::shared`], with
    /// [`GuestLimits::for_config`] for chunks up to
    /// [`DEFAULT_MAX_CHUNK_BYTES`].
    pub fn new(config: Config) -> Result<Self, BackendError> {
        Sandbox::shared()?.framer(
            config,
            GuestLimits::for_config(&config, DEFAULT_MAX_CHUNK_BYTES),
        )
    }

    /// Pushes `chunk` and calls `on_event` with each event, exactly as
    /// [`Framer::push`](drainpipe_framer::Framer::push) does natively:
    /// frames inside `chunk` borrow it, a frame that spanned pushes borrows
    /// the line this host kept ([`packed::HeldLine`]), so no message bytes
    /// are copied out of the guest. The fast path: the guest packs its
    /// events (`push-packed`) and this decodes them, checking every span. A
    /// batch that does not decode is a guest bug and ends the session like a
    /// trap (events before the bad one have been delivered). Use this family
    /// (`push_events`, `finish_events`) for a whole stream: a push through
    /// another leaves the held line behind.
    pub fn push_events<F: FnMut(Event<'_>)>(
        &mut self,
        chunk: &[u8],
        on_event: F,
    ) -> Result<(), BackendError> {
        let batch = self.push_packed(chunk)?;
        self.deliver(batch, chunk, on_event)
    }

    /// Ends the stream, like [`Framer::finish`](drainpipe_framer::Framer::finish).
    pub fn finish_events<F: FnMut(Event<'_>)>(&mut self, on_event: F) -> Result<(), BackendError> {
        let batch = self.finish_packed()?;
        self.deliver(batch, &[], on_event)
    }

    /// The guest's packed batch for `chunk`, undecoded: the caller keeps
    /// the held line ([`packed::HeldLine`]) and does not mix this with
    /// [`ComponentFramer::push_events`] on one stream.
    pub fn push_packed(&mut self, chunk: &[u8]) -> Result<wit::PackedBatch, BackendError> {
        self.call(|bindings, store, framer| {
            bindings
                .drainpipe_framer_framing()
                .framer()
                .call_push_packed(store, framer, chunk)
        })
    }

    /// The guest's packed batch for the end of the stream.
    pub fn finish_packed(&mut self) -> Result<wit::PackedBatch, BackendError> {
        self.call(|bindings, store, framer| {
            bindings
                .drainpipe_framer_framing()
                .framer()
                .call_finish_packed(store, framer)
        })
    }

    fn deliver<F: FnMut(Event<'_>)>(
        &mut self,
        batch: wit::PackedBatch,
        chunk: &[u8],
        on_event: F,
    ) -> Result<(), BackendError> {
        let received = self.held.receive(
            chunk,
            &batch.words,
            &batch.carried,
            batch.join,
            batch.keep,
            on_event,
        );
        if let Err(e) = received {
            let error = BackendError::BadBatch {
                message: e.to_string(),
            };
            self.failure = Some(error.clone());
            return Err(error);
        }
        Ok(())
    }

    /// Pushes `chunk` and returns the guest's batch in the WIT's readable
    /// form: typed events whose bytes are spans of `chunk` or of
    /// `batch.carried` ([`resolve`] reads one, [`owned_events`] converts the
    /// batch). Slower than [`ComponentFramer::push_events`]: every field of
    /// every event is converted on the way out of the guest.
    pub fn push_batch(&mut self, chunk: &[u8]) -> Result<wit::Batch, BackendError> {
        self.call(|bindings, store, framer| {
            bindings
                .drainpipe_framer_framing()
                .framer()
                .call_push(store, framer, chunk)
        })
    }

    /// Ends the stream; the batch's spans point only into `batch.carried`.
    pub fn finish_batch(&mut self) -> Result<wit::Batch, BackendError> {
        self.call(|bindings, store, framer| {
            bindings
                .drainpipe_framer_framing()
                .framer()
                .call_finish(store, framer)
        })
    }

    /// Forgets the stream (see `reset` in the WIT).
    pub fn reset(&mut self) -> Result<(), BackendError> {
        self.held.clear();
        self.call(|bindings, store, framer| {
            bindings
                .drainpipe_framer_framing()
                .framer()
                .call_reset(store, framer)
        })
    }

    /// Bytes the guest holds for an unfinished line.
    pub fn buffered(&mut self) -> Result<u32, BackendError> {
        self.call(|bindings, store, framer| {
            bindings
                .drainpipe_framer_framing()
                .framer()
                .call_buffered(store, framer)
        })
    }

    /// The caps this session runs under.
    pub fn limits(&self) -> GuestLimits {
        self.limits
    }

    /// Why this session's instance failed, if it did.
    pub fn failure(&self) -> Option<&BackendError> {
        self.failure.as_ref()
    }

    fn call<R>(
        &mut self,
        f: impl FnOnce(&bindings::Framer, &mut Store<GuestState>, ResourceAny) -> wasmtime::Result<R>,
    ) -> Result<R, BackendError> {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        let (Some(bindings), Some(resource)) = (&self.bindings, self.resource) else {
            return Err(BackendError::Unavailable {
                message: "framer component was never instantiated".into(),
            });
        };
        self.store.set_epoch_deadline(self.deadline_ticks);
        match f(bindings, &mut self.store, resource) {
            Ok(value) => Ok(value),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Poisons the session and says what happened.
    fn fail(&mut self, error: wasmtime::Error) -> BackendError {
        let error = if let Some(asked) = self.store.data_mut().limiter.denied_memory.take() {
            BackendError::MemoryCap {
                cap: self.limits.memory_bytes,
                asked,
            }
        } else if let Some(Trap::Interrupt) = error.downcast_ref::<Trap>() {
            BackendError::Deadline {
                deadline: self.limits.call_deadline,
            }
        } else {
            BackendError::Trap {
                message: format!("{error:#}"),
            }
        };
        self.failure = Some(error.clone());
        error
    }
}

/// The bytes a [`wit::BytesRef`] points at: a span of the chunk just pushed
/// or of the batch's carried bytes. `None` if the span is out of range, which
/// only a broken guest produces.
pub fn resolve<'a>(at: &wit::BytesRef, chunk: &'a [u8], carried: &'a [u8]) -> Option<&'a [u8]> {
    let (bytes, span) = match at {
        wit::BytesRef::Chunk(span) => (chunk, span),
        wit::BytesRef::Carried(span) => (carried, span),
    };
    let start = span.start as usize;
    bytes.get(start..start.checked_add(span.len as usize)?)
}

/// Converts a typed batch into owned events, checking every span.
pub fn owned_events(batch: &wit::Batch, chunk: &[u8]) -> Result<Vec<OwnedEvent>, BackendError> {
    let mut out = Vec::new();
    append_owned(batch, chunk, &mut out)?;
    Ok(out)
}

fn append_owned(
    batch: &wit::Batch,
    chunk: &[u8],
    out: &mut Vec<OwnedEvent>,
) -> Result<(), BackendError> {
    let bytes = |at: &wit::BytesRef| {
        resolve(at, chunk, &batch.carried)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| BackendError::BadBatch {
                message: "a span out of range".into(),
            })
    };
    let envelope = |e: &wit::Envelope| -> Result<OwnedEnvelope, BackendError> {
        Ok(OwnedEnvelope {
            jsonrpc: e.jsonrpc.as_ref().map(bytes).transpose()?,
            id: match &e.id {
                None => None,
                Some(wit::Id::Number(at)) => Some(OwnedId::Number(bytes(at)?)),
                Some(wit::Id::String(at)) => Some(OwnedId::String(bytes(at)?)),
                Some(wit::Id::Null) => Some(OwnedId::Null),
            },
            method: e.method.as_ref().map(bytes).transpose()?,
            has_result: e.has_result,
            has_error: e.has_error,
        })
    };
    out.reserve(batch.events.len());
    for event in &batch.events {
        out.push(match event {
            wit::Event::Frame(f) => OwnedEvent::Frame {
                offset: f.offset,
                bytes: bytes(&f.bytes)?,
                envelope: envelope(&f.envelope)?,
            },
            wit::Event::Oversize(o) => OwnedEvent::Oversize {
                offset: o.offset,
                looks_like_json: o.looks_like_json,
                envelope: envelope(&o.envelope)?,
            },
            wit::Event::Malformed(m) => OwnedEvent::Malformed {
                offset: m.offset,
                error: JsonError {
                    kind: error_kind(m.error.kind)?,
                    at: m.error.at,
                },
                envelope: envelope(&m.envelope)?,
            },
            wit::Event::Discarded(d) => OwnedEvent::Discarded {
                offset: d.offset,
                len: d.len,
                at_eof: d.at_eof,
                envelope: envelope(&d.envelope)?,
                well_formed: d.well_formed,
            },
            wit::Event::NotProtocol(n) => OwnedEvent::NotProtocol {
                offset: n.offset,
                line: bytes(&n.line)?,
            },
            wit::Event::Truncated(t) => OwnedEvent::Truncated {
                offset: t.offset,
                len: t.len,
                envelope: envelope(&t.envelope)?,
            },
        });
    }
    Ok(())
}

/// The WIT enum's discriminant is its code ([`JsonErrorKind::code`]; a
/// test holds the two orders together).
fn error_kind(kind: wit::JsonErrorKind) -> Result<JsonErrorKind, BackendError> {
    JsonErrorKind::from_code(kind as u8).ok_or_else(|| BackendError::BadBatch {
        message: format!("a JSON error kind unknown here: {kind:?}"),
    })
}

impl FramerBackend for ComponentFramer {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<OwnedEvent>) -> Result<(), BackendError> {
        self.push_events(chunk, |event| out.push(OwnedEvent::from(event)))
    }

    fn finish(&mut self, out: &mut Vec<OwnedEvent>) -> Result<(), BackendError> {
        self.finish_events(|event| out.push(OwnedEvent::from(event)))
    }

    fn stats(&mut self) -> Result<Stats, BackendError> {
        let s = self.call(|bindings, store, framer| {
            bindings
                .drainpipe_framer_framing()
                .framer()
                .call_stats(store, framer)
        })?;
        // `Stats` is non-exhaustive: start from the default and fill in.
        let mut stats = Stats::default();
        stats.bytes_in = s.bytes_in;
        stats.frames = s.frames;
        stats.largest_frame = s.largest_frame;
        stats.oversize = s.oversize;
        stats.oversize_bytes_dropped = s.oversize_bytes_dropped;
        stats.malformed = s.malformed;
        stats.malformed_bytes_dropped = s.malformed_bytes_dropped;
        stats.not_protocol = s.not_protocol;
        stats.blank_lines = s.blank_lines;
        stats.truncated = s.truncated;
        stats.buffered_high_water = s.buffered_high_water;
        Ok(stats)
    }

    fn name(&self) -> &'static str {
        "component"
    }
}
