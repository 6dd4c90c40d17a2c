//! Compiled code of the component on disk, so a process that starts after
//! another loads it (well under a millisecond) instead of compiling it
//! (~15 ms).
//!
//! One file per (component, engine) pair: `<dir>/framer-<key>.cwasm`, the
//! output of [`Component::serialize`]. The key hashes the component's bytes
//! and [`Engine::precompile_compatibility_hash`] (the target, the compiler's
//! flags, the engine's settings and wasmtime's version), so a changed
//! component or engine looks for another file and never loads stale code;
//! wasmtime also checks the version and settings recorded in the file
//! itself. This replaces wasmtime's own cache (its `cache` feature), whose
//! compression is C code (zstd) that does not cross-compile for every target
//! drainpipe ships to. Files of older versions are not removed: a few
//! hundred KB per upgrade.

use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::setup;
use crate::backend::BackendError;

/// How a component was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loaded {
    /// Read from the cache.
    Hit,
    /// Compiled (and, if it could be, written to the cache).
    Miss,
    /// Compiled without a cache: none configured, its directory could not
    /// be created, or the caller compiled it.
    NoCache,
}

/// The component compiled for `engine`, from the cache in `dir` if it holds
/// it. Problems with the cache are logged and cost a compilation, never the
/// sandbox: the cache is an optimisation.
pub(super) fn load_or_compile(
    engine: &Engine,
    wasm: &[u8],
    dir: &Path,
) -> Result<(Component, Loaded), BackendError> {
    if let Err(e) = fs::create_dir_all(dir) {
        tracing::warn!("compiled-code cache in {} unusable: {e}", dir.display());
        return Ok((compile(engine, wasm)?, Loaded::NoCache));
    }
    let path = dir.join(format!("framer-{}.cwasm", key(engine, wasm)));
    match fs::read(&path) {
        Ok(bytes) => match deserialize(engine, &bytes) {
            Ok(component) => return Ok((component, Loaded::Hit)),
            // Truncated by a full disk, or written by an engine this one
            // cannot run: compile and replace it.
            Err(e) => tracing::warn!("cached code {} not loaded: {e:#}", path.display()),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!("cached code {} not read: {e}", path.display()),
    }
    let component = compile(engine, wasm)?;
    if let Err(e) = store(&component, &path) {
        tracing::warn!("compiled code not cached in {}: {e:#}", path.display());
    }
    Ok((component, Loaded::Miss))
}

fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component, BackendError> {
    Component::new(engine, wasm).map_err(setup("compiling the component"))
}

/// 128 bits of hash over the component and the engine's compatibility: two
/// runs of SipHash under different prefixes (std's hasher, whose output may
/// change between Rust releases: that only costs one compilation).
fn key(engine: &Engine, wasm: &[u8]) -> String {
    let half = |prefix: &str| {
        let mut hasher = DefaultHasher::new();
        prefix.hash(&mut hasher);
        engine.precompile_compatibility_hash().hash(&mut hasher);
        wasm.hash(&mut hasher);
        hasher.finish()
    };
    format!("{:016x}{:016x}", half("drainpipe-a"), half("drainpipe-b"))
}

/// Loads code that [`store`] wrote.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: wasmtime runs these bytes as machine code, so they must be
    // what `Component::serialize` produced. They are: the file sits in the
    // user's own cache directory, where only drainpipe writes, and `store`
    // puts it in place whole by a rename, so a crash or a concurrent
    // writer never leaves a partial file under this name. Its name covers
    // the engine's settings and wasmtime's version, which wasmtime checks
    // again from the file's header. Whoever can write that directory can
    // already change the user's programs; wasmtime's own cache trusts it
    // the same way. The bytes are copied, so later changes to the file do
    // not reach the loaded code.
    unsafe { Component::deserialize(engine, bytes) }
}

/// Writes `bytes` to `path` and flushes them to the disk before the rename
/// that publishes them, so a power loss cannot leave a named file whose
/// contents never arrived.
fn write_durably(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Writes the serialized `component` to `path` through a temporary file, so
/// that readers see either no file or a whole one.
fn store(component: &Component, path: &Path) -> wasmtime::Result<()> {
    // Unique per process and call: concurrent sandboxes write their own.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let bytes = component.serialize()?;
    let temporary: PathBuf = path.with_extension(format!(
        "tmp-{}-{}",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let written = write_durably(&temporary, &bytes).and_then(|()| fs::rename(&temporary, path));
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    Ok(written?)
}
