// The boundary counters (js/src/boundary/counters.ts) on the real wasm build in
// Node: what a read costs in calls into wasm and in bytes copied out of
// it. The same checks run in Chromium on OPFS (tests/e2e/multiget.spec.ts).
import { beforeAll, expect, test } from 'vitest';
import { boundaryCounters, enableBoundaryCounters, SiltError } from '../src/index.js';
import { bytes, fresh } from './helpers.js';

// Before anything loads the module: this file runs in a realm of its own.
beforeAll(() => enableBoundaryCounters());

const key = (i: number) => `key-${String(i).padStart(6, '0')}`;

async function loaded() {
  const db = await fresh({ writeBufferSize: 64 * 1024 });
  for (let i = 0; i < 3000; i++) db.put(key(i), new Uint8Array(100).fill(i % 251));
  db.flush();
  return db;
}

/** Reads every byte of every value through the views; returns the sum. */
function readAll(values: Iterable<Uint8Array | undefined>): number {
  let sum = 0;
  for (const v of values) if (v) for (let j = 0; j < v.length; j++) sum += v[j]!;
  return sum;
}

const delta = (a: ReturnType<typeof boundaryCounters>, b: ReturnType<typeof boundaryCounters>, name: string) => (b.byName[name] ?? 0) - (a.byName[name] ?? 0);

test('calls are counted in this realm, which enabled counting before loading the module', async () => {
  await fresh();
  const c = boundaryCounters();
  expect(c.enabled).toBe(true);
  expect(c.byName.__wbindgen_start).toBe(1); // the module's start, counted from the first call
  expect(() => enableBoundaryCounters()).not.toThrow(); // already on: nothing to do
});

test('a loop of 32-key multiGets is one call into wasm per batch, releases included, and copies no value bytes', async () => {
  const db = await loaded();
  const keys = Array.from({ length: 32 }, (_, i) => key(i * 90 + (i % 3)));
  keys[5] = 'missing';
  const expected = keys.reduce((s, k) => (k === 'missing' ? s : s + (Number(k.slice(4)) % 251) * 100), 0);
  for (let w = 0; w < 3; w++) db.multiGet(keys).release(); // warm
  await new Promise((r) => setTimeout(r, 0));

  const before = boundaryCounters();
  const rounds = 20;
  let sum = 0;
  for (let i = 0; i < rounds; i++) {
    const r = db.multiGet(keys);
    sum += readAll(r);
    r.release();
  }
  const after = boundaryCounters();
  expect(sum).toBe(expected * rounds);
  expect(after.calls - before.calls).toBe(rounds);
  expect(delta(before, after, 'database_multiGetPinned')).toBe(rounds);
  expect(after.callbacks - before.callbacks).toBe(0);
  expect(after.copiedBytes - before.copiedBytes).toBe(0);
});

test('the counters move when a copy or another crossing happens', async () => {
  const db = await loaded();
  await new Promise((r) => setTimeout(r, 0));
  const pinnedBefore = db.statistics().pinnedResults; // (every database of this realm)
  const c0 = boundaryCounters();
  const r = db.multiGet([key(1), key(2)]);
  expect(r.copy(0)!.length).toBe(100);
  expect(r.text(1)!.length).toBe(100);
  const c1 = boundaryCounters();
  expect(c1.copiedBytes - c0.copiedBytes).toBe(200);
  expect(c1.calls - c0.calls).toBe(1);
  r.release();
  expect(db.get(key(3))!.length).toBe(100); // a copying read: one call, one copy of the value
  const c2 = boundaryCounters();
  expect(c2.copiedBytes - c1.copiedBytes).toBe(100);
  expect(c2.calls - c1.calls).toBe(1);
  expect(delta(c1, c2, 'database_getTransient')).toBe(1);
  // The release of `r` rode along with get's call: nothing left to send.
  expect(db.statistics().pinnedResults).toBe(pinnedBefore);
  const c3 = boundaryCounters();
  expect(delta(c2, c3, 'database_releasePinned')).toBe(0);
  // A release with no read after it is sent by a call of its own.
  db.multiGet([key(1)]).release();
  db.statistics();
  expect(delta(c3, boundaryCounters(), 'database_releasePinned')).toBe(1);
});

test('a get is one call into wasm too, and a miss copies nothing', async () => {
  const db = await loaded();
  db.getPinned(key(7))?.release();
  await new Promise((r) => setTimeout(r, 0));
  const c0 = boundaryCounters();
  for (let i = 0; i < 10; i++) {
    const v = db.getPinned(key(i));
    expect(readAll([v!.bytes])).toBe((i % 251) * 100);
    v!.release();
  }
  expect(db.get('missing')).toBeUndefined();
  const c1 = boundaryCounters();
  expect(c1.calls - c0.calls).toBe(11);
  expect(c1.copiedBytes - c0.copiedBytes).toBe(0);
});

test('an error still comes across as a SiltError with its code', async () => {
  const db = await loaded();
  try {
    db.multiGet([bytes('ok'), new Uint8Array(70_000)]);
    expect.unreachable();
  } catch (e) {
    expect(e).toBeInstanceOf(SiltError);
    expect((e as SiltError).code).toBe('InvalidArgument');
  }
});

test('a scan is one call into wasm per batch, and copies each batch out once', async () => {
  const db = await loaded();
  const it = db.iterator({ gte: key(100), batchSize: 50 });
  const before = boundaryCounters();
  expect(it.nextBatch()!.length).toBe(50);
  expect(it.nextBatch()!.length).toBe(50);
  const after = boundaryCounters();
  expect(delta(before, after, 'iterator_fill')).toBe(2);
  expect(after.calls - before.calls).toBe(2);
  // The entries' bytes (keys and values) crossed once; no more.
  expect(after.copiedBytes - before.copiedBytes).toBe(2 * 50 * (key(0).length + 100));
  it.release();
});
