// siltdb on real OPFS in Chromium's dedicated workers: round trips, the fs
// contract on pooled files, persistence across reloads and browser
// restarts, a worker killed mid-write, memory growth with views held, and
// an exhausted pool.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, expect, test } from '@playwright/test';
import { chromiumArgs, executablePath } from '../chromium.js';
import { newWorker, openHarness, promptBound, run, runFresh, timed } from './harness.js';

test.beforeEach(async ({ page }) => {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  await openHarness(page);
});

test('round trip on OPFS: batch, deletes, pinned get, multiGet, scans, flush, reopen', async ({ page }) => {
  const r = await runFresh<Record<string, unknown>>(page, 'roundTrip', { name: 'round-trip', n: 500 });
  expect(r.owned).toBe('value-5-xxxxx');
  expect(r.pinned).toBe('value-6-xxxxxx');
  expect(r.multiGet).toEqual(['value-0-', null, null, `value-499-${'x'.repeat(499 % 50)}`, null]);
  expect(r.scanCount).toBe(500 - 1 - 10);
  expect(r.reverseFirst).toBe('key-00000499');
  expect((r.filesPerLevel as number[]).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  expect((r.pool as { files: number }).files).toBeGreaterThanOrEqual(16);
  expect(r.afterReopen).toBe(`value-499-${'x'.repeat(499 % 50)}`);
  expect(r.afterReopenCount).toBe(489);
});

test("the engine's fs contract holds on a pool of real OPFS files", async ({ page }) => {
  const r = await runFresh<{ failures: string[]; files: number }>(page, 'fsContract', { dirName: 'fs-contract' });
  expect(r.failures).toEqual([]);
  expect(r.files).toBeGreaterThanOrEqual(48);
});

test("the engine's fs contract holds on the IndexedDB storage's files", async ({ page }) => {
  const r = await runFresh<{ failures: string[]; files: number }>(page, 'fsContract', { dirName: 'fs-contract-idb', storage: 'indexeddb' });
  expect(r.failures).toEqual([]);
  expect(r.files).toBeGreaterThanOrEqual(48);
});

test('data survives a page reload', async ({ page }) => {
  expect(await runFresh(page, 'write', { name: 'reload', from: 0, to: 2000 })).toBe(2000);
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.state === 'ready');
  expect(await runFresh(page, 'verify', { name: 'reload', n: 2000 })).toBe(2000);
});

test('data survives a browser restart with the same profile', async () => {
  test.setTimeout(90_000);
  const profile = mkdtempSync(join(tmpdir(), 'silt-profile-'));
  const baseURL = test.info().project.use.baseURL!;
  const launch = () => chromium.launchPersistentContext(profile, { executablePath, args: chromiumArgs, headless: true, baseURL, timeout: 30_000 });
  const watchdog = setTimeout(() => process.kill(process.pid, 'SIGTERM'), 85_000);
  try {
    let ctx = await launch();
    try {
      const page = ctx.pages()[0] ?? (await ctx.newPage());
      await openHarness(page);
      expect(await runFresh(page, 'write', { name: 'restart', from: 0, to: 1500 })).toBe(1500);
    } finally {
      await ctx.close();
    }
    ctx = await launch();
    try {
      const page = ctx.pages()[0] ?? (await ctx.newPage());
      await openHarness(page);
      expect(await runFresh(page, 'verify', { name: 'restart', n: 1500 })).toBe(1500);
    } finally {
      await ctx.close();
    }
  } finally {
    clearTimeout(watchdog);
    rmSync(profile, { recursive: true, force: true });
  }
});

test('a worker terminated in the middle of a write stream loses no acknowledged synced write', async ({ page }) => {
  for (let round = 0; round < 2; round++) {
    const writer = await newWorker(page);
    await page.evaluate((w) => window.silt.start(w, 'stream', { name: 'killed' }), writer);
    await page.waitForFunction((w) => ((window.silt.progress(w).acked as number) ?? -1) >= 600, writer, { timeout: 20_000 });
    const acked = await page.evaluate((w) => {
      const a = window.silt.progress(w).acked as number;
      window.silt.terminate(w); // no close: the worker is gone mid-write
      return a;
    }, writer);
    const r = await runFresh<{ missingCount: number; missing: number[]; total: number }>(page, 'afterCrash', { name: 'killed', acked });
    expect(r.missing).toEqual([]);
    expect(r.missingCount).toBe(0);
    expect(r.total).toBeGreaterThan(acked);
  }
});

test('views held across wasm memory growth: valid with a resizable buffer, refused when detached', async ({ page }) => {
  type Growth = { mode: string; grew: boolean; heldAfter: string[]; heldLengths: number[]; fresh: string[]; releasedCode: string };
  const resizable = await runFresh<Growth>(page, 'growth', { name: 'growth-r', resizable: true });
  expect(resizable.mode).toBe('resizable');
  expect(resizable.grew).toBe(true);
  expect(resizable.heldAfter).toEqual(['alpha', 'bravo']);
  expect(resizable.fresh).toEqual(['alpha', 'bravo']);
  expect(resizable.releasedCode).toBe('Released');

  const fixed = await runFresh<Growth>(page, 'growth', { name: 'growth-f', resizable: false });
  expect(fixed.mode).toBe('fixed');
  expect(fixed.grew).toBe(true);
  expect(fixed.heldLengths).toEqual([0, 0]); // detached: empty, never other bytes
  expect(fixed.heldAfter).toEqual(['refused', 'refused']);
  expect(fixed.fresh).toEqual(['alpha', 'bravo']);
});

type Bulk = {
  code: string;
  message: string;
  written: number;
  worstMs: number;
  wrong: number;
  exhausted: number;
  waiting: number;
  stalls: number;
  l0AtEnd: number;
  poolFiles: number;
};

test('a bulk load of 1,000,000 entries in batches of 100, awaiting idle() every 100,000, never stalls, waits for a pooled file or fails', async ({ page }) => {
  test.setTimeout(180_000);
  // 116 MB of incompressible writes: far more than the 16 free pooled files
  // opened with the database hold. Writes pay for their flushes and
  // compactions as they go (no L0 pile-up, no stall compacting all of L0 at
  // once); the pool keeper adds files at each await and raises its target
  // after a burst used half of it.
  const r = await runFresh<Bulk>(page, 'bulkNoAwait', { name: 'bulk-idle', n: 1_000_000, valueBytes: 100, yieldEvery: 100_000, idle: true, check: 997 });
  console.log(`bulk load with idle() every 100,000: ${JSON.stringify(r)}`);
  expect(r.code, r.message).toBe('none');
  expect(r.written).toBe(1_000_000);
  expect(r.wrong).toBe(0);
  expect(r.stalls).toBe(0);
  expect(r.waiting).toBe(0);
  expect(r.exhausted).toBe(0);
});

test('ingest() on OPFS: sorted pairs, then an unsorted batch over half of them, both durable and read back after a reopen', async ({ page }) => {
  type Report = { keys: number; files: number; level: number; sequence: number; flushedMemtables: boolean };
  const r = await runFresh<{ first: Report; second: Report; wrongBefore: number; wrongAfter: number; count: number; tables: number }>(page, 'ingestLoad', {
    name: 'ingest',
    n: 100_000,
  });
  expect(r.first.keys).toBe(100_000);
  expect(r.first.level).toBe(6);
  expect(r.second.keys).toBe(100_000);
  // Over the first ingest's keys: the level above it.
  expect(r.second.level).toBe(5);
  expect(r.second.sequence).toBe(r.first.sequence + 1);
  expect(r.count).toBe(150_000);
  expect([r.wrongBefore, r.wrongAfter]).toEqual([0, 0]);
  // (Background work after the reopen may have merged them already.)
  expect(r.tables).toBeGreaterThan(0);
});

test('a transaction of 300,000 puts (31 MB) spills into pooled files of its own, seen only by it, aborted leaves nothing, committed survives a reopen', async ({
  page,
}) => {
  test.setTimeout(120_000);
  const r = await runFresh<{
    afterAbort: { count: number; one: string };
    spillsAborted: number;
    spills: number;
    published: number;
    seenOutside: number;
    seenInside: number;
    checked: number;
    wrongBefore: number;
    wrongAfter: number;
    count: number;
    countAfter: number;
    verified: number;
  }>(page, 'largeTransaction', { name: 'large-tx', n: 300_000, valueBytes: 100, spillBytes: 1 << 20 });
  console.log(`large transaction on OPFS: ${JSON.stringify(r)}`);
  expect(r.afterAbort).toEqual({ count: 1, one: 'before' });
  // About 31 MB in 1 MiB spills, some writes kept in memory while the
  // pool had no free file (it is topped up between awaits).
  expect(r.spillsAborted).toBeGreaterThan(10);
  expect(r.spills).toBeGreaterThan(10);
  expect(r.published).toBe(1);
  expect(r.seenOutside).toBe(1);
  expect(r.seenInside).toBe(r.checked);
  expect([r.wrongBefore, r.wrongAfter]).toEqual([0, 0]);
  expect([r.count, r.countAfter]).toEqual([300_000, 300_000]);
  expect(r.verified).toBeGreaterThan(0);
});

test('a burst of 1,000,000 entries with no await at all, many times what the free pooled files hold, goes through with the default pool', async ({ page }) => {
  test.setTimeout(180_000);
  // 116 MB in batches of 100 with no await: siltdb cannot add a pooled file
  // until the burst ends. Compactions keep their outputs open rather than
  // take the last free files, and a write whose memtable holds all it may
  // runs the running compaction to its end, which gives files back.
  const r = await runFresh<Bulk>(page, 'bulkNoAwait', { name: 'bulk-burst', n: 1_000_000, valueBytes: 100, check: 997 });
  console.log(`burst of 1,000,000 with no await: ${JSON.stringify(r)}`);
  expect(r.code, r.message).toBe('none');
  expect(r.written).toBe(1_000_000);
  expect(r.wrong).toBe(0);
});

test('a burst with no await at all that outgrows the pool waits in memory, then gets PoolExhausted writing nothing, and everything acknowledged is kept', async ({
  page,
}) => {
  // Four free pooled files and batches of 400 KB: once no file is left,
  // writes wait in the memtable (and its log) up to 8 times its size.
  const r = await runFresh<Bulk & { refusedPresent: boolean }>(page, 'bulkNoAwait', {
    name: 'bulk-dry',
    n: 20_000,
    valueBytes: 4096,
    zeros: true,
    options: { poolReserve: 4, writeBufferSize: 1 << 20 },
    check: 1,
  });
  expect(r.code).toBe('PoolExhausted');
  expect(r.message).toContain('wait in memory');
  expect(r.waiting).toBeGreaterThan(0);
  expect(r.written).toBeGreaterThan(1_000);
  expect(r.wrong).toBe(0);
  expect(r.refusedPresent).toBe(false);
  // After the await (idle()), the keeper added files: the pool grew.
  expect(r.poolFiles).toBeGreaterThan(6);
});

test('open() in a second worker of the same page gets DatabaseLocked at once', async ({ page }) => {
  const holder = await newWorker(page);
  await page.evaluate((w) => window.silt.start(w, 'stream', { name: 'held' }), holder);
  await page.waitForFunction((w) => ((window.silt.progress(w).acked as number) ?? -1) >= 0, holder);
  // The same work on a database nobody holds, timed in this run: the bound of "at once".
  const free = await timed(() => runFresh(page, 'tryOpen', { name: 'free-held' }));
  expect(free.value).toBe('opened');
  const refused = await timed(() => runFresh(page, 'tryOpen', { name: 'held' }));
  expect(refused.value).toBe('DatabaseLocked');
  expect(refused.ms).toBeLessThan(promptBound(free.ms));
  await page.evaluate((w) => window.silt.terminate(w), holder);
  expect(await runFresh(page, 'tryOpen', { name: 'held', wait: true })).toBe('opened');
});

test('a closed database stays parked in its worker: a reopen there takes its open files, another worker gets it at once, and nobody waits on it', async ({
  page,
}) => {
  const first = await newWorker(page);
  const r = await run<{
    heldWhileParked: boolean;
    reopenMs: number;
    handlesOpened: number;
    filesBefore: number;
    filesAfter: number;
    last: string;
    count: number;
    heldAfterClose: boolean;
  }>(page, first, 'parkAndReopen', { name: 'parked', n: 5000 });
  expect(r.heldWhileParked).toBe(true);
  expect(r.last).toMatch(/^value-4999-/);
  expect(r.count).toBe(5000);
  // The reopen took the pooled files still open: it opened only those its
  // top-up added (the flush at close used some of the reserve).
  expect(r.filesBefore).toBeGreaterThan(10);
  expect(r.handlesOpened).toBe(r.filesAfter - r.filesBefore);
  expect(r.heldAfterClose).toBe(true); // parked again
  // Another worker, without waiting: the parked holder lets go when asked.
  const free = await timed(() => runFresh(page, 'tryOpen', { name: 'free-parked', read: 'parked' }));
  expect(free.value).toBe('opened missing');
  const taken = await timed(() => runFresh(page, 'tryOpen', { name: 'parked', read: 'parked' }));
  expect(taken.value).toBe('opened yes');
  expect(taken.ms).toBeLessThan(promptBound(free.ms));
  // An open database is not given up: the asker gets DatabaseLocked at once.
  const holder = await newWorker(page);
  await page.evaluate((w) => window.silt.start(w, 'stream', { name: 'parked' }), holder);
  await page.waitForFunction((w) => ((window.silt.progress(w).acked as number) ?? -1) >= 0, holder);
  const refused = await timed(() => runFresh(page, 'tryOpen', { name: 'parked' }));
  expect(refused.value).toBe('DatabaseLocked');
  expect(refused.ms).toBeLessThan(promptBound(free.ms));
  await page.evaluate((w) => window.silt.terminate(w), holder);
  // And a parked database lets go by itself after a few seconds.
  const w = await newWorker(page);
  await run(page, w, 'tryOpen', { name: 'parked', wait: true });
  expect(await run(page, w, 'lockHeld', { name: 'parked' })).toBe(true);
  // Parked for 5 s, then let go: polled, since a loaded machine runs the
  // timer late (a database that is never let go fails after 30 s).
  await expect.poll(() => run(page, w, 'lockHeld', { name: 'parked' }), { timeout: 30_000, intervals: [500] }).toBe(false);
});
