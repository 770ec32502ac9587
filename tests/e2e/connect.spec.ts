// connect() from a page's main thread: the Promise API over siltdb's own
// worker, and one writer per database across tabs.
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

test('the Promise API: writes, copies back, multiGet, scans, snapshots, statistics', async ({ page }) => {
  await loadLib(page);
  const r = await page.evaluate(async () => {
    const { connect, WriteBatch, SiltError } = window.lib;
    const enc = new TextEncoder();
    const dec = new TextDecoder();
    const db = await connect('remote', { sync: true });
    try {
      await db.put('a', enc.encode('1'));
      await db.write(new WriteBatch().put('b', enc.encode('2')).put('c', enc.encode('3')).put('d', enc.encode('4')));
      const snap = await db.snapshot();
      await db.delete('b');
      await db.deleteRange('c', 'd');
      const got = dec.decode((await db.get('a'))!);
      const gone = await db.get('b');
      const multi = Array.from(await db.multiGet(['a', 'b', 'd', 'zz']), (v) => (v ? dec.decode(v) : null));
      const atSnap = Array.from(await db.multiGet(['b', 'c'], { snapshot: snap }), (v) => (v ? dec.decode(v) : null));
      const scan: string[] = [];
      for await (const [k] of db.iterator({ batchSize: 1 })) scan.push(dec.decode(k));
      const reverse: string[] = [];
      for await (const [k] of db.iterator({ reverse: true, snapshot: snap })) reverse.push(dec.decode(k));
      const early = db.iterator();
      for await (const _ of early) break;
      await snap.release();
      await db.flush();
      await db.compactRange();
      const stats = await db.statistics();
      let badKey = 'none';
      try {
        await db.put(42 as unknown as string, enc.encode('x'));
      } catch (e) {
        badKey = e instanceof SiltError ? e.code : 'not a SiltError';
      }
      return {
        got,
        gone: gone === undefined,
        multi,
        atSnap,
        scan,
        reverse,
        persistent: stats.persistent,
        tables: stats.properties.filesPerLevel.reduce((a, b) => a + b, 0),
        badKey,
      };
    } finally {
      await db.close();
    }
  });
  expect(r).toEqual({
    got: '1',
    gone: true,
    multi: ['1', null, '4', null],
    atSnap: ['2', '3'],
    scan: ['a', 'd'],
    reverse: ['d', 'c', 'b', 'a'],
    persistent: true,
    tables: 1,
    badKey: 'InvalidArgument',
  });
  // Closed: every call fails with Closed.
  const after = await page.evaluate(async () => {
    const db = await window.lib.connect('remote');
    await db.close();
    try {
      await db.get('a');
      return 'no error';
    } catch (e) {
      return (e as { code: string }).code;
    }
  });
  expect(after).toBe('Closed');
});

test('encodings, sublevels, ranges, count, clear and the empty key: the same results through open() in a worker and connect() on a page', async ({ page }) => {
  await loadLib(page);
  const worker = await newWorker(page);
  const inWorker = await run<Record<string, unknown>>(page, worker, 'levelsInWorker', { name: 'levels-worker' });
  const onPage = await page.evaluate(async () => {
    const { levelsShared } = await import('/test-pages/levels-scenarios.js' as string);
    const db = await window.lib.connect('levels-page', { keyEncoding: 'utf8', valueEncoding: 'json', mergeOperator: 'append' });
    try {
      return (await levelsShared(db)) as Record<string, unknown>;
    } finally {
      await db.close();
    }
  });
  expect(onPage).toEqual(inWorker);
  expect(inWorker).toEqual({
    get: { title: 'first', tags: ['a'] },
    getMissing: null,
    multiGet: [{ title: 'second', n: 2 }, null, { title: 'first', tags: ['a'] }],
    perCall: 'InvalidArgument', // 'alpha' is not JSON
    tag: 'alpha',
    emptyKey: { root: 'the empty key' },
    entries: [
      ['!drafts!n1', { title: 'draft' }],
      ['n1', { title: 'first', tags: ['a'] }],
      ['n2', { title: 'second', n: 2 }],
    ],
    keysReverse: ['n2', 'n1', '!drafts!n1'],
    valuesLimited: [{ title: 'first', tags: ['a'] }],
    rootKeys: ['', '!bin!\u0001\u0002', '!notes!!drafts!n1', '!notes!n1', '!notes!n2', '!tags!a'],
    counts: [6, 3, 1, 0, 1],
    afterBatch: [{ title: 'third' }, 'beta', null],
    txResult: {
      own: 'gamma',
      seen: [
        ['a', 'alpha'],
        ['b', 'beta'],
        ['c', 'gamma'],
      ],
    },
    afterTx: [{ title: 'second', n: 3 }, 'gamma'],
    updated: { title: 'third', updated: true },
    tagsAfterClear: ['a'],
    afterDraftsClear: [0, 3],
    sizes: true,
    errors: {
      badValue: 'InvalidArgument',
      badKey: 'InvalidArgument',
      badName: 'InvalidArgument',
      badLimit: 'InvalidArgument',
      badRange: 'InvalidArgument',
      notUtf8: 'InvalidArgument',
    },
  });
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
