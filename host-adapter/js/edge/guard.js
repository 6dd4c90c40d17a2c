// The edge guard: MCP answers from a remote server, streamed through a
// WHATWG TransformStream, with the limits drainpipe applies to a pipe.
// Runtime-neutral: it gets the component's exports from whoever loads it
// (edge/index.js imports the core modules statically, for workerd and
// bundlers; edge/compile.js compiles them from the package's files, for
// Node and Deno) and uses only web APIs.
//
// Per event (an SSE event's data, or a whole application/json answer):
//
// - The bytes are counted as they pass, before anything is parsed: an
//   event over `maxEventBytes` stops being kept the moment it crosses, is
//   read to its end without being kept (the component's relay still
//   learns its `id`, written last by the TypeScript SDK) and becomes the
//   JSON-RPC error -31001 for that id, or for the request the POST carried.
// - On the answer to a tools/call, an event over `clip` (in `unit`s) is
//   fed to the component's condenser as it streams and replaced by the
//   condensed result (a valid result within the budget, with its notice);
//   one that cannot be condensed becomes the error -31003.
// - Everything else passes unchanged; comments (keep-alives) at once.
//
// Memory: at most `maxEventBytes` of one event kept (for a tools/call
// answer in bytes, at most `clip`), plus the condenser's budget.
import { bindBudget, MIN_CONDENSE_BUDGET } from '../budget-core.js';

/** JSON-RPC error code for a message over the transport limit (as the Rust proxy). */
export const TOO_LARGE = -31001;
/** JSON-RPC error code for a result over the budget that could not be condensed. */
export const OVER_BUDGET = -31003;
/** The default transport limit: bytes of one event's data on the wire. */
export const DEFAULT_MAX_EVENT_BYTES = 4 << 20;
/** The longest request body read to learn its id and method. */
export const MAX_REQUEST_BYTES = 1 << 20;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const DATA_BREAK = encoder.encode('\ndata: ');
const EVENT_END = encoder.encode('\n\n');
/** A `data` line break inside a kept event. */
const BREAK = Symbol('data break');

/**
 * The request a POST carried, from its body: `{ id, method }` with `id` as
 * JSON text (`'7'`, `'"abc"'`), or `{}` for a batch, a notification or a
 * body that is not JSON.
 */
export function peekRequest(body) {
  try {
    const message = JSON.parse(typeof body === 'string' ? body : decoder.decode(body));
    if (message === null || typeof message !== 'object' || Array.isArray(message)) return {};
    return {
      id: message.id === undefined ? undefined : JSON.stringify(message.id),
      method: typeof message.method === 'string' ? message.method : undefined,
    };
  } catch {
    return {};
  }
}

const errorMessage = (id, code, reason, message, limitBytes) => JSON.stringify({
  jsonrpc: '2.0',
  id: null,
  error: { code, message, data: { drainpipe: { reason, limitBytes } } },
}).replace('"id":null', `"id":${id}`);

/**
 * The guard, over a loader of the component: `load()` returns its exports
 * (`{ sse, budget }`); it is called once, on first use, synchronously.
 */
export function edgeGuard(load) {
  let component;
  let budgetApi;
  const exports = () => {
    if (component === undefined) {
      component = load();
      budgetApi = bindBudget(component.budget);
    }
    return component;
  };

  /**
   * A TransformStream of the bytes of one MCP answer (`sse: true` for
   * `text/event-stream`, false for one `application/json` answer).
   * Options: `request` (`{ id, method }`, `peekRequest`), `maxEventBytes`,
   * `clip` with `unit`, `keep`, `count` (as `Condenser`), `maxDepth`,
   * `log` (a function given one line per event it changed).
   */
  class GuardStream extends TransformStream {
    constructor(options = {}) {
      const state = new EventGuard(exports(), budgetApi, options);
      super({
        transform: (chunk, controller) => state.push(chunk, controller),
        flush: (controller) => state.finish(controller),
      });
      /** Counters: events passed, condensed, failed, bytes in. */
      this.stats = state.stats;
    }
  }

  /**
   * `response` with its body guarded: SSE and JSON answers are streamed
   * through a `GuardStream`, anything else (errors, 202s) passes as it is.
   */
  function guardResponse(response, options = {}) {
    const type = (response.headers.get('content-type') ?? '').toLowerCase();
    const sse = type.startsWith('text/event-stream');
    if (!response.body || !(sse || type.startsWith('application/json'))) return response;
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    let reader;
    try {
      reader = response.body.getReader({ mode: 'byob' });
    } catch {
      reader = undefined;
    }
    const body = reader === undefined ? response.body.pipeThrough(new GuardStream({ ...options, sse }))
      : guardedBody(reader, new EventGuard(exports(), budgetApi, { ...options, sse, copyKept: true }));
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  }

  return { GuardStream, guardResponse };
}

/** Bytes read into one buffer at a time. */
const READ_BYTES = 64 * 1024;

/**
 * The guarded body, read through a BYOB reader into one buffer used over
 * and over: each chunk a runtime hands a TransformStream is a new buffer
 * left to the garbage collector, and at line rate those pile up faster
 * than it runs (a 1 GiB event took workerd's peak RSS from 60 to 250 MiB;
 * 128 MB is an isolate's budget). What the guard keeps of an event it
 * copies (`copyKept`).
 */
function guardedBody(reader, state) {
  let buffer = new ArrayBuffer(READ_BYTES);
  return new ReadableStream({
    // Reads until something is enqueued: a pull that enqueues nothing is
    // not called again (and a dropped event enqueues nothing for a long
    // while).
    async pull(controller) {
      let enqueued = false;
      const out = { enqueue: (bytes) => { enqueued = true; controller.enqueue(bytes); } };
      while (!enqueued) {
        const { value, done } = await reader.read(new Uint8Array(buffer, 0, READ_BYTES));
        if (done) {
          state.finish(out);
          controller.close();
          return;
        }
        buffer = value.buffer;
        state.push(value, out);
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

class EventGuard {
  constructor(component, budgetApi, options) {
    const {
      sse = true, request = {}, maxEventBytes = DEFAULT_MAX_EVENT_BYTES, clip, unit = 'bytes',
      keep = 'ends', count, maxDepth = 128, log = () => {}, copyKept = false,
    } = options;
    // The chunks are read into a buffer used again: keep copies.
    this.copyKept = copyKept;
    if (!Number.isInteger(maxEventBytes) || maxEventBytes < 1) {
      throw new RangeError(`maxEventBytes must be a positive integer, not ${maxEventBytes}`);
    }
    if (clip !== undefined && (!Number.isInteger(clip) || (unit === 'bytes' && clip < MIN_CONDENSE_BUDGET))) {
      throw new RangeError(`clip must be an integer (at least ${MIN_CONDENSE_BUDGET} bytes), not ${clip}`);
    }
    this.sse = sse;
    this.requestId = request.id;
    this.maxEventBytes = maxEventBytes;
    // Only the answer to a tools/call is condensed, as the proxy's --clip.
    this.clip = request.method === 'tools/call' ? clip : undefined;
    this.condenserOptions = { unit, keep, count };
    // In bytes, an event past the budget is condensed or failed, never
    // sent as it was: nothing of it needs keeping once it is past.
    this.keepCap = this.clip !== undefined && unit === 'bytes' ? this.clip : maxEventBytes;
    this.Condenser = budgetApi.Condenser;
    this.relay = new component.sse.Relay(maxDepth, 1024);
    this.log = log;
    this.sentEventId = '';
    this.eventType = '';
    this.stats = { events: 0, condensed: 0, failed: 0, dropped: 0, bytesIn: 0, largestEvent: 0 };
    this.atLineStart = true;
    this.startEvent();
    if (!sse) this.feed(encoder.encode('data: '), undefined);
  }

  startEvent() {
    this.kept = [];
    this.keptBytes = 0;
    this.keeping = true;
    this.dataBytes = 0;
    this.over = false;
    this.condenser = undefined;
    this.condenseError = undefined;
  }

  push(chunk, controller) {
    if (!(chunk instanceof Uint8Array)) chunk = new Uint8Array(chunk);
    this.stats.bytesIn += chunk.length;
    if (this.sse) {
      this.feed(chunk, controller);
      return;
    }
    // One JSON answer, read as the data of one event: each line end in it
    // (whitespace to JSON) becomes a new `data` line, joined back with `\n`.
    let from = 0;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (b === 10 || b === 13) {
        if (i > from) this.feed(chunk.subarray(from, i), controller);
        this.feed(DATA_BREAK, controller);
        from = i + 1;
      }
    }
    if (from < chunk.length) this.feed(chunk.subarray(from), controller);
  }

  finish(controller) {
    if (!this.sse) this.feed(EVENT_END, controller);
    this.handle(this.relay.finish(), new Uint8Array(0), controller);
  }

  feed(chunk, controller) {
    this.handle(this.relay.push(chunk), chunk, controller);
  }

  handle(batch, chunk, controller) {
    const { carried } = batch;
    const bytes = (ref) => (ref.tag === 'chunk' ? chunk : carried).subarray(ref.val.start, ref.val.start + ref.val.len);
    for (const event of batch.events) {
      switch (event.tag) {
        case 'data':
          this.data(chunk.subarray(event.val.start, event.val.start + event.val.len));
          break;
        case 'data-break':
          this.data(BREAK);
          break;
        case 'end':
          this.end(event.val, bytes, controller);
          break;
        case 'comment':
          if (this.sse) controller.enqueue(encoder.encode(':\n'));
          break;
        case 'retry':
          if (this.sse) controller.enqueue(encoder.encode(`retry: ${event.val}\n\n`));
          break;
        case 'event-type':
          break;
        default:
          break;
      }
    }
  }

  /** The next piece of the current event's data (or a line break). */
  data(piece) {
    const len = piece === BREAK ? 1 : piece.length;
    this.dataBytes += len;
    if (this.over) return;
    if (this.dataBytes > this.maxEventBytes) {
      // Crossed the transport limit: let go of everything, read on for
      // the envelope only.
      this.over = true;
      this.kept = [];
      this.keeping = false;
      this.condenser = undefined;
      return;
    }
    if (this.clip !== undefined && this.condenser === undefined && this.condenseError === undefined &&
        this.dataBytes > this.clip) {
      this.startCondensing();
    }
    if (this.condenser !== undefined) this.condense(piece);
    if (this.keeping) {
      if (this.keptBytes + len > this.keepCap) {
        this.kept = [];
        this.keeping = false;
      } else {
        this.kept.push(this.copyKept && piece !== BREAK ? piece.slice() : piece);
        this.keptBytes += len;
      }
    }
  }

  startCondensing() {
    try {
      const { unit, keep, count } = this.condenserOptions;
      this.condenser = new this.Condenser(this.clip, { unit, keep, count });
    } catch (e) {
      this.condenseError = e;
      return;
    }
    for (const piece of this.kept) this.condense(piece);
  }

  condense(piece) {
    try {
      this.condenser.feed(piece === BREAK ? NEWLINE : piece);
    } catch (e) {
      this.condenseError = e;
      this.condenser = undefined;
    }
  }

  end(end, bytes, controller) {
    const eventId = decoder.decode(bytes(end.lastEventId));
    const eventType = decoder.decode(bytes(end.eventType));
    const envelope = end.envelope;
    const id = envelope.id === undefined ? this.requestId
      : envelope.id.tag === 'null' ? 'null'
      : envelope.id.tag === 'number' ? decoder.decode(bytes(envelope.id.val))
      : `"${decoder.decode(bytes(envelope.id.val))}"`;
    const isResponse = envelope.method === undefined;
    this.stats.largestEvent = Math.max(this.stats.largestEvent, this.dataBytes);
    let out;
    if (!end.complete) {
      // Cut off by the end of the stream: dropped, as the rules say.
    } else if (!end.hasData) {
      out = [];
    } else if (this.over) {
      if (isResponse && id !== undefined) {
        out = [encoder.encode(errorMessage(id, TOO_LARGE, 'too-large',
          `the answer is ${this.dataBytes} bytes, over the limit of ${this.maxEventBytes} bytes; drainpipe dropped it`,
          this.maxEventBytes))];
        this.stats.failed++;
        this.log(`failed the answer for id ${id}: ${this.dataBytes} bytes over the limit of ${this.maxEventBytes}`);
      } else {
        this.stats.dropped++;
        this.log(`dropped a ${this.dataBytes}-byte message over the limit of ${this.maxEventBytes}`);
      }
    } else if (this.condenser !== undefined || this.condenseError !== undefined) {
      let condensed;
      if (this.condenser !== undefined && isResponse && envelope.hasResult) {
        try {
          condensed = this.condenser.finish();
        } catch (e) {
          this.condenseError = e;
        }
      }
      if (condensed) {
        out = [condensed];
        this.stats.condensed++;
        this.log(`condensed the result for id ${id} from ${this.dataBytes} to ${condensed.length} bytes`);
      } else if (this.keeping) {
        out = this.kept;
      } else if (isResponse && id !== undefined) {
        const why = this.condenseError?.message ?? 'not a result';
        out = [encoder.encode(errorMessage(id, OVER_BUDGET, 'over-budget',
          `the result is over the budget of ${this.clip} and could not be condensed: ${why}`, this.clip))];
        this.stats.failed++;
      } else {
        this.stats.dropped++;
      }
    } else {
      out = this.kept;
    }
    if (out !== undefined) {
      this.stats.events++;
      if (this.sse) this.writeEvent(out, end.hasData, eventType, eventId, controller);
      else for (const piece of out) controller.enqueue(piece === BREAK ? NEWLINE : piece);
    }
    this.startEvent();
  }

  /** One event, written whole: its fields, then its data lines. */
  writeEvent(pieces, hasData, eventType, eventId, controller) {
    let head = '';
    if (eventType !== '') head += `event: ${eventType}\n`;
    if (eventId !== this.sentEventId) {
      head += `id: ${eventId}\n`;
      this.sentEventId = eventId;
    }
    if (hasData) head += 'data: ';
    controller.enqueue(encoder.encode(head));
    for (const piece of pieces) controller.enqueue(piece === BREAK ? DATA_BREAK : piece);
    controller.enqueue(hasData ? EVENT_END : NEWLINE);
  }
}

const NEWLINE = encoder.encode('\n');
