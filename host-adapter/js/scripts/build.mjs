// Builds the package: asks cargo for the component and the native framer's
// answers on the parity corpus, then transpiles the component with jco.
//
//   npm run build   (needs cargo; run from anywhere)
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const dist = join(root, 'dist');

const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

// The example writes dist/framer.wasm (the exact bytes wasmtime runs) and
// dist/vectors.json (the expected events, computed by the native framer).
run('cargo', ['run', '--quiet', '-p', 'drainpipe-host', '--example', 'export_vectors', '--', dist]);
run('npx', ['jco', 'transpile', join(dist, 'framer.wasm'), '-o', join(dist, 'framer'), '--name', 'framer', '--quiet']);
run('npx', ['jco', 'transpile', join(dist, 'drainpipe.wasm'), '-o', join(dist, 'drainpipe'), '--name', 'drainpipe', '--quiet']);
