#!/usr/bin/env bash
# CI smoke run: replays the committed corpus in plain `cargo test` (stable),
# then runs every fuzz target for a short time (nightly, libFuzzer, ASan) on a
# scratch copy of its corpus. Exits non-zero if any target crashes, leaks,
# times out or fails to build, printing the command that reproduces it.
#
#   fuzz/ci-smoke.sh            # ~25 s per target
#   FUZZ_SMOKE_SECONDS=60 fuzz/ci-smoke.sh
#
# Installs nightly's cargo-fuzz if it is missing (~45 s). About 5 minutes
# with a warm fuzz/target; a cold build of the component target (wasmtime
# under ASan) is much longer: FUZZ_COMPONENT=0 leaves it out.
set -euo pipefail

cd "$(dirname "$0")/.."
seconds="${FUZZ_SMOKE_SECONDS:-25}"

if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
# The component target builds the guest with nightly too; a build never
# adds the target itself.
rustup target add wasm32-unknown-unknown --toolchain nightly
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

# shellcheck source=fuzz/asan-options.sh
source fuzz/asan-options.sh

failed=()
# (Without the component: its corpus is replayed by the fuzz run below.)
# A failure here is reported at the end, after every target has run.
echo "== corpus replay (stable)"
timeout 900 cargo test --manifest-path fuzz/Cargo.toml --quiet || failed+=("corpus-replay")

# The component target builds wasmtime and the guest (~15 min cold with
# ASan); FUZZ_COMPONENT=0 skips it.
# Without traced comparisons: they let libFuzzer solve comparisons against
# the input's bytes over a long campaign (`run.sh` keeps them), and cost
# every comparison a callback; in 25 seconds the rate counts for more, and
# `condense` (whose generated responses never meet the input's bytes) runs
# about 1.6 times as many inputs without them. (Built in a directory of its
# own, the one `run.sh` builds its untraced targets in: a build with other
# flags in fuzz/target would be rebuilt at each switch.)
flags=(-O --debug-assertions --no-trace-compares --target-dir fuzz/target/no-trace-compares)
targets=$(cargo +nightly fuzz list)
if [ "${FUZZ_COMPONENT:-1}" = 1 ]; then
    flags+=(--features component)
else
    targets=$(grep -vx component_parity <<<"$targets")
fi

echo "== build"
timeout 2700 cargo +nightly fuzz build "${flags[@]}"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in $targets; do
    mkdir -p "$scratch/corpus/$target" "$scratch/artifacts/$target"
    echo "== $target (${seconds}s)"
    # A target may have no committed corpus yet (libFuzzer exits on a
    # missing directory).
    seeds=()
    if [ -d "fuzz/corpus/$target" ]; then
        seeds=("fuzz/corpus/$target")
    fi
    status=0
    # The scratch directory receives new inputs, so the committed corpus is
    # never modified by CI. `timeout` backs up libFuzzer's own clock.
    ASAN_OPTIONS=$(asan_options "$target") timeout --kill-after=30 $((seconds + 180)) \
        cargo +nightly fuzz run "${flags[@]}" "$target" "$scratch/corpus/$target" "${seeds[@]}" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
        -dict=fuzz/dict/jsonrpc.dict -print_final_stats=1 \
        -artifact_prefix="$scratch/artifacts/$target/" >"$scratch/$target.log" 2>&1 || status=$?
    grep -E 'stat::(number_of_executed_units|average_exec_per_sec)' "$scratch/$target.log" || true
    if [ "$status" != 0 ]; then
        grep -E -A12 'panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer' "$scratch/$target.log" | head -40 || tail -40 "$scratch/$target.log"
        mkdir -p fuzz/artifacts/"$target"
        for artifact in "$scratch/artifacts/$target"/*; do
            [ -e "$artifact" ] || continue
            cp "$artifact" fuzz/artifacts/"$target"/
            echo "reproduce: cargo +nightly fuzz run ${flags[*]} $target fuzz/artifacts/$target/$(basename "$artifact")"
        done
        failed+=("$target")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz smoke FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz smoke passed"
