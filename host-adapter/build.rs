//! With the `component` feature (the default), builds the two components
//! from `guest/` and hands their paths to the crate:
//! `DRAINPIPE_FRAMER_COMPONENT` (world `framer`: framing only, the small
//! one) and `DRAINPIPE_FULL_COMPONENT` (world `drainpipe`: framing and the
//! result budget). Without it, does nothing.
//!
//! Steps: check that the `wasm32-unknown-unknown` target is installed (a
//! build never changes the toolchain: if it is missing, the build fails with
//! one line that says what to run), build the guest with a nested cargo in a
//! target dir under `OUT_DIR`, then encode the core module as a component
//! with `wit-component`. Everything it writes is under `OUT_DIR`: the guest
//! crate (`guest/manifest.toml` as its manifest, `guest/Cargo.lock`, the WIT
//! files) is put together there, so the same steps work from a checkout and
//! from the published package.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-unknown-unknown";
/// The guest's flags. SIMD for memchr, simdutf8 and the validator: every
/// host we target (wasmtime, Node, Chromium) runs wasm SIMD. An inlining
/// threshold under LLVM's default (225) keeps the framing component under
/// its 64 KiB goal (`component_fits_the_size_goal`). With the framer's
/// whole-line path: 66,897 bytes at 160, 65,035 at 120 (the component's
/// instructions on *small* strict 0.7% fewer than at 160, *large* the same),
/// 63,279 at 100 (7% more on *large*). `#[inline(always)]` scans inline
/// either way. Machine LICM off: LLVM hoisted values out of the scanner's
/// loops into WebAssembly locals that live through the whole function,
/// which Cranelift then keeps on the stack and reloads; without it the
/// *small* strict pass counts 0.5% fewer instructions, *large* strict 1.7%
/// fewer, for 493 bytes more.
const GUEST_RUSTFLAGS: &[&str] = &[
    "-Ctarget-feature=+simd128",
    "-Cllvm-args=-inline-threshold=120",
    "-Cllvm-args=-disable-machine-licm",
];

fn main() {
    // Without the sandbox there is nothing to build.
    if cfg!(feature = "component") {
        build_components();
    }
}

fn build_components() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let guest_dir = manifest_dir.join("guest");
    let wit_dir = manifest_dir.join("wit");
    // The framer's source, wherever cargo keeps it (a checkout, or a
    // downloaded package): its build script says.
    let framer_dir = PathBuf::from(env::var_os("DEP_DRAINPIPE_FRAMER_ROOT").unwrap_or_else(|| {
        fail("drainpipe-framer did not say where its source is (DEP_DRAINPIPE_FRAMER_ROOT)")
    }));

    for watched in [
        guest_dir.join("src"),
        guest_dir.join("manifest.toml"),
        guest_dir.join("Cargo.lock"),
        wit_dir.clone(),
        framer_dir.join("src"),
        framer_dir.join("Cargo.toml"),
    ] {
        println!("cargo:rerun-if-changed={}", watched.display());
    }

    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    ensure_wasm_target(&rustc);

    let crate_dir = out_dir.join("guest");
    write_guest_crate(&guest_dir, &wit_dir, &framer_dir, &crate_dir);
    let target_dir = out_dir.join("wasm-guest");
    for (features, name, env_var) in [
        (None, "drainpipe_framer.wasm", "DRAINPIPE_FRAMER_COMPONENT"),
        (
            Some("budget"),
            "drainpipe_full.wasm",
            "DRAINPIPE_FULL_COMPONENT",
        ),
    ] {
        // Both builds write the same module file: encode each right after
        // its build.
        build_guest(
            &crate_dir,
            &target_dir,
            features,
            &[&guest_dir, &framer_dir],
        );
        let module_path = target_dir
            .join(TARGET)
            .join("release")
            .join("drainpipe_framer_component.wasm");
        let module = std::fs::read(&module_path).unwrap_or_else(|e| {
            fail(&format!(
                "cannot read the guest module {}: {e}",
                module_path.display()
            ))
        });
        let component = encode(&module);
        let component_path = out_dir.join(name);
        write_if_changed(&component_path, &component);
        println!("cargo:rustc-env={env_var}={}", component_path.display());
    }
}

/// The guest's core module as a component.
#[cfg(feature = "component")]
fn encode(module: &[u8]) -> Vec<u8> {
    wit_component::ComponentEncoder::default()
        .module(module)
        .and_then(|encoder| encoder.validate(true).encode())
        .unwrap_or_else(|e| fail(&format!("cannot encode the guest as a component: {e:#}")))
}

#[cfg(not(feature = "component"))]
fn encode(_: &[u8]) -> Vec<u8> {
    unreachable!("build_components runs only with the `component` feature")
}

/// Fails, saying what to run, if the toolchain that runs this build has no
/// wasm target.
fn ensure_wasm_target(rustc: &OsString) {
    let sysroot = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = |root: &Path| {
        root.join("lib")
            .join("rustlib")
            .join(TARGET)
            .join("lib")
            .is_dir()
    };
    if !sysroot.as_deref().is_some_and(installed) {
        let toolchain = env::var("RUSTUP_TOOLCHAIN")
            .map(|t| format!(" --toolchain {t}"))
            .unwrap_or_default();
        fail(&format!(
            "the {TARGET} target is missing; run: rustup target add {TARGET}{toolchain}"
        ));
    }
}

/// Writes the guest crate under `crate_dir`: `guest/manifest.toml` as its
/// `Cargo.toml` (sources in `guest_dir`, the framer from `framer_dir`), the
/// guest's `Cargo.lock` and the WIT files its bindings are generated from.
fn write_guest_crate(guest_dir: &Path, wit_dir: &Path, framer_dir: &Path, crate_dir: &Path) {
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", path.display())))
    };
    let template = read(&guest_dir.join("manifest.toml"));
    let mut manifest = template.clone();
    for (key, dir) in [("{guest}", guest_dir), ("{framer}", framer_dir)] {
        if !template.contains(key) {
            fail(&format!("guest/manifest.toml has no {key}"));
        }
        manifest = manifest.replace(key, &toml_string_body(dir));
    }
    std::fs::create_dir_all(crate_dir.join("wit"))
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", crate_dir.display())));
    write_if_changed(&crate_dir.join("Cargo.toml"), manifest.as_bytes());
    write_if_changed(
        &crate_dir.join("Cargo.lock"),
        read(&guest_dir.join("Cargo.lock")).as_bytes(),
    );
    let wit_files = std::fs::read_dir(wit_dir)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", wit_dir.display())));
    for entry in wit_files.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "wit") {
            let name = crate_dir.join("wit").join(entry.file_name());
            write_if_changed(&name, read(&path).as_bytes());
        }
    }
}

/// `path` inside a TOML basic string.
fn toml_string_body(path: &Path) -> String {
    let path = path
        .to_str()
        .unwrap_or_else(|| fail(&format!("{} is not UTF-8", path.display())));
    path.replace('\\', "\\\\").replace('"', "\\\"")
}

fn build_guest(crate_dir: &Path, target_dir: &Path, features: Option<&str>, sources: &[&Path]) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // `--locked`: the guest's dependencies are the ones in guest/Cargo.lock.
    cmd.current_dir(crate_dir)
        .args(["build", "--release", "--locked", "--target", TARGET])
        .arg("--manifest-path")
        .arg(crate_dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    if let Some(features) = features {
        cmd.args(["--features", features]);
    }
    // The outer build's flags are for the host target (and under cargo-fuzz
    // carry sanitizer flags); its wrapper, target dir and jobserver belong to
    // the outer cargo. None of them may leak into the wasm build.
    for (key, _) in env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_ENCODED_RUSTFLAGS")
            || key.starts_with("RUSTFLAGS")
            || key.starts_with("RUSTDOCFLAGS")
            || key.starts_with("RUSTC_WRAPPER")
            || key.starts_with("RUSTC_WORKSPACE_WRAPPER")
            || key.starts_with("CARGO_BUILD_")
            || key.starts_with("CARGO_TARGET_")
            || key.starts_with("CARGO_PROFILE_")
            || key.starts_with("CARGO_CFG_")
            || key.starts_with("CARGO_FEATURE_")
            || matches!(
                &*key,
                "CARGO_MAKEFLAGS" | "MAKEFLAGS" | "MFLAGS" | "CARGO_TARGET_DIR" | "CARGO_LLVM_COV"
            )
        {
            cmd.env_remove(&*key);
        }
    }
    // Panic locations name source files: keep this machine's paths out of
    // the component (its bytes, and so its cache key, stay the same on
    // every machine with the same sources).
    let mut flags: Vec<String> = GUEST_RUSTFLAGS
        .iter()
        .map(|flag| flag.to_string())
        .collect();
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    if let Some(cargo_home) = cargo_home {
        flags.push(format!(
            "--remap-path-prefix={}=/cargo",
            cargo_home.display()
        ));
        // Registry sources sit under a directory named after the index;
        // the last matching remap wins, so these go after the one above.
        let registries = std::fs::read_dir(cargo_home.join("registry").join("src"))
            .into_iter()
            .flatten();
        for index in registries.flatten() {
            flags.push(format!(
                "--remap-path-prefix={}=/deps",
                index.path().display()
            ));
        }
    }
    for (source, name) in sources.iter().zip(["/guest", "/framer"]) {
        flags.push(format!("--remap-path-prefix={}={name}", source.display()));
    }
    cmd.env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"));
    // Hidden unless it fails: a warm rebuild is a no-op.
    let output = cmd.output().unwrap_or_else(|e| {
        fail(&format!(
            "cannot run cargo to build the framer component: {e}"
        ))
    });
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        let stale = String::from_utf8_lossy(&output.stderr).contains("--locked");
        fail(&if stale {
            format!(
                "host-adapter/guest/Cargo.lock is out of date; refresh it with \
                 `cargo update --manifest-path {}` and copy that Cargo.lock over it",
                crate_dir.join("Cargo.toml").display()
            )
        } else {
            "building the framer component (host-adapter/guest) failed; see the cargo output above"
                .to_string()
        });
    }
}

fn write_if_changed(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return;
    }
    std::fs::write(path, bytes)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
}

fn fail(message: &str) -> ! {
    // One line, so it is the line a reader sees at the bottom of the build log.
    eprintln!("error: drainpipe-host: {message}");
    std::process::exit(1);
}
