// Regressions found by the bad-input property test (bad-input.test.ts), one
// test per bug, named after what it pins.
import { expect, test } from 'vitest';
import { memoryMode, openMemory, removeDatabase, WriteBatch } from '../src/index.js';
import { openOn } from '../src/local/open.js';
import { FakeDirectory, FakeLocks } from './fakes.js';
import { caught, fresh, rejected } from './helpers.js';

function detached(n: number): Uint8Array {
  const view = new Uint8Array(n).fill(1);
  structuredClone(view.buffer, { transfer: [view.buffer] });
  return view;
}

test('a view of a detached buffer is refused with InvalidArgument, not a TypeError from the bindings', async () => {
  const db = await fresh();
  for (const f of [
    () => db.put(detached(8), new Uint8Array(1)),
    () => db.put('k', detached(8)),
    () => db.get(detached(8)),
    () => db.get(detached(8)),
    () => db.multiGet(['a', detached(8)]),
    () => db.delete(detached(8)),
    () => db.deleteRange('a', detached(8)),
    () => db.iterator({ gte: detached(8) }),
    () => new WriteBatch().put('k', detached(8)),
  ]) {
    const err = caught(f);
    expect(err.code).toBe('InvalidArgument');
    expect(err.message).toMatch(/detached ArrayBuffer/);
  }
  // An empty view that is not detached is just empty.
  db.put('k', new Uint8Array(0));
  expect(db.get('k')).toEqual(new Uint8Array(0));
});

test('a pinned value given back as a key or value is copied before the call can grow wasm memory', async () => {
  const db = await fresh();
  expect(memoryMode()).toBe('fixed'); // Node: growth detaches views, the case that broke
  db.put('a', new Uint8Array(100).fill(7));
  const pinned = db.getPinned('a')!;
  // As a value, then as a key in a multiGet whose keys need a larger
  // exchange buffer (the call grows memory before it copies the keys).
  db.put('b', pinned.bytes);
  const big = Array.from({ length: 300 }, (_, i) => new Uint8Array(60_000).fill(i % 256));
  db.put(pinned.bytes, new Uint8Array([1, 2, 3]));
  const r = db.multiGet([pinned.bytes, ...big, db.getPinned('a')!.bytes]);
  expect(r.copy(0)).toEqual(new Uint8Array([1, 2, 3]));
  expect(r.copy(301)).toEqual(new Uint8Array([1, 2, 3]));
  r.release();
  expect(db.get('b')).toEqual(new Uint8Array(100).fill(7));
  pinned.release();
});

test('error messages describe any value: a BigInt name, a detached array or a Symbol as an option', async () => {
  const env = { root: new FakeDirectory(), locks: new FakeLocks() };
  for (const name of [10n, Symbol('s'), detached(4), {}]) {
    const err = await rejected(openOn(env, name as unknown as string));
    expect(err.code).toBe('InvalidArgument');
    expect(err.message).toMatch(/a database name is/);
  }
  expect((await rejected(removeDatabase(10n as unknown as string))).code).toBe('InvalidArgument');
  for (const v of [detached(4), Symbol('s'), 10n]) {
    const err = await rejected(openMemory({ writeBufferSize: v as unknown as number }));
    expect(err.code).toBe('InvalidArgument');
    expect(err.message).toMatch(/writeBufferSize must be an integer/);
    expect(caught(() => new WriteBatch().put('k', v as unknown as Uint8Array)).code).toBe('InvalidArgument');
  }
  const db = await fresh();
  expect(caught(() => db.iterator({ batchSize: detached(2) as unknown as number })).message).toMatch(/batchSize must be an integer/);
  const r = db.multiGet(['a']);
  expect(caught(() => r.get(Symbol('i') as unknown as number)).message).toMatch(/index Symbol\(i\) is out of range/);
  r.release();
});

test('null is not a boolean for batched, reverse and autoRefresh, as for sync', async () => {
  const db = await fresh();
  for (const f of [
    () => db.multiGet(['a'], { batched: null as unknown as boolean }),
    () => db.iterator({ reverse: null as unknown as boolean }),
    () => db.iterator({ autoRefresh: null as unknown as boolean }),
    () => db.put('a', new Uint8Array(1), { sync: null as unknown as boolean }),
  ]) {
    const err = caught(f);
    expect(err.code).toBe('InvalidArgument');
    expect(err.message).toMatch(/must be a boolean, got null/);
  }
});

test('the rest of a batch read entry by entry, handed out by nextBatch, is transient like every batch: the next call empties it', async () => {
  const db = await fresh();
  for (let i = 0; i < 10; i++) db.put(`k${i}`, new Uint8Array([i]));
  for (const nextCall of ['next', 'nextBatch', 'seek'] as const) {
    const it = db.iterator();
    expect(it.next().value?.[1]).toEqual(new Uint8Array([0])); // reads a batch, uses one entry
    const rest = it.nextBatch()!;
    expect(rest.length).toBe(9);
    expect(rest.keyText(0)).toBe('k1');
    if (nextCall === 'next')
      expect(it.next().done).toBe(true); // the first batch held all ten
    else if (nextCall === 'nextBatch') it.nextBatch();
    else it.seek('k5');
    expect(rest.bytes.length).toBe(0);
    expect(rest.offsets.length).toBe(0);
    it.release();
  }
});

test('a seek refused for its key still ends the transient batch the iterator handed out', async () => {
  const db = await fresh();
  db.put(' ', new Uint8Array(0));
  const it = db.iterator();
  const batch = it.nextBatch()!;
  expect(batch.length).toBe(1);
  expect(caught(() => it.seek(undefined as unknown as string)).code).toBe('InvalidArgument');
  expect(batch.bytes.length).toBe(0);
  expect(caught(() => batch.keyAt(0)).code).toBe('Released');
  it.release();
});
