// The soak's memory check (soak-bounds.ts) on samples whose truth is known:
// samples recorded by a real Chromium soak (fixtures/soak-samples.json,
// from target/reliability/browser-soak-samples.json), as they are, with a
// block cache that keeps filling through the whole run, and with a leak of
// 100 bytes per operation added to the heap (and to wasm memory, which a
// leak grows once the allocator's free space is used up). No browser.
import { readFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { checkMemory, type MemorySample } from './soak-bounds.js';

/** The samples taken while the soak ran (the last one is taken after everything was released). */
const recorded: MemorySample[] = JSON.parse(readFileSync(new URL('./fixtures/soak-samples.json', import.meta.url), 'utf8')).slice(0, -1);

/** `samples` with `bytesPerOp` more heap (and wasm memory) per operation since the first. */
function leaking(samples: MemorySample[], bytesPerOp: number): MemorySample[] {
  const ops0 = samples[0].ops;
  let wasmFloor = 0;
  return samples.map((s) => {
    const leaked = (s.ops - ops0) * bytesPerOp;
    const heapBytes = s.heapBytes + leaked;
    // Wasm memory grows in 64 KiB pages once the heap outgrows it, and never shrinks.
    wasmFloor = Math.max(wasmFloor, Math.ceil((heapBytes * 1.05) / 65536) * 65536);
    return { ...s, heapBytes, wasmBytes: Math.max(s.wasmBytes, wasmFloor) };
  });
}

/**
 * `samples` with a block cache that fills by `bytesPerOp` per operation
 * for the whole run (a slow machine: the cache never fills in warm-up),
 * raising the heap and wasm memory with it.
 */
function cacheFilling(samples: MemorySample[], bytesPerOp: number): MemorySample[] {
  const ops0 = samples[0].ops;
  let wasm = 0;
  return samples.map((s) => {
    const filled = (s.ops - ops0) * bytesPerOp;
    wasm = Math.max(wasm, s.wasmBytes + filled);
    return { ...s, blockCacheUsage: s.blockCacheUsage + filled, heapBytes: s.heapBytes + filled, wasmBytes: wasm };
  });
}

test.describe('the soak memory check', () => {
  test('passes the recorded soak', () => {
    expect(recorded.length).toBeGreaterThanOrEqual(30);
    const { problems, figures } = checkMemory(recorded);
    expect(problems, JSON.stringify(figures)).toEqual([]);
  });

  test('passes a cache that fills for the whole soak', () => {
    // 50 bytes per operation: over 138,000 operations the 7 MB the
    // failed CI run's wasm memory could have grown by with its cache.
    const { problems, figures } = checkMemory(cacheFilling(recorded, 50));
    expect(problems, JSON.stringify(figures)).toEqual([]);
  });

  test('fails a leak of 100 bytes per operation, and of 40', () => {
    for (const bytesPerOp of [100, 40]) {
      const { problems, figures } = checkMemory(leaking(recorded, bytesPerOp));
      expect(
        problems.some((p) => p.includes('unaccounted heap bytes grew')),
        `${bytesPerOp} B/op: ${JSON.stringify(figures)}`,
      ).toBe(true);
    }
  });

  test('fails a leak hidden behind a filling cache', () => {
    const { problems } = checkMemory(leaking(cacheFilling(recorded, 50), 100));
    expect(problems.some((p) => p.includes('unaccounted heap bytes grew'))).toBe(true);
  });

  test('fails wasm memory that grows past what the heap ever needed', () => {
    const grown = recorded.map((s, i) => (i >= (recorded.length * 2) / 3 ? { ...s, wasmBytes: s.wasmBytes * 1.5 } : s));
    const { problems } = checkMemory(grown);
    expect(problems.some((p) => p.startsWith('wasm memory'))).toBe(true);
  });
});
