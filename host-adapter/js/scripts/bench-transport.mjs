// GuardedStdioClientTransport against the SDK's StdioClientTransport on the
// same stream, in the same run: a server writes N notifications of a given
// size (or answers N requests with large results) and the transport's
// onmessage counts them.
// Each measurement runs in a fresh Node process, so peak RSS is its own.
//
//   node scripts/bench-transport.mjs            (from host-adapter/js; needs
//                                                tests/peers/setup.sh and npm run build)
//
// Prints a Markdown table: messages/s, MB/s and peak RSS / heap per run.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const self = fileURLToPath(import.meta.url);
const SDK = new URL('../../../tests/peers/node/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js', import.meta.url).href;
const MCP = new URL('../mcp.js', import.meta.url).href;

if (process.argv[2] === '--server') {
  // N lines of `size` bytes each (notifications, or results with id), in big writes.
  const [count, size, kind] = process.argv.slice(3).map((x, i) => (i < 2 ? Number(x) : x));
  const line = (i) => {
    const head = kind === 'result'
      ? `{"jsonrpc":"2.0","id":${i},"result":{"content":[{"type":"text","text":"`
      : '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"';
    const tail = kind === 'result' ? '"}]}}\n' : '"}}\n';
    return head + 'x'.repeat(Math.max(0, size - head.length - tail.length + 1)) + tail;
  };
  if (kind === 'result') {
    // Results answer requests (a response nobody asked for is dropped).
    const { createInterface } = await import('node:readline');
    createInterface({ input: process.stdin }).on('line', (request) => {
      process.stdout.write(line(JSON.parse(request).id));
    }).on('close', () => process.exit(0));
  }
  const perWrite = Math.max(1, Math.floor((1 << 20) / size));
  let i = 0;
  const pump = () => {
    while (i < count) {
      let out = '';
      for (let k = 0; k < perWrite && i < count; k++) out += line(i++);
      if (!process.stdout.write(out)) return process.stdout.once('drain', pump);
    }
    process.stdin.resume();
    process.stdin.on('end', () => process.exit(0));
  };
  if (kind !== 'result') pump();
} else if (process.argv[2] === '--client') {
  const [which, count, size, kind] = process.argv.slice(3);
  const { StdioClientTransport } = await import(SDK);
  const { GuardedStdioClientTransport } = await import(MCP);
  const params = { command: process.execPath, args: [self, '--server', count, size, kind], stderr: 'inherit' };
  const transport = which === 'guarded'
    ? new GuardedStdioClientTransport({ ...params, maxFrameBytes: 16 << 20, log: () => {} })
    : new StdioClientTransport(params);
  let got = 0;
  let peakHeap = 0;
  const done = new Promise((resolve) => {
    transport.onmessage = () => {
      got++;
      if (got % 1000 === 0 || Number(size) >= 65536) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
      if (got === Number(count)) resolve();
    };
  });
  transport.onerror = (e) => { console.error(`${which}: ${e.message}`); };
  const started = process.hrtime.bigint();
  await transport.start();
  if (kind === 'result') {
    for (let i = 0; i < Number(count); i++) transport.send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'big' } });
  }
  await done;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await transport.close();
  console.log(JSON.stringify({ seconds, got, peakHeap, maxRss: process.resourceUsage().maxRSS * 1024 }));
  process.exit(0);
} else {
  const workloads = [
    ['300,000 notifications of 100 B', 300_000, 100, 'notification'],
    ['300,000 notifications of 1 KiB', 300_000, 1024, 'notification'],
    ['20 results of 3 MiB', 20, 3 << 20, 'result'],
    ['3 results of 9 MiB', 3, 9 << 20, 'result'],
  ];
  const mb = (b) => (b / 1e6).toFixed(0);
  console.log(`node ${process.version}, ${process.platform}/${process.arch}; median of 3 runs each, fresh process per run\n`);
  console.log('| stream | transport | messages/s | MB/s | peak RSS | peak heap |');
  console.log('|---|---|---:|---:|---:|---:|');
  for (const [label, count, size, kind] of workloads) {
    for (const which of ['sdk', 'guarded']) {
      const runs = [];
      for (let r = 0; r < 3; r++) {
        const out = spawnSync(process.execPath, [self, '--client', which, String(count), String(size), kind], { encoding: 'utf8', timeout: 300_000 });
        if (out.status !== 0) throw new Error(`${which} ${label}: ${out.stderr}`);
        runs.push(JSON.parse(out.stdout.trim().split('\n').pop()));
      }
      runs.sort((a, b) => a.seconds - b.seconds);
      const { seconds } = runs[1];
      const rss = Math.max(...runs.map((x) => x.maxRss));
      const heap = Math.max(...runs.map((x) => x.peakHeap));
      const name = which === 'sdk' ? 'StdioClientTransport' : 'GuardedStdioClientTransport';
      console.log(`| ${label} | ${name} | ${Math.round(count / seconds).toLocaleString('en')} | ${mb((count * size) / seconds)} | ${mb(rss)} MB | ${mb(heap)} MB |`);
    }
  }
}
