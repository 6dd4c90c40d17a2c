// A host built on the official TypeScript SDK: `Client` with
// `StdioClientTransport`, in front of any stdio server command. Run by the
// release suite against `server-everything` and the oversized server, with
// and without `drainpipe proxy` in between.
//
//   node sdk-client.mjs everything [--rounds N] -- <server command…>
//   node sdk-client.mjs oversized --expect-large ok|error [--rounds N] -- <server command…>
//   node sdk-client.mjs read-too-large --file PATH -- <server-filesystem command…>
//   node sdk-client.mjs send-too-large --bytes N -- <server-everything command…>
//   node sdk-client.mjs condensed --tool NAME --file PATH --budget N [--unit bytes|chars|tokens] [--echo] [--dump PATH] -- <server command…>
//
// Every check throws on failure (exit 1). The last stdout line is a JSON
// summary with the round-trip figures, which the Rust test reads.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { checkCondensed, shown } from "./condensed-check.mjs";

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
if (split < 1 || split === argv.length - 1) {
  console.error("usage: node sdk-client.mjs everything|oversized [options] -- <server command…>");
  process.exit(2);
}
const [mode, ...options] = argv.slice(0, split);
const [command, ...args] = argv.slice(split + 1);
const option = (name, fallback) => {
  const at = options.indexOf(name);
  return at >= 0 ? options[at + 1] : fallback;
};
const rounds = Number(option("--rounds", "200"));

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

const elapsedMs = (start) => Number(process.hrtime.bigint() - start) / 1e6;

/// `rounds` sequential small calls; returns their durations in ms, sorted.
async function roundTrips(client, call) {
  for (let i = 0; i < 20; i++) await call(client, -1 - i); // warm-up
  const samples = [];
  for (let i = 0; i < rounds; i++) {
    const start = process.hrtime.bigint();
    await call(client, i);
    samples.push(elapsedMs(start));
  }
  return samples.sort((a, b) => a - b);
}

const pick = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];

async function everything(client, summary) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of ["echo", "get-sum", "trigger-long-running-operation"]) {
    check(names.includes(name), `tools/list has ${name} (got ${names.join(", ")})`);
  }
  summary.tools = names.length;

  // Many calls at once: each answer belongs to its own call, none is lost.
  const messages = Array.from({ length: 100 }, (_, i) => `message ${i} «ünïcødé» "quoted" ${"x".repeat(i * 50)}`);
  const answers = await Promise.all(messages.map((message) => client.callTool({ name: "echo", arguments: { message } })));
  answers.forEach((answer, i) => check(answer.content[0].text === `Echo: ${messages[i]}`, `echo ${i} got its own answer`));
  const sums = await Promise.all(
    Array.from({ length: 50 }, (_, i) => client.callTool({ name: "get-sum", arguments: { a: i, b: 1000 } })),
  );
  sums.forEach((sum, i) => check(sum.content[0].text.includes(`is ${i + 1000}.`), `sum ${i}: ${sum.content[0].text}`));
  summary.concurrent_calls = messages.length + sums.length;

  // Progress notifications arrive in order and before the result.
  const progress = [];
  const done = await client.callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 0.5, steps: 5 } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  // In order and none invented. The SDK client itself may drop the last one:
  // it settles the call on the result, which follows the last notification
  // on the wire, before dispatching that notification (seen with and
  // without the proxy), so at least steps - 1 are required.
  check(
    progress.length >= 4 && progress.every((p, i) => p === i + 1),
    `progress in order: ${JSON.stringify(progress)}`,
  );
  summary.progress = progress;
  check(done.content[0].text.includes("Steps: 5"), `long operation result: ${done.content[0].text}`);

  // Cancel a long call; the next call answers at once.
  const abort = new AbortController();
  const long = client.callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 30, steps: 30 } },
    undefined,
    { signal: abort.signal },
  );
  setTimeout(() => abort.abort("the test cancels"), 300);
  let cancelled = false;
  try {
    await long;
  } catch (error) {
    cancelled = true;
  }
  check(cancelled, "the cancelled call rejects");
  const start = process.hrtime.bigint();
  const after = await client.callTool({ name: "echo", arguments: { message: "after cancel" } });
  summary.after_cancel_ms = elapsedMs(start);
  check(after.content[0].text === "Echo: after cancel", "echo after the cancel");
  check(summary.after_cancel_ms < 2000, `echo after the cancel took ${summary.after_cancel_ms} ms`);

  const samples = await roundTrips(client, (c, i) => c.callTool({ name: "echo", arguments: { message: `rt ${i}` } }));
  summary.rtt_median_ms = pick(samples, 0.5);
  summary.rtt_p90_ms = pick(samples, 0.9);
}

async function oversized(client, summary) {
  const expect = option("--expect-large", "ok");
  const { tools } = await client.listTools();
  check(tools.some((t) => t.name === "large"), "the oversized server lists `large`");
  let outcome;
  const start = process.hrtime.bigint();
  try {
    const result = await client.callTool({ name: "large", arguments: {} }, undefined, { timeout: 30000 });
    outcome = { ok: true, bytes: result.content[0].text.length };
  } catch (error) {
    outcome = { ok: false, code: error.code, message: error.message };
  }
  summary.large_ms = elapsedMs(start);
  summary.large = outcome;
  if (expect === "ok") {
    check(outcome.ok && outcome.bytes > 8_000_000, `the 8 MiB result arrives whole: ${JSON.stringify(outcome)}`);
  } else {
    check(!outcome.ok && typeof outcome.code === "number", `the oversize result is an error for that request: ${JSON.stringify(outcome)}`);
    check(!/timed out/i.test(outcome.message), `an error, not a timeout: ${outcome.message}`);
  }
  const after = process.hrtime.bigint();
  const echo = await client.callTool({ name: "echo", arguments: { after: "large" } });
  summary.after_large_ms = elapsedMs(after);
  check(echo.structuredContent?.after === "large", "echo after the large call");
  const samples = await roundTrips(client, (c, i) => c.callTool({ name: "echo", arguments: { i } }));
  summary.rtt_median_ms = pick(samples, 0.5);
  summary.rtt_p90_ms = pick(samples, 0.9);
}

/// The error a call rejected with, as `{ code, message, ms }`; throws if it
/// answered instead.
async function expectError(call) {
  const start = process.hrtime.bigint();
  try {
    const result = await call();
    throw new Error(`check failed: expected an error, got a result: ${JSON.stringify(result).slice(0, 200)}`);
  } catch (error) {
    if (String(error.message).startsWith("check failed")) throw error;
    return { code: error.code, message: error.message, ms: elapsedMs(start) };
  }
}

/// A read from `server-filesystem` whose answer (the text twice, `id` last)
/// passes the proxy's limit: an error for that request, then the next call.
async function readTooLarge(client, summary) {
  const path = option("--file");
  summary.large = await expectError(() =>
    client.callTool({ name: "read_text_file", arguments: { path } }, undefined, { timeout: 30000 }),
  );
  check(typeof summary.large.code === "number", `a JSON-RPC error: ${JSON.stringify(summary.large)}`);
  check(!/timed out/i.test(summary.large.message), `an error, not a timeout: ${summary.large.message}`);
  const start = process.hrtime.bigint();
  const dirs = await client.callTool({ name: "list_allowed_directories", arguments: {} });
  summary.after_large_ms = elapsedMs(start);
  check(dirs.content[0].text.includes("Allowed directories"), `next call: ${dirs.content[0].text}`);
}

/// A request over the proxy's limit, from this client (which writes `id`
/// last): an error for its id, then the next call.
async function sendTooLarge(client, summary) {
  const message = "m".repeat(Number(option("--bytes", String(5 << 20))));
  summary.large = await expectError(() =>
    client.callTool({ name: "echo", arguments: { message } }, undefined, { timeout: 30000 }),
  );
  check(typeof summary.large.code === "number", `a JSON-RPC error: ${JSON.stringify(summary.large)}`);
  check(!/timed out/i.test(summary.large.message), `an error, not a timeout: ${summary.large.message}`);
  const after = await client.callTool({ name: "echo", arguments: { message: "after" } });
  check(after.content[0].text === "Echo: after", `next call: ${after.content[0].text}`);
}

/// A tool that returns a file's text (twice: in `content` and mirrored in
/// `structuredContent`), through `drainpipe proxy --clip`: the SDK accepts
/// the result (its schema check included), the text is a prefix of the
/// file, the mirror is cut alike, and the cut is said; then the next call.
async function condensed(client, summary) {
  const { readFileSync } = await import("node:fs");
  const path = option("--file");
  const budget = Number(option("--budget"));
  const text = readFileSync(path, "utf8");
  // `--echo`: the file's text is sent as `message` to server-everything's
  // `echo`, which answers `Echo: <message>` with no structuredContent.
  const echo = options.includes("--echo");
  const args = echo ? { message: text } : { path };
  const original = echo ? `Echo: ${text}` : text;
  const start = process.hrtime.bigint();
  const result = await client.callTool({ name: option("--tool"), arguments: args }, undefined, { timeout: 120000 });
  summary.ms = elapsedMs(start);
  const unit = option("--unit", "bytes");
  const { marker, keptChars, shownChars, kept } = checkCondensed(result, original, budget, unit, { mirrored: !echo });
  summary.kept_chars = keptChars;
  summary.kept = kept;
  summary.shown_chars = shownChars;
  summary.marker = marker;
  summary.tail = result.content[0].text.slice(-200);
  const dump = option("--dump", "");
  if (dump) (await import("node:fs")).writeFileSync(dump, JSON.stringify(shown(result)));
  const again = await client.callTool({ name: option("--tool"), arguments: args }, undefined, { timeout: 120000 });
  check(again.content[0].text === result.content[0].text, "the same result again");
}

/// Against the drainpipe fixture, through `drainpipe proxy` with export on
/// (the Rust test reads what reached its OTLP receiver): an ordinary call
/// carrying the host's trace context (`--traceparent`), a `large` result of
/// `--large-bytes` (condensed under `--clip`, an error over the transport
/// limit without), and a `slow` call the client cancels.
async function telemetry(client, summary) {
  const echo = await client.callTool(
    { name: "echo", arguments: { hello: "telemetry" }, _meta: { traceparent: option("--traceparent") } },
    undefined,
    { timeout: 30000 },
  );
  check(echo.structuredContent?.hello === "telemetry", `echo: ${JSON.stringify(echo)}`);
  try {
    const large = await client.callTool(
      { name: "large", arguments: { bytes: Number(option("--large-bytes")) } },
      undefined,
      { timeout: 60000 },
    );
    summary.large = { condensed: Boolean(large._meta?.["io.drainpipe/truncated"]), links: large.content.filter((b) => b.type === "resource_link").length };
  } catch (error) {
    summary.large = { error: error.code ?? String(error) };
  }
  const abort = new AbortController();
  const slow = client.callTool(
    { name: "slow", arguments: { steps: 100, step_ms: 100 } },
    undefined,
    { signal: abort.signal, timeout: 60000 },
  );
  setTimeout(() => abort.abort("enough"), 300);
  try {
    await slow;
    summary.slow = "answered";
  } catch (error) {
    summary.slow = "cancelled";
  }
  // The proxy ends the cancelled call's span at once; a last call shows
  // the session still works.
  const again = await client.callTool({ name: "echo", arguments: { n: 2 } }, undefined, { timeout: 30000 });
  check(again.structuredContent?.n === 2, "the session works after the cancellation");
}

const transport = new StdioClientTransport({ command, args, stderr: "inherit", env: process.env });
const client = new Client({ name: "drainpipe-release-sdk-client", version: "0.0.0" });
const summary = { mode, peer: "typescript-sdk" };
try {
  await client.connect(transport);
  if (mode === "everything") await everything(client, summary);
  else if (mode === "oversized") await oversized(client, summary);
  else if (mode === "read-too-large") await readTooLarge(client, summary);
  else if (mode === "send-too-large") await sendTooLarge(client, summary);
  else if (mode === "condensed") await condensed(client, summary);
  else if (mode === "telemetry") await telemetry(client, summary);
  else throw new Error(`unknown mode ${mode}`);
  summary.ok = true;
} catch (error) {
  summary.ok = false;
  summary.error = String(error?.stack ?? error);
  process.exitCode = 1;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(summary));
