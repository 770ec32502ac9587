// The IndexedDB storage (issue 38, item 2): a database's files in memory,
// persisted to IndexedDB, for browsers whose workers have no OPFS sync
// access handles. In Node on fake-indexeddb (a complete IndexedDB in
// memory) and the real wasm build: the engine's fs contract on its files,
// round trips across "workers" (a new directory read from IndexedDB), and
// a model test of crashes (every commit after a moment refused) against an
// oracle: what `persisted()` acknowledged is never lost.
import { readFileSync } from 'node:fs';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import { afterEach, describe, expect, test } from 'vitest';
import type { Database } from '../src/index.js';
import { IdbRoot, IdbTop, idbHas, type IdbFactoryLike } from '../src/idb/idb-directory.js';
import { openOn, removeDatabaseOn, type OpenOptions } from '../src/local/open.js';
import { releaseAllParked } from '../src/opfs/parking.js';
import { FakeLocks } from './fakes.js';
import { Rng } from './tabs-world.js';
import { bytes, rejected, text } from './helpers.js';

const opened: Database[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (!db.closed) db.close();
  releaseAllParked();
});

/** One origin's IndexedDB, whose commits can be refused from a moment on (a crash: nothing after it reaches storage). */
function origin() {
  const factory = new IDBFactory();
  /** `crashed`: every commit refused; `failNext`: that many commits refused (a flaky storage). */
  const state = { crashed: false, failNext: 0, commits: 0, attempts: 0, refusals: 0 };
  const open = factory.open.bind(factory);
  const wrapped: IdbFactoryLike = {
    deleteDatabase: factory.deleteDatabase.bind(factory),
    open(name: string, version?: number) {
      const request = open(name, version);
      request.addEventListener('success', () => {
        const db = request.result;
        const transaction = db.transaction.bind(db);
        db.transaction = ((stores: string | string[], mode?: IDBTransactionMode, options?: IDBTransactionOptions) => {
          const tx = transaction(stores, mode, options);
          if (mode === 'readwrite') {
            state.attempts++;
            if (state.crashed || state.failNext > 0) {
              if (!state.crashed) {
                state.failNext--;
                state.refusals++;
              }
              queueMicrotask(() => tx.abort());
            } else tx.addEventListener('complete', () => state.commits++);
          }
          return tx;
        }) as typeof db.transaction;
      });
      return request;
    },
  };
  return { factory: wrapped, state, raw: factory };
}

async function openIdb(factory: IdbFactoryLike, locks: FakeLocks, name: string, options: OpenOptions = {}, parkable = false) {
  const db = await openOn({ root: new IdbRoot(factory, IDBKeyRange), locks, kind: 'indexeddb' }, name, options, parkable);
  opened.push(db);
  return db;
}

describe('the IndexedDB storage', () => {
  test("the engine's fs contract holds on its files", async () => {
    const testBuild = await import('../../target/test-pkg/silt_wasm_test.js');
    await testBuild.default({ module_or_path: readFileSync(new URL('../../target/test-pkg/silt_wasm_test_bg.wasm', import.meta.url)) });
    const { factory } = origin();
    const dir = await new IdbTop(factory, (l, u) => IDBKeyRange.bound(l, u)).getDirectoryHandle('contract', { create: true });
    const pool = new testBuild.OpfsPool();
    try {
      for (let i = 0; i < 48; i++) {
        const name = `${String(i).padStart(6, '0')}.pool`;
        pool.add(await (await dir.getFileHandle(name, { create: true })).createSyncAccessHandle(), name);
      }
      expect(pool.runFsContract('contract')).toEqual([]);
    } finally {
      pool.close();
    }
  });

  test('a database is kept: a new worker reads it back from IndexedDB; db.storage says where it lives', async () => {
    const { factory } = origin();
    const db = await openIdb(factory, new FakeLocks(), 'kept');
    expect(db.storage).toBe('indexeddb');
    for (let i = 0; i < 2000; i++) db.put(`k${i}`, bytes(`v${i}`));
    db.flush();
    db.put('last', bytes('in the log'), { sync: true });
    await db.persisted();
    db.close();
    // Another worker (its own locks: the first one's memory is gone), the same IndexedDB.
    const again = await openIdb(factory, new FakeLocks(), 'kept');
    expect(text(again.get('k1234'))).toBe('v1234');
    expect(text(again.get('last'))).toBe('in the log');
    expect(again.count()).toBe(2001);
    expect(again.statistics().pool!.maxBytes).toBe(256 << 20);
  });

  test('closing lets go of the lock only once its writes are committed, so the next worker reads them', async () => {
    const { factory } = origin();
    const locks = new FakeLocks();
    const db = await openIdb(factory, locks, 'handover');
    for (let i = 0; i < 500; i++) db.put(`k${i}`, bytes(`v${i}`)); // not awaited
    db.close();
    const next = await openIdb(factory, locks, 'handover', { wait: true });
    expect(next.count()).toBe(500);
  });

  test('a write is kept across a crash once persisted() resolved; a crash before leaves the last committed state', async () => {
    const { factory, state } = origin();
    const db = await openIdb(factory, new FakeLocks(), 'crash');
    db.put('a', bytes('1'));
    await db.persisted();
    state.crashed = true; // from now on nothing reaches IndexedDB
    db.put('a', bytes('2'), { sync: true });
    db.put('b', bytes('lost'));
    const err = await rejected(db.persisted());
    expect(['IoError', 'QuotaExceeded']).toContain(err.code);
    state.crashed = false;
    const after = await openIdb(factory, new FakeLocks(), 'crash');
    expect(text(after.get('a'))).toBe('1');
    expect(after.get('b')).toBeUndefined();
  });

  test('maxBytes bounds the memory it holds: QuotaExceeded beyond, nothing lost', async () => {
    const { factory } = origin();
    const db = await openIdb(factory, new FakeLocks(), 'capped', { maxBytes: 2 << 20, writeBufferSize: 256 * 1024 });
    const value = new Uint8Array(4096).fill(7);
    let written = 0;
    let code = '';
    try {
      for (; written < 10_000; written++) db.put(`k${String(written).padStart(6, '0')}`, value);
    } catch (e) {
      code = (e as { code: string }).code;
    }
    expect(code).toBe('QuotaExceeded');
    await db.persisted();
    db.close();
    const again = await openIdb(factory, new FakeLocks(), 'capped', { maxBytes: 2 << 20 });
    expect(again.count()).toBe(written);
  });

  test('removeDatabase removes it from IndexedDB', async () => {
    const { factory } = origin();
    const locks = new FakeLocks();
    const db = await openIdb(factory, locks, 'gone');
    db.put('x', bytes('y'));
    db.close();
    expect(await idbHas(factory, 'gone')).toBe(true);
    await removeDatabaseOn({ root: new IdbRoot(factory, IDBKeyRange), locks, kind: 'indexeddb' }, 'gone');
    expect(await idbHas(factory, 'gone')).toBe(false);
    const err = await rejected(openIdb(factory, locks, 'gone', { createIfMissing: false }));
    expect(err.code).toBe('NotFound');
  });
});

test('crashes, clean reopens and refused commits at random moments, among puts, spilled transactions, ingests and compactions, against an oracle: every write persisted() acknowledged is read back, and nothing never written', async () => {
  const SEQUENCES = Number(process.env.SILT_IDB_SEQUENCES ?? 12);
  for (let seed = 1; seed <= SEQUENCES; seed++) {
    const rng = new Rng(seed);
    const { factory, state } = origin();
    /** Per key: the last value persisted() acknowledged, and every value written since (any may be what a crash left). */
    const acked = new Map<string, string | null>();
    const since = new Map<string, (string | null)[]>();
    let counter = 0;
    const trace: string[] = [];
    for (let life = 0; life < 4; life++) {
      trace.push(`life ${life}`);
      const locks = new FakeLocks();
      /** Opens the database; an open whose commits are refused fails (IoError), and is made again once the storage takes them. */
      const openModel = async (): Promise<Database> => {
        for (let attempt = 0; ; attempt++) {
          const before = state.refusals;
          try {
            return await openIdb(factory, locks, 'model', { writeBufferSize: 64 * 1024, transactionSpillBytes: 8192, wait: true });
          } catch (e) {
            if ((e as { code?: string }).code !== 'IoError' || state.refusals === before || attempt > 5) throw e;
            trace.push(`open refused (${(e as Error).message.slice(0, 80)})`);
          }
        }
      };
      let db = await openModel();
      /** Each key one of the values allowed (`exact`: the last written); from now on that is what is kept. */
      const reconcile = (exact: boolean, when: string) => {
        for (let k = 0; k < 40; k++) {
          const key = `key${k}`;
          const got = db.get(key);
          const value: string | null = got === undefined ? null : (text(got) as string);
          const written = since.get(key);
          const allowed = new Set<string | null>(
            exact && written !== undefined ? [written[written.length - 1]!] : [acked.get(key) ?? null, ...(written ?? [])],
          );
          if (!allowed.has(value)) {
            const short = (v: string | null) => v?.split('-')[0] ?? 'none';
            throw new Error(
              `seed ${seed}, life ${life}, ${when}: ${key} reads ${short(value)}; allowed ${[...allowed].map(short).join(', ')}\n${trace.slice(-30).join('\n')}`,
            );
          }
          acked.set(key, value);
          since.delete(key);
        }
      };
      // What the crash left.
      reconcile(false, 'after a crash');
      /** Commits refused when the keys were last reconciled. */
      let refusals = state.refusals;
      const steps = 20 + rng.int(40);
      for (let s = 0; s < steps; s++) {
        const r = rng.next();
        /** `key` may now hold `value` (written, or perhaps: an operation that failed may have applied it). */
        const wrote = (key: string, value: string | null) => {
          const list = since.get(key) ?? [];
          list.push(value);
          since.set(key, list);
        };
        const nextValue = () => `v${counter++}-${'x'.repeat(rng.int(3000))}`;
        if (r >= 0.6 && r < 0.7) {
          // What meets the storage besides puts: a transaction that spills into files of its own, an ingest, a compaction.
          const kind = r < 0.64 ? 'transaction' : r < 0.67 ? 'ingest' : 'compactRange';
          const keys = [...new Set(Array.from({ length: 1 + rng.int(12) }, () => `key${rng.int(40)}`))].sort();
          const values = keys.map(() => nextValue());
          if (kind !== 'compactRange') {
            for (const [i, k] of keys.entries()) wrote(k, values[i]!);
          }
          try {
            if (kind === 'transaction') {
              await db.transaction((tx) => {
                for (const [i, k] of keys.entries()) tx.put(k, bytes(values[i]!));
              });
            } else if (kind === 'ingest') {
              await db.ingest(keys.map((k, i) => [k, bytes(values[i]!)] as const));
            } else {
              await db.compactRange();
            }
            trace.push(kind);
          } catch (e) {
            // A refused commit may fail it (then each value may or may not be there: allowed above).
            if (state.refusals === refusals && state.failNext === 0) throw e;
            trace.push(`${kind} failed: ${(e as { code?: string }).code}`);
          }
        } else if (r < 0.7) {
          for (let i = 0, n = 1 + rng.int(30); i < n; i++) {
            const key = `key${rng.int(40)}`;
            const value = rng.next() < 0.2 ? null : nextValue();
            const sync = rng.next() < 0.2;
            if (value === null) db.delete(key, { sync });
            else db.put(key, bytes(value), { sync });
            if (key === 'key0') trace.push(`key0 = ${value?.split('-')[0] ?? 'none'}${sync ? ' sync' : ''}`);
            wrote(key, value);
          }
        } else if (r < 0.8) {
          db.flush();
        } else if (r < 0.85) {
          await new Promise((resolve) => setTimeout(resolve, rng.int(3)));
        } else if (r < 0.88) {
          state.failNext = 1 + rng.int(3); // the storage refuses the next commits
          trace.push(`refuse ${state.failNext}`);
        } else if (r < 0.92) {
          // A clean close and a reopen in this worker: it waits for the close's last commit.
          trace.push(`close and reopen (failNext ${state.failNext}, commits ${state.commits}, attempts ${state.attempts})`);
          db.close();
          opened.splice(opened.indexOf(db), 1);
          db = await openModel();
          trace.push(`reopened (failNext ${state.failNext}, commits ${state.commits}, attempts ${state.attempts})`);
          // Exact unless a commit was refused since the last check (then what it held may be lost).
          reconcile(state.refusals === refusals, 'after a clean reopen');
          refusals = state.refusals;
        } else {
          try {
            await db.persisted();
            trace.push('persisted');
          } catch {
            trace.push('persisted refused');
            continue; // refused: nothing acknowledged
          }
          // Acknowledged: from now on each key's last value is the floor.
          for (const [key, values] of since) {
            acked.set(key, values[values.length - 1]!);
          }
          since.clear();
        }
      }
      // The crash: nothing more reaches IndexedDB, the worker's memory is gone.
      state.crashed = true;
      db.close();
      opened.splice(opened.indexOf(db), 1);
      await new Promise((resolve) => setTimeout(resolve, 5));
      state.crashed = false;
    }
  }
});
