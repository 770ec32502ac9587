#!/usr/bin/env node
// Issue 38's goals for the IndexedDB storage, measured in one run: in one
// dedicated worker (bench/browser/page/storage-worker.js), Silt's open() on
// OPFS and on the IndexedDB storage (`storage: 'indexeddb'`: files in
// memory, committed to IndexedDB), the same keys (db_bench's `%016d`,
// 100-byte values), library defaults but the storage; a get each way; a
// durable put each way (`sync: true`, then `await db.persisted()`, each put
// awaited before the next); and IndexedDB's own readwrite transaction per
// put, awaited until complete, with the browser's default durability and
// with `durability: 'strict'` (which the IndexedDB storage asks for after a
// sync write). Repetitions take turns. Debian's Chromium with a kept
// profile, or --browser firefox. Writes docs/bench/storage{,-firefox}.{json,md}
// (or --out DIR).
//
//   node bench/run/storage.mjs [--keys 100000] [--gets 20000] [--puts 1000] [--reps 3] [--browser chromium|firefox] [--out docs/bench]
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, runMain } from './args.mjs';
import { withBenchPage } from './browser-session.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const o = parseArgs(
  process.argv.slice(2),
  { keys: 100_000, gets: 20_000, puts: 1000, reps: 3, browser: 'chromium', out: 'docs/bench', 'timeout-min': 20 },
  'usage: node bench/run/storage.mjs [--keys N] [--gets N] [--puts N] [--reps N] [--browser chromium|firefox] [--out DIR]',
);
const log = (m) => process.stderr.write(`[storage] ${m}\n`);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** The figures, each a list of repetitions (µs per call). */
const ROWS = [
  ['opfs get', 'Silt on OPFS: get'],
  ['indexeddb get', 'Silt on the IndexedDB storage: get'],
  ['idb get', 'IndexedDB: get (a readonly transaction each)'],
  ['opfs put', 'Silt on OPFS: put (sync: true) + await persisted()'],
  ['indexeddb put', 'Silt on the IndexedDB storage: put (sync: true) + await persisted()'],
  ['opfs put default', 'Silt on OPFS: put (default durability) + await persisted()'],
  ['indexeddb put default', 'Silt on the IndexedDB storage: put (default durability) + await persisted()'],
  ['idb put default', "IndexedDB: put (a readwrite transaction each, the browser's default durability)"],
  ['idb put strict', "IndexedDB: put (a readwrite transaction each, durability: 'strict')"],
];

async function main() {
  const firefox = o.browser === 'firefox';
  const info = startRun(
    `bash scripts/build.sh && node bench/run/storage.mjs --keys ${o.keys} --gets ${o.gets} --puts ${o.puts} --reps ${o.reps}${firefox ? ' --browser firefox' : ''}`,
  );
  await withBenchPage(
    async ({ page, browser }) => {
      const runs = await page.evaluate(
        async ({ keys, gets, puts, reps }) => {
          const { rpc } = await import('/bench/page/rpc.js');
          const call = rpc(new Worker('/bench/page/storage-worker.js', { type: 'module' }));
          const out = {};
          const add = (row, us) => {
            out[row] = [...(out[row] ?? []), us];
          };
          const storages = [await call(['open', 'bench-storage-opfs', 'opfs', keys]), await call(['open', 'bench-storage-idb', 'indexeddb', keys])];
          if (storages.join() !== 'opfs,indexeddb') throw new Error(`the databases opened on ${storages.join(', ')}`);
          await call(['idbOpen', 'bench-storage-raw', keys]);
          for (let rep = 0; rep < reps; rep++) {
            const seed = 1000 + rep;
            // Who goes first turns with each repetition.
            const order = rep % 2 === 0 ? ['opfs', 'indexeddb'] : ['indexeddb', 'opfs'];
            for (const s of order) add(`${s} get`, await call(['get', s, gets, keys, seed]));
            add('idb get', await call(['idbGet', Math.min(gets, 5000), keys, seed]));
            for (const s of order) add(`${s} put`, await call(['put', s, true, puts, keys, seed]));
            for (const s of order) add(`${s} put default`, await call(['put', s, false, puts, keys, seed]));
            add('idb put default', await call(['idbPut', 'default', puts, keys, seed]));
            add('idb put strict', await call(['idbPut', 'strict', puts, keys, seed]));
          }
          await call(['close']);
          return out;
        },
        { keys: o.keys, gets: o.gets, puts: o.puts, reps: o.reps },
      );
      const meta = info.finish({ browser });
      const figures = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, median(v)]));
      const goals = {
        getRatio: figures['indexeddb get'] / figures['opfs get'],
        putRatio: figures['indexeddb put default'] / figures['idb put default'],
        putRatioStrict: figures['indexeddb put'] / figures['idb put strict'],
      };
      mkdirSync(o.out, { recursive: true });
      const stem = firefox ? 'storage-firefox' : 'storage';
      const lines = [
        { type: 'header', ...meta, options: { keys: o.keys, gets: o.gets, puts: o.puts, reps: o.reps } },
        { type: 'result', figures, runs, goals },
      ];
      writeFileSync(join(o.out, `${stem}.json`), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
      const md = markdown(meta, figures, runs, goals);
      writeFileSync(join(o.out, `${stem}.md`), md);
      process.stdout.write(md);
    },
    { timeoutMin: o['timeout-min'], log, path: 'bench/page/', browser: firefox ? 'firefox' : 'chromium' },
  );
}

function markdown(meta, figures, runs, goals) {
  const us = (x) => (x >= 100 ? `${x.toFixed(0)} µs` : `${x.toFixed(2)} µs`);
  const met = (ok) => (ok ? 'yes' : '**no**');
  let md =
    `# Silt's IndexedDB storage beside its OPFS storage and IndexedDB itself (${firefox() ? 'Firefox' : 'Chromium'})\n\n` +
    'Generated by `node bench/run/storage.mjs` (the worker side in bench/browser/page/storage-worker.js). ' +
    `In one dedicated worker: Silt's \`open()\` on OPFS and on the IndexedDB storage (\`storage: 'indexeddb'\`), library defaults but the storage, ` +
    `each holding the same ${o.keys.toLocaleString('en-US')} keys (\`%016d\`, 100-byte values, written in batches of 1,000, flushed, background work done, committed); ` +
    `and IndexedDB's own object store of them (the key the string, the value a Uint8Array). A get is \`db.get(key)\` (a copy the caller owns), ` +
    `${o.gets.toLocaleString('en-US')} random keys a repetition (IndexedDB: ${Math.min(o.gets, 5000).toLocaleString('en-US')}, a readonly transaction each); ` +
    `a put is \`db.put(key, value, { sync })\` then \`await db.persisted()\` (what a write waits for to survive a crash of the tab on either storage: ` +
    `on OPFS the put itself, on IndexedDB the commit that carries it, with durability 'strict' after a \`sync: true\` write and the browser's default after another), ` +
    `${o.puts.toLocaleString('en-US')} a repetition, each awaited before the next; ` +
    "IndexedDB's put is a readwrite transaction of its own, awaited until `complete`, with the browser's default durability and with `'strict'`. " +
    `The median of ${o.reps} repetitions, in which the two storages take turns going first.\n\n` +
    metaMarkdown(meta) +
    '\n| operation | median | each repetition |\n|---|---:|---|\n';
  for (const [row, label] of ROWS) md += `| ${label} | ${us(figures[row])} | ${runs[row].map((x) => x.toFixed(1)).join(', ')} |\n`;
  md +=
    "\nIssue 38's goals for the IndexedDB storage, from this run:\n\n| goal | result | met |\n|---|---|---|\n" +
    `| its get within 2× of OPFS's | ${goals.getRatio.toFixed(2)}× | ${met(goals.getRatio <= 2)} |\n` +
    `| its put awaited until committed no slower than IndexedDB's readwrite transaction, each with the browser's default durability | ${goals.putRatio.toFixed(2)}× | ${met(goals.putRatio <= 1)} |\n` +
    `| its \`sync: true\` put (committed with durability 'strict') no slower than IndexedDB's readwrite transaction with durability 'strict' | ${goals.putRatioStrict.toFixed(2)}× | ${met(goals.putRatioStrict <= 1)} |\n`;
  return md;
}

const firefox = () => o.browser === 'firefox';

runMain(main);
