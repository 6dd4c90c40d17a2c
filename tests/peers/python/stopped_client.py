"""A Python SDK host that the serve criterion stops (SIGSTOP) mid-answer.

    python stopped_client.py URL

Initializes over `streamable_http_client`, prints `calling` and calls the
fixture's `slow` tool with 3,000 steps of no delay (its progress
notifications), while the test stops this process. Once it runs again it prints the
call's outcome as a JSON line ({"call": "error", "code": N} or {"call":
"answered"}), then calls again on the same session and prints {"second":
"answered"} or the error. Exit 0 when both lines were printed.
"""

import json
import sys
import warnings

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

warnings.simplefilter("ignore")


def say(value) -> None:
    print(json.dumps(value), flush=True)


async def main(url: str) -> None:
    with anyio.fail_after(300):
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=240) as session:
                await session.initialize()
                say({"step": "calling"})
                try:
                    await session.call_tool("slow", {"steps": 3000, "step_ms": 0})
                    say({"call": "answered"})
                except MCPError as error:
                    say({"call": "error", "code": error.error.code, "message": error.error.message})
                try:
                    result = await session.call_tool("slow", {"steps": 1, "step_ms": 0})
                    say({"second": "answered", "is_error": bool(result.is_error)})
                except MCPError as error:
                    say({"second": "error", "code": error.error.code})


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    anyio.run(main, sys.argv[1])
