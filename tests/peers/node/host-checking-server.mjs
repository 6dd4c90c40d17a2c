// An MCP server over Streamable HTTP that checks Host and Origin as the
// official TypeScript SDK has a local server do it: `createMcpExpressApp()`
// (SDK 1.x) with its defaults, whose DNS rebinding protection answers 403
// and -32000 "Invalid Host: <name>" to any Host but localhost, 127.0.0.1
// and [::1] (any port); and in front of the MCP routes the Origin check SDK
// 2.x recommends, `validateOriginHeader(origin, localhostAllowedOrigins())`:
// a request carrying an Origin whose host is not one of those is refused
// the same way ("Invalid Origin: <name>"), one without Origin passes.
// Stateful: one McpServer per `initialize`, keyed by `Mcp-Session-Id`. The
// edge test (host-adapter/js/edge-test/run.mjs) puts the example worker in
// front of it.
//
//   node host-checking-server.mjs [--port N]
//
// Binds 127.0.0.1; --port 0 (the default) picks a free port. The first
// stdout line is `listening <port>`; everything else goes to stderr. The
// endpoint is /mcp (POST, GET, DELETE).
//
// Tools:
//   echo {text}   one text block: `text`
//   seen {}       what this call's HTTP request carried, as JSON in one
//                 text block: {"host":…,"origin":…,"path":…}, the Host and
//                 Origin headers (null when absent) and the path with its
//                 query string

import { randomUUID } from "node:crypto";
import { localhostAllowedOrigins, validateOriginHeader } from "@modelcontextprotocol/server";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const argv = process.argv.slice(2);
const at = argv.indexOf("--port");
const port = Number(at >= 0 ? argv[at + 1] : "0");
if (!Number.isInteger(port) || port < 0) {
  console.error("usage: node host-checking-server.mjs [--port N]");
  process.exit(2);
}

const log = (message) => process.stderr.write(`host-checking-server: ${message}\n`);
const text = (value) => ({ content: [{ type: "text", text: value }] });

function makeServer() {
  const server = new McpServer({ name: "drainpipe-host-checking-peer", version: "0.0.0" });
  server.registerTool(
    "echo",
    { description: "Returns `text`.", inputSchema: { text: z.string() } },
    async ({ text: value }) => text(value),
  );
  server.registerTool(
    "seen",
    { description: "The Host, Origin and path this call's HTTP request carried.", inputSchema: {} },
    async (_args, extra) => {
      const headers = extra.requestInfo?.headers ?? {};
      const url = extra.requestInfo?.url;
      return text(JSON.stringify({
        host: headers.host ?? null,
        origin: headers.origin ?? null,
        path: url ? `${url.pathname}${url.search}` : null,
      }));
    },
  );
  return server;
}

const refuse = (res, status, message) =>
  res.status(status).json({ jsonrpc: "2.0", error: { code: -32000, message }, id: null });

// The default: host 127.0.0.1, so localhostHostValidation() runs first.
const app = createMcpExpressApp();
app.use((req, res, next) => {
  const origin = validateOriginHeader(req.headers.origin, localhostAllowedOrigins());
  if (!origin.ok) {
    log(`refused: ${origin.message}`);
    return refuse(res, 403, origin.message);
  }
  next();
});

const sessions = new Map();
app.all("/mcp", async (req, res) => {
  try {
    const id = req.headers["mcp-session-id"];
    let transport = id ? sessions.get(id) : undefined;
    if (!transport) {
      if (id) return refuse(res, 404, `unknown session ${id}`);
      if (req.method !== "POST" || !isInitializeRequest(req.body)) return refuse(res, 400, "no session: send initialize first");
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (session) => {
          sessions.set(session, transport);
          log(`session ${session} opened (Host ${req.headers.host})`);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await makeServer().connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  } catch (error) {
    log(`${req.method} /mcp failed: ${error.stack ?? error}`);
    if (!res.headersSent) refuse(res, 500, String(error.message ?? error));
  }
});

const http = app.listen(port, "127.0.0.1", () => {
  process.stdout.write(`listening ${http.address().port}\n`);
  log(`Streamable HTTP on 127.0.0.1:${http.address().port}, Host and Origin checked`);
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => process.exit(0));
}
