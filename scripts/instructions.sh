#!/usr/bin/env bash
# Instructions per method on the framer workloads, counted by callgrind (repeatable on a noisy
# machine). Prints instructions per byte after subtracting data generation.
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
  for method in frame_utf8 strict_json serde_json lines_codec; do
    n=$(( $(count "$which" "$method") - base ))
    printf '| %s | %s | %d | %s |\n' "$which" "$method" "$n" "$(awk -v n="$n" -v b="$bytes" 'BEGIN {printf "%.2f", n / b}')"
  done
done
