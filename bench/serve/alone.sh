#!/usr/bin/env bash
# One client, one big call at a time, nothing else running: how long each
# gateway takes to forward a result of N MiB whole, and its own peak RSS
# (VmHWM). drainpipe runs with --max-frame 128MiB (no --clip), as the others
# forward. Each gateway is started anew for each size. See README.md.
#
#   bash bench/serve/alone.sh [--gateways "drainpipe supergateway mcp-proxy"] [--timeout-s 180] MIB...
#
# Environment as for run.sh (DRAINPIPE, FIXTURE, NODE); run run.sh once first to install the peers.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
gateways="drainpipe supergateway mcp-proxy" timeout_s=180
while [ $# -gt 0 ]; do
  case "$1" in
    --gateways) gateways="$2"; shift 2 ;;
    --timeout-s) timeout_s="$2"; shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: alone.sh [--gateways …] [--timeout-s S] MIB..." >&2; exit 2; }
target="${CARGO_TARGET_DIR:-$root/target}"
DRAINPIPE="${DRAINPIPE:-$target/release/drainpipe}"
FIXTURE="${FIXTURE:-$target/release/drainpipe-fixture}"
NODE="${NODE:-node}"

for gw in $gateways; do
  for mib in "$@"; do
    port="$("$NODE" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
    case "$gw" in
      drainpipe) "$DRAINPIPE" serve --listen "127.0.0.1:$port" --max-frame 128MiB -- "$FIXTURE" >/dev/null 2>&1 & ;;
      supergateway) "$NODE" "$here/node/node_modules/supergateway/dist/index.js" --stdio "$FIXTURE" \
          --outputTransport streamableHttp --stateful --port "$port" --logLevel none >/dev/null 2>&1 & ;;
      mcp-proxy) "$here/.venv/bin/mcp-proxy" --port "$port" --log-level WARNING -- "$FIXTURE" >/dev/null 2>&1 & ;;
      *) echo "alone.sh: unknown gateway $gw" >&2; exit 2 ;;
    esac
    pid=$!
    for _ in $(seq 300); do curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/" && break; sleep 0.1; done
    # one-big waits for a line before calling and for another before closing.
    result="$(cd "$here/node" && printf 'go\n\n' | timeout $((timeout_s + 20)) "$NODE" load.mjs one-big \
      --url "http://127.0.0.1:$port/mcp" --bytes $((mib * 1048576)) --timeout-ms $((timeout_s * 1000)) | tail -1)" || true
    case "$result" in \{*) ;; *) result="\"$(printf '%s' "$result" | tr -d '"\\')\"" ;; esac
    hwm="$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")"
    echo "{\"gateway\":\"$gw\",\"mib\":$mib,\"gatewayHwmKiB\":${hwm:-0},\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"result\":${result:-null}}"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    sleep 1
  done
done
