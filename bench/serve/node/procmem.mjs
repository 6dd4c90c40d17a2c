// Memory of a process and all its descendants, from /proc (Linux only).
//
//   node procmem.mjs once PID          one line of JSON: {procs, rssKiB, pssKiB, selfRssKiB, selfHwmKiB}
//   node procmem.mjs watch PID [MS]    samples VmRSS every MS (100) until stdin ends or SIGTERM,
//                                      then one line of JSON: the peak of the tree's sum, and the
//                                      root's own VmHWM (its exact peak) read at the end
//
// RSS counts a page once per process that maps it (the shared text of 200
// copies of one binary counts 200 times); PSS splits each shared page among
// the processes that map it, so a tree's PSS sum is what it costs the machine.
import { readFileSync, readdirSync } from 'node:fs';

function statusField(pid, field) {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = text.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function pss(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const m = text.match(/^Pss:\s+(\d+) kB/m);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** The pid and every descendant alive now. */
export function tree(root) {
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid ...: comm may hold spaces and parentheses.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(rest[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(Number(name));
  }
  const out = [];
  const queue = [Number(root)];
  while (queue.length) {
    const pid = queue.shift();
    out.push(pid);
    for (const c of children.get(pid) ?? []) queue.push(c);
  }
  return out;
}

export function snapshot(root, { withPss = true } = {}) {
  const pids = tree(root);
  let rssKiB = 0;
  let pssKiB = 0;
  for (const pid of pids) {
    rssKiB += statusField(pid, 'VmRSS');
    if (withPss) pssKiB += pss(pid);
  }
  return {
    procs: pids.length,
    rssKiB,
    pssKiB: withPss ? pssKiB : undefined,
    selfRssKiB: statusField(root, 'VmRSS'),
    selfHwmKiB: statusField(root, 'VmHWM'),
  };
}

async function watch(root, ms) {
  let peak = { rssKiB: 0, procs: 0 };
  let samples = 0;
  const sample = () => {
    const s = snapshot(root, { withPss: false });
    samples++;
    if (s.rssKiB > peak.rssKiB) peak = { rssKiB: s.rssKiB, procs: s.procs };
  };
  sample();
  const timer = setInterval(sample, ms);
  await new Promise((resolve) => {
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
    process.on('SIGTERM', resolve);
    process.stdin.resume();
  });
  clearInterval(timer);
  sample();
  const end = snapshot(root, { withPss: false });
  console.log(
    JSON.stringify({ peakTreeRssKiB: peak.rssKiB, procsAtPeak: peak.procs, samples, selfHwmKiB: end.selfHwmKiB }),
  );
  process.exit(0);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [mode, pid, ms] = process.argv.slice(2);
  if (mode === 'once') console.log(JSON.stringify(snapshot(pid)));
  else if (mode === 'watch') await watch(pid, Number(ms ?? 100));
  else {
    console.error('usage: node procmem.mjs once PID | watch PID [MS]');
    process.exit(2);
  }
}
