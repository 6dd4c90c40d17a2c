// The budget half of the full component, in Node. Needs `npm run build`.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { Condenser, condense, Capture, MIN_CONDENSE_BUDGET } from '../budget.js';

const encoder = new TextEncoder();

test('a result over budget is condensed as it streams: valid, a prefix, and it says so', { timeout: 10_000 }, () => {
  const text = 'línea «ünïcødé» "q" \\ \n'.repeat(20_000);
  const frame = encoder.encode(JSON.stringify({
    result: { content: [{ type: 'text', text }], structuredContent: { content: text } }, jsonrpc: '2.0', id: 41,
  }));
  const condenser = new Condenser(16 * 1024);
  for (let at = 0; at < frame.length; at += 1000) condenser.feed(frame.subarray(at, at + 1000));
  const out = condenser.finish();
  assert.ok(out.length <= 16 * 1024, `${out.length} bytes`);
  const value = JSON.parse(new TextDecoder().decode(out));
  assert.equal(value.id, 41);
  const kept = value.result.content[0].text;
  assert.ok(text.startsWith(kept) && kept.length > 1000);
  assert.equal(value.result.structuredContent.content, kept, 'the mirror is cut alike');
  const marker = value.result._meta['io.drainpipe/truncated'];
  assert.equal(marker.originalBytes, frame.length);
  assert.deepEqual(marker.cut, ['/content/0/text', '/structuredContent/content']);
  // Within budget: nothing to cut.
  assert.equal(condense(frame, frame.length + 10_000), null);
});

test('a budget in characters keeps both ends of a text within String.length', { timeout: 20_000 }, () => {
  const text = 'step «ünïcødé» 😀 ok\n'.repeat(20_000) + 'error: the last line';
  const frame = encoder.encode(JSON.stringify({
    result: { content: [{ type: 'text', text }], structuredContent: { result: text } }, jsonrpc: '2.0', id: 7,
  }));
  const condenser = new Condenser(8000, { unit: 'chars' });
  for (let at = 0; at < frame.length; at += 4096) condenser.feed(frame.subarray(at, at + 4096));
  const value = JSON.parse(new TextDecoder().decode(condenser.finish()));
  const kept = value.result.content[0].text;
  const shown = value.result.content.reduce((n, b) => n + (b.type === 'text' ? b.text.length : 0), 0);
  assert.ok(shown <= 8000, `${shown} UTF-16 units shown`);
  assert.ok(JSON.stringify(value.result.structuredContent).length <= 8000);
  // Both ends, around a mark whose numbers are exact (UTF-8 bytes).
  const m = /\n\[… drainpipe left out (\d+) bytes here, from byte (\d+) …\]\n/.exec(kept);
  assert.ok(m, kept.slice(0, 200));
  const head = kept.slice(0, m.index);
  const tail = kept.slice(m.index + m[0].length);
  assert.ok(text.startsWith(head) && text.endsWith(tail) && tail.endsWith('error: the last line'));
  const bytes = (s) => Buffer.byteLength(s, 'utf8');
  assert.equal(Number(m[2]), bytes(head));
  assert.equal(bytes(text), bytes(head) + Number(m[1]) + bytes(tail));
  assert.equal(value.result.structuredContent.result, kept, 'the mirror is cut alike');
  // The beginning only, on request.
  const headOnly = JSON.parse(new TextDecoder().decode(condense(frame, 8000, { unit: 'chars', keep: 'head' })));
  assert.ok(text.startsWith(headOnly.result.content[0].text));
});

test('a budget in tokens is counted by the caller\'s tokenizer', { timeout: 60_000 }, () => {
  const text = 'step «ünïcødé» 😀 ok, the build goes on\n'.repeat(8_000) + 'error: the last line';
  const frame = encoder.encode(JSON.stringify({ jsonrpc: '2.0', id: 3, result: { content: [{ type: 'text', text }] } }));
  const amount = 6000;
  const shownTokens = (value) => value.result.content.reduce((n, b) => n + (b.type === 'text' ? countTokens(b.text) : 0), 0);
  const counted = JSON.parse(new TextDecoder().decode(condense(frame, amount, { unit: 'tokens', count: countTokens })));
  const tokens = shownTokens(counted);
  assert.ok(tokens <= amount, `${tokens} o200k_base tokens shown`);
  const kept = counted.result.content[0].text;
  assert.ok(kept.endsWith('error: the last line'));
  // Uncounted, the amount in bytes, which keeps less.
  const uncounted = condense(frame, amount, { unit: 'tokens' });
  assert.ok(uncounted.length <= amount);
  const counteds = encoder.encode(JSON.stringify(counted));
  assert.ok(counteds.length > uncounted.length, `${counteds.length} bytes counted, ${uncounted.length} not`);
  assert.ok(shownTokens(JSON.parse(new TextDecoder().decode(uncounted))) <= amount);
  assert.throws(() => new Condenser(amount, { unit: 'tokens', count: 5 }), TypeError);
});

test('responses that cannot be condensed say why', { timeout: 10_000 }, () => {
  assert.throws(() => condense(encoder.encode('[1,2]'), 1 << 20), (e) => e.cause.tag === 'not-an-object');
  assert.throws(() => condense(encoder.encode('{"id":1,"result":'), 1 << 20), (e) => e.cause.tag === 'incomplete');
  assert.throws(() => condense(encoder.encode('{}'), 100), (e) => e.cause.tag === 'budget-too-small');
  // The constant is the component's own smallest budget: one byte less is
  // refused, that budget condenses.
  const big = encoder.encode(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'x'.repeat(20_000) }] } }));
  assert.throws(() => condense(big, MIN_CONDENSE_BUDGET - 1), (e) => e.cause.tag === 'budget-too-small');
  assert.ok(condense(big, MIN_CONDENSE_BUDGET).length <= MIN_CONDENSE_BUDGET);
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
