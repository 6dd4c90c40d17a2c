// The edge guard in the real runtimes, on loopback:
//
// 1. workerd (from this folder's lock) serves examples/worker in front of
//    the official TypeScript SDK's Streamable HTTP server and of the fault
//    server (tests/peers/node); the SDK's own client calls it: a 30 MiB
//    tool result must arrive condensed, valid and within the budget; a
//    1 GiB SSE event must fail its request (-31001) and the next call work;
//    workerd's peak RSS (VmHWM) must stay within a Workers isolate's 128 MB.
// 2. deno (from this folder's lock) runs the package's edge tests.
//
//   node edge-test/run.mjs            (after npm ci here, npm run build in ..,
//                                      and tests/peers/setup.sh)
//   node edge-test/run.mjs --bench    also: the guard against a plain
//                                      pass-through worker (BENCHMARKS.md)
//
// Every step has a deadline and fails loudly past it.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = dirname(here);
const root = dirname(dirname(pkg));
const peers = join(root, 'tests/peers/node');
const workerd = join(here, 'node_modules/@cloudflare/workerd-linux-64/bin/workerd');
const deno = join(here, 'node_modules/.bin/deno');
const config = join(pkg, 'examples/worker/config.capnp');
const bench = process.argv.includes('--bench');
const CLIP = 262144;
const RSS_LIMIT_KB = 128 * 1024;

const children = [];
process.on('exit', () => { for (const child of children) child.kill('SIGKILL'); });

const step = (name) => console.log(`edge: ${name}`);
const fail = (message) => { console.error(`edge: FAILED: ${message}`); process.exit(1); };

/** `promise`, or a loud failure after `ms`. */
function within(ms, what, promise) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms); }),
  ]);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    }).on('error', reject);
  });
}

/** Starts `node script`, resolving with its port once it prints `listening <port>`. */
function upstream(script, args = []) {
  const child = spawn(process.execPath, [join(peers, script), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return within(20_000, `${script} to listen`, new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`${script} exited (${code})`)));
  }));
}

/** `workerd serve` of the config's `name` in front of `upstreamPort`. */
async function serve(name, upstreamPort) {
  const port = await freePort();
  const child = spawn(workerd, ['serve', config, name, '--socket-addr', `http=127.0.0.1:${port}`,
    '--external-addr', `upstream=127.0.0.1:${upstreamPort}`], { stdio: ['ignore', 'inherit', 'inherit'] });
  children.push(child);
  const exited = new Promise((_, reject) => child.on('exit', (code) => reject(new Error(`workerd exited (${code})`))));
  await within(30_000, 'workerd to serve', (async () => {
    for (;;) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/ready`)).status === 404) return;
      } catch {}
      await Promise.race([exited, new Promise((r) => setTimeout(r, 100))]);
    }
  })());
  return { url: `http://127.0.0.1:${port}/mcp`, pid: child.pid, child };
}

const peakRssKb = (pid) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

const sdk = (path) => import(pathToFileURL(join(peers, 'node_modules/@modelcontextprotocol/sdk/dist/esm', path)).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');

async function connect(url) {
  const client = new Client({ name: 'drainpipe-edge-test', version: '0.0.0' });
  await within(20_000, 'initialize', client.connect(new StreamableHTTPClientTransport(new URL(url))));
  return client;
}

const bytesOf = (value) => Buffer.byteLength(JSON.stringify(value));

try {
  step('starting the upstreams (the SDK server and the fault server)');
  const [serverPort, faultsPort] = await Promise.all([upstream('http-server.mjs'), upstream('http-faults.mjs')]);

  step('workerd serves the example worker in front of the SDK server');
  const guard = await serve('config', serverPort);
  const client = await connect(guard.url);
  let started = performance.now();
  const result = await within(120_000, 'big(30)', client.callTool({ name: 'big', arguments: { mb: 30 } }, undefined, { timeout: 120_000 }));
  const size = bytesOf({ jsonrpc: '2.0', id: 2, result });
  if (size > CLIP) fail(`the condensed result is ${size} bytes, over the budget of ${CLIP}`);
  if (!result._meta?.['io.drainpipe/truncated']) fail('the 30 MiB result carries no drainpipe notice');
  if (result.content?.[0]?.type !== 'text') fail(`the condensed result is not a text result: ${JSON.stringify(result).slice(0, 200)}`);
  step(`30 MiB result: condensed to ${size} bytes (budget ${CLIP}) in ${Math.round(performance.now() - started)} ms`);
  const small = await within(20_000, 'big(0.001)', client.callTool({ name: 'big', arguments: { mb: 0.001 } }));
  if (small._meta?.['io.drainpipe/truncated']) fail('a small result was condensed');
  await client.close();

  step('workerd serves the example worker in front of the fault server');
  const faulty = await serve('config', faultsPort);
  const faults = await connect(faulty.url);
  started = performance.now();
  const outcome = await within(300_000, 'huge_event(1024)',
    faults.callTool({ name: 'huge_event', arguments: { mb: 1024 } }, undefined, { timeout: 300_000 }).then(
      (value) => ({ value }), (error) => ({ error })));
  if (!outcome.error) fail(`the 1 GiB event did not fail its request: ${JSON.stringify(outcome.value).slice(0, 200)}`);
  if (outcome.error.code !== -31001) fail(`the 1 GiB event failed with ${outcome.error.code}: ${outcome.error.message}`);
  const seconds = (performance.now() - started) / 1000;
  step(`1 GiB event: failed its request with -31001 in ${seconds.toFixed(1)} s (${(1024 / seconds).toFixed(0)} MiB/s through the guard)`);
  const next = await within(20_000, 'the call after', faults.callTool({ name: 'json_answer', arguments: { text: 'after' } }));
  if (next.content?.[0]?.text !== 'after') fail(`the next call answered ${JSON.stringify(next)}`);
  step('the next call works');
  await faults.close();

  for (const [what, server] of [['SDK server', guard], ['fault server', faulty]]) {
    const peak = peakRssKb(server.pid);
    step(`workerd peak RSS in front of the ${what}: ${(peak / 1024).toFixed(1)} MiB (VmHWM)`);
    if (peak > RSS_LIMIT_KB) fail(`workerd's peak RSS ${peak} kB is over ${RSS_LIMIT_KB} kB`);
  }

  if (bench) await benchmark(faultsPort);

  step('deno runs the package\'s edge tests');
  const code = await within(180_000, 'deno test', new Promise((resolve) => {
    const child = spawn(deno, ['test', '--quiet', '--allow-read', '--allow-env', '--no-check', 'test/edge.test.mjs'],
      { cwd: pkg, stdio: 'inherit', env: { ...process.env, DENO_NO_UPDATE_CHECK: '1' } });
    children.push(child);
    child.on('exit', resolve);
  }));
  if (code !== 0) fail(`deno test exited ${code}`);
  step('ok');
  process.exit(0);
} catch (error) {
  fail(error.stack ?? String(error));
}

/** MiB/s of one `huge_event(mb)` answer read to its end through `url`. */
async function throughput(url, mb) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '0' } } }) });
  await init.arrayBuffer();
  const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id') };
  await (await fetch(url, { method: 'POST', headers: session, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' })).arrayBuffer();
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers: session,
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'huge_event', arguments: { mb } } }) });
  let out = 0;
  for await (const chunk of response.body) out += chunk.length;
  return { mibPerSecond: mb / ((performance.now() - started) / 1000), out };
}

async function benchmark(faultsPort) {
  const mb = 256;
  for (const name of ['passthrough', 'config']) {
    const server = await serve(name, faultsPort);
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await within(300_000, `bench ${name}`, throughput(server.url, mb)));
    const best = Math.max(...runs.map((r) => r.mibPerSecond));
    step(`bench: ${name === 'config' ? 'guard' : 'pass-through'}: ${mb} MiB event, best of 3: ${best.toFixed(0)} MiB/s, `
      + `${runs[0].out} bytes out, peak RSS ${(peakRssKb(server.pid) / 1024).toFixed(1)} MiB`);
    server.child.kill('SIGTERM');
  }
}
