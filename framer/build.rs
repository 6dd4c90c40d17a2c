//! Tells the crates that build this framer for another target where its
//! source is: `DEP_DRAINPIPE_FRAMER_ROOT` in their build scripts.
//! drainpipe-host's build script compiles the framer into the WebAssembly
//! guest with a nested cargo, from a checkout or a downloaded package alike.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=root={root}");
}
