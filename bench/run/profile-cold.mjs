#!/usr/bin/env node
// Where a page's cold start goes (issue 34, item 5), in Debian's Chromium
// with a kept profile: bench/page/cold.html?engine=silt in a new tab, a
// first visit (which writes --keys keys) and --reps return visits, as
// bench/run/page.mjs's cold starts. Each visit lists the `siltdb:<stage>`
// User Timing marks (js/src/core/marks.ts) of the page and of siltdb's
// worker, in ms from the page's script start, each with the time since the
// mark before. Then the median of each stage over the return visits.
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg).
//
//   node bench/run/profile-cold.mjs [--reps 5] [--keys 1000]
import { parseArgs, runMain } from './args.mjs';
import { withBenchPage } from './browser-session.mjs';
import { machineText } from './machine.mjs';

const args = parseArgs(process.argv.slice(2), { reps: 5, keys: 1000, 'timeout-min': 10 }, 'usage: node bench/run/profile-cold.mjs [--reps N] [--keys N]');
const log = (m) => process.stderr.write(`[profile-cold] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The `siltdb:` marks of a realm (page or worker), as epoch milliseconds. */
const marksOf = () =>
  performance
    .getEntriesByType('mark')
    .filter((m) => m.name.startsWith('siltdb:'))
    .map((m) => [m.name.slice(7), performance.timeOrigin + m.startTime]);

/** One visit in a new tab, closed after: the page's result and every mark, in ms from the script's start. */
async function visit(context, url, fill) {
  const tab = await context.newPage();
  tab.on('pageerror', (e) => log(`page error: ${e.message}`));
  try {
    await tab.goto(`${url}bench/page/cold.html?engine=silt&name=profile-cold${fill ? `#fill=${fill}` : ''}`);
    await tab.waitForFunction(() => ['done', 'error'].includes(document.body?.dataset.state), null, { timeout: 60_000 });
    const { result, failure, origin } = await tab.evaluate(() => ({
      result: window.result,
      failure: window.failure,
      origin: performance.timeOrigin,
    }));
    if (!result) throw new Error(`cold start: ${failure}`);
    const marks = [...(await tab.evaluate(marksOf)).map(([s, t]) => [`page: ${s}`, t])];
    for (const w of tab.workers()) {
      const got = await w.evaluate(marksOf).catch(() => []);
      marks.push(...got.map(([s, t]) => [`worker: ${s}`, t]));
    }
    const start = origin + result.scriptStartMs;
    marks.push(['page: value', start + result.stages.value]);
    return { result, marks: marks.map(([s, t]) => [s, t - start]).sort((a, b) => a[1] - b[1]) };
  } finally {
    await tab.close();
    // The closed tab's worker lets go of its files and locks before the next visit.
    await sleep(500);
  }
}

await runMain(async () => {
  await withBenchPage(
    async ({ page, url, browser }) => {
      console.log(`${browser}; ${machineText()}; ${new Date().toISOString()}; ${args.keys} keys written by the first visit, ${args.reps} return visits`);
      const context = page.context();
      const runs = [await visit(context, url, args.keys)];
      for (let i = 0; i < args.reps; i++) runs.push(await visit(context, url, 0));
      const byStage = new Map();
      for (const [i, r] of runs.entries()) {
        console.log(
          `\n${i === 0 ? 'first visit' : `return visit ${i}`}: connect() to the value ${(r.result.stages.value - r.result.stages.imported).toFixed(1)} ms`,
        );
        let last = 0;
        for (const [stage, t] of r.marks) {
          console.log(`  ${t.toFixed(1).padStart(7)} ms  (+${(t - last).toFixed(1).padStart(5)})  ${stage}`);
          if (i > 0) byStage.set(stage, [...(byStage.get(stage) ?? []), t]);
          last = t;
        }
      }
      const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
      console.log('\nreturn visits, median ms from the script start:');
      for (const [stage, ts] of [...byStage].sort((a, b) => median(a[1]) - median(b[1]))) {
        console.log(`  ${median(ts).toFixed(1).padStart(7)}  ${stage}`);
      }
    },
    { timeoutMin: args['timeout-min'], log, httpMaxAge: 3600 },
  );
});
