// An MCP server over HTTP built on the official TypeScript SDK (1.x):
// `McpServer` behind `StreamableHTTPServerTransport`, stateful (one session,
// one McpServer, per `initialize`, keyed by `Mcp-Session-Id`), on loopback.
// The remote release tests drive `drainpipe proxy --url` against it.
//
//   node http-server.mjs [--port N] [--host H] [--json] [--legacy] [--slow-get MS]
//
//   --port N   the port to listen on; 0 (the default) picks a free one
//   --host H   the address to bind (default 127.0.0.1)
//   --json     enableJsonResponse: every POST is answered with one
//              application/json body instead of an SSE stream
//   --legacy   the 2024-11-05 HTTP+SSE transport instead (SSEServerTransport):
//              GET /sse opens the stream, POST /messages?sessionId=… sends
//   --tls CERT KEY  HTTPS with this certificate and key (PEM files), HTTP/2
//              offered by ALPN and HTTP/1.1 accepted (node:http2's secure
//              server with allowHTTP1)
//   --slow-get MS  each GET of /mcp (the server's own stream) is handed to
//              the transport MS ms late, as a server that checks something
//              first or a loaded machine answers it
//
// Endpoints: /mcp (POST, GET, DELETE) in Streamable HTTP mode; /sse and
// /messages in legacy mode. The first stdout line is `listening <port>`,
// then `session opened over HTTP/<version>` for each Streamable HTTP
// session; everything else goes to stderr.
//
// Tools (the same in every mode):
//   echo {text}         one text block: `text`
//   big {mb}            one text block of exactly mb × 1 MiB ASCII bytes:
//                       numbered lines of varied text (mb may be fractional)
//   slow {ms}           sleeps `ms` (default 5000); cancellable through the
//                       request's abort signal, and a cancelled call counts
//   cancelled_count {}  how many `slow` calls were cancelled so far, in this
//                       process (all sessions): one text block, the number
//   ask {}              asks the client `elicitation/create` on the
//                       session's own stream (the GET's: a request related
//                       to no other, as the conformance suite's elicitation
//                       scenarios send it), then answers with the client's
//                       answer as JSON text; the SDK drops a message for a
//                       stream not open, so the ask fails after 10 s if the
//                       GET stream was not open when the call came

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createSecureServer } from "node:http2";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ElicitResultSchema, isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const option = (name, fallback) => {
  const at = argv.indexOf(name);
  return at >= 0 && at + 1 < argv.length ? argv[at + 1] : fallback;
};
const port = Number(option("--port", "0"));
const host = option("--host", "127.0.0.1");
const json = flag("--json");
const legacy = flag("--legacy");
const slowGet = Number(option("--slow-get", "0"));
if (!Number.isInteger(port) || port < 0 || (json && legacy) || !(slowGet >= 0)) {
  console.error("usage: node http-server.mjs [--port N] [--host H] [--json | --legacy] [--slow-get MS]");
  process.exit(2);
}

const log = (message) => process.stderr.write(`node-http-server: ${message}\n`);

const MIB = 1 << 20;
let cancelled = 0;

/// `bytes` ASCII bytes of numbered lines, each different from the next.
function bigText(bytes) {
  const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"];
  const out = Buffer.allocUnsafe(bytes);
  let at = 0;
  for (let n = 0; at < bytes; n++) {
    const line = `line ${String(n).padStart(8, "0")} ${words[n % 10]} ${words[(n * 7) % 10]} ${"x".repeat(n % 23)}\n`;
    at += out.write(line, at, "latin1");
  }
  return out.toString("latin1");
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason ?? new Error("aborted"));
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason ?? new Error("aborted"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

const text = (value) => ({ content: [{ type: "text", text: value }] });

/// One McpServer per session: an McpServer connects to one transport.
function makeServer() {
  const server = new McpServer({ name: "drainpipe-node-http-peer", version: "0.0.0" });
  server.registerTool(
    "echo",
    { description: "Returns `text`.", inputSchema: { text: z.string() } },
    async ({ text: value }) => text(value),
  );
  server.registerTool(
    "big",
    { description: "One text block of `mb` MiB of numbered ASCII lines.", inputSchema: { mb: z.number().nonnegative() } },
    async ({ mb }) => {
      const bytes = Math.round(mb * MIB);
      log(`big: answering ${bytes} bytes`);
      return text(bigText(bytes));
    },
  );
  server.registerTool(
    "slow",
    { description: "Sleeps `ms` milliseconds; cancellable.", inputSchema: { ms: z.number().nonnegative().optional() } },
    async ({ ms = 5000 }, extra) => {
      log(`slow: started (${ms} ms)`);
      try {
        await sleep(ms, extra.signal);
      } catch (error) {
        cancelled += 1;
        log(`slow: cancelled (${cancelled} so far)`);
        throw error;
      }
      log("slow: finished");
      return text(`slept ${ms} ms`);
    },
  );
  server.registerTool(
    "read_text_file",
    { description: "The text of the file at `path` (spill-client.mjs reads a cut file back).", inputSchema: { path: z.string() } },
    async ({ path }) => text(readFileSync(path, "utf8")),
  );
  server.registerTool(
    "cancelled_count",
    { description: "How many `slow` calls were cancelled so far.", inputSchema: {} },
    async () => text(String(cancelled)),
  );
  server.registerTool(
    "ask",
    { description: "Asks the client elicitation/create on the session's own stream.", inputSchema: {} },
    async () => {
      // `server.server.request`, not the handler's `sendRequest`: no related
      // request, so the transport sends it on the GET stream.
      const answer = await server.server.request(
        { method: "elicitation/create", params: { message: "Your name?", requestedSchema: { type: "object", properties: { name: { type: "string" } } } } },
        ElicitResultSchema,
        { timeout: 10_000 },
      );
      return text(JSON.stringify(answer));
    },
  );
  return server;
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const raw = Buffer.concat(chunks).toString("utf8");
  return raw ? JSON.parse(raw) : undefined;
}

function reply(res, status, message) {
  if (res.headersSent) return res.end();
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message } }));
}

const sessions = new Map();

async function streamable(req, res, url) {
  if (url.pathname !== "/mcp") return reply(res, 404, `no such path ${url.pathname}`);
  const id = req.headers["mcp-session-id"];
  let body;
  if (req.method === "POST") {
    try {
      body = await readBody(req);
    } catch (error) {
      return reply(res, 400, `parse error: ${error.message}`);
    }
  }
  let transport = id ? sessions.get(id) : undefined;
  if (!transport) {
    if (id) return reply(res, 404, `unknown session ${id}`);
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return reply(res, 400, "no session: send initialize first");
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: json,
      onsessioninitialized: (session) => {
        sessions.set(session, transport);
        log(`session ${session} opened`);
        // On stdout too: the tests read which HTTP version the client spoke.
        process.stdout.write(`session opened over HTTP/${req.httpVersion}\n`);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId && sessions.delete(transport.sessionId)) log(`session ${transport.sessionId} closed`);
    };
    await makeServer().connect(transport);
  }
  if (req.method === "GET" && slowGet > 0) await new Promise((resolve) => setTimeout(resolve, slowGet));
  await transport.handleRequest(req, res, body);
}

async function legacySse(req, res, url) {
  if (req.method === "GET" && url.pathname === "/sse") {
    const transport = new SSEServerTransport("/messages", res);
    sessions.set(transport.sessionId, transport);
    log(`legacy session ${transport.sessionId} opened`);
    res.on("close", () => {
      sessions.delete(transport.sessionId);
      log(`legacy session ${transport.sessionId} closed`);
    });
    await makeServer().connect(transport);
    return;
  }
  if (req.method === "POST" && url.pathname === "/messages") {
    const transport = sessions.get(url.searchParams.get("sessionId") ?? "");
    if (!transport) return reply(res, 404, "unknown session");
    let body;
    try {
      body = await readBody(req);
    } catch (error) {
      return reply(res, 400, `parse error: ${error.message}`);
    }
    await transport.handlePostMessage(req, res, body);
    return;
  }
  reply(res, 404, `no such endpoint ${req.method} ${url.pathname}`);
}

const tlsAt = argv.indexOf("--tls");
const tls = tlsAt >= 0 ? { cert: readFileSync(argv[tlsAt + 1]), key: readFileSync(argv[tlsAt + 2]) } : undefined;
const handle = (req, res) => {
  const url = new URL(req.url ?? "/", "http://localhost");
  (legacy ? legacySse : streamable)(req, res, url).catch((error) => {
    log(`${req.method} ${url.pathname} failed: ${error.stack ?? error}`);
    reply(res, 500, String(error.message ?? error));
  });
};
const http = tls ? createSecureServer({ ...tls, allowHTTP1: true }, handle) : createServer(handle);
// Long calls and long streams are the point: no server-side time limits.
http.requestTimeout = 0;
http.headersTimeout = 0;
http.keepAliveTimeout = 5000;

http.listen(port, host, () => {
  process.stdout.write(`listening ${http.address().port}\n`);
  log(`${legacy ? "legacy HTTP+SSE" : json ? "Streamable HTTP (JSON responses)" : "Streamable HTTP"} on ${host}:${http.address().port}`);
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    log(`${signal}: exiting`);
    process.exit(0);
  });
}
