// drainpipe-framer/edge for runtimes with no static import of a `.wasm`
// module but that allow compiling one (Node, Deno): the same guard, its
// core modules compiled from the package's files on first use.
import { readFileSync } from 'node:fs';

import { instantiate } from '../dist/edge/drainpipe.js';
import { edgeGuard } from './guard.js';

export { DEFAULT_MAX_EVENT_BYTES, MAX_REQUEST_BYTES, OVER_BUDGET, TOO_LARGE, peekRequest } from './guard.js';

const coreModule = (name) => new WebAssembly.Module(readFileSync(new URL(`../dist/edge/${name}`, import.meta.url)));

export const { GuardStream, guardResponse } = edgeGuard(() => instantiate(coreModule, {}));
