// drainpipe-framer/edge: the guard of MCP answers (SSE events and JSON
// answers) as a TransformStream. The same file runs under Node (`npm test`)
// and Deno (`deno test`); the guard comes from edge/compile.js, which
// differs from edge/index.js (workerd, scripts/edge-test.mjs) only in how
// the core modules are loaded. Needs `npm run build` first.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { GuardStream, OVER_BUDGET, TOO_LARGE, guardResponse, peekRequest } from '../edge/compile.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** `text` as a stream of `step`-byte chunks, through `guard`, as text. */
async function through(guard, text, step = 7) {
  const bytes = encoder.encode(text);
  const source = new ReadableStream({
    start(controller) {
      for (let at = 0; at < bytes.length; at += step) controller.enqueue(bytes.slice(at, at + step));
      controller.close();
    },
  });
  let out = '';
  for await (const chunk of source.pipeThrough(guard)) out += decoder.decode(chunk, { stream: true });
  return out;
}

/** The data of each dispatched event of an SSE text, parsed. */
const events = (text) => text.split('\n\n').map((block) => block.split('\n')
  .filter((line) => line.startsWith('data:')).map((line) => line.slice(line.startsWith('data: ') ? 6 : 5)).join('\n'))
  .filter((data) => data !== '').map((data) => JSON.parse(data));

const sse = (...messages) => messages.map((m, i) => `event: message\nid: e${i}\ndata: ${m}\n\n`).join('');
const answer = (id, text) => `{"result":{"content":[{"type":"text","text":"${text}"}]},"jsonrpc":"2.0","id":${id}}`;

test('small events pass unchanged, at any chunk split', { timeout: 20_000 }, async () => {
  const input = sse('{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1}}', answer(3, 'hi'))
    + ': keep-alive\n\n';
  for (const step of [1, 3, 64, 1 << 16]) {
    const out = await through(new GuardStream({ request: { id: '3', method: 'tools/call' } }), input, step);
    assert.deepEqual(events(out), events(input), `step ${step}`);
    assert.match(out, /id: e1\n/);
    assert.match(out, /^:$/m);
  }
});

test('an event over the limit becomes the error for its id, the id written last', { timeout: 20_000 }, async () => {
  const guard = new GuardStream({ maxEventBytes: 1000, request: { id: '9', method: 'tools/call' } });
  const out = await through(guard, sse(answer(41, 'x'.repeat(5000)), answer(42, 'fine')), 512);
  const [failed, next] = events(out);
  assert.equal(failed.id, 41);
  assert.equal(failed.error.code, TOO_LARGE);
  assert.equal(failed.error.data.drainpipe.limitBytes, 1000);
  assert.deepEqual(next, JSON.parse(answer(42, 'fine')));
  assert.equal(guard.stats.failed, 1);
});

test('data that hides its id fails the request the POST carried', { timeout: 20_000 }, async () => {
  const guard = new GuardStream({ maxEventBytes: 100, request: peekRequest('{"jsonrpc":"2.0","id":"r-1","method":"tools/call"}') });
  const [failed] = events(await through(guard, sse(`{"result":{"content":[{"type":"text","text":"${'y'.repeat(300)}`)));
  assert.equal(failed.id, 'r-1');
  assert.equal(failed.error.code, TOO_LARGE);
});

test('a tools/call result over the budget is condensed within it, with the notice', { timeout: 20_000 }, async () => {
  const clip = 8192;
  const guard = new GuardStream({ clip, request: { id: '5', method: 'tools/call' } });
  const out = await through(guard, sse(answer(5, 'z'.repeat(200_000))), 4096);
  const [condensed] = events(out);
  assert.equal(condensed.id, 5);
  assert.ok(encoder.encode(JSON.stringify(condensed)).length <= clip);
  assert.ok(condensed.result._meta['io.drainpipe/truncated']);
  assert.equal(guard.stats.condensed, 1);
});

test('the budget applies to tools/call answers only, and can count characters', { timeout: 20_000 }, async () => {
  const big = answer(6, 'w'.repeat(20_000));
  const other = await through(new GuardStream({ clip: 4096, request: { id: '6', method: 'resources/read' } }), sse(big), 999);
  assert.deepEqual(events(other), [JSON.parse(big)]);
  const chars = await through(new GuardStream({ clip: 5000, unit: 'chars', request: { id: '6', method: 'tools/call' } }), sse(big), 999);
  const [condensed] = events(chars);
  assert.ok(condensed.result.content.map((c) => c.text).join('').length <= 5000);
});

test('a result that cannot be condensed fails with over-budget', { timeout: 20_000 }, async () => {
  const guard = new GuardStream({ clip: 4096, request: { id: '7', method: 'tools/call' } });
  const [failed] = events(await through(guard, sse(`{"result":{"_meta":{"k":"${'m'.repeat(9000)}"}},"jsonrpc":"2.0","id":7}`)));
  assert.equal(failed.id, 7);
  assert.equal(failed.error.code, OVER_BUDGET);
});

test('guardResponse: JSON answers, multi-line and over the limit; other bodies untouched', { timeout: 20_000 }, async () => {
  const json = (text) => new Response(text, { headers: { 'content-type': 'application/json', 'content-length': '1' } });
  const pretty = '{\r\n  "jsonrpc": "2.0",\n  "id": 1,\n  "result": {}\n}';
  const passed = guardResponse(json(pretty), { request: { id: '1' } });
  assert.equal(passed.headers.get('content-length'), null);
  assert.deepEqual(JSON.parse(await passed.text()), JSON.parse(pretty));
  const failed = await guardResponse(json(answer(2, 'q'.repeat(3000))), { maxEventBytes: 500, request: { id: '2' } }).json();
  assert.equal(failed.id, 2);
  assert.equal(failed.error.code, TOO_LARGE);
  const accepted = new Response(null, { status: 202 });
  assert.equal(guardResponse(accepted), accepted);
});
