// The client under test for the official MCP conformance suite's client
// scenarios: an official TypeScript SDK client on stdio through
// `drainpipe proxy --url <scenario server>`, as a host runs it.
//
//   conformance client --command "node client.mjs" --scenario NAME
//
// The suite runs this with the scenario server's URL as the last argument
// and MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION and (for
// some scenarios) MCP_CONFORMANCE_CONTEXT in the environment.
//
// - The 2025 revisions: the SDK 1.x `Client` (initialize, tools/list, a
//   tools/call). The 2026-07-28 revision: the SDK 2.x `Client` pinned to
//   that revision (server/discover, no initialize).
// - The browser: `BROWSER` names tests/peers/node/browser.mjs, which the proxy runs with the
//   URL to approve (as it runs a user's browser); it GETs the URL without
//   following the redirect, then the `Location` (the proxy's loopback
//   callback), as the suite's auth scenarios expect. Every proxy the SDK
//   starts gets it (the 2.x client starts a second one to probe).
// - Flags: only what a user would give for that server: a fresh token
//   directory, this client's metadata document URL (every scenario, as the
//   suite's reference client does), and for `auth/pre-registration` the
//   client id and secret the context names, through `${VAR}` as a host's
//   config would write them.
//
// Environment: DRAINPIPE_BIN (the drainpipe binary), PEERS_NODE_MODULES
// (tests/peers/node/node_modules, where the SDKs are). Exit 0 when every
// step worked, 1 otherwise (scenarios that expect a refusal allow it).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const revision = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION ?? "2025-11-25";
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}");
const bin = process.env.DRAINPIPE_BIN;
const peers = process.env.PEERS_NODE_MODULES;
if (!bin || !peers || !url) {
  console.error("usage: DRAINPIPE_BIN=… PEERS_NODE_MODULES=… node client.mjs <server url>");
  process.exit(2);
}
const require = createRequire(join(peers, "noop.js"));
const load = (name) => import(require.resolve(name));

// The suite's reference client names this URL as its metadata document.
const CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json";

const dir = mkdtempSync(join(tmpdir(), "drainpipe-conformance-"));
const args = ["proxy", "--oauth-dir", join(dir, "oauth"), "--oauth-client-metadata-url", CLIENT_METADATA_URL];
const browser = join(dirname(fileURLToPath(import.meta.url)), "..", "peers", "node", "browser.mjs");
const env = { ...process.env, BROWSER: `${process.execPath} ${browser}` };
delete env.DRAINPIPE_NO_BROWSER;
if (context.client_id) {
  env.CONFORMANCE_CLIENT_ID = context.client_id;
  env.CONFORMANCE_CLIENT_SECRET = context.client_secret ?? "";
  args.push("--oauth-client-id", "${CONFORMANCE_CLIENT_ID}");
  if (context.client_secret) args.push("--oauth-client-secret", "${CONFORMANCE_CLIENT_SECRET}");
}
// Machine to machine: the client signs in as itself, no browser.
if (scenario === "auth/client-credentials-basic") args.push("--oauth-grant", "client-credentials");
args.push("--metrics", "none", "--url", url);

// The proxies' stderr, passed on for the suite's log.
function watch(stream) {
  stream.on("data", (chunk) => process.stderr.write(chunk));
}

async function run() {
  if (revision === "2026-07-28") return runModern();
  const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
  const { ElicitRequestSchema } = await load("@modelcontextprotocol/sdk/types.js");
  const elicits = scenario === "elicitation-sep1034-client-defaults";
  const client = new Client(
    { name: "drainpipe-conformance", version: "1.0.0" },
    { capabilities: elicits ? { elicitation: { form: { applyDefaults: true } } } : {} },
  );
  if (elicits) {
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: {} }));
  }
  const transport = new StdioClientTransport({ command: bin, args, env, stderr: "pipe" });
  watch(transport.stderr);
  await client.connect(transport);
  await exercise(client);
  await client.close();
}

async function runModern() {
  const { Client } = await load("@modelcontextprotocol/client");
  const { StdioClientTransport } = await load("@modelcontextprotocol/client/stdio");
  const client = new Client(
    { name: "drainpipe-conformance", version: "1.0.0" },
    {
      capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} },
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    },
  );
  // What the multi-round-trip scenarios ask of the user, answered yes.
  client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { confirmed: true } }));
  client.setRequestHandler("sampling/createMessage", async () => ({
    role: "assistant",
    content: { type: "text", text: "ok" },
    model: "drainpipe-conformance",
  }));
  client.setRequestHandler("roots/list", async () => ({ roots: [] }));
  const transport = new StdioClientTransport({ command: bin, args, env, stderr: "pipe" });
  watch(transport.stderr);
  await client.connect(transport);
  await exercise(client);
  await client.close();
}

// What every scenario asks of a client: list the tools and call them (the
// calls the scenario's context names, if it names any); list and read the
// resources and prompts a server offers. A call that fails is reported and
// the run goes on: the scenario server's checks judge it.
let failures = 0;
async function step(what, call) {
  try {
    return await call();
  } catch (error) {
    failures += 1;
    console.error(`conformance client: ${what}: ${error?.message ?? error}`);
    return undefined;
  }
}
async function exercise(client) {
  const capabilities = client.getServerCapabilities() ?? {};
  const { tools } = await client.listTools();
  if (scenario === "auth/pre-registration" || scenario === "json-schema-ref-no-deref") return;
  const calls = context.toolCalls ?? tools.map((tool) => ({
    name: tool.name,
    arguments: tool.name === "add_numbers" ? { a: 2, b: 3 } : {},
  }));
  for (const call of calls) await step(`calling ${call.name}`, () => client.callTool(call));
  if (capabilities.resources) {
    const listed = await step("listing resources", () => client.listResources());
    for (const resource of listed?.resources ?? []) {
      await step(`reading ${resource.uri}`, () => client.readResource({ uri: resource.uri }));
    }
  }
  if (capabilities.prompts) {
    const listed = await step("listing prompts", () => client.listPrompts());
    for (const prompt of listed?.prompts ?? []) {
      await step(`getting ${prompt.name}`, () => client.getPrompt({ name: prompt.name, arguments: {} }));
    }
  }
}

let code = 0;
try {
  await run();
} catch (error) {
  console.error(`conformance client: ${error?.stack ?? error}`);
  code = 1;
}
rmSync(dir, { recursive: true, force: true });
process.exit(code);
