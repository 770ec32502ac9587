// Storage bytes of one data set in Silt, IndexedDB and SQLite-wasm, for
// bench/run/bytes.mjs (issue 36, item 4), in this dedicated worker behind
// rpc.js. The data set is bench/browser/records.js's JSON records.
//
// - Silt (`open()` on OPFS, library defaults with `options` over them): the
//   records' JSON as UTF-8 bytes, written in key order in batches of 1,000,
//   flushed, background work done; measured then and again after
//   `compactRange()` (every table rewritten into the bottommost level, where
//   dictionaries are made). Bytes: `statistics().properties.tableBytes`.
// - IndexedDB: each record as an object (the structured clone an app
//   stores), a readwrite transaction per 1,000. Bytes: the difference of
//   `navigator.storage.estimate()`'s IndexedDB usage before and after.
// - SQLite-wasm (the suite's adapter: opfs-sahpool, kv(k BLOB PRIMARY KEY,
//   v BLOB) WITHOUT ROWID): the same JSON bytes, a transaction per 1,000.
//   Bytes: page_count × page_size.
//
// Gets: `n` random records read back (Silt: `db.get`, a copy the caller
// owns; every byte summed), to see what a dictionary costs a read.
import { open, removeDatabase } from '/siltdb/dist/index.js';
import adapter from '../engines/sqlite.js';
import { below, checksum, rng } from '../common.js';
import { recordBytes, recordKey, record } from '../records.js';
import { done, request } from '../idb-requests.js';

const dbs = new Map();

const largeKey = (i) => `file:${String(i).padStart(4, '0')}`;

/** `size` bytes of noise from `seed` (incompressible, like media): common.js's PRNG, a word at a time. */
function noise(size, seed) {
  const out = new Uint8Array(size);
  const words = new Uint32Array(out.buffer);
  const next = rng(seed);
  for (let i = 0; i < words.length; i++) words[i] = next();
  return out;
}

async function idbUsage() {
  const e = await navigator.storage.estimate();
  return e.usageDetails?.indexedDB ?? e.usage;
}

function tableState(db) {
  const s = db.statistics();
  return {
    tableBytes: s.properties.tableBytes,
    filesPerLevel: s.properties.filesPerLevel,
    dictReads: s.tickers['silt.compression.dict.block.read.count'] ?? 0,
  };
}

const ops = {
  /** Opens Silt's `name` with `options`, writes `n` records; bytes after the fill and after compactRange(). */
  async silt(name, options, n) {
    await removeDatabase(name).catch(() => {});
    const db = await open(name, options);
    let user = 0;
    const t0 = performance.now();
    for (let b = 0; b < n; b += 1000) {
      const batch = db.batch();
      for (let i = b; i < Math.min(n, b + 1000); i++) {
        const v = recordBytes(i);
        user += v.length + recordKey(i).length;
        batch.put(recordKey(i), v);
      }
      db.write(batch);
    }
    db.flush();
    await db.idle();
    const fillMs = performance.now() - t0;
    const filled = tableState(db);
    const t1 = performance.now();
    await db.compactRange();
    await db.idle();
    const compactMs = performance.now() - t1;
    const compacted = tableState(db);
    // Every block read once, so that a block cache that holds them all
    // serves every timed get from memory.
    for (let i = 0; i < n; i++) db.get(recordKey(i));
    dbs.set(name, db);
    return { user, filled, compacted, fillMs, compactMs };
  },

  /** `count` random gets of Silt's `name` (every byte of each read): µs per get. */
  siltGets(name, n, count, seed) {
    const db = dbs.get(name);
    const next = rng(seed);
    const keys = Array.from({ length: count }, () => recordKey(below(next, n)));
    for (let i = 0; i < 200; i++) db.get(keys[i]);
    let sum = 0;
    const t0 = performance.now();
    for (const k of keys) sum += checksum(db.get(k));
    const us = ((performance.now() - t0) * 1000) / count;
    if (!(sum > 0)) throw new Error(`silt ${name}: gets read nothing`);
    return us;
  },

  async closeSilt(name) {
    await dbs.get(name)?.close();
    dbs.delete(name);
    await removeDatabase(name).catch(() => {});
  },

  /** IndexedDB's object store of the records (objects); its usage before and after. */
  async idb(name, n) {
    await request(indexedDB.deleteDatabase(name)).catch(() => {});
    const before = await idbUsage();
    const r = indexedDB.open(name, 1);
    r.onupgradeneeded = () => r.result.createObjectStore('orders');
    const idb = await request(r);
    for (let b = 0; b < n; b += 1000) {
      const tx = idb.transaction('orders', 'readwrite');
      const store = tx.objectStore('orders');
      for (let i = b; i < Math.min(n, b + 1000); i++) store.put(record(i), recordKey(i));
      await done(tx);
    }
    idb.close();
    // Let the backing store settle (Chromium's writes its log asynchronously).
    await new Promise((r) => setTimeout(r, 2000));
    const after = await idbUsage();
    await request(indexedDB.deleteDatabase(name)).catch(() => {});
    return { bytes: after - before };
  },

  /** SQLite-wasm with the suite's adapter (its 'defaults' config): the records' JSON bytes; page_count × page_size. */
  async sqlite(name, n) {
    const engine = adapter.withConfig('defaults');
    const { db, put } = await engine.open(name);
    for (let b = 0; b < n; b += 1000) {
      db.transaction(() => {
        for (let i = b; i < Math.min(n, b + 1000); i++) put.bind([recordKey(i), recordBytes(i)]).stepReset();
      });
    }
    const pages = db.selectValue('PRAGMA page_count');
    const pageSize = db.selectValue('PRAGMA page_size');
    const { version } = engine.options;
    db.exec('DELETE FROM kv');
    return { bytes: pages * pageSize, pages, pageSize, version };
  },

  /**
   * Large values (item 4's second data set): `n` values of `size` bytes of
   * noise (media does not compress), each put alone, then read back (every
   * byte summed); then `updates` passes overwriting every one (a load with
   * updates), after each the background work done. What was written to
   * storage per byte put (WAL, flushes, compactions: Silt's tickers) and the
   * tables' bytes at the end.
   */
  async siltLarge(name, options, n, size, updates) {
    await removeDatabase(name).catch(() => {});
    const db = await open(name, options);
    const value = (i, pass) => noise(size, i * 7919 + pass * 104_729);
    const first = Array.from({ length: n }, (_, i) => value(i, 0)); // made before the clock starts
    const t0 = performance.now();
    for (let i = 0; i < n; i++) db.put(largeKey(i), first[i]);
    await db.idle();
    const writeMs = performance.now() - t0;
    const t1 = performance.now();
    let sum = 0;
    for (let i = 0; i < n; i++) sum += checksum(db.get(largeKey(i)));
    const readMs = performance.now() - t1;
    if (!(sum > 0)) throw new Error('silt: the large values read nothing');
    for (let pass = 1; pass <= updates; pass++) {
      for (let i = 0; i < n; i++) db.put(largeKey(i), value(i, pass));
      await db.idle();
    }
    const s = db.statistics();
    const t = (name) => s.tickers[name] ?? 0;
    const written = t('rocksdb.wal.bytes') + t('rocksdb.flush.write.bytes') + t('rocksdb.compact.write.bytes');
    const put = n * size * (1 + updates);
    const out = { writeMs, readMs, written, put, tableBytes: s.properties.tableBytes, filesPerLevel: s.properties.filesPerLevel };
    await db.close();
    await removeDatabase(name).catch(() => {});
    return out;
  },

  /** The same large values in IndexedDB, a readwrite transaction each, then read back (a readonly one each); its usage. */
  async idbLarge(name, n, size) {
    await request(indexedDB.deleteDatabase(name)).catch(() => {});
    const before = await idbUsage();
    const r = indexedDB.open(name, 1);
    r.onupgradeneeded = () => r.result.createObjectStore('files');
    const idb = await request(r);
    const first = Array.from({ length: n }, (_, i) => noise(size, i * 7919)); // made before the clock starts
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const tx = idb.transaction('files', 'readwrite');
      tx.objectStore('files').put(first[i], largeKey(i));
      await done(tx);
    }
    const writeMs = performance.now() - t0;
    const t1 = performance.now();
    let sum = 0;
    for (let i = 0; i < n; i++) sum += checksum(await request(idb.transaction('files').objectStore('files').get(largeKey(i))));
    const readMs = performance.now() - t1;
    if (!(sum > 0)) throw new Error('IndexedDB: the large values read nothing');
    idb.close();
    await new Promise((r) => setTimeout(r, 2000));
    const bytes = (await idbUsage()) - before;
    await request(indexedDB.deleteDatabase(name)).catch(() => {});
    return { writeMs, readMs, bytes };
  },

  /** A record's size as JSON, for the report. */
  sample(i) {
    return { key: recordKey(i), json: new TextDecoder().decode(recordBytes(i)) };
  },
};

self.onmessage = async ({ data: [op, ...args] }) => {
  try {
    self.postMessage(await ops[op](...args));
  } catch (e) {
    self.postMessage({ error: `${op}: ${e?.stack ?? e?.message ?? e}` });
  }
};
