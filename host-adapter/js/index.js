// The drainpipe framer for JavaScript: the same WebAssembly component the
// Rust host runs, transpiled by jco. See wit/framer.wit for the semantics.
//
//   import { Framer } from 'drainpipe-framer';
//   const framer = new Framer({ maxFrameBytes: 4 << 20 });
//   for (const event of framer.push(chunk)) {   // plain objects, see decodePacked
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
        return {
          tag, offset: Number(val.offset), len: Number(val.len), atEof: val.atEof,
          envelope: envelope(val.envelope, chunk, carried), wellFormed: val.wellFormed,
        };
      case 'not-protocol':
        return { tag, offset: Number(val.offset), line: view(val.line, chunk, carried) };
      case 'truncated':
        return { tag, offset: Number(val.offset), len: Number(val.len), envelope: envelope(val.envelope, chunk, carried) };
      default:
        throw new TypeError(`unknown framer event ${tag}`);
    }
  });
}

/** Words per event in a packed batch (see `record packed-batch` in the WIT). */
export const EVENT_WORDS = 11;
const KINDS = [undefined, 'frame', 'oversize', 'malformed', 'discarded', 'not-protocol', 'truncated'];
const ERROR_KINDS = [undefined, 'invalid-utf8', 'control-in-string', 'invalid-escape', 'unexpected-byte',
  'invalid-number', 'invalid-literal', 'trailing-characters', 'top-level-not-object', 'depth-limit', 'incomplete'];
const ID_TAGS = [undefined, 'number', 'string', 'null'];
/** The envelope's tag bits: id kind, `jsonrpc`, `method`, has-result, has-error. */
const ENVELOPE_BITS = (3 << 8) | (1 << 10) | (1 << 11) | (1 << 12) | (1 << 13);
/** The bits a tag of each kind may set, by kind (as the Rust decoder checks). */
const KIND_BITS = [0, 1 | ENVELOPE_BITS, 2 | ENVELOPE_BITS | (1 << 14), 3 | ENVELOPE_BITS | (0xf << 4),
  4 | ENVELOPE_BITS | (1 << 15) | (1 << 16), 5, 6 | ENVELOPE_BITS];

/**
 * Turns a packed batch's words (`push-packed`) into the same plain events as
 * `resolveBatch`, checking every word. Byte fields are views of `chunk` or of
 * `line`, the held line after its join (see `HeldLine`, which calls this),
 * and a discarded event's envelope views of the batch's `carried` bytes:
 * no copies.
 */
export function decodePacked({ words, carried = new Uint8Array(0) }, chunk, line = new Uint8Array(0)) {
  if (words.length % EVENT_WORDS !== 0) {
    throw new RangeError(`framer component returned ${words.length} words, not whole events`);
  }
  const span = (start, len) => {
    if (len === 0) return chunk.subarray(0, 0);
    if (start + len <= chunk.length) return chunk.subarray(start, start + len);
    const from = start - chunk.length;
    if (from < 0 || from + len > line.length) throw new RangeError('framer component returned a span out of range');
    return line.subarray(from, from + len);
  };
  const carriedSpan = (start, len) => {
    if (start + len > carried.length) throw new RangeError('framer component returned a span out of range');
    return carried.subarray(start, start + len);
  };
  const events = new Array(words.length / EVENT_WORDS);
  for (let i = 0, k = 0; i < words.length; i += EVENT_WORDS, k++) {
    const tag = words[i];
    const kind = KINDS[tag & 0xf];
    const offset = words[i + 1] + words[i + 2] * 2 ** 32;
    const wide = words[i + 3] + words[i + 4] * 2 ** 32;
    const idKind = (tag >>> 8) & 3;
    const envelope = (at = span) => ({
      jsonrpc: tag & (1 << 10) ? at(words[i + 5], words[i + 6]) : undefined,
      id: idKind === 0 ? undefined
        : idKind === 3 ? { tag: 'null' }
        : { tag: ID_TAGS[idKind], raw: at(words[i + 7], words[i + 8]) },
      method: tag & (1 << 11) ? at(words[i + 9], words[i + 10]) : undefined,
      hasResult: (tag & (1 << 12)) !== 0,
      hasError: (tag & (1 << 13)) !== 0,
    });
    const errorKind = ERROR_KINDS[(tag >>> 4) & 0xf];
    const wellFormed = (tag & (1 << 16)) !== 0;
    if (kind === undefined || (tag & ~KIND_BITS[tag & 0xf]) !== 0
        || (kind === 'malformed') !== (errorKind !== undefined)) {
      throw new RangeError(`framer component returned an invalid event tag ${tag}`);
    }
    switch (kind) {
      case 'frame':
        events[k] = { tag: kind, offset, bytes: span(words[i + 3], words[i + 4]), envelope: envelope() };
        break;
      case 'oversize':
        events[k] = { tag: kind, offset, looksLikeJson: (tag & (1 << 14)) !== 0, envelope: envelope() };
        break;
      case 'malformed':
        events[k] = { tag: kind, offset, error: { kind: errorKind, at: wide }, envelope: envelope() };
        break;
      case 'discarded':
        events[k] = {
          tag: kind, offset, len: wide, atEof: (tag & (1 << 15)) !== 0,
          envelope: envelope(carriedSpan), wellFormed,
        };
        break;
      case 'not-protocol':
        events[k] = { tag: kind, offset, line: span(words[i + 3], words[i + 4]) };
        break;
      default:
        events[k] = { tag: kind, offset, len: wide, envelope: envelope() };
    }
  }
  return events;
}

/**
 * The host's side of `push-packed`: the bytes of the line that is not
 * finished yet, which the component does not copy back out (see `record
 * packed-batch` in the WIT). A message that spanned pushes is a view of it.
 */
export class HeldLine {
  #buf = new Uint8Array(0);
  #len = 0;

  /**
   * Joins, decodes and keeps, as the batch says; returns the events. Their
   * views stay valid until the next `receive`: a line begun in this chunk
   * goes to a new buffer rather than over the old one.
   */
  receive({ words, join, keep, carried }, chunk) {
    if (join > chunk.length) throw new RangeError(`framer component asked to join ${join} of ${chunk.length} bytes`);
    this.#append(chunk.subarray(0, join));
    const events = decodePacked({ words, carried }, chunk, this.#buf.subarray(0, this.#len));
    const rest = chunk.subarray(join);
    if (keep <= rest.length) {
      this.#buf = rest.slice(rest.length - keep);
      this.#len = keep;
    } else {
      const fromHeld = keep - rest.length;
      if (fromHeld > this.#len) throw new RangeError(`framer component asked to keep ${keep} bytes, ${this.#len + rest.length} are held`);
      if (fromHeld < this.#len) {
        this.#buf = this.#buf.slice(this.#len - fromHeld, this.#len);
        this.#len = fromHeld;
      }
      this.#append(rest);
    }
    return events;
  }

  #append(bytes) {
    if (bytes.length === 0) return;
    const need = this.#len + bytes.length;
    if (need > this.#buf.length) {
      const grown = new Uint8Array(Math.max(need, this.#buf.length * 2, 256));
      grown.set(this.#buf.subarray(0, this.#len));
      this.#buf = grown;
    }
    this.#buf.set(bytes, this.#len);
    this.#len = need;
  }

  /** Bytes held. */
  get length() {
    return this.#len;
  }

  /** Forgets the line (after a reset). */
  clear() {
    this.#buf = new Uint8Array(0);
    this.#len = 0;
  }
}

/** An incremental framer for one stream (see `resource framer` in the WIT). */
export class Framer {
  #inner;
  #held = new HeldLine();

  /** @param {Partial<typeof DEFAULT_LIMITS>} limits */
  constructor(limits = {}) {
    this.#inner = new framing.Framer({ ...DEFAULT_LIMITS, ...limits });
  }

  /**
   * Pushes the next chunk (a Uint8Array); returns the events it completed.
   * Crosses out of the component packed (`push-packed`), the fast path; a
   * message that spanned pushes is assembled here (`HeldLine`), not copied
   * out of the component. Use `push`/`finish` or `pushTyped`/`finishTyped`
   * for a whole stream, not both.
   */
  push(chunk) {
    return this.#held.receive(this.#inner.pushPacked(chunk), chunk);
  }

  /** Ends the stream; returns the final events. */
  finish() {
    return this.#held.receive(this.#inner.finishPacked(), new Uint8Array(0));
  }

  /** `push` through the typed WIT batch (`push`): same events, slower. */
  pushTyped(chunk) {
    return resolveBatch(this.#inner.push(chunk), chunk);
  }

  /** `finish` through the typed WIT batch. */
  finishTyped() {
    return resolveBatch(this.#inner.finish(), new Uint8Array(0));
  }

  /** The raw packed batch (words, join, keep, carried), undecoded: the caller keeps its own `HeldLine`. */
  pushPacked(chunk) {
    return this.#inner.pushPacked(chunk);
  }

  /** The raw typed WIT batch: spans instead of views. */
  pushBatch(chunk) {
    return this.#inner.push(chunk);
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
    this.#held.clear();
    this.#inner.reset();
  }
}

/**
 * The framer as a WHATWG `TransformStream`: `Uint8Array` chunks in, the
 * same events as `Framer.push` out (and `Framer.finish`'s when the writable
 * side closes). For browsers and edge runtimes that get MCP over any byte
 * stream:
 *
 *   const events = response.body.pipeThrough(new FramerStream({ maxFrameBytes: 4 << 20 }));
 *   for await (const event of events) ...
 *
 * Byte fields are views of the chunks written (do not reuse a chunk after
 * writing it) or of the line the framer assembled: no copies.
 */
export class FramerStream extends TransformStream {
  #framer;

  /**
   * @param {Partial<typeof DEFAULT_LIMITS>} limits
   * @param {QueuingStrategy<Uint8Array>} [writableStrategy]
   * @param {QueuingStrategy<object>} [readableStrategy]
   */
  constructor(limits = {}, writableStrategy = undefined, readableStrategy = undefined) {
    const framer = new Framer(limits);
    super({
      transform(chunk, controller) {
        const bytes = chunk instanceof Uint8Array ? chunk
          : ArrayBuffer.isView(chunk) ? new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)
          : chunk instanceof ArrayBuffer ? new Uint8Array(chunk)
          : null;
        if (bytes === null) throw new TypeError('FramerStream takes Uint8Array (or ArrayBuffer) chunks');
        for (const event of framer.push(bytes)) controller.enqueue(event);
      },
      flush(controller) {
        for (const event of framer.finish()) controller.enqueue(event);
      },
    }, writableStrategy, readableStrategy);
    this.#framer = framer;
  }

  /** The framer's counters, as Numbers. */
  stats() {
    return this.#framer.stats();
  }

  /** Bytes held for an unfinished line. */
  buffered() {
    return this.#framer.buffered();
  }
}
