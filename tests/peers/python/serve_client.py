"""A host on the official Python SDK, for the serve criteria: `ClientSession`
over `streamable_http_client` against the URL `drainpipe serve` prints, or
over `stdio_client` straight to the same server command, running the same
checks either way, so the test can hold the two runs' answers side by side.

    python serve_client.py everything [--timeout S] (--url URL | -- <server-everything command...>)
    python serve_client.py filesystem --dir DIR [--timeout S] (--url URL | -- <server-filesystem command...>)

The session declares sampling, elicitation and roots (by giving their
callbacks) and answers the server's sampling and elicitation requests with
canned results.

everything: tools/list, echo, trigger-long-running-operation with a
progress callback, trigger-sampling-request, trigger-elicitation-request,
get-roots-list, logging/setLevel and toggle-simulated-logging (the logging
callback), resources/list and resources/read, prompts/list and prompts/get,
and a long call cancelled from the client, then a call that answers.

filesystem: list_allowed_directories, write_file, read_text_file and
list_directory in DIR (its only root).

The last stdout line is a JSON summary, {mode, transport, ok, checks,
same, ...}: `checks` holds every check by name; `same` holds what must not
depend on the transport (the Rust test compares it between the HTTP and the
stdio run), objects as values (their members' order aside);
`order_sensitive` holds texts where the order a peer wrote members in shows. Exit 0 when every check held, 1 otherwise, 2 on bad usage.
"""

import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

# set_logging_level is deprecated for the 2026-07-28 revision; this session
# speaks an earlier one, where it is the way to set the level.
warnings.simplefilter("ignore")

SAMPLED = "canned completion from serve_client.py"
ELICITED = {"name": "Grace Hopper", "check": True, "email": "grace@example.com", "integer": 9}


def dump(value):
    """A pydantic model (or a list of them) as JSON-ready data."""
    if isinstance(value, list):
        return [dump(v) for v in value]
    return value.model_dump(by_alias=True, mode="json", exclude_none=True)


def texts(result) -> list[str]:
    return [block.text for block in result.content if block.type == "text"]


class Run:
    def __init__(self, mode: str, transport: str) -> None:
        self.summary = {
            "mode": mode,
            "transport": transport,
            "ok": False,
            "checks": {},
            "same": {},
            "order_sensitive": {},
        }
        self.same = self.summary["same"]
        self.step = "connect"
        self.sampling: list = []
        self.elicitation: list = []
        self.roots_asked = 0
        self.roots: list[types.Root] = []
        self.logs: list = []

    def check(self, name: str, condition, detail="") -> None:
        self.summary["checks"][name] = bool(condition)
        if not condition:
            print(f"serve_client: check {name} failed: {detail}", file=sys.stderr, flush=True)

    # What the server asks of the client, and tells it.
    async def on_sampling(self, context, params: types.CreateMessageRequestParams):
        self.sampling.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLED),
            model="serve-client-canned",
            stop_reason="endTurn",
        )

    async def on_elicitation(self, context, params):
        self.elicitation.append(params)
        return types.ElicitResult(action="accept", content=ELICITED)

    async def on_roots(self, context):
        self.roots_asked += 1
        return types.ListRootsResult(roots=self.roots)

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def wait_for(self, condition, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            while not condition():
                await anyio.sleep(0.025)
            return True
        return False

    async def call(self, session: ClientSession, name: str, arguments: dict, **options) -> list[str]:
        self.step = f"tools/call {name}"
        result = await session.call_tool(name, arguments, read_timeout_seconds=30, **options)
        if result.is_error:
            raise RuntimeError(f"{name} answered isError: {texts(result)}")
        return texts(result)

    async def everything(self, session: ClientSession) -> None:
        same = self.same
        self.roots = [types.Root(uri="file:///serve-client/python-root", name="serve_client.py root")]

        self.step = "tools/list"
        tools = await session.list_tools()
        same["tools"] = sorted(tool.name for tool in tools.tools)
        for name in ["echo", "trigger-long-running-operation", "trigger-sampling-request", "trigger-elicitation-request"]:
            self.check(f"tools/list has {name}", name in same["tools"], same["tools"])

        message = 'hello «ünïcødé» "quoted" ' + "y" * 64
        same["echo"] = await self.call(session, "echo", {"message": message})
        self.check("echo", same["echo"] == [f"Echo: {message}"], same["echo"])

        progress = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append([done, total])

        same["long"] = await self.call(
            session, "trigger-long-running-operation", {"duration": 1, "steps": 5}, progress_callback=on_progress
        )
        self.summary["progress"] = progress
        # As with the TypeScript SDK, the last notification may be
        # dispatched after the call has settled: at least steps - 1.
        self.check(
            "progress",
            len(progress) >= 4 and all(p == [i + 1, 5] for i, p in enumerate(progress)),
            progress,
        )
        self.check("long-running result", "Steps: 5" in same["long"][0], same["long"])

        same["sampling"] = await self.call(
            session, "trigger-sampling-request", {"prompt": "say something canned", "maxTokens": 42}
        )
        same["sampling_asked"] = [
            {"messages": dump(p.messages), "systemPrompt": p.system_prompt, "maxTokens": p.max_tokens}
            for p in self.sampling
        ]
        self.check("sampling asked once", len(self.sampling) == 1, self.sampling)
        self.check("sampling result reached the tool", SAMPLED in "\n".join(same["sampling"]), same["sampling"])

        elicited = await self.call(session, "trigger-elicitation-request", {})
        # The server quotes the answer it got as JSON ("Raw result: {...}"):
        # its members in the order the client wrote them. Compared as a
        # value in `same`; as text (the order kept) in `order_sensitive`.
        raw = next((t for t in elicited if "Raw result:" in t), None)
        same["elicitation"] = [t for t in elicited if t is not raw]
        same["elicitation_raw"] = None if raw is None else json.loads(raw[raw.index("{") :])
        self.summary["order_sensitive"]["elicitation_raw"] = raw
        same["elicitation_asked"] = [p.message for p in self.elicitation]
        self.check("elicitation asked once", len(self.elicitation) == 1, self.elicitation)
        self.check(
            "elicitation result reached the tool",
            f"Name: {ELICITED['name']}" in "\n".join(elicited)
            and (same["elicitation_raw"] or {}).get("content", {}).get("name") == ELICITED["name"],
            elicited,
        )

        same["roots"] = await self.call(session, "get-roots-list", {})
        self.check("roots asked", self.roots_asked >= 1, self.roots_asked)
        self.check("roots reached the tool", str(self.roots[0].uri) in "\n".join(same["roots"]), same["roots"])

        self.step = "logging/setLevel"
        await session.set_logging_level("debug")
        before = len(self.logs)
        same["logging_on"] = await self.call(session, "toggle-simulated-logging", {})
        self.step = "waiting for notifications/message"
        self.check("a log message arrived", await self.wait_for(lambda: len(self.logs) > before, 15), len(self.logs))
        same["logging_off"] = await self.call(session, "toggle-simulated-logging", {})
        simulated = [str(log.data) for log in self.logs[before:]]
        self.check(
            "log messages are the simulated ones",
            simulated and all("message" in d.lower() for d in simulated),
            simulated,
        )
        self.summary["logs"] = len(self.logs)

        self.step = "resources/list"
        resources = (await session.list_resources()).resources
        same["resources"] = [str(r.uri) for r in resources]
        self.check("resources listed", len(resources) > 0, len(resources))
        self.step = "resources/read"
        read = await session.read_resource(str(resources[0].uri))
        same["resource_read"] = dump(read.contents)
        self.check("resource read", read.contents and str(read.contents[0].uri) == str(resources[0].uri), read)

        self.step = "prompts/list"
        prompts = (await session.list_prompts()).prompts
        same["prompts"] = sorted(p.name for p in prompts)
        self.check("prompts listed", "simple-prompt" in same["prompts"], same["prompts"])
        self.step = "prompts/get"
        simple = await session.get_prompt("simple-prompt")
        same["simple_prompt"] = dump(simple.messages)
        self.check(
            "simple prompt",
            simple.messages[0].content.text == "This is a simple prompt without arguments.",
            simple,
        )
        with_args = next((p for p in prompts if any(a.required for a in p.arguments or [])), None)
        if with_args is not None:
            args = {a.name: f"value of {a.name}" for a in with_args.arguments}
            got = await session.get_prompt(with_args.name, args)
            same["args_prompt"] = {"name": with_args.name, "messages": dump(got.messages)}
            self.check("prompt with arguments", "value of" in json.dumps(same["args_prompt"]), same["args_prompt"])

        # Cancellation: the SDK abandons the call and tells the server
        # (notifications/cancelled); the next call answers at once.
        self.step = "cancellation"
        started = time.perf_counter()
        with anyio.move_on_after(0.5) as scope:
            await session.call_tool("trigger-long-running-operation", {"duration": 30, "steps": 30})
        self.summary["cancel_ms"] = (time.perf_counter() - started) * 1000
        self.check("the call was cancelled, not answered", scope.cancelled_caught, self.summary["cancel_ms"])
        started = time.perf_counter()
        same["after_cancel"] = await self.call(session, "echo", {"message": "after cancel"})
        self.summary["after_cancel_ms"] = (time.perf_counter() - started) * 1000
        self.check("a call after the cancel answers", same["after_cancel"] == ["Echo: after cancel"], same["after_cancel"])
        self.check("and at once", self.summary["after_cancel_ms"] < 3000, self.summary["after_cancel_ms"])

    async def filesystem(self, session: ClientSession, folder: str) -> None:
        same = self.same
        self.roots = [types.Root(uri=Path(folder).as_uri(), name="serve_client.py dir")]
        self.step = "tools/list"
        tools = await session.list_tools()
        same["tools"] = sorted(tool.name for tool in tools.tools)
        for name in ["list_allowed_directories", "write_file", "read_text_file", "list_directory"]:
            self.check(f"tools/list has {name}", name in same["tools"], same["tools"])
        self.step = "waiting for roots/list"
        self.check("roots asked after initialized", await self.wait_for(lambda: self.roots_asked >= 1, 15), 0)
        same["allowed"] = await self.call(session, "list_allowed_directories", {})
        self.check("allowed directories", folder in "\n".join(same["allowed"]), same["allowed"])
        path = os.path.join(folder, "python.txt")
        content = "written by serve_client.py «ünïcødé»\n" + "row\n" * 10
        same["write"] = await self.call(session, "write_file", {"path": path, "content": content})
        same["read"] = await self.call(session, "read_text_file", {"path": path})
        self.check("read back what was written", same["read"] == [content], same["read"])
        same["list"] = await self.call(session, "list_directory", {"path": folder})
        self.check("list_directory", "[FILE] python.txt" in "\n".join(same["list"]), same["list"])

    async def session(self, read, write, mode: str, folder: str | None) -> None:
        async with ClientSession(
            read,
            write,
            read_timeout_seconds=30,
            sampling_callback=self.on_sampling,
            elicitation_callback=self.on_elicitation,
            list_roots_callback=self.on_roots,
            logging_callback=self.on_log,
        ) as session:
            self.step = "initialize"
            init = await session.initialize()
            self.summary["protocol"] = init.protocol_version
            self.same["server"] = dump(init.server_info)
            if mode == "everything":
                await self.everything(session)
            else:
                await self.filesystem(session, folder)
            self.step = "close"


async def main() -> int:
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    flags, command = argv[:split], argv[split + 1 :]
    if not flags or flags[0] not in ("everything", "filesystem"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, options = flags[0], dict(zip(flags[1::2], flags[2::2]))
    url, folder = options.get("--url"), options.get("--dir")
    timeout = float(options.get("--timeout", "90"))
    if bool(url) == bool(command) or (mode == "filesystem" and not folder):
        print(__doc__, file=sys.stderr)
        return 2
    run = Run(mode, "http" if url else "stdio")
    code = 0
    try:
        with anyio.fail_after(timeout):
            if url:
                # On leaving, the transport DELETEs the session.
                async with streamable_http_client(url) as (read, write):
                    await run.session(read, write, mode, folder)
            else:
                params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
                async with stdio_client(params) as (read, write):
                    await run.session(read, write, mode, folder)
        failed = [name for name, held in run.summary["checks"].items() if not held]
        run.summary["failed"] = failed
        run.summary["ok"] = not failed
        code = 0 if not failed else 1
    except BaseException:  # report anything, a timeout included, as a failure
        run.summary["error"] = traceback.format_exc()[-3000:]
        run.summary["step"] = run.step
        code = 1
    print(json.dumps(run.summary), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(anyio.run(main))
