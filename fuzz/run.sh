#!/usr/bin/env bash
# A fuzzing campaign: every target (or the ones named) for a given time, then
# the corpus merged and minimised, crash artifacts kept with a one-line
# reproduce command, and execs/s and coverage printed per target.
#
#   fuzz/run.sh [-t SECONDS_PER_TARGET] [-j PARALLEL_TARGETS] [-m] [TARGET...]
#
#   -t  seconds per target (default 300)
#   -j  targets run at once (default 1; each libFuzzer process uses one core)
#   -m  merge inputs that add coverage into the committed fuzz/corpus/<target>
#       (otherwise they stay in $FUZZ_WORK/corpus/<target>)
#   -k  keep going after a crash (libFuzzer fork mode): every crash is saved
#       and the campaign goes on, so one open bug does not hide the next
#
# Environment: FUZZ_WORK (default fuzz/work: corpus, logs, artifacts of the
# campaign), FUZZ_SANITIZER (address, the default, or none for ~2x speed),
# FUZZ_MAX_LEN (default 4096 bytes per input), FUZZ_COMPONENT (1, the
# default, includes component_parity, which builds wasmtime; 0 skips it).
#
# Exit status: 0 if no target crashed, 1 if any did (the summary says which).
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=fuzz/asan-options.sh
source fuzz/asan-options.sh
seconds=300
parallel=1
merge_into_repo=0
keep_going=()
while getopts "t:j:mk" opt; do
    case "$opt" in
        t) seconds="$OPTARG" ;;
        j) parallel="$OPTARG" ;;
        m) merge_into_repo=1 ;;
        k) keep_going=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1) ;;
        *) sed -n '2,20p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))

work="${FUZZ_WORK:-fuzz/work}"
sanitizer="${FUZZ_SANITIZER:-address}"
max_len="${FUZZ_MAX_LEN:-4096}"
fuzz=(cargo +nightly fuzz)
base_flags=(-O --debug-assertions --sanitizer "$sanitizer")
build_flags=("${base_flags[@]}")

if ! "${fuzz[@]}" --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz (and rustup toolchain install nightly)" >&2
    exit 2
fi

# The component target builds wasmtime and the guest; FUZZ_COMPONENT=0 skips it.
if [ "${FUZZ_COMPONENT:-1}" = 1 ]; then
    build_flags+=(--features component)
    rustup target add wasm32-unknown-unknown --toolchain nightly
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <("${fuzz[@]}" list)
    if [ "${FUZZ_COMPONENT:-1}" != 1 ]; then
        mapfile -t targets < <(printf '%s\n' "${targets[@]}" | grep -vx component_parity)
    fi
fi

# Targets built without traced comparisons, in a target directory of their
# own (one directory holds one set of flags): their input is a seed and a
# few numbers that never meet the values the code compares, so the traces
# teach libFuzzer nothing and cost a callback per comparison (`condense`
# runs about 1.6 times as many inputs without them).
untraced=(condense)
is_untraced() {
    printf '%s\n' "${untraced[@]}" | grep -qx "$1"
}
flags_for() {
    if is_untraced "$1"; then
        # (Nor the component feature: none of them needs wasmtime.)
        echo "${base_flags[@]}" --no-trace-compares --target-dir fuzz/target/no-trace-compares
    else
        echo "${build_flags[@]}"
    fi
}

mkdir -p "$work/logs"
echo "building ${targets[*]} (sanitizer: $sanitizer)"
"${fuzz[@]}" build "${build_flags[@]}" >"$work/logs/build.log" 2>&1 || {
    tail -40 "$work/logs/build.log" >&2
    exit 2
}
for target in "${targets[@]}"; do
    if is_untraced "$target"; then
        # shellcheck disable=SC2046 # the flags are words
        "${fuzz[@]}" build $(flags_for "$target") "$target" >>"$work/logs/build.log" 2>&1 || {
            tail -40 "$work/logs/build.log" >&2
            exit 2
        }
    fi
done

# One campaign for one target; runs in the background when -j > 1.
campaign() {
    local target="$1"
    local corpus="$work/corpus/$target"
    local artifacts="$work/artifacts/$target"
    local log="$work/logs/$target.log"
    local flags
    read -r -a flags <<<"$(flags_for "$target")"
    mkdir -p "$corpus" "$artifacts"
    # A target may have no committed corpus yet (libFuzzer exits on a
    # missing directory).
    local seeds=()
    if [ -d "fuzz/corpus/$target" ]; then
        seeds=("fuzz/corpus/$target")
    fi
    # New inputs go to the work corpus; the committed seeds are read only.
    # `timeout` backs up libFuzzer's own clock in case a run wedges.
    local status=0
    ASAN_OPTIONS=$(asan_options "$target") timeout --kill-after=30 $((seconds + 120)) \
        "${fuzz[@]}" run "${flags[@]}" "$target" "$corpus" "${seeds[@]}" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
        -dict=fuzz/dict/jsonrpc.dict -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "${keep_going[@]}" >"$log" 2>&1 || status=$?
    echo "$status" >"$work/logs/$target.status"
    # Minimise the campaign corpus (keeps one input per feature). With the
    # run's ASan options: the merge replays every input, so it costs what
    # the run did per input.
    ASAN_OPTIONS=$(asan_options "$target") timeout 600 "${fuzz[@]}" cmin "${flags[@]}" "$target" "$corpus" \
        >"$work/logs/$target.cmin.log" 2>&1 || true
    if [ "$merge_into_repo" = 1 ]; then
        # -merge=1 copies only inputs that add coverage to the first directory.
        mkdir -p "fuzz/corpus/$target"
        ASAN_OPTIONS=$(asan_options "$target") timeout 600 "${fuzz[@]}" run "${flags[@]}" "$target" "fuzz/corpus/$target" "$corpus" -- \
            -merge=1 -max_len="$max_len" >"$work/logs/$target.merge.log" 2>&1 || true
    fi
}

running=0
for target in "${targets[@]}"; do
    echo "fuzzing $target for ${seconds}s"
    campaign "$target" &
    running=$((running + 1))
    if [ "$running" -ge "$parallel" ]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait || true

# A number from libFuzzer's -print_final_stats output, or nothing.
final_stat() {
    grep -o "stat::$1: *[0-9]*" "$2" 2>/dev/null | grep -o '[0-9]*$' | tail -1 || true
}

# Summary: one line per target from libFuzzer's final stats and last status line.
failed=0
printf '\n%-20s %8s %10s %9s %7s %8s %7s %s\n' target seconds execs exec/s cov features corpus result
for target in "${targets[@]}"; do
    log="$work/logs/$target.log"
    status=$(cat "$work/logs/$target.status" 2>/dev/null || echo "?")
    execs=$(final_stat number_of_executed_units "$log")
    rate=$(final_stat average_exec_per_sec "$log")
    last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
    if [ -z "$execs" ]; then
        # No final stats (the run crashed): fall back to the last status line.
        execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")
        rate=$(sed -n 's/.*exec\/s: \([0-9]*\).*/\1/p' <<<"$last")
    fi
    cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")
    crashes=$(find "$work/artifacts/$target" -type f 2>/dev/null \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | sort || true)
    result=ok
    if [ -n "$crashes" ] || [ "$status" != 0 ]; then
        result="FAILED (exit $status)"
        failed=1
    fi
    printf '%-20s %8s %10s %9s %7s %8s %7s %s\n' "$target" "$seconds" "${execs:--}" "${rate:--}" \
        "${cov:--}" "${ft:--}" "${corp:--}" "$result"
    [ -z "$crashes" ] || : >"$work/artifacts/$target/REPRODUCE.txt"
    for crash in $crashes; do
        line="cargo +nightly fuzz run $(flags_for "$target") $target $crash"
        echo "    reproduce: $line"
        echo "$line" >>"$work/artifacts/$target/REPRODUCE.txt"
    done
done
echo
echo "logs: $work/logs   corpus: $work/corpus   artifacts: $work/artifacts"
echo "cov = edges covered (libFuzzer's count), features = coverage features incl. edge counters"
exit "$failed"
