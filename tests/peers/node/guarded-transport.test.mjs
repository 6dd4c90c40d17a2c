// GuardedStdioClientTransport (host-adapter/js/mcp.js) under the official
// TypeScript SDK clients, 1.x (@modelcontextprotocol/sdk) and 2.x
// (@modelcontextprotocol/client), against the official filesystem and
// everything servers and the drainpipe fixture's failure modes.
//
//   bash tests/peers/setup.sh && cargo build -p drainpipe-cli --bin drainpipe
//   node --test tests/peers/node/guarded-transport.test.mjs
//
// The fixture is `<repo>/target/debug/drainpipe fixture` (or $DRAINPIPE_BIN).
// Without it the fixture tests are skipped, unless DRAINPIPE_REQUIRE_PEERS=1
// (scripts/test-all.sh), where they fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';

import { GuardedStdioClientTransport, groupProcesses } from '../../../host-adapter/js/mcp.js';
import { checkCondensed } from './condensed-check.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..', '..');
const modules = join(here, 'node_modules', '@modelcontextprotocol');
const FILESYSTEM = join(modules, 'server-filesystem', 'dist', 'index.js');
const EVERYTHING = join(modules, 'server-everything', 'dist', 'index.js');
const DRAINPIPE = process.env.DRAINPIPE_BIN ?? join(repo, 'target', 'debug', 'drainpipe');
const REQUIRE = process.env.DRAINPIPE_REQUIRE_PEERS === '1';
const fixtureSkip = existsSync(DRAINPIPE) || REQUIRE ? false : `no ${DRAINPIPE} (cargo build -p drainpipe-cli --bin drainpipe, or set DRAINPIPE_BIN)`;
const LIMIT = 4 << 20;

const CLIENTS = {
  '1.x': () => new ClientV1({ name: 'drainpipe-guarded-test', version: '0.0.0' }),
  '2.x': () => new ClientV2({ name: 'drainpipe-guarded-test', version: '0.0.0' }),
};

/** Texts with multibyte characters, quotes and line breaks, of about `bytes` bytes. */
const textOf = (bytes) => {
  const line = 'línea «ünïcødé» with "quotes" and \\backslashes\\ 日本語 😀\n';
  return line.repeat(Math.ceil(bytes / Buffer.byteLength(line)));
};

/** A directory for the filesystem server with `files` ({ name: bytes }) written; removed after the test. */
const fileDir = (t, files) => {
  const dir = mkdtempSync(join(tmpdir(), 'drainpipe-guarded-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, name), textOf(bytes));
  return dir;
};

/** Connects `client` through a guarded transport; returns it with the log lines. */
async function connect(client, params) {
  const logs = [];
  const transport = new GuardedStdioClientTransport({ stderr: 'pipe', log: (line) => logs.push(line), ...params });
  await client.connect(transport);
  return { transport, logs, pid: transport.pid };
}

/** Closes and checks that no live process of the server's group is left. */
async function closeAndCheck(client, transport, pid) {
  assert.ok(groupProcesses(pid).length > 0, 'the server was running');
  await client.close();
  assert.deepEqual(groupProcesses(pid), [], 'a process of the server\'s group is left');
  assert.equal(transport.pid, null);
}

/** `client.callTool` with request options: 1.x takes a result schema before them, 2.x does not. */
const callTool = (client, params, options) => (client instanceof ClientV1
  ? client.callTool(params, undefined, options)
  : client.callTool(params, options));

const text = (result) => result.content.map((c) => c.text).join('');

for (const [version, makeClient] of Object.entries(CLIENTS)) {
  test(`SDK ${version} + server-filesystem: a read over the limit fails that call; the next works; close leaves nothing`,
    { timeout: 120_000 }, async (t) => {
      const mib = version === '1.x' ? 30 : 5;
      const dir = fileDir(t, { 'big.txt': mib << 20, 'small.txt': 1000 });
      const client = makeClient();
      const { transport, pid } = await connect(client, { command: process.execPath, args: [FILESYSTEM, dir] });
      await assert.rejects(
        callTool(client, { name: 'read_text_file', arguments: { path: join(dir, 'big.txt') } }, { timeout: 60_000 }),
        (error) => {
          assert.match(error.message, /over the transport limit of 4194304 bytes \(4 MiB\)/);
          assert.equal(error.code, -31001);
          assert.equal(error.data?.drainpipe?.reason, 'too-large');
          return true;
        },
      );
      const small = await client.callTool({ name: 'read_text_file', arguments: { path: join(dir, 'small.txt') } });
      assert.equal(text(small), readFileSync(join(dir, 'small.txt'), 'utf8'));
      const m = transport.metrics();
      assert.equal(m.oversize, 1);
      assert.ok(m.discardedBytes > 2 * (mib << 20), `the text is sent twice: ${m.discardedBytes} bytes dropped`);
      assert.ok(m.bufferedHighWater <= LIMIT);
      assert.ok(m.largestFrame < LIMIT);
      await closeAndCheck(client, transport, pid);
    });

  test(`SDK ${version} + server-everything: calls, a cancel, a too-large echo, then more calls`, { timeout: 60_000 }, async () => {
    const client = makeClient();
    const { transport, pid } = await connect(client, { command: process.execPath, args: [EVERYTHING, 'stdio'], maxFrameBytes: 64 << 10 });
    const tools = await client.listTools();
    assert.ok(tools.tools.some((tool) => tool.name === 'trigger-long-running-operation'));
    // Cancel at the first progress notification.
    const abort = new AbortController();
    let progress = 0;
    await assert.rejects(callTool(
      client,
      { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 20 } },
      { signal: abort.signal, onprogress: () => { progress++; abort.abort('enough'); } },
    ));
    assert.equal(progress, 1, 'cancelled at the first progress notification');
    assert.equal(transport.metrics().cancellationsSent, 1);
    assert.equal(text(await client.callTool({ name: 'echo', arguments: { message: 'after the cancel' } })), 'Echo: after the cancel');
    // An answer over 64 KiB: that call fails, the session lives.
    await assert.rejects(
      client.callTool({ name: 'echo', arguments: { message: 'x'.repeat(100 << 10) } }),
      /over the transport limit of 65536 bytes/,
    );
    assert.equal(text(await client.callTool({ name: 'echo', arguments: { message: 'still here' } })), 'Echo: still here');
    assert.equal(transport.metrics().pending, 0);
    await closeAndCheck(client, transport, pid);
  });
}

test('SDK 1.x + server-filesystem with clip: a 5 MiB read is condensed, valid and marked', { timeout: 120_000 }, async (t) => {
  const dir = fileDir(t, { 'big.txt': 5 << 20 });
  const client = CLIENTS['1.x']();
  const budget = 256 << 10;
  const { transport, pid } = await connect(client, { command: process.execPath, args: [FILESYSTEM, dir], clip: budget });
  const result = await client.callTool({ name: 'read_text_file', arguments: { path: join(dir, 'big.txt') } });
  const { marker } = checkCondensed(result, readFileSync(join(dir, 'big.txt'), 'utf8'), budget);
  assert.ok(marker.originalBytes > 2 * (5 << 20), JSON.stringify(marker));
  assert.ok(Buffer.byteLength(JSON.stringify(result)) < budget);
  const m = transport.metrics();
  assert.equal(m.condensed, 1);
  assert.equal(m.oversize, 1, 'over the transport limit too');
  await closeAndCheck(client, transport, pid);
});

test('SDK 2.x + server-filesystem with clip: a 1 MiB read (under the limit) is condensed', { timeout: 60_000 }, async (t) => {
  const dir = fileDir(t, { 'mid.txt': 1 << 20 });
  const client = CLIENTS['2.x']();
  const budget = 64 << 10;
  const { transport, pid } = await connect(client, { command: process.execPath, args: [FILESYSTEM, dir], clip: budget });
  const result = await client.callTool({ name: 'read_text_file', arguments: { path: join(dir, 'mid.txt') } });
  checkCondensed(result, readFileSync(join(dir, 'mid.txt'), 'utf8'), budget);
  assert.equal(transport.metrics().oversize, 0);
  assert.equal(transport.metrics().condensed, 1);
  await closeAndCheck(client, transport, pid);
});

// --- the fixture's failure modes ------------------------------------------

const fixture = (...flags) => ({ command: DRAINPIPE, args: ['fixture', ...flags] });
const SHORT = { afterCloseMs: 500, afterTermMs: 500, afterKillMs: 2000 };

test('fixture: stray stdout, an oversize answer with the id last, a malformed answer; the session lives',
  { timeout: 60_000, skip: fixtureSkip }, async () => {
    const client = CLIENTS['1.x']();
    const { transport, logs, pid } = await connect(client, { ...fixture('--stray-stdout'), maxFrameBytes: 1 << 20 });
    await assert.rejects(client.callTool({ name: 'sized', arguments: { bytes: 3 << 20, id_last: true } }), /transport limit of 1048576/);
    await assert.rejects(client.callTool({ name: 'malformed', arguments: { id_last: false } }), /not valid JSON/);
    assert.equal(text(await client.callTool({ name: 'stray_log', arguments: {} })), 'wrote a stray log line to stdout');
    assert.equal(text(await client.callTool({ name: 'health', arguments: {} })), 'ok');
    const m = transport.metrics();
    assert.equal(m.strayLines, 2, 'the banner and the stray_log line');
    assert.ok(logs.some((line) => line.includes('server started, listening on stdio')));
    assert.equal(m.oversize, 1);
    assert.equal(m.malformed, 1);
    assert.equal(m.errorsSent, 2);
    await closeAndCheck(client, transport, pid);
  });

test('fixture: several calls in flight, one answer over the limit with its id last', { timeout: 60_000, skip: fixtureSkip }, async () => {
  const client = CLIENTS['2.x']();
  const { transport, pid } = await connect(client, { ...fixture(), maxFrameBytes: 1 << 20 });
  const slow = client.callTool({ name: 'slow', arguments: { steps: 5, step_ms: 100 } });
  const big = client.callTool({ name: 'sized', arguments: { bytes: 2 << 20, id_last: true } });
  await assert.rejects(big, /transport limit of 1048576/);
  assert.equal(text(await slow), 'done after 5 steps');
  assert.equal(transport.metrics().answeredAsSole, 0, 'named by its id, not by elimination');
  await closeAndCheck(client, transport, pid);
});

test('fixture: a server that never reads stdin: the call times out, close() ends it with SIGTERM', { timeout: 30_000, skip: fixtureSkip }, async () => {
  const client = CLIENTS['1.x']();
  const transport = new GuardedStdioClientTransport({ ...fixture('--never-read-stdin'), stderr: 'ignore', shutdown: SHORT, log: () => {} });
  const notifications = [];
  client.fallbackNotificationHandler = async (n) => { notifications.push(n.method); };
  // The client closes the transport when connect fails: note the pid first.
  let pid = null;
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    pid = transport.pid;
  };
  await assert.rejects(client.connect(transport, { timeout: 1000 }), /timed out/i);
  assert.ok(pid !== null && groupProcesses(pid).length > 0, 'the server was running');
  assert.ok(transport.metrics().frames > 0, 'its heartbeats were read all along');
  await transport.close();
  const m = transport.metrics();
  assert.equal(m.ending, 'terminated');
  assert.equal(m.sigterm, 1);
  assert.equal(m.sigkill, 0);
  assert.deepEqual(groupProcesses(pid), []);
});

test('fixture: a server that ignores SIGTERM and lingers is killed with its group', { timeout: 30_000, skip: fixtureSkip }, async () => {
  const client = CLIENTS['2.x']();
  const { transport, pid } = await connect(client, { ...fixture('--linger', '--ignore-sigterm'), shutdown: SHORT });
  assert.equal(text(await client.callTool({ name: 'health', arguments: {} })), 'ok');
  const started = Date.now();
  await closeAndCheck(client, transport, pid);
  const took = Date.now() - started;
  const m = transport.metrics();
  assert.equal(m.ending, 'killed');
  assert.equal(m.sigterm, 1);
  assert.ok(m.sigkill >= 1);
  assert.ok(took >= 1000 && took < 5000, `close took ${took} ms`);
});

test('fixture: stderr is drained and bounded while calls go on', { timeout: 60_000, skip: fixtureSkip }, async () => {
  const client = CLIENTS['1.x']();
  const { transport, pid } = await connect(client, { ...fixture(), stderrCapture: { headBytes: 4096, tailBytes: 4096 } });
  transport.stderr.resume(); // a reader that keeps up
  const result = await client.callTool({ name: 'noisy_stderr', arguments: { bytes: 8 << 20 } });
  assert.equal(result.structuredContent.bytes, 8 << 20);
  assert.equal(text(await client.callTool({ name: 'health', arguments: {} })), 'ok');
  await closeAndCheck(client, transport, pid);
  const capture = transport.stderrCapture();
  assert.ok(capture.bytes > 8 << 20);
  assert.equal(capture.bytes - capture.droppedBytes, 8192);
  assert.ok(capture.droppedLines > 0);
  assert.match(capture.head, /noisy_stderr begin/);
  assert.match(capture.tail, /noisy_stderr end|stdin closed/);
});

test('fixture: a server that exits mid-call fails the call, and the transport closes', { timeout: 30_000, skip: fixtureSkip }, async () => {
  const client = CLIENTS['1.x']();
  const { transport, pid } = await connect(client, { ...fixture(), shutdown: SHORT });
  let closed = false;
  const onclose = client.onclose;
  client.onclose = () => { closed = true; onclose?.(); };
  await assert.rejects(client.callTool({ name: 'close_stdout', arguments: {} }), /closed its stdout|Connection closed/);
  await transport.close();
  assert.ok(closed);
  assert.deepEqual(groupProcesses(pid), []);
  await assert.rejects(client.callTool({ name: 'health', arguments: {} }), /Not connected/);
});
