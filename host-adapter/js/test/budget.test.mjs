// The budget half of the full component, in Node. Needs `npm run build`.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { clipResponse, Capture } from '../budget.js';

const encoder = new TextEncoder();

test('a response over budget is clipped to a valid, smaller response for the same id', { timeout: 10_000 }, () => {
  const blocks = Array.from({ length: 50 }, (_, i) => ({ type: 'text', text: `line ${i} `.repeat(40) }));
  const frame = encoder.encode(JSON.stringify({ jsonrpc: '2.0', id: 41, result: { content: blocks, isError: false } }));
  const clipped = clipResponse(frame, 2048, { nextCursor: 'page-2' });
  assert.ok(clipped.length <= 2048, `${clipped.length} bytes`);
  const value = JSON.parse(new TextDecoder().decode(clipped));
  assert.equal(value.id, 41);
  assert.equal(value.result.structuredContent.truncated, true);
  assert.equal(value.result.structuredContent.nextCursor, 'page-2');
  // Within budget: unchanged.
  assert.deepEqual(clipResponse(frame, frame.length), frame);
});

test('frames that cannot be clipped say why', { timeout: 10_000 }, () => {
  const request = encoder.encode('{"jsonrpc":"2.0","id":1,"method":"tools/call"}');
  assert.throws(() => clipResponse(request, 10), (e) => e.cause.tag === 'not-a-response');
  assert.throws(() => clipResponse(encoder.encode('{"id":1,"result":'), 10), (e) => e.cause.tag === 'malformed');
});

test('capture keeps head and tail within budget and counts the rest', { timeout: 10_000 }, () => {
  const capture = new Capture(64, 16);
  for (let i = 0; i < 1000; i++) capture.write(encoder.encode(`héllo wörld ${i}\n`));
  const report = capture.report();
  assert.equal(report.truncated, true);
  assert.equal(report.kept + report.dropped, report.seen);
  assert.ok(report.kept <= 64);
  assert.ok(capture.head().length <= 16);
  assert.match(capture.render(), /bytes omitted/);
});
