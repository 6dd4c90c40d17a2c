// The checks release/test-packages.sh makes of drainpipe as installed from
// its npm packages or its wheel: the official TypeScript SDK client in front
// of `<runner> drainpipe proxy … -- node oversized-server.mjs`, where
// <runner> is npx, uvx, or a binary.
//
//   node package-checks.mjs over-frame -- <runner…> proxy --max-frame 2MiB -- <server…>
//   node package-checks.mjs clip -- <runner…> proxy --clip 64KiB -- <server…>
//
// over-frame: an answer over --max-frame (4 MiB) fails its own request at
//   once (not a timeout), and the next call works;
// clip: an answer over the 64 KiB budget (512 KiB) arrives condensed: within
//   the budget, the server's own text, with drainpipe's truncation marker;
//   the next call works.
// tokens: the same with `--clip 4000tokens` (a binary without token budgets
//   refuses the option, and the client never connects).
// Every check throws on failure (exit 1); the last line is a JSON summary.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
const mode = argv[0];
if (split !== 1 || split === argv.length - 1 || !["over-frame", "clip", "tokens"].includes(mode)) {
  console.error("usage: node package-checks.mjs over-frame|clip|tokens -- <proxy command…>");
  process.exit(2);
}
const [command, ...args] = argv.slice(split + 1);

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

const transport = new StdioClientTransport({ command, args, stderr: "inherit", env: process.env });
const client = new Client({ name: "drainpipe-package-checks", version: "0.0.0" });
const summary = { mode };

async function overFrame() {
  let outcome;
  try {
    const result = await client.callTool({ name: "large", arguments: { bytes: 4 << 20 } }, undefined, { timeout: 60000 });
    outcome = { ok: true, chars: result.content?.[0]?.text?.length };
  } catch (error) {
    outcome = { ok: false, code: error.code, message: String(error.message) };
  }
  summary.over_frame = outcome;
  check(!outcome.ok && typeof outcome.code === "number", `a 4 MiB answer over --max-frame 2MiB fails its request: ${JSON.stringify(outcome)}`);
  check(!/timed out/i.test(outcome.message), `an error, not a timeout: ${outcome.message}`);
}

async function clip() {
  const original = 512 << 10;
  const clipped = await client.callTool({ name: "large", arguments: { bytes: original } }, undefined, { timeout: 60000 });
  const text = clipped.content?.[0]?.text ?? "";
  const marker = clipped._meta?.["io.drainpipe/truncated"];
  summary.clipped = { chars: text.length, marker };
  // 4,000 tokens of a run of one letter are well under 64 KiB too.
  check(text.length > 1000 && text.length < 64 << 10, `the text is cut to the budget: ${text.length} characters`);
  check(/^L+/.test(text), "what is kept is the server's own text");
  check(marker && marker.originalBytes > 64 << 10, `the truncation marker: ${JSON.stringify(marker)}`);
}

try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  check(tools.some((t) => t.name === "large"), "the oversized server lists `large`");
  if (mode === "over-frame") await overFrame();
  else await clip();
  const next = await client.callTool({ name: "echo", arguments: { after: mode } }, undefined, { timeout: 30000 });
  check(next.structuredContent?.after === mode, "the next call works");
  summary.ok = true;
} catch (error) {
  summary.ok = false;
  summary.error = String(error?.stack ?? error);
  process.exitCode = 1;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(summary));
