/** JSON-RPC error code for a message over the transport limit. */
export const TOO_LARGE: -31001;
/** JSON-RPC error code for a result over the budget that could not be condensed. */
export const OVER_BUDGET: -31003;
/** The default transport limit, in bytes of one event's data on the wire. */
export const DEFAULT_MAX_EVENT_BYTES: number;
/** The longest request body the example worker reads to learn its id. */
export const MAX_REQUEST_BYTES: number;

/** The request a POST carried: its id as JSON text, and its method. */
export interface CarriedRequest {
  id?: string;
  method?: string;
}

export function peekRequest(body: string | Uint8Array): CarriedRequest;

export interface GuardOptions {
  /** `text/event-stream` (true, the default) or one `application/json` answer. */
  sse?: boolean;
  /** The request the POST carried (`peekRequest`): the id an answer dropped before its own id is failed with, and whether it is a tools/call. */
  request?: CarriedRequest;
  /** The transport limit: bytes of one event's data on the wire, checked before any parse (default 4 MiB). */
  maxEventBytes?: number;
  /** The budget of a tools/call result, in `unit`s (at least 3496 bytes). */
  clip?: number;
  unit?: 'bytes' | 'chars' | 'tokens';
  keep?: 'head' | 'tail' | 'ends';
  /** Your tokenizer, for `unit: 'tokens'`. */
  count?: (text: string) => number;
  /** Nesting depth the validator accepts (default 128). */
  maxDepth?: number;
  /** Given one line for each answer the guard changed. */
  log?: (line: string) => void;
}

export interface GuardStats {
  events: number;
  condensed: number;
  failed: number;
  dropped: number;
  bytesIn: number;
  largestEvent: number;
}

/** The guard of one MCP answer body: bytes in, bytes out. */
export class GuardStream extends TransformStream<Uint8Array | ArrayBuffer, Uint8Array> {
  constructor(options?: GuardOptions);
  readonly stats: GuardStats;
}

/** `response` with an SSE or JSON body guarded; any other response as it is. */
export function guardResponse(response: Response, options?: Omit<GuardOptions, 'sse'>): Response;
