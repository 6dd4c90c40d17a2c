#!/bin/bash -eu
# Builds every cargo-fuzz target of fuzz/ into $OUT, with its seed corpus,
# the JSON-RPC dictionary and libFuzzer options. Run by ClusterFuzzLite /
# OSS-Fuzz inside base-builder-rust ($SRC and $OUT set, $SANITIZER picked up
# by the image's cargo wrapper). Locally:
#   SRC=/path/to/parent OUT=/tmp/out .clusterfuzzlite/build.sh
cd "$SRC/drainpipe"

# The builder image's default toolchain is nightly; elsewhere ask for it.
cargo_fuzz() {
    if rustc --version | grep -q nightly; then cargo fuzz "$@"; else cargo +nightly fuzz "$@"; fi
}

# component_parity runs the framer component in wasmtime; the guest is built
# for wasm32 by host-adapter's build script, which needs the target.
if rustc --version | grep -q nightly; then
    rustup target add wasm32-unknown-unknown
else
    rustup target add wasm32-unknown-unknown --toolchain nightly
fi
cargo_fuzz build -O --debug-assertions --features component

bin_dir=fuzz/target/x86_64-unknown-linux-gnu/release
for target in $(cargo_fuzz list); do
    cp "$bin_dir/$target" "$OUT/"
    # Seeds: every committed corpus file of the target (if it has any).
    rm -f "$OUT/${target}_seed_corpus.zip"
    if [ -d "fuzz/corpus/$target" ]; then
        (cd "fuzz/corpus/$target" && zip -q -r "$OUT/${target}_seed_corpus.zip" .)
    fi
    cp fuzz/dict/jsonrpc.dict "$OUT/$target.dict"
    printf '[libfuzzer]\nmax_len = 4096\ntimeout = 10\n' >"$OUT/$target.options"
done
