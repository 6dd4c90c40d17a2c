// An MCP stdio server that answers one tool with a result far larger than any
// pipe: the seed's hazard, written the way a Node.js tool server would write
// it. The response is written with process.stdout.write in 16 KiB chunks,
// awaiting 'drain' whenever write() reports a full buffer; the first time that
// happens it says "stdout backpressure observed" on stderr, so a test can see
// that the reader is not keeping up.
//
// Tools: large {bytes = 8 MiB}, echo {…} (returns its arguments), health.
// Logs go to stderr only.

import { once } from "node:events";
import { createInterface } from "node:readline";

const CHUNK_BYTES = 16 << 10;
const DEFAULT_LARGE_BYTES = 8 << 20;

const log = (message) => process.stderr.write(`node-oversized: ${message}\n`);

// Writes are serialised so two answers never interleave their chunks.
let writing = Promise.resolve();
function send(line) {
  writing = writing.then(() => writeChunked(line)).catch((error) => {
    log(`stdout write failed: ${error.message}`);
    process.exit(1);
  });
  return writing;
}

async function writeChunked(line, label) {
  const bytes = Buffer.from(line + "\n", "utf8");
  let reported = false;
  for (let at = 0; at < bytes.length; at += CHUNK_BYTES) {
    const room = process.stdout.write(bytes.subarray(at, at + CHUNK_BYTES));
    if (!room) {
      if (!reported && label) {
        reported = true;
        log(`stdout backpressure observed (${label})`);
      }
      await once(process.stdout, "drain");
    }
  }
  if (label) log(`${label}: wrote ${bytes.length} bytes`);
}

function answer(id, result) {
  return send(JSON.stringify({ jsonrpc: "2.0", id, result }));
}

function fail(id, code, message) {
  return send(JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } }));
}

/// A tools/call response line of exactly `total` bytes (without newline).
function largeLine(id, total) {
  const before = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`;
  const after = `"}]}}`;
  const pad = Math.max(0, total - before.length - after.length);
  return before + "L".repeat(pad) + after;
}

const TOOLS = [
  {
    name: "large",
    description: "A text result of `bytes` bytes on the wire (default 8 MiB), written in 16 KiB chunks.",
    inputSchema: { type: "object", properties: { bytes: { type: "integer" } } },
  },
  { name: "echo", description: "Returns its arguments.", inputSchema: { type: "object" } },
  { name: "health", description: "Answers ok.", inputSchema: { type: "object" } },
];

async function handle(message) {
  const { id, method, params } = message;
  if (id === undefined) {
    if (method === "notifications/cancelled") log(`cancel for id ${JSON.stringify(params?.requestId)}`);
    return;
  }
  switch (method) {
    case "initialize":
      return answer(id, {
        protocolVersion: params?.protocolVersion ?? "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "node-oversized", version: "0.0.0" },
      });
    case "ping":
      return answer(id, {});
    case "tools/list":
      return answer(id, { tools: TOOLS });
    case "tools/call": {
      const args = params?.arguments ?? {};
      switch (params?.name) {
        case "large": {
          const total = Number.isInteger(args.bytes) ? args.bytes : DEFAULT_LARGE_BYTES;
          const line = largeLine(id, total);
          writing = writing.then(() => writeChunked(line, `large id=${JSON.stringify(id)}`));
          return writing;
        }
        case "echo":
          return answer(id, { content: [{ type: "text", text: JSON.stringify(args) }], structuredContent: args });
        case "health":
          return answer(id, { content: [{ type: "text", text: "ok" }] });
        default:
          return fail(id, -32602, `unknown tool ${params?.name}`);
      }
    }
    default:
      return fail(id, -32601, `method not found: ${method}`);
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let message;
  try {
    message = JSON.parse(line);
  } catch (error) {
    fail(null, -32700, `parse error: ${error.message}`);
    return;
  }
  handle(message);
});
lines.on("close", async () => {
  await writing;
  log("stdin closed; exiting");
  process.exit(0);
});
log("started");
