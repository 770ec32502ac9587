// The bodies of the browser reliability tests, for every browser driver:
// held databases whose page goes (stale Web Locks), and the random-kill
// test: a
// write-and-compaction stream on OPFS (tests/pages/reliability-worker.js,
// `killStream`) killed at random points, by terminating its worker or by
// closing its whole tab, and checked against its oracle at every reopen.
// tests/e2e/reliability.spec.ts runs it in Chromium through Playwright,
// tests/firefox/run.mjs in Firefox through puppeteer-core: both drivers'
// pages have `evaluate(fn, arg)` and `close({ runBeforeUnload })`.
//
// What it knows of the stream: the database holds a prefix of at least
// `acked` ops (synced and acknowledged, or seen at a reopen), no shorter
// than `base` (checked at a reopen) and no longer than `reach`.

import { schedule } from './pages/schedule.js';

export { schedule };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits until `until` holds of a worker's status, or it fails, ends or the time is up. */
export async function waitFor(page, id, until, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const s = await page.evaluate((w) => window.reliability.status(w), id);
    if (s === undefined) throw new Error(`worker ${id} is gone`);
    if (until(s) || s.failure || s.ended || Date.now() > end) return s;
    await sleep(10);
  }
}

/** Runs a scenario in a new worker of `page`; throws with its code and message if it fails. */
export async function run(page, scenario, args) {
  const r = await page.evaluate(([s, a]) => window.reliability.run(s, a), [scenario, args]);
  if (!r.ok) throw new Error(`scenario ${scenario} failed: ${r.code}: ${r.message}`);
  return r.value;
}

/**
 * Opens database `name` in a worker of `page` (reliability-page.js loaded)
 * and keeps it open.
 */
export async function hold(page, name) {
  const id = await page.evaluate((n) => window.reliability.start('hold', { name: n, wait: true }), name);
  const s = await waitFor(page, id, (st) => st.progress.open === true, 15_000);
  if (s.progress.open !== true) throw new Error(`holding ${name} failed: ${JSON.stringify(s)}`);
}

/**
 * Opens `name` with `wait: false` in a worker of `page`: what happened
 * (`outcome: 'opened'` expected, the lock of a page gone notwithstanding),
 * whether the page saw the holder before, and how long it took.
 *
 * @returns {Promise<{ outcome: string, message?: string, ms: number, sawHolder?: boolean }>}
 */
export function tryOpen(page, name) {
  return run(page, 'tryOpen', { name, wait: false });
}

/**
 * What a stream worker reports once it has checked the database it reopened.
 * @typedef {object} Check
 * @property {number} base
 * @property {number} reach
 * @property {number} acked
 * @property {number} prefix the longest prefix of the stream the database holds, -1 if it holds none
 * @property {number} fewestDiffering
 * @property {number} scanned
 * @property {number} foreign
 * @property {number} disagree
 * @property {{ tables: number, entries: number, tableBytes: number }} verified what `db.verify()` read and checked
 * @property {number} checkMs
 * @property {number} to
 */

/**
 * Runs `kills` rounds on database `kills-<seed>`, `tabCloses` of them
 * closing the tab instead of terminating the worker, then one last reopen
 * that is not killed. `firstPage()` gives a page with reliability-page.js
 * loaded; `newPage()` another one after a tab was closed.
 *
 * @param {{ kills: number, tabCloses: number, seed: number, firstPage: () => Promise<any>, newPage: () => Promise<any> }} o
 * @returns {Promise<{ totals: Record<string, number>, problems: string[], checks: Check[], base: number, last: { to: number, prefix: number } | undefined }>}
 */
export async function killRounds({ kills, tabCloses, seed, firstPage, newPage }) {
  const limit = 20_000; // ops one writer writes at most: bounds the oracle's search
  const random = schedule(seed);
  const name = `kills-${seed}`;
  let base = 0;
  let acked = 0;
  let reach = 0;
  const totals = {
    kills: 0,
    tabCloses: 0,
    killedBeforeCheck: 0,
    killedDuringBackgroundWork: 0,
    checks: 0,
    dataLost: 0,
    undetectedCorruption: 0,
    workerErrors: 0,
  };
  /** @type {string[]} */
  const problems = [];
  /** @type {Check[]} */
  const checks = [];

  const account = (round, s) => {
    if (s?.failure) {
      totals.workerErrors++;
      problems.push(`round ${round}: the worker failed: ${s.failure.code}: ${s.failure.message}`);
    }
    const c = s?.progress.checked;
    if (c === undefined) {
      // Killed before it reported its check: it wrote nothing, or at most
      // `limit` ops past a prefix no longer than `reach`.
      totals.killedBeforeCheck++;
      reach += limit;
      return;
    }
    totals.checks++;
    checks.push(c);
    if (s.progress.busy === true) totals.killedDuringBackgroundWork++;
    if (c.prefix < 0 || c.foreign > 0 || c.disagree > 0) {
      totals.undetectedCorruption++;
      problems.push(`round ${round}: the reopened database is no prefix of the stream: ${JSON.stringify(c)}`);
      return;
    }
    if (c.prefix < c.acked) {
      totals.dataLost++;
      problems.push(`round ${round}: lost synced writes: holds ${c.prefix} ops, ${c.acked} were acknowledged: ${JSON.stringify(c)}`);
    }
    base = c.prefix;
    acked = Math.max(c.prefix, s.progress.acked ?? 0);
    reach = c.to;
  };

  const args = (round, limitOps) => ({ name, seed, base, acked, reach, limit: limitOps, tickEvery: 16 + (round % 3) * 24 });
  const tabRounds = new Set(Array.from({ length: tabCloses }, (_, i) => Math.floor(((i + 0.5) * kills) / tabCloses)));

  let page = await firstPage();
  for (let round = 0; round < kills && problems.length === 0; round++) {
    const id = await page.evaluate((a) => window.reliability.start('killStream', a), args(round, limit));
    // Most kills land in the write stream, some while the reopen is still
    // recovering and checking.
    const early = random() < 0.15;
    if (!early) {
      const w = await waitFor(page, id, (st) => st.progress.checked !== undefined, 30_000);
      if (w.progress.checked === undefined && !w.failure) {
        problems.push(`round ${round}: the reopen did not get through recovery and its check in 30 s: ${JSON.stringify(w.progress)}`);
      }
    }
    await sleep(Math.floor(random() * (early ? 300 : 1200)));
    let s;
    if (tabRounds.has(round)) {
      // The whole tab goes, with its worker, mid-write.
      s = await page.evaluate((w) => window.reliability.status(w), id);
      await page.close({ runBeforeUnload: false });
      totals.tabCloses++;
      page = await newPage();
    } else {
      s = await page.evaluate((w) => window.reliability.terminate(w), id);
      totals.kills++;
    }
    account(round, s);
  }
  // One last reopen, not killed: checks the last kill and writes on.
  let last;
  if (problems.length === 0) {
    const r = await run(page, 'killStream', args(kills, 500));
    account(kills, { progress: { checked: r.check }, ended: true });
    last = { to: r.to, prefix: r.check.prefix };
  }
  return { totals, problems, checks, base, last };
}
