// `maxBytes`: the size cap of a database's OPFS files, through the real
// wasm build on the in-memory OPFS stand-ins (the cap lives in the file
// pool, crates/wasm/src/pool). The same on real OPFS in Chromium:
// tests/e2e/quota.spec.ts. Also `persist()` / `persisted()` and the
// storage estimate in statistics, on a stand-in `navigator.storage`.
import { afterEach, describe, expect, test, vi } from 'vitest';
import { openMemory, persist, persisted, SiltError, type Database } from '../src/index.js';
import { openOn, type OpenOptions } from '../src/local/open.js';
import { refreshStorageEstimate } from '../src/opfs/storage.js';
import { FakeDirectory, FakeLocks } from './fakes.js';
import { caught, rejected } from './helpers.js';

const opened: Database[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

async function openFake(root: FakeDirectory, locks: FakeLocks, options: OpenOptions) {
  const db = await openOn({ root, locks }, 'capped', options);
  opened.push(db);
  return db;
}

const MAX = 4 << 20;
const OPTIONS: OpenOptions = { maxBytes: MAX, writeBufferSize: 64 * 1024 };
const key = (i: number) => `key-${String(i).padStart(7, '0')}`;
/** 1000 bytes that LZ4 cannot shrink (so the cap fills), first byte i % 251. */
function value(i: number): Uint8Array {
  const v = new Uint8Array(1000);
  let x = (i + 1) * 0x9e3779b1;
  for (let j = 0; j < v.length; j++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    v[j] = x & 0xff;
  }
  v[0] = i % 251;
  return v;
}
const turn = () => new Promise((r) => setTimeout(r, 0));

/** Puts until one fails; the event loop runs every 16 puts, as in an app. */
async function fill(db: Database): Promise<{ acked: number; error: SiltError }> {
  for (let i = 0; i < 100_000; i++) {
    try {
      db.put(key(i), value(i));
    } catch (e) {
      expect(e).toBeInstanceOf(SiltError);
      return { acked: i, error: e as SiltError };
    }
    if (i % 16 === 15) await turn();
  }
  throw new Error(`a ${MAX}-byte cap never filled`);
}

function expectAll(db: Database, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    const v = db.get(key(i));
    if (v === undefined || v.length !== 1000 || v[0] !== i % 251) throw new Error(`${key(i)} lost or wrong`);
  }
}

test('a full database fails the write with QuotaExceeded, keeps every acknowledged write, reopens, and takes writes again once emptied', async () => {
  const root = new FakeDirectory();
  const locks = new FakeLocks();
  const db = await openFake(root, locks, OPTIONS);
  const { acked, error } = await fill(db);

  // The error says what went wrong and what to do.
  expect(error.code).toBe('QuotaExceeded');
  expect(error.message).toContain(`maxBytes is ${MAX}`);
  expect(error.message).toMatch(/its files take \d+ bytes/);
  expect(error.message).toMatch(/deleteRange, then compactRange\), or reopen the database with a larger maxBytes/);
  expect(acked).toBeGreaterThan(1000);

  // The failed write is not there; every acknowledged one is; the tables check out.
  expect(db.get(key(acked))).toBeUndefined();
  expectAll(db, 0, acked);
  expect(db.verify().tables).toBeGreaterThan(0);
  await db.idle();
  const stats = db.statistics();
  expect(stats.pool!.maxBytes).toBe(MAX);
  expect(stats.pool!.reserveBytes).toBe(MAX / 4);
  expect(stats.pool!.bytes).toBeLessThanOrEqual(MAX);
  // Background work may have run out of space too; nothing else failed.
  expect([undefined, 'QuotaExceeded']).toContain(stats.background.lastError?.code);
  // Still full (background work moves data, it does not shrink it): a
  // large put fails the same way, not with a stale or generic error.
  expect(caught(() => db.put(key(acked), new Uint8Array(MAX / 4))).code).toBe('QuotaExceeded');

  // A full database reopens.
  db.close();
  opened.splice(0);
  const again = await openFake(root, locks, OPTIONS);
  expectAll(again, acked - 50, acked);
  expect(again.get(key(acked))).toBeUndefined();

  // Deleting most keys and compacting gives the space back.
  again.deleteRange(key(0), key(acked - 100));
  for (let i = acked - 100; i < acked - 50; i++) again.delete(key(i));
  await again.compactRange();
  const after = again.statistics().pool!.bytes;
  expect(after).toBeLessThan(MAX / 2);
  for (let i = 0; i < 1000; i++) {
    again.put(`new-${i}`, value(i));
    if (i % 16 === 15) await turn();
  }
  await again.idle();
  expect(again.get('new-999')?.[0]).toBe(999 % 251);
  expectAll(again, acked - 50, acked);
  expect(again.get(key(5))).toBeUndefined();
  again.verify();
  expect(again.statistics().background.lastError).toBeUndefined();
});

test('a batch with puts stops at the reserve; a batch of deletes only may use it', async () => {
  const db = await openFake(new FakeDirectory(), new FakeLocks(), OPTIONS);
  const { acked } = await fill(db);
  const { WriteBatch } = await import('../src/index.js');
  const puts = new WriteBatch().delete(key(1)).put('big', new Uint8Array(50_000));
  expect(caught(() => db.write(puts)).code).toBe('QuotaExceeded');
  expect(db.get(key(1))).toBeDefined(); // atomic: the delete did not happen either
  const deletes = new WriteBatch();
  for (let i = 0; i < acked; i += 2) deletes.delete(key(i));
  db.write(deletes);
  expect(db.get(key(0))).toBeUndefined();
  expect(db.get(key(1))).toBeDefined();
});

describe('maxBytes is checked', () => {
  test('a whole number of bytes from 1 MiB', async () => {
    for (const bad of [0, 1000, 1.5 * 2 ** 20 + 0.5, -1, Number.NaN, '4MB', 2 ** 53]) {
      const err = await rejected(openFake(new FakeDirectory(), new FakeLocks(), { maxBytes: bad as number }));
      expect(err.code).toBe('InvalidArgument');
      expect(err.message).toContain('maxBytes must be an integer from 1048576');
    }
  });

  test('an in-memory database refuses it', async () => {
    const err = await rejected(openMemory({ maxBytes: MAX }));
    expect(err.code).toBe('NotSupported');
    expect(err.message).toMatch(/in-memory database/);
  });
});

describe('the Storage API', () => {
  type Nav = { storage?: unknown };
  const g = globalThis as { navigator?: Nav };
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
  function withStorage(storage: unknown): void {
    Object.defineProperty(globalThis, 'navigator', { value: { storage }, configurable: true, writable: true });
  }
  afterEach(() => {
    if (saved) Object.defineProperty(globalThis, 'navigator', saved);
    else delete g.navigator;
  });

  test('without it, persist() and persisted() resolve to false and statistics have no storage', async () => {
    withStorage(undefined);
    expect(await persist()).toBe(false);
    expect(await persisted()).toBe(false);
    expect(await refreshStorageEstimate()).toBeUndefined();
    const db = await openMemory();
    opened.push(db);
    expect(db.statistics().storage).toBeUndefined();
  });

  test('persist() asks the browser and never rejects', async () => {
    let granted = false;
    withStorage({
      persist: async () => (granted = true),
      persisted: async () => granted,
    });
    expect(await persisted()).toBe(false);
    expect(await persist()).toBe(true);
    expect(await persisted()).toBe(true);
    withStorage({
      persist: async () => {
        throw new Error('denied');
      },
      persisted: async () => {
        throw new Error('denied');
      },
    });
    expect(await persist()).toBe(false);
    expect(await persisted()).toBe(false);
  });

  test('statistics carry a cached estimate, refreshed in the background once it is a second old', async () => {
    let usage = 1234;
    withStorage({ estimate: async () => ({ usage, quota: 10_000_000 }), persisted: async () => true });
    // Opened first: loading the module may take longer than the second
    // the estimate stays fresh on a loaded machine.
    const db = await openMemory();
    opened.push(db);
    const before = Date.now();
    const first = await refreshStorageEstimate();
    expect(first).toEqual({ usage: 1234, quota: 10_000_000, persisted: true, updatedAt: expect.any(Number) });
    expect(first!.updatedAt).toBeGreaterThanOrEqual(before);
    usage = 5678;
    // Fresh enough: the cached value, no new request.
    expect(db.statistics().storage!.usage).toBe(1234);
    // Once older than a second, statistics() starts a refresh and returns
    // the older value; the next one has the new usage.
    const now = vi.spyOn(Date, 'now').mockReturnValue(first!.updatedAt + 2_000);
    try {
      expect(db.statistics().storage!.usage).toBe(1234);
      await turn();
      expect(db.statistics().storage).toEqual({ usage: 5678, quota: 10_000_000, persisted: true, updatedAt: first!.updatedAt + 2_000 });
    } finally {
      now.mockRestore();
    }
  });
});
