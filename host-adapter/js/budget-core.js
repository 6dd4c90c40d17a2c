// The result budget's JavaScript side, bound to one instance of the
// component's `budget` interface: budget.js binds it to the instance jco's
// default output loads, the edge entry (edge/) to one it instantiates from
// statically imported core modules. One implementation of the units and of
// the caller's count, however the component was loaded.

/** The smallest budget the condenser works in, in bytes. */
export const MIN_CONDENSE_BUDGET = 3496;

/**
 * `{ Condenser, condense, Capture }` (documented in budget.d.ts) over
 * `budget`, the component's `budget` interface as jco exports it.
 */
export function bindBudget(budget) {
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
   * cut text keeping its beginning. `new Condenser(amount, { unit, keep,
   * count })`: `unit` is 'bytes' (the default), 'chars' (UTF-16 code units,
   * as `String.length` counts them, of the texts a host shows the model) or
   * 'tokens' (of the same, counted by `count(text) => number`, your
   * tokenizer: the component carries none; without `count` the result is the
   * amount in bytes, within the amount by any byte-level tokenizer); `keep`
   * is 'ends' (the default: a cut text's beginning and end, with a mark
   * between saying how many bytes were left out and from which byte), 'head'
   * or 'tail'.
   *
   * `finish()` returns the condensed frame (no newline), or `null` when
   * nothing had to be cut (send the original). Errors are thrown with the WIT
   * `condense-error` ({ tag, val }) as `cause`.
   */
  class Condenser {
    #inner;
    #count;
    #amount;

    constructor(budget_, options) {
      if (options === undefined) {
        this.#inner = new budget.Condenser(budget_);
        return;
      }
      const { unit = 'bytes', keep = 'ends', count } = options;
      if (count !== undefined && typeof count !== 'function') {
        throw new TypeError('count must be a function (text) => number');
      }
      if (unit === 'tokens' && count) {
        this.#count = count;
        this.#amount = budget_;
      }
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
        out = this.#count ? this.#takeCounted() : this.#inner.finish();
      } catch (e) {
        throw condenseError(e);
      }
      return out.tag === 'cut' ? out.val : null;
    }

    // The largest result whose shown texts `count` puts within the amount
    // (see `condenser.candidates` in the WIT), else the amount in bytes.
    #takeCounted() {
      const count = this.#count;
      const fits = (c) => {
        let texts = 0;
        for (const text of c.texts) texts += count(text);
        const structured = c.structured === undefined ? 0 : count(c.structured);
        return Math.max(texts, structured) + c.toCome <= this.#amount;
      };
      const chosen = this.#inner.candidates().find(fits);
      return this.#inner.take(chosen ? chosen.rung : 0);
    }
  }

  /** Condenses a whole frame: `Condenser` fed once. */
  function condense(frame, budget_, options) {
    const condenser = new Condenser(budget_, options);
    condenser.feed(frame);
    return condenser.finish();
  }

  /** Keeps the head and tail of a stream within a byte budget, counting the rest. */
  class Capture {
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

  return { Condenser, condense, Capture };
}
