#!/usr/bin/env bash
# Every test drainpipe has, on a fresh machine with Rust: installs what the tests
# need (wasm targets, Debian's chromium, Node and Python peers, cargo-fuzz), then
# runs them. Each step prints a header; the script stops at the first failure.
#
#   bash scripts/test-all.sh
#
# Environment:
#   DRAINPIPE_SKIP_FUZZ=1      leave out the fuzz smoke run (the slowest step)
#   DRAINPIPE_SKIP_BROWSER=1   leave out the headless Chromium run
#   FUZZ_SMOKE_SECONDS=N       seconds per fuzz target (default 20)
#   DRAINPIPE_PRUNE=1          delete target/debug before the fuzz step (CI: less disk)
set -euo pipefail
cd "$(dirname "$0")/.."

# Each header says when its step began: where a run's time went, read
# from its log alone.
started=$SECONDS
step() { printf '\n==> %s  [%ds]\n' "$*" "$((SECONDS - started))"; }

# Disk: a cold run writes a few GB (target/, fuzz/target/, nightly, peers).
# Incremental caches only help rebuilds, which a one-shot run never does.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
disk() {
    df -h . | awk 'NR == 2 { print "disk: " $4 " free of " $2 }'
    du -sh target fuzz/target 2>/dev/null | sed 's/^/disk: /' || true
}
disk

step "toolchain: wasm targets"
rustup target add wasm32-unknown-unknown wasm32-wasip2

step "the framer builds as no_std for wasm32"
cargo build --quiet -p drainpipe-framer --no-default-features --target wasm32-unknown-unknown

step "the session library alone: no wasmtime, no clap"
# Neither in any of its dependencies (dev ones included), nor the component
# encoder in what a program that embeds a session compiles.
deps=$(cargo tree -p drainpipe-host --no-default-features --prefix none)
built=$(cargo tree -p drainpipe-host --no-default-features -e normal,build --prefix none)
if grep -E '^(wasmtime|clap) ' <<<"$deps" || grep -E '^wit-component ' <<<"$built"; then
    echo "drainpipe-host --no-default-features pulls in the crates above" >&2
    exit 1
fi
cargo build --quiet -p drainpipe-host --no-default-features

step "macOS: the crates type-check for both Apple targets"
# `cargo check` links nothing, but wasmtime's build script compiles one C
# file: clang compiles it for the Apple target, with scripts/apple-sdk-stub
# standing in for the one SDK header it includes.
rustup target add aarch64-apple-darwin x86_64-apple-darwin
if ! command -v clang >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang >/dev/null
fi
(
    apple_cflags="-ffreestanding -isystem $PWD/scripts/apple-sdk-stub"
    export CC_aarch64_apple_darwin=clang CC_x86_64_apple_darwin=clang
    export CFLAGS_aarch64_apple_darwin="$apple_cflags" CFLAGS_x86_64_apple_darwin="$apple_cflags"
    # Without the component: what differs on a Mac is the code in
    # pipe/sys and what ring and the remote stack build for it, checked for
    # both processors. wasmtime's own code for the Apple targets is
    # wasmtime's to test; type-checking it here cost CI about five minutes.
    for check in "aarch64-apple-darwin --no-default-features --features remote,tokens" \
        "x86_64-apple-darwin --no-default-features"; do
        read -r target features <<<"$check"
        cargo check --quiet --target "$target" $features -p drainpipe-cli ||
            { echo "cargo check --target $target $features failed" >&2; exit 1; }
    done
)

step "Windows: drainpipe and the fixture link for x86_64-pc-windows-gnu"
# mingw links them; wine runs them after the Linux tests. All the crates need
# of the platform goes through host-adapter/src/pipe/sys.
rustup target add x86_64-pc-windows-gnu
if ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || [ ! -x /usr/lib/wine/wine64 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-mingw-w64-x86-64 wine64 >/dev/null
fi
# The two builds cover the session library in both feature sets (a
# separate `cargo check` type-checked wasmtime a second time, minutes).
# Without the component first: the build with it (the default) leaves the
# .exe files the wine tests run. mingw's gcc leaves empty temp files
# (`cc*`, some 160 a build) in $TMPDIR: a scratch one, removed after.
(
    TMPDIR="$(mktemp -d)"
    export TMPDIR
    trap 'rm -rf "$TMPDIR"' EXIT
    cargo build --quiet --target x86_64-pc-windows-gnu -p drainpipe-cli --no-default-features
    cargo build --quiet --target x86_64-pc-windows-gnu -p drainpipe-cli
)

step "peers: Node and Python MCP SDKs, jco"
# openssl makes the private root and certificate of the HTTPS test
# (tests/peer_remote.rs).
if ! command -v openssl >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null
fi
if [ -f tests/peers/setup.sh ]; then
    bash tests/peers/setup.sh
fi
(cd host-adapter/js && npm ci --no-audit --no-fund --loglevel=error)
# workerd and deno, binaries inside the packages, pinned by this lock.
(cd host-adapter/js/edge-test && npm ci --no-audit --no-fund --loglevel=error)

step "cargo test (workspace, default features)"
# The benches are built too (`--benches`, in the test profile, beside the
# tests' own dependencies) so that they keep compiling; a `cargo check` of
# them type-checked every dependency a second time (six minutes).
cargo test --quiet --workspace --benches --no-run
DRAINPIPE_REQUIRE_PEERS=1 cargo test --workspace

step "Windows builds under wine, driven from Linux over real pipes"
# tests/tests/wine.rs, #[ignore]d in the plain run. Wine 8.0 lacks the DLL
# Rust's std takes random bytes from: the shim is built from source beside
# the .exe files. A private prefix; its wineserver stays up for the run
# (so a test's kill reaches only what it aims at) and is ended after. The
# prefix and the wineserver's socket directory (`wine-*`, made in $TMPDIR)
# go in one scratch directory, removed after.
(
    bins="$PWD/target/x86_64-pc-windows-gnu/debug"
    TMPDIR="$(mktemp -d)"
    export TMPDIR
    x86_64-w64-mingw32-gcc -shared -O2 -o "$bins/bcryptprimitives.dll" \
        test-support/wine/bcryptprimitives.c -ladvapi32
    WINEPREFIX="$TMPDIR/prefix"
    mkdir "$WINEPREFIX"
    export WINEPREFIX WINEDEBUG=-all DRAINPIPE_WINE=/usr/lib/wine/wine64 DRAINPIPE_WINE_BIN_DIR="$bins"
    trap '/usr/lib/wine/wineserver64 -k 2>/dev/null || true; rm -rf "$TMPDIR"' EXIT
    /usr/lib/wine/wineserver64 -p
    # The first start creates the prefix (seconds): outside the tests' bounds.
    timeout 300 "$DRAINPIPE_WINE" "$bins/drainpipe.exe" --version </dev/null >/dev/null 2>&1
    cargo test -p drainpipe-release --test wine -- --ignored --test-threads=1
)

step "cargo package: the library crates and the CLI build from their packages"
# Packs and builds each crate from its .crate alone (the guest and the WIT
# inside drainpipe-host's), as a registry download or docs.rs would.
# Cargo keeps what it extracted of a registry package, and what it built
# from it, by name and version, never looking again: an earlier run's
# drainpipe-host 0.1.0 would stand in for the one just packed (the CLI then
# fails to build against an old API). Both go first.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/drainpipe-{framer,host,cli}-[0-9]* \
    target/debug/.fingerprint/drainpipe-{framer,host,cli}-*
cargo package --quiet --allow-dirty -p drainpipe-framer -p drainpipe-host -p drainpipe-cli

step "cargo test (optional features: tokio-util codec, rmcp transport)"
cargo test -p drainpipe-framer --features tokio-util
DRAINPIPE_REQUIRE_PEERS=1 cargo test -p drainpipe-host --features rmcp --test rmcp_transport
cargo test -p drainpipe-host --features rmcp --doc
cargo build -p drainpipe-host --features rmcp --examples

step "the component in Node (jco)"
(cd host-adapter/js && npm run build && npm test)

step "the edge guard in workerd and Deno (host-adapter/js/examples/worker)"
# dist/ from the step above, the upstreams and the SDK client from
# tests/peers/setup.sh: calls through UPSTREAM_URL to an SDK server that
# checks Host and Origin (createMcpExpressApp's defaults), a 30 MiB result
# condensed, a 1 GiB event failed, workerd's peak RSS within 128 MB, the
# edge tests under Deno (~30 s).
(cd host-adapter/js && timeout 600 node edge-test/run.mjs)

step "GuardedStdioClientTransport under the official SDK clients (node --test)"
# The fixture is target/debug/drainpipe (`cargo test --workspace` built it:
# this is a no-op then); dist/ is from `npm run build`; the SDK clients and
# servers from tests/peers/setup.sh. Before any pruning of target/debug.
cargo build --quiet -p drainpipe-cli --bin drainpipe
DRAINPIPE_REQUIRE_PEERS=1 DRAINPIPE_BIN="$PWD/target/debug/drainpipe" \
    node --test tests/peers/node/guarded-transport.test.mjs

step "the official MCP conformance suite's client scenarios through proxy --url"
# tests/conformance: every scenario requirements 2025-11-25 and 2026-07-28
# score, and the 2025-03-26 back-compat ones, with no expected-failures
# file: an official TypeScript SDK client (1.x, and 2.x for 2026-07-28)
# on stdio through target/debug/drainpipe, a browser stand-in approving.
bash tests/conformance/run.sh "$PWD/target/debug/drainpipe"

step "the conformance suite's server scenarios through drainpipe serve"
# tests/conformance/serve.sh: the suite's reference server (pinned in the
# same lock) behind `serve -- proxy --url`; every scenario that passes
# against it directly must pass through serve; serve's SIGTERM then ends
# every child.
bash tests/conformance/serve.sh "$PWD/target/debug/drainpipe"

step "release packages: npm tarballs and the wheel, installed offline, under the SDK client"
# release/test-packages.sh builds the Linux x86_64 wheel and npm packages
# with release/dist.sh (its own build directory, target/dist), installs
# them offline into a fresh npm prefix, venv and uv cache, and drives
# `npx drainpipe proxy` and `uvx drainpipe proxy` with the TypeScript SDK
# client. The checks need the packaging, the proxy and its token budgets,
# not the sandbox or OpenTelemetry, nor LTO and full optimisation, which
# two cores pay many minutes for (BENCHMARKS.md): CI builds without them.
# The shipped build and the other four targets are release/dist.sh's, run
# by hand.
DRAINPIPE_DIST_FEATURES=tokens CARGO_PROFILE_DIST_LTO=false CARGO_PROFILE_DIST_CODEGEN_UNITS=16 \
    CARGO_PROFILE_DIST_OPT_LEVEL=1 bash release/test-packages.sh

if [ "${DRAINPIPE_SKIP_BROWSER:-0}" != 1 ]; then
    step "the component in headless Chromium"
    if ! command -v chromium >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
    (cd host-adapter/js && npm run test:browser)
fi

if [ "${DRAINPIPE_PRUNE:-0}" = 1 ]; then
    # CI only (.ci/run sets it): the fuzz step builds in fuzz/target and
    # needs nothing from target/debug, so a one-shot run frees ~3 GB here
    # and peaks at about half the disk.
    step "pruning target/debug before the fuzz build"
    rm -rf target/debug target/x86_64-pc-windows-gnu target/dist
    disk
fi

if [ "${DRAINPIPE_SKIP_FUZZ:-0}" != 1 ]; then
    step "fuzz smoke: ${FUZZ_SMOKE_SECONDS:-20}s per target (FUZZ_COMPONENT=0: all but component_parity)"
    FUZZ_SMOKE_SECONDS="${FUZZ_SMOKE_SECONDS:-20}" bash fuzz/ci-smoke.sh
fi

step "done in $((SECONDS - started))s"
disk
