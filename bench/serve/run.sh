#!/usr/bin/env bash
# drainpipe serve beside supergateway and mcp-proxy: many sessions calling a
# small tool, and a 100 MB result to one client while 50 others keep calling.
# See bench/serve/README.md. Linux only (memory is read from /proc).
#
#   bash bench/serve/run.sh [--sessions 200] [--calls 20] [--reps 2] [--clients "sdk http"]
#                           [--gateways "drainpipe supergateway mcp-proxy"] [--only sessions|big]
#                           [--big-bytes 104857600] [--big-sessions 50] [--big-client http]
#                           [--big-pace-ms 250] [--out DIR]
#
# Environment: DRAINPIPE and FIXTURE (default: the release binaries in
# $CARGO_TARGET_DIR or target/), NODE (default: node on PATH; Node >= 20).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

sessions=200 calls=20 reps=2 clients="sdk http" only=""
gateways="drainpipe supergateway mcp-proxy"
big_bytes=104857600 big_sessions=50 big_client=http big_pace_ms=250
out="$here/out"
while [ $# -gt 0 ]; do
  case "$1" in
    --sessions) sessions="$2"; shift 2 ;;
    --calls) calls="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --gateways) gateways="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --big-bytes) big_bytes="$2"; shift 2 ;;
    --big-sessions) big_sessions="$2"; shift 2 ;;
    --big-client) big_client="$2"; shift 2 ;;
    --big-pace-ms) big_pace_ms="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "run.sh: unknown argument $1 (see the head of this file)" >&2; exit 2 ;;
  esac
done

target="${CARGO_TARGET_DIR:-$root/target}"
DRAINPIPE="${DRAINPIPE:-$target/release/drainpipe}"
FIXTURE="${FIXTURE:-$target/release/drainpipe-fixture}"
NODE="${NODE:-node}"
for f in "$DRAINPIPE" "$FIXTURE"; do
  [ -x "$f" ] || { echo "run.sh: $f missing: cargo build --release -p drainpipe-cli --bins" >&2; exit 2; }
done

# The peers, pinned: npm's lock file and the venv's requirements.
if [ ! -d "$here/node/node_modules/supergateway" ] || [ "$here/node/package-lock.json" -nt "$here/node/node_modules/.package-lock.json" ]; then
  (cd "$here/node" && npm ci --no-audit --no-fund --silent)
fi
if [ ! -x "$here/.venv/bin/mcp-proxy" ]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi

mkdir -p "$out"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
results="$out/results-$stamp.jsonl"
log="$out/gateways-$stamp.log"
: >"$results"

free_port() {
  "$NODE" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

gw_pid=""
# start_gateway NAME PORT [drainpipe options...]: starts it in the background, waits
# (30 s at most) until its port answers.
start_gateway() {
  local name="$1" port="$2"; shift 2
  echo "== $name on port $port ($*)" >>"$log"
  case "$name" in
    drainpipe*)
      "$DRAINPIPE" serve --listen "127.0.0.1:$port" --max-sessions 250 "$@" -- "$FIXTURE" >>"$log" 2>&1 & ;;
    supergateway)
      "$NODE" "$here/node/node_modules/supergateway/dist/index.js" --stdio "$FIXTURE" \
        --outputTransport streamableHttp --stateful --port "$port" --logLevel none >>"$log" 2>&1 & ;;
    mcp-proxy)
      "$here/.venv/bin/mcp-proxy" --port "$port" --log-level WARNING -- "$FIXTURE" >>"$log" 2>&1 & ;;
    *) echo "run.sh: unknown gateway $name" >&2; exit 2 ;;
  esac
  gw_pid=$!
  for _ in $(seq 300); do
    if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/"; then return 0; fi
    kill -0 "$gw_pid" 2>/dev/null || { echo "run.sh: $name exited at start (see $log)" >&2; return 1; }
    sleep 0.1
  done
  echo "run.sh: $name did not listen within 30 s" >&2
  return 1
}

# stop_gateway: SIGTERM, 20 s, SIGKILL; then reports (and ends) any process of its
# tree still alive: a child the gateway left behind.
stop_gateway() {
  local pids left="" p
  pids="$("$NODE" -e 'import("'"$here"'/node/procmem.mjs").then(m=>console.log(m.tree(process.argv[1]).join(" ")))' "$gw_pid")"
  kill -TERM "$gw_pid" 2>/dev/null || true
  for _ in $(seq 200); do kill -0 "$gw_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$gw_pid" 2>/dev/null || true
  wait "$gw_pid" 2>/dev/null || true
  # Its children get 10 s to end after it (drainpipe's orphan guard ends about 1 s later).
  for _ in $(seq 100); do
    left=""
    for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
    [ -n "$left" ] || return 0
    sleep 0.1
  done
  for p in $left; do
    echo "run.sh: left 10 s after the gateway stopped: $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" | tee -a "$log" >&2
    kill -KILL "$p" 2>/dev/null || true
  done
}

load() { # load MODE LABEL PORT ARGS...: one run of the load client, its JSON line tagged
  local mode="$1" label="$2" port="$3"; shift 3
  local line
  line="$(cd "$here/node" && timeout 300 "$NODE" load.mjs "$mode" --url "http://127.0.0.1:$port/mcp" \
    --pid "$gw_pid" --label "$label" "$@" | tail -1)" || line='{"error":"load client failed or timed out"}'
  printf '{"gateway":"%s","load":"%s",%s\n' "$label" "$(cut -d' ' -f1-3 /proc/loadavg)" "${line#\{}" | tee -a "$results"
}

{
  echo "{\"machine\":\"$(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\","
  echo " \"drainpipe\":\"$("$DRAINPIPE" --version)\", \"commit\":\"$(git -C "$root" rev-parse --short HEAD)\","
  echo " \"node\":\"$("$NODE" --version)\", \"python\":\"$("$here/.venv/bin/python" --version)\","
  echo " \"supergateway\":\"$("$NODE" -p 'require("'"$here"'/node/node_modules/supergateway/package.json").version')\","
  echo " \"mcp-proxy\":\"$("$here/.venv/bin/pip" show mcp-proxy | sed -n 's/^Version: //p')\", \"started\":\"$stamp\"}"
} | tr -d '\n' >"$out/machine-$stamp.json"
echo >>"$out/machine-$stamp.json"
cat "$out/machine-$stamp.json"

if [ "$only" != big ]; then
  for rep in $(seq "$reps"); do
    # Rotate the order each repetition: no gateway always runs first.
    order="$gateways"
    for _ in $(seq $((rep - 1))); do order="$(echo "$order" | awk '{for(i=2;i<=NF;i++)printf "%s ",$i; print $1}')"; done
    for gw in $order; do
      for client in $clients; do
        port="$(free_port)"
        if start_gateway "$gw" "$port"; then
          load sessions "$gw" "$port" --sessions "$sessions" --calls "$calls" --client "$client"
        fi
        stop_gateway
      done
    done
  done
fi

if [ "$only" != sessions ]; then
  for gw in $gateways; do
    port="$(free_port)"
    if [ "$gw" = drainpipe ]; then
      if start_gateway drainpipe "$port" --clip 256KiB; then
        load big "drainpipe --clip 256KiB" "$port" --sessions "$big_sessions" --bytes "$big_bytes" --client "$big_client" --pace-ms "$big_pace_ms"
      fi
      stop_gateway
      # The same result forwarded whole, as the peers do: the transport limit raised
      # above it, no budget.
      port="$(free_port)"
      if start_gateway drainpipe "$port" --max-frame 128MiB; then
        load big "drainpipe --max-frame 128MiB" "$port" --sessions "$big_sessions" --bytes "$big_bytes" --client "$big_client" --pace-ms "$big_pace_ms"
      fi
    elif start_gateway "$gw" "$port"; then
      load big "$gw" "$port" --sessions "$big_sessions" --bytes "$big_bytes" --client "$big_client" --pace-ms "$big_pace_ms" --big-timeout-ms 150000
    fi
    stop_gateway
  done
fi

echo "results: $results (gateways' output: $log)"
"$NODE" "$here/node/summarize.mjs" "$results"
