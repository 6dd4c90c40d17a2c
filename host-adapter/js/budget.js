// The result budget for JavaScript (see `interface budget` in
// wit/framer.wit): clipping a tools/call response to a byte budget, and
// bounded capture of an output stream. A separate entry point because its
// component is larger than the framer's (clipping parses JSON values).
//
//   import { clipResponse, Capture } from 'drainpipe-framer/budget';
import { budget } from './dist/drainpipe/drainpipe.js';

/**
 * Clips a complete response frame (Uint8Array, no newline) to at most
 * `budgetBytes` bytes on the wire. Returns the clipped frame; throws an
 * Error whose `cause` is the WIT `clip-error` ({ tag, val }) if the frame
 * cannot be clipped.
 */
export function clipResponse(frame, budgetBytes, { nextCursor, totalEstimate } = {}) {
  try {
    return budget.clipResponse(frame, budgetBytes, {
      nextCursor,
      totalEstimate: totalEstimate === undefined ? undefined : BigInt(totalEstimate),
    });
  } catch (e) {
    if (e && e.payload) throw new Error(`cannot clip: ${e.payload.tag}`, { cause: e.payload });
    throw e;
  }
}

/** Keeps the head and tail of a stream within a byte budget, counting the rest. */
export class Capture {
  #inner;

  constructor(budgetBytes, headBytes = Math.floor(budgetBytes / 2)) {
    this.#inner = new budget.Capture(budgetBytes, headBytes);
  }

  write(chunk) { this.#inner.write(chunk); }

  report() {
    const r = this.#inner.report();
    return { seen: Number(r.seen), kept: Number(r.kept), dropped: Number(r.dropped), truncated: r.truncated };
  }

  head() { return this.#inner.head(); }

  tail() { return this.#inner.tail(); }

  render() { return this.#inner.render(); }
}
