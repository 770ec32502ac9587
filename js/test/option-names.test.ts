// Issue 41: nothing a newcomer writes is silently ignored. Every options
// object of the public API refuses a key it does not know, naming it and
// the closest known one (src/core/option-names.ts), in a worker's API and
// through connect(); a second connect() of a realm with other options is
// refused; deleteRange with its bounds swapped is refused; a transient
// batch reads as empty once replaced. The method lists below are checked
// against the classes' prototypes, so that a method added later must be
// placed in one of them.
import { afterEach, describe, expect, test } from 'vitest';
import { closest } from '../src/core/option-names.js';
import { connect, type Database, importDatabase, open, openMemory, type SiltError, u64, WriteBatch } from '../src/index.js';
import { Database as DatabaseClass } from '../src/local/database.js';
import { openOn } from '../src/local/open.js';
import { repairOn } from '../src/local/repair.js';
import { Transaction } from '../src/local/transaction.js';
import { RemoteDatabase } from '../src/tabs/remote-database.js';
import { RemoteTransaction } from '../src/tabs/remote-transaction.js';
import { FakeDirectory, FakeLocks } from './fakes.js';
import { bytes, refusal } from './helpers.js';
import { Origin } from './tabs-harness.js';

/** Checks that `f` is refused with InvalidArgument naming `key` and suggesting `near` (a suggestion or a hint, or undefined: the list). */
async function refusesName(f: () => unknown, key: string, near: string | RegExp | undefined): Promise<void> {
  const e = await refusal(f);
  expect(e.code, e.message).toBe('InvalidArgument');
  expect(e.message).toContain(`no option "${key}"`);
  if (typeof near === 'string') expect(e.message).toContain(`did you mean ${near}?`);
  else if (near instanceof RegExp) expect(e.message).toMatch(near);
  else expect(e.message).toMatch(/its options are /);
  expect(e.message).not.toMatch(/[a-z]_[a-z]|Options::/); // no Rust names
}

/** A call of a handle with one options argument, the misspelling to give it, and the suggestion it must get. */
type Call<D> = { call: (db: D, options: Record<string, unknown>) => unknown; typo: string; near: string | RegExp | undefined };

/** Calls with options shared by both APIs, as `db.<name>`. */
function sharedCalls<D extends Database | RemoteDatabase>(): Record<string, Call<D>> {
  const v = bytes('v');
  const any = (db: D) => db as unknown as Record<string, (...a: unknown[]) => unknown>;
  return {
    put: { call: (db, o) => any(db).put!('k', v, o), typo: 'snyc', near: 'sync' },
    delete: { call: (db, o) => any(db).delete!('k', o), typo: 'Sync', near: 'sync' },
    merge: { call: (db, o) => any(db).merge!('n', u64(1), o), typo: 'durability', near: /use sync: true/ },
    deleteRange: { call: (db, o) => any(db).deleteRange!('a', 'b', o), typo: 'synch', near: 'sync' },
    clear: { call: (db, o) => any(db).clear!(o), typo: 'gtee', near: 'gte' },
    write: { call: (db, o) => any(db).write!(new WriteBatch().put('k', v), o), typo: 'sinc', near: 'sync' },
    ingest: { call: (db, o) => any(db).ingest!([['k', v]], o), typo: 'sort', near: 'sorted' },
    get: { call: (db, o) => any(db).get!('k', o), typo: 'valueEncodng', near: 'valueEncoding' },
    has: { call: (db, o) => any(db).has!('k', o), typo: 'snapshott', near: 'snapshot' },
    hasMany: { call: (db, o) => any(db).hasMany!(['k'], o), typo: 'fillCache', near: /every read fills/ },
    multiGet: { call: (db, o) => any(db).multiGet!(['k'], o), typo: 'valueEncoding2', near: 'valueEncoding' },
    transaction: { call: (db, o) => any(db).transaction!(() => {}, o), typo: 'retires', near: 'retries' },
    update: { call: (db, o) => any(db).update!('k', () => undefined, o), typo: 'maxbackoff', near: 'maxBackoff' },
    iterator: { call: (db, o) => any(db).iterator!(o), typo: 'keys', near: /db\.keys\(\) for keys only/ },
    keys: { call: (db, o) => any(db).keys!(o), typo: 'limt', near: 'limit' },
    values: { call: (db, o) => any(db).values!(o), typo: 'revers', near: 'reverse' },
    entries: { call: (db, o) => any(db).entries!(o), typo: 'highWaterMark', near: /batchSize/ },
    count: { call: (db, o) => any(db).count!(o), typo: 'colour', near: undefined },
    approximateSize: { call: (db, o) => any(db).approximateSize!(o), typo: 'snapshot', near: undefined },
    export: { call: (db, o) => any(db).export!(o), typo: 'format', near: 'form' },
    sublevel: { call: (db, o) => any(db).sublevel!('s', o), typo: 'valueencoding', near: 'valueEncoding' },
    watch: { call: (db, o) => any(db).watch!(o), typo: 'sine', near: 'since' },
    live: { call: (db, o) => any(db).live!(o), typo: 'limt', near: 'limit' },
  };
}

/** Methods that take no options object (or take one only as a range, listed above). */
const WITHOUT_OPTIONS = [
  'constructor',
  'batch',
  'begin',
  'snapshot',
  'latestSequence',
  'flush',
  'idle',
  'compactRange',
  'verify',
  'statistics',
  'import',
  'ingestRocksdb',
  'close',
  'name',
  'path',
  'closed',
  'isLeader',
  'storage',
  'persisted',
  'liveGet',
];

/** Every method of `proto` is one of `withOptions` or `without`. */
function covers(proto: object, withOptions: string[], without: string[]): void {
  const methods = Object.getOwnPropertyNames(proto);
  const unplaced = methods.filter((m) => !withOptions.includes(m) && !without.includes(m));
  expect(unplaced, 'a method this test does not know: add it to the calls with options, or to the ones without').toEqual([]);
}

describe('closest', () => {
  test('suggests the name within a few edits, the same but for case, or none', () => {
    const names = ['createIfMissing', 'errorIfExists', 'sync', 'blockCacheCapacity'];
    expect(closest('createIfMising', names)).toBe('createIfMissing');
    expect(closest('createifmissing', names)).toBe('createIfMissing');
    expect(closest('snyc', names)).toBe('sync');
    expect(closest('errorIfExist', names)).toBe('errorIfExists');
    expect(closest('cacheSize', names)).toBeUndefined();
    expect(closest('x', names)).toBeUndefined();
    expect(closest('sort', ['sorted'])).toBe('sorted');
    expect(closest('key', ['keyEncoding', 'valueEncoding'])).toBeUndefined();
    expect(closest('value', ['keyEncoding', 'valueEncoding'])).toBeUndefined();
  });
});

describe("a worker's API", () => {
  test('every call with options refuses a misspelled one, naming it and the closest known one', async () => {
    const db = await openMemory({ mergeOperator: 'u64add' });
    try {
      const calls: Record<string, Call<Database>> = {
        ...sharedCalls<Database>(),
        getPinned: { call: (d, o) => d.getPinned('k', o as never), typo: 'snapshots', near: 'snapshot' },
        multiGet: { call: (d, o) => d.multiGet(['k'], o as never), typo: 'batch', near: 'batched' },
      };
      for (const [name, { call, typo, near }] of Object.entries(calls)) {
        await refusesName(() => call(db, { [typo]: true }), typo, near);
        // A key whose value is undefined is as misspelled as one with a value.
        await refusesName(() => call(db, { [typo]: undefined }), typo, near);
        expect(name).toBeTruthy();
      }
      covers(DatabaseClass.prototype, Object.keys(calls), WITHOUT_OPTIONS);
      // Options refused wrote nothing.
      expect(db.get('k')).toBeUndefined();
      expect(db.count()).toBe(0);

      const tx = db.begin();
      await refusesName(() => tx.iterator({ revers: true } as never), 'revers', 'reverse');
      await refusesName(() => tx.clear({ lt: 'z', gte2: 'a' } as never), 'gte2', 'gte');
      await refusesName(() => tx.commit({ snc: true } as never), 'snc', 'sync');
      // A transaction's iterator has its own word for a snapshot.
      expect((await refusal(() => tx.iterator({ snapshot: db.snapshot() } as never))).message).toMatch(/reads at the transaction's snapshot/);
      tx.abort();
      covers(
        Transaction.prototype,
        ['iterator', 'clear', 'commit'],
        ['constructor', 'in', 'ended', 'get', 'getForUpdate', 'multiGet', 'put', 'delete', 'deleteRange', 'merge', 'abort'],
      );
    } finally {
      db.close();
    }
  });

  test('open, openMemory, importDatabase and repairDatabase refuse a misspelled option before doing anything', async () => {
    const env = { root: new FakeDirectory(), locks: new FakeLocks() };
    await refusesName(() => openOn(env, 'db', { createIfMising: false } as never), 'createIfMising', 'createIfMissing');
    await refusesName(() => openMemory({ cacheSize: 1 } as never), 'cacheSize', /use blockCacheCapacity/);
    await refusesName(() => open('db', { errorIfExist: true } as never), 'errorIfExist', 'errorIfExists');
    await refusesName(() => importDatabase('db', new Uint8Array(0), { mergeoperator: 'append' } as never), 'mergeoperator', 'mergeOperator');
    await refusesName(() => repairOn(env, 'db', { poolReserve: 8 } as never), 'poolReserve', undefined);
    // Nothing was created by the refused open.
    expect((await refusal(() => openOn(env, 'db', { createIfMissing: false }))).code).toBe('NotFound');
  });

  test('deleteRange with end before start is refused (RocksDB: InvalidArgument), writing nothing; equal bounds and a clear of no keys are allowed', async () => {
    const db = await openMemory();
    try {
      db.put('m', bytes('v'));
      const e = await refusal(() => db.deleteRange('z', 'a'));
      expect(e.code).toBe('InvalidArgument');
      expect(e.message).toMatch(/end "a" sorts before start "z": swap them/);
      expect((await refusal(() => new WriteBatch().deleteRange('z', 'a'))).code).toBe('InvalidArgument');
      const tx = db.begin();
      expect((await refusal(() => tx.deleteRange('z', 'a'))).code).toBe('InvalidArgument');
      tx.clear({ gt: 'z', lt: 'a' }); // no key between: nothing
      tx.commit();
      db.deleteRange('m', 'm'); // an empty range
      db.clear({ gte: 'z', lt: 'a' }); // bounds that hold no key: nothing
      expect(db.get('m')).toEqual(bytes('v'));
    } finally {
      db.close();
    }
  });

  test('a transient batch reads as empty once the next call replaced it: length 0, no entries, keyText throws Released', async () => {
    const db = await openMemory();
    try {
      for (let i = 0; i < 10; i++) db.put(`k${i}`, bytes(`v${i}`));
      const it = db.iterator({ batchSize: 10 });
      const batch = it.nextBatch()!;
      expect(batch.length).toBe(10);
      expect(batch.keyText(0)).toBe('k0');
      it.nextBatch();
      expect(batch.length).toBe(0);
      expect(batch.bytes.length).toBe(0);
      expect([...batch]).toEqual([]);
      const e = await refusal(() => batch.keyText(0));
      expect(e.code).toBe('Released');
      expect(e.message).toMatch(/slice\(\) what you keep/);
      it.release();
    } finally {
      db.close();
    }
  });
});

describe('through connect()', () => {
  let origin: Origin | undefined;
  afterEach(async () => {
    await origin?.dispose();
    origin = undefined;
  });

  /** What `p` resolves to once the world has run it, or what it rejected with. */
  async function settled<T>(o: Origin, p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: SiltError }> {
    const r = await o.world.until(p, 60_000);
    if (r === undefined) throw new Error('still pending');
    return r.ok ? { ok: true, value: r.value as T } : { ok: false, error: r.error as SiltError };
  }

  test('every call with options refuses a misspelled one, as in a worker; watch, and a transaction, too', async () => {
    const o = await Origin.create(7, 'fifo', { mergeOperator: 'u64add' });
    origin = o;
    const c = await settled(o, o.connect(o.tab('A'), { mergeOperator: 'u64add' }));
    if (!c.ok) throw c.error;
    const db = c.value;
    const calls: Record<string, Call<RemoteDatabase>> = {
      ...sharedCalls<RemoteDatabase>(),
      multiGet: { call: (d, op) => d.multiGet(['k'], op as never), typo: 'batched', near: undefined }, // a worker's only
    };
    for (const { call, typo, near } of Object.values(calls)) {
      await refusesName(
        async () => {
          const r = call(db, { [typo]: 1 });
          if (r instanceof Promise) {
            const s = await settled(o, r);
            if (!s.ok) throw s.error;
          }
          // A watch or an iterator is made at once: refused then, not later.
          (r as { close?: () => void }).close?.();
        },
        typo,
        near,
      );
    }
    covers(RemoteDatabase.prototype, Object.keys(calls), WITHOUT_OPTIONS);
    const tx = db.begin();
    await refusesName(() => tx.iterator({ Reverse: true } as never), 'Reverse', 'reverse');
    await refusesName(() => tx.clear({ lt: 'z', lte2: 'a' } as never), 'lte2', 'lte');
    await refusesName(
      async () => {
        const s = await settled(o, tx.commit({ sycn: true } as never));
        if (!s.ok) throw s.error;
      },
      'sycn',
      'sync',
    );
    tx.abort();
    covers(
      RemoteTransaction.prototype,
      ['iterator', 'clear', 'commit'],
      ['constructor', 'in', 'ended', 'get', 'getForUpdate', 'multiGet', 'put', 'delete', 'deleteRange', 'merge', 'abort'],
    );
    // Nothing was written by the refused calls.
    const n = await settled(o, db.count());
    expect(n).toEqual({ ok: true, value: 0 });
    const r = await settled(o, db.deleteRange('z', 'a'));
    expect(r.ok ? 'ok' : r.error.code).toBe('InvalidArgument');
  });

  test('connect() refuses a misspelled option, and another library name with the way siltdb says it', async () => {
    await refusesName(() => connect('db', { pageCacheCapcity: 1 } as never), 'pageCacheCapcity', 'pageCacheCapacity');
    await refusesName(() => connect('db', { maxOpenFiles: 100 } as never), 'maxOpenFiles', /use poolReserve/);
  });

  test("a later connect() of a realm with an option other than its connection's is refused, naming both; left out or equal, it shares", async () => {
    const o = await Origin.create(8, 'fifo');
    origin = o;
    const tab = o.tab('A');
    const first = await settled(o, o.connect(tab));
    if (!first.ok) throw first.error;
    const other = await settled(o, o.connect(tab, { mergeOperator: 'u64add' }));
    expect(other.ok).toBe(false);
    const e = (other as { error: SiltError }).error;
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toMatch(/with mergeOperator: "u64add", but this realm .* is already connected to 'db\d+' with mergeOperator: none \(the default\)/);
    expect(e.message).toMatch(/give them all the same options/);
    // Left out, equal to the default, or only other encodings: the same connection.
    // createIfMissing and errorIfExists are conditions of a call's open, which an open connection meets.
    for (const options of [{}, { createIfMissing: false, pageCacheCapacity: 0 }, { valueEncoding: 'utf8' as const }, { sync: false }]) {
      const again = await settled(o, o.connect(tab, options));
      if (!again.ok) throw again.error;
      await settled(o, again.value.close());
    }
    const cache = await settled(o, o.connect(tab, { pageCacheCapacity: 1 << 20 }));
    expect(cache.ok ? 'ok' : cache.error.message).toMatch(/pageCacheCapacity: 1048576, but .* with pageCacheCapacity: 0 \(the default\)/);
    await settled(o, first.value.close());
  });
});

describe('in TypeScript', () => {
  test('a misspelled option does not compile, where object literals are inferred as type parameters too (get, multiGet, open, connect, sublevel)', async () => {
    const db = await openMemory();
    try {
      const s = db.snapshot();
      // Each line is a compile error (tsc -p tsconfig.test.json checks it), and a refusal at run time.
      // @ts-expect-error: not an option of a write
      await refusesName(() => db.put('k', bytes('v'), { snyc: true }), 'snyc', 'sync');
      // @ts-expect-error: a known option beside a misspelled one (a generic get infers the literal)
      await refusesName(() => db.get('k', { snapshot: s, valueEncodng: 'utf8' }), 'valueEncodng', 'valueEncoding');
      // @ts-expect-error: the same in multiGet
      await refusesName(() => db.multiGet(['k'], { snapshot: s, batchd: true }), 'batchd', 'batched');
      // @ts-expect-error: and in open's options with an encoding
      await refusesName(() => openMemory({ valueEncoding: 'utf8', createIfMising: false }), 'createIfMising', 'createIfMissing');
      // @ts-expect-error: and connect's
      await refusesName(() => connect('x', { valueEncoding: 'utf8', pageCacheCapcity: 1 }), 'pageCacheCapcity', 'pageCacheCapacity');
      // @ts-expect-error: and a sublevel's
      await refusesName(() => db.sublevel('s', { valueEncoding: 'utf8', keyEncodng: 'utf8' }), 'keyEncodng', 'keyEncoding');
      s.release();
    } finally {
      db.close();
    }
  });
});
