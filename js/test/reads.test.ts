// Zero-copy reads: pinned values, multiGet, release, memory growth, and the
// FinalizationRegistry safety net, against the real wasm build in Node.
import { describe, expect, test } from 'vitest';
import { memoryMode } from '../src/index.js';
import { pinnedResults } from '../pkg/silt_wasm.js';
import { memoryBuffer } from '../src/wasm.js';
import { bytes, caught, fresh, text } from './helpers.js';

describe('get: a pinned value', () => {
  test('is a view of wasm memory with the stored bytes, not a copy', async () => {
    const db = await fresh();
    db.put('k', bytes('value'));
    const v = db.get('k')!;
    expect(text(v.bytes)).toBe('value');
    expect(v.bytes.buffer).toBe(memoryBuffer());
    const copy = v.copy();
    expect(copy.buffer).not.toBe(memoryBuffer());
    v.release();
    expect(text(copy)).toBe('value');
    expect(db.get('missing')).toBeUndefined();
  });

  test('after release() it refuses to give out its view', async () => {
    const db = await fresh();
    db.put('k', bytes('v'));
    const v = db.get('k')!;
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
    let escaped;
    {
      using v = db.get('k')!;
      expect(pinnedResults()).toBe(before + 1);
      escaped = v;
    }
    expect(pinnedResults()).toBe(before);
    expect(caught(() => escaped.bytes).code).toBe('Released');
  });

  test('a value in a flushed table is pinned from the block cache', async () => {
    const db = await fresh();
    for (let i = 0; i < 100; i++) db.put(`k${i}`, bytes(`v${i}`));
    db.flush();
    using v = db.get('k42')!;
    expect(text(v.bytes)).toBe('v42');
    expect(v.bytes.buffer).toBe(memoryBuffer());
  });
});

describe('multiGet', () => {
  test('gives the value of each key in order, undefined for missing ones', async () => {
    const db = await fresh();
    db.put('a', bytes('1'));
    db.put('c', bytes('333'));
    db.put('e', new Uint8Array(0));
    using r = db.multiGet(['a', 'b', bytes('c'), 'e', 'a']);
    expect(r.length).toBe(5);
    expect([...r].map(text)).toEqual(['1', undefined, '333', '', '1']);
    expect(r.has(1)).toBe(false);
    expect(r.has(3)).toBe(true);
    expect(r.copies().map(text)).toEqual(['1', undefined, '333', '', '1']);
    for (const v of r) if (v) expect(v.buffer).toBe(memoryBuffer());
  });

  test('of no keys is an empty result', async () => {
    const db = await fresh();
    using r = db.multiGet([]);
    expect(r.length).toBe(0);
  });

  test('reads every key at one point in time', async () => {
    const db = await fresh();
    db.put('x', bytes('old'));
    const snap = db.snapshot();
    db.put('x', bytes('new'));
    using r = db.multiGet(['x', 'x'], { snapshot: snap });
    expect([...r].map(text)).toEqual(['old', 'old']);
    snap.release();
  });

  test('pins values across writes, flushes and compactions', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024 });
    for (let i = 0; i < 500; i++) db.put(`k${i}`, bytes(`first-${i}`));
    db.flush();
    using r = db.multiGet(['k1', 'k250', 'k499']);
    for (let i = 0; i < 500; i++) db.put(`k${i}`, bytes(`second-${i}`.repeat(20)));
    await db.compactRange();
    expect([...r].map(text)).toEqual(['first-1', 'first-250', 'first-499']);
    expect(text(db.getCopy('k250'))).toBe('second-250'.repeat(20));
  });

  test('refuses bad keys, naming the index, and bad indexes', async () => {
    const db = await fresh();
    const err = caught(() => db.multiGet(['a', 7 as unknown as string]));
    expect(err.code).toBe('InvalidArgument');
    expect(err.message).toMatch(/keys\[1\]/);
    expect(caught(() => db.multiGet('a' as unknown as string[])).code).toBe('InvalidArgument');
    using r = db.multiGet(['a']);
    expect(caught(() => r.get(1)).code).toBe('InvalidArgument');
    expect(caught(() => r.get(-1)).code).toBe('InvalidArgument');
    expect(caught(() => r.get(0.5)).code).toBe('InvalidArgument');
  });

  test('release() unpins, and views are refused afterwards', async () => {
    const db = await fresh();
    db.put('a', bytes('1'));
    const before = pinnedResults();
    const r = db.multiGet(['a']);
    expect(pinnedResults()).toBe(before + 1);
    r.release();
    expect(pinnedResults()).toBe(before);
    expect(caught(() => r.get(0)).code).toBe('Released');
    expect(caught(() => [...r]).code).toBe('Released');
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
    const { collectedResults } = await import('../src/results.js');
    const before = pinnedResults();
    const collectedBefore = collectedResults();
    (() => {
      for (let i = 0; i < 10; i++) db.multiGet(['a']); // dropped at once
      db.get('a'); // dropped too
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
