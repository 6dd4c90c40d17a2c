// The drainpipe framer for JavaScript: the same WebAssembly component the
// Rust host runs, transpiled by jco. See wit/framer.wit for the semantics.
//
//   import { Framer } from 'drainpipe-framer';
//   const framer = new Framer({ maxFrameBytes: 4 << 20 });
//   for (const event of framer.push(chunk)) {
//     if (event.tag === 'frame') dispatch(event.bytes);   // a Uint8Array view
//   }
//   framer.finish();
import { framing } from './dist/framer/framer.js';

/** Default limits: 4 MiB per message, nesting depth 128, strict JSON. */
export const DEFAULT_LIMITS = Object.freeze({ maxFrameBytes: 4 << 20, maxDepth: 128, validateJson: true });

const view = (ref, chunk, carried) => {
  const bytes = ref.tag === 'chunk' ? chunk : carried;
  const { start, len } = ref.val;
  if (start + len > bytes.length) throw new RangeError('framer component returned a span out of range');
  return bytes.subarray(start, start + len);
};

const envelope = (e, chunk, carried) => ({
  jsonrpc: e.jsonrpc === undefined ? undefined : view(e.jsonrpc, chunk, carried),
  id: e.id === undefined ? undefined
    : e.id.tag === 'null' ? { tag: 'null' }
    : { tag: e.id.tag, raw: view(e.id.val, chunk, carried) },
  method: e.method === undefined ? undefined : view(e.method, chunk, carried),
  hasResult: e.hasResult,
  hasError: e.hasError,
});

/**
 * Turns a WIT batch into plain events. Byte fields are views of `chunk` or
 * of the batch's carried bytes: no copies. Offsets and lengths are Numbers
 * (exact below 2^53 bytes, i.e. 8 PiB of stream).
 */
export function resolveBatch(batch, chunk) {
  const { carried } = batch;
  return batch.events.map(({ tag, val }) => {
    switch (tag) {
      case 'frame':
        return { tag, offset: Number(val.offset), bytes: view(val.bytes, chunk, carried), envelope: envelope(val.envelope, chunk, carried) };
      case 'oversize':
        return { tag, offset: Number(val.offset), looksLikeJson: val.looksLikeJson, envelope: envelope(val.envelope, chunk, carried) };
      case 'malformed':
        return { tag, offset: Number(val.offset), error: { kind: val.error.kind, at: Number(val.error.at) }, envelope: envelope(val.envelope, chunk, carried) };
      case 'discarded':
        return { tag, offset: Number(val.offset), len: Number(val.len), atEof: val.atEof };
      case 'not-protocol':
        return { tag, offset: Number(val.offset), line: view(val.line, chunk, carried) };
      case 'truncated':
        return { tag, offset: Number(val.offset), len: Number(val.len), envelope: envelope(val.envelope, chunk, carried) };
      default:
        throw new TypeError(`unknown framer event ${tag}`);
    }
  });
}

/** An incremental framer for one stream (see `resource framer` in the WIT). */
export class Framer {
  #inner;

  /** @param {Partial<typeof DEFAULT_LIMITS>} limits */
  constructor(limits = {}) {
    this.#inner = new framing.Framer({ ...DEFAULT_LIMITS, ...limits });
  }

  /** Pushes the next chunk (a Uint8Array); returns the events it completed. */
  push(chunk) {
    return resolveBatch(this.#inner.push(chunk), chunk);
  }

  /** The raw WIT batch: spans instead of views, for the fastest path. */
  pushBatch(chunk) {
    return this.#inner.push(chunk);
  }

  /** Ends the stream; returns the final events. */
  finish() {
    return resolveBatch(this.#inner.finish(), new Uint8Array(0));
  }

  /** The counters, as Numbers. */
  stats() {
    return Object.fromEntries(Object.entries(this.#inner.stats()).map(([k, v]) => [k, Number(v)]));
  }

  /** Bytes held for an unfinished line. */
  buffered() {
    return this.#inner.buffered();
  }

  /** Forgets the stream; counters and offsets restart at zero. */
  reset() {
    this.#inner.reset();
  }
}
