"""Writes N JSON-RPC notifications of SIZE bytes each (newline included) to
stdout, in writes of about 1 MiB, as a Python MCP server writes a burst.

    python3 bench/pipe/writer.py N SIZE
"""

import sys

count, size = int(sys.argv[1]), int(sys.argv[2])
head = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
tail = '"}}\n'
line = (head + "x" * (size - len(head) - len(tail)) + tail).encode()
assert len(line) == size, "SIZE is too small for a notification"
per_write = max(1, (1 << 20) // size)
out = sys.stdout.buffer
left = count
while left > 0:
    n = min(per_write, left)
    out.write(line * n)
    left -= n
out.flush()
