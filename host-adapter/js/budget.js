// The result budget for JavaScript (see `interface budget` in
// wit/framer.wit): condensing a tools/call response of any size to a budget
// in bytes or characters as it streams, and bounded capture of an output
// stream. A separate
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
 * as it streams, into a valid response within a budget, holding at most
 * the budget (see `resource condenser` in the WIT).
 *
 * `new Condenser(budgetBytes)`: at most that many bytes on the wire, each
 * cut text keeping its beginning. `new Condenser(amount, { unit, keep })`:
 * `unit` is 'bytes' (the default) or 'chars' (UTF-16 code units, as
 * `String.length` counts them, of the texts a host shows the model; there
 * is no tokenizer in the component: 'tokens' is refused with
 * `unit-unavailable`), `keep` is 'ends' (the default: a cut text's
 * beginning and end, with a mark between saying how many bytes were left
 * out and from which byte), 'head' or 'tail'.
 *
 * `finish()` returns the condensed frame (no newline), or `null` when
 * nothing had to be cut (send the original). Errors are thrown with the WIT
 * `condense-error` ({ tag, val }) as `cause`.
 */
export class Condenser {
  #inner;

  constructor(budget_, options) {
    if (options === undefined) {
      this.#inner = new budget.Condenser(budget_);
      return;
    }
    const { unit = 'bytes', keep = 'ends' } = options;
    try {
      this.#inner = budget.Condenser.within(budget_, unit, keep);
    } catch (e) {
      throw condenseError(e);
    }
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
export function condense(frame, budget_, options) {
  const condenser = new Condenser(budget_, options);
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
