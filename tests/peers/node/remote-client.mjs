// A host built on the official TypeScript SDK client, for the remote
// (HTTP) release tests: `Client` with `StdioClientTransport` in front of a
// command (normally `drainpipe proxy --url …`), or, to check the servers
// themselves, straight to the URL with the SDK's own HTTP transports.
//
//   node remote-client.mjs <scenario> [options] -- <command…>
//   node remote-client.mjs <scenario> [options] --direct URL       (StreamableHTTPClientTransport)
//   node remote-client.mjs <scenario> [options] --direct-sse URL   (SSEClientTransport, 2024-11-05)
//
// Scenarios:
//   echo       echo {text}; checks the text comes back
//   big        calls --tool (default big) with {mb}; reports what arrived
//   call       calls --tool with --args, which must succeed (not isError),
//              then echo, which must succeed too; reports both
//   tool       calls --tool with --args, which must succeed (not isError):
//              for servers without echo (the SDK's example servers)
//   then_echo  calls --tool with --args (a call expected to fail), then
//              echo, which must succeed; reports both
//   cancel     slow {ms: 5000} aborted after 300 ms, then echo, then
//              cancelled_count until it has grown (up to 3 s)
//   list       tools/list; reports the names
//   ask        calls ask right after initialize, answering the server's
//              elicitation/create with {name: "drainpipe"} (the client
//              declares elicitation); the call must come back with it
//
// Options:
//   --mb N              for big (default: env REMOTE_MB, else 1)
//   --tool NAME         the tool of big / call / then_echo (big: "big"; else required)
//   --args JSON         the arguments of call's and then_echo's first call (default {})
//   --text S            echo's text (default "hello «ünïcødé»")
//   --call-timeout S    the SDK request timeout of each call, seconds
//                       (default: the overall timeout)
//   --timeout S         the whole run, seconds (default: env
//                       REMOTE_CLIENT_TIMEOUT, else 60)
//   --header 'N: v'     sent on every HTTP request in --direct modes (repeatable)
//
// Output: one JSON line on stdout, {"scenario", "transport", "ok", …}. A
// call's report is {ok, ms, is_error, text_bytes, blocks, notice,
// structured, head} or {ok: false, ms, error, code}. Exit 0 when the
// scenario's expectation held, 1 when it did not (the JSON says why), 2 on
// bad usage, 124 when the overall timeout fired: then stderr says which
// step was running and stdout still gets the JSON line with
// "timed_out": true and what was gathered so far.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const SCENARIOS = ["echo", "big", "call", "tool", "then_echo", "cancel", "list", "latency", "ask"];
const usage = () => {
  console.error(
    "usage: node remote-client.mjs <echo|big|call|tool|then_echo|cancel|list|latency|ask> [--calls N] [--mb N] [--tool NAME] [--args JSON] " +
      "[--text S] [--call-timeout S] [--timeout S] [--header 'N: v'] (-- <command…> | --direct URL | --direct-sse URL)",
  );
  process.exit(2);
};

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
const before = split >= 0 ? argv.slice(0, split) : argv;
const command = split >= 0 ? argv.slice(split + 1) : [];
const [scenario, ...options] = before;
if (!SCENARIOS.includes(scenario)) usage();
const option = (name, fallback) => {
  const at = options.indexOf(name);
  return at >= 0 && at + 1 < options.length ? options[at + 1] : fallback;
};
const headers = {};
options.forEach((value, at) => {
  if (options[at - 1] !== "--header") return;
  const colon = value.indexOf(":");
  if (colon < 1) usage();
  headers[value.slice(0, colon).trim()] = value.slice(colon + 1).trim();
});
const direct = option("--direct");
const directSse = option("--direct-sse");
if ([direct, directSse, command.length ? "x" : undefined].filter(Boolean).length !== 1) usage();

const timeoutS = Number(option("--timeout", process.env.REMOTE_CLIENT_TIMEOUT ?? "60"));
const callTimeoutMs = Number(option("--call-timeout", String(timeoutS))) * 1000;
const mb = Number(option("--mb", process.env.REMOTE_MB ?? "1"));
const text = option("--text", "hello «ünïcødé»");
const tool = option("--tool", scenario === "big" ? "big" : undefined);
let toolArgs;
try {
  toolArgs = JSON.parse(option("--args", "{}"));
} catch {
  usage();
}
if ([timeoutS, callTimeoutMs, mb].some((n) => !Number.isFinite(n) || n < 0)) usage();
if (["call", "tool", "then_echo"].includes(scenario) && !tool) usage();

const summary = { scenario, transport: direct ? "direct" : directSse ? "direct-sse" : "stdio", ok: false };
let step = "connect";
const elapsedMs = (start) => Math.round(Number(process.hrtime.bigint() - start) / 1e4) / 100;
const NOTICE = /condensed|drainpipe:\/\//i;

let transport;
if (direct) transport = new StreamableHTTPClientTransport(new URL(direct), { requestInit: { headers } });
else if (directSse) {
  // The SDK adds requestInit's headers to the GET of the stream too.
  transport = new SSEClientTransport(new URL(directSse), { requestInit: { headers } });
} else {
  // The SDK passes a server only a few variables by default; a host's
  // config names the others (`env`), as the trust, proxy and telemetry
  // variables are named here.
  const env = { ...getDefaultEnvironment() };
  const passed = /^(SSL_CERT_FILE|SSL_CERT_DIR|DRAINPIPE_NO_BROWSER|DRAINPIPE_PROXY_LOOPBACK|(https?|all|no)_proxy|OTEL_.*)$/i;
  for (const [name, value] of Object.entries(process.env)) {
    if (passed.test(name)) env[name] = value;
  }
  transport = new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: "inherit", env });
}
const client = new Client(
  { name: "drainpipe-remote-client", version: "0.0.0" },
  scenario === "ask" ? { capabilities: { elicitation: {} } } : undefined,
);
const ELICITED = { name: "drainpipe" };
if (scenario === "ask") {
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: ELICITED }));
}
client.onerror = (error) => console.error(`remote-client: transport error: ${error.message ?? error}`);

async function finish(code) {
  process.stdout.write(JSON.stringify(summary) + "\n");
  // The SDK keeps the child in a private field, and forgets it on close.
  const child = transport instanceof StdioClientTransport ? transport._process : undefined;
  // Closing may hang on the very server that misbehaves: bounded.
  await Promise.race([client.close().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1000))]);
  // Leave no command behind (a hung proxy included).
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  process.exit(code);
}

const overall = setTimeout(() => {
  summary.timed_out = true;
  summary.step = step;
  console.error(`remote-client: scenario ${scenario} timed out after ${timeoutS} s during ${step}`);
  finish(124);
}, timeoutS * 1000);

/// Calls a tool; a report of what came back or how it failed.
async function call(name, args, { signal } = {}) {
  step = `tools/call ${name}`;
  const start = process.hrtime.bigint();
  try {
    const answer = await client.callTool({ name, arguments: args }, undefined, { timeout: callTimeoutMs, signal });
    const texts = (answer.content ?? []).filter((block) => block.type === "text").map((block) => block.text);
    const all = texts.join("\n");
    return {
      ok: true,
      ms: elapsedMs(start),
      is_error: answer.isError === true,
      blocks: (answer.content ?? []).length,
      text_bytes: texts.reduce((sum, t) => sum + Buffer.byteLength(t, "utf8"), 0),
      notice: NOTICE.test(all),
      // What drainpipe --clip says of a cut result: the mark in _meta, the
      // links to what was cut, the answer's size as the client holds it.
      truncated: answer._meta?.["io.drainpipe/truncated"] !== undefined,
      links: (answer.content ?? []).filter((block) => block.type === "resource_link").map((block) => block.uri),
      result_bytes: Buffer.byteLength(JSON.stringify(answer), "utf8"),
      structured: answer.structuredContent !== undefined,
      head: all.slice(0, 160),
      text: all.length <= 4096 ? all : undefined,
    };
  } catch (error) {
    return { ok: false, ms: elapsedMs(start), error: String(error.message ?? error).slice(0, 500), code: error.code };
  }
}

const firstText = (report) => (report.ok ? report.head : undefined);

async function run() {
  const start = process.hrtime.bigint();
  await client.connect(transport);
  summary.connect_ms = elapsedMs(start);
  summary.server = client.getServerVersion()?.name;
  switch (scenario) {
    case "list": {
      step = "tools/list";
      const { tools } = await client.listTools(undefined, { timeout: callTimeoutMs });
      summary.tools = tools.map((t) => t.name);
      return true;
    }
    case "echo": {
      summary.echo = await call("echo", { text });
      return summary.echo.ok && !summary.echo.is_error && summary.echo.text === text;
    }
    case "big": {
      summary.mb = mb;
      summary.big = await call(tool, { mb });
      return summary.big.ok;
    }
    case "call": {
      summary.first = await call(tool, toolArgs);
      summary.echo = await call("echo", { text });
      return summary.first.ok && !summary.first.is_error && summary.echo.ok && summary.echo.text === text;
    }
    case "tool": {
      summary.first = await call(tool, toolArgs);
      return summary.first.ok && !summary.first.is_error;
    }
    case "then_echo": {
      summary.first = await call(tool, toolArgs);
      summary.echo = await call("echo", { text });
      summary.first_failed = !summary.first.ok || summary.first.is_error;
      return summary.first_failed && summary.echo.ok && !summary.echo.is_error && summary.echo.text === text;
    }
    case "latency": {
      // Sequential small calls, as an agent makes them: the spread of
      // their times (after 20 warm-up calls).
      const calls = Number(option("--calls", "1000"));
      for (let i = 0; i < 20; i++) await call("echo", { text });
      const times = [];
      for (let i = 0; i < calls; i++) {
        const answer = await call("echo", { text });
        if (!answer.ok || answer.text !== text) return false;
        times.push(answer.ms);
      }
      times.sort((a, b) => a - b);
      const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
      summary.latency = { calls, p50_ms: at(0.5), p90_ms: at(0.9), p99_ms: at(0.99), max_ms: times[times.length - 1] };
      return true;
    }
    case "ask": {
      summary.ask = await call("ask", {});
      const asked = summary.ask.ok && !summary.ask.is_error ? JSON.parse(summary.ask.text) : undefined;
      return asked?.action === "accept" && asked.content?.name === ELICITED.name;
    }
    case "cancel": {
      const count = async () => Number(firstText(await call("cancelled_count", {})));
      summary.cancelled_before = await count();
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort("cancelled by remote-client after 300 ms"), 300);
      summary.slow = await call("slow", { ms: 5000 }, { signal: abort.signal });
      clearTimeout(timer);
      summary.echo = await call("echo", { text });
      // The cancellation is a notification of its own: let it arrive.
      const waitStart = process.hrtime.bigint();
      let after = await count();
      while (after <= summary.cancelled_before && elapsedMs(waitStart) < 3000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        after = await count();
      }
      summary.cancelled_after = after;
      summary.cancelled_wait_ms = elapsedMs(waitStart);
      return (
        !summary.slow.ok &&
        summary.slow.ms < 4000 &&
        summary.echo.ok &&
        summary.echo.text === text &&
        after === summary.cancelled_before + 1
      );
    }
  }
}

run().then(
  (ok) => {
    clearTimeout(overall);
    summary.ok = ok === true;
    step = "close";
    finish(summary.ok ? 0 : 1);
  },
  (error) => {
    clearTimeout(overall);
    summary.error = String(error.message ?? error).slice(0, 500);
    summary.step = step;
    console.error(`remote-client: ${scenario} failed during ${step}: ${summary.error}`);
    finish(1);
  },
);
