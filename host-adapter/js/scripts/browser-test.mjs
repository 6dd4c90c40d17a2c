// Runs the parity vectors in headless Chromium (Framer and FramerStream): serves this package on
// 127.0.0.1, opens browser/index.html, waits for the page's report.
//
//   npm run build && npm run test:browser
// Chromium comes from Debian's `chromium` package (or set $CHROMIUM).
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const TIMEOUT_MS = 120_000;
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.json': 'application/json', '.wasm': 'application/wasm' };

const findChromium = () => {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    try {
      return execFileSync('which', [name], { encoding: 'utf8' }).trim();
    } catch { /* try the next name */ }
  }
  console.error('chromium not found: apt-get install chromium (or set CHROMIUM=/path/to/chrome)');
  process.exit(2);
};

// Asks a process group to stop (SIGTERM), waits up to 5 s for its last member to go, then kills
// what is left (SIGKILL) and waits for that too: a helper still running would keep writing the
// profile after it was removed.
const stopGroup = async (pgid) => {
  // A member that has exited but is not yet reaped (a zombie, whose parent is gone) writes
  // nothing: only the living count. (`kill(-pgid, 0)` would count zombies too.)
  const alive = () => readdirSync('/proc').some((pid) => {
    if (!/^[0-9]+$/.test(pid)) return false;
    try {
      // After the command's closing parenthesis: state, parent, process group.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(pgrp) === pgid && state !== 'Z';
    } catch {
      return false; // exited while the list was read
    }
  });
  const gone = async (ms) => {
    for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
      if (!alive()) return true;
    }
    return !alive();
  };
  for (const signal of ['SIGTERM', 'SIGKILL']) {
    try {
      process.kill(-pgid, signal);
    } catch { /* already gone */ }
    if (await gone(5000)) return;
  }
  console.error(`browser parity: chromium's process group ${pgid} outlived SIGKILL`);
  process.exit(1);
};

let resolveReport;
const reported = new Promise((resolve) => { resolveReport = resolve; });

const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/report') {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => { res.end('ok'); resolveReport(JSON.parse(body)); });
    return;
  }
  const path = normalize(join(root, decodeURIComponent(new URL(req.url, 'http://x').pathname)));
  if (!path.startsWith(root + sep) || !statSync(path, { throwIfNoEntry: false })?.isFile()) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' });
  res.end(readFileSync(path));
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/browser/index.html`;

// One scratch directory for everything Chromium writes: its profile, and (through TMPDIR) the
// `org.chromium.Chromium.*` directory it keeps its singleton socket in, which a browser that does
// not shut down cleanly leaves behind.
const scratch = mkdtempSync(join(tmpdir(), 'drainpipe-chromium-'));
const profile = join(scratch, 'profile');
// Its own process group: the browser's helpers (zygote, GPU, network service) go with it.
const browser = spawn(findChromium(), [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', `--user-data-dir=${profile}`, url,
], { stdio: ['ignore', 'ignore', 'pipe'], detached: true, env: { ...process.env, TMPDIR: scratch } });
let stderr = '';
browser.stderr.on('data', (d) => { stderr += d; });
const exited = new Promise((resolve) => browser.on('exit', (code) => resolve(code)));

const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), TIMEOUT_MS));
const outcome = await Promise.race([reported, timeout, exited.then((code) => `chromium exited early (${code})`)]);
server.close();
await stopGroup(browser.pid);
// The whole group is gone: nothing writes to the scratch directory any more.
try {
  rmSync(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
} catch (e) {
  console.error(`browser parity: could not remove ${scratch}: ${e.code ?? e}`);
  process.exit(1);
}

if (typeof outcome === 'string') {
  console.error(`browser parity: ${outcome}\n${stderr.slice(-2000)}`);
  process.exit(1);
}
const { cases, events, failures, ms, userAgent, streamCases = 0, streamEvents = 0 } = outcome;
console.log(`browser parity (${userAgent}): ${cases} cases, ${events} events in ${ms} ms`
  + ` (FramerStream: ${streamCases} cases, ${streamEvents} events)`);
for (const f of failures.slice(0, 10)) console.error(`  ${f}`);
const passed = failures.length === 0 && cases > 100 && streamCases > 100 && streamEvents > 1000;
console.log(`${passed ? 1 : 0} passed, ${passed ? 0 : 1} failed`);
process.exit(passed ? 0 : 1);
