#!/usr/bin/env bash
# One answer of N MiB forwarded whole through `drainpipe serve` (no --clip,
# --max-frame 128MiB) to a curl client: the time of the call, serve's peak
# RSS (VmHWM) and its RSS a second after the answer, with the session
# still open.
#
#   bash bench/serve/whole.sh DRAINPIPE FIXTURE MIB...
set -euo pipefail
bin="$1" fixture="$2"
shift 2
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for mib in "$@"; do
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "$bin" serve --listen "127.0.0.1:$port" --max-frame 128MiB -- "$fixture" 2>/dev/null &
    pid=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
    headers=(-H 'content-type: application/json' -H 'accept: application/json, text/event-stream')
    session="$(curl -s -D - -o /dev/null "${headers[@]}" "http://127.0.0.1:$port/mcp" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"whole","version":"0"}}}' |
        awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }' | tr -d '\r')"
    started="$(date +%s%N)"
    curl -s -o "$out" "${headers[@]}" -H "mcp-session-id: $session" "http://127.0.0.1:$port/mcp" \
        -d "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"large\",\"arguments\":{\"bytes\":$((mib << 20))}}}"
    ms=$((($(date +%s%N) - started) / 1000000))
    peak="$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status")"
    sleep 1
    after="$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")"
    echo "{\"mib\":$mib,\"bytes\":$(stat -c %s "$out"),\"ms\":$ms,\"peakKiB\":$peak,\"afterKiB\":$after}"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
done
