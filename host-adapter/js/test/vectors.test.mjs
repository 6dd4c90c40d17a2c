// Node runs the same component as wasmtime on the native framer's vectors.
// Needs `npm run build` first (it writes dist/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { EVENT_WORDS, Framer, HeldLine, decodePacked } from '../index.js';
import { runCases } from '../check.mjs';

const vectors = JSON.parse(readFileSync(new URL('../dist/vectors.json', import.meta.url)));

for (const typed of [false, true]) {
  test(`component in Node matches the native framer on every vector (${typed ? 'typed' : 'packed'} batches)`, { timeout: 120_000 }, () => {
    const { cases, events, failures } = runCases(Framer, vectors, { typed });
    assert.ok(cases > 100, `only ${cases} cases`);
    assert.ok(events > 1000, `only ${events} events`);
    assert.deepEqual(failures.slice(0, 5), []);
  });
}

test('a broken packed batch is an error, not an event', { timeout: 10_000 }, () => {
  const chunk = new TextEncoder().encode('{"id":1}\n');
  const { words } = new Framer().pushPacked(chunk);
  assert.equal(decodePacked({ words }, chunk).length, 1);
  assert.throws(() => decodePacked({ words: words.slice(0, EVENT_WORDS - 1) }, chunk), RangeError);
  const bad = Uint32Array.from(words);
  bad[3] = 5; bad[4] = 6; // across the end of the chunk
  assert.throws(() => decodePacked({ words: bad }, chunk), RangeError);
  bad[0] = 7; // no such kind
  assert.throws(() => decodePacked({ words: bad }, chunk), RangeError);
  for (const bit of [1 << 14, 1 << 15, 1 << 16]) { // another kind's bit on a frame
    const other = Uint32Array.from(words);
    other[0] |= bit;
    assert.throws(() => decodePacked({ words: other }, chunk), RangeError);
  }
  // Asking to join or keep bytes that are not there.
  assert.throws(() => new HeldLine().receive({ words: [], join: 10, keep: 0 }, chunk), RangeError);
  assert.throws(() => new HeldLine().receive({ words: [], join: 0, keep: 10 }, chunk), RangeError);
});

test('a message across pushes is assembled in the held line; views survive the next line', { timeout: 10_000 }, () => {
  const framer = new Framer();
  const text = '{"jsonrpc":"2.0","id":7,"result":{"n":"ação"}}';
  const bytes = new TextEncoder().encode(`${text}\n{"id":8,`);
  assert.deepEqual(framer.push(bytes.subarray(0, 20)), []);
  const [frame] = framer.push(bytes.subarray(20));
  assert.equal(frame.tag, 'frame');
  assert.equal(new TextDecoder().decode(frame.bytes), text);
  assert.equal(new TextDecoder().decode(frame.envelope.id.raw), '7');
  const [next] = framer.push(new TextEncoder().encode('"result":{}}\n'));
  assert.equal(new TextDecoder().decode(next.bytes), '{"id":8,"result":{}}');
  assert.equal(new TextDecoder().decode(frame.bytes), text, 'the first frame was not overwritten');
});

test('frames inside a chunk are views of it, not copies', { timeout: 10_000 }, () => {
  const framer = new Framer();
  const chunk = new TextEncoder().encode('{"jsonrpc":"2.0","id":1,"result":{}}\n');
  const [frame] = framer.push(chunk);
  assert.equal(frame.tag, 'frame');
  assert.equal(frame.bytes.buffer, chunk.buffer);
  assert.equal(new TextDecoder().decode(frame.envelope.jsonrpc), '2.0');
});

test('an oversize line names the request to fail', { timeout: 10_000 }, () => {
  const framer = new Framer({ maxFrameBytes: 32 });
  const events = framer.push(new TextEncoder().encode(`{"id":7,"result":"${'a'.repeat(100)}"}\n`));
  assert.deepEqual(events.map((e) => e.tag), ['oversize', 'discarded']);
  assert.equal(new TextDecoder().decode(events[0].envelope.id.raw), '7');
  assert.equal(framer.stats().oversize, 1);
});

test('an id written after the limit is named when the line ends', { timeout: 10_000 }, () => {
  for (const typed of [false, true]) {
    const framer = new Framer({ maxFrameBytes: 32 });
    const line = `{"result":{"text":"${'a'.repeat(100)}"},"jsonrpc":"2.0","id":"req-7"}\n`;
    const bytes = new TextEncoder().encode(line);
    const events = [];
    // Split across pushes, so the id's bytes were never all in one chunk.
    for (const cut of [[0, 40], [40, line.length - 6], [line.length - 6, line.length]]) {
      const chunk = bytes.subarray(...cut);
      events.push(...(typed ? framer.pushTyped(chunk) : framer.push(chunk)));
    }
    assert.deepEqual(events.map((e) => e.tag), ['oversize', 'discarded']);
    assert.equal(events[0].envelope.id, undefined, 'not known at the limit');
    assert.equal(events[0].envelope.hasResult, true);
    const { envelope, wellFormed } = events[1];
    assert.equal(wellFormed, true);
    assert.equal(envelope.id.tag, 'string');
    assert.equal(new TextDecoder().decode(envelope.id.raw), 'req-7');
    assert.equal(new TextDecoder().decode(envelope.jsonrpc), '2.0');
  }
});
