#!/usr/bin/env node
// profile-reads.mjs in Chromium: the read workloads of
// bench/browser/read-workloads.js on a page of the demo server, timed
// there, then profiled with Chromium's V8 sampling profiler over CDP.
// Chromium's V8 is not Node's: what is slow in one may not be in the
// other. Function names need the wasm's name section: build with
// `WASM_OPT=0 bash scripts/build.sh`.
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg).
//
//   node bench/run/profile-browser.mjs [--num 100000] [--reads 20000] [--top 20] [--reps 3] [--time-only] [--only get] [--options '{"rowCacheCapacity":16777216}']
import { parseArgs, runMain } from './args.mjs';
import { withBenchPage } from './browser-session.mjs';
import { machineText } from './machine.mjs';
import { printTop, topSelf } from './v8-profile.mjs';

const args = parseArgs(
  process.argv.slice(2),
  { num: 100_000, reads: 20_000, top: 20, reps: 3, 'time-only': false, only: '', options: '{}', 'timeout-min': 15 },
  'usage: node bench/run/profile-browser.mjs [--num N] [--reads N] [--top N] [--reps N] [--time-only] [--only getPinned|get|readhot|multiGet|seek+100|count|backup] [--options JSON (openMemory options, e.g. {"rowCacheCapacity":16777216})]',
);
const log = (m) => process.stderr.write(`[profile] ${m}\n`);

async function main() {
  await withBenchPage(
    async ({ page, browser }) => {
      console.log(`${browser}; ${machineText()}; ${new Date().toISOString()}; N = ${args.num}, ${args.reads} reads`);
      const names = await page.evaluate(async ({ num, reads, options }) => {
        const silt = await import('/siltdb/dist/index.js');
        const { readWorkloads, timeWorkload } = await import('/bench/read-workloads.js');
        window.__reads = { ...(await readWorkloads(silt, { num, reads, options: JSON.parse(options) })), timeWorkload };
        return Object.keys(window.__reads.workloads);
      }, args);
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 50 });
      for (const name of names) {
        if (args.only && args.only !== name) continue;
        const times = await page.evaluate(([n, reps]) => window.__reads.timeWorkload(window.__reads.workloads[n], reps), [name, args.reps]);
        const unit = name === 'multiGet' ? 'key' : 'op';
        console.log(`\n${name}: ${times[Math.floor(times.length / 2)].toFixed(3)} µs per ${unit} (median of ${times.length}; fastest ${times[0].toFixed(3)})`);
        if (args['time-only']) continue;
        await cdp.send('Profiler.start');
        await page.evaluate(async (n) => {
          for (let rep = 0; rep < 5; rep++) await window.__reads.workloads[n]();
        }, name);
        const { profile } = await cdp.send('Profiler.stop');
        printTop(topSelf(profile, args.top, null));
      }
      await page.evaluate(() => window.__reads.db.close());
    },
    { timeoutMin: args['timeout-min'], log },
  );
}

runMain(main, log);
