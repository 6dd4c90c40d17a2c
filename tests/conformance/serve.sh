#!/usr/bin/env bash
# The official MCP conformance suite's server scenarios through
# `drainpipe serve -- drainpipe proxy --url <the suite's reference server>`:
# every scenario of a requirement set that passes against the reference
# server directly must pass through serve, in the same run. The reference
# server is the suite's own (server/everything-server.ts, kept as its
# repository has it; see server/README.md), run with the tsx and SDK of
# this folder's lock.
#
#   bash tests/conformance/serve.sh [path/to/drainpipe]
#
# The 2025-11-25 set is run a third time through `serve --shared` (every
# session on one child): it must pass there as it does directly. (The
# 2026-07-28 set is not: a shared child keeps the revision its first client
# set up, here the earlier run's.)
#
# Afterwards each serve is stopped with SIGTERM: it must exit 0 and leave
# no `proxy --url` child behind.
#
# The totals printed may differ by a check where the suite scores serve's
# way as information: in `server-sse-polling` the reference server closes
# the POST stream mid-call for the client to resume with Last-Event-ID;
# `proxy --url` resumes it upstream and serve answers on the stream still
# open, which the suite records as "did not disconnect mid-call" (INFO, not
# a pass: 83 checks against 84). Under 2026-07-28,
# `server-sse-multiple-streams` gets SSE streams from serve where the
# reference server answers JSON, one check more (131 against 130).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:-$root/target/debug/drainpipe}"
[ -x "$bin" ] || { echo "conformance: no drainpipe binary at $bin" >&2; exit 1; }
. "$here/install.sh"

work="$(mktemp -d)"
reference_pid="" serve_pid="" shared_pid=""
cleanup() {
    [ -n "$serve_pid" ] && kill -KILL "$serve_pid" 2>/dev/null
    [ -n "$shared_pid" ] && kill -KILL "$shared_pid" 2>/dev/null
    [ -n "$reference_pid" ] && kill -TERM "$reference_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# The reference server on a free port.
port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
(cd "$here/server" && PORT="$port" exec "$here/node_modules/.bin/tsx" everything-server.ts) \
    >"$work/reference.log" 2>&1 &
reference_pid=$!
# serve on a free port of its own choosing, in front of proxy --url; and
# serve --shared the same way.
"$bin" serve --listen 127.0.0.1:0 -- "$bin" proxy --no-oauth --metrics none \
    --url "http://localhost:$port/mcp" 2>"$work/serve.log" &
serve_pid=$!
"$bin" serve --listen 127.0.0.1:0 --shared -- "$bin" proxy --no-oauth --metrics none \
    --url "http://localhost:$port/mcp" 2>"$work/shared.log" &
shared_pid=$!
for _ in $(seq 300); do
    grep -q 'listening on' "$work/serve.log" && grep -q 'listening on' "$work/shared.log" &&
        grep -q 'running on' "$work/reference.log" && break
    sleep 0.1
done
address() { grep -oE 'listening on http://[^ ]+' "$1" | sed 's/listening on //'; }
served=$(address "$work/serve.log") ||
    { echo "conformance: serve did not start" >&2; cat "$work/serve.log" >&2; exit 1; }
shared=$(address "$work/shared.log") ||
    { echo "conformance: serve --shared did not start" >&2; cat "$work/shared.log" >&2; exit 1; }
grep -q 'running on' "$work/reference.log" ||
    { echo "conformance: the reference server did not start" >&2; cat "$work/reference.log" >&2; exit 1; }
echo "conformance: reference server on :$port, serve at $served, serve --shared at $shared"

# Each scenario's verdict (✓ or ✗) and name, from a run's summary.
verdicts() { grep -E '^[✓✗] [a-z0-9-]+:' "$1" | sed -E 's/^([✓✗]) ([a-z0-9-]+):.*/\2 \1/' | LC_ALL=C sort; }

failed=0
# compare SET URL NAME: SET's scenarios directly, then at URL (NAME).
compare() {
    local set="$1" url="$2" name="$3"
    if [ ! -s "$work/direct-$set.txt" ]; then
        timeout 600 npx --no-install conformance server --url "http://localhost:$port/mcp" \
            --requirements "$set" >"$work/direct-$set.log" 2>&1 || true
        verdicts "$work/direct-$set.log" >"$work/direct-$set.txt"
    fi
    timeout 600 npx --no-install conformance server --url "$url" \
        --requirements "$set" >"$work/served.log" 2>&1 || true
    verdicts "$work/served.log" >"$work/served.txt"
    [ -s "$work/direct-$set.txt" ] || { echo "conformance: $set: no verdicts from the direct run" >&2; tail -20 "$work/direct-$set.log" >&2; failed=1; return; }
    # Scenarios that pass directly and not through serve.
    local lost
    lost=$(LC_ALL=C join "$work/direct-$set.txt" "$work/served.txt" -a1 | awk '$2 == "✓" && $3 != "✓" { print $1 }')
    local passing
    passing=$(grep -c ' ✓$' "$work/direct-$set.txt" || true)
    if [ -n "$lost" ]; then
        echo "conformance: $set through $name: FAILED: passes directly, not through $name: $lost" >&2
        for scenario in $lost; do
            sed -n "/=== Running scenario: $scenario ===/,/=== Running scenario/p" "$work/served.log" | head -30 >&2
        done
        grep -E 'FAILURE' "$work/served.log" | head -40 >&2
        failed=1
    else
        echo "conformance: $set through $name: the $passing scenarios that pass directly pass ($(grep -E '^Total:' "$work/direct-$set.log" | tail -1) directly, $(grep -E '^Total:' "$work/served.log" | tail -1) through $name)"
    fi
}
compare 2025-11-25 "$served" serve
compare 2026-07-28 "$served" serve
compare 2025-11-25 "$shared" "serve --shared"

# SIGTERM: serve drains, ends every session's child, exits 0.
stop() {
    local pid="$1" name="$2" log="$3" status=0
    kill -TERM "$pid"
    timeout 60 tail --pid="$pid" -f /dev/null || status=$?
    wait "$pid" || status=$?
    if [ "$status" != 0 ]; then
        echo "conformance: $name exited $status after SIGTERM" >&2
        tail -20 "$log" >&2
        failed=1
    fi
}
stop "$serve_pid" serve "$work/serve.log"
serve_pid=""
stop "$shared_pid" "serve --shared" "$work/shared.log"
shared_pid=""
if pgrep -f -- "--url http://localhost:$port/mcp" >/dev/null; then
    echo "conformance: serve left proxy children running" >&2
    pgrep -af -- "--url http://localhost:$port/mcp" >&2
    failed=1
fi
exit "$failed"
