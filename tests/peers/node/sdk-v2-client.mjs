// A host on the official TypeScript SDK v2 client (`@modelcontextprotocol/client`),
// in one of its version-negotiation modes: `pin` (the default: revision
// 2026-07-28, `server/discover`, no `initialize`), `legacy` (the 2025
// `initialize` only) or `auto` (probes with `server/discover` in a copy of
// the server, then speaks the era it found).
//
//   node sdk-v2-client.mjs condensed --file PATH --budget N [--mode pin|legacy|auto]
//        [--expect-direct-failure] -- <server command…>
//   node sdk-v2-client.mjs trace --traceparent TP [--mode …] -- <server command…>
//
// Reads the file through `read_text` and checks what `sdk-client.mjs
// condensed` checks: the result is accepted (the schema check included),
// its text is a prefix of the file, the mirror is cut alike, and the
// marker says what was cut. With `--expect-direct-failure` the result must
// instead fail (the client's own buffer limit, when nothing is in between).
// With `--traceparent`, it calls `trace_context` with that trace context in
// `_meta` instead and reports what the server saw (`server_saw`).
// The last stdout line is a JSON summary, with the revision negotiated.

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { checkCondensed } from "./condensed-check.mjs";

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
const options = argv.slice(0, split);
const [command, ...args] = argv.slice(split + 1);
const option = (name) => options[options.indexOf(name) + 1];
const check = (condition, message) => {
  if (!condition) throw new Error(`check failed: ${message}`);
};

const modes = { pin: { pin: "2026-07-28" }, legacy: "legacy", auto: "auto" };
const modeName = options.includes("--mode") ? option("--mode") : "pin";
if (!(modeName in modes)) throw new Error(`unknown --mode ${modeName}: pin, legacy or auto`);
const summary = { peer: "typescript-sdk-v2", mode: modeName };
const client = new Client(
  { name: "drainpipe-release-v2-client", version: "0.0.0" },
  { versionNegotiation: { mode: modes[modeName] } },
);
try {
  await client.connect(new StdioClientTransport({ command, args, stderr: "inherit", env: process.env }));
  summary.protocol = client.getNegotiatedProtocolVersion();
  check(
    (modeName === "legacy") === (summary.protocol !== "2026-07-28"),
    `mode ${modeName} negotiated ${summary.protocol}`,
  );
  const path = options.includes("--file") ? option("--file") : undefined;
  const budget = Number(option("--budget"));
  const original = path === undefined ? "" : readFileSync(path, "utf8");
  if (options.includes("--traceparent")) {
    // What the server saw of the trace context this host sent.
    const result = await client.callTool(
      { name: "trace_context", arguments: {}, _meta: { traceparent: option("--traceparent") } },
      undefined,
      { timeout: 30000 },
    );
    summary.server_saw = JSON.parse(result.content[0].text);
  } else if (options.includes("--expect-direct-failure")) {
    let failed = false;
    try {
      await client.callTool({ name: "read_text", arguments: { path } }, undefined, { timeout: 60000 });
    } catch (error) {
      failed = true;
      summary.direct_error = String(error.message);
    }
    check(failed, "without the proxy the oversized result fails the client");
  } else {
    const start = process.hrtime.bigint();
    const result = await client.callTool({ name: "read_text", arguments: { path } }, undefined, { timeout: 60000 });
    summary.ms = Number(process.hrtime.bigint() - start) / 1e6;
    const unit = options.includes("--unit") ? option("--unit") : "bytes";
    const { marker, keptChars, shownChars, kept } = checkCondensed(result, original, budget, unit);
    summary.shown_chars = shownChars;
    summary.kept = kept;
    if (summary.protocol === "2026-07-28") {
      // The modern era's results carry the server's envelope in `_meta`.
      check(result._meta["io.modelcontextprotocol/serverInfo"] !== undefined, "the server's own _meta keys are kept");
    }
    summary.marker = marker;
    summary.kept_chars = keptChars;
  }
  summary.ok = true;
} catch (error) {
  summary.ok = false;
  summary.error = String(error?.stack ?? error);
  process.exitCode = 1;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(summary));
