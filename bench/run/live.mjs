#!/usr/bin/env node
// `npm run bench:live` (and the end of `npm run bench`): live queries across
// tabs (issue 39). Two tabs share one database through connect(); one tab
// writes, the other shows a range of 100 entries, and we time how long after
// the writer's put resolved (and after it was issued) the other tab has the
// new result, three ways in the same run:
//   - `db.live({ gte, lt, limit: 100 })`, Silt's live query, kept current from
//     the change events (values on);
//   - what an app writes by hand without it: `watch` the range (keys only)
//     and read the 100 entries again with an iterator at each change;
//   - the floor: a `watch` of keys only, its callback's arrival (no result
//     to make at all).
// Each way with the leader writing (the live query in a follower) and with a
// follower writing (the live query in the leading tab). Then writes outside
// the range, and past the window's end, which must cost the live query no
// read: `live.reads` before and after, counted. Every result is checked.
// Writes docs/bench/live.md and docs/bench/live.json.
//
// REQUIRES: bash scripts/build.sh. Never downloads a browser.
//
//   node bench/run/live.mjs [--writes 300] [--reps 3]
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs, runMain } from './args.mjs';
import { withBenchPage } from './browser-session.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const USAGE = 'usage: node bench/run/live.mjs [--writes N] [--reps N] [--timeout-min N]';
const FLAGS = { writes: 300, reps: 3, 'timeout-min': 15 };
const log = (m) => process.stderr.write(`[bench:live] ${m}\n`);
const WAYS = ['live', 'by hand', 'floor'];

/** Loads siltdb into `page` and connects to `name`. */
async function connectTab(page, name) {
  await page.evaluate(async (name) => {
    window.silt = await import('/siltdb/dist/index.js');
    window.db = await window.silt.connect(name);
  }, name);
}

/** Starts `way` in `viewer`: each time its shown range changes, it records when, and which version of `r/050` it shows. */
function startViewer(viewer, way) {
  return viewer.evaluate((way) => {
    const dec = new TextDecoder();
    const seen = new Map(); // the version written, by when it was first shown
    window.seen = seen;
    const record = (entries) => {
      const at = performance.timeOrigin + performance.now();
      if (entries.length !== 100) throw new Error(`a result of ${entries.length} entries, not 100`);
      const v = dec.decode(entries[50][1]);
      if (!seen.has(v)) seen.set(v, at);
    };
    const range = { gte: 'r/', lt: 'r0' };
    if (way === 'live') {
      const live = window.db.live({ ...range, limit: 100 });
      window.live = live;
      const sub = live.subscribe((r) => record(r.entries));
      window.stopViewer = () => {
        sub.unsubscribe();
        live.close();
      };
    } else if (way === 'by hand') {
      // Read again at each change; one read at a time, the last change wins.
      let reading = false;
      let again = false;
      const read = async () => {
        if (reading) {
          again = true;
          return;
        }
        reading = true;
        do {
          again = false;
          const entries = [];
          for await (const e of window.db.iterator({ ...range, limit: 100 })) entries.push(e);
          record(entries);
        } while (again);
        reading = false;
      };
      const w = window.db.watch(range, () => void read());
      void read();
      window.stopViewer = () => w.close();
    } else {
      const w = window.db.watch(range, (e) => {
        if (e.kind === 'put' && dec.decode(e.key) === 'r/000050') seen.set(`v${window.floorCount++}`, performance.timeOrigin + performance.now());
      });
      window.floorCount = 1;
      window.stopViewer = () => w.close();
    }
  }, way);
}

/** `writer` puts `r/000050` `n` times (version 1..n), 2 ms apart; the delays until `viewer` showed each. */
async function delays(writer, viewer, n, way) {
  await startViewer(viewer, way);
  await new Promise((r) => setTimeout(r, 300));
  const sent = await writer.evaluate(async (n) => {
    const enc = new TextEncoder();
    const out = [];
    for (let i = 1; i <= n; i++) {
      const issued = performance.timeOrigin + performance.now();
      await window.db.put('r/000050', enc.encode(`v${i}`));
      out.push({ v: `v${i}`, issued, acked: performance.timeOrigin + performance.now() });
      await new Promise((r) => setTimeout(r, 2));
    }
    return out;
  }, n);
  await new Promise((r) => setTimeout(r, 500));
  const seen = await viewer.evaluate(() => {
    window.stopViewer();
    return Object.fromEntries(window.seen);
  });
  const afterAck = [];
  const afterIssue = [];
  let missing = 0;
  for (const s of sent) {
    const at = seen[s.v];
    if (at === undefined) missing++;
    else {
      afterAck.push(at - s.acked);
      afterIssue.push(at - s.issued);
    }
  }
  const sorted = (a) => [...a].sort((p, q) => p - q);
  const med = (a) => sorted(a)[a.length >> 1];
  const p99 = (a) => sorted(a)[Math.floor(a.length * 0.99)];
  return { afterAckMs: { median: med(afterAck), p99: p99(afterAck) }, afterIssueMs: { median: med(afterIssue), p99: p99(afterIssue) }, missing };
}

/**
 * How long a new query takes to its first result, in `page` (mean of `n`,
 * each made, awaited and closed in turn): a live query of 100 entries and a
 * liveGet, beside what a plain read of the same costs (an iterator of 100, a get).
 */
function firstResults(page, n) {
  return page.evaluate(async (n) => {
    const range = { gte: 'r/', lt: 'r0', limit: 100 };
    const time = async (f) => {
      for (let i = 0; i < 20; i++) await f(); // warm up
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await f();
      return ((performance.now() - t0) * 1000) / n;
    };
    const first = (live) =>
      new Promise((resolve) => {
        const s = live.subscribe((r) => {
          if (r.entries !== undefined && r.entries.length !== 100) throw new Error('not 100 entries');
          queueMicrotask(() => {
            s.unsubscribe();
            live.close();
            resolve();
          });
        });
      });
    return {
      liveUs: await time(() => first(window.db.live(range))),
      liveGetUs: await time(() => first(window.db.liveGet('r/000050'))),
      iteratorUs: await time(async () => {
        let k = 0;
        for await (const _ of window.db.iterator(range)) k++;
        if (k !== 100) throw new Error('not 100 entries');
      }),
      getUs: await time(() => window.db.get('r/000050')),
    };
  }, n);
}

/** Writes outside the range and past a full window: the live query's reads before and after (must not change), and its results. */
async function readsCounted(writer, viewer) {
  const before = await viewer.evaluate(async () => {
    const live = window.db.live({ gte: 'r/', lt: 'r0', limit: 100 });
    window.counted = { live, results: 0 };
    live.subscribe(() => window.counted.results++);
    for (let i = 0; i < 200 && window.counted.results === 0; i++) await new Promise((r) => setTimeout(r, 5));
    return { reads: live.reads, results: window.counted.results };
  });
  await writer.evaluate(async () => {
    const v = new Uint8Array(100).fill(3);
    for (let i = 0; i < 100; i++) await window.db.put(`s/${String(i).padStart(6, '0')}`, v); // outside the range
    for (let i = 0; i < 100; i++) await window.db.put(`r/${String(500 + i).padStart(6, '0')}`, v); // past the window's 100th key
  });
  await new Promise((r) => setTimeout(r, 300));
  const after = await viewer.evaluate(() => {
    const { live, results } = window.counted;
    live.close();
    return { reads: live.reads, results };
  });
  return { writes: 200, readsBefore: before.reads, readsAfter: after.reads, resultsBefore: before.results, resultsAfter: after.results };
}

async function main() {
  const o = parseArgs(process.argv.slice(2), FLAGS, USAGE);
  const info = startRun(`bash scripts/build.sh && node bench/run/live.mjs --writes ${o.writes} --reps ${o.reps}`);
  const results = { options: { writes: o.writes, reps: o.reps, entries: 100 }, rows: [], counted: undefined, first: [] };
  await withBenchPage(
    async ({ page, url, browser }) => {
      const other = await page.context().newPage();
      await other.goto(`${url}benchmarks/`);
      const name = `bench-live-${Date.now()}`;
      await connectTab(page, name);
      await connectTab(other, name);
      if (!(await page.evaluate(() => window.db.isLeader))) throw new Error('expected the first tab to lead');
      // 1,000 keys, r/000000..r/000999, the first 100 shown.
      await page.evaluate(async () => {
        const batch = new window.silt.WriteBatch();
        const v = new Uint8Array(100).fill(1);
        for (let i = 0; i < 1000; i++) batch.put(`r/${String(i).padStart(6, '0')}`, i === 50 ? new TextEncoder().encode('v0') : v);
        await window.db.write(batch);
        await window.db.flush();
        await window.db.idle();
      });
      const runs = [];
      for (let rep = 0; rep < o.reps; rep++) {
        for (const [writerName, writer, viewer] of [
          ['leader', page, other],
          ['follower', other, page],
        ]) {
          // The viewer in front (a background tab's renderer runs at a lower priority).
          await viewer.bringToFront();
          // The ways take turns; which goes first turns too.
          const ways = WAYS.slice(rep % WAYS.length).concat(WAYS.slice(0, rep % WAYS.length));
          for (const way of ways) {
            log(`rep ${rep + 1}, ${writerName} writes, ${way}`);
            // Versions start again at 1: reset r/000050.
            await writer.evaluate(() => window.db.put('r/000050', new TextEncoder().encode('v0')));
            runs.push({ rep, writer: writerName, way, ...(await delays(writer, viewer, o.writes, way)) });
          }
        }
      }
      const med = (a) => [...a].sort((p, q) => p - q)[a.length >> 1];
      for (const writer of ['leader', 'follower']) {
        for (const way of WAYS) {
          const mine = runs.filter((r) => r.writer === writer && r.way === way);
          results.rows.push({
            writer,
            way,
            afterAckMs: { median: med(mine.map((r) => r.afterAckMs.median)), p99: med(mine.map((r) => r.afterAckMs.p99)) },
            afterIssueMs: { median: med(mine.map((r) => r.afterIssueMs.median)), p99: med(mine.map((r) => r.afterIssueMs.p99)) },
            missing: mine.reduce((s, r) => s + r.missing, 0),
            runs: mine,
          });
        }
      }
      for (const [who, p] of [
        ['leader', page],
        ['follower', other],
      ]) {
        await p.bringToFront();
        log(`first results, in the ${who}`);
        results.first.push({ who, ...(await firstResults(p, 200)) });
      }
      await other.bringToFront();
      results.counted = await readsCounted(page, other);
      log(JSON.stringify(results.counted));
      await other.evaluate(() => window.db.close());
      await other.close();
      await page.evaluate(() => window.db.close());
      const meta = info.finish({ browser });
      mkdirSync('docs/bench', { recursive: true });
      writeFileSync('docs/bench/live.json', `${JSON.stringify({ ...meta, ...results }, null, 1)}\n`);
      writeFileSync('docs/bench/live.md', markdown(meta, results));
      log('wrote docs/bench/live.md and docs/bench/live.json');
    },
    { timeoutMin: o['timeout-min'], log },
  );
}

function markdown(meta, r) {
  const f = (x, d = 2) => (x === undefined ? '–' : x.toFixed(d));
  let md =
    `# Live queries across tabs: how soon another tab shows a write (Chromium, OPFS)\n\n` +
    `Generated by \`npm run bench:live\` (bench/run/live.mjs). Two tabs share one database through \`connect()\` (the first leads); 1,000 keys \`r/000000\`..\`r/000999\` ` +
    `with 100-byte values, flushed. One tab puts \`r/000050\` ${r.options.writes} times, one at a time (awaited, 2 ms apart), each time a new version; ` +
    `the other shows the first ${r.options.entries} keys of the range and records when it first shows each version. ` +
    `"After the ack": that moment less the moment the writer's \`put\` resolved; "after the issue": less the moment it called \`put\` (an upper bound on commit to shown). ` +
    `One clock for both tabs (\`performance.timeOrigin + performance.now()\`); the viewer in front. Medians over ${r.options.reps} repetitions of each run's median and p99; ` +
    `the ways take turns within each repetition. \`performance.now()\` has 100 µs resolution here (no cross-origin isolation): a figure is good to ±0.1 ms, and one below zero is the two tabs' rounding. ` +
    `"Versions never shown": versions the viewer never showed because a newer one had come by the time it showed one (by hand, a read that starts after two changes shows only the second).\n\n` +
    `- **live**: \`db.live({ gte: 'r/', lt: 'r0', limit: 100 })\`, subscribed: each result is the 100 entries with their values, kept current from the change events (issue 39).\n` +
    `- **by hand**: what an app writes without it: \`db.watch(range)\` (keys only) and, at each change, the 100 entries read again with \`db.iterator({ ...range, limit: 100 })\` (one read at a time; changes during a read cause one more).\n` +
    `- **floor**: a \`watch\` of keys only: its callback's arrival, with no result made at all.\n\n` +
    metaMarkdown(meta) +
    `\n| writer | way | shown, after the ack (median / p99) | after the issue (median / p99) | versions never shown |\n|---|---|---:|---:|---:|\n`;
  for (const row of r.rows) {
    md += `| ${row.writer} | ${row.way} | ${f(row.afterAckMs.median)} / ${f(row.afterAckMs.p99)} ms | ${f(row.afterIssueMs.median)} / ${f(row.afterIssueMs.p99)} ms | ${row.missing} |\n`;
  }
  const c = r.counted;
  if (c !== undefined) {
    md +=
      `\nReads a live query makes for writes it need not see: a live query of the same 100 entries (in the viewer tab), then ${c.writes} puts from the other tab, ` +
      `100 outside its range and 100 in its range past its 100th key. Its reads: ${c.readsBefore} before, ${c.readsAfter} after; its results: ${c.resultsBefore} before, ${c.resultsAfter} after.\n`;
  }
  if (r.first.length > 0) {
    md +=
      `\nA new query to its first result (made, subscribed, its first result, closed; mean of 200 after 20), beside a plain read of the same ` +
      `(an iterator of the 100 entries; a get):\n\n| tab | \`db.live\` (100 entries) | iterator of 100 | \`db.liveGet\` | \`db.get\` |\n|---|---:|---:|---:|---:|\n`;
    for (const x of r.first) md += `| ${x.who} | ${f(x.liveUs, 0)} µs | ${f(x.iteratorUs, 0)} µs | ${f(x.liveGetUs, 0)} µs | ${f(x.getUs, 0)} µs |\n`;
  }
  const live = r.rows.filter((x) => x.way === 'live');
  md += `\nIssue 39's goals, from this run:\n\n| goal | result | met |\n|---|---|---|\n`;
  for (const row of live) {
    const ok = row.afterIssueMs.median <= 5 && row.afterIssueMs.p99 <= 20;
    md += `| a live query over 100 entries reflects a put committed in another tab (${row.writer} writes) within 5 ms median, p99 ≤ 20 ms (after the issue: commit included) | ${f(row.afterIssueMs.median)} / ${f(row.afterIssueMs.p99)} ms | ${ok ? 'yes' : '**no**'} |\n`;
  }
  if (c !== undefined)
    md += `| a change outside its range costs it no read (counted) | ${c.readsAfter - c.readsBefore} reads for ${c.writes} writes | ${c.readsAfter === c.readsBefore ? 'yes' : '**no**'} |\n`;
  return md;
}

runMain(main, log);
