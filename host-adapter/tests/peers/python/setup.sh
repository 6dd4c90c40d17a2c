#!/bin/sh
# Installs the Python MCP SDK for server.py into a virtual environment.
# Usage: host-adapter/tests/peers/python/setup.sh [VENV_DIR]
# Default VENV_DIR: target/peers/py under the workspace root. The rmcp tests
# look there (or at $DRAINPIPE_PYTHON, an interpreter that can import mcp).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${1:-$here/../../../../target/peers/py}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
# The same pinned SDK as the release suite's peers.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/../../../../tests/peers/python/requirements.txt"
"$venv/bin/python" -c 'import importlib.metadata as m; print("mcp", m.version("mcp"), "in", __import__("sys").prefix)'
