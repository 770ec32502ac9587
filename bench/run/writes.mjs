#!/usr/bin/env node
// Writes in bulk, in Chromium on OPFS (Silt only; the suite compares
// engines on fills): `ingest()` of sorted and of shuffled entries, each
// until durable and readable, next to the same entries written in batches
// of 100 (yielding to the event loop every 100 batches) and counted to
// `idle()` (the flushes and compactions they leave); and the latency of
// every batch of that sustained fill, as a histogram.
// Library defaults throughout. Keys are 16 bytes, values 100 random bytes
// (incompressible: the worst case for file sizes).
//
// Writes <out>/writes.md and <out>/writes.json (JSON lines: a header, then
// one line per run of each workload, then the latency histogram).
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg). A benchmark, not a
// test; a watchdog ends it (--timeout-min).
//
//   node bench/run/writes.mjs [--num 1000000] [--reps 3] [--out docs/bench]
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, runMain } from './args.mjs';
import { runInBlobWorker, withBenchPage } from './browser-session.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const USAGE = 'usage: node bench/run/writes.mjs [--num N] [--reps N] [--out DIR] [--timeout-min M]';
const args = parseArgs(process.argv.slice(2), { num: 1_000_000, reps: 3, out: 'docs/bench', 'timeout-min': 30 }, USAGE);
const log = (m) => process.stderr.write(`[writes] ${m}\n`);

// Runs in a dedicated worker (from a blob; PACKAGE is the package's address).
const WORKER = `
const { open, removeDatabase } = await import('PACKAGE');
const key = (i) => String(i).padStart(16, '0');
function values(n, seed) {
  const out = new Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    const v = new Uint8Array(100);
    for (let j = 0; j < 100; j++) { x = (Math.imul(x, 1103515245) + 12345) >>> 0; v[j] = x >>> 24; }
    out[i] = v;
  }
  return out;
}
function shuffled(n, seed) {
  const a = Array.from({ length: n }, (_, i) => i);
  let x = seed >>> 0 || 1;
  for (let i = n - 1; i > 0; i--) { x = (Math.imul(x, 1103515245) + 12345) >>> 0; const j = x % (i + 1); [a[i], a[j]] = [a[j], a[i]]; }
  return a;
}
/** Checks a sample of keys after a reopen: every value as written. */
async function check(name, order, vals) {
  const db = await open(name);
  let wrong = 0;
  for (let s = 0; s < 1000; s++) {
    const i = order[(s * 7919) % order.length];
    const got = db.get(key(i));
    const want = vals[i];
    if (!got || got.length !== want.length || got.some((b, j) => b !== want[j])) wrong++;
  }
  db.close();
  return wrong;
}
onmessage = async ({ data }) => {
  try {
    postMessage({ out: await run(data) });
  } catch (e) {
    postMessage({ error: (e && (e.code ? e.code + ': ' : '') + e.message) || String(e) });
  }
};
async function run({ n, rep }) {
  const vals = values(n, 7 + rep);
  const out = [];
  for (const sorted of [true, false]) {
    const name = 'bench-ingest-' + (sorted ? 'sorted' : 'shuffled');
    await removeDatabase(name);
    const order = sorted ? Array.from({ length: n }, (_, i) => i) : shuffled(n, 11 + rep);
    // Made in the order they are handed over, as records arriving from a
    // network would be (reading them in another order than they lie in
    // memory costs JavaScript up to 1 µs each).
    const pairs = order.map((i) => [key(i), vals[i].slice()]);
    const db = await open(name);
    const t0 = performance.now();
    const report = await db.ingest(pairs, { sorted });
    const ms = performance.now() - t0;
    db.close();
    out.push({ workload: sorted ? 'ingest sorted' : 'ingest unsorted', ms, keysPerSec: n / (ms / 1000), files: report.files, level: report.level, wrong: await check(name, order, vals) });
    await removeDatabase(name);
    // The same from a WriteBatch built first, each part timed: what
    // encoding the pairs in JavaScript costs, and what the engine and OPFS do.
    const db2 = await open(name);
    const e0 = performance.now();
    const batch = db2.batch();
    for (const [k, v] of pairs) batch.put(k, v);
    const encodeMs = performance.now() - e0;
    const i0 = performance.now();
    const report2 = await db2.ingest(batch, { sorted });
    const ingestMs = performance.now() - i0;
    db2.close();
    out.push({ workload: (sorted ? 'ingest sorted' : 'ingest unsorted') + ', from a batch built first', ms: ingestMs, encodeMs, keysPerSec: n / (ingestMs / 1000), files: report2.files, level: report2.level, wrong: await check(name, order, vals) });
    await removeDatabase(name);
  }
  for (const sorted of [true, false]) {
    const name = 'bench-fill-' + (sorted ? 'seq' : 'random');
    await removeDatabase(name);
    const order = sorted ? Array.from({ length: n }, (_, i) => i) : shuffled(n, 13 + rep);
    // Keys and values made before the clock, in the order written.
    const keys = order.map(key);
    const given = order.map((i) => vals[i].slice());
    const db = await open(name);
    const lat = new Float64Array(Math.ceil(n / 100));
    const t0 = performance.now();
    for (let b = 0, i = 0; i < n; b++) {
      // An app's loop yields now and then (a fetch, a message): every 100
      // batches here. Without any yield, siltdb can add no pooled file
      // meanwhile: writes then wait for files and compact to free some,
      // slower (js/README.md, PoolExhausted).
      if (b > 0 && b % 100 === 0) await new Promise((r) => setTimeout(r, 0));
      const batch = db.batch();
      for (const end = Math.min(n, i + 100); i < end; i++) batch.put(keys[i], given[i]);
      const s = performance.now();
      db.write(batch);
      lat[b] = performance.now() - s;
    }
    const writesMs = performance.now() - t0;
    await db.idle();
    const ms = performance.now() - t0;
    const st = db.statistics();
    db.close();
    out.push({
      workload: sorted ? 'fillseq, batches of 100' : 'fillrandom, batches of 100',
      ms, writesMs, keysPerSec: n / (ms / 1000),
      stalls: st.tickers['silt.write.stalls'], waiting: st.tickers['silt.write.waiting.for.files'],
      latency: Array.from(lat),
      wrong: await check(name, order, vals),
    });
    await removeDatabase(name);
  }
  return out;
}
postMessage('ready');
`;

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** Batch latencies (ms) in buckets: upper bounds in ms. */
const BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, Infinity];

function histogram(lat) {
  const counts = BUCKETS.map(() => 0);
  for (const x of lat) counts[BUCKETS.findIndex((b) => x <= b)]++;
  return counts;
}

async function main() {
  const run = startRun(`node bench/run/writes.mjs --num ${args.num} --reps ${args.reps}`);
  const reps = [];
  let browser = '';
  await withBenchPage(
    async ({ page, browser: b }) => {
      browser = b;
      for (let rep = 0; rep < args.reps; rep++) {
        log(`rep ${rep + 1} of ${args.reps}`);
        const { out, error } = await runInBlobWorker(page, WORKER, { n: args.num, rep });
        if (error) throw new Error(`the worker failed: ${error}`);
        reps.push(out);
      }
    },
    { timeoutMin: args['timeout-min'], log },
  );
  const meta = run.finish({ browser, num: args.num, reps: args.reps, options: 'library defaults (open(name))' });
  const workloads = reps[0].map((w) => w.workload);
  const rows = workloads.map((name, k) => {
    const runs = reps.map((r) => r[k]);
    return { name, keysPerSec: median(runs.map((r) => r.keysPerSec)), runs };
  });
  const lines = [JSON.stringify({ kind: 'header', ...meta })];
  for (const r of rows) {
    for (const x of r.runs) {
      const { latency, ...rest } = x;
      lines.push(JSON.stringify({ kind: 'run', ...rest }));
    }
  }
  // Latency of every batch of every sustained fill, all reps together.
  const fills = rows.filter((r) => r.name.startsWith('fill'));
  const lat = {};
  for (const r of fills) {
    const all = r.runs.flatMap((x) => x.latency).sort((a, b) => a - b);
    lat[r.name] = {
      p50: pct(all, 50),
      p90: pct(all, 90),
      p99: pct(all, 99),
      p999: pct(all, 99.9),
      max: all[all.length - 1],
      batches: all.length,
      histogram: histogram(all),
    };
    lines.push(JSON.stringify({ kind: 'latency', workload: r.name, buckets: BUCKETS.map(String), ...lat[r.name] }));
  }
  const f = (x) => Math.round(x).toLocaleString('en-US');
  const ms = (x) => (x < 1 ? x.toFixed(3) : x.toFixed(2));
  let md = `# Bulk writes: ingest() and sustained fills (Chromium, OPFS)\n\n${metaMarkdown(meta)}\nN = ${args.num.toLocaleString('en-US')} entries of 16-byte keys and 100 random bytes, ${args.reps} runs (median shown), library defaults. Each ingest is timed until its Promise resolves (durable, readable); each fill from the first batch to \`idle()\` (its flushes and compactions done), yielding to the event loop (\`setTimeout(0)\`) every 100 batches, as an app's loop would now and then (with no yield at all, siltdb cannot add pooled files meanwhile and writes wait and compact for files: js/README.md). Keys and values are made before each clock starts, the values in the order they are handed over, as records arriving from a network would lie in memory. Every run reopens the database and checks 1,000 keys.\n\n`;
  md += '| workload | keys/s (median) | runs (keys/s) | notes |\n|---|---:|---|---|\n';
  for (const r of rows) {
    const notes = r.name.startsWith('ingest')
      ? `${r.runs[0].files} files at L${r.runs[0].level}${r.runs[0].encodeMs === undefined ? '' : `; the ingest of the batch alone (engine, OPFS) timed, encoding the pairs into it took ${r.runs.map((x) => Math.round(x.encodeMs)).join('/')} ms more`}`
      : `writes alone ${f(median(r.runs.map((x) => args.num / (x.writesMs / 1000))))} keys/s; stalls ${r.runs.map((x) => x.stalls).join('/')}, writes waiting for files ${r.runs.map((x) => x.waiting).join('/')}`;
    const wrong = r.runs.reduce((a, x) => a + x.wrong, 0);
    md += `| ${r.name} | ${f(r.keysPerSec)} | ${r.runs.map((x) => f(x.keysPerSec)).join(', ')} | ${notes}${wrong ? `; ${wrong} WRONG VALUES` : ''} |\n`;
  }
  const ingest = rows.find((r) => r.name === 'ingest sorted');
  const fillseq = rows.find((r) => r.name.startsWith('fillseq'));
  const ingestU = rows.find((r) => r.name === 'ingest unsorted');
  const fillrandom = rows.find((r) => r.name.startsWith('fillrandom'));
  md += `\ningest sorted / fillseq: ${(ingest.keysPerSec / fillseq.keysPerSec).toFixed(2)}×; ingest unsorted / fillrandom: ${(ingestU.keysPerSec / fillrandom.keysPerSec).toFixed(2)}× (same run).\n\n`;
  md += `Goals (issue #19): ingest of sorted entries ≥ 2,000,000 keys/s: ${ingest.keysPerSec >= 2e6 ? 'met' : 'missed'}; of unsorted entries ≥ 1,000,000 keys/s: ${ingestU.keysPerSec >= 1e6 ? 'met' : 'missed'}.\n\n`;
  md += '## Latency of each batch of 100 during the sustained fills\n\n';
  md += '| workload | batches | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms |\n|---|---:|---:|---:|---:|---:|---:|\n';
  for (const [name, l] of Object.entries(lat))
    md += `| ${name} | ${f(l.batches)} | ${ms(l.p50)} | ${ms(l.p90)} | ${ms(l.p99)} | ${ms(l.p999)} | ${ms(l.max)} |\n`;
  md += '\nHistogram (batches whose write took at most this long):\n\n';
  md += `| workload | ${BUCKETS.map((b) => (b === Infinity ? 'more' : `≤ ${b} ms`)).join(' | ')} |\n|---|${BUCKETS.map(() => '---:').join('|')}|\n`;
  for (const [name, l] of Object.entries(lat)) md += `| ${name} | ${l.histogram.join(' | ')} |\n`;
  const worst = Object.values(lat);
  md += `\nGoal (issue #19): p99 ≤ 5 ms and max ≤ 50 ms per batch: p99 ${worst.every((l) => l.p99 <= 5) ? 'met' : 'missed'}, max ${worst.every((l) => l.max <= 50) ? 'met' : 'missed'}.\n`;
  mkdirSync(args.out, { recursive: true });
  writeFileSync(join(args.out, 'writes.json'), `${lines.join('\n')}\n`);
  writeFileSync(join(args.out, 'writes.md'), md);
  process.stdout.write(md);
  log(`wrote ${join(args.out, 'writes.md')} and writes.json`);
}

runMain(main);
