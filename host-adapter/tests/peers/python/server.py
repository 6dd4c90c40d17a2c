"""A small MCP stdio server built on the Python SDK, for drainpipe's rmcp tests.

Tools: `echo` (returns its text), `big` (a text result of `bytes` bytes),
`slow` (sleeps `steps` x `step_ms`, says on stderr when it is cancelled),
`health`. Works with SDK 1.x (`FastMCP`) and 2.x (`MCPServer`).
"""

import asyncio
import os
import sys

try:
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # SDK 1.x
    from mcp.server.fastmcp import FastMCP as Server

server = Server("drainpipe-python-peer")


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


@server.tool()
def big(bytes: int) -> str:
    """A text result of the given size in bytes."""
    return "x" * bytes


@server.tool()
async def slow(steps: int = 50, step_ms: int = 100) -> str:
    """Sleeps step by step; reports cancellation on stderr."""
    step = 0
    try:
        for step in range(1, steps + 1):
            await asyncio.sleep(step_ms / 1000)
        return f"done after {steps} steps"
    except asyncio.CancelledError:
        print(f"slow: cancelled at step {step}", file=sys.stderr, flush=True)
        raise


@server.tool()
def health() -> str:
    """Answers ok with the server's pid."""
    return f"ok {os.getpid()}"


if __name__ == "__main__":
    server.run()
