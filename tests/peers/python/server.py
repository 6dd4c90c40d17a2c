"""An MCP stdio server written with the official Python SDK (`mcp`).

Tools:
  huge(bytes)       a text result of `bytes` characters: far larger than a pipe
  slow(seconds)     sleeps, reporting on stderr when it starts and when it is
                    cancelled, so a test can see cancellation reach the work
  echo(text)        returns its argument
  read_text(path)   the file's text, as structured output too (the SDK
                    mirrors it in structuredContent.result)
  hits(count)       `count` search hits as a list of models: the SDK writes
                    one text block per hit (its JSON, pretty-printed) and
                    the whole list in structuredContent.result
  hit_map(count)    `count` hits in a dict: one text block, and the object

Logs go to stderr only; stdout carries the protocol.
"""

import sys

import anyio
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("drainpipe-python-peer")


def log(message: str) -> None:
    print(f"python-peer: {message}", file=sys.stderr, flush=True)


@server.tool(structured_output=False)
def huge(bytes: int = 8 << 20) -> str:
    """A text result of `bytes` characters."""
    log(f"huge: answering {bytes} bytes")
    return "h" * bytes


@server.tool(structured_output=False)
async def slow(seconds: float = 30.0) -> str:
    """Sleeps for `seconds`; cancellable."""
    log("slow: started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        log("slow: cancelled")
        raise
    log("slow: finished")
    return f"slept {seconds} s"


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Returns `text`."""
    return text


@server.tool()
def read_text(path: str) -> str:
    """The text of the file at `path`."""
    with open(path, encoding="utf-8") as file:
        return file.read()


class Hit(BaseModel):
    """One search hit, as a code search tool returns it."""

    path: str
    line: int
    text: str


def hit(n: int) -> Hit:
    # Escapes and multibyte text in every item: cut points and the read
    # back must respect them.
    return Hit(path=f"src/file-{n}.rs", line=n, text=f"item-{n}: fn «ünïcødé» \"q\"\t{n}")


@server.tool()
def hits(count: int = 5000) -> list[Hit]:
    """`count` search hits."""
    return [hit(n) for n in range(count)]


@server.tool()
def hit_map(count: int = 5000) -> dict[str, Hit]:
    """`count` search hits keyed by name."""
    return {f"hit-{n}": hit(n) for n in range(count)}


if __name__ == "__main__":
    log("started")
    server.run("stdio")
