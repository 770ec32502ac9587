#!/usr/bin/env node
// Where a fill's time goes in Chromium: the suite's fillseq and fillrandom
// (batches of 1,000 16-byte keys and 100-byte values, common.js) into an
// in-memory database on a page of the demo server, each followed by
// `idle()` (its flushes and compactions), timed, then profiled with V8's
// sampling profiler over CDP. In memory: the engine, bindings and
// JavaScript are those of an OPFS database, without the file I/O (which
// bench/run/write-probe.mjs measures). Function names need the wasm's name
// section: build with `WASM_OPT=0 bash scripts/build.sh`.
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg).
//
// `--workloads` picks among fillseq, fillrandom, ingest (sorted pairs) and
// ingestrandom (the same, shuffled): `ingest()` is timed until its Promise
// resolves, the pairs made before the clock starts.
//
//   node bench/run/profile-writes.mjs [--num 200000] [--top 25] [--reps 3] [--time-only] [--workloads fillseq,fillrandom]
import { parseArgs, runMain } from './args.mjs';
import { withBenchPage } from './browser-session.mjs';
import { machineText } from './machine.mjs';
import { printTop, topSelf } from './v8-profile.mjs';

const args = parseArgs(
  process.argv.slice(2),
  { num: 200_000, top: 25, reps: 3, 'time-only': false, workloads: 'fillseq,fillrandom', 'timeout-min': 15 },
  'usage: node bench/run/profile-writes.mjs [--num N] [--top N] [--reps N] [--time-only] [--workloads fillseq,fillrandom,ingest,ingestrandom]',
);
const log = (m) => process.stderr.write(`[profile-writes] ${m}\n`);

async function main() {
  await withBenchPage(
    async ({ page, browser }) => {
      console.log(`${browser}; ${machineText()}; ${new Date().toISOString()}; N = ${args.num}, library defaults, in memory`);
      await page.evaluate(async () => {
        const silt = await import('/siltdb/dist/index.js');
        const { keyOf, valueFor, permutation } = await import('/bench/common.js');
        window.__fill = async (order, num) => {
          // The data is made before the clock starts, as the suite does.
          const keys = order === 'random' ? permutation(num, 11) : Uint32Array.from({ length: num }, (_, i) => i);
          const data = [];
          for (let i = 0; i < num; i += 1000) {
            const part = keys.subarray(i, Math.min(num, i + 1000));
            data.push([Array.from(part, keyOf), Array.from(part, valueFor)]);
          }
          const db = await silt.openMemory();
          const batch = new silt.WriteBatch();
          const t0 = performance.now();
          for (const [ks, vs] of data) {
            batch.clear();
            for (let j = 0; j < ks.length; j++) batch.put(ks[j], vs[j]);
            db.write(batch);
          }
          const written = performance.now();
          await db.idle();
          const done = performance.now();
          db.close();
          return { writesMs: written - t0, totalMs: done - t0 };
        };
        // The pairs of the last call are kept: a profile of the next call
        // with the same arguments shows the ingest, not their making.
        let made = { key: '', pairs: [] };
        window.__ingest = async (order, num) => {
          if (made.key !== `${order} ${num}`) {
            made = { key: '', pairs: [] };
            const keys = order === 'random' ? permutation(num, 11) : Uint32Array.from({ length: num }, (_, i) => i);
            made = { key: `${order} ${num}`, pairs: Array.from(keys, (k) => [keyOf(k), valueFor(k)]) };
          }
          const pairs = made.pairs;
          const db = await silt.openMemory();
          const t0 = performance.now();
          await db.ingest(pairs, { sorted: order !== 'random' });
          const done = performance.now();
          db.close();
          return { writesMs: done - t0, totalMs: done - t0 };
        };
      });
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 50 });
      const workloads = { fillseq: ['__fill', 'seq'], fillrandom: ['__fill', 'random'], ingest: ['__ingest', 'seq'], ingestrandom: ['__ingest', 'random'] };
      for (const name of args.workloads.split(',')) {
        if (!workloads[name]) throw new Error(`unknown workload ${name}`);
        const [fn, order] = workloads[name];
        const runs = [];
        for (let rep = 0; rep < args.reps; rep++) runs.push(await page.evaluate(([f, o, n]) => window[f](o, n), [fn, order, args.num]));
        runs.sort((a, b) => a.totalMs - b.totalMs);
        const m = runs[Math.floor(runs.length / 2)];
        const rate = (ms) => Math.round(args.num / (ms / 1000)).toLocaleString('en-US');
        console.log(`\n${name}: ${rate(m.totalMs)} keys/s to idle() (writes alone ${rate(m.writesMs)} keys/s; median of ${runs.length})`);
        if (args['time-only']) continue;
        await cdp.send('Profiler.start');
        await page.evaluate(([f, o, n]) => window[f](o, n), [fn, order, args.num]);
        const { profile } = await cdp.send('Profiler.stop');
        printTop(topSelf(profile, args.top, null));
      }
    },
    { timeoutMin: args['timeout-min'], log },
  );
}

runMain(main, log);
