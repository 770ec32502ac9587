// Silt through the `siltdb` package, on OPFS: in this dedicated worker with
// synchronous calls and zero-copy reads (every byte of every view is read,
// then the result is released), tuned (`silt`) or with the library's
// defaults (`silt:defaults`, what a new user gets); or through connect()
// (`silt:connect`), the Promise API a page uses, whose values come back as
// copies across a postMessage.
import { connect, importDatabase, open, openMemory, removeDatabase, WriteBatch } from '/siltdb/dist/index.js';
import { checksum, moduleGraph, u64Bytes, u64Of } from '../common.js';
import { TUNED } from '../silt-options.js';

/** Both balances read for update, both written; `tx` a worker or connect() transaction (awaited either way). */
async function transferIn(tx, from, to, amount) {
  const a = await tx.getForUpdate(from);
  const b = await tx.getForUpdate(to);
  tx.put(from, u64Bytes(u64Of(a) - amount));
  tx.put(to, u64Bytes(u64Of(b) + amount));
}

/**
 * Two callers at once, each running its transfers one after another, with
 * an await between its reads and its writes (so the two interleave and
 * conflict); returns how many transactions ran again.
 */
async function transferConcurrently(db, lists) {
  let runs = 0;
  await Promise.all(
    lists.map(async (list) => {
      for (const [from, to, amount] of list) {
        await db.transaction(
          async (tx) => {
            runs++;
            const a = await tx.getForUpdate(from);
            const b = await tx.getForUpdate(to);
            await null;
            tx.put(from, u64Bytes(u64Of(a) - amount));
            tx.put(to, u64Bytes(u64Of(b) + amount));
          },
          { retries: 1000 },
        );
      }
    }),
  );
  return runs - lists.reduce((n, l) => n + l.length, 0);
}

const plusOne = (v) => u64Bytes((v === undefined ? 0 : u64Of(v)) + 1);
const ONE = u64Bytes(1);

const batch = new WriteBatch();

/**
 * A scan through the batch API: one crossing into wasm for the whole scan
 * (batchSize = n), every value's bytes read where they are in the batch.
 */
function scanBatch(db, startKey, n) {
  const it = db.iterator({ gte: startKey, batchSize: n });
  const b = it.nextBatch();
  let sum = 0;
  if (b !== undefined) {
    const { bytes, offsets } = b;
    for (let e = 0; e < b.length; e++) {
      const end = offsets[2 * e + 2];
      for (let j = offsets[2 * e + 1]; j < end; j++) sum += bytes[j];
    }
  }
  it.release();
  return sum;
}

/** A scan entry by entry (`for...of`, each entry a key and a value the caller owns). */
function scanEntries(db, startKey, n) {
  let sum = 0;
  let read = 0;
  for (const [, v] of db.iterator({ gte: startKey, batchSize: n })) {
    sum += checksum(v);
    if (++read >= n) break;
  }
  return sum;
}

/** A get through a pinned view (`getPinned`): read every byte, release. */
function getView(db, key) {
  const v = db.getPinned(key);
  if (v === undefined) return -1;
  const sum = checksum(v.bytes);
  v.release();
  return sum;
}

/** A get of a value the caller owns (`get`: a copy in a buffer of its own). */
function getOwned(db, key) {
  const v = db.get(key);
  return v === undefined ? -1 : checksum(v);
}

/** `adapter`, without the merge workload when `options` name no merge operator (library defaults). */
function withoutMergeUnless(options, adapter) {
  if (options.mergeOperator === undefined) delete adapter.bumpMerge;
  return adapter;
}

/** The worker adapter (synchronous, zero-copy), with `options` given to open(). */
function inWorker(id, label, options, describeOptions) {
  return withoutMergeUnless(options, {
    id,
    label,
    storage: 'OPFS',
    options: {
      ...describeOptions,
      api: 'open() in the worker; get: a pinned view (getPinned) read byte by byte then released, or get (a value owned by the caller; both measured); multiGet views; scans: iterator({ gte, batchSize: n }).nextBatch() (one bytes array and offsets), or for...of entries (both measured); transfer: begin(), getForUpdate ×2, put ×2, commit(), synchronous; counter: update(key, f) (a transaction), or merge(key, u64 1) with mergeOperator u64add',
      settle: 'await db.idle() after each fill (flushes and compactions caught up; timed apart)',
    },
    files: FILES,
    persistent: true,

    async open(name) {
      // A database closed by a worker that was just terminated (a reload)
      // releases its Web Lock a moment later: wait for it, within reason.
      return open(name, { ...options, wait: true, signal: AbortSignal.timeout(10_000) });
    },

    /**
     * One WriteBatch, written atomically. A write that stalls does compaction
     * work itself and may run out of pooled OPFS files (PoolExhausted, nothing
     * written): as siltdb's README says, wait for background work and write
     * it again.
     */
    putBatch(db, keys, values) {
      batch.clear();
      for (let i = 0; i < keys.length; i++) batch.put(keys[i], values[i]);
      try {
        db.write(batch);
      } catch (e) {
        if (e?.code !== 'PoolExhausted') throw e;
        return db.idle().then(() => db.write(batch));
      }
    },

    get: getView,

    multiGet(db, keys) {
      const res = db.multiGet(keys);
      let sum = 0;
      for (let i = 0; i < res.length; i++) {
        const b = res.get(i);
        if (b !== undefined) sum += checksum(b);
      }
      res.release();
      return sum;
    },

    scan: scanBatch,

    count(db, lo, hi) {
      return db.count({ gte: lo, lte: hi });
    },

    approximateSize(db, lo, hi) {
      return db.approximateSize({ gte: lo, lte: hi });
    },

    /** A new database `to` from db.export() through importDatabase (closed, durable); returns the entries copied. */
    async backup(db, to) {
      const report = await importDatabase(to, db.export(), options);
      return report.entries;
    },

    /** The same copy the way an app would without export: an iterator's batches written as WriteBatches of 1,000, then closed (close makes them durable). */
    async copy(db, to) {
      const dst = await open(to, { ...options, errorIfExists: true });
      let n = 0;
      try {
        const b = new WriteBatch();
        for (const batch of db.iterator({ batchSize: 1000 }).batches()) {
          b.clear();
          for (let i = 0; i < batch.length; i++) b.put(batch.keyAt(i), batch.valueAt(i));
          n += batch.length;
          for (;;) {
            try {
              dst.write(b);
              break;
            } catch (e) {
              if (e?.code !== 'PoolExhausted') throw e;
              await dst.idle();
            }
          }
        }
      } finally {
        dst.close();
      }
      return n;
    },

    /**
     * One transaction, begun, read, written and committed synchronously
     * (no await: nothing else runs in this worker meanwhile, so it never
     * conflicts).
     */
    transfer(db, from, to, amount) {
      const tx = db.begin();
      try {
        const a = tx.getForUpdate(from);
        const b = tx.getForUpdate(to);
        tx.put(from, u64Bytes(u64Of(a) - amount));
        tx.put(to, u64Bytes(u64Of(b) + amount));
        tx.commit();
      } finally {
        tx.abort();
      }
    },

    transferConcurrently,

    bump(db, key) {
      return db.update(key, plusOne);
    },

    bumpMerge(db, key) {
      db.merge(key, ONE);
    },

    variants: {
      get: { view: getView, owned: getOwned },
      scan: { batch: scanBatch, 'for...of': scanEntries },
    },

    settle(db) {
      return db.idle();
    },

    async close(db) {
      db.close();
    },

    async destroy(name) {
      await removeDatabase(name);
    },
  });
}

/** Through connect(): siltdb's own worker, started from this one; every call a Promise. */
function viaConnect(id, label, options) {
  return {
    id,
    label,
    storage: 'OPFS',
    options: {
      ...options,
      api: 'connect() (the Promise API a page uses; its worker started from this one): get and multiGet return copies, scans are for await over iterator({ gte, batchSize: n }); transfer: transaction(fn) with getForUpdate ×2 and put ×2; counter: update(key, f), or merge(key, u64 1)',
      settle: 'none: connect() has no idle(); background work runs in its worker between requests',
    },
    files: FILES,
    persistent: true,

    async open(name) {
      return connect(name, { ...options, wait: true, signal: AbortSignal.timeout(10_000) });
    },

    async putBatch(db, keys, values) {
      batch.clear();
      for (let i = 0; i < keys.length; i++) batch.put(keys[i], values[i]);
      for (let attempt = 0; ; attempt++) {
        try {
          return await db.write(batch);
        } catch (e) {
          if (e?.code !== 'PoolExhausted' || attempt > 100) throw e;
          await new Promise((r) => setTimeout(r, 10)); // its worker tops the pool up meanwhile
        }
      }
    },

    async get(db, key) {
      const v = await db.get(key);
      return v === undefined ? -1 : checksum(v);
    },

    async multiGet(db, keys) {
      const values = await db.multiGet(keys);
      let sum = 0;
      for (const v of values) if (v !== undefined) sum += checksum(v);
      return sum;
    },

    async scan(db, startKey, n) {
      let sum = 0;
      let read = 0;
      for await (const [, v] of db.iterator({ gte: startKey, batchSize: n })) {
        sum += checksum(v);
        if (++read >= n) break;
      }
      return sum;
    },

    count(db, lo, hi) {
      return db.count({ gte: lo, lte: hi });
    },

    approximateSize(db, lo, hi) {
      return db.approximateSize({ gte: lo, lte: hi });
    },

    /** db.transaction(fn): two reads for update (two round trips to the leader), the writes ride with the commit (a third). */
    transfer(db, from, to, amount) {
      return db.transaction((tx) => transferIn(tx, from, to, amount));
    },

    transferConcurrently,

    bump(db, key) {
      return db.update(key, plusOne);
    },

    bumpMerge(db, key) {
      return db.merge(key, ONE);
    },

    async close(db) {
      await db.close();
    },

    async destroy(name) {
      await removeDatabase(name);
    },
  };
}

// What a user of open() ships: the package's module graph and the wasm.
// What a page using connect() loads: the entry and its chunk, the worker it starts, the broker, the wasm
// (the same list for the open() adapters: worker.js and broker.js counted since the bundles, 2026-11-29).
const FILES = await moduleGraph('/siltdb/dist/index.js', ['/siltdb/dist/worker.js', '/siltdb/dist/broker.js', '/siltdb/dist/silt_wasm_bg.wasm']);

/**
 * The worker adapter on an in-memory database (openMemory): the same
 * engine, bindings and calls with no file I/O, to compare with an engine
 * that keeps its files in memory (LevelDB's MEMFS). A database lives until
 * it is destroyed (close keeps it for the next open), so there is no
 * reopen row, no persistence check and no backup or copy (those write
 * OPFS databases).
 */
function inMemory() {
  const kept = new Map();
  const adapter = inWorker('silt:memory', 'Silt in memory (openMemory)', TUNED, { ...TUNED, sync: 'n/a (in memory)' });
  delete adapter.backup;
  delete adapter.copy;
  return {
    ...adapter,
    storage: 'memory (openMemory: no file I/O, as LevelDB on MEMFS)',
    persistent: false,
    reopens: false,
    async open(name) {
      if (!kept.has(name)) kept.set(name, await openMemory(TUNED));
      return kept.get(name);
    },
    async close() {},
    async destroy(name) {
      kept.get(name)?.close();
      kept.delete(name);
    },
  };
}

const CONFIGS = {
  memory: inMemory,
  defaults: () => inWorker('silt:defaults', 'Silt, library defaults', {}, { options: 'none: open(name) as a new user calls it (siltdb defaults)' }),
  connect: () => viaConnect('silt:connect', 'Silt via connect()', TUNED),
  rowcache: () => inWorker('silt:rowcache', 'Silt, row cache of 16 MiB', { ...TUNED, rowCacheCapacity: 16 << 20 }, { ...TUNED, rowCacheCapacity: '16 MiB' }),
  noreadcompaction: () =>
    inWorker(
      'silt:noreadcompaction',
      'Silt, no read-triggered compaction',
      { ...TUNED, readTriggeredCompaction: false },
      { ...TUNED, readTriggeredCompaction: false },
    ),
};

export default {
  ...inWorker('silt', 'Silt (siltdb)', TUNED, { ...TUNED, sync: 'false (writes reach OPFS without a flush per write; the default)' }),
  configs: Object.fromEntries(Object.keys(CONFIGS).map((c) => [c, c])),
  withConfig: (config) => CONFIGS[config](),
};
