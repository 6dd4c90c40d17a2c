"""An MCP server over Streamable HTTP written with the official Python SDK
(`mcp` 2.x: `MCPServer`, its `streamable_http_app()` served by uvicorn), on
loopback, for the remote release tests (`drainpipe proxy --url`).

    python http_server.py [PORT] [--json]

PORT 0 (the default) picks a free one: the socket is bound here and handed
to uvicorn, so the port is known before anything is served. The first stdout
line is `listening <port>`, written once uvicorn has started; the endpoint is
/mcp. `--json` answers every POST with application/json instead of SSE.

Tools:
  echo(text)  returns `text`
  big(mb)     a str of mb x 1 MiB ASCII: numbered lines of varied text

Logs go to stderr.
"""

import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

MIB = 1 << 20
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]

server = MCPServer("drainpipe-python-http-peer")


def log(message: str) -> None:
    print(f"python-http-server: {message}", file=sys.stderr, flush=True)


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Returns `text`."""
    return text


@server.tool(structured_output=False)
def big(mb: float = 1.0) -> str:
    """A text of `mb` MiB of numbered ASCII lines."""
    size = round(mb * MIB)
    log(f"big: answering {size} bytes")
    lines = []
    total = 0
    n = 0
    while total < size:
        line = f"line {n:08d} {WORDS[n % 10]} {WORDS[n * 7 % 10]} {'x' * (n % 23)}\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)[:size]


class Server(uvicorn.Server):
    """Says `listening <port>` on stdout once it serves."""

    def __init__(self, config: uvicorn.Config, port: int) -> None:
        super().__init__(config)
        self.port = port

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets=sockets)
        print(f"listening {self.port}", flush=True)


def main() -> None:
    args = sys.argv[1:]
    json_response = "--json" in args
    rest = [a for a in args if a != "--json"]
    if len(rest) > 1 or (rest and not rest[0].isdigit()):
        print("usage: python http_server.py [PORT] [--json]", file=sys.stderr)
        sys.exit(2)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(rest[0]) if rest else 0))
    port = sock.getsockname()[1]
    app = server.streamable_http_app(json_response=json_response, host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning")
    log(f"Streamable HTTP{' (JSON responses)' if json_response else ''} on 127.0.0.1:{port}/mcp")
    anyio.run(lambda: Server(config, port).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
