// FramerStream (the framer as a WHATWG TransformStream) in Node's web
// streams, on the native framer's vectors. Needs `npm run build` first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { FramerStream } from '../index.js';
import { runStreamCases } from '../check.mjs';

const vectors = JSON.parse(readFileSync(new URL('../dist/vectors.json', import.meta.url)));

test('FramerStream matches the native framer on every vector (Node web streams)', { timeout: 120_000 }, async () => {
  const { cases, events, failures } = await runStreamCases(FramerStream, vectors);
  assert.ok(cases > 100, `only ${cases} cases`);
  assert.ok(events > 1000, `only ${events} events`);
  assert.deepEqual(failures.slice(0, 5), []);
});

test('FramerStream frames a byte stream piped through it, limit checked first', { timeout: 10_000 }, async () => {
  const text = '{"jsonrpc":"2.0","id":1,"result":{}}\nServer started\n{"jsonrpc":"2.0","id":2,"result":"'
    + 'x'.repeat(200) + '"}\n{"jsonrpc":"2.0","method":"notifications/message"}';
  const bytes = new TextEncoder().encode(text);
  const source = new ReadableStream({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 7) controller.enqueue(bytes.subarray(at, at + 7));
      controller.close();
    },
  });
  const framing = new FramerStream({ maxFrameBytes: 64 });
  const tags = [];
  for await (const event of source.pipeThrough(framing)) tags.push(event.tag);
  assert.deepEqual(tags, ['frame', 'not-protocol', 'oversize', 'discarded', 'truncated']);
  assert.equal(framing.stats().oversize, 1);
  assert.equal(framing.stats().bufferedHighWater <= 64, true);
});

test('FramerStream takes ArrayBuffer chunks and refuses strings', { timeout: 10_000 }, async () => {
  const framing = new FramerStream();
  const writer = framing.writable.getWriter();
  const reader = framing.readable.getReader();
  writer.write(new TextEncoder().encode('{"id":1,"result":{}}\n').buffer);
  const { value } = await reader.read();
  assert.equal(value.tag, 'frame');
  // The readable side pulls (it holds no queue), so the next write is transformed.
  const next = reader.read();
  await assert.rejects(writer.write('{"id":2}\n'), TypeError);
  await assert.rejects(next, TypeError);
});
