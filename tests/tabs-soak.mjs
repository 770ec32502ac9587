// The many-tab soak (issue 40, item 4), for every browser driver: three
// tabs connect() to one database and run mixed work on it
// (tests/pages/tabs-soak-page.js: writes, transactions, merges, range
// deletes, scans, reads, snapshots, a watch), while the tab that leads is
// closed, reloaded or crashed every few seconds and a new tab takes the
// place of one that went. Every `sampleMs` it samples what each tab did,
// the pages' JS heaps (Chromium), the origin's storage and the leader's
// wasm memory, tables and memtables. At the end every tab's keys are
// checked against what that tab knew: each acknowledged write there once,
// the log one run of numbers, counters and sums within their acknowledged
// and attempted counts, no wrong read in any tab, the database verified.
// tests/e2e/tabs-soak.spec.ts runs it in Chromium through Playwright, and
// tests/firefox/run.mjs in Firefox through puppeteer-core: both drivers'
// pages have `evaluate(fn, arg)`, `reload()` and `close({ runBeforeUnload })`.

import { schedule } from './reliability.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Median of the samples of `metric` taken between `from` and `to` seconds.
 * @param {{ t: number }[]} samples
 */
function median(samples, metric, from, to) {
  const xs = samples
    .filter((s) => s.t >= from && s.t < to)
    .map(metric)
    .filter((x) => x > 0)
    .sort((a, b) => a - b);
  return xs.length === 0 ? 0 : xs[xs.length >> 1];
}

/**
 * @param {{
 *   seconds: number, seed: number, sampleMs?: number, failoverMs?: [number, number],
 *   newPage: () => Promise<any>, crash?: (page: any) => Promise<void>,
 *   log?: (line: string) => void,
 * }} o `newPage()`: a page with the harness loaded (the soak's page script is imported here);
 *   `crash(page)`: crashes the page's renderer, where the driver can.
 */
export async function soakTabs(o) {
  const { seconds, seed, newPage, crash, log = () => {} } = o;
  const sampleMs = o.sampleMs ?? 10_000;
  const [fMin, fMax] = o.failoverMs ?? [3_000, 15_000];
  const rnd = schedule(seed);
  const name = `tabs-soak-${seed}`;
  let next = 0;
  /** @type {{ page: any, id: string }[]} */
  const tabs = [];
  /** Last states of the tabs that went. */
  const gone = [];
  const samples = [];
  const failovers = { close: 0, reload: 0, crash: 0 };
  const problems = [];

  const start = async (page) => {
    const id = `T${next++}`;
    await page.evaluate(async () => {
      await import('/test-pages/tabs-soak-page.js');
    });
    await page.evaluate((a) => window.soak.start(a), { name, id, seed: seed * 31 + next });
    return { page, id };
  };
  const leader = async () => {
    for (let tries = 0; tries < 400; tries++) {
      for (let i = 0; i < tabs.length; i++) {
        if (await tabs[i].page.evaluate(() => window.soak.isLeader()).catch(() => false)) return i;
      }
      await sleep(50);
    }
    throw new Error('no tab leads after 20 s');
  };

  for (let i = 0; i < 3; i++) tabs.push(await start(await newPage()));
  const began = Date.now();
  let lastSample = 0;
  let nextFailover = began + fMin + rnd() * (fMax - fMin);
  while (Date.now() - began < seconds * 1000) {
    await sleep(250);
    if (Date.now() - lastSample >= sampleMs) {
      lastSample = Date.now();
      const each = await Promise.all(tabs.map((t) => t.page.evaluate(() => window.soak.sample()).catch(() => undefined)));
      const got = each.filter((x) => x !== undefined);
      const lead = got.find((x) => x.leader !== undefined)?.leader ?? {};
      const states = await Promise.all(tabs.map((t) => t.page.evaluate(() => window.soak.state()).catch(() => undefined)));
      const sample = {
        t: Math.round((Date.now() - began) / 1000),
        ops: got.reduce((a, x) => a + x.ops, 0) + gone.reduce((a, g) => a + Object.values(g.ops).reduce((x, y) => x + y, 0), 0),
        pageHeap: Math.max(0, ...got.map((x) => x.pageHeap)),
        storage: Math.max(0, ...got.map((x) => x.storage)),
        wasmBytes: lead.wasmBytes ?? 0,
        heapBytes: lead.heapBytes ?? 0,
        tableBytes: lead.tableBytes ?? 0,
        memtableBytes: lead.memtableBytes ?? 0,
        blockCacheUsage: lead.blockCacheUsage ?? 0,
        wrong: states.reduce((a, st) => a + (st?.wrong.length ?? 0) + (st?.errors.length ?? 0), 0),
      };
      samples.push(sample);
      log(`tabs soak: ${JSON.stringify(sample)}`);
      for (const st of states) if (st !== undefined && (st.wrong.length > 0 || st.errors.length > 0)) problems.push(...st.wrong, ...st.errors);
      if (problems.length > 0) break;
    }
    if (Date.now() >= nextFailover) {
      const i = await leader();
      const victim = tabs[i];
      const kinds = crash === undefined ? ['close', 'reload'] : ['close', 'reload', 'crash'];
      const how = kinds[Math.floor(rnd() * kinds.length)];
      // What it knew so far: anything it learns later is not checked, and
      // what it sends later (up to its end, mid-stream) bounds nothing.
      gone.push({ ...(await victim.page.evaluate(() => window.soak.state())), gone: true });
      failovers[how]++;
      if (how === 'reload') {
        await victim.page.reload();
        await victim.page.waitForFunction(() => document.body.dataset.state === 'ready', { timeout: 30_000 });
        tabs[i] = await start(victim.page);
      } else {
        if (how === 'crash') await crash(victim.page);
        await victim.page.close({ runBeforeUnload: false }).catch(() => {});
        tabs[i] = await start(await newPage());
      }
      // The tab that went is checked now, from another, and its keys
      // deleted: however many tabs come and go, the data stays that of
      // three. (It led: what it had in flight went with its worker, so
      // nothing of it can still arrive.)
      const went = gone.at(-1);
      const other = tabs[(i + 1) % tabs.length];
      const c = await other.page.evaluate((all) => window.soak.check(all), [went]);
      problems.push(...c.problems);
      await other.page.evaluate((id) => window.soak.forget(id), went.id);
      went.checked = true;
      nextFailover = Date.now() + fMin + rnd() * (fMax - fMin);
    }
  }
  // Every tab stops; what each knew is checked from one of them.
  const live = [];
  for (const t of tabs) live.push(await t.page.evaluate(() => window.soak.stop()));
  const checked = await tabs[0].page.evaluate((all) => window.soak.check(all), [...gone.filter((g) => !g.checked), ...live]);
  problems.push(...checked.problems);
  for (const st of live) {
    problems.push(...st.errors.map((e) => `${st.id}: ${e}`));
    if (st.doubled > 0) problems.push(`${st.id}: its watch saw ${st.doubled} changes twice`);
  }
  for (const t of tabs) await t.page.evaluate(() => window.soak.close()).catch(() => {});

  // Flat: the medians of the ten minutes after the first ten (or of the
  // second third of a shorter run) against those of the last ten (third).
  const total = samples.at(-1)?.t ?? 0;
  const warm = total >= 1800 ? 600 : Math.floor(total / 3);
  const span = total >= 1800 ? 600 : Math.floor(total / 3);
  const flat = {};
  for (const metric of ['pageHeap', 'storage', 'wasmBytes', 'heapBytes', 'tableBytes']) {
    const early = median(samples, (s) => s[metric], warm, warm + span);
    const late = median(samples, (s) => s[metric], total - span, total + 1);
    flat[metric] = { early, late, ratio: early > 0 ? Math.round((late / early) * 1000) / 1000 : null };
  }
  const byKind = {};
  for (const st of [...gone, ...live]) for (const [k, v] of Object.entries(st.ops)) byKind[k] = (byKind[k] ?? 0) + v;
  return {
    seconds: Math.round((Date.now() - began) / 1000),
    tabs: gone.length + live.length,
    failovers,
    ops: Object.values(byKind).reduce((a, b) => a + b, 0),
    byKind,
    writesAcknowledged: [...gone, ...live].reduce((a, st) => a + st.ackedCount, 0),
    gaps: live.reduce((a, st) => a + st.gaps, 0),
    verified: checked.verified,
    flat,
    samples,
    problems: problems.slice(0, 40),
  };
}
