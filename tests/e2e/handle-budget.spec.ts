// The handle budget (issue 38) on real OPFS in Chromium: siltdb never has
// more sync access handles open than `handleBudget`, every database of
// every worker of the origin together; an open past it fails with
// PoolExhausted naming the budget; databases only parked let go of theirs
// when another worker needs them. Each worker counts its own open handles
// (tests/pages/handle-scenarios.js wraps createSyncAccessHandle and close).
import { expect, test } from '@playwright/test';
import { newWorker, openHarness, run } from './harness.js';

type Many = {
  opened: number;
  refused: { code: string; message: string } | null;
  open: number;
  peak: number;
  handles: { database: number; worker: number; budget: number }[];
};

test.beforeEach(async ({ page }) => {
  await openHarness(page);
});

test('one worker: databases with heavy pools stay within the budget, and the open past it fails with PoolExhausted naming it', async ({ page }) => {
  test.setTimeout(120_000);
  const w = await newWorker(page);
  const r = await run<Many>(page, w, 'openMany', { prefix: 'hb-one-', most: 12, options: { handleBudget: 64, poolReserve: 16 } });
  expect(r.opened).toBeGreaterThanOrEqual(2);
  expect(r.refused?.code).toBe('PoolExhausted');
  expect(r.refused?.message).toContain('budget of 64');
  expect(r.peak).toBeLessThanOrEqual(64);
  // statistics().handles agrees with what the browser has open.
  expect(r.handles.every((h) => h.budget === 64 && h.worker === r.open)).toBe(true);
  expect(r.handles.reduce((a, h) => a + h.database, 0)).toBe(r.open);
});

test('two workers share one budget, and a parked database lets go of its handles for the other worker', async ({ page }) => {
  test.setTimeout(120_000);
  const options = { handleBudget: 64, poolReserve: 16 };
  const a = await newWorker(page);
  const b = await newWorker(page);
  const first = await run<Many>(page, a, 'openMany', { prefix: 'hb-a-', most: 2, options });
  expect(first.opened).toBe(2);
  const second = await run<Many>(page, b, 'openMany', { prefix: 'hb-b-', most: 12, options });
  expect(second.refused?.code).toBe('PoolExhausted');
  expect(second.refused?.message).toContain('budget of 64');
  const aNow = await run<{ open: number; peak: number }>(page, a, 'handleCounts', {});
  expect(aNow.open + second.open).toBeLessThanOrEqual(64);
  expect(aNow.peak + second.peak).toBeGreaterThan(0);
  // Worker a closes its databases: parked, they keep their handles until someone needs them.
  const closed = await run<{ closed: number; open: number }>(page, a, 'closeMany', { prefix: 'hb-a-' });
  expect(closed.closed).toBe(2);
  expect(closed.open).toBeGreaterThan(0);
  const third = await run<Many>(page, b, 'openMany', { prefix: 'hb-c-', most: 1, options });
  expect(third.refused).toBeNull();
  expect(third.opened).toBe(1);
  const aAfter = await run<{ open: number }>(page, a, 'handleCounts', {});
  expect(aAfter.open + third.open).toBeLessThanOrEqual(64);
  expect(aAfter.open).toBeLessThan(closed.open);
});
