// A host on an official TypeScript SDK client that does what hosts do on
// connecting: the handshake, every page of `tools/list`, and, when the server
// announces resources, every page of `resources/list` and
// `resources/templates/list`; then the tool calls it is given. The Rust test
// (tests/tests/peer_transparent.rs) records the bytes on both sides of the
// proxy and compares them; this client only has to behave as a host does.
//
//   node transparency-client.mjs [--sdk v1|v2] [--call NAME JSON]... -- <command…>
//
// `--sdk v1` (the default): `@modelcontextprotocol/sdk` 1.x, the 2025
// `initialize`. `--sdk v2`: `@modelcontextprotocol/client` pinned to
// 2026-07-28 (`server/discover`). Every request is bounded by a timeout. The
// last stdout line is a JSON summary.

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
if (split < 0 || split === argv.length - 1) {
  console.error("usage: node transparency-client.mjs [--sdk v1|v2] [--call NAME JSON]... -- <command…>");
  process.exit(2);
}
const options = argv.slice(0, split);
const [command, ...args] = argv.slice(split + 1);
const sdk = options.includes("--sdk") ? options[options.indexOf("--sdk") + 1] : "v1";
const calls = [];
options.forEach((option, at) => {
  if (option === "--call") calls.push({ name: options[at + 1], arguments: JSON.parse(options[at + 2]) });
});

const LIMIT = { timeout: 60_000 };
const summary = { sdk, tools: [], resources: 0, templates: 0, calls: [] };
let client;
try {
  if (sdk === "v2") {
    const { Client } = await import("@modelcontextprotocol/client");
    const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
    client = new Client(
      { name: "drainpipe-transparency", version: "0.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
    summary.protocol = client.getNegotiatedProtocolVersion();
  } else {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    client = new Client({ name: "drainpipe-transparency", version: "0.0.0" });
    await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
  }
  const capabilities = client.getServerCapabilities() ?? {};
  summary.capabilities = Object.keys(capabilities).sort();
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {}, LIMIT);
    summary.tools.push(...page.tools.map((tool) => tool.name));
    cursor = page.nextCursor;
  } while (cursor);
  if (capabilities.resources) {
    cursor = undefined;
    do {
      const page = await client.listResources(cursor ? { cursor } : {}, LIMIT);
      summary.resources += page.resources.length;
      cursor = page.nextCursor;
    } while (cursor);
    const templates = await client.listResourceTemplates({}, LIMIT);
    summary.templates = templates.resourceTemplates.length;
  }
  for (const call of calls) {
    const result = await client.callTool(call, undefined, LIMIT);
    summary.calls.push({ name: call.name, isError: result.isError === true, blocks: result.content?.length ?? 0 });
  }
  summary.ok = true;
} catch (error) {
  summary.ok = false;
  summary.error = String(error?.stack ?? error);
  process.exitCode = 1;
} finally {
  await client?.close().catch(() => {});
}
console.log(JSON.stringify(summary));
