#!/usr/bin/env node
// Issue 37's throughput goals, in one run: RocksDB tables out of Silt and
// into it, natively (the `silt` command) and in Chromium (a dedicated
// worker on OPFS, library defaults), the same data both ways: N keys of
// the suite (bench/browser/common.js: 16-byte keys, 100-byte values half
// compressible), so the user data is N × 116 bytes; MB/s are of that.
//
// Natively: RocksDB's own `ldb write_extern_sst` (Debian's rocksdb-tools)
// writes the table the import reads; then `silt import` of it into a new
// directory, `silt export --form rocksdb` (and `--lz4`) of that database,
// `silt scan` of it to /dev/null (entries/s). In Chromium: the database
// filled by `ingest()` and settled, then `db.export({ form: 'rocksdb' })`
// drained into memory, and `importDatabase(name, chunks, { format:
// 'rocksdb' })` of those chunks (read, verified, written, closed). The
// median of --reps repetitions each.
//
// REQUIRES: bash scripts/build.sh; cargo build --release -p silt-cli;
// ldb (scripts/setup.sh installs rocksdb-tools).
//
//   node bench/run/rocksdb-tables.mjs [--num 1000000] [--reps 3] [--out docs/bench]
import { execFileSync, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keyOf, valueFor } from '../browser/common.js';
import { parseArgs, runMain } from './args.mjs';
import { runInBlobWorker, withBenchPage } from './browser-session.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const o = parseArgs(
  process.argv.slice(2),
  { num: 1_000_000, reps: 3, out: 'docs/bench', 'timeout-min': 20 },
  'usage: node bench/run/rocksdb-tables.mjs [--num N] [--reps N] [--out DIR]',
);
const log = (m) => process.stderr.write(`[rocksdb-tables] ${m}\n`);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const SILT = 'target/release/silt';
const USER_BYTES = o.num * 116;
const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** Runs `cmd args` and returns its wall time in seconds (it must succeed). */
function timed(cmd, args, stdout = 'ignore') {
  const t = performance.now();
  const r = spawnSync(cmd, args, { stdio: ['ignore', stdout, 'pipe'], maxBuffer: 1 << 20 });
  const s = (performance.now() - t) / 1000;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return s;
}

async function native(dir) {
  if (!existsSync(SILT)) throw new Error(`${SILT} is missing: cargo build --release -p silt-cli first`);
  const input = join(dir, 'input.txt');
  log(`writing ${o.num} entries for ldb`);
  const w = createWriteStream(input);
  for (let i = 0; i < o.num; i++) {
    if (!w.write(`0x${hex(keyOf(i))} ==> 0x${hex(valueFor(i))}\n`)) await new Promise((ok) => w.once('drain', ok));
  }
  await new Promise((ok, fail) => w.end((e) => (e ? fail(e) : ok())));
  const sst = join(dir, 'rocksdb.sst');
  execFileSync('sh', ['-c', `ldb --db=${join(dir, 'scratch')} --create_if_missing --hex --compression_type=no write_extern_sst ${sst} < ${input}`], {
    stdio: 'ignore',
  });
  rmSync(input);
  const runs = { import: [], export: [], 'export lz4': [], scan: [] };
  for (let rep = 0; rep < o.reps; rep++) {
    const db = join(dir, 'db');
    rmSync(db, { recursive: true, force: true });
    runs.import.push(timed(SILT, ['import', sst, db]));
    const tar = join(dir, 'out.tar');
    rmSync(tar, { force: true });
    runs.export.push(timed(SILT, ['export', db, tar, '--form', 'rocksdb']));
    rmSync(tar, { force: true });
    runs['export lz4'].push(timed(SILT, ['export', db, tar, '--form', 'rocksdb', '--lz4']));
    runs.scan.push(timed(SILT, ['scan', db]));
    log(
      `native rep ${rep + 1}: ${Object.entries(runs)
        .map(([k, v]) => `${k} ${v.at(-1).toFixed(2)} s`)
        .join(', ')}`,
    );
  }
  return { runs, sstBytes: statSync(sst).size };
}

const WORKER = `
const { open, removeDatabase, importDatabase } = await import('PACKAGE');
const { keyOf, valueFor } = await import(new URL('/bench/common.js', location.origin).href);
onmessage = async ({ data: { num, reps } }) => {
  const runs = { export: [], import: [] };
  let bytes = 0;
  for (const name of ['bench-rocksdb-src', 'bench-rocksdb-dst']) await removeDatabase(name);
  const db = await open('bench-rocksdb-src');
  const entries = [];
  for (let i = 0; i < num; i++) entries.push([keyOf(i), valueFor(i)]);
  await db.ingest(entries, { sorted: true });
  entries.length = 0;
  await db.idle();
  for (let rep = 0; rep < reps; rep++) {
    let t = performance.now();
    const chunks = [];
    const reader = db.export({ form: 'rocksdb' }).getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value);
    runs.export.push((performance.now() - t) / 1000);
    bytes = chunks.reduce((a, c) => a + c.length, 0);
    t = performance.now();
    const report = await importDatabase('bench-rocksdb-dst', chunks, { format: 'rocksdb' });
    runs.import.push((performance.now() - t) / 1000);
    if (report.keys !== num) throw new Error('imported ' + report.keys + ' keys of ' + num);
    await removeDatabase('bench-rocksdb-dst');
  }
  db.close();
  await removeDatabase('bench-rocksdb-src');
  postMessage({ runs, bytes });
};
postMessage('ready');
`;

async function main() {
  const info = startRun(`cargo build --release -p silt-cli && bash scripts/build.sh && node bench/run/rocksdb-tables.mjs --num ${o.num} --reps ${o.reps}`);
  const dir = mkdtempSync(join(tmpdir(), 'silt-rocksdb-bench-'));
  let nat;
  try {
    nat = await native(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await withBenchPage(
    async ({ page, browser }) => {
      log('Chromium: filling, then exporting and importing');
      const web = await runInBlobWorker(page, WORKER, { num: o.num, reps: o.reps });
      const meta = info.finish({ browser });
      const mbs = (s) => USER_BYTES / 1e6 / s;
      const figures = {
        'native import MB/s': mbs(median(nat.runs.import)),
        'native export MB/s': mbs(median(nat.runs.export)),
        'native export lz4 MB/s': mbs(median(nat.runs['export lz4'])),
        'native scan entries/s': o.num / median(nat.runs.scan),
        'chromium export MB/s': mbs(median(web.runs.export)),
        'chromium import MB/s': mbs(median(web.runs.import)),
      };
      const runs = { native: nat.runs, chromium: web.runs };
      mkdirSync(o.out, { recursive: true });
      const lines = [
        { type: 'header', ...meta, options: { num: o.num, reps: o.reps, userBytes: USER_BYTES } },
        { type: 'result', figures, runs, sstBytes: nat.sstBytes, exportBytes: web.bytes },
      ];
      writeFileSync(join(o.out, 'rocksdb-tables.json'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
      const md = markdown(meta, figures, runs, web.bytes);
      writeFileSync(join(o.out, 'rocksdb-tables.md'), md);
      process.stdout.write(md);
    },
    { timeoutMin: o['timeout-min'], log },
  );
}

function markdown(meta, f, runs, exportBytes) {
  const met = (ok) => (ok ? 'yes' : '**no**');
  const secs = (xs) => xs.map((x) => x.toFixed(2)).join(', ');
  const n = o.num.toLocaleString('en-US');
  return (
    '# RocksDB tables out of Silt and into it (issue 37)\n\n' +
    'Generated by `node bench/run/rocksdb-tables.mjs`. ' +
    `The same ${n} keys both ways (the browser suite's: 16-byte keys, 100-byte values half compressible), ` +
    `so ${(USER_BYTES / 1e6).toFixed(0)} MB of user data; MB/s are of that. ` +
    "Natively, the `silt` command (release build): `silt import` of one table RocksDB's `ldb write_extern_sst` wrote (uncompressed) into a new directory " +
    '(every block verified, then written as Silt tables with its default LZ4), `silt export --form rocksdb` of that database to a tar of tables ' +
    '(uncompressed, and `--lz4`), `silt scan` of it to /dev/null; each a process of its own, its wall time. ' +
    "In Chromium, a dedicated worker on OPFS, library defaults: the database filled by `ingest()` and settled, `db.export({ form: 'rocksdb' })` " +
    `drained into memory (${(exportBytes / 1e6).toFixed(0)} MB of archive), then \`importDatabase(name, chunks, { format: 'rocksdb' })\` of those chunks. ` +
    `The median of ${o.reps} repetitions.\n\n` +
    metaMarkdown(meta) +
    '\n| step | median | each repetition (s) | goal | met |\n|---|---:|---|---|---|\n' +
    `| native: \`silt import\` of a RocksDB table | ${f['native import MB/s'].toFixed(0)} MB/s | ${secs(runs.native.import)} | ≥ 200 MB/s | ${met(f['native import MB/s'] >= 200)} |\n` +
    `| native: \`silt export --form rocksdb\` | ${f['native export MB/s'].toFixed(0)} MB/s | ${secs(runs.native.export)} | ≥ 200 MB/s | ${met(f['native export MB/s'] >= 200)} |\n` +
    `| native: \`silt export --form rocksdb --lz4\` | ${f['native export lz4 MB/s'].toFixed(0)} MB/s | ${secs(runs.native['export lz4'])} | – | – |\n` +
    `| native: \`silt scan\` to /dev/null | ${(f['native scan entries/s'] / 1e6).toFixed(2)}M entries/s | ${secs(runs.native.scan)} | ≥ 1M entries/s | ${met(f['native scan entries/s'] >= 1e6)} |\n` +
    `| Chromium: \`db.export({ form: 'rocksdb' })\` into memory | ${f['chromium export MB/s'].toFixed(0)} MB/s | ${secs(runs.chromium.export)} | ≥ 50 MB/s | ${met(f['chromium export MB/s'] >= 50)} |\n` +
    `| Chromium: \`importDatabase(…, { format: 'rocksdb' })\` | ${f['chromium import MB/s'].toFixed(0)} MB/s | ${secs(runs.chromium.import)} | ≥ 50 MB/s | ${met(f['chromium import MB/s'] >= 50)} |\n`
  );
}

runMain(main, log);
