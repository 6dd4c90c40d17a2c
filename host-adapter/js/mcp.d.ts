// Types for drainpipe-framer/mcp (mcp.js). Structural: they match the
// TypeScript SDK's `Transport` (1.x `@modelcontextprotocol/sdk`, 2.x
// `@modelcontextprotocol/client`) without importing it, so an instance is
// accepted by `client.connect(...)` of either.
import type { IOType } from 'node:child_process';
import type { Stream, Writable } from 'node:stream';

/** A JSON-RPC message as the SDK passes it (its own types are structurally compatible). */
export type JSONRPCMessage = { jsonrpc: '2.0'; [key: string]: unknown };

/** JSON-RPC error code for a message over the transport limit. */
export declare const TOO_LARGE: -31001;
/** JSON-RPC error code for a server that ended (or closed stdout) without answering. */
export declare const SERVER_GONE: -31002;
/** JSON-RPC error code for a result over the `clip` budget that could not be condensed. */
export declare const OVER_BUDGET: -31003;
/** JSON-RPC's code for an unparseable message. */
export declare const PARSE_ERROR: -32700;

/** Waits of `close()`, in milliseconds. */
export interface ShutdownTimeouts {
  /** After stdin is closed, how long the server gets to exit on its own (2000). */
  afterCloseMs: number;
  /** After SIGTERM to its process group, how long before SIGKILL (1000). */
  afterTermMs: number;
  /** After SIGKILL, how long to wait for the exit and for stdout/stderr to end (2000). */
  afterKillMs: number;
}
export declare const DEFAULT_SHUTDOWN: Readonly<ShutdownTimeouts>;

/** How much of stderr is kept: the first `headBytes` and the last `tailBytes` (16 KiB each). */
export interface CaptureLimits {
  headBytes: number;
  tailBytes: number;
}
export declare const DEFAULT_STDERR_CAPTURE: Readonly<CaptureLimits>;
/** Bytes of stderr that may wait for a reader of the forwarded stream (1 MiB). */
export declare const DEFAULT_STDERR_STREAM_BYTES: number;

export declare const DEFAULT_INHERITED_ENV_VARS: string[];
export declare function getDefaultEnvironment(): Record<string, string>;

/** What `StdioClientTransport` takes, and the guard's own options. */
export interface GuardedStdioServerParameters {
  /** The executable to run. */
  command: string;
  /** Its arguments. */
  args?: string[];
  /** Added to the inherited default environment (`getDefaultEnvironment()`). */
  env?: Record<string, string>;
  /** Its working directory. */
  cwd?: string;
  /**
   * Where the server's stderr goes; it is captured (head and tail) in every
   * case but a file descriptor number. "inherit" (default): to this
   * process's stderr. "pipe" or "overlapped": the `stderr` stream. "ignore":
   * captured only. A writable stream: written to it. A number: that fd,
   * given to the child directly (not captured).
   */
  stderr?: IOType | Stream | Writable | number;
  /** The transport limit: the longest server message, in bytes on the wire (4 MiB). */
  maxFrameBytes?: number;
  /** JSON nesting depth limit (128). */
  maxDepth?: number;
  /**
   * Content budget in bytes (at least 3496): a tools/call result larger than
   * this, even over `maxFrameBytes`, is condensed into a valid result marked
   * truncated (`_meta["io.drainpipe/truncated"]`), as `drainpipe proxy --clip`.
   */
  clip?: number;
  /** Waits of `close()`. */
  shutdown?: Partial<ShutdownTimeouts>;
  /** How much stderr is kept. */
  stderrCapture?: Partial<CaptureLimits>;
  /** Bound on stderr waiting in the forwarded stream; past it chunks are dropped and counted. */
  stderrStreamBytes?: number;
  /** Where stray stdout lines and the guard's notes go (default: this process's stderr, prefixed "drainpipe: "). */
  log?: (line: string) => void;
}

/** How the server ended in `close()`. */
export type Ending = 'exited' | 'terminated' | 'killed' | 'unreaped';

/** `metrics()`: counters since `start()`. */
export interface TransportMetrics {
  /** Bytes read from stdout. */
  stdoutBytes: number;
  /** Complete messages framed, and the largest of them in bytes. */
  frames: number;
  largestFrame: number;
  /** Messages handed to `onmessage` (errors synthesized included). */
  delivered: number;
  /** Lines over the limit, rejected lines ended (`discarded`) and their bytes. */
  oversize: number;
  discarded: number;
  discardedBytes: number;
  /** Lines that looked like JSON but were not valid. */
  malformed: number;
  /** Lines that were not protocol (logged, never delivered). */
  strayLines: number;
  /** Streams that ended inside a line. */
  truncated: number;
  /** Messages neither request, notification nor response (dropped). */
  unroutable: number;
  /** Responses for ids no request waited for (cancelled, or answered already): dropped. */
  lateResponses: number;
  /** JSON-RPC errors synthesized for requests, and how many by elimination (one request waiting, id unreadable). */
  errorsSent: number;
  answeredAsSole: number;
  /** Results condensed for `clip`, and results that could not be. */
  condensed: number;
  condenseFailures: number;
  /** Messages and bytes written to stdin; cancellations among them. */
  messagesSent: number;
  bytesSent: number;
  cancellationsSent: number;
  /** Requests waiting for an answer. */
  pending: number;
  /** The most bytes held for an unfinished line (at most `maxFrameBytes`). */
  bufferedHighWater: number;
  blankLines: number;
  maxFrameBytes: number;
  /** Stderr bytes and newlines seen, and dropped from the capture. */
  stderrBytes: number;
  stderrLines: number;
  stderrDroppedBytes: number;
  stderrDroppedLines: number;
  /** Stderr bytes not forwarded because the reader fell behind. */
  stderrForwardDropped: number;
  /** Signals sent to the group, and whether leftovers were killed after the server exited. */
  sigterm: number;
  sigkill: number;
  leftoversKilled: boolean;
  /** How the server ended, its exit code or signal, how long close() took. */
  ending: Ending | null;
  exitCode: number | null;
  exitSignal: string | null;
  closeMs: number | null;
}

/** The server's stderr: head, tail, and what was dropped between them. */
export interface StderrCapture {
  head: string;
  tail: string;
  bytes: number;
  lines: number;
  droppedBytes: number;
  droppedLines: number;
  /** Head, a line saying what was dropped, tail. */
  text: string;
}

/**
 * The SDK's `StdioClientTransport` with drainpipe's guarantees: a server's
 * oversize or malformed answer fails that request, never the session.
 */
export declare class GuardedStdioClientTransport {
  constructor(server: GuardedStdioServerParameters);
  onmessage?: ((message: JSONRPCMessage, extra?: unknown) => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onclose?: (() => void) | undefined;
  sessionId?: string | undefined;
  /** Starts the server in its own process group. */
  start(): Promise<void>;
  /** Writes one message; rejects with "Not connected" once closed. */
  send(message: JSONRPCMessage, options?: unknown): Promise<void>;
  /** stdin closed, wait, SIGTERM to the group, wait, SIGKILL; then `onclose`. Idempotent. */
  close(): Promise<void>;
  /** The server's stderr when `stderr` is "pipe" or "overlapped" (available before start). */
  readonly stderr: Stream | null;
  /** The server's pid (its process group id); null before start and after close. */
  readonly pid: number | null;
  readonly maxFrameBytes: number;
  metrics(): TransportMetrics;
  stderrCapture(): StderrCapture;
}

/** Keeps the first and last bytes of a stream, counting what is dropped between. */
export declare class HeadTailCapture {
  constructor(limits?: CaptureLimits);
  write(chunk: Uint8Array): void;
  snapshot(): Omit<StderrCapture, 'text'>;
  render(): string;
}

/** Live (not zombie) processes of a process group: pids on Linux, else [pgid] or []. */
export declare function groupProcesses(pgid: number): number[];
