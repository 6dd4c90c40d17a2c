"""How long the first call with a budget in tokens waits for the counter.

    python3 bench/tokens/first_use.py DRAINPIPE FIXTURE [DELAY_S] [CLIP]

Starts `DRAINPIPE proxy --clip CLIP -- FIXTURE` (CLIP 25000tokens), sends
`initialize`, waits DELAY_S seconds (0), then calls the fixture's `large`
tool (1 MiB) twice and prints how long each call took: the first pays for
building the `o200k_base` counter unless the proxy finished it during the
delay. With a budget in bytes (CLIP 100KiB) both calls show the cost of the
call itself.
"""

import json
import subprocess
import sys
import time

binary, fixture = sys.argv[1], sys.argv[2]
delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
clip = sys.argv[4] if len(sys.argv) > 4 else "25000tokens"
proxy = subprocess.Popen(
    [binary, "proxy", "--metrics", "none", "--clip", clip, "--", fixture],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    stderr=subprocess.DEVNULL,
)


def send(message):
    proxy.stdin.write((json.dumps(message) + "\n").encode())
    proxy.stdin.flush()


def answer():
    while True:
        line = proxy.stdout.readline()
        if not line:
            sys.exit("the proxy ended")
        message = json.loads(line)
        if "id" in message:
            return message


send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "first-use", "version": "0"}}})
answer()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
time.sleep(delay)
took = []
for request in (2, 3):
    started = time.monotonic()
    send({"jsonrpc": "2.0", "id": request, "method": "tools/call",
          "params": {"name": "large", "arguments": {"bytes": 1 << 20}}})
    answer()
    took.append(round(1000 * (time.monotonic() - started)))
proxy.stdin.close()
proxy.wait()
print(f"--clip {clip}, first call {delay} s after initialize: {took[0]} ms, the next {took[1]} ms")
