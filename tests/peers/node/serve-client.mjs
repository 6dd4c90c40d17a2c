// A host built on the official TypeScript SDK 1.x client, for the serve
// criteria: `Client` over `StreamableHTTPClientTransport` against the URL
// `drainpipe serve` prints, or over `StdioClientTransport` straight to the
// same server command, running the same checks either way, so the test can
// hold the two runs' answers side by side.
//
//   node serve-client.mjs everything [--timeout S] (--url URL | -- <server-everything command…>)
//   node serve-client.mjs filesystem --dir DIR [--timeout S] (--url URL | -- <server-filesystem command…>)
//
// The client declares sampling, elicitation and roots, and answers the
// server's sampling and elicitation requests with canned results.
//
// everything: tools/list, echo, trigger-long-running-operation with
// progress, trigger-sampling-request (sampling from server to client),
// trigger-elicitation-request (elicitation), get-roots-list (roots),
// logging/setLevel and toggle-simulated-logging (notifications/message),
// resources/list, resources/templates/list and resources/read,
// prompts/list and prompts/get, completion/complete, and cancellation (a
// long call aborted, then a call that still answers).
//
// filesystem: list_allowed_directories, create_directory, write_file,
// read_text_file, list_directory, directory_tree, search_files in DIR (its
// only root), then a roots change (notifications/roots/list_changed: the
// server asks roots/list again and allows DIR and DIR/sub).
//
// Output: one JSON line on stdout, {mode, transport, ok, checks, same, …}:
// `checks` holds every check by name (true when it held); `same` holds
// what must not depend on the transport (the test compares it between the
// HTTP and the stdio run), objects as values (their members' order aside);
// `order_sensitive` holds texts where the order a peer wrote members in
// shows. Exit 0 when every check held, 1 otherwise (the
// JSON says which failed and `error` why), 2 on bad usage, 124 when the
// overall timeout fired (stderr names the step).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const usage = () => {
  console.error(
    "usage: node serve-client.mjs everything|filesystem [--dir DIR] [--timeout S] (--url URL | -- <server command…>)",
  );
  process.exit(2);
};

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
const before = split >= 0 ? argv.slice(0, split) : argv;
const command = split >= 0 ? argv.slice(split + 1) : [];
const [mode, ...options] = before;
const option = (name, fallback) => {
  const at = options.indexOf(name);
  return at >= 0 && at + 1 < options.length ? options[at + 1] : fallback;
};
const url = option("--url");
const dir = option("--dir");
const timeoutS = Number(option("--timeout", "90"));
if (!["everything", "filesystem"].includes(mode)) usage();
if (Boolean(url) === command.length > 0) usage();
if (mode === "filesystem" && !dir) usage();
if (!Number.isFinite(timeoutS) || timeoutS <= 0) usage();

const summary = { mode, transport: url ? "http" : "stdio", ok: false, checks: {}, same: {}, order_sensitive: {} };
let step = "connect";
const elapsedMs = (start) => Math.round(Number(process.hrtime.bigint() - start) / 1e4) / 100;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/// Records a check by name; the run fails if any is false.
function check(name, condition, detail) {
  summary.checks[name] = Boolean(condition);
  if (!condition) console.error(`serve-client: check ${name} failed: ${detail ?? ""}`);
}

/// Waits until `condition()` holds, at most `ms`; whether it did.
async function waitFor(condition, ms) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(25);
  }
  return true;
}

const texts = (result) => (result.content ?? []).filter((b) => b.type === "text").map((b) => b.text);

// What the server asked of the client, and what it told it.
const asked = { sampling: [], elicitation: [], roots: 0 };
const logs = [];
let roots = [];

const SAMPLED = "canned completion from serve-client";
const ELICITED = { name: "Ada Lovelace", check: true, email: "ada@example.com", integer: 7 };

const client = new Client(
  { name: "drainpipe-serve-client", version: "0.0.0" },
  { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
);
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  asked.sampling.push(request.params);
  return { role: "assistant", model: "serve-client-canned", stopReason: "endTurn", content: { type: "text", text: SAMPLED } };
});
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.elicitation.push(request.params);
  return { action: "accept", content: ELICITED };
});
client.setRequestHandler(ListRootsRequestSchema, async () => {
  asked.roots += 1;
  return { roots };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
  logs.push(notification.params);
});
client.onerror = (error) => console.error(`serve-client: transport error: ${error.message ?? error}`);

let transport;
if (url) transport = new StreamableHTTPClientTransport(new URL(url));
else transport = new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: "inherit" });

async function finish(code) {
  process.stdout.write(JSON.stringify(summary) + "\n");
  const child = transport instanceof StdioClientTransport ? transport._process : undefined;
  // Closing may hang on the very server that misbehaves: bounded.
  await Promise.race([client.close().catch(() => {}), sleep(2000)]);
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  process.exit(code);
}

const overall = setTimeout(() => {
  summary.timed_out = true;
  summary.step = step;
  console.error(`serve-client: ${mode} timed out after ${timeoutS} s during ${step}`);
  finish(124);
}, timeoutS * 1000);

/// A tool call (bounded); its text blocks.
async function call(name, args, options = {}) {
  step = `tools/call ${name}`;
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 30000, ...options });
  if (result.isError) throw new Error(`${name} answered isError: ${texts(result).join(" ")}`);
  return texts(result);
}

async function everything() {
  const same = summary.same;
  roots = [{ uri: "file:///serve-client/root", name: "serve-client root" }];

  step = "tools/list";
  const { tools } = await client.listTools();
  same.tools = tools.map((t) => t.name).sort();
  for (const name of [
    "echo",
    "trigger-long-running-operation",
    "trigger-sampling-request",
    "trigger-elicitation-request",
    "toggle-simulated-logging",
    "get-roots-list",
  ]) {
    check(`tools/list has ${name}`, same.tools.includes(name), same.tools.join(", "));
  }

  const message = `hello «ünïcødé» "quoted" ${"x".repeat(64)}`;
  same.echo = await call("echo", { message });
  check("echo", same.echo[0] === `Echo: ${message}`, same.echo[0]);

  // Progress: on the call's own stream, in order, before the result.
  const progress = [];
  same.long = await call(
    "trigger-long-running-operation",
    { duration: 1, steps: 5 },
    { onprogress: (p) => progress.push([p.progress, p.total]) },
  );
  summary.progress = progress;
  // The SDK client may settle the call on its result before it dispatches
  // the last notification (seen over stdio too): at least steps - 1.
  check(
    "progress",
    progress.length >= 4 && progress.every(([p, total], i) => p === i + 1 && total === 5),
    JSON.stringify(progress),
  );
  check("long-running result", /Steps: 5/.test(same.long[0]), same.long[0]);

  // Sampling: the server asks the client mid-call; the answer reaches the tool.
  same.sampling = await call("trigger-sampling-request", { prompt: "say something canned", maxTokens: 42 });
  same.sampling_asked = asked.sampling.map((p) => ({
    messages: p.messages,
    systemPrompt: p.systemPrompt,
    maxTokens: p.maxTokens,
  }));
  check("sampling asked once", asked.sampling.length === 1, JSON.stringify(asked.sampling));
  check("sampling result reached the tool", same.sampling.join("\n").includes(SAMPLED), same.sampling.join("\n"));

  // Elicitation: likewise, with the user's (canned) answer.
  const elicited = await call("trigger-elicitation-request", {});
  // The server quotes the answer it got as JSON ("Raw result: {…}"): its
  // members in the order the client wrote them. Compared as a value in
  // `same`; as text (the order kept) in `order_sensitive`.
  const raw = elicited.find((t) => t.includes("Raw result:"));
  same.elicitation = elicited.filter((t) => t !== raw);
  same.elicitation_raw = raw === undefined ? null : JSON.parse(raw.slice(raw.indexOf("{")));
  summary.order_sensitive.elicitation_raw = raw ?? null;
  same.elicitation_asked = asked.elicitation.map((p) => p.message);
  check("elicitation asked once", asked.elicitation.length === 1, JSON.stringify(asked.elicitation));
  check(
    "elicitation result reached the tool",
    elicited.join("\n").includes(`Name: ${ELICITED.name}`) && same.elicitation_raw?.content?.name === ELICITED.name,
    elicited.join("\n"),
  );

  // Roots: the server asks for them after initialized (and at this call if
  // it has not yet).
  same.roots = await call("get-roots-list", {});
  check("roots asked", asked.roots >= 1, String(asked.roots));
  check("roots reached the tool", same.roots.join("\n").includes(roots[0].uri), same.roots.join("\n"));

  // Logging: the level set, then the simulated log lines (one at once, then
  // one every 5 s) as notifications/message.
  step = "logging/setLevel";
  await client.setLoggingLevel("debug");
  const logsBefore = logs.length;
  same.logging_on = await call("toggle-simulated-logging", {});
  step = "waiting for notifications/message";
  check("a log message arrived", await waitFor(() => logs.length > logsBefore, 15000), `${logs.length} messages`);
  summary.logs = logs.length;
  same.logging_off = await call("toggle-simulated-logging", {});
  const simulated = logs.slice(logsBefore).map((l) => String(l.data));
  check(
    "log messages are the simulated ones",
    simulated.length > 0 && simulated.every((d) => /message/i.test(d)),
    JSON.stringify(simulated),
  );

  step = "resources/list";
  const { resources } = await client.listResources();
  same.resources = resources.map((r) => r.uri);
  check("resources listed", resources.length > 0, String(resources.length));
  step = "resources/templates/list";
  const { resourceTemplates } = await client.listResourceTemplates();
  same.resource_templates = resourceTemplates.map((t) => t.uriTemplate).sort();
  step = "resources/read";
  const read = await client.readResource({ uri: resources[0].uri });
  same.resource_read = read.contents.map((c) => ({ uri: c.uri, mimeType: c.mimeType, text: c.text, blob: c.blob?.length }));
  check("resource read", read.contents.length > 0 && read.contents[0].uri === resources[0].uri, JSON.stringify(same.resource_read).slice(0, 300));

  step = "prompts/list";
  const { prompts } = await client.listPrompts();
  same.prompts = prompts.map((p) => p.name).sort();
  check("prompts listed", same.prompts.includes("simple-prompt"), same.prompts.join(", "));
  step = "prompts/get";
  const simple = await client.getPrompt({ name: "simple-prompt" });
  same.simple_prompt = simple.messages;
  check("simple prompt", simple.messages[0]?.content?.text === "This is a simple prompt without arguments.", JSON.stringify(simple));
  const argsPrompt = prompts.find((p) => (p.arguments ?? []).some((a) => a.required));
  if (argsPrompt) {
    const args = Object.fromEntries(argsPrompt.arguments.map((a) => [a.name, `value of ${a.name}`]));
    const got = await client.getPrompt({ name: argsPrompt.name, arguments: args });
    same.args_prompt = { name: argsPrompt.name, messages: got.messages };
    check("prompt with arguments", JSON.stringify(got.messages).includes("value of"), JSON.stringify(got.messages));
  }
  const completing = prompts.find((p) => /complet/i.test(p.name));
  if (completing && completing.arguments?.length) {
    step = "completion/complete";
    const completed = await client.complete({
      ref: { type: "ref/prompt", name: completing.name },
      argument: { name: completing.arguments[0].name, value: "" },
    });
    same.completion = completed.completion;
  }

  // Cancellation: a long call aborted from the client (the SDK sends
  // notifications/cancelled), then a call that answers at once.
  step = "cancellation";
  const abort = new AbortController();
  const started = process.hrtime.bigint();
  const long = client.callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 30, steps: 30 } },
    undefined,
    { signal: abort.signal, timeout: 60000, onprogress: () => {} },
  );
  setTimeout(() => abort.abort("serve-client cancels"), 500);
  let rejected;
  try {
    await long;
    rejected = false;
  } catch {
    rejected = true;
  }
  summary.cancel_ms = elapsedMs(started);
  check("the cancelled call rejects", rejected && summary.cancel_ms < 5000, `after ${summary.cancel_ms} ms`);
  const afterStart = process.hrtime.bigint();
  same.after_cancel = await call("echo", { message: "after cancel" });
  summary.after_cancel_ms = elapsedMs(afterStart);
  check("a call after the cancel answers", same.after_cancel[0] === "Echo: after cancel", same.after_cancel[0]);
  check("and at once", summary.after_cancel_ms < 3000, `${summary.after_cancel_ms} ms`);
}

async function filesystem() {
  const same = summary.same;
  roots = [{ uri: pathToFileURL(dir).href, name: "serve-client dir" }];

  step = "tools/list";
  const { tools } = await client.listTools();
  same.tools = tools.map((t) => t.name).sort();
  for (const name of ["list_allowed_directories", "write_file", "read_text_file", "list_directory"]) {
    check(`tools/list has ${name}`, same.tools.includes(name), same.tools.join(", "));
  }
  // The server asks for the roots once initialized (DIR, as on its command line).
  step = "waiting for roots/list";
  check("roots asked after initialized", await waitFor(() => asked.roots >= 1, 15000), String(asked.roots));

  same.allowed = await call("list_allowed_directories", {});
  check("allowed directories", same.allowed.join("\n").includes(dir), same.allowed.join("\n"));
  const sub = join(dir, "sub");
  same.mkdir = await call("create_directory", { path: sub });
  const file = join(dir, "hello.txt");
  const content = `hello from serve-client «ünïcødé»\n${"line\n".repeat(20)}`;
  same.write = await call("write_file", { path: file, content });
  same.read = await call("read_text_file", { path: file });
  check("read back what was written", same.read[0] === content, JSON.stringify(same.read[0]).slice(0, 200));
  same.head = await call("read_text_file", { path: file, head: 1 });
  same.list = await call("list_directory", { path: dir });
  check("list_directory", /\[FILE\] hello\.txt/.test(same.list[0]) && /\[DIR\] sub/.test(same.list[0]), same.list[0]);
  same.tree = await call("directory_tree", { path: dir });
  same.search = await call("search_files", { path: dir, pattern: "*.txt" });
  check("search_files", /hello\.txt$/.test(same.search[0]), same.search[0]);

  // A roots change: the client's notification makes the server ask again
  // (from no request of the client's), and allow both directories.
  step = "roots/list_changed";
  const before = asked.roots;
  roots = [roots[0], { uri: pathToFileURL(sub).href, name: "serve-client sub" }];
  await client.sendRootsListChanged();
  check("roots asked again after list_changed", await waitFor(() => asked.roots > before, 15000), String(asked.roots));
  const deadline = Date.now() + 15000;
  let allowed;
  do {
    allowed = (await call("list_allowed_directories", {})).join("\n");
    if (allowed.includes(sub)) break;
    await sleep(100);
  } while (Date.now() < deadline);
  same.allowed_after = allowed;
  check("the new roots are allowed", allowed.includes(sub), allowed);
}

async function run() {
  const start = process.hrtime.bigint();
  await client.connect(transport);
  summary.connect_ms = elapsedMs(start);
  summary.same.server = client.getServerVersion();
  summary.same.capabilities = client.getServerCapabilities();
  summary.protocol = transport.protocolVersion;
  if (mode === "everything") await everything();
  else await filesystem();
  if (transport instanceof StreamableHTTPClientTransport) {
    // DELETE: the session, and its child, end.
    step = "DELETE";
    summary.session = Boolean(transport.sessionId);
    await transport.terminateSession();
    check("http: session terminated by DELETE", transport.sessionId === undefined, String(transport.sessionId));
  }
  const failed = Object.entries(summary.checks).filter(([, held]) => !held).map(([name]) => name);
  summary.failed = failed;
  return failed.length === 0;
}

run().then(
  (ok) => {
    clearTimeout(overall);
    summary.ok = ok;
    finish(ok ? 0 : 1);
  },
  (error) => {
    clearTimeout(overall);
    summary.error = String(error.stack ?? error.message ?? error).slice(0, 2000);
    summary.step = step;
    console.error(`serve-client: ${mode} failed during ${step}: ${summary.error}`);
    finish(1);
  },
);
