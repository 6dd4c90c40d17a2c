//! The workspace's binaries, for tests in any crate.
//!
//! Cargo sets `CARGO_BIN_EXE_<name>` only for the binaries of the package
//! under test, and the binaries live in their own package: so the tests find
//! them beside their own executable, and build them when they are missing or
//! older than their sources.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::{Mutex, OnceLock};

/// The package that builds the binaries.
pub const PACKAGE: &str = "drainpipe-cli";

/// The workspace root (the folder with the root `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("test-support/ has a parent")
        .to_path_buf()
}

/// The folder cargo put this test executable's sibling binaries in
/// (`target/<profile>`), found from the running executable so it follows
/// `CARGO_TARGET_DIR` and the profile.
pub fn binary_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    // target/<profile>/deps/<test>-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("a test executable lives in target/<profile>/deps")
        .to_path_buf()
}

/// Builds (once per test process) and returns one of the workspace's
/// binaries (`drainpipe`, `drainpipe-fixture`), from [`PACKAGE`].
///
/// Another package's binaries are not built for this package's tests, so the
/// suite asks cargo for them: a no-op when `cargo test --workspace` already
/// built them, and it keeps `cargo test -p drainpipe-release` from testing a
/// stale or missing binary. `DRAINPIPE_BIN_DIR` points at prebuilt binaries
/// instead (no build).
pub fn binary(name: &str) -> Result<PathBuf, String> {
    static BUILT: Mutex<Vec<(String, Result<PathBuf, String>)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, found)) = built.iter().find(|(n, _)| n == name) {
        return found.clone();
    }
    let found = build_binary(name);
    built.push((name.to_string(), found.clone()));
    found
}

fn build_binary(name: &str) -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("DRAINPIPE_BIN_DIR") {
        let path = Path::new(&dir).join(name);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} does not exist (DRAINPIPE_BIN_DIR)",
                path.display()
            ))
        };
    }
    let dir = binary_dir();
    let path = dir.join(name);
    if is_fresh(&path) {
        return Ok(path);
    }
    let profile = dir.file_name().and_then(|p| p.to_str()).unwrap_or("debug");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = StdCommand::new(cargo);
    build
        .current_dir(workspace_root())
        .args(["build", "--quiet", "-p", PACKAGE, "--bin", name]);
    if profile == "release" {
        build.arg("--release");
    }
    if let Some(target) = dir.parent() {
        build.env("CARGO_TARGET_DIR", target);
    }
    let output = build
        .output()
        .map_err(|e| format!("could not run cargo to build {name}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo build -p {PACKAGE} --bin {name}` failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("{} is missing after the build", path.display()))
    }
}

/// Whether `binary` exists and is newer than every source it is built
/// from. Skipping the build then matters: cargo's build lock may be held by
/// another build sharing the target folder.
fn is_fresh(binary: &Path) -> bool {
    fn newest(path: &Path, newest_seen: &mut std::time::SystemTime) {
        let Ok(meta) = path.metadata() else { return };
        if meta.is_dir() {
            for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
                newest(&entry.path(), newest_seen);
            }
        } else if let Ok(modified) = meta.modified() {
            *newest_seen = (*newest_seen).max(modified);
        }
    }
    let Ok(built) = binary.metadata().and_then(|m| m.modified()) else {
        return false;
    };
    let root = workspace_root();
    let mut sources = std::time::UNIX_EPOCH;
    for part in [
        "Cargo.lock",
        "framer/Cargo.toml",
        "framer/src",
        "host-adapter/Cargo.toml",
        "host-adapter/build.rs",
        "host-adapter/src",
        "cli/Cargo.toml",
        "cli/src",
        "host-adapter/guest",
        "wit",
    ] {
        newest(&root.join(part), &mut sources);
    }
    built > sources
}

/// The fixture server binary; panics if it cannot be built (it is part of
/// this workspace, so that is a real failure).
pub fn fixture_binary() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| binary("drainpipe-fixture").unwrap_or_else(|e| panic!("{e}")))
        .clone()
}

/// The `drainpipe` binary; panics if it cannot be built.
pub fn drainpipe_binary() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| binary("drainpipe").unwrap_or_else(|e| panic!("{e}")))
        .clone()
}
