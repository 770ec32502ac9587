// maxBytes on real OPFS in Chromium, through connect(): a full database
// fails the write with QuotaExceeded (the same error path as the browser's
// own QuotaExceededError), keeps every acknowledged write, verifies,
// reopens, and takes writes again once data is deleted and compacted.
// Also persist() / persisted() and the storage estimate in statistics.
// The same on the OPFS stand-ins in Node: js/test/quota.test.ts.
import { expect, test } from '@playwright/test';
import { openHarness } from './harness.js';

type Lib = typeof import('../../js/src/index.js');

test('a capped database: QuotaExceeded, nothing lost, reopens, and recovers after delete + compactRange', async ({ page }) => {
  test.setTimeout(90_000);
  await openHarness(page);
  const r = await page.evaluate(async () => {
    const { connect, WriteBatch, SiltError, removeDatabase } = (await import('/siltdb/dist/index.js' as string)) as Lib;
    const MAX = 4 << 20;
    const options = { maxBytes: MAX, writeBufferSize: 64 * 1024 };
    const key = (i: number) => `key-${String(i).padStart(7, '0')}`;
    // Incompressible values, so that LZ4 does not postpone the cap.
    const value = (i: number) => {
      const v = crypto.getRandomValues(new Uint8Array(1000));
      v[0] = i % 251;
      return v;
    };
    await removeDatabase('quota-e2e');
    let db = await connect('quota-e2e', options);
    let acked = 0;
    let error: { code: string; message: string } | undefined;
    try {
      // 32 puts per batch: a batch is all or nothing.
      for (let b = 0; b < 10_000 && !error; b++) {
        const batch = new WriteBatch();
        for (let i = acked; i < acked + 32; i++) batch.put(key(i), value(i));
        try {
          await db.write(batch);
          acked += 32;
        } catch (e) {
          error = e instanceof SiltError ? { code: e.code, message: e.message } : { code: 'not a SiltError', message: String(e) };
        }
      }
      const failedVisible = (await db.get(key(acked))) !== undefined;
      const reads = await db.multiGet(Array.from({ length: acked }, (_, i) => key(i)));
      const lost = reads.filter((v, i) => v === undefined || v[0] !== i % 251 || v.length !== 1000).length;
      const verified = await db.verify();
      const stats = await db.statistics();
      await db.close();

      db = await connect('quota-e2e', options); // a full database reopens
      const afterReopen = (await db.get(key(acked - 1)))?.[0];
      await db.deleteRange(key(0), key(acked - 64));
      await db.compactRange();
      const freed = (await db.statistics()).pool!.bytes;
      for (let i = 0; i < 200; i++) await db.put(`new-${i}`, value(i));
      await db.idle();
      const newOk = (await db.get('new-199'))?.[0] === 199 % 251;
      const keptOk = (await db.get(key(acked - 1)))?.[0] === (acked - 1) % 251;
      const deletedGone = (await db.get(key(5))) === undefined;
      await db.verify();
      return {
        code: error?.code,
        message: error?.message ?? '',
        acked,
        failedVisible,
        lost,
        tables: verified.tables,
        bytes: stats.pool!.bytes,
        maxBytes: stats.pool!.maxBytes,
        afterReopen,
        freed,
        newOk,
        keptOk,
        deletedGone,
        MAX,
      };
    } finally {
      await db.close();
      await removeDatabase('quota-e2e');
    }
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
