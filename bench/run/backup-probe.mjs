#!/usr/bin/env node
// Where a backup's time goes in a dedicated worker on OPFS: each export
// form drained into memory, a new database opened, the import, the
// compaction the import leaves due (idle), then the whole importDatabase
// (from memory and streamed from the export) beside the copy the suite
// compares it with (iterator batches written as WriteBatches, then close).
// The suite's data set and tuned options (bench/browser/common.js,
// engines/silt.js), filled in random order and settled.
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg).
//
//   node bench/run/backup-probe.mjs [--num 100000] [--reps 3]
import { parseArgs, runMain } from './args.mjs';
import { runInBlobWorker, withBenchPage } from './browser-session.mjs';
import { machineText } from './machine.mjs';

const args = parseArgs(process.argv.slice(2), { num: 100_000, reps: 3, 'timeout-min': 8 }, 'usage: node bench/run/backup-probe.mjs [--num N] [--reps N]');
const log = (m) => process.stderr.write(`[backup-probe] ${m}\n`);

const WORKER = `
const { open, removeDatabase, importDatabase, WriteBatch } = await import('PACKAGE');
const { keyOf, valueFor, permutation } = await import(new URL('/bench/common.js', location.origin).href);
onmessage = async ({ data: { num, reps } }) => {
  const out = {};
  const add = (k, v) => (out[k] ??= []).push(+v.toFixed(3));
  const perKey = (t0) => ((performance.now() - t0) * 1000) / num;
  const opts = { blockCacheCapacity: 64 << 20, bloomBitsPerKey: 10, compression: 'lz4', writeBufferSize: 4 << 20, maxWriteBufferNumber: 2, blockSize: 4096, poolReserve: 32, sync: false };
  for (const name of ['backup-probe-src', 'backup-probe-dst']) await removeDatabase(name);
  const db = await open('backup-probe-src', opts);
  const order = permutation(num, 5);
  const b = new WriteBatch();
  for (let i = 0; i < num; i += 1000) {
    b.clear();
    for (let j = i; j < Math.min(num, i + 1000); j++) b.put(keyOf(order[j]), valueFor(order[j]));
    db.write(b);
  }
  await db.idle();
  out['source files per level'] = [JSON.stringify(db.statistics().properties.filesPerLevel)];
  for (let rep = 0; rep < reps; rep++) {
    let chunks = [];
    for (const form of ['entries', 'tables']) {
      let t = performance.now();
      chunks = [];
      const reader = db.export({ form }).getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value.slice());
      add(form + ': export into memory, µs per key', perKey(t));
      add(form + ': bytes exported', chunks.reduce((a, c) => a + c.length, 0));
      t = performance.now();
      const dst = await open('backup-probe-dst', opts);
      add(form + ': open of a new database, ms', performance.now() - t);
      t = performance.now();
      await dst.import(chunks);
      add(form + ': import from memory, µs per key', perKey(t));
      if (rep === 0) out[form + ': files per level imported'] = [JSON.stringify(dst.statistics().properties.filesPerLevel)];
      t = performance.now();
      await dst.idle();
      add(form + ': compaction the import left due (idle), ms', performance.now() - t);
      dst.close();
      await removeDatabase('backup-probe-dst');
    }
    let t = performance.now();
    await importDatabase('backup-probe-dst', chunks, opts);
    add('importDatabase of the tables form from memory, µs per key', perKey(t));
    await removeDatabase('backup-probe-dst');
    t = performance.now();
    await importDatabase('backup-probe-dst', db.export(), opts);
    add('backup: importDatabase(db.export()), µs per key', perKey(t));
    await removeDatabase('backup-probe-dst');
    t = performance.now();
    const dst = await open('backup-probe-dst', { ...opts, errorIfExists: true });
    const wb = new WriteBatch();
    for (const batch of db.iterator({ batchSize: 1000 }).batches()) {
      wb.clear();
      for (let i = 0; i < batch.length; i++) wb.put(batch.keyAt(i), batch.valueAt(i));
      dst.write(wb);
    }
    dst.close();
    add('copy: iterator batches, WriteBatches, close, µs per key', perKey(t));
    await removeDatabase('backup-probe-dst');
  }
  db.close();
  await removeDatabase('backup-probe-src');
  postMessage(out);
};
postMessage('ready');
`;

async function main() {
  await withBenchPage(
    async ({ page, browser }) => {
      console.log(`${browser}; ${machineText()}; ${new Date().toISOString()}; N = ${args.num}, ${args.reps} runs`);
      const out = await runInBlobWorker(page, WORKER, { num: args.num, reps: args.reps });
      for (const [k, v] of Object.entries(out)) console.log(`${k.padEnd(62)} ${v.join('  ')}`);
    },
    { timeoutMin: args['timeout-min'], log },
  );
}

runMain(main, log);
