// Types for drainpipe-framer/budget (budget.js).

/** The smallest budget the condenser works in, in bytes. */
export declare const MIN_CONDENSE_BUDGET: 3256;

/**
 * Condenses one response line, fed in pieces, into a valid response of at
 * most `budgetBytes` bytes. Errors are thrown with the WIT `condense-error`
 * ({ tag, val }) as `cause`.
 */
export declare class Condenser {
  constructor(budgetBytes: number);
  feed(piece: Uint8Array): void;
  /** The condensed frame (no newline), or null when nothing had to be cut. */
  finish(): Uint8Array | null;
}

/** Condenses a whole frame; null when it fits. */
export declare function condense(frame: Uint8Array, budgetBytes: number): Uint8Array | null;

/** Keeps the head and tail of a stream within a byte budget, counting the rest. */
export declare class Capture {
  constructor(budgetBytes: number, headBytes?: number);
  write(chunk: Uint8Array): void;
  report(): { seen: number; kept: number; dropped: number; truncated: boolean };
  head(): Uint8Array;
  tail(): Uint8Array;
  render(): string;
}
