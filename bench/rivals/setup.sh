#!/usr/bin/env bash
# Installs the rival stdio proxies the latency bench runs beside drainpipe
# (requirements.txt) into bench/rivals/.venv. Benchmarks only: no test needs
# them. Usage: bash bench/rivals/setup.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
fi
"$here/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
echo "rivals: ready: $("$here/.venv/bin/pip" freeze | grep -iE 'governor|ultra-lean' | tr '\n' ' ')"
