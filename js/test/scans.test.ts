// The worker's scans: the batch API (transient batches, offsets, views),
// entries read one by one, seek() on a live iterator, batch sizes, and the
// shared chunks owned copies are cut from, against the real wasm build.
// (Scans both APIs share: scenarios/iterators.js.)
import { describe, expect, test } from 'vitest';
import { EntryBatch, type Database } from '../src/index.js';
import { bytes, caught, fresh, text } from './helpers.js';

const key = (i: number) => `k${String(i).padStart(4, '0')}`;
const value = (i: number) => `value ${i} `.repeat(1 + (i % 4));

async function filled(n: number): Promise<Database> {
  const db = await fresh();
  for (let i = 0; i < n; i++) db.put(key(i), bytes(value(i)));
  return db;
}

describe('nextBatch: the batch API', () => {
  test('hands out keys and values as one byte array and offsets, with views by index', async () => {
    const db = await filled(10);
    const it = db.iterator({ batchSize: 4 });
    const b = it.nextBatch()!;
    expect(b).toBeInstanceOf(EntryBatch);
    expect(b.length).toBe(4);
    expect(b.offsets.length).toBe(9);
    expect(b.offsets[0]).toBe(0);
    expect(b.offsets[8]).toBe(b.bytes.length);
    for (let i = 0; i < 4; i++) {
      expect(text(b.keyAt(i))).toBe(key(i));
      expect(b.valueText(i)).toBe(value(i));
      expect(b.keyText(i)).toBe(key(i));
      // A view of the batch's bytes, not a copy.
      expect(b.keyAt(i).buffer).toBe(b.bytes.buffer);
      expect(text(b.bytes.subarray(b.offsets[2 * i + 1], b.offsets[2 * i + 2]))).toBe(value(i));
    }
    expect([...b].map(([k]) => text(k))).toEqual([key(0), key(1), key(2), key(3)]);
    expect(caught(() => b.keyAt(4)).code).toBe('InvalidArgument');
    expect(caught(() => b.valueAt(-1)).code).toBe('InvalidArgument');
    expect(caught(() => b.valueAt(1.5)).code).toBe('InvalidArgument');
    it.release();
  });

  test('a batch is transient: the next call on its iterator ends it, and it then reads as empty, never as other bytes', async () => {
    const db = await filled(10);
    const it = db.iterator({ batchSize: 3 });
    const first = it.nextBatch()!;
    const kept = first.valueAt(0);
    expect(text(kept)).toBe(value(0));
    const second = it.nextBatch()!;
    expect(text(second.keyAt(0))).toBe(key(3));
    expect(first.bytes.length).toBe(0);
    expect(first.offsets.length).toBe(0);
    expect(kept.length).toBe(0);
    expect(caught(() => first.keyAt(0)).code).toBe('Released');
    // seek and release end the current batch too.
    it.seek(key(0));
    expect(second.bytes.length).toBe(0);
    const third = it.nextBatch()!;
    it.release();
    expect(third.bytes.length).toBe(0);
  });

  test('a copy taken of a batch outlives it', async () => {
    const db = await filled(5);
    const it = db.iterator({ batchSize: 2 });
    const b = it.nextBatch()!;
    const copy = b.valueAt(1).slice();
    it.nextBatch();
    it.release();
    expect(text(copy)).toBe(value(1));
  });

  test('covers every entry once, in both directions, within bounds and at a snapshot', async () => {
    const db = await filled(300);
    const snap = db.snapshot();
    db.delete(key(100));
    db.put(key(101), bytes('changed'));
    const read = (options: Parameters<Database['iterator']>[0]) => {
      const it = db.iterator(options);
      const out: [string, string][] = [];
      for (let b = it.nextBatch(); b !== undefined; b = it.nextBatch()) {
        for (let i = 0; i < b.length; i++) out.push([b.keyText(i), b.valueText(i)]);
      }
      // The end leaves the iterator live.
      expect(it.released).toBe(false);
      it.release();
      return out;
    };
    const all = read({});
    expect(all.length).toBe(299);
    expect(all.find(([k]) => k === key(101))![1]).toBe('changed');
    const atSnap = read({ snapshot: snap });
    expect(atSnap.length).toBe(300);
    expect(atSnap[101]).toEqual([key(101), value(101)]);
    const bounded = read({ gte: key(50), lt: key(60), reverse: true });
    expect(bounded.map(([k]) => k)).toEqual(Array.from({ length: 10 }, (_, i) => key(59 - i)));
    expect(read({ gt: key(298) })).toEqual([[key(299), value(299)]]);
    snap.release();
  });

  test('batches start at 16 entries and double, unless batchSize fixes them', async () => {
    const db = await filled(2000);
    const sizes = (o: { batchSize?: number }) => {
      const it = db.iterator(o);
      const out: number[] = [];
      for (let b = it.nextBatch(); b !== undefined; b = it.nextBatch()) out.push(b.length);
      it.release();
      return out;
    };
    const grown = sizes({});
    expect(grown.slice(0, 6)).toEqual([16, 32, 64, 128, 256, 512]);
    expect(grown.reduce((a, b) => a + b, 0)).toBe(2000);
    expect(new Set(sizes({ batchSize: 7 }).slice(0, -1))).toEqual(new Set([7]));
  });

  test('batches() releases the iterator at the end and when the loop breaks', async () => {
    const db = await filled(100);
    const it = db.iterator();
    let n = 0;
    for (const b of it.batches()) n += b.length;
    expect(n).toBe(100);
    expect(it.released).toBe(true);
    const it2 = db.iterator();
    for (const b of it2.batches()) {
      expect(b.length).toBe(16);
      break;
    }
    expect(it2.released).toBe(true);
  });
});

describe('seek on a live iterator', () => {
  test('moves forward or back, keeps the bounds, and works again after the end', async () => {
    const db = await filled(100);
    const it = db.iterator({ lt: key(90), batchSize: 5 });
    it.seek(key(40));
    expect(it.nextBatch()!.keyText(0)).toBe(key(40));
    it.seek(key(10));
    expect(it.next().value![0]).toEqual(bytes(key(10)));
    // Below the lower bound: the first key; at the upper bound: nothing.
    it.seek('a');
    expect(text(it.next().value![0])).toBe(key(0));
    it.seek(key(95));
    expect(it.nextBatch()).toBeUndefined();
    it.seek(key(89));
    expect(it.nextBatch()!.length).toBe(1);
    expect(it.nextBatch()).toBeUndefined();
    it.release();
    expect(caught(() => it.seek(key(1))).code).toBe('Released');
    expect(caught(() => it.nextBatch()).code).toBe('Released');
  });

  test('in reverse: the last key at or before the target', async () => {
    const db = await filled(50);
    const it = db.iterator({ reverse: true, gte: key(10) });
    it.seek(`${key(20)}x`);
    expect(it.nextBatch()!.keyText(0)).toBe(key(20));
    it.seek(key(5));
    expect(it.nextBatch()).toBeUndefined();
    it.seek('z');
    expect(it.nextBatch()!.keyText(0)).toBe(key(49));
    it.release();
  });

  test('refuses a key that is not one', async () => {
    const db = await filled(3);
    const it = db.iterator();
    expect(caught(() => it.seek(7 as unknown as string)).code).toBe('InvalidArgument');
    it.release();
  });
});

describe('entries one by one', () => {
  test('nextBatch after next() hands out the rest of the current batch first', async () => {
    const db = await filled(40);
    const it = db.iterator({ batchSize: 10 });
    it.next();
    it.next();
    const rest = it.nextBatch()!;
    expect(rest.length).toBe(8);
    expect(rest.keyText(0)).toBe(key(2));
    expect(it.nextBatch()!.keyText(0)).toBe(key(10));
    expect(it.next().value![0]).toEqual(bytes(key(20)));
    it.release();
  });
});

describe('copies a caller owns', () => {
  test('copy(i) values stay right across many shared chunks, and slice() gives a buffer of its own', async () => {
    const db = await fresh();
    const big = 'x'.repeat(3000);
    for (let i = 0; i < 200; i++) db.put(key(i), bytes(`${i}:${big}`));
    const r = db.multiGet(Array.from({ length: 200 }, (_, i) => key(i)));
    const copies = r.copies();
    r.release();
    for (const [i, c] of copies.entries()) expect(text(c)).toBe(`${i}:${big}`);
    expect(copies[0]!.buffer).toBe(copies[1]!.buffer); // cut from one chunk
    const own = copies[0]!.slice();
    expect(own.byteOffset).toBe(0);
    expect(own.buffer.byteLength).toBe(own.length);
  });

  test('transferring a shared chunk detaches the copies in it (they read as empty) and later copies are right', async () => {
    const db = await fresh();
    db.put('a', bytes('alpha'));
    db.put('b', bytes('beta'));
    using r = db.multiGet(['a', 'b']);
    const a = r.copy(0)!;
    const b = r.copy(1)!;
    expect(a.buffer).toBe(b.buffer);
    structuredClone(a.buffer, { transfer: [a.buffer] });
    expect(a.length).toBe(0);
    expect(b.length).toBe(0);
    expect(text(r.copy(0))).toBe('alpha');
    expect(text(r.copy(1))).toBe('beta');
  });
});
