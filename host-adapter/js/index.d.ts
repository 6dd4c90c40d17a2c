// Types for drainpipe-framer (index.js). Byte fields are Uint8Array views
// of the chunk pushed, or of the line the wrapper assembled: no copies.

/** The framer's limits, in bytes on the wire. */
export interface Limits {
  /** The longest message accepted, without its newline (default 4 MiB). */
  maxFrameBytes: number;
  /** The most JSON objects and arrays open at once (default 128). */
  maxDepth: number;
  /** Strict JSON and the envelope peek (default true). */
  validateJson: boolean;
}

/** 4 MiB per message, nesting depth 128, strict JSON. */
export declare const DEFAULT_LIMITS: Readonly<Limits>;

/** A JSON-RPC id as written: a number token, a string's raw contents, or null. */
export type RawId = { tag: 'number' | 'string'; raw: Uint8Array } | { tag: 'null' };

/** The routing fields peeked while a message streamed past. */
export interface Envelope {
  jsonrpc: Uint8Array | undefined;
  id: RawId | undefined;
  method: Uint8Array | undefined;
  hasResult: boolean;
  hasError: boolean;
}

export type JsonErrorKind = 'invalid-utf8' | 'control-in-string' | 'invalid-escape' | 'unexpected-byte'
  | 'invalid-number' | 'invalid-literal' | 'trailing-characters' | 'top-level-not-object' | 'depth-limit' | 'incomplete';

/** One thing the framer found (see `variant event` in wit/framer.wit). */
export type FramerEvent =
  | { tag: 'frame'; offset: number; bytes: Uint8Array; envelope: Envelope }
  | { tag: 'oversize'; offset: number; looksLikeJson: boolean; envelope: Envelope }
  | { tag: 'malformed'; offset: number; error: { kind: JsonErrorKind; at: number }; envelope: Envelope }
  | { tag: 'discarded'; offset: number; len: number; atEof: boolean; envelope: Envelope; wellFormed: boolean }
  | { tag: 'not-protocol'; offset: number; line: Uint8Array }
  | { tag: 'truncated'; offset: number; len: number; envelope: Envelope };

/** Counters since the framer was created or reset. */
export interface FramerStats {
  bytesIn: number;
  frames: number;
  largestFrame: number;
  oversize: number;
  oversizeBytesDropped: number;
  malformed: number;
  malformedBytesDropped: number;
  notProtocol: number;
  blankLines: number;
  truncated: number;
  bufferedHighWater: number;
}

/** A packed batch from the component (`record packed-batch` in the WIT). */
export interface PackedBatch {
  words: Uint32Array | ArrayLike<number>;
  join: number;
  keep: number;
  carried?: Uint8Array;
}

/** Words per event in a packed batch. */
export declare const EVENT_WORDS: 11;

/** Turns a typed WIT batch into events (views of `chunk` or of the batch's carried bytes). */
export declare function resolveBatch(batch: unknown, chunk: Uint8Array): FramerEvent[];

/** Turns a packed batch into events, checking every word. */
export declare function decodePacked(batch: { words: ArrayLike<number>; carried?: Uint8Array }, chunk: Uint8Array, line?: Uint8Array): FramerEvent[];

/** The host's side of `push-packed`: the unfinished line's bytes. */
export declare class HeldLine {
  receive(batch: PackedBatch, chunk: Uint8Array): FramerEvent[];
  readonly length: number;
  clear(): void;
}

/** An incremental framer for one stream. */
export declare class Framer {
  constructor(limits?: Partial<Limits>);
  /** The next chunk; the events it completed. */
  push(chunk: Uint8Array): FramerEvent[];
  /** Ends the stream; the final events. */
  finish(): FramerEvent[];
  pushTyped(chunk: Uint8Array): FramerEvent[];
  finishTyped(): FramerEvent[];
  pushPacked(chunk: Uint8Array): PackedBatch;
  pushBatch(chunk: Uint8Array): unknown;
  stats(): FramerStats;
  buffered(): number;
  reset(): void;
}

/**
 * The framer as a WHATWG TransformStream: Uint8Array (or ArrayBuffer)
 * chunks in, events out; `finish`'s events when the writable side closes.
 */
export declare class FramerStream extends TransformStream<Uint8Array | ArrayBuffer, FramerEvent> {
  constructor(limits?: Partial<Limits>, writableStrategy?: QueuingStrategy<Uint8Array | ArrayBuffer>, readableStrategy?: QueuingStrategy<FramerEvent>);
  stats(): FramerStats;
  buffered(): number;
}
