// Markdown tables from a results file of bench/serve/run.sh:
//   node summarize.mjs out/results-….jsonl
import { readFileSync } from 'node:fs';

const rows = readFileSync(process.argv[2], 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l));

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const f1 = (x) => (Number.isFinite(x) ? (Math.round(x * 10) / 10).toLocaleString('en-US') : '—');
const list = (xs) => xs.map(f1).join(', ');
const mib = (kib) => kib / 1024;

const sessions = rows.filter((r) => r.mode === 'sessions');
const failed = rows.filter((r) => r.error);
if (sessions.length) {
  console.log(
    '\n| gateway | client | sessions open (time to open) | processes | all at once: p50 ms | p99 ms | calls/s | gateway CPU per call | paced: p50 ms | p99 ms | RSS per session | PSS per session | load |',
  );
  console.log('|---|---|---|---:|---|---|---|---|---|---|---:|---:|---|');
  const groups = new Map();
  for (const r of sessions) {
    const k = `${r.gateway}\t${r.client}`;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
  }
  const summary = new Map();
  for (const [k, rs] of groups) {
    const [gw, client] = k.split('\t');
    const errors = rs.reduce((n, r) => n + r.openErrors + r.callErrors + (r.paced?.errors ?? 0), 0);
    const rss = median(rs.map((r) => mib(r.memOpen.rssKiB) / r.opened));
    const pss = median(rs.map((r) => mib(r.memOpen.pssKiB) / r.opened));
    const m = (f) => median(rs.map(f));
    summary.set(k, {
      p50: m((r) => r.calls.p50),
      p99: m((r) => r.calls.p99),
      rate: m((r) => r.callsPerS),
      cpu: m((r) => r.gatewayCpuMsPerCall),
      pacedP50: m((r) => r.paced?.p50),
      pacedP99: m((r) => r.paced?.p99),
      rss,
      pss,
    });
    const paced = rs[0].paced ? `${list(rs.map((r) => r.paced.p50))} | ${list(rs.map((r) => r.paced.p99))}` : '— | —';
    console.log(
      `| ${gw} | ${client} | ${rs.map((r) => `${r.opened}/${r.sessions} (${f1(r.openMs / 1000)} s)`).join(', ')}${errors ? `, ${errors} errors` : ''} | ${rs[0].memOpen.procs} | ${list(rs.map((r) => r.calls.p50))} | ${list(rs.map((r) => r.calls.p99))} | ${rs.map((r) => r.callsPerS).join(', ')} | ${rs.map((r) => (r.gatewayCpuMsPerCall ?? NaN).toFixed(2)).join(', ')} ms | ${paced} | ${f1(rss)} MiB | ${f1(pss)} MiB | ${rs.map((r) => r.load.split(' ')[0]).join(', ')} |`,
    );
  }
  console.log('\nRatios to drainpipe (medians of the repetitions, same client; above 1 is worse than drainpipe, except calls/s):\n');
  console.log('| gateway | client | all at once p50 | p99 | calls/s | gateway CPU per call | paced p50 | p99 | RSS per session | PSS per session |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const [k, s] of summary) {
    const [gw, client] = k.split('\t');
    const d = summary.get(`drainpipe\t${client}`);
    if (!d || gw === 'drainpipe') continue;
    const r = (a, b) => `${f1(a / b)}×`;
    console.log(
      `| ${gw} | ${client} | ${r(s.p50, d.p50)} | ${r(s.p99, d.p99)} | ${r(s.rate, d.rate)} | ${r(s.cpu, d.cpu)} | ${r(s.pacedP50, d.pacedP50)} | ${r(s.pacedP99, d.pacedP99)} | ${r(s.rss, d.rss)} | ${r(s.pss, d.pss)} |`,
    );
  }
}

const big = rows.filter((r) => r.mode === 'big');
if (big.length) {
  console.log(
    '\n| gateway | 50 clients without the big call p50 / p99 ms | during it p50 / p99 ms (calls) | after it p50 / p99 ms | the big call | result the client got | gateway peak RSS | tree peak RSS | load |',
  );
  console.log('|---|---|---|---|---|---|---:|---:|---|');
  for (const r of big) {
    const b = r.big;
    const call = b.error ? `failed after ${f1(b.wallMs / 1000)} s: ${b.error.slice(0, 80)}` : `${f1(b.ms / 1000)} s`;
    const got = b.error ? '—' : `${(b.resultBytes / 1e6).toFixed(b.resultBytes < 1e6 ? 2 : 1)} MB${b.condensed ? ', condensed' : ''}`;
    const ph = (p) => `${f1(p.p50)} / ${f1(p.p99)}${p.errors ? `, ${p.errors} failed` : ''}${p.unanswered ? `, ${p.unanswered} unanswered` : ''}`;
    console.log(
      `| ${r.gateway} | ${ph(r.before)} | ${ph(r.during)} (${r.during.n}) | ${ph(r.after)} | ${call} | ${got} | ${f1(r.gatewayHwmMiB)} MiB | ${f1(r.peakTreeRssMiB)} MiB | ${r.load.split(' ')[0]} |`,
    );
  }
}
if (failed.length) console.log(`\n${failed.length} runs failed: ${failed.map((r) => r.gateway).join(', ')}`);
