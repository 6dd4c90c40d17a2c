#!/usr/bin/env bash
# Instructions per method on the framer workloads, counted by callgrind (repeatable on a noisy
# machine). Prints instructions per byte after subtracting data generation.
# Then the same for the framer component against the native framer (ratio = native / component
# instructions, the share of native speed if instructions were all that counted).
# Usage: bash scripts/instructions.sh      (needs valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --profile bench -p drainpipe-framer --features testing --example instructions
bin=target/release/examples/instructions
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 |
    awk '/refs:/ {gsub(",", "", $NF); print $NF}'
}
printf '| workload | method | instructions | per byte |\n|---|---|---|---|\n'
for which in large small; do
  base=$(count "$which" none)
  bytes=$("$bin" "$which" none | awk '{print $(NF-1)}')
  for method in frame_utf8 strict_json serde_json lines_codec strict_json_read serde_json_read; do
    n=$(( $(count "$which" "$method") - base ))
    printf '| %s | %s | %d | %s |\n' "$which" "$method" "$n" "$(awk -v n="$n" -v b="$bytes" 'BEGIN {printf "%.2f", n / b}')"
  done
done

# The component beside the native framer: the same passes, collected only inside the measured
# function (compiling and instantiating the component are not counted).
cargo build -q --profile bench -p drainpipe-host --example component_instructions
bin=target/release/examples/component_instructions
inside() {
  valgrind --tool=callgrind --smc-check=all --toggle-collect='*measured*' --callgrind-out-file=/dev/null \
    "$bin" "$@" 2>&1 | awk '/refs:/ {gsub(",", "", $NF); print $NF}'
}
printf '\n| workload | mode | native | component | ratio | component without call deadlines | ratio |\n|---|---|---|---|---|---|---|\n'
for which in large small; do
  for mode in framing strict; do
    n=$(inside "$which" "$mode" native)
    c=$(inside "$which" "$mode" component)
    f=$(inside "$which" "$mode" component-no-deadline)
    printf '| %s | %s | %d | %d | %s | %d | %s |\n' "$which" "$mode" "$n" "$c" \
      "$(awk -v a="$n" -v b="$c" 'BEGIN {printf "%.0f%%", 100 * a / b}')" "$f" \
      "$(awk -v a="$n" -v b="$f" 'BEGIN {printf "%.0f%%", 100 * a / b}')"
  done
done
