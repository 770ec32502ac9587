// The worker's zero-copy reads: pinned values (getPinned), multiGet's views
// of wasm memory, release, memory growth, and the FinalizationRegistry
// safety net, against the real wasm build in Node. What reads both APIs
// share is in scenarios/reads.js.
import { describe, expect, test } from 'vitest';
import { boundaryCounters, enableBoundaryCounters, memoryMode, type PinnedValue } from '../src/index.js';
import { pinnedResults } from '../pkg/silt_wasm.js';
import { memoryBuffer } from '../src/boundary/wasm.js';
import { bytes, caught, fresh, text } from './helpers.js';

describe('get: a pinned value', () => {
  test('is a view of wasm memory with the stored bytes, not a copy', async () => {
    const db = await fresh();
    db.put('k', bytes('value'));
    const v = db.getPinned('k')!;
    expect(text(v.bytes)).toBe('value');
    expect(v.bytes.buffer).toBe(memoryBuffer());
    const copy = v.copy();
    expect(copy.buffer).not.toBe(memoryBuffer());
    v.release();
    expect(text(copy)).toBe('value');
    expect(db.getPinned('missing')).toBeUndefined();
  });

  test('after release() it refuses to give out its view', async () => {
    const db = await fresh();
    db.put('k', bytes('v'));
    const v = db.getPinned('k')!;
    v.release();
    v.release(); // twice is fine
    expect(v.released).toBe(true);
    const err = caught(() => v.bytes);
    expect(err.code).toBe('Released');
  });

  test('`using` releases it at the end of the scope', async () => {
    const db = await fresh();
    db.put('k', bytes('v'));
    const before = pinnedResults();
    let escaped: PinnedValue | undefined;
    {
      using v = db.getPinned('k')!;
      expect(pinnedResults()).toBe(before + 1);
      escaped = v;
    }
    expect(db.statistics().pinnedResults).toBe(before);
    expect(caught(() => escaped!.bytes).code).toBe('Released');
  });

  test('a value in a flushed table is pinned from the block cache', async () => {
    const db = await fresh();
    for (let i = 0; i < 100; i++) db.put(`k${i}`, bytes(`v${i}`));
    db.flush();
    using v = db.getPinned('k42')!;
    expect(text(v.bytes)).toBe('v42');
    expect(v.bytes.buffer).toBe(memoryBuffer());
  });
});

describe('multiGet', () => {
  test('with bytes values, its values are views of wasm memory (through connect(), copies)', async () => {
    const db = await fresh();
    db.put('a', bytes('1'));
    db.put('c', bytes('333'));
    using r = db.multiGet(['a', 'b', 'c']);
    expect([...r].map(text)).toEqual(['1', undefined, '333']);
    for (const v of r) if (v) expect(v.buffer).toBe(memoryBuffer());
  });

  test('pins values across writes, flushes and compactions', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024 });
    for (let i = 0; i < 500; i++) db.put(`k${i}`, bytes(`first-${i}`));
    db.flush();
    using r = db.multiGet(['k1', 'k250', 'k499']);
    for (let i = 0; i < 500; i++) db.put(`k${i}`, bytes(`second-${i}`.repeat(20)));
    await db.compactRange();
    expect([...r].map(text)).toEqual(['first-1', 'first-250', 'first-499']);
    expect(text(db.get('k250'))).toBe('second-250'.repeat(20));
  });

  test('release() unpins, and views are refused afterwards', async () => {
    const db = await fresh();
    db.put('a', bytes('1'));
    const before = pinnedResults();
    const r = db.multiGet(['a']);
    expect(pinnedResults()).toBe(before + 1);
    r.release();
    expect(db.statistics().pinnedResults).toBe(before);
    expect(caught(() => r.get(0)).code).toBe('Released');
    expect(caught(() => [...r]).code).toBe('Released');
  });
});

describe('releasing', () => {
  test('is given back with the next read, or when the task ends, without a call of its own', async () => {
    const db = await fresh();
    db.put('a', bytes('1'));
    db.flush();
    const before = pinnedResults();
    const r = db.multiGet(['a', 'a']);
    const pinned = db.statistics().properties.pinnedBytes;
    expect(pinned).toBeGreaterThan(0);
    r.release();
    expect(pinnedResults()).toBe(before + 1); // queued
    using v = db.getPinned('a')!; // the release rides along with this read
    expect(pinnedResults()).toBe(before + 1);
    v.release();
    await new Promise((resolve) => setTimeout(resolve, 0)); // the task ended: sent by itself
    expect(pinnedResults()).toBe(before);
    expect(db.statistics().properties.pinnedBytes).toBe(0);
  });

  test('a read that fails still lets go of what was released before it', async () => {
    const db = await fresh();
    db.put('a', bytes('1'));
    const before = pinnedResults();
    db.multiGet(['a']).release();
    const err = caught(() => db.multiGet(['a', new Uint8Array(70_000)]));
    expect(err.code).toBe('InvalidArgument');
    expect(pinnedResults()).toBe(before);
  });

  test('many releases in one task are sent in full batches and none is lost', async () => {
    const db = await fresh();
    db.put('a', bytes('1'));
    const before = pinnedResults();
    const held = Array.from({ length: 500 }, () => db.getPinned('a')!);
    expect(pinnedResults()).toBe(before + 500);
    for (const v of held) v.release();
    expect(pinnedResults()).toBeLessThan(before + 500); // full batches went at once
    expect(db.statistics().pinnedResults).toBe(before);
  });

  test('results read before close stay readable until released', async () => {
    const db = await fresh();
    db.put('a', bytes('alpha'));
    const r = db.multiGet(['a']);
    const before = pinnedResults();
    db.close();
    expect(r.text(0)).toBe('alpha');
    r.release();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(pinnedResults()).toBe(before - 1);
  });
});

test('has and hasMany copy no value out of wasm memory, at a snapshot too', async () => {
  const db = await fresh();
  db.put('a', bytes('x'.repeat(5_000)));
  const snap = db.snapshot();
  db.delete('a');
  const before = boundaryCounters().copiedBytes;
  expect(db.has('a')).toBe(false);
  expect(db.has('a', { snapshot: snap })).toBe(true);
  expect(db.hasMany(['a', 'b'], { snapshot: snap })).toEqual([true, false]);
  expect(boundaryCounters().copiedBytes).toBe(before);
  snap.release();
});

test('counting calls across the boundary cannot start once the module is loaded', async () => {
  await fresh();
  expect(caught(() => enableBoundaryCounters()).code).toBe('InvalidArgument');
});

describe('multiGet unbatched', () => {
  test('answers exactly as the batched MultiGet and as get, at one point in time', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024 });
    const key = (i: number) => `k${String(i).padStart(5, '0')}`;
    for (let i = 0; i < 3000; i++) db.put(key(i), bytes(`v${i}-`.padEnd(40 + (i % 7), 'x')));
    db.flush();
    for (let i = 0; i < 3000; i += 3) db.delete(key(i));
    db.deleteRange(key(100), key(200));
    for (let i = 0; i < 3000; i += 5) db.put(key(i), bytes(`new${i}`));
    const snap = db.snapshot();
    db.put(key(1), bytes('after the snapshot'));
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % 3100; // some missing keys
    };
    for (let round = 0; round < 20; round++) {
      const keys = Array.from({ length: 1 + (round % 40) }, () => key(rand()));
      keys.push(keys[0]!); // a duplicate
      using a = db.multiGet(keys, { snapshot: snap });
      using b = db.multiGet(keys, { snapshot: snap, batched: false });
      const want = keys.map((k) => text(db.get(k, { snapshot: snap })));
      expect([...a].map(text)).toEqual(want);
      expect([...b].map(text)).toEqual(want);
    }
    expect(caught(() => db.multiGet(['a'], { batched: 'no' as unknown as boolean })).code).toBe('InvalidArgument');
    snap.release();
  });

  test('a batch larger than the exchange buffer grows it, and later batches still work', async () => {
    const db = await fresh();
    for (let i = 0; i < 5000; i++) db.put(`key-${i}`, bytes(`value-${i}`));
    const keys = Array.from({ length: 5000 }, (_, i) => `key-${4999 - i}`);
    {
      using r = db.multiGet(keys);
      expect(r.length).toBe(5000);
      expect(r.text(0)).toBe('value-4999');
      expect(r.text(4999)).toBe('value-0');
    }
    using small = db.multiGet(['key-1', 'nope']);
    expect([...small].map(text)).toEqual(['value-1', undefined]);
    using big = db.getPinned(`key-${'x'.repeat(20_000)}`);
    expect(big).toBeUndefined();
  });
});

describe('memory growth', () => {
  test("in Node (no resizable wasm buffers) views are 'fixed': growth detaches them, never shows other bytes, and the result hands out fresh ones", async () => {
    expect(memoryMode()).toBe('fixed');
    const db = await fresh();
    db.put('a', bytes('alpha'));
    db.put('b', bytes('bravo'));
    using r = db.multiGet(['a', 'b']);
    const held = r.get(0)!;
    expect(text(held)).toBe('alpha');
    const size = memoryBuffer().byteLength;
    // Values larger than any free space force the memory to grow.
    for (let i = 0; memoryBuffer().byteLength === size && i < 64; i++) db.put(`big${i}`, new Uint8Array(4 << 20));
    expect(memoryBuffer().byteLength).toBeGreaterThan(size);
    expect(held.byteLength).toBe(0); // detached: reads as empty, not as other bytes
    expect(held[0]).toBeUndefined();
    expect(text(r.get(0))).toBe('alpha');
    expect(text(r.get(1))).toBe('bravo');
    expect(r.get(0)!.buffer).toBe(memoryBuffer());
  });
});

describe('the FinalizationRegistry safety net', () => {
  test('a result dropped without release() is unpinned by garbage collection', async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    expect(gc, 'vitest runs Node with --expose-gc').toBeTypeOf('function');
    const db = await fresh();
    db.put('a', bytes('1'));
    const { collectedResults } = await import('../src/boundary/results.js');
    const before = pinnedResults();
    const collectedBefore = collectedResults();
    (() => {
      for (let i = 0; i < 10; i++) db.multiGet(['a']); // dropped at once
      db.getPinned('a'); // dropped too
    })();
    expect(pinnedResults()).toBe(before + 11);
    for (let i = 0; i < 50 && pinnedResults() > before; i++) {
      gc!();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(pinnedResults()).toBe(before);
    expect(collectedResults()).toBe(collectedBefore + 11);
  });
});
