// Builds the package: asks cargo for the component and the native framer's
// answers on the parity corpus, then transpiles the component with jco.
//
//   npm run build   (needs cargo; run from anywhere)
import { execFileSync } from 'node:child_process';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
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

// The edge entry's copy of the full component: instantiated synchronously
// from core modules its caller supplies (no top-level await, no fetch, no
// base64-inlined module compiled at run time), and a module importing each
// core module statically, the way workerd loads WebAssembly.
const edge = join(dist, 'edge');
rmSync(edge, { recursive: true, force: true });
run('npx', ['jco', 'transpile', join(dist, 'drainpipe.wasm'), '-o', edge, '--name', 'drainpipe', '--quiet',
  '--instantiation', 'sync', '--base64-cutoff', '0', '--no-typescript']);
const cores = readdirSync(edge).filter((name) => name.endsWith('.wasm')).sort();
writeFileSync(join(edge, 'core-modules.js'), [
  '// Written by scripts/build.mjs: the component\'s core modules, imported statically.',
  ...cores.map((name, i) => `import m${i} from './${name}';`),
  `export const coreModules = { ${cores.map((name, i) => `'${name}': m${i}`).join(', ')} };`,
  '',
].join('\n'));
