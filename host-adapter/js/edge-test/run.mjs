// The edge guard in the real runtimes, on loopback:
//
// 1. workerd (from this folder's lock) serves examples/worker in front of
//    an official TypeScript SDK server that checks Host and Origin
//    (createMcpExpressApp's DNS rebinding protection: host-checking-server.mjs
//    in tests/peers/node). Directly, it must refuse `Host: upstream` and a
//    foreign Origin (the checks are live); through the worker with
//    UPSTREAM_URL, the SDK's client must list and call tools, the server
//    seeing its own Host, UPSTREAM_URL's query then the client's, and the
//    client's Origin unchanged (a foreign one still refused); the worker
//    itself must refuse a Host ALLOWED_HOSTS does not list; without
//    UPSTREAM_URL the server must see the worker's Host.
// 2. workerd serves the worker in front of the SDK's Streamable HTTP
//    server and of the fault server (tests/peers/node); the SDK's client
//    calls it: a 30 MiB tool result must arrive condensed, valid and within
//    the budget; a 1 GiB SSE event must fail its request (-31001) and the
//    next call work; workerd's peak RSS (VmHWM) must stay within a Workers
//    isolate's 128 MB.
// 3. deno (from this folder's lock) runs the package's edge tests.
//
//   node edge-test/run.mjs            (after npm ci here, npm run build in ..,
//                                      and tests/peers/setup.sh)
//   node edge-test/run.mjs --bench    also: the guard against a plain
//                                      pass-through worker (BENCHMARKS.md)
//
// Every step has a deadline and fails loudly past it.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
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

/**
 * `workerd serve` of the config's `name` in front of `upstreamPort`, with
 * UPSTREAM_URL `upstreamUrl` (by default the port's /mcp; null: unset).
 */
async function serve(name, upstreamPort, upstreamUrl = `http://127.0.0.1:${upstreamPort}/mcp`) {
  const port = await freePort();
  const env = { ...process.env };
  delete env.UPSTREAM_URL;
  if (upstreamUrl !== null) env.UPSTREAM_URL = upstreamUrl;
  const child = spawn(workerd, ['serve', config, name, '--socket-addr', `http=127.0.0.1:${port}`,
    '--external-addr', `upstream=127.0.0.1:${upstreamPort}`], { stdio: ['ignore', 'inherit', 'inherit'], env });
  children.push(child);
  const exited = new Promise((_, reject) => child.on('exit', (code) => reject(new Error(`workerd exited (${code})`))));
  exited.catch(() => {}); // stopped on purpose later: not an unhandled rejection
  await within(30_000, 'workerd to serve', (async () => {
    for (;;) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/ready`)).status === 404) return;
      } catch {}
      await Promise.race([exited, new Promise((r) => setTimeout(r, 100))]);
    }
  })());
  return { url: `http://127.0.0.1:${port}/mcp`, port, pid: child.pid, child };
}

const peakRssKb = (pid) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

const sdk = (path) => import(pathToFileURL(join(peers, 'node_modules/@modelcontextprotocol/sdk/dist/esm', path)).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');

async function connect(url, headers = {}) {
  const client = new Client({ name: 'drainpipe-edge-test', version: '0.0.0' });
  await within(20_000, 'initialize', client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } })));
  return client;
}

const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'drainpipe-edge-test', version: '0' } } });

/**
 * An initialize POSTed to `url` with `headers` (Host among them: node:http
 * sends the one given), resolving with the status and the JSON-RPC error's
 * message, if any.
 */
function initializeWith(url, headers) {
  return within(20_000, `initialize at ${url}`, new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { text += chunk; });
      res.on('end', () => {
        let message;
        try { message = JSON.parse(text).error?.message; } catch {}
        resolve({ status: res.statusCode, message, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(INITIALIZE);
  }));
}

/** What the host-checking server saw of the `seen` call's request. */
async function seen(client) {
  const result = await within(20_000, 'seen', client.callTool({ name: 'seen', arguments: {} }));
  return JSON.parse(result.content[0].text);
}

const expect = (what, actual, wanted) => {
  if (actual !== wanted) fail(`${what}: ${JSON.stringify(actual)}, not ${JSON.stringify(wanted)}`);
};

const bytesOf = (value) => Buffer.byteLength(JSON.stringify(value));

try {
  step('starting the upstreams (the SDK server, the fault server, the Host-checking SDK server)');
  const [serverPort, faultsPort, checkingPort] = await Promise.all(
    [upstream('http-server.mjs'), upstream('http-faults.mjs'), upstream('host-checking-server.mjs')]);

  await hostChecks(checkingPort);

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

/**
 * The worker in front of an SDK server that checks Host and Origin
 * (createMcpExpressApp's defaults): with UPSTREAM_URL the server sees its
 * own Host, without it the worker's; Origin reaches it unchanged.
 */
async function hostChecks(port) {
  const direct = `http://127.0.0.1:${port}/mcp`;
  step('control: the Host-checking SDK server refuses Host: upstream and a foreign Origin, called directly');
  let answer = await initializeWith(direct, { host: 'upstream' });
  if (answer.status !== 403 || answer.message !== 'Invalid Host: upstream') {
    fail(`Host: upstream was not refused: ${answer.status} ${answer.text.slice(0, 200)}`);
  }
  answer = await initializeWith(direct, { origin: 'https://evil.example' });
  if (answer.status !== 403 || answer.message !== 'Invalid Origin: evil.example') {
    fail(`Origin: https://evil.example was not refused: ${answer.status} ${answer.text.slice(0, 200)}`);
  }
  answer = await initializeWith(direct, {});
  expect('a plain initialize, directly', answer.status, 200);

  step('workerd with UPSTREAM_URL in front of it: calls succeed, the server sees its own Host');
  const worker = await serve('config', port, `${direct}?via=worker`);
  let client = await connect(`${worker.url}?from=client`);
  const tools = await within(20_000, 'tools/list', client.listTools());
  if (!tools.tools.some((tool) => tool.name === 'echo')) fail(`tools/list through the worker: ${JSON.stringify(tools)}`);
  const echoed = await within(20_000, 'echo', client.callTool({ name: 'echo', arguments: { text: 'through' } }));
  expect('echo through the worker', echoed.content?.[0]?.text, 'through');
  let saw = await seen(client);
  expect('the Host the server saw', saw.host, `127.0.0.1:${port}`);
  expect('the Origin the server saw', saw.origin, null);
  expect('the path the server saw (UPSTREAM_URL\'s query, then the client\'s)', saw.path, '/mcp?via=worker&from=client');
  await within(10_000, 'close', client.close());

  step('Origin passes unchanged: the worker\'s own is accepted, a foreign one refused by the server');
  const own = `http://127.0.0.1:${worker.port}`;
  client = await connect(worker.url, { origin: own });
  saw = await seen(client);
  expect('the Origin the server saw', saw.origin, own);
  await within(10_000, 'close', client.close());
  answer = await initializeWith(worker.url, { origin: 'https://evil.example' });
  if (answer.status !== 403 || answer.message !== 'Invalid Origin: evil.example') {
    fail(`a foreign Origin through the worker was not refused by the server: ${answer.status} ${answer.text.slice(0, 200)}`);
  }

  step('ALLOWED_HOSTS: the worker refuses a rebinding page\'s Host the server can no longer see');
  answer = await initializeWith(worker.url, { host: `evil.example:${worker.port}` });
  if (answer.status !== 403 || answer.message !== 'Invalid Host: evil.example') {
    fail(`Host: evil.example was not refused by the worker: ${answer.status} ${answer.text.slice(0, 200)}`);
  }
  answer = await initializeWith(worker.url, { host: `localhost:${worker.port}` });
  expect('an initialize through the worker as localhost', answer.status, 200);
  worker.child.kill('SIGTERM');

  step('workerd without UPSTREAM_URL: the server sees the Host the client used, the worker\'s');
  const bare = await serve('config', port, null);
  client = await connect(bare.url);
  saw = await seen(client);
  expect('the Host the server saw', saw.host, `127.0.0.1:${bare.port}`);
  expect('the path the server saw', saw.path, '/mcp');
  await within(10_000, 'close', client.close());
  bare.child.kill('SIGTERM');
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
