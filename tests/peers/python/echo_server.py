"""The smallest MCP server there is: Python's standard library only, one
line in, one line out, on blocking stdio. Answers `initialize`,
`tools/list` (one tool, `echo`), `tools/call echo` (its `text` back) and
`ping`; ignores notifications. What the latency bench puts behind each
path, so that what a path adds is not hidden by an SDK's own cost.
"""

import json
import sys

TOOLS = [
    {
        "name": "echo",
        "description": "Returns its text.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    }
]


def answer(message):
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo-stdlib", "version": "0"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call" and params.get("name") == "echo":
        text = (params.get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text", "text": text}]}
    if method == "ping":
        return {}
    return None


def main():
    out = sys.stdout
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue
        result = answer(message)
        if result is None:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "method not found"},
            }
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        out.write(json.dumps(reply, separators=(",", ":")) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
