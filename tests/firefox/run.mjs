// siltdb in Firefox: Debian's firefox-esr, driven by puppeteer-core over
// WebDriver BiDi (no geckodriver, no downloaded browser), with a persistent
// profile so that OPFS is on disk as a user's is. It runs the scenarios the
// Chromium tests run (tests/pages/*: the same pages and workers) and checks
// the same results: OPFS round trips and persistence across a reload, the
// Web Lock between a worker and a page and stale locks of pages gone, the
// scenarios both APIs share (js/test/scenarios) through open() and
// connect() alike, on databases and on sublevels, iterators and
// autoRefresh scans, kills (the random-kill test's body is shared with
// Chromium's: tests/reliability.mjs), quota, bad input, and backups, among
// them that Firefox writes the export Chromium wrote (the fixture the native
// engine reads) byte for byte.
//
//   node tests/firefox/run.mjs [--only name]
//
// Writes target/test-results/firefox.json (totals for scripts/test.sh). A
// watchdog ends a run that hangs; the browser and the server are stopped in
// `finally`.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { root, runChecks, startServer, watchdog, writeReport } from '../browser-run.mjs';
import { hold, killRounds, tryOpen } from '../reliability.mjs';
import { soakTabs } from '../tabs-soak.mjs';
import { suites } from '../../js/test/scenarios/index.js';
import { namesOf, problems } from '../../js/test/scenarios/run.js';

const FIREFOX = process.env.SILT_FIREFOX ?? '/usr/bin/firefox-esr';
const PORT = Number(process.env.SILT_FIREFOX_PORT ?? 8788);
const BASE = `http://127.0.0.1:${PORT}`;
// The shared scenarios (four checks of 60-odd scenarios, each opening
// databases of its own) took 3.3 of these minutes on the 2-core machine,
// and up to 9 beside a loaded Playwright run (2026-11-29).
// SILT_SOAK_HOURS=N makes the many-tab soak (below) N hours long.
const SOAK_HOURS = Number(process.env.SILT_SOAK_HOURS ?? 0);
const dog = watchdog('firefox', 16 + Math.ceil(SOAK_HOURS * 60));

async function harness(browser) {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.goto(`${BASE}/test-pages/harness.html`);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', { timeout: 20_000 });
  return { page, problems };
}

/** A harness page with reliability-page.js loaded (tests/reliability.mjs drives it). */
async function reliabilityPage(browser) {
  const { page } = await harness(browser);
  await page.evaluate(async () => {
    await import('/test-pages/reliability-page.js');
  });
  return page;
}

/** Runs a worker scenario (tests/pages/harness-worker.js) in a new worker of `page`. */
async function run(page, scenario, args) {
  const r = await page.evaluate(
    async (s, a) => {
      const w = window.silt.newWorker();
      return window.silt.run(w, s, a);
    },
    scenario,
    args,
  );
  if (!r.ok) throw new Error(`scenario ${scenario} failed: ${r.code}: ${r.message}`);
  return r.value;
}

/**
 * `run`, and the worker ends after it: the shared suites make a worker per
 * suite, and workers left alive keep slices of the origin's handle budget
 * (128) until their parked databases let go.
 */
async function runAndEnd(page, scenario, args) {
  const r = await page.evaluate(
    async (s, a) => {
      const w = window.silt.newWorker();
      try {
        return await window.silt.run(w, s, a);
      } finally {
        window.silt.terminate(w);
      }
    },
    scenario,
    args,
  );
  if (!r.ok) throw new Error(`scenario ${scenario} failed: ${r.code}: ${r.message}`);
  return r.value;
}

/** What the suite saw of the browser, for the support matrix (README). */
const seen = {};

const checks = {
  async 'the module loads with SIMD128 in a worker; its memory mode'(browser) {
    const { page } = await harness(browser);
    const r = await page.evaluate(async () => {
      const { simd128Enabled, memoryMode } = await import('/siltdb/dist/index.js');
      return { simd: await simd128Enabled(), mode: memoryMode() };
    });
    assert.equal(r.simd, true);
    seen.memoryMode = r.mode;
  },

  async 'OPFS round trip: writes, reads every way, reopen'(browser) {
    const { page } = await harness(browser);
    const r = await run(page, 'roundTrip', { name: 'round-trip', n: 500 });
    assert.equal(r.owned, 'value-5-xxxxx');
    assert.equal(r.pinned, 'value-6-xxxxxx');
    assert.deepEqual(r.multiGet, ['value-0-', null, null, `value-499-${'x'.repeat(499 % 50)}`, null]);
    assert.equal(r.scanCount, 489);
    assert.equal(r.reverseFirst, 'key-00000499');
    assert.ok(r.pool.files >= 16);
    assert.equal(r.afterReopenCount, 489);
  },

  async 'a large transaction spills into files of its own on OPFS, seen only by it, and its commit survives a reopen'(browser) {
    const { page } = await harness(browser);
    const r = await run(page, 'largeTransaction', { name: 'large-tx', n: 50_000, valueBytes: 100, spillBytes: 256 << 10, awaitEvery: 5_000 });
    assert.deepEqual(r.afterAbort, { count: 1, one: 'before' });
    assert.ok(r.spillsAborted > 5 && r.spills > 5, JSON.stringify(r));
    assert.equal(r.published, 1);
    assert.equal(r.seenOutside, 1);
    assert.equal(r.seenInside, r.checked);
    assert.deepEqual([r.wrongBefore, r.wrongAfter, r.count, r.countAfter], [0, 0, 50_000, 50_000]);
  },

  async 'the handle budget: databases with heavy pools never have more sync access handles open than handleBudget; the open past it is PoolExhausted naming it'(
    browser,
  ) {
    const { page } = await harness(browser);
    const r = await run(page, 'openMany', { prefix: 'hb-one-', most: 12, options: { handleBudget: 64, poolReserve: 16 } });
    assert.ok(r.opened >= 2, JSON.stringify(r));
    assert.equal(r.refused?.code, 'PoolExhausted');
    assert.match(r.refused.message, /budget of 64/);
    assert.ok(r.peak <= 64, `peak ${r.peak}`);
    assert.equal(
      r.handles.reduce((a, h) => a + h.database, 0),
      r.open,
    );
  },

  async 'data survives a page reload'(browser) {
    const { page } = await harness(browser);
    assert.equal(await run(page, 'write', { name: 'reload', from: 0, to: 2000 }), 2000);
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.state === 'ready', { timeout: 20_000 });
    assert.equal(await run(page, 'verify', { name: 'reload', n: 2000 }), 2000);
  },

  async 'a database open() holds in a worker: connect() from a page gets DatabaseLocked'(browser) {
    const { page } = await harness(browser);
    assert.equal(await run(page, 'holdOpen', { name: 'exclusive', value: 'held' }), 'held');
    const code = await page.evaluate(async () => {
      const { connect } = await import('/siltdb/dist/index.js');
      try {
        await connect('exclusive');
        return 'opened';
      } catch (e) {
        return e.code;
      }
    });
    assert.equal(code, 'DatabaseLocked');
  },

  async 'connect() in two tabs: one leads, the other reads its writes and watches them, and takes over when the leader closes'(browser) {
    const a = await harness(browser);
    const b = await harness(browser);
    const connect = (page) =>
      page.evaluate(async () => {
        const { connect } = await import('/siltdb/dist/index.js');
        window.db = await connect('two-tabs', { keyEncoding: 'utf8', valueEncoding: 'utf8' });
        window.seen = [];
        // 'utf8' keys: watch reports them as strings.
        window.db.watch({}, (e) => window.seen.push(e.kind === 'gap' ? 'gap' : `${e.kind} ${e.key}`));
        return window.db.isLeader;
      });
    const leads = [await connect(a.page), await connect(b.page)];
    assert.deepEqual(leads, [true, false]);
    await a.page.evaluate(() => window.db.put('from-a', 'hello'));
    await b.page.evaluate(() => window.db.put('from-b', 'hi'));
    assert.equal(await b.page.evaluate(() => window.db.get('from-a')), 'hello');
    assert.equal(await a.page.evaluate(() => window.db.get('from-b')), 'hi');
    await a.page.waitForFunction(() => window.seen.includes('put from-b'), { timeout: 5_000 });
    await b.page.waitForFunction(() => window.seen.includes('put from-a'), { timeout: 5_000 });
    // The leading tab goes: the other takes over, and has everything.
    await a.page.close();
    const after = await b.page.evaluate(async () => {
      await window.db.put('after', 'failover');
      return { leader: window.db.isLeader, a: await window.db.get('from-a'), after: await window.db.get('after') };
    });
    assert.deepEqual(after, { leader: true, a: 'hello', after: 'failover' });
    await b.page.evaluate(() => window.db.close());
  },

  async 'iterators: break, return() and release() let go of everything; batch scans cover their bounds'(browser) {
    const { page } = await harness(browser);
    const r = await run(page, 'iteratorEnds', { name: 'ends' });
    for (const end of [r.break, r.return, r.release]) {
      assert.ok(end.during.pinned.tables > 0);
      assert.deepEqual(end.after.pinned, { memtables: 0, tables: 0 });
    }
    assert.equal(r.release.code, 'Released');
    const b = await run(page, 'batchScans', { name: 'batches', n: 6000 });
    assert.equal(b.scans.length, 4);
    for (const s of b.scans) {
      assert.equal(s.mismatch, null);
      assert.equal(s.read, s.expected);
      assert.equal(s.seekOk, true);
    }
  },

  async 'a worker terminated in the middle of a write stream loses no acknowledged synced write'(browser) {
    const { page } = await harness(browser);
    for (let round = 0; round < 2; round++) {
      const writer = await page.evaluate(() => window.silt.newWorker());
      await page.evaluate((w) => window.silt.start(w, 'stream', { name: 'killed' }), writer);
      await page.waitForFunction((w) => (window.silt.progress(w).acked ?? -1) >= 600, { timeout: 20_000 }, writer);
      const acked = await page.evaluate((w) => {
        const a = window.silt.progress(w).acked;
        window.silt.terminate(w); // no close: the worker is gone mid-write
        return a;
      }, writer);
      const r = await run(page, 'afterCrash', { name: 'killed', acked });
      assert.deepEqual(r.missing, []);
      assert.equal(r.missingCount, 0);
      assert.ok(r.total > acked);
    }
  },

  async 'a page reloaded, navigated away or closed while it holds a database: it, or another tab, opens it at once'(browser) {
    const page = await reliabilityPage(browser);
    const other = await reliabilityPage(browser);
    const opensAtOnce = async (p, what) => {
      const r = await tryOpen(p, 'stale');
      assert.equal(r.outcome, 'opened', `${what}: ${JSON.stringify(r)}`);
      assert.equal(r.sawHolder, true, what);
      assert.ok(r.ms < 5_000, `${what}: open(wait: false) took ${Math.round(r.ms)} ms`);
    };
    const reload = async (p) => {
      await p.reload();
      await p.waitForFunction(() => document.body.dataset.state === 'ready', { timeout: 20_000 });
      await p.evaluate(async () => {
        await import('/test-pages/reliability-page.js');
      });
    };
    await hold(page, 'stale');
    await reload(page);
    await opensAtOnce(page, 'the reloaded page');
    await hold(page, 'stale');
    await reload(page);
    await opensAtOnce(other, 'another tab, the holder reloaded');
    await hold(page, 'stale');
    await page.goto('about:blank');
    await opensAtOnce(other, 'another tab, the holder navigated away');
    const third = await reliabilityPage(browser);
    await hold(third, 'stale');
    await third.close({ runBeforeUnload: false });
    await opensAtOnce(other, 'another tab, the holder closed');
    await page.close(); // on about:blank, which the cleanup after each check leaves
  },

  async 'autoRefresh scans with a snapshot, both ways: exactly the snapshot, the old OPFS files deleted mid-scan'(browser) {
    const { page } = await harness(browser);
    for (const reverse of [false, true]) {
      const n = 10_000;
      const r = await run(page, 'refreshingScan', { name: `scan-on-${reverse}`, n, rounds: 3, autoRefresh: true, reverse });
      assert.equal(r.mismatch, null);
      assert.equal(r.yielded, r.expectedCount);
      assert.ok(r.expectedCount > n * 0.99);
      assert.equal(r.roundsDone, 3);
      assert.ok(r.oldGoneAt > r.rounds[0].at && r.oldGoneAt < r.yielded, `old files gone at ${r.oldGoneAt} of ${r.yielded}`);
      assert.equal(r.held.oldLeft, 0);
      assert.equal(r.held.tables, r.held.currentTables);
      assert.deepEqual(r.held.pinned, { memtables: 0, tables: 0 });
      assert.ok(r.refreshes >= 3);
      assert.deepEqual(r.after.pinned, { memtables: 0, tables: 0 });
    }
  },

  async 'three tabs, mixed work, the leader closed or reloaded every few seconds: nothing acknowledged lost, nothing doubled (tests/tabs-soak.mjs)'(browser) {
    const seed = process.env.SILT_SEED ? Number(process.env.SILT_SEED) : Math.floor(Math.random() * 2 ** 32);
    console.log(`    tabs soak: seed ${seed} (replay with SILT_SEED=${seed} node tests/firefox/run.mjs --only 'three tabs')`);
    const long = SOAK_HOURS > 0;
    const { samples, ...figures } = await soakTabs({
      seconds: long ? Math.round(SOAK_HOURS * 3600) : 40,
      seed,
      newPage: async () => (await harness(browser)).page,
      sampleMs: long ? 10_000 : 2_000,
      failoverMs: long ? [5_000, 30_000] : [2_000, 6_000],
      log: long ? (line) => console.log(`    ${line}`) : () => {},
    });
    mkdirSync(join(root, 'target/reliability'), { recursive: true });
    writeFileSync(
      join(root, 'target/reliability/tabs-soak-firefox.json'),
      `${JSON.stringify({ browser: 'firefox', date: new Date().toISOString(), seed, ...figures, samples })}\n`,
    );
    console.log(`    tabs soak (Firefox): ${JSON.stringify({ seed, ...figures })}`);
    assert.deepEqual(figures.problems, [], `seed ${seed}`);
    assert.ok(figures.failovers.close + figures.failovers.reload > 0);
    assert.ok(figures.byKind.transaction > 0 && figures.byKind.scan > 0, JSON.stringify(figures.byKind));
  },

  async 'a write-and-compaction stream killed at random points (worker terminated, tab closed) reopens as a prefix with every synced write'(browser) {
    const seed = process.env.SILT_SEED ? Number(process.env.SILT_SEED) : Math.floor(Math.random() * 2 ** 32);
    console.log(`    kills: seed ${seed} (replay with SILT_SEED=${seed} node tests/firefox/run.mjs --only kill)`);
    const kills = 25;
    const tabCloses = 3;
    const open = () => reliabilityPage(browser);
    const { totals, problems, checks, base, last } = await killRounds({ kills, tabCloses, seed, firstPage: open, newPage: open });
    console.log(`    kills (Firefox): ${JSON.stringify({ ...totals, opsInStream: base })}`);
    assert.deepEqual(problems, [], `seed ${seed}`);
    assert.equal(last.to, last.prefix + 500);
    assert.equal(totals.kills + totals.tabCloses, kills);
    assert.equal(totals.tabCloses, tabCloses);
    assert.ok(totals.checks > kills / 2, `only ${totals.checks} of ${kills} rounds got through their check`);
    assert.ok(base > kills * 10, `the stream got to only ${base} ops`);
    assert.ok(
      checks.some((c) => c.verified.tables > 0),
      'no reopen verified a table',
    );
  },

  async 'a capped database: QuotaExceeded, nothing lost, reopens, and recovers after delete + compactRange'(browser) {
    const { page } = await harness(browser);
    const r = await page.evaluate(async () => (await import('/test-pages/quota-page.js')).cappedDatabase());
    assert.equal(r.code, 'QuotaExceeded');
    assert.ok(r.message.includes(`maxBytes is ${r.MAX}`), r.message);
    assert.ok(r.acked > 1000);
    assert.equal(r.failedVisible, false);
    assert.equal(r.lost, 0);
    assert.ok(r.bytes <= r.MAX);
    assert.equal(r.afterReopen, (r.acked - 1) % 251);
    assert.ok(r.freed < r.MAX / 2);
    assert.deepEqual([r.newOk, r.keptOk, r.deletedGone], [true, true, true]);
  },

  async "the engine's fs contract holds on a pool of real OPFS files"(browser) {
    const { page } = await harness(browser);
    const r = await run(page, 'fsContract', { dirName: 'fs-contract' });
    assert.deepEqual(r.failures, []);
    assert.ok(r.files >= 48);
  },

  async 'random bad input through connect(): typed errors only, the worker stays alive, the data stays right'(browser) {
    const { page } = await harness(browser);
    const seed = Number(process.env.SILT_BAD_INPUT_SEED ?? Date.now() % 1_000_000);
    const report = await page.evaluate(async (seed) => {
      const m = await import('/test-pages/bad-input-page.js');
      return m.runSequences({ seed, sequences: 6, steps: 120 });
    }, seed);
    console.log(`    bad-input (Firefox, seed ${seed}): ${report.calls} calls in ${report.sequences} sequences, ${report.problemCount} problems`);
    assert.deepEqual(report.problems, [], `seed ${seed}`);
    assert.ok(report.calls > 500);
  },

  async 'an export written in Firefox, in either form, is the fixture Chromium wrote and the native engine reads, byte for byte'(browser) {
    const { page } = await harness(browser);
    for (const [form, version] of [
      ['entries', 1],
      ['tables', 2],
    ]) {
      const bytes = Buffer.from(await run(page, 'fixtureExport', { name: `fixture-src-${form}`, form }));
      const fixture = readFileSync(join(root, `crates/engine/tests/fixtures/chromium-export-v${version}.siltdump`));
      assert.ok(bytes.equals(fixture), `${form}: ${bytes.length} bytes, the fixture ${fixture.length}`);
    }
  },

  async 'importDatabase copies a database, and a damaged export leaves none'(browser) {
    const { page } = await harness(browser);
    const r = await run(page, 'importRoundTrip', { from: 'backup-src', to: 'backup-copy', n: 20_000 });
    assert.equal(r.count, 20_000);
    assert.equal(r.last, 'v19999');
    assert.equal(r.verified, 20_000);
    const d = await run(page, 'importDamaged', { from: 'damaged-src', to: 'damaged-copy', damage: 'flip' });
    assert.deepEqual(d, { code: 'ChecksumMismatch', after: 'NotFound', count: 5000 });
  },
};

// The scenarios both APIs share (js/test/scenarios, the files vitest and
// tests/e2e/scenarios.spec.ts run): through open() in a worker and
// connect() on a page, each on databases and on sublevels of them.
for (const [api, through] of [
  ['worker', 'open() in a worker'],
  ['connect', 'connect() on a page'],
]) {
  for (const sublevel of [false, true]) {
    checks[`the shared scenarios through ${through}${sublevel ? ', on sublevels' : ''}`] = async (browser) => {
      const { page } = await harness(browser);
      const got = [];
      for (const [suite] of suites) {
        const args = { suites: [suite], sublevel };
        const part =
          api === 'worker'
            ? await runAndEnd(page, 'sharedSuiteInWorker', args)
            : await page.evaluate(async (a) => (await import('/test-pages/shared-scenarios.js')).sharedSuiteOnPage(a), args);
        got.push(...part);
      }
      assert.deepEqual(
        got.map((o) => o.name),
        namesOf(suites, sublevel),
      );
      assert.deepEqual(problems(got), []);
      const total = Math.round(got.reduce((n, o) => n + o.ms, 0));
      const slowest = [...got].sort((a, b) => b.ms - a.ms).slice(0, 3);
      console.log(`    ${got.length} scenarios in ${total} ms; slowest: ${slowest.map((o) => `${o.name} (${Math.round(o.ms)} ms)`).join('; ')}`);
    };
  }
}

// And through open() on the IndexedDB storage (issue 38), which a browser
// whose workers have no sync access handles gets.
checks['the shared scenarios through open() in a worker on the IndexedDB storage'] = async (browser) => {
  const { page } = await harness(browser);
  const got = [];
  for (const [suite] of suites) got.push(...(await runAndEnd(page, 'sharedSuiteInWorker', { suites: [suite], sublevel: false, storage: 'indexeddb' })));
  assert.deepEqual(
    got.map((o) => o.name),
    namesOf(suites, false),
  );
  assert.deepEqual(problems(got), []);
};

let results = [];
let server;
let browser;
let profile;
try {
  server = await startServer(PORT);
  profile = mkdtempSync(join(tmpdir(), 'silt-firefox-'));
  browser = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile, protocolTimeout: 120_000 });
  const version = await browser.version();
  console.log(`firefox: ${version} (${FIREFOX}), puppeteer-core over WebDriver BiDi, profile on disk`);
  results = await runChecks(checks, browser, {
    after: async () => {
      for (const p of await browser.pages()) if (p.url() !== 'about:blank') await p.close().catch(() => {});
    },
  });
} finally {
  await browser?.close().catch(() => {});
  server?.kill();
  if (profile) rmSync(profile, { recursive: true, force: true });
}
const code = writeReport('firefox', results, seen);
console.log(`firefox: ${results.filter((r) => r.ok).length} passed, ${results.filter((r) => !r.ok).length} failed; memory mode ${seen.memoryMode ?? '?'}`);
clearTimeout(dog);
process.exit(code);
