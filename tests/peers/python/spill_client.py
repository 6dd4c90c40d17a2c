"""A host on the official Python SDK (`stdio_client` + `ClientSession`) reading
a whole file through `drainpipe proxy --clip`, past the budget: the condensed
result links to the full text (`resource_link`), which it reads back page by
page with `resources/read` and in ranges and searches with the proxy's
`drainpipe_read` tool. The same checks as `tests/peers/node/spill-client.mjs`.

    python spill_client.py --file PATH --marker TEXT --budget N [--tool read_text_file]
        [--deadline-s S] -- <drainpipe proxy --clip ... -- server-filesystem command...>

`--marker` is an ASCII line found once in the file. Any failed check exits 1.
The last stdout line is a JSON summary, which the Rust test
(tests/tests/peer_spill.rs) reads. Run against the server directly (no
proxy), it fails at the resource_link check.
"""

import hashlib
import json
import os
import re
import sys
import time
import traceback

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

NEXT = "io.drainpipe/next"
TRUNCATED = "io.drainpipe/truncated"
RANGE = "io.drainpipe/range"
UNKNOWN = "drainpipe://result/nope-1/0"
# Every request is bounded: a hang is a failure with a message, not a stuck test.
CALL_S = 120
SMALL_S = 30


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(f"check failed: {message}")


def preview(value) -> str:
    return repr(value)[:300]


def escape_regex(text: str) -> str:
    """The same escaping as the Node client (`re.escape` also escapes spaces,
    which not every regex dialect accepts)."""
    return re.sub(r"[.*+?^${}()|\[\]\\]", lambda m: "\\" + m.group(0), text)


def ascii_at_or_after(data: bytes, at: int) -> int:
    """The first offset at or after `at` whose byte is ASCII, or the end."""
    i = max(0, min(at, len(data)))
    while i < len(data) and data[i] >= 0x80:
        i += 1
    return i


def same_bytes(got: bytes, want: bytes, what: str) -> None:
    if got == want:
        return
    at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    raise AssertionError(
        f"check failed: {what}: {len(got)} bytes received, {len(want)} expected, first difference at byte {at} "
        f"(got {got[at:at + 40]!r}, want {want[at:at + 40]!r})"
    )


def read_text(result, what: str) -> str:
    """The first text block of a `drainpipe_read` result, checked to be a result."""
    check(not result.is_error, f"{what}: drainpipe_read answered isError: {preview(result.content)}")
    check(
        len(result.content) > 0 and result.content[0].type == "text",
        f"{what}: a text block first: {preview(result.content)}",
    )
    return result.content[0].text


async def spill(session: ClientSession, options: dict, summary: dict) -> None:
    path = options["file"]
    budget = options["budget"]
    with open(path, "rb") as f:
        data = f.read()
    size = os.stat(path).st_size
    check(len(data) == size, f"read the whole file: {len(data)} of {size} bytes")
    summary["file_bytes"] = size

    with anyio.fail_after(SMALL_S):
        await session.initialize()

    async def read_tool(arguments: dict):
        with anyio.fail_after(SMALL_S + 5):
            return await session.call_tool("drainpipe_read", arguments, read_timeout_seconds=SMALL_S)

    # The read: condensed, with a link to the full text.
    started = time.perf_counter()
    with anyio.fail_after(CALL_S + 5):
        result = await session.call_tool(options["tool"], {"path": path}, read_timeout_seconds=CALL_S)
    summary["call_ms"] = (time.perf_counter() - started) * 1000
    links = [block for block in result.content if block.type == "resource_link"]
    summary["links"] = [{"uri": link.uri, "name": link.name, "size": link.size} for link in links]
    link = next((block for block in links if block.size == size), None)
    check(
        link is not None,
        f"no resource_link of the file's size ({size} bytes) in the result; "
        f"content types: {[block.type for block in result.content]}, links: {summary['links']}",
    )
    check(re.fullmatch(r"drainpipe://result/[^/?]+/\d+", link.uri) is not None, f"the link's uri: {link.uri}")
    check(link.mime_type == "text/plain", f"the link's mimeType: {link.mime_type}")
    check(bool(link.name) and not link.name.startswith("/"), f"the link's name: {link.name}")
    truncated = (result.meta or {}).get(TRUNCATED)
    check(truncated is not None, f'the result says it was cut (_meta["{TRUNCATED}"]): _meta = {preview(result.meta)}')
    summary["truncated"] = truncated
    capabilities = session.server_capabilities
    check(
        capabilities is not None and capabilities.resources is not None,
        f"initialize declares resources: {preview(capabilities)}",
    )

    # The full text, page by page with resources/read.
    started = time.perf_counter()
    pages: list[bytes] = []
    received = 0
    uri = link.uri
    max_pages = -(-size // 1024) + 10
    while uri is not None:
        check(len(pages) < max_pages, f"more than {max_pages} pages for {size} bytes: no progress at byte {received}")
        with anyio.fail_after(SMALL_S):
            page = await session.read_resource(uri)
        n = len(pages)
        check(len(page.contents) == 1, f"page {n}: one contents entry: {preview(page.contents)}")
        contents = page.contents[0]
        check(contents.uri == uri, f"page {n}: contents.uri {contents.uri} is the uri asked, {uri}")
        check(contents.mime_type == "text/plain", f"page {n}: mimeType {contents.mime_type}")
        check(hasattr(contents, "text"), f"page {n}: a text page: {preview(contents)}")
        chunk = contents.text.encode("utf-8")
        check(len(chunk) <= budget, f"page {n}: {len(chunk)} bytes of text, over the {budget}-byte budget")
        pages.append(chunk)
        received += len(chunk)
        uri = (page.meta or {}).get(NEXT)
        if uri is not None:
            check(len(chunk) > 0, f"page {n}: empty, yet a next page")
            expected = f"{link.uri}?offset={received}"
            check(uri == expected, f"page {n}: next is {uri}, expected {expected}")
    summary["read_ms"] = (time.perf_counter() - started) * 1000
    whole = b"".join(pages)
    summary["pages"] = len(pages)
    summary["bytes"] = len(whole)
    summary["sha256"] = hashlib.sha256(whole).hexdigest()
    summary["file_sha256"] = hashlib.sha256(data).hexdigest()
    summary["sha256_equal"] = summary["sha256"] == summary["file_sha256"]
    same_bytes(whole, data, "the pages put together")
    check(summary["sha256_equal"] and len(whole) == size, "the pages are the file")

    # The proxy's tool.
    with anyio.fail_after(SMALL_S):
        tools = (await session.list_tools()).tools
    read = next((tool for tool in tools if tool.name == "drainpipe_read"), None)
    check(read is not None, f"tools/list has drainpipe_read: {[tool.name for tool in tools]}")
    properties = read.input_schema.get("properties", {})
    for name, kind in [("uri", "string"), ("offset", "integer"), ("length", "integer"), ("pattern", "string")]:
        check(properties.get(name, {}).get("type") == kind, f"drainpipe_read's {name} is a {kind}: {properties.get(name)}")
    check("uri" in read.input_schema.get("required", []), f"drainpipe_read requires uri: {read.input_schema.get('required')}")

    # Exact ranges, both ends on ASCII bytes: in the middle (multibyte
    # characters inside) and up to the end of the file.
    summary["ranges"] = []
    middle = ascii_at_or_after(data, int(size * 0.37))
    tail = ascii_at_or_after(data, size - 5000)
    for offset, end in [(middle, ascii_at_or_after(data, middle + 10_000)), (tail, size)]:
        length = end - offset
        what = f"range {offset}+{length}"
        got = await read_tool({"uri": link.uri, "offset": offset, "length": length})
        same_bytes(read_text(got, what).encode("utf-8"), data[offset:end], what)
        check(len(got.content) == 1, f"{what}: not shortened, one block: {preview(got.content[1:])}")
        meta_range = (got.meta or {}).get(RANGE)
        expected = {"offset": offset, "length": length, "size": size}
        check(meta_range == expected, f'{what}: _meta["{RANGE}"] = {meta_range}, expected {expected}')
        summary["ranges"].append({"offset": offset, "length": length})

    # A range longer than the budget: shortened, at a code point boundary, and said.
    offset = ascii_at_or_after(data, int(size * 0.1))
    length = 4 * budget
    what = f"long range {offset}+{length}"
    got = await read_tool({"uri": link.uri, "offset": offset, "length": length})
    kept = read_text(got, what).encode("utf-8")
    check(0 < len(kept) < length and len(kept) <= budget, f"{what}: {len(kept)} bytes, budget {budget}")
    same_bytes(kept, data[offset : offset + len(kept)], what)
    check(
        len(got.content) > 1 and got.content[1].type == "text" and got.content[1].text,
        f"{what}: a second text block says it was shortened: {preview(got.content[1:])}",
    )
    summary["long_range"] = {
        "offset": offset,
        "asked": length,
        "got": len(kept),
        "range": (got.meta or {}).get(RANGE),
        "notice": got.content[1].text,
    }
    summary["range_ok"] = True

    # Search: the marker's line, at its offset.
    marker = options["marker"].encode("utf-8")
    at = data.find(marker)
    check(at >= 0 and data.find(marker, at + 1) == -1, f"the marker is in the file once (at {at})")
    line_start = data.rfind(b"\n", 0, at) + 1
    line_end = data.find(b"\n", at)
    line = data[line_start : line_end if line_end >= 0 else len(data)].decode("utf-8")
    pattern = escape_regex(options["marker"])
    text = read_text(await read_tool({"uri": link.uri, "pattern": pattern}), f"pattern {pattern}")
    listed = [entry for entry in text.split("\n") if re.match(r"\d+: ", entry)]
    check(len(listed) == 1, f"pattern {pattern}: one matching line, got {len(listed)}: {preview(text)}")
    reported, shown = listed[0].split(": ", 1)
    reported = int(reported)
    check(shown == line, f"pattern {pattern}: the line shown {shown!r} is the marker's line {line!r}")
    check(reported == line_start, f"pattern {pattern}: offset {reported}, the marker's line starts at byte {line_start}")
    same_bytes(data[reported : reported + len(line.encode())], line.encode(), f"the bytes at the offset reported for {pattern}")
    check("[drainpipe] more matches" not in text, f'pattern {pattern}: no "more matches" line: {preview(text)}')
    summary["pattern"] = {"pattern": pattern, "offset": reported, "line": line}

    # Search: a pattern on every line, more matches than fit.
    pattern = "a tab\\t"
    text = read_text(await read_tool({"uri": link.uri, "pattern": pattern}), f"pattern {pattern}")
    check(len(text.encode("utf-8")) <= budget, f"pattern {pattern}: {len(text.encode('utf-8'))} bytes, over the budget")
    lines = [entry for entry in text.split("\n") if entry]
    listed = [entry for entry in lines if re.match(r"\d+: ", entry)]
    check(len(listed) > 10, f"pattern {pattern}: many matching lines, got {len(listed)}: {preview(text)}")
    previous = -1
    for entry in listed:
        reported, shown = entry.split(": ", 1)
        reported, shown = int(reported), shown.encode("utf-8")
        check(reported > previous, f"pattern {pattern}: offsets ascend ({reported} after {previous})")
        check(reported == 0 or data[reported - 1] == 0x0A, f"pattern {pattern}: {reported} is a line start")
        same_bytes(data[reported : reported + len(shown)], shown, f"the line at {reported} for {pattern}")
        after = reported + len(shown)
        check(after == len(data) or data[after] == 0x0A, f"pattern {pattern}: the whole line at {reported}")
        previous = reported
    more = re.match(r"\[drainpipe\] more matches after byte (\d+)", lines[-1])
    check(more is not None, f"pattern {pattern}: the last line says there are more matches: {lines[-1]!r}")
    check(int(more.group(1)) >= previous, f"pattern {pattern}: more matches after byte {more.group(1)}, past {previous}")
    summary["many_matches"] = {"pattern": pattern, "listed": len(listed), "more_after": int(more.group(1))}
    summary["pattern_ok"] = True

    # Unknown uris: a tool error naming it, a JSON-RPC error for resources/read.
    error = await read_tool({"uri": UNKNOWN, "offset": 0, "length": 10})
    check(error.is_error, f"drainpipe_read of an unknown uri is an error result: {preview(error)}")
    check(
        any(block.type == "text" and UNKNOWN in block.text for block in error.content),
        f"the error names the uri: {preview(error.content)}",
    )
    try:
        with anyio.fail_after(SMALL_S):
            page = await session.read_resource(UNKNOWN)
    except MCPError as rejected:
        check("timed out" not in rejected.message.lower(), f"resources/read of {UNKNOWN}: an error, not a timeout: {rejected}")
        summary["unknown_error"] = {"code": rejected.code, "message": rejected.message}
    else:
        raise AssertionError(f"check failed: resources/read of {UNKNOWN} answered: {preview(page)}")
    summary["unknown_rejected"] = True

    # The session still works.
    again = await read_tool({"uri": link.uri, "offset": 0, "length": 1})
    check(read_text(again, "a byte after the errors") == data[:1].decode(), "the first byte, after the errors")


def first_cause(failure: BaseException) -> str:
    """The first exception inside the task groups' exception groups."""
    while isinstance(failure, BaseExceptionGroup) and failure.exceptions:
        failure = failure.exceptions[0]
    return f"{type(failure).__name__}: {failure}"


def parse(argv: list[str]) -> tuple[dict, list[str]] | None:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        return None
    split = argv.index("--")
    flags, command = argv[:split], argv[split + 1 :]
    options = {"tool": "read_text_file", "deadline_s": 240.0}
    for name, value in zip(flags[::2], flags[1::2]):
        if name == "--file":
            options["file"] = value
        elif name == "--marker":
            options["marker"] = value
        elif name == "--budget":
            options["budget"] = int(value)
        elif name == "--tool":
            options["tool"] = value
        elif name == "--deadline-s":
            options["deadline_s"] = float(value)
        else:
            return None
    if not all(key in options for key in ("file", "marker", "budget")):
        return None
    return options, command


async def main() -> int:
    parsed = parse(sys.argv[1:])
    if parsed is None:
        print(__doc__, file=sys.stderr)
        return 2
    options, command = parsed
    summary = {"peer": "python-sdk", "tool": options["tool"]}
    code = 0
    try:
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        with anyio.fail_after(options["deadline_s"]):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=SMALL_S) as session:
                    await spill(session, options, summary)
        summary["ok"] = True
    except BaseException as failure:  # report anything, including a timeout, as a failure
        summary["ok"] = False
        summary["error"] = first_cause(failure)
        summary["traceback"] = traceback.format_exc()
        code = 1
    print(json.dumps(summary), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(anyio.run(main))
