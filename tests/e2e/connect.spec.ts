// connect() from a page's main thread: its database on OPFS, and one
// writer per database across tabs. The API itself, the same as open()'s,
// is checked by the scenarios both APIs share (scenarios.spec.ts).
import { expect, test, type Page } from '@playwright/test';
import { newWorker, openHarness, promptBound, run } from './harness.js';

type Lib = typeof import('../../js/src/index.js');
declare global {
  interface Window {
    lib: Lib;
    db?: import('../../js/src/index.js').RemoteDatabase;
  }
}

async function loadLib(page: Page): Promise<void> {
  await openHarness(page);
  await page.evaluate(async () => {
    window.lib = (await import('/siltdb/dist/index.js' as string)) as Lib;
  });
}

test("connect()'s database is on OPFS: statistics say persistent, and a compaction leaves one table file", async ({ page }) => {
  await loadLib(page);
  const r = await page.evaluate(async () => {
    const db = await window.lib.connect('remote', { sync: true });
    try {
      for (const k of ['a', 'b', 'c']) await db.put(k, new TextEncoder().encode(k));
      await db.flush();
      await db.compactRange();
      const stats = await db.statistics();
      return { persistent: stats.persistent, tables: stats.properties.filesPerLevel.reduce((a, b) => a + b, 0) };
    } finally {
      await db.close();
    }
  });
  expect(r).toEqual({ persistent: true, tables: 1 });
});

test('a database open() holds in a worker: connect() gets DatabaseLocked, or waits for it to close', async ({ context }) => {
  const a = await context.newPage();
  const b = await context.newPage();
  await loadLib(a);
  await loadLib(b);
  const worker = await newWorker(a);
  expect(await run(a, worker, 'holdOpen', { name: 'exclusive', value: 'tab A' })).toBe('held');

  // A connect() nobody refuses, timed in this run: the measure of "at once".
  const freeMs = await b.evaluate(async () => {
    const t0 = performance.now();
    const db = await window.lib.connect('exclusive-free');
    await db.close();
    return performance.now() - t0;
  });
  const locked = await b.evaluate(async () => {
    const t0 = performance.now();
    try {
      await window.lib.connect('exclusive');
      return { code: 'opened', ms: performance.now() - t0 };
    } catch (e) {
      return { code: (e as { code: string }).code, message: (e as Error).message, ms: performance.now() - t0 };
    }
  });
  expect(locked.code).toBe('DatabaseLocked');
  expect(locked.message).toContain('open() in a worker');
  // The refusal waits by design for a second of the leader's silence.
  expect(locked.ms).toBeLessThan(promptBound(freeMs, 1_000));

  // B waits; A's data is there once A's worker has closed it.
  await b.evaluate(() => {
    (window as unknown as { waiting: Promise<string> }).waiting = window.lib.connect('exclusive', { wait: true }).then(async (db) => {
      const v = await db.get('from');
      await db.close();
      return new TextDecoder().decode(v!);
    });
  });
  await a.waitForTimeout(300);
  expect(
    await b.evaluate(() =>
      Promise.race([(window as unknown as { waiting: Promise<string> }).waiting, new Promise((r) => setTimeout(() => r('still waiting'), 50))]),
    ),
  ).toBe('still waiting');
  // A third tab that does not wait is told, although B's connection leads (and waits).
  const c = await context.newPage();
  await loadLib(c);
  const third = await c.evaluate(async () => {
    try {
      await window.lib.connect('exclusive');
      return 'opened';
    } catch (e) {
      return (e as { code: string }).code;
    }
  });
  expect(third).toBe('DatabaseLocked');
  expect(await run(a, worker, 'closeHeld', {})).toBe('closed');
  expect(await b.evaluate(() => (window as unknown as { waiting: Promise<string> }).waiting)).toBe('tab A');

  // An aborted wait rejects with the signal's reason (an AbortError).
  expect(await run(a, worker, 'holdOpen', { name: 'exclusive', value: 'tab A' })).toBe('held');
  const aborted = await b.evaluate(async () => {
    const ctl = new AbortController();
    const p = window.lib.connect('exclusive', { wait: true, signal: ctl.signal });
    setTimeout(() => ctl.abort(), 100);
    try {
      await p;
      return 'opened';
    } catch (e) {
      return `${(e as Error).constructor.name} ${(e as Error).name}`;
    }
  });
  expect(aborted).toBe('DOMException AbortError');
  // And while a tab's connect() leads, open() in a worker gets DatabaseLocked at once.
  expect(await run(a, worker, 'closeHeld', {})).toBe('closed');
  await b.evaluate(async () => {
    window.db = await window.lib.connect('exclusive');
  });
  expect(await run(a, await newWorker(a), 'tryOpen', { name: 'exclusive' })).toBe('DatabaseLocked');
  await b.evaluate(() => window.db!.close());
});

test("a page cache across two tabs: a value read again comes from the page; another tab's write reaches it with its change record", async ({ context }) => {
  const a = await context.newPage();
  const b = await context.newPage();
  await loadLib(a);
  await loadLib(b);
  const enc = (s: string) => Array.from(new TextEncoder().encode(s));
  await a.evaluate(async () => {
    window.db = await window.lib.connect('cached', { pageCacheCapacity: 1 << 20 });
  });
  await b.evaluate(async () => {
    window.db = await window.lib.connect('cached', { pageCacheCapacity: 1 << 20, valueEncoding: 'utf8' } as never);
  });
  await a.evaluate(async (v) => window.db!.put('k', new Uint8Array(v)), enc('one'));
  const read = () => b.evaluate(async () => (await window.db!.get('k')) as unknown as string);
  expect(await read()).toBe('one');
  expect(await read()).toBe('one');
  const hits = () => b.evaluate(async () => (await window.db!.statistics()).pageCache!.hits);
  expect(await hits()).toBeGreaterThanOrEqual(1);
  // A's write: B's cached value goes when its record comes (B reads it anew).
  await a.evaluate(async (v) => window.db!.put('k', new Uint8Array(v)), enc('two'));
  await expect.poll(read, { timeout: 10_000 }).toBe('two');
  // B's own write is read back at once, whatever it had kept.
  await b.evaluate(async () => {
    await window.db!.put('k', 'three' as never);
  });
  expect(await read()).toBe('three');
  await b.evaluate(() => window.db!.close());
  await a.evaluate(() => window.db!.close());
});
