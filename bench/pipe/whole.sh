#!/usr/bin/env bash
# The pipe as a user sees it: `writer.py N SIZE | cat > /dev/null` against
# `DRAINPIPE proxy -- writer.py N SIZE > /dev/null`, each timed as a whole
# process from its start to its exit, nothing sampling beside it, ROUNDS
# interleaved rounds; the medians and the proxy's share of `cat`'s speed.
#
#   bash bench/pipe/whole.sh DRAINPIPE [ROUNDS]
#
# The sizes: 8,000 lines of 64 KiB, 500 of 1 MiB, 300,000 of 1 KiB and
# 1,000,000 of 100 B (about 500 MB, 500 MB, 300 MB and 100 MB).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$1" rounds="${2:-5}"
ms() {
    local started
    started="$(date +%s%N)"
    bash -c "$1"
    echo $((($(date +%s%N) - started) / 1000000))
}
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for spec in "8000 65536" "500 1048576" "300000 1024" "1000000 100"; do
    read -r n size <<<"$spec"
    writer="python3 $here/writer.py $n $size"
    cats=() proxies=()
    for _ in $(seq "$rounds"); do
        cats+=("$(ms "$writer | cat > /dev/null")")
        proxies+=("$(ms "$bin proxy --metrics none -- $writer > /dev/null < /dev/null")")
    done
    c="$(median "${cats[@]}")" p="$(median "${proxies[@]}")"
    echo "{\"size\":$size,\"lines\":$n,\"catMs\":[$(IFS=,; echo "${cats[*]}")],\"proxyMs\":[$(IFS=,; echo "${proxies[*]}")],\"catMedian\":$c,\"proxyMedian\":$p,\"share\":$((100 * c / p))}"
done
