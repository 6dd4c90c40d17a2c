// The result budget for JavaScript (see `interface budget` in
// wit/framer.wit): condensing a tools/call response of any size to a byte
// budget as it streams, and bounded capture of an output stream. A separate
// entry point because its component is larger than the framer's.
//
//   import { Condenser, condense, Capture } from 'drainpipe-framer/budget';
import { budget } from './dist/drainpipe/drainpipe.js';

/** The smallest budget the condenser works in, in bytes. */
export const MIN_CONDENSE_BUDGET = 3256;

const condenseError = (e) => {
  if (e && e.payload) return new Error(`cannot condense: ${e.payload.tag}`, { cause: e.payload });
  return e;
};

/**
 * Condenses one response line, fed in pieces (Uint8Array, split anywhere)
 * as it streams, into a valid response of at most `budgetBytes` bytes on the
 * wire, holding at most the budget (see `resource condenser` in the WIT).
 * `finish()` returns the condensed frame (no newline), or `null` when
 * nothing had to be cut (send the original). Errors are thrown with the WIT
 * `condense-error` ({ tag, val }) as `cause`.
 */
export class Condenser {
  #inner;

  constructor(budgetBytes) {
    this.#inner = new budget.Condenser(budgetBytes);
  }

  feed(piece) {
    try {
      this.#inner.feed(piece);
    } catch (e) {
      throw condenseError(e);
    }
  }

  finish() {
    let out;
    try {
      out = this.#inner.finish();
    } catch (e) {
      throw condenseError(e);
    }
    return out.tag === 'cut' ? out.val : null;
  }
}

/** Condenses a whole frame: `Condenser` fed once. */
export function condense(frame, budgetBytes) {
  const condenser = new Condenser(budgetBytes);
  condenser.feed(frame);
  return condenser.finish();
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
