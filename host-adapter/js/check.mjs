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
    const stream = streams[c.stream];
    const framer = new Framer(c.limits);
    const got = [];
    for (let at = 0, step = 0; at < stream.length; step++) {
      const len = Math.max(1, Math.min(c.chunks[step % c.chunks.length], stream.length - at));
      for (const e of framer[push](stream.subarray(at, at + len))) got.push(plainEvent(e));
      at += len;
    }
    for (const e of framer[finish]()) got.push(plainEvent(e));
    events += got.length;
    const what = `case ${i} (${c.name}, chunks ${JSON.stringify(c.chunks).slice(0, 40)})`;
    if (got.length !== c.events.length) {
      failures.push(`${what}: ${got.length} events, native gave ${c.events.length}`);
      continue;
    }
    const bad = got.findIndex((e, k) => stable(e) !== stable(c.events[k]));
    if (bad >= 0) failures.push(`${what}: event ${bad} is ${stable(got[bad])}, native gave ${stable(c.events[bad])}`);
    if (stable(framer.stats()) !== stable(c.stats)) {
      failures.push(`${what}: stats ${stable(framer.stats())}, native gave ${stable(c.stats)}`);
    }
  }
  return { cases: vectors.cases.length, events, failures };
}
