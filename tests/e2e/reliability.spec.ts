// Reliability in the browser (docs/reliability.md): a write-and-compaction stream on
// OPFS killed at random points (worker terminated, tab closed) and checked
// against its oracle after every reopen; Web Locks left by a reloaded,
// navigated or closed page; and a bounded soak with memory and OPFS
// sampled. The totals go to target/reliability/*.json for
// docs/reliability.md.
//
// CI runs a bounded slice. SILT_SOAK=1 runs the long version: SILT_KILLS
// kills (default 300) and a soak of SILT_SOAK_MINUTES (default 5).
// SILT_SEED replays a run (every test prints its seed). The long version
// outlasts playwright.config.ts's 15-minute global timeout: run it as
//   SILT_SOAK=1 npx playwright test e2e/reliability.spec.ts --global-timeout=0
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, expect, test, type BrowserContext, type Page } from '@playwright/test';
import { chromiumArgs, executablePath } from '../chromium.js';
import { hold, killRounds, run as runScenario, tryOpen, waitFor as waitForStatus } from '../reliability.mjs';
import { openHarness, promptBound, seedFor } from './harness.js';
import { checkMemory } from './soak-bounds.js';

const SOAK = process.env.SILT_SOAK === '1';
const KILLS = SOAK ? Number(process.env.SILT_KILLS ?? 300) : 25;
const TAB_CLOSES = SOAK ? Math.max(3, Math.round(KILLS / 20)) : 3;
const SOAK_SECONDS = SOAK ? Number(process.env.SILT_SOAK_MINUTES ?? 5) * 60 : 45;
const OUT_DIR = fileURLToPath(new URL('../../target/reliability/', import.meta.url));

type Failure = { code: string; message: string };
type Status = { progress: Record<string, unknown>; failure?: Failure; ended: boolean };
type Reliability = {
  start(scenario: string, args: unknown): number;
  run(scenario: string, args: unknown): Promise<{ ok: true; value: unknown } | ({ ok: false } & Failure)>;
  status(id: number): Status | undefined;
  terminate(id: number): Status | undefined;
};
declare global {
  interface Window {
    reliability: Reliability;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Lib = typeof import('../../js/src/index.js');

/** Loads reliability-page.js into the harness page. */
async function loadReliability(page: Page): Promise<void> {
  await page.evaluate(async () => {
    await import('/test-pages/reliability-page.js' as string);
  });
}

/** The harness page with reliability-page.js loaded. */
async function openReliability(page: Page): Promise<void> {
  await openHarness(page);
  await loadReliability(page);
}

/** Runs a scenario in a new worker of `page`; throws with its code and message if it fails. */
const run = <T>(page: Page, scenario: string, args: unknown): Promise<T> => runScenario(page, scenario, args) as Promise<T>;

/** Waits until `until` holds of a worker's status, or it fails, ends or the time is up. */
const waitFor = (page: Page, id: number, until: (s: Status) => boolean, ms: number): Promise<Status> => waitForStatus(page, id, until, ms) as Promise<Status>;

/**
 * Runs `f` in a persistent context on a new profile directory (OPFS on
 * disk, as for a user), closed and removed afterwards; a watchdog ends
 * this process if closing hangs.
 */
async function withProfile<T>(ms: number, f: (ctx: BrowserContext) => Promise<T>): Promise<T> {
  const profile = mkdtempSync(join(tmpdir(), 'silt-reliability-'));
  const baseURL = test.info().project.use.baseURL!;
  const watchdog = setTimeout(() => {
    console.error(`reliability: browser still open after ${ms} ms; ending the run`);
    process.kill(process.pid, 'SIGTERM');
  }, ms);
  try {
    const ctx = await chromium.launchPersistentContext(profile, { executablePath, args: chromiumArgs, headless: true, baseURL, timeout: 30_000 });
    try {
      return await f(ctx);
    } finally {
      await ctx.close();
    }
  } finally {
    clearTimeout(watchdog);
    rmSync(profile, { recursive: true, force: true });
  }
}

function writeFigures(file: string, figures: unknown): void {
  mkdirSync(OUT_DIR, { recursive: true });
  const line = JSON.stringify(figures);
  writeFileSync(join(OUT_DIR, file), `${line}\n`);
  console.log(`${file}: ${line}`);
}

test.describe('kills', () => {
  test('a write-and-compaction stream killed at random points (worker terminated, tab closed) reopens as a prefix with every synced write', async () => {
    const budget = SOAK ? KILLS * 2_000 + 120_000 : 120_000;
    test.setTimeout(budget + 30_000);
    const seed = seedFor('kills');
    const t0 = Date.now();
    const { totals, problems, checks, base, last } = await withProfile(budget + 20_000, (ctx) =>
      killRounds({
        kills: KILLS,
        tabCloses: TAB_CLOSES,
        seed,
        firstPage: async () => {
          const page = ctx.pages()[0] ?? (await ctx.newPage());
          await openReliability(page);
          return page;
        },
        newPage: async () => {
          const page = await ctx.newPage();
          await openReliability(page);
          return page;
        },
      }),
    );
    if (last !== undefined) expect(last.to).toBe(last.prefix + 500);

    const figures = {
      seed,
      seconds: Math.round((Date.now() - t0) / 1000),
      killsTried: totals.kills + totals.tabCloses,
      ...totals,
      opsInStream: base,
      // Entries and tables db.verify() checked at reopens, in all.
      verifiedEntries: checks.reduce((n, c) => n + c.verified.entries, 0),
      verifiedTables: checks.reduce((n, c) => n + c.verified.tables, 0),
      maxCheckMs: Math.max(...checks.map((c) => c.checkMs)),
    };
    writeFigures('browser-kills.json', figures);
    expect(problems).toEqual([]);
    expect(totals.kills + totals.tabCloses).toBe(KILLS);
    expect(totals.tabCloses).toBe(TAB_CLOSES);
    // Most rounds got as far as checking and writing on.
    expect(totals.checks).toBeGreaterThan(KILLS / 2);
    expect(base).toBeGreaterThan(KILLS * 10);
    expect(figures.verifiedTables).toBeGreaterThan(0);
  });
});

test.describe('stale Web Locks', () => {
  type TryOpen = { outcome: string; message?: string; ms: number; sawHolder?: boolean };

  /** Opens `name` with wait: false: must succeed at once, the lock of a page gone notwithstanding. */
  async function opensAtOnce(page: Page, name: string): Promise<void> {
    // An open of a database nobody held, timed in this run: the measure of "at once".
    const free = (await tryOpen(page, `${name}-free`)) as TryOpen;
    expect(free.outcome).toBe('opened');
    const r = (await tryOpen(page, name)) as TryOpen;
    expect(r, `open(${name}, { wait: false }) right after its holder went away`).toMatchObject({ outcome: 'opened', sawHolder: true });
    console.log(`${test.info().title}: open(${name}, { wait: false }) took ${Math.round(r.ms)} ms (${Math.round(free.ms)} ms unheld)`);
    // Well under the time a stale lock would take to be given up on; the
    // OPFS handles of a dead worker may take a moment to be released (the
    // open retries a refused handle for up to 3 s: HANDLE_RETRY_MS).
    expect(r.ms).toBeLessThan(promptBound(free.ms, 3_000));
  }

  test.beforeEach(async ({ page }) => {
    await openReliability(page);
  });

  test('a page reloaded while it holds a database: the reloaded page opens it at once', async ({ page }) => {
    for (let round = 0; round < 3; round++) {
      await hold(page, 'stale-reload');
      await page.reload();
      await page.waitForFunction(() => document.body.dataset.state === 'ready');
      await loadReliability(page);
      await opensAtOnce(page, 'stale-reload');
    }
  });

  test('a page reloaded, navigated away or closed while it holds a database: another tab opens it at once', async ({ context, page }) => {
    const other = await context.newPage();
    await openReliability(other);
    // Reloaded.
    await hold(page, 'stale-tabs');
    await page.reload();
    await opensAtOnce(other, 'stale-tabs');
    // Navigated away.
    await openReliability(page);
    await hold(page, 'stale-tabs');
    await page.goto('about:blank');
    await opensAtOnce(other, 'stale-tabs');
    // Closed.
    await openReliability(page);
    await hold(page, 'stale-tabs');
    await page.close({ runBeforeUnload: false });
    await opensAtOnce(other, 'stale-tabs');
  });

  test("connect() from a page that is reloaded: the reloaded page's connect() opens at once", async ({ page }) => {
    const connect = () =>
      page.evaluate(async () => {
        const { connect } = (await import('/siltdb/dist/index.js' as string)) as Lib;
        try {
          const db = await connect('stale-connect', { wait: false });
          await db.put('k', new TextEncoder().encode('v'), { sync: true });
          (window as unknown as { held: unknown }).held = db; // kept open until the page goes
          return 'opened';
        } catch (e) {
          return `${(e as { code?: string }).code}: ${(e as Error).message}`;
        }
      });
    expect(await connect()).toBe('opened');
    for (let round = 0; round < 3; round++) {
      await page.reload();
      await page.waitForFunction(() => document.body.dataset.state === 'ready');
      expect(await connect()).toBe('opened');
    }
  });

  test('while one tab holds a database another gets DatabaseLocked saying what to do; its waiting open resolves once the first closes', async ({
    context,
    page,
  }) => {
    await hold(page, 'contended');
    const other = await context.newPage();
    await openReliability(other);
    const free = await run<TryOpen>(other, 'tryOpen', { name: 'contended-free', wait: false });
    expect(free.outcome).toBe('opened');
    const refused = await run<TryOpen>(other, 'tryOpen', { name: 'contended', wait: false });
    expect(refused.outcome).toBe('DatabaseLocked');
    expect(refused.ms).toBeLessThan(promptBound(free.ms));
    // The message names the database, the cause and the remedy.
    expect(refused.message).toContain('"contended"');
    expect(refused.message).toMatch(/another tab or worker/);
    expect(refused.message).toMatch(/wait: true/);

    const waiter = await other.evaluate(() => window.reliability.start('tryOpen', { name: 'contended', wait: true, timeoutMs: 20_000 }));
    await sleep(500);
    const pending = await other.evaluate((w) => window.reliability.status(w), waiter);
    expect(pending?.ended, 'open with wait: true resolved while the other tab still held the database').toBe(false);
    expect(pending?.progress.trying).toBe(true);
    const t0 = Date.now();
    await page.close({ runBeforeUnload: false });
    const done = await waitFor(other, waiter, (s) => s.ended, 15_000);
    expect(done.failure).toBeUndefined();
    expect(done.progress.result).toMatchObject({ outcome: 'opened', sawHolder: true });
    expect(Date.now() - t0).toBeLessThan(promptBound(free.ms, 3_000));
  });
});

test.describe('soak', () => {
  type Sample = {
    t: number;
    ops: number;
    wasmBytes: number;
    heapBytes: number;
    poolFiles: number;
    poolFilesAfter: number;
    poolFree: number;
    poolDataBytes: number;
    opfsFiles: number;
    opfsBytes: number;
    opfsUnreadable: number;
    opfsTableBytes: number;
    opfsLogBytes: number;
    opfsLogFiles: number;
    opfsManifestBytes: number;
    opfsFreeFiles: number;
    tableBytes: number;
    liveTableBytes: number;
    memtableBytes: number;
    pinnedBytes: number;
    blockCacheUsage: number;
    rowCacheUsage: number;
    liveSnapshots: number;
    pinnedResults: number;
    l0Files: number;
    writesWaitingForFiles: number;
  };
  type Soak = {
    seconds: number;
    ops: number;
    byKind: Record<string, number>;
    keysAtEnd: number;
    wrongCount: number;
    wrong: string[];
    errors: string[];
    samples: Sample[];
  };

  test('mixed reads, writes, range deletes, scans, snapshots and compactions for a bounded time: no wrong read, no unbounded growth', async () => {
    const budget = SOAK_SECONDS * 1000 + 60_000;
    test.setTimeout(budget + 30_000);
    const seed = seedFor('soak');
    const result = await withProfile(budget + 20_000, async (ctx) => {
      const page = ctx.pages()[0] ?? (await ctx.newPage());
      await openReliability(page);
      const id = await page.evaluate((a) => window.reliability.start('soak', a), {
        name: `soak-${seed}`,
        seconds: SOAK_SECONDS,
        seed,
        keys: 20_000,
        sampleMs: 1_000,
      });
      const s = await waitFor(page, id, (st) => st.ended, budget);
      if (s.failure) throw new Error(`the soak worker failed: ${s.failure.code}: ${s.failure.message}`);
      if (!s.ended) throw new Error(`the soak did not end in time; last sample ${JSON.stringify(s.progress.sample)}`);
      return s.progress.result as Soak;
    });

    const samples = result.samples;
    const max = (xs: Sample[], f: (s: Sample) => number) => Math.max(...xs.map(f));
    const third = Math.floor(samples.length / 3);
    const middle = samples.slice(third, 2 * third);
    const last = samples.slice(2 * third);
    const peak = (f: (s: Sample) => number) => ({ middle: max(middle, f), last: max(last, f), peak: max(samples, f), final: f(samples.at(-1)!) });
    // The last sample is taken after every view, snapshot and iterator was released.
    const memory = checkMemory(samples.slice(0, -1));
    // Every sample, for the record (soak-bounds.spec.ts's fixture is one).
    mkdirSync(OUT_DIR, { recursive: true });
    writeFileSync(join(OUT_DIR, 'browser-soak-samples.json'), `${JSON.stringify(samples)}\n`);
    const figures = {
      seed,
      minutes: Math.round((result.seconds / 60) * 100) / 100,
      ops: result.ops,
      byKind: result.byKind,
      samples: samples.length,
      wrongReads: result.wrongCount,
      errors: result.errors.length,
      wasmBytes: peak((s) => s.wasmBytes),
      heapBytes: peak((s) => s.heapBytes),
      blockCacheUsage: peak((s) => s.blockCacheUsage),
      memtableBytes: peak((s) => s.memtableBytes),
      memory: memory.figures,
      opfsFiles: peak((s) => s.opfsFiles),
      opfsBytes: peak((s) => s.opfsBytes),
      opfsManifestBytes: peak((s) => s.opfsManifestBytes),
      opfsLogBytes: peak((s) => s.opfsLogBytes),
      opfsLogFiles: peak((s) => s.opfsLogFiles),
      writesWaitingForFiles: samples.at(-1)!.writesWaitingForFiles,
      poolFiles: peak((s) => Math.max(s.poolFiles, s.poolFilesAfter)),
      tableBytes: peak((s) => s.tableBytes),
      liveTableBytes: peak((s) => s.liveTableBytes),
      pinnedBytes: peak((s) => s.pinnedBytes),
      keysAtEnd: result.keysAtEnd,
    };
    writeFigures('browser-soak.json', figures);

    expect(result.wrong).toEqual([]);
    expect(result.wrongCount).toBe(0);
    expect(result.errors).toEqual([]);
    expect(samples.length).toBeGreaterThanOrEqual(SOAK_SECONDS * 0.8);
    expect(result.byKind.scan).toBeGreaterThan(10);
    expect(result.byKind.compact + result.byKind.flush).toBeGreaterThan(0);
    expect(samples.every((s) => s.opfsUnreadable === 0)).toBe(true);

    // No unbounded growth. The first third is warm-up (the LSM tree grows
    // its levels). After it the live data is bounded by the key space, so
    // what a leak does shows as growth after warm-up:
    // - memory: the heap's bytes that the engine's caches and memtables do
    //   not account for must not rise with the operations, and wasm memory
    //   may grow only as far as the heap did (soak-bounds.ts: a cache that
    //   fills for the whole soak on a slow machine passes, a leak of 100
    //   bytes per operation fails, soak-bounds.spec.ts).
    // - OPFS files and bytes swing with flushes and compactions (inputs and
    //   outputs coexist until a compaction ends) and with snapshots and
    //   scans that keep old versions and tables for a few seconds: peaks of
    //   several times the live data are normal churn. 2x the middle peak
    //   (plus slack for one compaction's output) passes churn and fails a
    //   leak that grows the directory by half its size within a third.
    //   Smaller leaks of files fail the check after the run, below.
    // - liveTableBytes (tables kept for iterators and snapshots) likewise.
    // - pinnedBytes: views are held for a bounded number of ops, so pinned
    //   memory is bounded too.
    const grew = (what: string, p: { middle: number; last: number }, factor: number, slack: number) =>
      expect(p.last, `${what}: last third's peak ${p.last} against the middle third's ${p.middle}`).toBeLessThanOrEqual(p.middle * factor + slack);
    expect(memory.problems, JSON.stringify(memory.figures)).toEqual([]);
    grew('OPFS files', figures.opfsFiles, 2, 8);
    grew('OPFS bytes', figures.opfsBytes, 2, 4 << 20);
    grew('live table bytes', figures.liveTableBytes, 2, 4 << 20);
    grew('pinned bytes', figures.pinnedBytes, 2, 1 << 20);
    // After the run, with every view, snapshot and iterator released and
    // background work done: nothing is pinned, no table but the current
    // version's is kept, the tables in the directory (read from the pooled
    // files' headers) are exactly those, and every other byte there is a
    // log, a manifest or a pooled file's 4 KiB header: an obsolete file
    // never deleted, or a freed one that kept its bytes, fails here.
    const final = samples.at(-1)!;
    const at = `final sample ${JSON.stringify(final)}`;
    expect(final.pinnedBytes, at).toBe(0);
    expect(final.liveSnapshots, at).toBe(0);
    expect(final.pinnedResults, at).toBe(0);
    expect(final.liveTableBytes, at).toBe(final.tableBytes);
    expect(final.opfsTableBytes, at).toBe(final.tableBytes);
    expect(final.opfsBytes, at).toBeLessThanOrEqual(final.opfsTableBytes + final.opfsLogBytes + final.opfsManifestBytes + final.opfsFiles * 4096);
    // Logs are deleted once their memtables are flushed: at most two
    // (max_write_buffer_number's default: the active memtable's and one
    // being flushed) at any time. Each holds a memtable's worth (256 KiB
    // here), or up to 8 times that while writes wait for the pool to
    // give a file to flush to (WAITING_MEMTABLE_FACTOR in
    // crates/engine/src/db/mod.rs): the pool tops up asynchronously and a
    // slow machine's flushes and compactions can empty it for a while.
    expect(figures.opfsLogFiles.peak, JSON.stringify(figures.opfsLogFiles)).toBeLessThanOrEqual(2);
    const memtablesWorth = final.writesWaitingForFiles > 0 ? 2 * 8 : 4;
    expect(figures.opfsLogBytes.peak, `${JSON.stringify(figures.opfsLogBytes)}; ${final.writesWaitingForFiles} writes waited for files`).toBeLessThanOrEqual(
      memtablesWorth * 256 * 1024,
    );
    // The manifest is not bounded while the database stays open: it gains
    // an edit per flush and compaction and starts anew only at open (as in
    // LevelDB). Its size is in the figures.
    // Pooled files are reused, not piled up: the files in the directory are
    // the pool's (counted before and after each listing, reliability-soak.js).
    expect(figures.opfsFiles.peak, `OPFS files ${JSON.stringify(figures.opfsFiles)}, pool files ${JSON.stringify(figures.poolFiles)}`).toBeLessThanOrEqual(
      figures.poolFiles.peak,
    );
  });
});
