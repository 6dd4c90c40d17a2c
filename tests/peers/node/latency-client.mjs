// Sequential small calls as an agent makes them, through the official
// TypeScript SDK client (1.x) on stdio: after --warm-up calls, --calls
// `tools/call echo` one after another, each timed from `callTool` to its
// answer. Prints one JSON line: {"ns": [each call's time in nanoseconds]}.
// What the latency bench (`e2e latency`) runs for its Node client paths.
//
//   node latency-client.mjs --calls 500 [--warm-up 100] [--timeout S] -- <command…>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
if (split < 0 || split + 1 >= argv.length) {
  console.error("usage: node latency-client.mjs --calls N [--warm-up N] [--timeout S] -- <command…>");
  process.exit(2);
}
const options = argv.slice(0, split);
const command = argv.slice(split + 1);
const option = (name, fallback) => {
  const at = options.indexOf(name);
  return at >= 0 && at + 1 < options.length ? Number(options[at + 1]) : fallback;
};
const calls = option("--calls", 500);
const warmUp = option("--warm-up", 100);
const timeoutS = option("--timeout", 120);
if (![calls, warmUp, timeoutS].every((n) => Number.isInteger(n) && n >= 0)) {
  console.error("latency-client: --calls, --warm-up and --timeout take whole numbers");
  process.exit(2);
}

// A hung path fails loudly instead of holding the bench.
const overall = setTimeout(() => {
  console.error(`latency-client: timed out after ${timeoutS} s`);
  process.exit(124);
}, timeoutS * 1000);

const transport = new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: "ignore" });
const client = new Client({ name: "drainpipe-latency-client", version: "0.0.0" });
const text = "hi";
try {
  await client.connect(transport);
  const ns = [];
  for (let i = 0; i < warmUp + calls; i++) {
    const start = process.hrtime.bigint();
    const answer = await client.callTool({ name: "echo", arguments: { text } });
    const took = process.hrtime.bigint() - start;
    if (answer.content?.[0]?.text !== text) throw new Error(`not an echo answer: ${JSON.stringify(answer).slice(0, 200)}`);
    if (i >= warmUp) ns.push(Number(took));
  }
  process.stdout.write(JSON.stringify({ ns }) + "\n");
  await client.close();
  clearTimeout(overall);
} catch (error) {
  console.error(`latency-client: ${error.message ?? error}`);
  process.exit(1);
}
