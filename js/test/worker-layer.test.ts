// Regressions of the worker and OPFS layer (issue 42, items 18-23), each
// on the in-memory stand-ins for OPFS and Web Locks (fakes.ts) and the
// real wasm build: a failed import and a database made meanwhile, views of
// results the garbage collector took, reopening a parked database, a
// failed pool top-up, removeDatabase's error, the import marker, and two
// pooled files naming one path.
import { afterEach, expect, test } from 'vitest';
import { reserveMemory } from '../pkg/silt_wasm.js';
import { removeDatabase, SiltError, type Database } from '../src/index.js';
import { importDatabaseOn, openOn, type OpenOptions, type StorageEnv } from '../src/local/open.js';
import { releaseParked } from '../src/opfs/parking.js';
import { collectedResults } from '../src/boundary/results.js';
import { memoryBytes } from '../src/boundary/wasm.js';
import { domError, FakeDirectory, FakeLocks } from './fakes.js';
import { bytes, rejected, text } from './helpers.js';

const opened: Database[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

async function openFake(env: StorageEnv, name: string, options: OpenOptions = {}, parkable = false): Promise<Database> {
  const db = await openOn(env, name, options, parkable);
  opened.push(db);
  return db;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const key = (i: number) => `k${String(i).padStart(6, '0')}`;

function dirOf(root: FakeDirectory, name: string): FakeDirectory {
  return root.dirs.get('siltdb')!.dirs.get(name)!;
}

/** An export of `n` keys, as bytes. */
async function exportOf(n: number): Promise<Uint8Array> {
  const { openMemory } = await import('../src/index.js');
  const src = await openMemory();
  for (let i = 0; i < n; i++) src.put(key(i), bytes(`value ${i}`));
  const all = new Uint8Array(await new Response(src.export()).arrayBuffer());
  src.close();
  return all;
}

test('18: a failed importDatabase never removes a database another context made after it', async () => {
  const root = new FakeDirectory();
  const locks = new FakeLocks();
  const env = { root, locks };
  let started = false;
  let fail!: () => void;
  const failing = new Promise<void>((r) => (fail = r));
  // An export whose stream breaks before its first chunk.
  const source: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: () => ({
      async next(): Promise<IteratorResult<Uint8Array>> {
        started = true;
        await failing;
        throw new Error('the network went');
      },
    }),
  };
  const importing = importDatabaseOn(env, 'x', source, {}).then(
    () => undefined,
    (e: unknown) => e,
  );
  for (let i = 0; i < 200 && !started; i++) await sleep(5);
  expect(started).toBe(true);
  // A connect() leader queued on the lock meanwhile: it opens with wait
  // (queued once its question to the holder went unanswered, 250 ms).
  const other = openOn(env, 'x', { wait: true });
  await sleep(400);
  fail();
  const db = await other;
  db.put('k', bytes('acknowledged'), { sync: true });
  db.close();
  expect(await importing).toBeInstanceOf(Error);
  const again = await openFake(env, 'x', { createIfMissing: false });
  expect(text(again.get('k'))).toBe('acknowledged');
});

test('19: a view of a get or multiGet result keeps its bytes after the result object is dropped and collected', async () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  expect(gc, 'vitest runs Node with --expose-gc').toBeTypeOf('function');
  const env = { root: new FakeDirectory(), locks: new FakeLocks() };
  const db = await openFake(env, 'views', { writeBufferSize: 64 * 1024, blockCacheCapacity: 64 * 1024 });
  const value = (i: number, round: number) => new Uint8Array(300).fill((i * 7 + round * 13) % 251);
  const N = 2000;
  for (let i = 0; i < N; i++) db.put(key(i), value(i, 0));
  db.flush();
  await db.idle();
  for (let i = 0; i < N; i++) db.put(key(i), value(i, 1)); // half in tables, half in memtables
  for (let r = 0; r < 2; r++) for (let i = 0; i < N; i++) db.get(key(i));
  // Memory grown once, now: views are not detached by growth later, so
  // they would show whatever the engine put where their values were.
  reserveMemory(32 << 20);
  const size = memoryBytes();
  const held: { view: Uint8Array; expected: Uint8Array }[] = [];
  const collectedBefore = collectedResults();
  (() => {
    for (let i = 0; i < N; i += 50) {
      const a = db.getPinned(key(i))!.bytes; // the PinnedValue is dropped at once
      held.push({ view: a, expected: a.slice() });
      const b = db.multiGet([key(i + 1), key(i + 2)]).get(1)!; // the MultiGetResult too
      held.push({ view: b, expected: b.slice() });
    }
  })();
  for (let round = 2; round < 8; round++) {
    gc!();
    await sleep(10);
    // Memory freed by unpinning is reused: blocks churn through a small
    // cache, memtables are overwritten, flushed and freed.
    for (let i = 0; i < N; i++) db.get(key((i * 7919) % N));
    for (let i = 0; i < N; i += 2) db.put(key(i), value(i, round));
    db.flush();
    await db.idle();
  }
  expect(memoryBytes()).toBe(size);
  let changed = 0;
  for (const { view, expected } of held) {
    expect(view.length).toBe(expected.length);
    if (view.some((b, i) => b !== expected[i])) changed++;
  }
  expect(changed, `views of ${held.length} that read other bytes`).toBe(0);
  // Nothing held was collected; dropped, they are.
  expect(collectedResults()).toBe(collectedBefore);
  held.length = 0;
  for (let i = 0; i < 50 && collectedResults() < collectedBefore + 80; i++) {
    gc!();
    await sleep(10);
  }
  expect(collectedResults()).toBe(collectedBefore + 80);
});

test('20: a database parked after a burst drained its pool reopens in the same worker', async () => {
  const env = { root: new FakeDirectory(), locks: new FakeLocks() };
  const options: OpenOptions = { poolReserve: 4, writeBufferSize: 64 * 1024 };
  const db = await openOn(env, 'parked', options, true);
  const value = new Uint8Array(4096).fill(7);
  // A synchronous burst: no await, so no pooled file is added meanwhile.
  let n = 0;
  for (; n < 100_000 && db.statistics().pool!.free > 0; n++) db.put(key(n), value);
  for (let i = 0; i < 20; i++) db.put(key(n++), value);
  expect(db.statistics().pool!.free).toBe(0);
  db.close(); // parks: files open, lock held
  expect(env.locks.isHeld('siltdb:parked')).toBe(true);
  try {
    const again = await openFake(env, 'parked', options, true);
    expect(again.get(key(n - 1))).toEqual(value);
    expect(again.count()).toBe(n);
  } finally {
    for (const d of opened.splice(0)) d.close();
    releaseParked('parked');
  }
});

/** Puts 4 KiB values (awaiting now and then) until one fails; its error. */
async function putUntilRefused(db: Database, from: number): Promise<{ error: SiltError; next: number }> {
  const value = new Uint8Array(4096);
  for (let i = from; i < from + 50_000; i++) {
    try {
      db.put(key(i), value);
    } catch (e) {
      expect(e).toBeInstanceOf(SiltError);
      return { error: e as SiltError, next: i };
    }
    if (i % 10 === 0) await sleep(0);
  }
  throw new Error('no write was refused');
}

test('21: after a failed top-up, background work is retried with backoff and resumes once storage takes files again', async () => {
  const root = new FakeDirectory();
  const env = { root, locks: new FakeLocks() };
  const db = await openFake(env, 'retry', { poolReserve: 4, writeBufferSize: 64 * 1024 });
  const dir = dirOf(root, 'retry');
  dir.maxFiles = dir.files.size; // storage refuses new files
  const { error } = await putUntilRefused(db, 0);
  expect(error.code).toBe('PoolExhausted');
  expect(db.statistics().background.lastError?.code).toBe('QuotaExceeded');
  dir.maxFiles = Infinity; // space came back; no write follows
  for (let t = 0; t < 100; t++) {
    const s = db.statistics();
    if (s.background.lastError === undefined && s.properties.immutableMemtables === 0) break;
    await sleep(50);
  }
  const s = db.statistics();
  expect(s.background.lastError).toBeUndefined();
  expect(s.properties.immutableMemtables).toBe(0);
  expect(s.pool!.free).toBeGreaterThanOrEqual(4);
});

test('21: a write refused with PoolExhausted starts a top-up itself', async () => {
  const root = new FakeDirectory();
  const env = { root, locks: new FakeLocks() };
  const db = await openFake(env, 'refused', { poolReserve: 4, writeBufferSize: 64 * 1024 });
  const dir = dirOf(root, 'refused');
  dir.maxFiles = dir.files.size;
  const { next } = await putUntilRefused(db, 0);
  dir.maxFiles = Infinity;
  const value = new Uint8Array(4096);
  // The pool is still empty: this write is refused, and asks for files.
  expect(caughtCode(() => db.put(key(next), value))).toBe('PoolExhausted');
  await sleep(5);
  db.put(key(next), value);
  expect(db.get(key(next))).toEqual(value);
});

function caughtCode(f: () => void): string | undefined {
  try {
    f();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
}

test('22: removeDatabase of a database still open after its wait fails with DatabaseLocked', async () => {
  const root = new FakeDirectory();
  const locks = new FakeLocks();
  const env = { root, locks };
  const db = await openFake(env, 'busy');
  db.put('k', bytes('v'));
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
  Object.defineProperty(globalThis, 'navigator', {
    value: { storage: { getDirectory: async () => root }, locks },
    configurable: true,
    writable: true,
  });
  try {
    const err = await rejected(removeDatabase('busy'));
    expect(err.code).toBe('DatabaseLocked');
    expect(err.message).toMatch(/busy/);
  } finally {
    if (saved) Object.defineProperty(globalThis, 'navigator', saved);
    else delete (globalThis as { navigator?: unknown }).navigator;
  }
  expect(text(db.get('k'))).toBe('v'); // left alone
});

test('23: a tab closed at any point of importDatabase leaves nothing that stops the next importDatabase of that name', async () => {
  const all = await exportOf(3000);
  const root = new FakeDirectory();
  const locks = new FakeLocks();
  // What a tab closed before each OPFS call of the import would leave,
  // until the call that makes the import durable (unmarking it).
  const images: FakeDirectory[] = [];
  let durable = false;
  root.faults.hook = (op, name) => {
    if (op === 'removeEntry' && name === 'import-unfinished') durable = true;
    if (!durable && (op === 'flush' || op === 'getFileHandle' || op === 'removeEntry')) images.push(root.crashImage());
  };
  await importDatabaseOn({ root, locks }, 'copy', [all], {});
  root.faults.hook = undefined;
  expect(images.length).toBeGreaterThan(5);
  for (const [i, image] of images.entries()) {
    const env = { root: image, locks: new FakeLocks() };
    const report = await importDatabaseOn(env, 'copy', [all], {}).catch((e: unknown) => {
      throw new Error(`after a crash at OPFS call ${i} of ${images.length}: ${String(e)}`);
    });
    expect(report.entries).toBe(3000);
  }
});

/** The logical path in a pooled file's header (docs/format.md), or undefined for a free file. */
function headerPath(data: Uint8Array): string | undefined {
  if (data.length < 540 || new TextDecoder().decode(data.subarray(0, 8)) !== 'SiltPool') return undefined;
  const n = new DataView(data.buffer, data.byteOffset).getUint32(12, true);
  return n === 0 ? undefined : new TextDecoder().decode(data.subarray(24, 24 + n));
}

test('23: of two pooled files naming one path, the one that loses is freed on storage too', async () => {
  const root = new FakeDirectory();
  const env = { root, locks: new FakeLocks() };
  const db = await openFake(env, 'dup');
  for (let i = 0; i < 100; i++) db.put(key(i), bytes(`v${i}`));
  db.flush();
  db.close();
  const files = dirOf(root, 'dup').files;
  const [name, table] = [...files].find(([, f]) => headerPath(f.data)?.endsWith('.sst'))!;
  const path = headerPath(table.data)!;
  // A copy under a later name: both headers name the table.
  const last = Math.max(...[...files.keys()].map((n) => Number(n.slice(0, 6))));
  const copyName = `${String(last + 1).padStart(6, '0')}.pool`;
  await (await dirOf(root, 'dup').getFileHandle(copyName, { create: true })).createSyncAccessHandle().then((h) => {
    h.write(table.data, { at: 0 });
    h.flush();
    h.close();
  });
  expect(name).not.toBe(copyName);
  const again = await openFake(env, 'dup');
  expect(again.count()).toBe(100);
  again.close();
  const naming = [...files.values()].filter((f) => headerPath(f.durable) === path);
  expect(naming.length).toBe(1);
});

test('found by the property test: an open that cannot read one pooled header closes every handle it opened, so the next open works', async () => {
  const root = new FakeDirectory();
  const env = { root, locks: new FakeLocks() };
  const db = await openFake(env, 'unread');
  for (let i = 0; i < 100; i++) db.put(key(i), bytes(`v${i}`));
  db.close();
  opened.splice(0);
  // One read of the header of the second pooled file fails.
  let failures = 1;
  root.faults.hook = (op, name) => {
    if (op === 'read' && name === '000001.pool' && failures-- > 0) throw domError('InvalidStateError', 'injected');
  };
  expect((await rejected(openOn(env, 'unread'))).code).toBe('IoError');
  expect([...dirOf(root, 'unread').files.values()].filter((f) => f.open).length).toBe(0);
  const again = await openFake(env, 'unread');
  expect(again.count()).toBe(100);
});

// Engine failures found by the property test (worker-layer-property.test.ts)
// and fixed in the engine (crates/engine/tests/durability.rs has them
// natively): each failed before the fix.

test('close() after a failed log sync says the writes acknowledged since may not be durable', async () => {
  const root = new FakeDirectory();
  const db = await openFake({ root, locks: new FakeLocks() }, 'sticky');
  db.put('acked', bytes('acknowledged, not synced'));
  root.faults.hook = (op) => {
    if (op === 'flush') throw domError('UnknownError', 'injected');
  };
  expect(() => db.put('refused', bytes('x'), { sync: true })).toThrow(SiltError); // the log's sync fails
  root.faults.hook = undefined;
  opened.splice(0);
  // Writes stopped on the failed sync: the close releases the database and
  // throws that error (it returned as if all were well, and the write
  // acknowledged before could be lost in a crash).
  expect(() => db.close()).toThrow(SiltError);
  // A crash then leaves a database that opens (the write may or may not be there).
  const after = await openFake({ root: root.crashImage(), locks: new FakeLocks() }, 'sticky');
  expect(['acknowledged, not synced', undefined]).toContain(after.get('acked') && text(after.get('acked')!));
});

test('a reopen syncs the log it replayed, so a clean close stands behind what it showed', async () => {
  const root = new FakeDirectory();
  const locks = new FakeLocks();
  const db = await openFake({ root, locks }, 'replayed');
  db.put('k', bytes('acknowledged, not synced'));
  root.faults.hook = (op) => {
    if (op === 'flush') throw domError('UnknownError', 'injected');
  };
  opened.splice(0);
  expect(() => db.close()).toThrow(SiltError); // reported: the write may be lost
  root.faults.hook = undefined;
  const again = await openFake({ root, locks }, 'replayed');
  expect(text(again.get('k'))).toBe('acknowledged, not synced'); // replayed from the log
  opened.splice(0);
  again.close(); // clean
  const after = await openFake({ root: root.crashImage(), locks: new FakeLocks() }, 'replayed');
  expect(text(after.get('k'))).toBe('acknowledged, not synced');
});

test('an open that goes on with a log a failed open left syncs it before a manifest names it: a crash leaves a database that opens', async () => {
  const root = new FakeDirectory();
  const locks = new FakeLocks();
  root.faults.hook = (op) => {
    if (op === 'flush') throw domError('UnknownError', 'injected');
  };
  expect((await rejected(openOn({ root, locks }, 'unsynced'))).code).toBe('IoError'); // creating the log failed
  root.faults.hook = undefined;
  (await openOn({ root, locks }, 'unsynced')).close(); // goes on with that log
  const after = await openFake({ root: root.crashImage(), locks: new FakeLocks() }, 'unsynced');
  expect(after.count()).toBe(0);
});
