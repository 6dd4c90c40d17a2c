// GuardedStdioClientTransport without the SDK: a small line server
// (fixtures/line-server.mjs; not under test/, where node --test would run
// it as a test) and the transport's callbacks. The official SDK clients
// over it are tested in tests/peers/node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { PassThrough } from 'node:stream';

import { GuardedStdioClientTransport, HeadTailCapture, TOO_LARGE, SERVER_GONE, groupProcesses } from '../mcp.js';

const server = fileURLToPath(new URL('../fixtures/line-server.mjs', import.meta.url));

/** A transport to the line server and a `call` that resolves with the next message for its id. */
async function open(options = {}, flags = []) {
  const logs = [];
  const transport = new GuardedStdioClientTransport({
    command: process.execPath, args: [server, ...flags], stderr: 'ignore', log: (line) => logs.push(line), ...options,
  });
  const waiting = new Map();
  const others = [];
  transport.onmessage = (message) => {
    const resolve = waiting.get(message.id);
    if (resolve) {
      waiting.delete(message.id);
      resolve(message);
    } else others.push(message);
  };
  let closed = 0;
  transport.onclose = () => { closed++; };
  await transport.start();
  let next = 1;
  const call = (method, params = {}) => {
    const id = next++;
    const answered = new Promise((resolve) => waiting.set(id, resolve));
    transport.send({ jsonrpc: '2.0', id, method, params });
    return answered;
  };
  return { transport, call, logs, others, closedCount: () => closed };
}

// Live processes only: a zombie (killed, not yet reaped by whoever
// inherited it) is not a process left running.
const groupGone = (pid) => groupProcesses(pid).length === 0;

test('an oversize answer with its id last fails that request; the next call works', { timeout: 20_000 }, async () => {
  const { transport, call } = await open({ maxFrameBytes: 64 << 10 });
  // Two requests in flight, so the id must come from the end of the line.
  const slow = call('echo', { n: 1 });
  const [big, small] = await Promise.all([call('big', { bytes: 1 << 20 }), call('echo', { n: 2 }), slow]);
  assert.equal(big.error.code, TOO_LARGE);
  assert.match(big.error.message, /over the transport limit of 65536 bytes/);
  assert.match(big.error.message, /1048576 bytes in all/);
  assert.deepEqual(small.result, { n: 2 });
  assert.deepEqual((await call('echo', { after: true })).result, { after: true });
  const m = transport.metrics();
  assert.equal(m.oversize, 1);
  assert.equal(m.discardedBytes, 1 << 20);
  assert.equal(m.bufferedHighWater <= 64 << 10, true);
  await transport.close();
});

test('a stray stdout line goes to the log, never to onmessage', { timeout: 20_000 }, async () => {
  const { transport, call, logs, others } = await open();
  assert.deepEqual((await call('stray')).result, {});
  assert.equal(others.length, 0);
  assert.equal(transport.metrics().strayLines, 1);
  assert.ok(logs.some((l) => l.includes('a log line on stdout by mistake')), logs.join('\n'));
  await transport.close();
});

test('stderr is kept as head and tail; the stream is fed but bounded', { timeout: 20_000 }, async () => {
  const { transport, call } = await open({
    stderr: 'pipe', stderrCapture: { headBytes: 1000, tailBytes: 1000 }, stderrStreamBytes: 4096,
  });
  assert.ok(transport.stderr instanceof PassThrough);
  await call('stderr', { bytes: 200_000 });
  await transport.close();
  const capture = transport.stderrCapture();
  assert.equal(capture.bytes, 200_000);
  assert.equal(capture.lines, 2000);
  assert.equal(capture.head.length + capture.tail.length, 2000);
  assert.equal(capture.droppedBytes, 198_000);
  assert.equal(capture.droppedLines, 1980);
  assert.match(capture.text, /198000 bytes \(1980 newlines\) dropped/);
  const m = transport.metrics();
  assert.equal(m.stderrBytes, 200_000);
  // Nobody read the stream: what it could not hold was dropped, not waited for.
  assert.ok(m.stderrForwardDropped > 0 && m.stderrForwardDropped < 200_000, `${m.stderrForwardDropped}`);
});

test('close(): stdin closed, SIGTERM, then SIGKILL to the whole group', { timeout: 20_000 }, async () => {
  const shutdown = { afterCloseMs: 300, afterTermMs: 300, afterKillMs: 2000 };
  const { transport, call, closedCount } = await open({ shutdown }, ['--ignore-sigterm', '--linger']);
  const { result: { pid: kid } } = await call('child');
  const pid = transport.pid;
  assert.ok(groupProcesses(pid).includes(kid), 'the child is in the server\'s group');
  const started = Date.now();
  await transport.close();
  const took = Date.now() - started;
  const m = transport.metrics();
  assert.equal(m.ending, 'killed');
  assert.equal(m.sigterm, 1);
  assert.ok(m.sigkill >= 1);
  assert.ok(took >= 600 && took < 3000, `close took ${took} ms`);
  assert.ok(groupGone(pid), 'a process of the group is left');
  assert.ok(!groupProcesses(pid).includes(kid));
  assert.equal(closedCount(), 1);
  assert.equal(transport.pid, null);
  await assert.rejects(transport.send({ jsonrpc: '2.0', id: 9, method: 'echo' }), /Not connected/);
});

test('a server that exits fails the requests still waiting and closes the transport', { timeout: 20_000 }, async () => {
  const { transport, call, closedCount } = await open();
  const pid = transport.pid;
  const answer = await call('exit');
  assert.equal(answer.error.code, SERVER_GONE);
  await transport.close();
  assert.equal(closedCount(), 1);
  assert.equal(transport.metrics().exitCode, 3);
  assert.ok(groupGone(pid));
});

test('HeadTailCapture counts what it drops, across chunk boundaries', { timeout: 5_000 }, () => {
  const capture = new HeadTailCapture({ headBytes: 4, tailBytes: 4 });
  for (const piece of ['ab\n', 'cd\nef', '\ngh\nij', 'k\n']) capture.write(new TextEncoder().encode(piece));
  const s = capture.snapshot();
  assert.equal(s.head, 'ab\nc');
  assert.equal(s.tail, 'ijk\n');
  assert.equal(s.bytes, 16);
  assert.equal(s.lines, 5);
  assert.equal(s.droppedBytes, 8);
  assert.equal(s.droppedLines, 3);
});

test('constructor options are checked', { timeout: 5_000 }, () => {
  assert.throws(() => new GuardedStdioClientTransport({}), TypeError);
  assert.throws(() => new GuardedStdioClientTransport({ command: 'x', maxFrameBytes: 0 }), RangeError);
  assert.throws(() => new GuardedStdioClientTransport({ command: 'x', clip: 100 }), RangeError);
  assert.equal(new GuardedStdioClientTransport({ command: 'x' }).maxFrameBytes, 4 << 20);
  assert.equal(new GuardedStdioClientTransport({ command: 'x', stderr: 'pipe' }).stderr instanceof PassThrough, true);
});
