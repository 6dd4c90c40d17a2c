// Load client for Streamable HTTP gateways (bench/serve/README.md).
//
//   node load.mjs sessions --url URL --pid PID [--sessions 200] [--calls 20] [--client sdk|fetch]
//       opens N sessions (at most --open-concurrency initializing at once), measures the
//       gateway's memory (PID and all its descendants, /proc), then every session calls the
//       small tool --calls times in a row, all sessions at once; prints p50/p99 of the calls
//       and the memory per session. Then each session calls --paced-calls (10) more times, one
//       call every --session-pace-ms (2000) each: latency under a load the machine can bear.
//   node load.mjs big --url URL --pid PID [--sessions 50] [--bytes 104857600] [--pace-ms 100]
//       50 sessions call the small tool every --pace-ms each; after --before-ms another
//       process opens a session of its own and calls `large` with {"bytes": N}; latency of
//       the 50 before, during and after that call, its time, and the gateway's peak memory.
//   node load.mjs one-big --url URL --bytes N     (the big call's own process, used by `big`)
//
// The stdio server behind the gateway is drainpipe-fixture: the small tool is its `echo`
// ({"text":"hello"}: a response of 131 bytes), the big one its `large`.
//
// --client sdk (default): the official TypeScript SDK 1.32.2, `Client` over
// `StreamableHTTPClientTransport` (it also opens the GET stream of each session).
// --client fetch: raw `fetch`, one POST per message, no GET stream; the answer read as JSON
// or from the event stream up to the response's event.
// --client http: the same with node:http on a keep-alive pool: the least CPU per call in the
// client, so that the gateway, not the client, is what the figures measure.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { snapshot, tree } from './procmem.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const SMALL = { name: 'echo', arguments: { text: 'hello' } };
const PROTOCOL = '2025-06-18';

function parseArgs(argv) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) out[a.slice(2)] = argv[++i];
    else out._.push(a);
  }
  return out;
}

const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function pct(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

function stats(latencies) {
  const s = [...latencies].sort((a, b) => a - b);
  const r = (x) => Math.round(x * 100) / 100;
  return { n: s.length, p50: r(pct(s, 50)), p90: r(pct(s, 90)), p99: r(pct(s, 99)), max: r(s[s.length - 1] ?? NaN) };
}

/** CPU seconds used so far by the processes of the tree alive now. */
function treeCpuSeconds(root) {
  let ticks = 0;
  for (const pid of tree(root)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(rest[11]) + Number(rest[12]); // utime, stime
    } catch {}
  }
  return ticks / 100; // CLK_TCK
}

class SdkSession {
  constructor(url, timeoutMs) {
    this.url = url;
    this.timeoutMs = timeoutMs;
  }
  async open() {
    this.transport = new StreamableHTTPClientTransport(new URL(this.url));
    this.client = new Client({ name: 'bench-serve', version: '0' }, { capabilities: {} });
    await this.client.connect(this.transport, { timeout: this.timeoutMs });
  }
  async call(params, timeoutMs = this.timeoutMs) {
    const result = await this.client.callTool(params, undefined, { timeout: timeoutMs });
    if (result.isError) throw new Error(`tool error: ${JSON.stringify(result).slice(0, 200)}`);
    return result;
  }
  async close() {
    await this.transport.terminateSession().catch(() => {});
    await this.client.close().catch(() => {});
  }
}

class FetchSession {
  constructor(url, timeoutMs) {
    this.url = url;
    this.timeoutMs = timeoutMs;
    this.nextId = 1;
    this.sid = null;
  }
  headers() {
    const h = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (this.sid) {
      h['mcp-session-id'] = this.sid;
      h['mcp-protocol-version'] = PROTOCOL;
    }
    return h;
  }
  async request(method, params, timeoutMs = this.timeoutMs) {
    const id = this.nextId++;
    const res = await fetch(this.url, {
      method: 'POST',
      headers: this.headers(),
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) throw new Error(`${method}: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`);
    if (method === 'initialize') this.sid = res.headers.get('mcp-session-id');
    const type = res.headers.get('content-type') ?? '';
    let msg;
    if (type.includes('application/json')) msg = await res.json();
    else msg = await readEvent(res, id);
    if (msg.error) throw new Error(`${method}: ${JSON.stringify(msg.error)}`);
    return msg.result;
  }
  async notify(method) {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: this.headers(),
      body: JSON.stringify({ jsonrpc: '2.0', method }),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    await res.arrayBuffer();
  }
  async open() {
    await this.request('initialize', {
      protocolVersion: PROTOCOL,
      capabilities: {},
      clientInfo: { name: 'bench-serve', version: '0' },
    });
    await this.notify('notifications/initialized');
  }
  async call(params, timeoutMs) {
    const result = await this.request('tools/call', params, timeoutMs);
    if (result.isError) throw new Error(`tool error: ${JSON.stringify(result).slice(0, 200)}`);
    return result;
  }
  async close() {
    if (!this.sid) return;
    await fetch(this.url, { method: 'DELETE', headers: this.headers(), signal: AbortSignal.timeout(5000) })
      .then((r) => r.arrayBuffer())
      .catch(() => {});
  }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

/** One request with node:http on a pooled keep-alive connection; resolves with the response. */
function send(url, method, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { ...headers, 'content-length': Buffer.byteLength(body) }, agent }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

/** The body of a JSON response, or the response to `id` from an event stream (the rest is drained). */
/**
 * The whole events at the start of `buf`: `msg` is the response to `id` if
 * one of them carries it (nothing after it is kept), `rest` what follows
 * the last whole event.
 */
function scanEvents(buf, id) {
  let cut;
  while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
    const event = buf.slice(0, cut);
    buf = buf.slice(cut + (buf[cut] === '\r' ? 4 : 2));
    const data = event
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(l[5] === ' ' ? 6 : 5))
      .join('\n');
    if (!data) continue;
    const msg = JSON.parse(data);
    if (msg.id === id && !msg.method) return { msg, rest: '' };
  }
  return { msg: null, rest: buf };
}

function answer(res, id) {
  return new Promise((resolve, reject) => {
    const json = (res.headers['content-type'] ?? '').includes('application/json');
    let buf = '';
    let found = false;
    res.setEncoding('utf8');
    res.on('data', (chunk) => {
      if (found) return;
      buf += chunk;
      if (json) return;
      const scanned = scanEvents(buf, id);
      buf = scanned.rest;
      if (scanned.msg) {
        found = true;
        resolve(scanned.msg);
      }
    });
    res.on('end', () => {
      if (found) return;
      if (json) {
        try {
          resolve(JSON.parse(buf));
        } catch (e) {
          reject(e);
        }
      } else reject(new Error('event stream ended without the response'));
    });
    res.on('error', reject);
  });
}

class HttpSession extends FetchSession {
  async request(method, params, timeoutMs = this.timeoutMs) {
    const id = this.nextId++;
    const go = async () => {
      const res = await send(this.url, 'POST', this.headers(), JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      if (res.statusCode !== 200) {
        res.resume();
        throw new Error(`${method}: HTTP ${res.statusCode}`);
      }
      if (method === 'initialize') this.sid = res.headers['mcp-session-id'];
      return answer(res, id);
    };
    const msg = await withTimeout(go(), timeoutMs, method);
    if (msg.error) throw new Error(`${method}: ${JSON.stringify(msg.error)}`);
    return msg.result;
  }
  async notify(method) {
    const res = await withTimeout(send(this.url, 'POST', this.headers(), JSON.stringify({ jsonrpc: '2.0', method })), this.timeoutMs, method);
    res.resume();
  }
  async close() {
    if (!this.sid) return;
    const res = await withTimeout(send(this.url, 'DELETE', this.headers(), ''), 5000, 'DELETE').catch(() => null);
    res?.resume();
  }
}

/** Reads an event stream up to the event whose data is the response to `id`. */
async function readEvent(res, id) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error('event stream ended without the response');
      buf += value;
      const scanned = scanEvents(buf, id);
      if (scanned.msg) return scanned.msg;
      buf = scanned.rest;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function makeSession(kind, url, timeoutMs) {
  if (kind === 'fetch') return new FetchSession(url, timeoutMs);
  if (kind === 'http') return new HttpSession(url, timeoutMs);
  if (kind === 'sdk') return new SdkSession(url, timeoutMs);
  throw new Error(`--client ${kind}: sdk, fetch or http`);
}

/** Runs `f` on each item with at most `n` at once; returns the failures. */
async function pool(items, n, f) {
  const errors = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++];
        try {
          await f(item);
        } catch (e) {
          errors.push(String(e?.message ?? e));
        }
      }
    }),
  );
  return errors;
}

async function openSessions(o, n) {
  const sessions = Array.from({ length: n }, () => makeSession(o.client, o.url, o.timeoutMs));
  const t = now();
  const opened = [];
  const errors = await pool(sessions, o.openConcurrency, async (s) => {
    await withTimeout(s.open(), o.timeoutMs, 'open');
    opened.push(s);
  });
  return { opened, openMs: Math.round(now() - t), errors };
}

async function closeSessions(sessions) {
  const t = now();
  await withTimeout(pool(sessions, 32, (s) => s.close()), 30000, 'close').catch((e) => console.error(String(e)));
  return Math.round(now() - t);
}

function kib(x) {
  return Math.round(x / 102.4) / 10; // KiB to MiB, one decimal
}

async function runSessions(o) {
  const { opened, openMs, errors: openErrors } = await openSessions(o, o.sessions);
  await sleep(1000);
  const memOpen = snapshot(o.pid);
  // One call each to warm every path up, not counted.
  const warmErrors = await pool(opened, opened.length, (s) => s.call(SMALL));
  const latencies = [];
  const callErrors = [];
  const cpu0 = process.cpuUsage();
  const gw0 = treeCpuSeconds(o.pid);
  const t = now();
  await Promise.all(
    opened.map(async (s) => {
      for (let i = 0; i < o.calls; i++) {
        const t0 = now();
        try {
          await s.call(SMALL);
          latencies.push(now() - t0);
        } catch (e) {
          callErrors.push(String(e?.message ?? e));
        }
      }
    }),
  );
  const wallS = (now() - t) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const gwCpuS = treeCpuSeconds(o.pid) - gw0;
  // Then a steady load the machine can bear: each session starts a call every
  // --session-pace-ms (sessions / pace calls a second in all).
  const paced = [];
  const pacedErrors = [];
  const tp = now();
  if (o.pacedCalls > 0) {
    await Promise.all(
      opened.map(async (s) => {
        await sleep(Math.random() * o.sessionPaceMs);
        for (let i = 0; i < o.pacedCalls; i++) {
          const t0 = now();
          try {
            await s.call(SMALL);
            paced.push(now() - t0);
          } catch (e) {
            pacedErrors.push(String(e?.message ?? e));
          }
          const wait = o.sessionPaceMs - (now() - t0);
          if (wait > 0 && i + 1 < o.pacedCalls) await sleep(wait);
        }
      }),
    );
  }
  const pacedS = (now() - tp) / 1000;
  const memAfter = snapshot(o.pid);
  const closeMs = await closeSessions(opened);
  const n = opened.length || 1;
  const out = {
    mode: 'sessions',
    label: o.label,
    client: o.client,
    sessions: o.sessions,
    opened: opened.length,
    openMs,
    openErrors: openErrors.length,
    firstOpenError: openErrors[0],
    warmErrors: warmErrors.length,
    callsPerSession: o.calls,
    calls: stats(latencies),
    callErrors: callErrors.length,
    firstCallError: callErrors[0],
    callsPerS: Math.round(latencies.length / wallS),
    gatewayCpuMsPerCall: Math.round((gwCpuS * 1000 * 100) / (latencies.length || 1)) / 100,
    paced: { ...stats(paced), errors: pacedErrors.length, sessionPaceMs: o.sessionPaceMs, offeredPerS: Math.round((opened.length * 1000) / o.sessionPaceMs), achievedPerS: Math.round(paced.length / pacedS) },
    firstPacedError: pacedErrors[0],
    clientCpuS: Math.round((cpu.user + cpu.system) / 1e4) / 100,
    gatewayCpuS: Math.round(gwCpuS * 100) / 100,
    wallS: Math.round(wallS * 100) / 100,
    memOpen,
    memAfter,
    rssPerSessionMiB: kib(memOpen.rssKiB / n),
    pssPerSessionMiB: kib(memOpen.pssKiB / n),
    closeMs,
  };
  console.log(JSON.stringify(out));
  return out;
}

function lines(stream) {
  const rl = createInterface({ input: stream });
  const waiters = [];
  const queue = [];
  rl.on('line', (l) => (waiters.length ? waiters.shift()(l) : queue.push(l)));
  rl.on('close', () => waiters.splice(0).forEach((w) => w(null)));
  return () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => waiters.push(r)));
}

async function runBig(o) {
  const { opened, openMs, errors: openErrors } = await openSessions(o, o.sessions);
  await pool(opened, opened.length, (s) => s.call(SMALL));
  await sleep(500);
  const memOpen = snapshot(o.pid);

  const watcher = spawn(process.execPath, [`${here}/procmem.mjs`, 'watch', String(o.pid), '100'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const watchLine = lines(watcher.stdout);
  const big = spawn(
    process.execPath,
    [fileURLToPath(import.meta.url), 'one-big', '--url', o.url, '--bytes', String(o.bytes), '--timeout-ms', String(o.bigTimeoutMs)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const bigLine = lines(big.stdout);
  const ready = await withTimeout(bigLine(), 30000, 'big client start');
  if (ready !== 'ready') throw new Error(`big client: ${ready}`);

  const T0 = now();
  let stop = false;
  const calls = [];
  const errors = [];
  const inFlight = new Set();
  const loops = opened.map(async (s) => {
    await sleep(Math.random() * o.paceMs);
    while (!stop) {
      const t0 = now();
      const mark = { start: t0 - T0 };
      inFlight.add(mark);
      try {
        await s.call(SMALL);
        calls.push({ start: t0 - T0, ms: now() - t0 });
      } catch (e) {
        errors.push({ start: t0 - T0, ms: now() - t0, error: String(e?.message ?? e) });
      }
      inFlight.delete(mark);
      await sleep(o.paceMs);
    }
  });
  await sleep(o.beforeMs);
  const bigStart = now() - T0;
  big.stdin.write('go\n');
  let done;
  try {
    done = await withTimeout(bigLine(), o.bigTimeoutMs + 5000, 'big call');
  } catch (e) {
    done = `timeout ${e.message}`;
    big.kill('SIGKILL');
  }
  const bigEnd = now() - T0;
  await sleep(o.afterMs);
  stop = true;
  await withTimeout(Promise.all(loops), o.timeoutMs + 1000, 'small calls to end').catch((e) => console.error(String(e)));
  const unanswered = [...inFlight]; // calls still waiting for their answer at the end
  watcher.stdin.end();
  const peak = JSON.parse(await withTimeout(watchLine(), 10000, 'memory watcher'));
  big.stdin.end();
  const closeMs = await closeSessions(opened);

  const phase = (lo, hi) => stats(calls.filter((c) => c.start >= lo && c.start < hi).map((c) => c.ms));
  const errs = (lo, hi) => errors.filter((c) => c.start >= lo && c.start < hi).length;
  const firstErr = (lo, hi) => errors.find((c) => c.start >= lo && c.start < hi);
  const open = (lo, hi) => unanswered.filter((c) => c.start >= lo && c.start < hi).length;
  const phaseAll = (lo, hi) => ({ ...phase(lo, hi), errors: errs(lo, hi), unanswered: open(lo, hi), firstError: firstErr(lo, hi) });
  let bigResult;
  try {
    bigResult = JSON.parse(done);
  } catch {
    bigResult = { error: done };
  }
  const out = {
    mode: 'big',
    label: o.label,
    client: o.client,
    sessions: o.sessions,
    opened: opened.length,
    openMs,
    openErrors: openErrors.length,
    paceMs: o.paceMs,
    bytes: o.bytes,
    before: phaseAll(0, bigStart),
    during: phaseAll(bigStart, bigEnd),
    after: phaseAll(bigEnd, Infinity),
    big: { ...bigResult, wallMs: Math.round(bigEnd - bigStart) },
    memOpen,
    peakTreeRssMiB: kib(peak.peakTreeRssKiB),
    gatewayHwmMiB: kib(peak.selfHwmKiB),
    closeMs,
  };
  console.log(JSON.stringify(out));
  return out;
}

async function runOneBig(o) {
  const s = new SdkSession(o.url, o.bigTimeoutMs);
  const say = (x) => process.stdout.write(`${x}\n`);
  try {
    await withTimeout(s.open(), 30000, 'open');
  } catch (e) {
    say(`open failed: ${e.message}`);
    process.exit(1);
  }
  say('ready');
  const next = lines(process.stdin);
  await next();
  const t = now();
  try {
    const result = await s.call({ name: 'large', arguments: { bytes: o.bytes } }, o.bigTimeoutMs);
    const ms = Math.round(now() - t);
    const text = result.content.filter((c) => c.type === 'text').reduce((n, c) => n + c.text.length, 0);
    say(
      JSON.stringify({
        ms,
        resultBytes: JSON.stringify(result).length,
        textChars: text,
        blocks: result.content.length,
        condensed: Boolean(result._meta?.['io.drainpipe/truncated']),
        clientHwmMiB: kib(snapshot(process.pid, { withPss: false }).selfHwmKiB),
      }),
    );
  } catch (e) {
    say(JSON.stringify({ ms: Math.round(now() - t), error: String(e?.message ?? e).slice(0, 300) }));
  }
  await next();
  await withTimeout(s.close(), 5000, 'close').catch(() => {});
  process.exit(0);
}

const a = parseArgs(process.argv.slice(2));
const mode = a._[0];
const o = {
  url: a.url,
  pid: a.pid,
  label: a.label ?? '',
  client: a.client ?? 'sdk',
  sessions: Number(a.sessions ?? (mode === 'big' ? 50 : 200)),
  calls: Number(a.calls ?? 20),
  openConcurrency: Number(a['open-concurrency'] ?? 20),
  timeoutMs: Number(a['timeout-ms'] ?? 30000),
  bytes: Number(a.bytes ?? 104857600),
  paceMs: Number(a['pace-ms'] ?? 100),
  pacedCalls: Number(a['paced-calls'] ?? 10),
  sessionPaceMs: Number(a['session-pace-ms'] ?? 2000),
  beforeMs: Number(a['before-ms'] ?? 5000),
  afterMs: Number(a['after-ms'] ?? 3000),
  bigTimeoutMs: Number(a['big-timeout-ms'] ?? a['timeout-ms'] ?? 120000),
};
if (!o.url || (mode !== 'one-big' && !o.pid)) {
  console.error('usage: node load.mjs sessions|big --url URL --pid PID [options] (see the head of this file)');
  process.exit(2);
}
if (mode === 'sessions') await runSessions(o);
else if (mode === 'big') await runBig(o);
else if (mode === 'one-big') await runOneBig(o);
else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
process.exit(0);
