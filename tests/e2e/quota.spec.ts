// maxBytes on real OPFS in Chromium, through connect(): a full database
// fails the write with QuotaExceeded (the same error path as the browser's
// own QuotaExceededError), keeps every acknowledged write, verifies,
// reopens, and takes writes again once data is deleted and compacted.
// Also persist() / persisted() and the storage estimate in statistics.
// The same on the OPFS stand-ins in Node: js/test/quota.test.ts.
import { expect, test } from '@playwright/test';
import { openHarness } from './harness.js';

type Lib = typeof import('../../js/src/index.js');
type Capped = {
  code: string | undefined;
  message: string;
  acked: number;
  failedVisible: boolean;
  lost: number;
  tables: number;
  bytes: number;
  maxBytes: number;
  afterReopen: number | undefined;
  freed: number;
  newOk: boolean;
  keptOk: boolean;
  deletedGone: boolean;
  MAX: number;
};

test('a capped database: QuotaExceeded, nothing lost, reopens, and recovers after delete + compactRange', async ({ page }) => {
  test.setTimeout(90_000);
  await openHarness(page);
  const r = await page.evaluate(async () => {
    const { cappedDatabase } = (await import('/test-pages/quota-page.js' as string)) as { cappedDatabase(): Promise<Capped> };
    return cappedDatabase();
  });
  expect(r.code).toBe('QuotaExceeded');
  expect(r.message).toContain(`maxBytes is ${r.MAX}`);
  expect(r.message).toMatch(/delete data and compact it/);
  expect(r.acked).toBeGreaterThan(1000);
  expect(r.failedVisible).toBe(false);
  expect(r.lost).toBe(0);
  expect(r.tables).toBeGreaterThan(0);
  expect(r.bytes).toBeLessThanOrEqual(r.MAX);
  expect(r.maxBytes).toBe(r.MAX);
  expect(r.afterReopen).toBe((r.acked - 1) % 251);
  expect(r.freed).toBeLessThan(r.MAX / 2);
  expect(r).toMatchObject({ newOk: true, keptOk: true, deletedGone: true });
});

test('persist() and persisted() answer without throwing; statistics carry the storage estimate', async ({ page }) => {
  await openHarness(page);
  const r = await page.evaluate(async () => {
    const { connect, persist, persisted } = (await import('/siltdb/dist/index.js' as string)) as Lib;
    const granted = await persist();
    const now = await persisted();
    const db = await connect('storage-e2e');
    try {
      await db.put('x', new Uint8Array(10_000));
      const s = (await db.statistics()).storage;
      return { granted: typeof granted, now: typeof now, same: granted === now, s };
    } finally {
      await db.close();
    }
  });
  expect(r.granted).toBe('boolean');
  expect(r.now).toBe('boolean');
  expect(r.same).toBe(true); // persisted() reports what persist() obtained
  expect(r.s).toBeDefined();
  expect(r.s!.quota).toBeGreaterThan(0);
  expect(r.s!.usage).toBeGreaterThan(0);
  expect(typeof r.s!.persisted).toBe('boolean');
  expect(Math.abs(Date.now() - r.s!.updatedAt)).toBeLessThan(60_000);
});
