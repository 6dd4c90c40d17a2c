// An MCP stdio server on the official TypeScript SDK v2
// (`@modelcontextprotocol/server`), serving both protocol eras through
// `serveStdio` (`--reject-legacy`: the 2026-07-28 era only). `trace_context`
// answers the trace context its request carried. `read_text {path}` returns the file's text in `content` and mirrored in
// `structuredContent.content`, under a strict output schema
// (`additionalProperties: false`), as the official filesystem server does.
// Logs go to stderr only.

import { readFileSync } from "node:fs";
import { McpServer, fromJsonSchema } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";

const legacy = process.argv.includes("--reject-legacy") ? "reject" : "serve";

serveStdio(
  () => {
    const server = new McpServer(
      { name: "drainpipe-v2-peer", version: "0.0.0" },
      { capabilities: { tools: {} } },
    );
    server.registerTool(
      "read_text",
      {
        description: "The text of the file at `path`.",
        inputSchema: fromJsonSchema({
          type: "object",
          properties: { path: { type: "string" } },
          required: ["path"],
        }),
        outputSchema: fromJsonSchema({
          type: "object",
          properties: { content: { type: "string" } },
          required: ["content"],
          additionalProperties: false,
        }),
      },
      async ({ path }) => {
        const text = readFileSync(path, "utf8");
        return { content: [{ type: "text", text }], structuredContent: { content: text } };
      },
    );
    // The trace context the request arrived with, as the server's
    // instrumentation would read it.
    server.registerTool(
      "trace_context",
      { description: "The traceparent and tracestate this request carried in _meta." },
      async (ctx) => {
        const meta = ctx.mcpReq?._meta ?? {};
        const seen = { traceparent: meta.traceparent ?? null, tracestate: meta.tracestate ?? null };
        return { content: [{ type: "text", text: JSON.stringify(seen) }] };
      },
    );
    return server;
  },
  { legacy, onerror: (error) => process.stderr.write(`v2-peer: ${error.message}\n`) },
);
