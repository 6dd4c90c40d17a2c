// A misbehaving MCP server over Streamable HTTP, written on raw `node:http`
// with hand-written SSE (no SDK): just enough of the transport for a client
// to connect (initialize answers with an `Mcp-Session-Id`, notifications and
// responses get 202, tools/list, tools/call, ping; a plain GET gets 405,
// DELETE 200), and tools whose answers are the hazards a proxy in front of
// an HTTP server must survive.
//
//   node http-faults.mjs [--port N] [--host H]
//
// The first stdout line is `listening <port>` (--port 0, the default, picks a
// free one); everything else goes to stderr. The endpoint is /mcp.
//
// Tools:
//   echo {text}         a normal answer: one SSE event, `text` in a text block
//   huge_event {mb}     one SSE event whose data is a JSON-RPC result with a
//                       text block of mb × 1 MiB ASCII, written in 1 MiB pieces
//                       as the socket drains and never held whole in memory
//                       (1024 for 1 GiB); the `id` comes last, as the
//                       TypeScript SDK writes it: {"result":…,"jsonrpc":"2.0","id":N}
//   stall_mid_event {}  writes half an event, then nothing: the socket stays
//                       open until the client goes away
//   keepalive {seconds} `: ping` comment lines every 200 ms for `seconds`
//                       (default 5), then the answer
//   close_early {}      a priming event (an `id:`, empty data, `retry: 200`),
//                       then the stream ends without the answer; a GET with
//                       that `Last-Event-ID` gets the answer on a new stream
//   json_answer {text}  answered as application/json instead of SSE

import { randomUUID } from "node:crypto";
import { createServer } from "node:http";

const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const at = argv.indexOf(name);
  return at >= 0 && at + 1 < argv.length ? argv[at + 1] : fallback;
};
const port = Number(option("--port", "0"));
const host = option("--host", "127.0.0.1");
if (!Number.isInteger(port) || port < 0) {
  console.error("usage: node http-faults.mjs [--port N] [--host H]");
  process.exit(2);
}

const log = (message) => process.stderr.write(`node-http-faults: ${message}\n`);

const MIB = 1 << 20;
const VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

const TOOLS = [
  ["echo", "Returns `text`.", { text: { type: "string" } }],
  ["huge_event", "One SSE event of `mb` MiB, written piece by piece.", { mb: { type: "number" } }],
  ["stall_mid_event", "Half an event, then silence with the socket open.", {}],
  ["keepalive", "`: ping` every 200 ms for `seconds`, then the answer.", { seconds: { type: "number" } }],
  ["close_early", "Closes the stream before answering; answers on a resumed GET.", {}],
  ["json_answer", "Answers as application/json instead of SSE.", { text: { type: "string" } }],
].map(([name, description, properties]) => ({ name, description, inputSchema: { type: "object", properties } }));

const sessions = new Set();
/// Answers owed on a resumed GET, by the event id the closed stream gave.
const pending = new Map();
let eventCounter = 0;

// The TypeScript SDK's key order: the result first, the id last.
const result = (id, value) => JSON.stringify({ result: value, jsonrpc: "2.0", id });
const failure = (id, code, message) => JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } });
const textResult = (text) => ({ content: [{ type: "text", text }] });

function sseHead(res, session) {
  const headers = { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" };
  if (session) headers["mcp-session-id"] = session;
  res.writeHead(200, headers);
  res.flushHeaders();
}

/// Writes and waits for the socket to take it when its buffer is full;
/// false when the client has gone away.
async function write(res, chunk) {
  if (res.destroyed) return false;
  if (!res.write(chunk)) {
    await new Promise((resolve) => {
      const done = () => {
        res.off("drain", done);
        res.off("close", done);
        resolve();
      };
      res.on("drain", done);
      res.on("close", done);
    });
  }
  return !res.destroyed;
}

function sseAnswer(res, session, message) {
  sseHead(res, session);
  res.end(`event: message\ndata: ${message}\n\n`);
}

function jsonAnswer(res, session, message, status = 200) {
  const headers = { "content-type": "application/json" };
  if (session) headers["mcp-session-id"] = session;
  res.writeHead(status, headers);
  res.end(message);
}

/// 1 MiB of JSON-string-safe ASCII; each piece is stamped with its number.
const TEMPLATE = (() => {
  const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"];
  const out = Buffer.allocUnsafe(MIB);
  let at = 0;
  for (let n = 0; at < MIB; n++) at += out.write(`${words[n % 10]}-${n} ${words[(n * 3) % 10]}. `, at, "latin1");
  return out;
})();

async function hugeEvent(res, id, mb) {
  const total = Math.max(0, Math.round(mb * MIB));
  sseHead(res);
  const started = Date.now();
  if (!(await write(res, 'event: message\ndata: {"result":{"content":[{"type":"text","text":"'))) return;
  for (let at = 0, piece = 0; at < total; at += MIB, piece++) {
    // A fresh buffer per piece: a queued write keeps its buffer.
    const size = Math.min(MIB, total - at);
    const chunk = Buffer.allocUnsafe(size);
    TEMPLATE.copy(chunk, 0, 0, size);
    chunk.write(`[piece ${String(piece).padStart(6, "0")}]`.slice(0, size), 0, "latin1");
    if (!(await write(res, chunk))) {
      log(`huge_event: client went away after ${at} of ${total} bytes`);
      return;
    }
  }
  if (!(await write(res, `"}]},"jsonrpc":"2.0","id":${JSON.stringify(id)}}\n\n`))) return;
  res.end();
  log(`huge_event: wrote ${total} bytes of text in ${Date.now() - started} ms`);
}

async function stallMidEvent(res) {
  sseHead(res);
  await write(res, 'event: message\ndata: {"result":{"content":[{"type":"text","text":"the first half of an ans');
  log("stall_mid_event: half an event written; stalling");
  res.on("close", () => log("stall_mid_event: client went away"));
}

async function keepalive(res, id, seconds) {
  sseHead(res);
  const until = Date.now() + seconds * 1000;
  let pings = 0;
  while (Date.now() < until) {
    if (!(await write(res, ": ping\n\n"))) return log(`keepalive: client went away after ${pings} pings`);
    pings++;
    await new Promise((resolve) => setTimeout(resolve, Math.min(200, Math.max(0, until - Date.now()))));
  }
  if (res.destroyed) return;
  res.end(`event: message\ndata: ${result(id, textResult(`kept alive ${seconds} s with ${pings} pings`))}\n\n`);
  log(`keepalive: answered after ${pings} pings`);
}

function closeEarly(res, id) {
  const eventId = `faults-${++eventCounter}`;
  pending.set(eventId, result(id, textResult("answered on the resumed stream")));
  sseHead(res);
  res.end(`id: ${eventId}\nretry: 200\ndata: \n\n`);
  log(`close_early: stream closed before the answer (event id ${eventId})`);
}

function resume(res, session, lastEventId) {
  const message = pending.get(lastEventId);
  if (!message) {
    log(`GET with unknown Last-Event-ID ${lastEventId}`);
    res.writeHead(404).end();
    return;
  }
  pending.delete(lastEventId);
  sseHead(res, session);
  res.end(`id: faults-${++eventCounter}\nevent: message\ndata: ${message}\n\n`);
  log(`resumed after ${lastEventId}: answered`);
}

async function call(res, session, id, name, args) {
  switch (name) {
    case "echo":
      return sseAnswer(res, session, result(id, textResult(String(args.text ?? ""))));
    case "huge_event":
      return hugeEvent(res, id, Number(args.mb ?? 1));
    case "stall_mid_event":
      return stallMidEvent(res);
    case "keepalive":
      return keepalive(res, id, Number(args.seconds ?? 5));
    case "close_early":
      return closeEarly(res, id);
    case "json_answer":
      return jsonAnswer(res, session, result(id, textResult(String(args.text ?? ""))));
    default:
      return sseAnswer(res, session, failure(id, -32602, `unknown tool ${name}`));
  }
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

async function handle(req, res) {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (url.pathname !== "/mcp") return jsonAnswer(res, null, failure(null, -32000, "not found"), 404);
  const session = req.headers["mcp-session-id"];
  if (req.method === "DELETE") {
    sessions.delete(session);
    return res.writeHead(200).end();
  }
  if (req.method === "GET") {
    const last = req.headers["last-event-id"];
    if (session && sessions.has(session) && last) return resume(res, session, last);
    return res.writeHead(405, { allow: "POST, DELETE" }).end();
  }
  if (req.method !== "POST") return res.writeHead(405, { allow: "GET, POST, DELETE" }).end();
  let message;
  try {
    message = await readBody(req);
  } catch (error) {
    return jsonAnswer(res, null, failure(null, -32700, `parse error: ${error.message}`), 400);
  }
  if (message.method === "initialize") {
    const id = randomUUID();
    sessions.add(id);
    const asked = message.params?.protocolVersion;
    log(`session ${id} opened (${asked})`);
    return sseAnswer(res, id, result(message.id, {
      protocolVersion: VERSIONS.includes(asked) ? asked : "2025-06-18",
      capabilities: { tools: {} },
      serverInfo: { name: "drainpipe-http-faults", version: "0.0.0" },
    }));
  }
  if (!session || !sessions.has(session)) {
    return jsonAnswer(res, null, failure(message.id ?? null, -32000, "no session: send initialize first"), session ? 404 : 400);
  }
  // Notifications and responses: accepted, nothing to say.
  if (message.id === undefined || message.method === undefined) {
    if (message.method === "notifications/cancelled") log(`cancel for id ${JSON.stringify(message.params?.requestId)}`);
    return res.writeHead(202).end();
  }
  switch (message.method) {
    case "ping":
      return sseAnswer(res, session, result(message.id, {}));
    case "tools/list":
      return sseAnswer(res, session, result(message.id, { tools: TOOLS }));
    case "tools/call":
      return call(res, session, message.id, message.params?.name, message.params?.arguments ?? {});
    default:
      return sseAnswer(res, session, failure(message.id, -32601, `method not found: ${message.method}`));
  }
}

const http = createServer((req, res) => {
  handle(req, res).catch((error) => {
    log(`${req.method} ${req.url} failed: ${error.stack ?? error}`);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});
// A stalled stream must stay open as long as the client keeps it.
http.requestTimeout = 0;
http.headersTimeout = 0;
http.keepAliveTimeout = 5000;

http.listen(port, host, () => {
  process.stdout.write(`listening ${http.address().port}\n`);
  log(`Streamable HTTP faults on ${host}:${http.address().port}/mcp`);
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    log(`${signal}: exiting`);
    process.exit(0);
  });
}
