// multiGet at the JS/wasm boundary in Chromium, on real OPFS:
// a batch of 32 keys is one call into wasm, wasm calls nothing back (the
// block cache holds every block), and no value byte is copied: every
// value is read through views of wasm memory. Counted by siltdb's boundary
// counters, which the controls show moving when a copy or a copying read
// happens.
import { expect, test } from '@playwright/test';
import { openHarness, runFresh } from './harness.js';

type Delta = { calls: number; callbacks: number; copiedBytes: number; byName: Record<string, number> };
type Boundary = {
  enabled: boolean;
  memoryMode: string;
  filesPerLevel: number[];
  strides: Record<string, Delta & { sumOk: boolean; found: number; keys: number }>;
  unbatched: Delta;
  get: Delta & { sum: number };
  controls: { copyAndText: Delta; get: Delta };
};

test('multiGet of 32 keys: one crossing of the boundary per batch, zero value bytes copied', async ({ page }) => {
  test.setTimeout(90_000);
  await openHarness(page);
  const rounds = 200;
  const r = await runFresh<Boundary>(page, 'multiGetBoundary', { name: 'boundary', n: 20_000, rounds });
  expect(r.enabled).toBe(true);
  expect(r.memoryMode).toBe('fixed'); // the default: views of a plain buffer (js/README.md)
  expect(r.filesPerLevel.filter((n) => n > 0).length).toBeGreaterThanOrEqual(2); // tables in more than one level
  for (const [stride, d] of Object.entries(r.strides)) {
    // Each loop iteration: multiGet, read every byte of every value, release.
    expect(d.sumOk, `stride ${stride}: values read through the views`).toBe(true);
    expect(d.found).toBe(d.keys);
    expect(d.calls, `stride ${stride}`).toBe(rounds);
    expect(d.byName, `stride ${stride}`).toEqual({ database_multiGetPinned: rounds });
    expect(d.callbacks, `stride ${stride}: no call out of wasm (OPFS reads, clock)`).toBe(0);
    expect(d.copiedBytes, `stride ${stride}`).toBe(0);
  }
  expect(r.unbatched).toEqual({ calls: rounds, callbacks: 0, copiedBytes: 0, byName: { database_multiGetPinned: rounds } });
  expect(r.get.calls).toBe(32);
  expect(r.get.copiedBytes).toBe(0);
  expect(r.get.sum).toBeGreaterThan(0);
  // The counters are real: a copy and a decode of two 100-byte values count
  // 200 bytes; a copying read counts its value, in one call of its own.
  expect(r.controls.copyAndText.copiedBytes).toBe(200);
  expect(r.controls.copyAndText.calls).toBe(1);
  expect(r.controls.get.copiedBytes).toBe(100);
  expect(r.controls.get.calls).toBe(1);
  expect(r.controls.get.byName.database_getTransient).toBe(1);
});
