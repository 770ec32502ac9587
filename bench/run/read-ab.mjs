#!/usr/bin/env node
// An A/B of one read option in Chromium, in one dedicated worker on OPFS:
// two databases, the option on in one and off in the other, filled alike
// (the suite's keys and values, in random order, its tuned options) and
// settled; then rounds of gets, each round timed on both databases in
// alternating order, both settled (`await db.idle()`, untimed) before every
// timed pass, so one database's background work never runs in the other's
// timing and a compaction the reads called for is done before the next
// round. Ratios are taken round by round (the two passes of a round run
// seconds apart at most, on a shared machine whose speed drifts).
//
//   readrandom  uniform gets, new random keys every round (a cache cannot
//               have learned them from the round before)
//   readhot     9 gets in 10 on the hot 1% of the keys (every 100th), the
//               rest uniform: the suite's readhot, new draws every round
//
// Each get reads its value through a pinned view, summed byte by byte as
// the suite's checksum does, then released.
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg).
//
//   node bench/run/read-ab.mjs --what row-cache [--workloads readhot,readrandom]
//   node bench/run/read-ab.mjs --what read-triggered-compaction [--workloads readrandom]
//   node bench/run/read-ab.mjs --what none   (both sides alike: an A/A)
//   node bench/run/read-ab.mjs --what compacted   (compactRange() after the fill against not)
//   node bench/run/read-ab.mjs --what idle   (an idle moment after the fill, the idle compaction on, against it off)
//   [--num 100000] [--reads 10000] [--rounds 12] [--json FILE (appends JSON lines)]
//   [--options JSON (over the tuned options on both sides, e.g. {"bloomBitsPerKey":0})]
//   [--defaults (siltdb's library defaults on both sides instead of the tuned options)]
import { appendFileSync } from 'node:fs';
import { list, parseArgs, runMain } from './args.mjs';
import { runInBlobWorker, withBenchPage } from './browser-session.mjs';
import { machineText } from './machine.mjs';

const USAGE =
  'usage: node bench/run/read-ab.mjs --what row-cache|read-triggered-compaction|compacted|idle|none [--workloads readrandom,readhot] [--num N] [--reads N] [--rounds N] [--json FILE] [--options JSON] [--defaults]';
const args = parseArgs(
  process.argv.slice(2),
  { what: 'row-cache', workloads: 'readhot,readrandom', num: 100_000, reads: 10_000, rounds: 12, json: '', options: '{}', defaults: false, 'timeout-min': 15 },
  USAGE,
);
const log = (m) => process.stderr.write(`[read-ab] ${m}\n`);

const SIDES = {
  'row-cache': { on: { rowCacheCapacity: 16 << 20 }, off: { rowCacheCapacity: 0 } },
  'read-triggered-compaction': { on: { readTriggeredCompaction: true }, off: { readTriggeredCompaction: false } },
  // The fill compacted (compactRange() once it settled) against left as it
  // is, neither compacting on reads: what a compacted layout itself gives.
  compacted: { on: { readTriggeredCompaction: false, compactAfterFill: true }, off: { readTriggeredCompaction: false } },
  // An idle moment after the fill with the idle compaction asked for
  // (issue 35) against the default, without it.
  idle: { on: { waitIdle: true, idleCompactionMaxBytes: 64 << 20 }, off: {} },
  // Both alike: an A/A, what the method itself tells apart.
  none: { on: {}, off: {} },
};
if (!(args.what in SIDES)) throw new Error(`--what: one of ${Object.keys(SIDES).join(', ')}, not ${args.what}\n${USAGE}`);
const workloads = list(String(args.workloads));
for (const w of workloads) if (w !== 'readrandom' && w !== 'readhot') throw new Error(`--workloads: readrandom or readhot, not ${w}\n${USAGE}`);

const WORKER = `
const { open, removeDatabase, WriteBatch } = await import('PACKAGE');
const { keyOf, valueFor, permutation, rng, below, checksum } = await import(new URL('/bench/common.js', location.origin).href);
// The suite's tuned options, with --options over them.
const { TUNED } = await import(new URL('/bench/silt-options.js', location.origin).href);
onmessage = async ({ data }) => postMessage(await run(data));
async function run({ num, reads, rounds, workloads, options, defaults, sides }) {
  const tuned = { ...(defaults ? {} : TUNED), ...options };
  const names = ['read-ab-on', 'read-ab-off'];
  for (const n of names) await removeDatabase(n);
  const opened = async (name, { compactAfterFill = false, waitIdle = false, ...side }) => ({ db: await open(name, { ...tuned, ...side }), compactAfterFill, waitIdle });
  const both = [await opened(names[0], sides.on), await opened(names[1], sides.off)];
  const dbs = both.map((d) => d.db);
  const keys = Array.from({ length: num }, (_, i) => keyOf(i));
  const order = permutation(num, 5);
  const b = new WriteBatch();
  for (const { db, compactAfterFill, waitIdle } of both) {
    for (let i = 0; i < num; i += 1000) {
      b.clear();
      for (let j = i; j < Math.min(num, i + 1000); j++) b.put(keys[order[j]], valueFor(order[j]));
      db.write(b);
    }
    await db.idle();
    if (compactAfterFill) await db.compactRange();
    await db.idle();
    if (waitIdle) {
      // An idle moment: the worker starts the idle compaction a second after the last write.
      await new Promise((r) => setTimeout(r, 1500));
      await db.idle();
    }
  }
  const shape = (db) => JSON.stringify(db.statistics().properties.filesPerLevel);
  const out = { options: tuned, filled: dbs.map(shape), rounds: [] };
  const hot = Math.max(1, Math.floor(num / 100));
  for (let round = 0; round < rounds; round++) {
    for (const w of workloads) {
      const r = rng(1000 + round * 7 + (w === 'readhot' ? 3 : 0));
      const idx = Array.from({ length: reads }, () => (w === 'readhot' && below(r, 10) < 9 ? (below(r, hot) * 100) % num : below(r, num)));
      let expected = 0;
      for (const i of idx) expected += checksum(valueFor(i));
      const us = [0, 0];
      const turns = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const s of turns) {
        for (const db of dbs) await db.idle();
        const db = dbs[s];
        const t0 = performance.now();
        let sum = 0;
        for (let i = 0; i < reads; i++) {
          const v = db.getPinned(keys[idx[i]]);
          sum += checksum(v.bytes);
          v.release();
        }
        us[s] = ((performance.now() - t0) * 1000) / reads;
        if (sum !== expected) throw new Error(w + ' round ' + round + ': checksum ' + sum + ', expected ' + expected);
      }
      out.rounds.push({ round, workload: w, onUs: +us[0].toFixed(4), offUs: +us[1].toFixed(4), offOverOn: +(us[1] / us[0]).toFixed(4) });
    }
  }
  out.settled = dbs.map(shape);
  out.tickers = dbs.map((db) => {
    const t = db.statistics().tickers;
    return Object.fromEntries(Object.entries(t).filter(([k, v]) => v > 0 && /row\\.cache|compaction\\.(read|idle)|bloom/.test(k)));
  });
  for (const db of dbs) db.close();
  for (const n of names) await removeDatabase(n);
  return out;
}
postMessage('ready');
`;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main() {
  await withBenchPage(
    async ({ page, browser }) => {
      const date = new Date().toISOString();
      const machine = machineText();
      const sides = SIDES[args.what];
      console.log(`read A/B of ${args.what}; ${browser}; ${machine}; ${date}`);
      const out = await runInBlobWorker(page, WORKER, {
        num: args.num,
        reads: args.reads,
        rounds: args.rounds,
        workloads,
        options: JSON.parse(args.options),
        defaults: args.defaults,
        sides,
      });
      console.log(
        `N = ${args.num}, ${args.reads} gets per pass, ${args.rounds} rounds; options ${JSON.stringify(out.options)}; on ${JSON.stringify(sides.on)}, off ${JSON.stringify(sides.off)}`,
      );
      console.log(`files per level after the fill: on ${out.filled[0]}, off ${out.filled[1]}; at the end: on ${out.settled[0]}, off ${out.settled[1]}`);
      console.log(`tickers: on ${JSON.stringify(out.tickers[0])}; off ${JSON.stringify(out.tickers[1])}`);
      const summary = {};
      for (const w of workloads) {
        const rs = out.rounds.filter((r) => r.workload === w);
        for (const r of rs)
          console.log(
            `${w.padEnd(10)} round ${String(r.round).padStart(2)}: on ${r.onUs.toFixed(3)} µs, off ${r.offUs.toFixed(3)} µs, off/on ${r.offOverOn.toFixed(2)}×`,
          );
        summary[w] = {
          medianOffOverOn: +median(rs.map((r) => r.offOverOn)).toFixed(3),
          medianOnUs: median(rs.map((r) => r.onUs)),
          medianOffUs: median(rs.map((r) => r.offUs)),
        };
        console.log(
          `${w}: median off/on ${summary[w].medianOffOverOn}× (on ${summary[w].medianOnUs.toFixed(3)} µs, off ${summary[w].medianOffUs.toFixed(3)} µs)`,
        );
      }
      if (args.json) {
        const base = {
          type: 'read-ab',
          what: args.what,
          browser,
          machine,
          date,
          num: args.num,
          reads: args.reads,
          rounds: args.rounds,
          workloads,
          defaults: args.defaults,
          options: out.options,
          on: sides.on,
          off: sides.off,
        };
        const lines = [{ ...base, filled: out.filled, settled: out.settled, tickers: out.tickers, summary }, ...out.rounds.map((r) => ({ ...base, ...r }))];
        appendFileSync(args.json, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
      }
    },
    { timeoutMin: args['timeout-min'], log },
  );
}

runMain(main, log);
