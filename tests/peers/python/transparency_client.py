"""A host on the official Python SDK that does what hosts do on connecting:
`initialize`, every page of `tools/list` and, when the server announces
resources, every page of `resources/list` and `resources/templates/list`;
then the tool calls it is given. The Rust test (tests/tests/peer_transparent.rs)
records the bytes on both sides of the proxy and compares them.

    python transparency_client.py [--call NAME JSON]... -- <server command...>

The last stdout line is a JSON summary.
"""

import json
import sys
import traceback

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

LIMIT = 60.0


async def run(command: list[str], calls: list[tuple[str, dict]], summary: dict) -> None:
    with anyio.fail_after(90):
        await exercise(command, calls, summary)


async def exercise(command: list[str], calls: list[tuple[str, dict]], summary: dict) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=LIMIT) as session:
            init = await session.initialize()
            summary["protocol"] = init.protocol_version
            capabilities = init.capabilities.model_dump(exclude_none=True)
            summary["capabilities"] = sorted(capabilities)
            cursor = None
            while True:
                page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
                summary["tools"] += [tool.name for tool in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
            if init.capabilities.resources is not None:
                cursor = None
                while True:
                    page = await session.list_resources(params=types.PaginatedRequestParams(cursor=cursor))
                    summary["resources"] += len(page.resources)
                    cursor = page.next_cursor
                    if not cursor:
                        break
                templates = await session.list_resource_templates()
                summary["templates"] = len(templates.resource_templates)
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                summary["calls"].append({"name": name, "isError": bool(result.is_error), "blocks": len(result.content)})


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: python transparency_client.py [--call NAME JSON]... -- <server command...>", file=sys.stderr)
        sys.exit(2)
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    calls = [(options[i + 1], json.loads(options[i + 2])) for i, o in enumerate(options) if o == "--call"]
    summary = {"sdk": "python", "tools": [], "resources": 0, "templates": 0, "calls": []}
    try:
        anyio.run(run, command, calls, summary)
        summary["ok"] = True
    except BaseException:
        summary["ok"] = False
        summary["error"] = traceback.format_exc()
    print(json.dumps(summary), flush=True)
    sys.exit(0 if summary["ok"] else 1)


if __name__ == "__main__":
    main()
