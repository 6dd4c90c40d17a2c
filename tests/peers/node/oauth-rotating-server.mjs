// An MCP server over HTTP behind OAuth as strict as the large providers
// are: short-lived access tokens and rotating refresh tokens, each usable
// once. The MCP side is the official TypeScript SDK (`McpServer` behind a
// stateless `StreamableHTTPServerTransport`); the authorization server is
// written here (the SDK's demo provider neither expires nor rotates), on
// the same origin:
//
//   /.well-known/oauth-protected-resource/mcp, /.well-known/oauth-authorization-server
//   /register   dynamic registration (public clients)
//   /authorize  approves at once: redirects to redirect_uri with a code
//   /token      authorization_code (PKCE S256 checked) and refresh_token;
//               a refresh token spent once is refused with invalid_grant
//   /stats      what happened, as JSON (for the test's verdict)
//
//   node oauth-rotating-server.mjs [--ttl SECONDS]   (default 3)
//
// The first stdout line is `listening <port>` (127.0.0.1, a free port).
// Tool: echo {text} → one text block, `text`.

import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const ttlAt = process.argv.indexOf("--ttl");
const ttl = ttlAt >= 0 ? Number(process.argv[ttlAt + 1]) : 3;

const stats = {
  registrations: 0,
  authorizations: 0,
  code_exchanges: 0,
  refreshes: 0,
  // A refresh token presented after it was spent, or unknown.
  refused_refreshes: 0,
  // MCP requests with a missing, unknown or expired access token.
  unauthorized: 0,
  calls: 0,
};
const codes = new Map(); // code → { challenge, redirect_uri, client_id }
const access = new Map(); // token → expiry (ms)
const refresh = new Map(); // token → spent?

const token = () => randomBytes(24).toString("base64url");
const grant = () => {
  const at = token();
  const rt = token();
  access.set(at, Date.now() + ttl * 1000);
  refresh.set(rt, false);
  return { access_token: at, token_type: "Bearer", expires_in: ttl, refresh_token: rt };
};

function mcpServer() {
  const server = new McpServer({ name: "oauth-rotating", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes text", inputSchema: { text: z.string() } },
    async ({ text }) => {
      stats.calls += 1;
      return { content: [{ type: "text", text }] };
    },
  );
  return server;
}

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

function json(res, status, value, headers = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(value));
}

const http = createServer(async (req, res) => {
  const origin = `http://127.0.0.1:${http.address().port}`;
  const url = new URL(req.url, origin);
  try {
    if (url.pathname === "/.well-known/oauth-protected-resource/mcp") {
      return json(res, 200, { resource: `${origin}/mcp`, authorization_servers: [origin] });
    }
    if (url.pathname === "/.well-known/oauth-authorization-server") {
      return json(res, 200, {
        issuer: origin,
        authorization_endpoint: `${origin}/authorize`,
        token_endpoint: `${origin}/token`,
        registration_endpoint: `${origin}/register`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
      });
    }
    if (url.pathname === "/register" && req.method === "POST") {
      stats.registrations += 1;
      const asked = JSON.parse(await body(req));
      return json(res, 201, { ...asked, client_id: `client-${stats.registrations}` });
    }
    if (url.pathname === "/authorize") {
      stats.authorizations += 1;
      const code = token();
      codes.set(code, {
        challenge: url.searchParams.get("code_challenge"),
        redirect_uri: url.searchParams.get("redirect_uri"),
      });
      const back = new URL(url.searchParams.get("redirect_uri"));
      back.searchParams.set("code", code);
      back.searchParams.set("state", url.searchParams.get("state") ?? "");
      back.searchParams.set("iss", origin);
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    if (url.pathname === "/token" && req.method === "POST") {
      const form = new URLSearchParams(await body(req));
      if (form.get("grant_type") === "authorization_code") {
        const issued = codes.get(form.get("code"));
        codes.delete(form.get("code"));
        const verifier = form.get("code_verifier") ?? "";
        const challenge = createHash("sha256").update(verifier).digest("base64url");
        if (!issued || issued.challenge !== challenge || issued.redirect_uri !== form.get("redirect_uri")) {
          return json(res, 400, { error: "invalid_grant" });
        }
        stats.code_exchanges += 1;
        return json(res, 200, grant());
      }
      if (form.get("grant_type") === "refresh_token") {
        const presented = form.get("refresh_token");
        if (refresh.get(presented) !== false) {
          stats.refused_refreshes += 1;
          return json(res, 400, { error: "invalid_grant", error_description: "refresh token spent or unknown" });
        }
        refresh.set(presented, true);
        stats.refreshes += 1;
        return json(res, 200, grant());
      }
      return json(res, 400, { error: "unsupported_grant_type" });
    }
    if (url.pathname === "/stats") return json(res, 200, stats);
    if (url.pathname === "/mcp") {
      const bearer = (req.headers.authorization ?? "").replace(/^Bearer /, "");
      const expiry = access.get(bearer);
      if (!expiry || expiry < Date.now()) {
        stats.unauthorized += 1;
        return json(
          res,
          401,
          { error: "invalid_token" },
          { "www-authenticate": `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"` },
        );
      }
      const parsed = req.method === "POST" ? JSON.parse(await body(req)) : undefined;
      if (req.method !== "POST") return json(res, 405, { error: "stateless: POST only" });
      const server = mcpServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on("close", () => {
        transport.close();
        server.close();
      });
      await server.connect(transport);
      return transport.handleRequest(req, res, parsed);
    }
    json(res, 404, { error: "not found" });
  } catch (error) {
    console.error(`oauth-rotating-server: ${error?.stack ?? error}`);
    if (!res.headersSent) json(res, 500, { error: "server_error" });
  }
});

http.listen(0, "127.0.0.1", () => {
  console.log(`listening ${http.address().port}`);
});
