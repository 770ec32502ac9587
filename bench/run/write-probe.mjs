#!/usr/bin/env node
// Where a single small write's time goes in a dedicated worker on OPFS:
// siltdb's put, merge and a transaction, next to the bare
// FileSystemSyncAccessHandle write (and write + flush) of the same size;
// each timed in a loop, and ("one per task") alone in a task of its own,
// as a leader serving a page's calls meets them.
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg).
//
//   node bench/run/write-probe.mjs [--n 5000]
import { parseArgs, runMain } from './args.mjs';
import { runInBlobWorker, withBenchPage } from './browser-session.mjs';
import { machineText } from './machine.mjs';

const args = parseArgs(process.argv.slice(2), { n: 5000, 'timeout-min': 5 }, 'usage: node bench/run/write-probe.mjs [--n N]');
const log = (m) => process.stderr.write(`[write-probe] ${m}\n`);

const WORKER = `
const { open, removeDatabase, u64 } = await import('PACKAGE');
onmessage = async ({ data: n }) => {
  const out = {};
  const time = (name, f) => { const t0 = performance.now(); for (let i = 0; i < n; i++) f(i); out[name] = ((performance.now() - t0) * 1000) / n; };
  // Each call alone in a task of its own, after a message, as a leader serves
  // a page's calls one at a time: only the call is timed, not the turn.
  const hop = new MessageChannel();
  const turn = () => new Promise((resolve) => { hop.port1.onmessage = resolve; hop.port2.postMessage(0); });
  const timeApart = async (name, f) => {
    let sum = 0;
    for (let i = 0; i < n; i++) { await turn(); const t0 = performance.now(); f(i); sum += performance.now() - t0; }
    out[name] = (sum * 1000) / n;
  };
  const root = await navigator.storage.getDirectory();
  const fh = await root.getFileHandle('write-probe.bin', { create: true });
  const h = await fh.createSyncAccessHandle();
  const rec = new Uint8Array(40);
  let at = 0;
  time('bare write (40 B)', () => { h.write(rec, { at }); at += 40; });
  time('bare write + flush', () => { h.write(rec, { at }); at += 40; h.flush(); });
  await timeApart('bare write (40 B), one per task', () => { h.write(rec, { at }); at += 40; });
  h.close();
  await root.removeEntry('write-probe.bin');
  await removeDatabase('write-probe');
  const db = await open('write-probe', { mergeOperator: 'u64add' });
  const one = u64(1);
  const keys = Array.from({ length: 100 }, (_, i) => 'ctr/' + String(i).padStart(8, '0'));
  time('put', (i) => db.put(keys[i % 100], one));
  await timeApart('put, one per task', (i) => db.put(keys[i % 100], one));
  time('merge', (i) => db.merge(keys[i % 100], one));
  time('get', (i) => db.get(keys[i % 100]));
  await timeApart('get, one per task', (i) => db.get(keys[i % 100]));
  time('transaction (2 getForUpdate, 2 put, commit)', (i) => {
    const tx = db.begin();
    tx.getForUpdate(keys[i % 100]);
    tx.getForUpdate(keys[(i + 1) % 100]);
    tx.put(keys[i % 100], one);
    tx.put(keys[(i + 1) % 100], one);
    tx.commit();
  });
  time('transaction, no writes', (i) => { const tx = db.begin(); tx.getForUpdate(keys[i % 100]); tx.commit(); });
  time('transaction, one key (getForUpdate, put, commit)', (i) => {
    const tx = db.begin();
    tx.getForUpdate(keys[i % 100]);
    tx.put(keys[i % 100], one);
    tx.commit();
  });
  const timeAsync = async (name, f) => { const t0 = performance.now(); for (let i = 0; i < n; i++) await f(i); out[name] = ((performance.now() - t0) * 1000) / n; };
  await timeAsync('await db.update(key, f)', (i) => db.update(keys[i % 100], () => one));
  await timeAsync('await merge (for the loop)', async (i) => db.merge(keys[i % 100], one));
  db.close();
  await removeDatabase('write-probe');
  postMessage(out);
};
postMessage('ready');
`;

async function main() {
  await withBenchPage(
    async ({ page, browser }) => {
      console.log(`${browser}; ${machineText()}; ${new Date().toISOString()}; n = ${args.n}`);
      const out = await runInBlobWorker(page, WORKER, args.n);
      for (const [k, v] of Object.entries(out)) console.log(`${k.padEnd(48)} ${v.toFixed(2)} µs`);
    },
    { timeoutMin: args['timeout-min'], log },
  );
}

runMain(main);
