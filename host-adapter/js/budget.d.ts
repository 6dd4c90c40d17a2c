// Types for drainpipe-framer/budget (budget.js).

/** The smallest budget the condenser works in, in bytes. */
export declare const MIN_CONDENSE_BUDGET: 3496;

/** How to condense: the budget's unit and what a cut text keeps. */
export interface CondenseOptions {
  /** 'bytes' of the whole response (the default), 'chars': UTF-16 code
   * units of the texts a host shows the model, or 'tokens' of the same,
   * counted by `count`. */
  unit?: 'bytes' | 'chars' | 'tokens';
  /** 'ends' (the default), 'head' or 'tail'. */
  keep?: 'head' | 'tail' | 'ends';
  /** Tokens of `text` by your tokenizer, for unit 'tokens' (the component
   * carries none). Without it, a budget in tokens gives the amount in
   * bytes, within the amount by any byte-level tokenizer. */
  count?: (text: string) => number;
}

/**
 * Condenses one response line, fed in pieces, into a valid response within
 * `budget`: bytes (each cut text keeping its beginning) without options,
 * else in `options.unit`, keeping `options.keep`. Errors are thrown with the
 * WIT `condense-error` ({ tag, val }) as `cause`.
 */
export declare class Condenser {
  constructor(budget: number, options?: CondenseOptions);
  feed(piece: Uint8Array): void;
  /** The condensed frame (no newline), or null when nothing had to be cut. */
  finish(): Uint8Array | null;
}

/** Condenses a whole frame; null when it fits. */
export declare function condense(frame: Uint8Array, budget: number, options?: CondenseOptions): Uint8Array | null;

/** Keeps the head and tail of a stream within a byte budget, counting the rest. */
export declare class Capture {
  constructor(budgetBytes: number, headBytes?: number);
  write(chunk: Uint8Array): void;
  report(): { seen: number; kept: number; dropped: number; truncated: boolean };
  head(): Uint8Array;
  tail(): Uint8Array;
  render(): string;
}
