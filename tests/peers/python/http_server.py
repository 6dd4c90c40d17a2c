"""An MCP server over Streamable HTTP written with the official Python SDK
(`mcp` 2.x: `MCPServer`, its `streamable_http_app()` served by uvicorn), on
loopback, for the remote release tests (`drainpipe proxy --url`).

    python http_server.py [PORT] [--json] [--slow-get MS]

PORT 0 (the default) picks a free one: the socket is bound here and handed
to uvicorn, so the port is known before anything is served. The first stdout
line is `listening <port>`, written once uvicorn has started; the endpoint is
/mcp. `--json` answers every POST with application/json instead of SSE.
`--slow-get MS` hands each GET (the session's own stream) to the SDK MS ms
late, as a server that checks something first or a loaded machine does.

Tools:
  echo(text)  returns `text`
  big(mb)     a str of mb x 1 MiB ASCII: numbered lines of varied text
  ask()       asks the client `elicitation/create` on the session's own
              stream (no related request: the GET's), then returns the
              client's answer as JSON text; the SDK keeps no message for a
              stream not open (no event store), so the ask fails after 10 s
              if the GET stream was not open when the call came

Logs go to stderr.
"""

import json
import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

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


@server.tool(structured_output=False)
async def ask(ctx: Context) -> str:
    """Asks the client elicitation/create on the session's own stream."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    # The session's `elicit_form` without a related request id: the SDK
    # routes it to the standalone (GET) stream, not this call's.
    with anyio.fail_after(10):
        answer = await ctx.session.elicit_form("Your name?", schema)
    return json.dumps(answer.model_dump(by_alias=True, exclude_none=True), separators=(",", ":"))


def slow_gets(app, delay: float):
    """The ASGI app, each GET handed to it `delay` seconds late."""

    async def delayed(scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET":
            await anyio.sleep(delay)
        await app(scope, receive, send)

    return delayed


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
    slow_get = 0
    if "--slow-get" in rest:
        at = rest.index("--slow-get")
        value = rest[at + 1] if at + 1 < len(rest) else ""
        del rest[at : at + 2]
        if value.isdigit():
            slow_get = int(value)
        else:
            rest = ["--slow-get"]
    if len(rest) > 1 or (rest and not rest[0].isdigit()):
        print("usage: python http_server.py [PORT] [--json] [--slow-get MS]", file=sys.stderr)
        sys.exit(2)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(rest[0]) if rest else 0))
    port = sock.getsockname()[1]
    app = server.streamable_http_app(json_response=json_response, host="127.0.0.1")
    if slow_get:
        app = slow_gets(app, slow_get / 1000)
    config = uvicorn.Config(app, log_level="warning")
    log(f"Streamable HTTP{' (JSON responses)' if json_response else ''} on 127.0.0.1:{port}/mcp")
    anyio.run(lambda: Server(config, port).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
