// The parity check shared by the Node test and the browser page: runs every
// case of vectors.json through `Framer` and compares with the native
// framer's events and counters. Returns the failures (empty when all pass).

const decode = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
const encode = (bytes) => {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
};

const b64OrNull = (bytes) => (bytes === undefined ? null : encode(bytes));

const plainEnvelope = (e) => ({
  jsonrpc: b64OrNull(e.jsonrpc),
  id: e.id === undefined ? null : e.id.tag === 'null' ? { tag: 'null' } : { tag: e.id.tag, raw: encode(e.id.raw) },
  method: b64OrNull(e.method),
  hasResult: e.hasResult,
  hasError: e.hasError,
});

/** An event from `Framer` in the JSON shape of vectors.json. */
export function plainEvent(e) {
  const out = { ...e };
  if ('bytes' in e) out.bytes = encode(e.bytes);
  if ('line' in e) out.line = encode(e.line);
  if ('envelope' in e) out.envelope = plainEnvelope(e.envelope);
  return out;
}

/** Stable JSON (sorted keys), so comparison ignores key order. */
const stable = (v) => JSON.stringify(v, (_, x) => (x && typeof x === 'object' && !Array.isArray(x)
  ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x));

/** Compares one case's events and counters with the native framer's; adds to `failures`. */
function compareCase(i, c, got, stats, failures) {
  const what = `case ${i} (${c.name}, chunks ${JSON.stringify(c.chunks).slice(0, 40)})`;
  if (got.length !== c.events.length) {
    failures.push(`${what}: ${got.length} events, native gave ${c.events.length}`);
    return;
  }
  const bad = got.findIndex((e, k) => stable(e) !== stable(c.events[k]));
  if (bad >= 0) failures.push(`${what}: event ${bad} is ${stable(got[bad])}, native gave ${stable(c.events[bad])}`);
  if (stable(stats) !== stable(c.stats)) {
    failures.push(`${what}: stats ${stable(stats)}, native gave ${stable(c.stats)}`);
  }
}

/** The chunks of case `c`: its sizes in turn, the last one cut at the end of the stream. */
function* chunksOf(c, stream) {
  for (let at = 0, step = 0; at < stream.length; step++) {
    const len = Math.max(1, Math.min(c.chunks[step % c.chunks.length], stream.length - at));
    yield stream.subarray(at, at + len);
    at += len;
  }
}

/**
 * `typed` runs the cases through `pushTyped`/`finishTyped` (the WIT's typed
 * batches) instead of the packed `push`/`finish`.
 */
export function runCases(Framer, vectors, { typed = false } = {}) {
  const push = typed ? 'pushTyped' : 'push';
  const finish = typed ? 'finishTyped' : 'finish';
  const streams = vectors.streams.map(decode);
  const failures = [];
  let events = 0;
  for (const [i, c] of vectors.cases.entries()) {
    const framer = new Framer(c.limits);
    const got = [];
    for (const chunk of chunksOf(c, streams[c.stream])) {
      for (const e of framer[push](chunk)) got.push(plainEvent(e));
    }
    for (const e of framer[finish]()) got.push(plainEvent(e));
    events += got.length;
    compareCase(i, c, got, framer.stats(), failures);
  }
  return { cases: vectors.cases.length, events, failures };
}

/**
 * The same cases through `FramerStream` (a WHATWG TransformStream): each
 * case's chunks are written to it and its events read back as they come,
 * then compared like `runCases`.
 */
export async function runStreamCases(FramerStream, vectors) {
  const streams = vectors.streams.map(decode);
  const failures = [];
  let events = 0;
  for (const [i, c] of vectors.cases.entries()) {
    const framing = new FramerStream(c.limits);
    const reader = framing.readable.getReader();
    const reading = (async () => {
      const got = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return got;
        got.push(plainEvent(value));
      }
    })();
    const writer = framing.writable.getWriter();
    for (const chunk of chunksOf(c, streams[c.stream])) await writer.write(chunk);
    await writer.close();
    const got = await reading;
    events += got.length;
    compareCase(i, c, got, framing.stats(), failures);
  }
  return { cases: vectors.cases.length, events, failures };
}
