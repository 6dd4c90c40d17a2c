// drainpipe-framer/edge: the MCP answer guard for edge runtimes (workerd,
// Cloudflare Workers, and bundlers that import `.wasm` files as modules).
//
//   import { guardResponse, peekRequest } from 'drainpipe-framer/edge';
//   const response = await fetch(upstream, { method: 'POST', headers, body });
//   return guardResponse(response, { request: peekRequest(body), clip: 256 * 1024 });
//
// The component's core modules are imported statically, as workerd
// requires (it refuses to compile WebAssembly from bytes at run time), and
// instantiated synchronously on first use: no top-level await, no fetch.
// See guard.js for what is guarded and how.
import { coreModules } from '../dist/edge/core-modules.js';
import { instantiate } from '../dist/edge/drainpipe.js';
import { edgeGuard } from './guard.js';

export { DEFAULT_MAX_EVENT_BYTES, MAX_REQUEST_BYTES, OVER_BUDGET, TOO_LARGE, peekRequest } from './guard.js';

export const { GuardStream, guardResponse } = edgeGuard(() => instantiate((name) => coreModules[name], {}));
