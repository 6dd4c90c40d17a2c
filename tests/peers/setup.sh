#!/usr/bin/env bash
# Installs the real MCP peers the release suite runs against, at pinned
# versions; idempotent (a second run with nothing changed does nothing).
#
#   tests/peers/node:   npm ci from the committed package-lock.json: the
#                       TypeScript SDK 1.x and v2 clients and servers, and
#                       server-everything and server-filesystem (the release
#                       tests and guarded-transport.test.mjs run against them)
#   tests/peers/python: a venv in .venv with python/requirements.txt (mcp and its deps)
#
# Needs node >= 20 with npm, and python3 >= 3.10 with the venv module.
# Usage: bash tests/peers/setup.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

say() { printf 'peers: %s\n' "$*"; }
die() { printf 'peers: %s\n' "$*" >&2; exit 1; }
digest() { sha256sum "$@" | sha256sum | cut -d' ' -f1; }

# --- Node.js -----------------------------------------------------------------
command -v node >/dev/null || die "node is not installed (Debian: apt-get install nodejs npm)"
command -v npm >/dev/null || die "npm is not installed (Debian: apt-get install npm)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || die "node >= 20 is needed, found $(node --version)"
cd "$here/node"
stamp="node_modules/.drainpipe-peers"
want="$(digest package.json package-lock.json)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "node peers up to date"
else
    say "installing node peers (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$want" > "$stamp"
fi

# --- Python ------------------------------------------------------------------
python="${PYTHON:-python3}"
command -v "$python" >/dev/null || die "python3 is not installed"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || die "python >= 3.10 is needed for the mcp SDK, found $("$python" --version)"
cd "$here/python"
stamp=".venv/.drainpipe-peers"
want="$(digest requirements.txt)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && .venv/bin/python -c 'import mcp' 2>/dev/null; then
    say "python peers up to date"
else
    if [ ! -x .venv/bin/python ]; then
        say "creating tests/peers/python/.venv"
        "$python" -m venv .venv || die "could not create a venv (Debian: apt-get install python3-venv)"
    fi
    say "installing python peers (pip install -r requirements.txt)"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
    echo "$want" > "$stamp"
fi
say "ready: node $(node --version), $(.venv/bin/python -c 'import importlib.metadata as m; print("mcp", m.version("mcp"))')"
