// The OPFS path of `open()` (Web Lock, pool keeper, pooled files through the
// real wasm build) on in-memory stand-ins for OPFS and navigator.locks.
// The same path on real OPFS runs in Chromium (tests/e2e/opfs.spec.ts).
import { afterEach, describe, expect, test } from 'vitest';
import { open, openMemory, SiltError, type Database } from '../src/index.js';
import { importDatabaseOn, openOn, removeDatabaseOn, type OpenOptions } from '../src/local/open.js';
import { repairOn } from '../src/local/repair.js';
import { releaseParked } from '../src/opfs/parking.js';
import { FakeDirectory, FakeLocks } from './fakes.js';
import { bytes, rejected, text } from './helpers.js';

const opened: Database[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

async function openFake(root: FakeDirectory, locks: FakeLocks, name = 'db1', options: OpenOptions = {}) {
  const db = await openOn({ root, locks }, name, options);
  opened.push(db);
  return db;
}

function poolFiles(root: FakeDirectory, name = 'db1') {
  return root.dirs.get('siltdb')!.dirs.get(name)!.files;
}

test('open() outside a browser worker is refused with NotSupported', async () => {
  const err = await rejected(open('x'));
  expect(err.code).toBe('NotSupported');
  expect(err.message).toMatch(/dedicated worker/);
});

test('data survives close and reopen; the pool files carry SiltPool headers', async () => {
  const root = new FakeDirectory();
  const locks = new FakeLocks();
  const db = await openFake(root, locks);
  for (let i = 0; i < 100; i++) db.put(`k${i}`, bytes(`v${i}`));
  db.flush();
  db.put('after-flush', bytes('in the log'));
  db.close();
  const files = poolFiles(root);
  expect([...files.keys()].every((n) => /^\d{6}\.pool$/.test(n))).toBe(true);
  expect([...files.values()].every((f) => !f.open)).toBe(true); // every handle closed
  // A pooled file is empty until it first holds a logical file; from then
  // on it starts with its header.
  const used = [...files.values()].filter((f) => f.data.length > 0);
  expect(used.length).toBeGreaterThan(2);
  for (const f of used) expect(text(f.data.subarray(0, 8))).toBe('SiltPool');

  const again = await openFake(root, locks);
  expect(text(again.get('k42'))).toBe('v42');
  expect(text(again.get('after-flush'))).toBe('in the log');
  expect(again.statistics().persistent).toBe(true);
});

test('after a crash, every synced write is there and the database opens', async () => {
  const root = new FakeDirectory();
  const db = await openFake(root, new FakeLocks(), 'db1', { writeBufferSize: 64 * 1024 });
  let acked = -1;
  for (let i = 0; i < 3000; i++) {
    db.put(`k${String(i).padStart(5, '0')}`, new Uint8Array(100).fill(i % 251), { sync: i % 7 === 0 });
    if (i % 7 === 0) acked = i;
    if (i % 100 === 0) await new Promise((r) => setTimeout(r, 0));
  }
  const image = root.crashImage(); // no close: what a killed worker leaves
  for (const d of opened.splice(0)) d.close();
  const after = await openFake(image, new FakeLocks());
  for (let i = 0; i <= acked; i++) {
    const v = after.get(`k${String(i).padStart(5, '0')}`);
    expect(v?.[0], `k${i}`).toBe(i % 251);
  }
});

describe('the Web Lock', () => {
  test('a second open fails promptly with DatabaseLocked', async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    let t0 = Date.now();
    await openFake(root, locks);
    const openMs = Date.now() - t0;
    t0 = Date.now();
    const err = await rejected(openFake(root, locks));
    expect(err.code).toBe('DatabaseLocked');
    // At once, not after a wait: bounded by an open's own time in this run,
    // so a loaded machine does not fail it (a wait for the holder never ends).
    expect(Date.now() - t0).toBeLessThan(3 * openMs + 1_500);
    await openFake(root, locks, 'other-name'); // another database is another lock
  });

  test('with wait: true the second open waits for the first to close', async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    const first = await openFake(root, locks);
    first.put('k', bytes('from the first'));
    let second: Database | undefined;
    const waiting = openFake(root, locks, 'db1', { wait: true }).then((d) => (second = d));
    await new Promise((r) => setTimeout(r, 50));
    expect(second).toBeUndefined();
    first.close();
    await waiting;
    expect(text(second!.get('k'))).toBe('from the first');
  });

  test("an aborted wait rejects with the signal's reason", async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    await openFake(root, locks);
    const ctl = new AbortController();
    const p = openFake(root, locks, 'db1', { wait: true, signal: ctl.signal });
    ctl.abort();
    const e = await p.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(DOMException);
    expect((e as DOMException).name).toBe('AbortError');
    // The app's own reason, and a signal aborted before the call.
    const reason = new Error('the user left');
    const ctl2 = new AbortController();
    ctl2.abort(reason);
    await expect(openFake(root, locks, 'db1', { wait: true, signal: ctl2.signal })).rejects.toBe(reason);
    await expect(openFake(root, locks, 'db1', { wait: true, signal: AbortSignal.timeout(20) })).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  test('close releases the lock at once for a reopen in the same realm', async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    for (let i = 0; i < 3; i++) {
      const db = await openFake(root, locks);
      db.put(`round${i}`, bytes('x'));
      db.close();
    }
    await new Promise((r) => setTimeout(r, 0)); // the lock manager frees it asynchronously
    expect(locks.isHeld('siltdb:db1')).toBe(false);
  });

  test('a failed open releases the lock and closes every handle', async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    const err = await rejected(openFake(root, locks, 'db1', { createIfMissing: false }));
    expect(err.code).toBe('NotFound');
    expect(err.message).toMatch(/createIfMissing: false to create it/);
    expect(locks.isHeld('siltdb:db1')).toBe(false);
    const db = await openFake(root, locks); // creates it
    db.close();
    const again = await rejected(openFake(root, locks, 'db1', { errorIfExists: true }));
    expect(again.code).toBe('AlreadyExists');
    expect(locks.isHeld('siltdb:db1')).toBe(false);
  });
});

test('an autoRefresh iterator keeps its view but lets go of the files a compaction made obsolete', async () => {
  const root = new FakeDirectory();
  const db = await openFake(root, new FakeLocks(), 'db1', { writeBufferSize: 64 * 1024 });
  const key = (i: number) => `k${String(i).padStart(5, '0')}`;
  for (let i = 0; i < 3000; i++) db.put(key(i), bytes(`old-${i}`.padEnd(100, '.')));
  await db.compactRange();
  const refreshing = db.iterator({ batchSize: 10, autoRefresh: true });
  const plain = db.iterator({ batchSize: 10 });
  const seen = [refreshing.next().value!];
  plain.next();
  for (let i = 0; i < 3000; i++) db.put(key(i), bytes(`new-${i}`.padEnd(100, '.')));
  await db.compactRange();
  await db.idle();
  const pinned = db.statistics().pool!.dataBytes;
  plain.release();
  await db.idle();
  // The refreshing iterator still holds the old tables until its next step.
  expect(db.statistics().pool!.dataBytes).toBe(pinned);
  for (let i = 0; i < 20; i++) seen.push(refreshing.next().value!); // crosses a batch: refreshes
  await db.idle();
  const after = db.statistics().pool!.dataBytes;
  expect(after).toBeLessThan(pinned * 0.7);
  for (const e of refreshing) seen.push(e);
  expect(seen.length).toBe(3000);
  expect(seen.every(([k, v], i) => text(k) === key(i) && text(v)!.startsWith(`old-${i}.`))).toBe(true);
});

describe('the file pool', () => {
  test('a tight loop of writes that outruns the top-up waits in memory, then gets PoolExhausted, not a hang, and works again after an await', async () => {
    const root = new FakeDirectory();
    const db = await openFake(root, new FakeLocks(), 'db1', { poolReserve: 4, writeBufferSize: 64 * 1024, maxWriteBufferNumber: 2 });
    const value = new Uint8Array(4096);
    let err: unknown;
    let i = 0;
    for (; i < 10_000 && err === undefined; i++) {
      try {
        db.put(`k${i}`, value);
      } catch (e) {
        err = e;
      }
    }
    expect(err).toBeDefined();
    expect((err as { code: string }).code).toBe('PoolExhausted');
    expect((err as Error).message).toMatch(/wait in memory.*pool/);
    const s = db.statistics();
    expect(s.pool!.free).toBeLessThan(2);
    // Before the refusal, writes waited in the memtable for a file.
    expect(s.tickers['silt.write.waiting.for.files']).toBeGreaterThan(10);
    expect(db.get(`k${i - 1}`)).toBeUndefined(); // the refused write
    // Nothing was lost and nothing is stuck: let the event loop top up.
    await db.idle();
    db.put('after', value);
    expect(db.get(`k${i - 2}`)?.length).toBe(4096);
    // The burst used all of the reserve: the keeper now keeps twice as many
    // files free.
    expect(db.statistics().pool!.free).toBeGreaterThanOrEqual(8);
  });

  test('the pool is topped up between calls, by itself, once writes used it up', async () => {
    const root = new FakeDirectory();
    const db = await openFake(root, new FakeLocks(), 'db1', { poolReserve: 6, writeBufferSize: 64 * 1024, maxWriteBufferNumber: 4 });
    expect(db.statistics().pool!.free).toBeGreaterThanOrEqual(6); // opening used some; refilled
    const value = new Uint8Array(4096);
    let i = 0;
    while (db.statistics().pool!.free >= 6 && i < 5000) db.put(`k${i++}`, value);
    expect(db.statistics().pool!.free).toBeLessThan(6);
    for (let t = 0; t < 20 && db.statistics().pool!.free < 6; t++) await new Promise((r) => setTimeout(r, 5));
    expect(db.statistics().pool!.free).toBeGreaterThanOrEqual(6);
  });

  test('when storage refuses new files the pool reports it and writes fail clearly', async () => {
    const root = new FakeDirectory();
    const db = await openFake(root, new FakeLocks(), 'db1', { poolReserve: 4, writeBufferSize: 64 * 1024 });
    root.dirs.get('siltdb')!.dirs.get('db1')!.maxFiles = poolFiles(root).size; // no more
    const value = new Uint8Array(4096);
    let err: unknown;
    for (let i = 0; i < 20_000 && err === undefined; i++) {
      try {
        db.put(`k${i}`, value);
        if (i % 10 === 0) await new Promise((r) => setTimeout(r, 0));
      } catch (e) {
        err = e;
      }
    }
    expect((err as { code: string }).code).toBe('PoolExhausted');
    expect(db.statistics().background.lastError?.code).toBe('QuotaExceeded');
    // The message gives the cause, not advice that cannot help (letting
    // the event loop run tops nothing up when storage refuses files).
    const message = (err as Error).message;
    expect(message).toContain('the pool could not add files');
    expect(message).toContain('QuotaExceeded');
    expect(message).not.toMatch(/let the worker's event loop run|larger pool/);
    expect((err as Error).cause).toBeInstanceOf(SiltError);
  });

  test('pooled files freed by flushes and compactions are reused, so the pool stays small', async () => {
    const root = new FakeDirectory();
    const db = await openFake(root, new FakeLocks(), 'db1', { writeBufferSize: 64 * 1024 });
    const value = new Uint8Array(500);
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 1000; i++) {
        db.put(`k${i}`, value);
        if (i % 100 === 99) await new Promise((r) => setTimeout(r, 0)); // requests arriving
      }
      await db.idle();
    }
    await db.compactRange();
    const s = db.statistics();
    expect(s.tickers['silt.flushes']).toBeGreaterThan(5);
    expect(s.pool!.files).toBeLessThan(40);
    expect(s.pool!.free).toBeGreaterThan(0);
  });

  test('a pooled file still held by a dying context is retried, then opened', async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    const db = await openFake(root, locks);
    db.put('k', bytes('v'));
    db.close();
    const file = [...poolFiles(root).values()][0]!;
    file.open = true; // a terminated worker's handle, not yet released
    setTimeout(() => (file.open = false), 100);
    const again = await openFake(root, locks);
    expect(text(again.get('k'))).toBe('v');
  });

  test('bad options are refused before anything opens', async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    for (const o of [{ poolReserve: 3 }, { writeBufferSize: 10 }, { compression: 'zstd' }, { wait: 'yes' }, { sync: 1 }]) {
      expect((await rejected(openFake(root, locks, 'db1', o as OpenOptions))).code).toBe('InvalidArgument');
    }
    for (const name of ['', '../x', 'a/b', 'x'.repeat(200), 7]) {
      expect((await rejected(openFake(root, locks, name as string))).code).toBe('InvalidArgument');
    }
    expect(root.dirs.size).toBe(0);
  });
});

test('repairDatabase rebuilds a damaged database from what is intact; a missing or open one is refused', async () => {
  const root = new FakeDirectory();
  const locks = new FakeLocks();
  const db = await openFake(root, locks, 'db1', { blockSize: 1024 });
  for (let i = 0; i < 3000; i++) db.put(`k${String(i).padStart(5, '0')}`, bytes(`value ${i}`.padEnd(60, '.')));
  db.flush();
  // Open elsewhere: refused with DatabaseLocked, as open() is.
  expect((await rejected(repairOn({ root, locks }, 'db1'))).code).toBe('DatabaseLocked');
  db.close();
  // One byte of one table file's first data block damaged (past the pooled file's 4 KiB header).
  const tables = [...poolFiles(root).values()].filter((f) => new TextDecoder().decode(f.data.subarray(0, 4096)).includes('.sst'));
  expect(tables.length).toBe(1);
  tables[0]!.data[4096 + 100]! ^= 0xff;
  tables[0]!.durable = tables[0]!.data.slice();
  expect((await rejected((async () => (await openFake(root, locks, 'db1')).verify())())).code).toMatch(/Corruption|ChecksumMismatch/);
  for (const d of opened.splice(0)) d.close();
  const report = await repairOn({ root, locks }, 'db1');
  expect(report.tablesDamaged).toBe(1);
  expect(report.blocksLost).toBe(1);
  expect(report.problems.length).toBe(1);
  expect(report.entries).toBeLessThan(3000);
  expect(report.entries).toBeGreaterThan(2900);
  const repaired = await openFake(root, locks, 'db1');
  expect(repaired.count()).toBe(report.entries);
  expect(repaired.verify().entries).toBe(report.entries);
  expect(text(repaired.get('k02999'))).toBe('value 2999'.padEnd(60, '.'));
  repaired.close();
  expect((await rejected(repairOn({ root, locks }, 'nope'))).code).toBe('NotFound');
});

test('a browser whose OPFS has no sync access handles gets NotSupported naming the API, not an I/O error', async () => {
  const root = new FakeDirectory();
  const top = await root.getDirectoryHandle('siltdb', { create: true });
  const dir = await top.getDirectoryHandle('db1', { create: true });
  // What WebKitGTK 2.50 throws with its AccessHandle feature on.
  dir.handleError = Object.assign(new Error('Backend does not support this operation'), { name: 'NotSupportedError' });
  const locks = new FakeLocks();
  const err = await rejected(openFake(root, locks, 'db1'));
  expect(err.code).toBe('NotSupported');
  expect(err.message).toMatch(/FileSystemSyncAccessHandle/);
  expect(locks.isHeld('siltdb:db1')).toBe(false);
});

describe('importDatabase and a tab that goes mid-import', () => {
  const marker = (root: FakeDirectory, name: string) => root.dirs.get('siltdb')?.dirs.get(name)?.files.has('import-unfinished');

  test('the database is marked while it is imported and unmarked once the import is durable', async () => {
    const src = await openMemory();
    for (let i = 0; i < 500; i++) src.put(`k${i}`, bytes(`v${i}`));
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    const seen: (boolean | undefined)[] = [];
    async function* chunks() {
      for await (const c of src.export() as unknown as AsyncIterable<Uint8Array>) {
        seen.push(marker(root, 'copy'));
        yield c;
      }
    }
    const report = await importDatabaseOn({ root, locks }, 'copy', chunks(), {});
    src.close();
    expect(report.entries).toBe(500);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((m) => m === true)).toBe(true);
    expect(marker(root, 'copy')).toBe(false);
    const db = await openFake(root, locks, 'copy', { createIfMissing: false });
    expect(text(db.get('k499'))).toBe('v499');
  });

  test('a backup of more tables than the pool has files, given as one piece, waits for files and imports them all', async () => {
    // Eight flushes in one task (no background work between them): eight L0 tables.
    const src = await openMemory();
    for (let i = 0; i < 20_000; i++) {
      src.put(`k${String(i).padStart(5, '0')}`, bytes(`value ${i} ${(i * 2654435761) % 1e9}`));
      if (i % 2500 === 2499) src.flush();
    }
    const tables = src.statistics().properties.filesPerLevel.reduce((a, b) => a + b, 0);
    expect(tables).toBeGreaterThan(3);
    const all = new Uint8Array(await new Response(src.export()).arrayBuffer());
    src.close();
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    // poolReserve 4: fewer free files than the backup has tables.
    const report = await importDatabaseOn({ root, locks }, 'many', [all], { poolReserve: 4 });
    expect(report.tableFiles).toBe(tables);
    const db = await openFake(root, locks, 'many', { createIfMissing: false });
    expect(db.count()).toBe(20_000);
    expect(text(db.get('k19999'))).toMatch(/^value 19999 /);
    db.verify();
    db.close();
  });

  test('a database an import left unfinished (still marked) is gone at the next open: NotFound, or a new empty one', async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    // What a tab closed mid-import leaves: the new database, some of its
    // data, and the mark.
    const db = await openFake(root, locks, 'half');
    for (let i = 0; i < 100; i++) db.put(`k${i}`, bytes('partial'));
    db.close();
    await (await root.dirs.get('siltdb')!.getDirectoryHandle('half')).getFileHandle('import-unfinished', { create: true });
    const err = await rejected(openOn({ root, locks }, 'half', { createIfMissing: false }));
    expect(err.code).toBe('NotFound');
    expect(root.dirs.get('siltdb')!.dirs.has('half')).toBe(false);
    // Marked again, then opened as usual: a new, empty database.
    const again = await openFake(root, locks, 'half');
    for (let i = 0; i < 10; i++) again.put(`k${i}`, bytes('partial'));
    again.close();
    await (await root.dirs.get('siltdb')!.getDirectoryHandle('half')).getFileHandle('import-unfinished', { create: true });
    const fresh = await openFake(root, locks, 'half');
    expect(fresh.count()).toBe(0);
    // A database with no mark is left alone.
    fresh.put('kept', bytes('yes'));
    fresh.close();
    expect(text((await openFake(root, locks, 'half')).get('kept'))).toBe('yes');
  });

  test('a failed import removes the database it made, before it lets go of the lock', async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    const err = await rejected(importDatabaseOn({ root, locks }, 'bad', [new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9])], {}));
    expect(['Corruption', 'ChecksumMismatch', 'InvalidArgument']).toContain(err.code);
    expect(root.dirs.get('siltdb')!.dirs.has('bad')).toBe(false);
    expect(locks.isHeld('siltdb:bad')).toBe(false);
  });
});

describe('removeDatabase', () => {
  test('cut short after some of its files went (the worker terminated), the next open finds a new database, not a broken one', async () => {
    for (const after of [1, 3, 8]) {
      const root = new FakeDirectory();
      const locks = new FakeLocks();
      const db = await openFake(root, locks, 'gone', { writeBufferSize: 64 * 1024 });
      for (let i = 0; i < 3000; i++) db.put(`k${i}`, new Uint8Array(100).fill(i % 251));
      db.flush();
      db.close();
      releaseParked('gone');
      // The removal dies after `after` files: what a terminated worker leaves.
      let removed = 0;
      root.faults.hook = (op) => {
        if (op === 'removeEntry' && ++removed > after) throw Object.assign(new Error('the worker was terminated'), { name: 'AbortError' });
      };
      await rejected(removeDatabaseOn({ root, locks }, 'gone'));
      root.faults.hook = undefined;
      const again = await openFake(root, locks, 'gone');
      expect(again.count(), `cut after ${after} removals`).toBe(0);
      again.verify();
      again.close();
    }
  });
});
