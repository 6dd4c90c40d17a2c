// A stdio client transport for MCP hosts on the official TypeScript SDK (1.x
// `@modelcontextprotocol/sdk`, 2.x `@modelcontextprotocol/client`) that keeps
// the session alive whatever the server writes: every byte of its stdout goes
// through the drainpipe framer, whose byte limit is checked before anything
// is parsed.
//
//   import { GuardedStdioClientTransport } from 'drainpipe-framer/mcp';
//   await client.connect(new GuardedStdioClientTransport({ command: 'my-server', args: [] }));
//
// The SDK's `Transport` is duck-typed: nothing here imports the SDK.
//
//   stdout ──► framer (limit first) ──► frame ──────► JSON.parse ──► onmessage
//     (never paused)                  ├ oversize / malformed ──► an error for that request id ──► onmessage
//                                     └ not protocol ──► log
//   stderr ──► head + tail capture (bounded), and forwarded (inherit, pipe, a stream)
//   close(): stdin closed, wait, SIGTERM to the group, wait, SIGKILL to the group
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { PassThrough } from 'node:stream';

import { DEFAULT_LIMITS, Framer } from './index.js';

// drainpipe's own codes, the Rust crate's table (README, "Error codes"):
// outside JSON-RPC's reserved -32768..-32000, so none borrows a meaning
// that JSON-RPC, MCP or the SDKs gave a code. Each error with one carries
// `data.drainpipe.reason` and, where known, the limit in bytes.
/** JSON-RPC error code for a message over the transport limit (as the Rust proxy). */
export const TOO_LARGE = -31001;
/** JSON-RPC error code for a server that ended without answering. */
export const SERVER_GONE = -31002;
/** JSON-RPC error code for a result over the `clip` budget that could not be condensed. */
export const OVER_BUDGET = -31003;
const REASONS = new Map([[TOO_LARGE, 'too-large'], [SERVER_GONE, 'server-gone'], [OVER_BUDGET, 'over-budget']]);
/** JSON-RPC's code for an unparseable message. */
export const PARSE_ERROR = -32700;

/**
 * The shutdown waits of `close()`, in milliseconds (the Rust session's
 * defaults): after stdin is closed, how long the server gets to exit on its
 * own; after SIGTERM to its group, how long before SIGKILL; after SIGKILL,
 * how long to wait for the exit and for stdout and stderr to end.
 */
export const DEFAULT_SHUTDOWN = Object.freeze({ afterCloseMs: 2000, afterTermMs: 1000, afterKillMs: 2000 });

/** How much of the server's stderr is kept: the first and the last bytes. */
export const DEFAULT_STDERR_CAPTURE = Object.freeze({ headBytes: 16 << 10, tailBytes: 16 << 10 });

/**
 * Bytes of stderr that may wait in the `stderr` stream (or the stream given
 * as `stderr`) for a reader; past it chunks are dropped and counted, so a
 * reader that stopped never stalls the server.
 */
export const DEFAULT_STDERR_STREAM_BYTES = 1 << 20;

/** Environment variables inherited when `env` does not replace them (as the SDK). */
export const DEFAULT_INHERITED_ENV_VARS = process.platform === 'win32'
  ? ['APPDATA', 'COMSPEC', 'HOMEDRIVE', 'HOMEPATH', 'LOCALAPPDATA', 'PATH', 'PATHEXT', 'PROCESSOR_ARCHITECTURE',
    'PROGRAMDATA', 'PROGRAMFILES', 'PROGRAMFILES(X86)', 'PROGRAMW6432', 'SYSTEMDRIVE', 'SYSTEMROOT', 'TEMP',
    'USERNAME', 'USERPROFILE', 'WINDIR']
  : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER'];

/** The inherited part of the server's environment (shell functions left out). */
export function getDefaultEnvironment() {
  const env = {};
  for (const key of DEFAULT_INHERITED_ENV_VARS) {
    const value = process.env[key];
    if (value !== undefined && !value.startsWith('()')) env[key] = value;
  }
  return env;
}

const GROUPS = process.platform !== 'win32';

/**
 * The live processes of process group `pgid`: on Linux their pids, read
 * from /proc (zombies, which are dead but not yet reaped, left out); on
 * other POSIX systems `[pgid]` if a signal can reach the group, else `[]`.
 * Always `[]` on Windows, which has no process groups.
 */
export function groupProcesses(pgid) {
  if (!GROUPS) return [];
  if (process.platform === 'linux') {
    const found = [];
    let entries;
    try {
      entries = readdirSync('/proc');
    } catch {
      entries = null;
    }
    if (entries) {
      for (const name of entries) {
        if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
        let stat;
        try {
          stat = readFileSync(`/proc/${name}/stat`, 'latin1');
        } catch {
          continue; // gone meanwhile
        }
        // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') found.push(Number(name));
      }
      return found;
    }
  }
  try {
    process.kill(-pgid, 0);
    return [pgid];
  } catch (error) {
    return error.code === 'EPERM' ? [pgid] : [];
  }
}
const NEWLINE = 10;

const countNewlines = (bytes) => {
  let n = 0;
  for (let at = bytes.indexOf(NEWLINE); at >= 0; at = bytes.indexOf(NEWLINE, at + 1)) n++;
  return n;
};

/**
 * The first `headBytes` and the last `tailBytes` of a stream; everything in
 * between is counted (bytes and lines), not kept.
 */
export class HeadTailCapture {
  #headBytes;
  #tailBytes;
  #head = [];
  #headLen = 0;
  #tail = [];
  #tailLen = 0;
  #bytes = 0;
  #lines = 0;
  #droppedBytes = 0;
  #droppedLines = 0;

  constructor({ headBytes, tailBytes } = DEFAULT_STDERR_CAPTURE) {
    this.#headBytes = headBytes;
    this.#tailBytes = tailBytes;
  }

  /** Takes the next chunk (a Uint8Array). */
  write(chunk) {
    this.#bytes += chunk.length;
    this.#lines += countNewlines(chunk);
    const toHead = Math.min(chunk.length, this.#headBytes - this.#headLen);
    if (toHead > 0) {
      this.#head.push(chunk.slice(0, toHead));
      this.#headLen += toHead;
    }
    if (toHead === chunk.length) return;
    this.#tail.push(chunk.subarray(toHead));
    this.#tailLen += chunk.length - toHead;
    while (this.#tailLen > this.#tailBytes) {
      const first = this.#tail[0];
      const excess = this.#tailLen - this.#tailBytes;
      const gone = excess >= first.length ? this.#tail.shift() : first.subarray(0, excess);
      if (gone !== first) this.#tail[0] = first.slice(excess);
      this.#tailLen -= gone.length;
      this.#droppedBytes += gone.length;
      this.#droppedLines += countNewlines(gone);
    }
  }

  /**
   * What is kept and what was dropped: `head` and `tail` as text (a
   * character cut at a boundary shows as U+FFFD), `bytes` and `lines` seen
   * (lines: newlines), `droppedBytes` and `droppedLines` (newlines in the
   * dropped part).
   */
  snapshot() {
    const text = (parts) => new TextDecoder().decode(Buffer.concat(parts));
    return {
      head: text(this.#head),
      tail: text(this.#tail),
      bytes: this.#bytes,
      lines: this.#lines,
      droppedBytes: this.#droppedBytes,
      droppedLines: this.#droppedLines,
    };
  }

  /** Head, a line saying what was dropped (if anything), tail. */
  render() {
    const s = this.snapshot();
    if (s.droppedBytes === 0) return s.head + s.tail;
    return `${s.head}\n[… ${s.droppedBytes} bytes (${s.droppedLines} newlines) dropped …]\n${s.tail}`;
  }
}

/**
 * The line that crosses reads, for `clip`: held while it is under the budget
 * (never more than the budget), then fed to a condenser as it streams, so a
 * result over the transport limit can still be condensed. The outcome waits,
 * by the line's stream offset, for the framer's event for that line (only
 * then is it known to be a tools/call result: the TypeScript SDK writes the
 * id last).
 */
class LineTap {
  #budget;
  #Condenser;
  #lineStart = 0;
  #held = [];
  #heldLen = 0;
  #condenser = null;
  #failed = null;
  #finished = null;

  constructor(budget, Condenser) {
    this.#budget = budget;
    this.#Condenser = Condenser;
  }

  /** Takes the chunk read at stream offset `at`. */
  push(chunk, at) {
    const first = chunk.indexOf(NEWLINE);
    if (first < 0) {
      this.#extend(chunk);
      return;
    }
    this.#extend(chunk.subarray(0, first));
    this.#finished = this.#condenser ? { offset: this.#lineStart, outcome: this.#finish() } : null;
    this.#condenser = null;
    this.#failed = null;
    this.#held = [];
    this.#heldLen = 0;
    const last = chunk.lastIndexOf(NEWLINE);
    this.#lineStart = at + last + 1;
    this.#extend(chunk.subarray(last + 1));
  }

  #extend(bytes) {
    if (bytes.length === 0) return;
    if (this.#condenser) {
      this.#feed(bytes);
      return;
    }
    if (this.#heldLen + bytes.length <= this.#budget) {
      this.#held.push(bytes.slice());
      this.#heldLen += bytes.length;
      return;
    }
    this.#condenser = new this.#Condenser(this.#budget);
    for (const piece of this.#held) this.#feed(piece);
    this.#feed(bytes);
    this.#held = [];
    this.#heldLen = 0;
  }

  #feed(bytes) {
    if (this.#failed) return;
    try {
      this.#condenser.feed(bytes);
    } catch (error) {
      this.#failed = error;
    }
  }

  #finish() {
    if (this.#failed) return { error: this.#failed };
    try {
      const cut = this.#condenser.finish();
      return cut === null ? { unchanged: true } : { cut };
    } catch (error) {
      return { error };
    }
  }

  /** The outcome for the line at `offset`, if it crossed reads and passed the budget. */
  take(offset) {
    if (this.#finished?.offset !== offset) return undefined;
    const { outcome } = this.#finished;
    this.#finished = null;
    return outcome;
  }
}

const condenseWhole = (Condenser, bytes, budget) => {
  try {
    const condenser = new Condenser(budget);
    condenser.feed(bytes);
    const cut = condenser.finish();
    return cut === null ? { unchanged: true } : { cut };
  } catch (error) {
    return { error };
  }
};

/** A request id as a map key: numbers and strings by value. */
const keyOfValue = (id) => (typeof id === 'number' ? `n:${id}` : typeof id === 'string' ? `s:${id}` : undefined);

/** The same key from the framer's raw id bytes (as written, escapes not decoded). */
const keyOfRaw = (id, decoder) => {
  if (!id || id.tag === 'null') return undefined;
  const raw = decoder.decode(id.raw);
  try {
    return id.tag === 'number' ? `n:${Number(raw)}` : `s:${JSON.parse(`"${raw}"`)}`;
  } catch {
    return undefined;
  }
};

const mib = (bytes) => (bytes % (1 << 20) === 0 ? `${bytes >> 20} MiB` : `${(bytes / (1 << 20)).toFixed(1)} MiB`);

const wait = (promise, ms) => new Promise((resolve) => {
  const timer = setTimeout(() => resolve(false), ms);
  promise.then(() => {
    clearTimeout(timer);
    resolve(true);
  });
});

const deferred = () => {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
};

// Servers still running when this process exits get SIGTERM to their group
// (nothing can be awaited in an `exit` handler; a well-behaved server has
// already seen stdin close).
const live = new Set();
let exitHookInstalled = false;
const installExitHook = () => {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const pid of live) {
      try {
        process.kill(GROUPS ? -pid : pid, 'SIGTERM');
      } catch { /* already gone */ }
    }
  });
};

/**
 * The SDK's `StdioClientTransport`, guarded: see README.md and mcp.d.ts.
 */
export class GuardedStdioClientTransport {
  /** @type {((message: object, extra?: object) => void) | undefined} */
  onmessage;
  /** @type {((error: Error) => void) | undefined} */
  onerror;
  /** @type {(() => void) | undefined} */
  onclose;

  #params;
  #limit;
  #clip;
  #shutdownMs;
  #log;
  #stderrMode;
  #stderrStream = null;
  #stderrStreamBytes;
  #capture;
  #framer;
  #tap = null;
  #Condenser = null;
  #decoder = new TextDecoder();
  #child;
  #pid = null;
  #started = false;
  #closing = null;
  #closed = false;
  #finalized = false;
  #stdoutDone = false;
  #drainArmed = false;
  #exited = deferred();
  #stdoutEnded = deferred();
  #stderrEnded = deferred();
  #pending = new Map();
  #watch = new Map();
  #sendWaiters = new Set();
  #chunk = null;
  #chunkAt = 0;
  #m = {
    stdoutBytes: 0, frames: 0, largestFrame: 0, delivered: 0, oversize: 0, discarded: 0, discardedBytes: 0,
    malformed: 0, strayLines: 0, truncated: 0, unroutable: 0, lateResponses: 0, errorsSent: 0, answeredAsSole: 0,
    condensed: 0, condenseFailures: 0, messagesSent: 0, bytesSent: 0, cancellationsSent: 0,
    stderrForwardDropped: 0, sigterm: 0, sigkill: 0, leftoversKilled: false,
    ending: null, exitCode: null, exitSignal: null, closeMs: null,
  };

  /**
   * @param {object} server `command`, `args`, `env`, `cwd`, `stderr` as for
   *   the SDK's `StdioClientTransport`, and `maxFrameBytes`, `maxDepth`,
   *   `clip`, `shutdown`, `stderrCapture`, `stderrStreamBytes`, `log`
   *   (see mcp.d.ts).
   */
  constructor(server) {
    if (!server || typeof server.command !== 'string') throw new TypeError('GuardedStdioClientTransport needs a command');
    this.#params = server;
    this.#limit = server.maxFrameBytes ?? DEFAULT_LIMITS.maxFrameBytes;
    if (!Number.isInteger(this.#limit) || this.#limit < 1 || this.#limit > 0xffffffff) {
      throw new RangeError(`maxFrameBytes must be an integer from 1 to 2^32-1, not ${server.maxFrameBytes}`);
    }
    this.#framer = new Framer({ maxFrameBytes: this.#limit, maxDepth: server.maxDepth ?? DEFAULT_LIMITS.maxDepth });
    if (server.clip !== undefined) {
      // The budget component's smallest budget (budget.js MIN_CONDENSE_BUDGET),
      // checked here without loading that component yet.
      if (!Number.isInteger(server.clip) || server.clip < 3496) {
        throw new RangeError(`clip must be an integer of at least 3496 bytes, not ${server.clip}`);
      }
      this.#clip = server.clip;
    }
    this.#shutdownMs = { ...DEFAULT_SHUTDOWN, ...server.shutdown };
    this.#log = server.log ?? ((line) => process.stderr.write(`drainpipe: ${line}\n`));
    this.#capture = new HeadTailCapture({ ...DEFAULT_STDERR_CAPTURE, ...server.stderrCapture });
    this.#stderrStreamBytes = server.stderrStreamBytes ?? DEFAULT_STDERR_STREAM_BYTES;
    const mode = server.stderr ?? 'inherit';
    this.#stderrMode = mode;
    if (mode === 'pipe' || mode === 'overlapped') this.#stderrStream = new PassThrough();
  }

  /** The server's stderr as a stream when `stderr` is "pipe" (available before `start`), else null. */
  get stderr() {
    return this.#stderrStream;
  }

  /** The server's pid (also its process group id) once started; null before and after. */
  get pid() {
    return this.#closed ? null : this.#pid;
  }

  /** The transport limit in bytes. */
  get maxFrameBytes() {
    return this.#limit;
  }

  /** Starts the server in its own process group. */
  async start() {
    if (this.#started) {
      throw new Error('GuardedStdioClientTransport already started! If using Client class, note that connect() calls start() automatically.');
    }
    this.#started = true;
    if (this.#clip !== undefined) {
      ({ Condenser: this.#Condenser } = await import('./budget.js'));
      this.#tap = new LineTap(this.#clip, this.#Condenser);
    }
    const { command, args = [], env, cwd } = this.#params;
    const stderrFd = typeof this.#stderrMode === 'number' ? this.#stderrMode : 'pipe';
    return new Promise((resolve, reject) => {
      let spawned = false;
      const child = spawn(command, args, {
        env: { ...getDefaultEnvironment(), ...env },
        cwd,
        stdio: ['pipe', 'pipe', stderrFd],
        shell: false,
        windowsHide: true,
        detached: GROUPS,
      });
      this.#child = child;
      child.on('error', (error) => {
        if (!spawned) {
          this.#closed = true;
          this.#stdoutEnded.resolve();
          this.#stderrEnded.resolve();
          this.#exited.resolve();
          reject(error);
        }
        this.onerror?.(error);
      });
      child.on('spawn', () => {
        spawned = true;
        this.#pid = child.pid;
        live.add(child.pid);
        installExitHook();
        resolve();
      });
      child.on('exit', (code, signal) => {
        this.#m.exitCode = code;
        this.#m.exitSignal = signal;
        live.delete(child.pid);
        this.#exited.resolve();
        if (spawned) this.close().catch((error) => this.onerror?.(error));
      });
      child.stdin.on('error', (error) => {
        if (!this.#closing) this.onerror?.(error);
      });
      child.stdout.on('data', (chunk) => this.#onStdout(chunk));
      child.stdout.on('error', (error) => this.onerror?.(error));
      child.stdout.on('close', () => this.#onStdoutEnd());
      if (child.stderr) {
        child.stderr.on('data', (chunk) => this.#onStderr(chunk));
        child.stderr.on('error', () => {});
        child.stderr.on('close', () => {
          this.#stderrStream?.end();
          this.#stderrEnded.resolve();
        });
      } else {
        this.#stderrEnded.resolve();
      }
    });
  }

  /**
   * Writes one message. Resolves once it is written to the pipe (or
   * buffered below the pipe's high-water mark); rejects if the transport
   * is not connected, or closes while it waits.
   */
  async send(message, _options) {
    const child = this.#child;
    if (!child || this.#closing || this.#closed || !child.stdin.writable) throw new Error('Not connected');
    const line = `${JSON.stringify(message)}\n`;
    if (message.method !== undefined && message.id !== undefined) {
      const key = keyOfValue(message.id);
      if (key !== undefined) this.#pending.set(key, { id: message.id, toolCall: message.method === 'tools/call' });
    } else if (message.method === 'notifications/cancelled') {
      // The server need not answer a cancelled request: stop waiting, and
      // drop its answer if one comes.
      this.#m.cancellationsSent++;
      const key = keyOfValue(message.params?.requestId);
      if (key !== undefined) this.#pending.delete(key);
    }
    this.#m.messagesSent++;
    this.#m.bytesSent += Buffer.byteLength(line);
    if (child.stdin.write(line)) return;
    // The pipe is full (a server that does not read): wait for it to drain,
    // as the SDK does; `close()` ends the wait.
    await new Promise((resolve, reject) => {
      this.#sendWaiters.add({ resolve, reject });
      if (this.#drainArmed) return;
      this.#drainArmed = true;
      child.stdin.once('drain', () => {
        this.#drainArmed = false;
        for (const waiter of this.#sendWaiters) waiter.resolve();
        this.#sendWaiters.clear();
      });
    });
  }

  /**
   * Shuts the server down in the order of the MCP spec's stdio shutdown:
   * closes its stdin, waits `shutdown.afterCloseMs`, sends SIGTERM to its
   * process group, waits `shutdown.afterTermMs`, sends SIGKILL to the group
   * and waits up to `shutdown.afterKillMs`. Processes of the group still
   * alive once the server has gone get SIGKILL. Then waits (at most
   * `afterKillMs`) for stdout and stderr to end, frames what is left, and
   * calls `onclose` once. Idempotent; also runs when the server exits or
   * closes its stdout on its own.
   */
  close() {
    if (!this.#closing) this.#closing = this.#shutdown();
    return this.#closing;
  }

  async #shutdown() {
    const child = this.#child;
    const started = Date.now();
    if (!child || this.#closed) return;
    const { afterCloseMs, afterTermMs, afterKillMs } = this.#shutdownMs;
    const gone = () => child.exitCode !== null || child.signalCode !== null;
    try {
      child.stdin.end();
    } catch { /* already closed */ }
    if (gone() || await wait(this.#exited.promise, afterCloseMs)) {
      this.#m.ending ??= 'exited';
    } else {
      this.#signal('SIGTERM');
      this.#m.sigterm++;
      if (await wait(this.#exited.promise, afterTermMs)) {
        this.#m.ending = 'terminated';
      } else {
        this.#signal('SIGKILL');
        this.#m.sigkill++;
        this.#m.ending = await wait(this.#exited.promise, afterKillMs) ? 'killed' : 'unreaped';
      }
    }
    if (this.#groupAlive()) {
      // Children the server left behind (or that outlived a signal to the leader).
      this.#m.leftoversKilled = true;
      this.#signal('SIGKILL');
      this.#m.sigkill++;
    }
    const drained = await wait(Promise.all([this.#stdoutEnded.promise, this.#stderrEnded.promise]), afterKillMs);
    if (!drained) {
      // A process outside the group holds the pipes open.
      child.stdout.destroy();
      child.stderr?.destroy();
      this.#onStdoutEnd();
    }
    this.#m.closeMs = Date.now() - started;
    this.#finalize();
  }

  #signal(name) {
    try {
      if (GROUPS) process.kill(-this.#pid, name);
      else this.#child.kill(name);
    } catch { /* the group is gone */ }
  }

  #groupAlive() {
    return this.#pid !== null && groupProcesses(this.#pid).length > 0;
  }

  #finalize() {
    if (this.#finalized) return;
    this.#finalized = true;
    this.#closed = true;
    this.#failPending('the server closed the connection before answering');
    for (const { reject } of this.#sendWaiters) reject(new Error('Not connected'));
    this.#sendWaiters.clear();
    if (this.#pid !== null) live.delete(this.#pid);
    this.onclose?.();
  }

  /**
   * Counters since `start` (see mcp.d.ts `TransportMetrics`): stdout bytes,
   * frames, the largest frame, oversize/discarded/malformed lines, stray
   * lines, synthesized errors, stderr bytes and lines (kept and dropped),
   * signals sent and how the server ended.
   */
  metrics() {
    const stderr = this.#capture.snapshot();
    const framer = this.#framer.stats();
    return {
      ...this.#m,
      maxFrameBytes: this.#limit,
      bufferedHighWater: framer.bufferedHighWater,
      blankLines: framer.blankLines,
      pending: this.#pending.size,
      stderrBytes: stderr.bytes,
      stderrLines: stderr.lines,
      stderrDroppedBytes: stderr.droppedBytes,
      stderrDroppedLines: stderr.droppedLines,
    };
  }

  /** The server's stderr so far: head and tail text and what was dropped between them. */
  stderrCapture() {
    return { ...this.#capture.snapshot(), text: this.#capture.render() };
  }

  // --- stdout -----------------------------------------------------------

  #onStdout(chunk) {
    const at = this.#m.stdoutBytes;
    this.#m.stdoutBytes += chunk.length;
    this.#tap?.push(chunk, at);
    this.#chunk = chunk;
    this.#chunkAt = at;
    let events;
    try {
      events = this.#framer.push(chunk);
    } catch (error) {
      // Only a broken component gets here: the stream cannot be trusted.
      this.onerror?.(error);
      this.close().catch(() => {});
      return;
    }
    for (const event of events) this.#route(event);
    this.#chunk = null;
  }

  #onStdoutEnd() {
    if (this.#stdoutDone) return;
    this.#stdoutDone = true;
    let events = [];
    try {
      events = this.#framer.finish();
    } catch (error) {
      this.onerror?.(error);
    }
    for (const event of events) this.#route(event);
    this.#failPending('the server closed its stdout before answering');
    this.#stdoutEnded.resolve();
    // No answer can come any more: shut the server down.
    this.close().catch((error) => this.onerror?.(error));
  }

  #route(event) {
    const m = this.#m;
    switch (event.tag) {
      case 'frame':
        this.#frame(event);
        break;
      case 'oversize': {
        m.oversize++;
        const what = `the server's message at stream offset ${event.offset} is over the transport limit of ${this.#limit} bytes (${mib(this.#limit)})`;
        const env = event.envelope;
        if (!event.looksLikeJson) {
          m.strayLines++;
          this.#log(`not protocol, over the transport limit (offset ${event.offset}): discarded`);
          break;
        }
        const condensing = this.#clip !== undefined && env.method === undefined && !env.hasError;
        if (condensing) this.#watch.set(event.offset, { code: TOO_LARGE, what, condensing });
        else this.#rejectOrWait(event.offset, env, TOO_LARGE, what);
        break;
      }
      case 'malformed': {
        m.malformed++;
        const what = `the server's message at stream offset ${event.offset} is not valid JSON (${event.error.kind} at byte ${event.error.at})`;
        this.#rejectOrWait(event.offset, event.envelope, PARSE_ERROR, what);
        break;
      }
      case 'discarded': {
        m.discarded++;
        m.discardedBytes += event.len;
        const waiting = this.#watch.get(event.offset);
        if (!waiting) break;
        this.#watch.delete(event.offset);
        const what = `${waiting.what}; ${event.len} bytes in all, discarded unparsed`;
        if (waiting.condensing && event.wellFormed) {
          const outcome = this.#tap.take(event.offset) ?? this.#condenseInChunk(event.offset, event.len);
          if (outcome && this.#condensedResult(event.envelope, outcome, null)) break;
        }
        this.#reject(event.envelope, waiting.code, what, { limitBytes: this.#limit, bytes: event.len });
        break;
      }
      case 'not-protocol': {
        m.strayLines++;
        const shown = this.#decoder.decode(event.line.subarray(0, 1024));
        this.#log(`not protocol, from the server's stdout (offset ${event.offset}, ${event.line.length} bytes): ${shown}`);
        break;
      }
      case 'truncated':
        m.truncated++;
        this.#reject(event.envelope, SERVER_GONE,
          `the server's output ended inside a message at stream offset ${event.offset} after ${event.len} bytes`);
        break;
      default:
        break;
    }
  }

  /** A line wholly inside the chunk being routed, condensed from it. */
  #condenseInChunk(offset, len) {
    const from = offset - this.#chunkAt;
    if (!this.#chunk || from < 0 || from + len > this.#chunk.length) return undefined;
    return condenseWhole(this.#Condenser, this.#chunk.subarray(from, from + len), this.#clip);
  }

  #frame(event) {
    const m = this.#m;
    const { bytes, envelope } = event;
    m.frames++;
    if (bytes.length > m.largestFrame) m.largestFrame = bytes.length;
    if (envelope.method === undefined) {
      if (envelope.id === undefined || !(envelope.hasResult || envelope.hasError)) {
        m.unroutable++;
        this.#log(`the server's message at stream offset ${event.offset} is neither a request, a notification nor a response: not delivered`);
        return;
      }
      const key = keyOfRaw(envelope.id, this.#decoder);
      const pending = key === undefined ? undefined : this.#pending.get(key);
      if (!pending) {
        m.lateResponses++;
        this.#log(`a response for id ${this.#decoder.decode(envelope.id.raw ?? new Uint8Array())} that no request waits for (cancelled or already answered): dropped`);
        return;
      }
      if (this.#clip !== undefined && pending.toolCall && envelope.hasResult && bytes.length > this.#clip) {
        const outcome = this.#tap.take(event.offset) ?? condenseWhole(this.#Condenser, bytes, this.#clip);
        this.#condensedResult(envelope, outcome, bytes);
        return;
      }
      this.#pending.delete(key);
    }
    let message;
    try {
      message = JSON.parse(this.#decoder.decode(bytes));
    } catch (error) {
      // The framer validated it; JSON.parse disagreeing is a bug somewhere.
      m.malformed++;
      this.#reject(envelope, PARSE_ERROR, `the server's message at stream offset ${event.offset} could not be parsed: ${error.message}`);
      return;
    }
    this.#deliver(message);
  }

  /**
   * Answers a tools/call result over the `clip` budget with its condensed
   * form (or the original, if it fit after all); a result that could not be
   * condensed becomes an error, so the budget always holds. Returns false,
   * answering nobody, if `envelope` names no tools/call that is waiting.
   */
  #condensedResult(envelope, outcome, original) {
    const key = keyOfRaw(envelope.id, this.#decoder);
    const pending = key === undefined ? undefined : this.#pending.get(key);
    if (!pending || !pending.toolCall || envelope.method !== undefined || !envelope.hasResult) return false;
    this.#pending.delete(key);
    const budget = this.#clip;
    let bytes = outcome.cut ?? (outcome.unchanged && original ? original : null);
    let message = null;
    if (bytes) {
      try {
        message = JSON.parse(this.#decoder.decode(bytes));
      } catch { /* reported below */ }
    }
    if (message) {
      if (outcome.cut) {
        this.#m.condensed++;
        this.#log(`condensed the result for id ${JSON.stringify(pending.id)} to ${bytes.length} bytes (clip budget ${budget})`);
      }
      this.#deliver(message);
      return true;
    }
    this.#m.condenseFailures++;
    const why = outcome.error?.message ?? 'the result is over the transport limit';
    this.#sendError(pending.id, OVER_BUDGET,
      `the result is over the clip budget of ${budget} bytes and could not be condensed: ${why}`, { limitBytes: budget });
    return true;
  }

  /**
   * Fails the request a rejected line names, now if its id came before the
   * rejection, else when the line ends (`discarded`): an id written last,
   * as the TypeScript SDK writes it, is known only then.
   */
  #rejectOrWait(offset, envelope, code, what) {
    if (envelope.id !== undefined || this.#sole(envelope) !== undefined) {
      this.#reject(envelope, code, what, { limitBytes: this.#limit });
    } else {
      this.#watch.set(offset, { code, what, condensing: false });
    }
  }

  /**
   * The one request waiting, if `envelope` (no id) is shaped as a response
   * and exactly one request waits: nothing else can it be the answer to.
   */
  #sole(envelope) {
    if (envelope.id !== undefined || envelope.method !== undefined) return undefined;
    if (!(envelope.hasResult || envelope.hasError) || this.#pending.size !== 1) return undefined;
    return this.#pending.keys().next().value;
  }

  /** Fails the request `envelope` names, if one is waiting; else logs. */
  #reject(envelope, code, what, data = {}) {
    let key = keyOfRaw(envelope.id, this.#decoder);
    let shown = what;
    if (key === undefined && (key = this.#sole(envelope)) !== undefined) {
      this.#m.answeredAsSole++;
      shown = `${what} (its id was not readable; the only request waiting)`;
    }
    const pending = key === undefined ? undefined : this.#pending.get(key);
    if (!pending || envelope.method !== undefined) {
      this.#log(`${what} (no request waiting for it)`);
      return;
    }
    this.#pending.delete(key);
    this.#sendError(pending.id, code, shown, data);
  }

  #failPending(what) {
    for (const { id } of this.#pending.values()) this.#sendError(id, SERVER_GONE, what, {});
    this.#pending.clear();
  }

  #sendError(id, code, message, data) {
    this.#m.errorsSent++;
    const reason = REASONS.get(code);
    if (reason !== undefined) data = { drainpipe: { reason, ...data } };
    this.#deliver({ jsonrpc: '2.0', id, error: { code, message: `drainpipe: ${message}`, data } });
  }

  #deliver(message) {
    this.#m.delivered++;
    try {
      this.onmessage?.(message);
    } catch (error) {
      this.onerror?.(error);
    }
  }

  // --- stderr -----------------------------------------------------------

  #onStderr(chunk) {
    this.#capture.write(chunk);
    const mode = this.#stderrMode;
    let out = null;
    if (this.#stderrStream) out = this.#stderrStream;
    else if (mode === 'inherit') out = process.stderr;
    else if (mode && typeof mode === 'object' && typeof mode.write === 'function') out = mode;
    if (!out) return;
    // Never wait on a reader: past the bound, drop and count.
    if ((out.writableLength ?? 0) > this.#stderrStreamBytes) {
      this.#m.stderrForwardDropped += chunk.length;
      return;
    }
    out.write(chunk);
  }
}
