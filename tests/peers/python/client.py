"""A host built on the official Python SDK: `stdio_client` + `ClientSession`,
in front of any stdio server command. The release suite runs it against the
server written here (server.py), with and without `drainpipe proxy` between.

    python client.py --expect-huge ok|error [--rounds N] -- <server command...>

Checks (any failure exits 1): tools are listed; 50 concurrent echo calls each
get their own answer; `huge` (8 MiB) arrives whole, or — behind a proxy with
a smaller limit — fails with an error for that request, not a hang; a slow
call cancelled from the client ends and the next call answers at once. The
last stdout line is a JSON summary with the round-trip figures.
"""

import json
import os
import sys
import time
import traceback

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(f"check failed: {message}")


def text_of(result) -> str:
    return result.content[0].text


async def exercise(session: ClientSession, options: dict, summary: dict) -> None:
    await session.initialize()
    tools = await session.list_tools()
    names = sorted(tool.name for tool in tools.tools)
    check(names == ["echo", "hit_map", "hits", "huge", "read_text", "slow"], f"tools/list: {names}")

    texts = [f"call {i} «ünïcødé» \"quoted\" {'y' * (i * 40)}" for i in range(50)]
    answers = [None] * len(texts)

    async def one(i: int) -> None:
        answers[i] = text_of(await session.call_tool("echo", {"text": texts[i]}))

    async with anyio.create_task_group() as group:
        for i in range(len(texts)):
            group.start_soon(one, i)
    check(answers == texts, "every concurrent echo got its own answer")

    started = time.perf_counter()
    try:
        huge = await session.call_tool("huge", {"bytes": 8 << 20}, read_timeout_seconds=30)
        outcome = {"ok": not huge.is_error, "bytes": len(text_of(huge)), "is_error": huge.is_error}
    except Exception as error:  # the SDK raises its error type for a JSON-RPC error
        outcome = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    summary["huge_ms"] = (time.perf_counter() - started) * 1000
    summary["huge"] = outcome
    if options["expect_huge"] == "ok":
        check(outcome.get("ok") and outcome.get("bytes") == 8 << 20, f"huge arrives whole: {outcome}")
    else:
        check(not outcome.get("ok"), f"huge is refused for that request: {outcome}")
        check("timed out" not in str(outcome).lower(), f"an error, not a timeout: {outcome}")

    # Cancel a slow call from the client: the SDK abandons the request and
    # tells the server (notifications/cancelled).
    started = time.perf_counter()
    with anyio.move_on_after(0.3) as scope:
        await session.call_tool("slow", {"seconds": 30})
    check(scope.cancelled_caught, "the slow call was cancelled, not answered")
    check(time.perf_counter() - started < 2, "the cancel freed the caller at once")
    started = time.perf_counter()
    after = text_of(await session.call_tool("echo", {"text": "after cancel"}))
    summary["after_cancel_ms"] = (time.perf_counter() - started) * 1000
    check(after == "after cancel", "echo after the cancel")
    check(summary["after_cancel_ms"] < 2000, f"echo after the cancel took {summary['after_cancel_ms']} ms")

    for i in range(20):
        await session.call_tool("echo", {"text": f"warm {i}"})
    samples = []
    for i in range(options["rounds"]):
        started = time.perf_counter()
        await session.call_tool("echo", {"text": f"rt {i}"})
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    summary["rtt_median_ms"] = samples[len(samples) // 2]
    summary["rtt_p90_ms"] = samples[int(len(samples) * 0.9)]


async def main() -> int:
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print(__doc__, file=sys.stderr)
        return 2
    split = argv.index("--")
    flags, command = argv[:split], argv[split + 1 :]
    options = {"expect_huge": "ok", "rounds": 200}
    for name, value in zip(flags[::2], flags[1::2]):
        if name == "--expect-huge":
            options["expect_huge"] = value
        elif name == "--rounds":
            options["rounds"] = int(value)
    summary = {"peer": "python-sdk"}
    code = 0
    try:
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await exercise(session, options, summary)
        summary["ok"] = True
    except BaseException:  # report anything, including cancellation, as a failure
        summary["ok"] = False
        summary["error"] = traceback.format_exc()
        code = 1
    print(json.dumps(summary), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(anyio.run(main))
