// Node (jco) throughput on the same workloads as the Rust benches, for the
// record: 64 KiB chunks, median of 5 runs.
//
//   cargo run --release -p drainpipe-host --example export_vectors -- dist --bench-data
//   npm run bench
import { readFileSync } from 'node:fs';
import { Framer } from '../index.js';

const CHUNK = 64 * 1024;
const RUNS = 5;
const limits = { maxFrameBytes: 16 << 20 };

const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];

for (const name of ['large', 'small']) {
  const data = new Uint8Array(readFileSync(new URL(`../dist/${name}.bin`, import.meta.url)));
  for (const [label, step] of [
    ['packed words', (f, chunk) => f.pushPacked(chunk).words.length / 11],
    ['typed span batches', (f, chunk) => f.pushBatch(chunk).events.length],
    ['events with views, packed', (f, chunk) => f.push(chunk).length],
    ['events with views, typed', (f, chunk) => f.pushTyped(chunk).length],
  ]) {
    const times = [];
    let events = 0;
    for (let run = 0; run < RUNS; run++) {
      const framer = new Framer(limits);
      events = 0;
      const started = process.hrtime.bigint();
      for (let at = 0; at < data.length; at += CHUNK) events += step(framer, data.subarray(at, at + CHUNK));
      events += framer.finish().length;
      times.push(Number(process.hrtime.bigint() - started) / 1e9);
    }
    const t = median(times);
    console.log(`node ${process.version} ${name}, ${label}: ${(data.length / t / 1e9).toFixed(2)} GB/s, ${(events / t / 1e6).toFixed(2)} M events/s (${events} events, ${(data.length / 1048576).toFixed(1)} MiB)`);
  }
}
