// Silt's two storages side by side in one dedicated worker, and IndexedDB
// itself, for bench/run/storage.mjs (issue 38): open() on OPFS (sync access
// handles) and on the IndexedDB storage (files in memory, committed to
// IndexedDB), each with the library defaults but the storage, the same data;
// a get (a copy the caller owns); a durable put (`sync: true`, then
// `await db.persisted()`: what a write must wait for to survive a crash of
// the tab on either storage); and IndexedDB's own readwrite transaction per
// put, awaited until complete. Behind the minimal layer of rpc.js.
import { open, removeDatabase } from '/siltdb/dist/index.js';
import { checksum, expectedChecksum, keyTextOf, valueFor } from '../common.js';
import { drawIndices, fillSilt, timeSiltGets } from './draw.js';
import { done, request } from '../idb-requests.js';

const dbs = new Map();
let idb;

const ops = {
  /** Opens `name` on `storage` ('opfs' or 'indexeddb'), fills `keys` keys, flushes, waits for its background work and its commits. */
  async open(name, storage, keys) {
    await removeDatabase(name).catch(() => {});
    const db = await open(name, { storage });
    await fillSilt(db, keys);
    await db.persisted();
    dbs.set(storage, db);
    return db.storage;
  },

  /** `n` gets on `storage`'s database (values owned by the caller, every byte read): µs per get. */
  get(storage, n, keys, seed) {
    return timeSiltGets(dbs.get(storage), n, keys, seed, `silt (${storage})`);
  },

  /** `n` puts on `storage`'s database, each awaited: `put(k, v, { sync })`, then `await db.persisted()`. µs per put. */
  async put(storage, sync, n, keys, seed) {
    const db = dbs.get(storage);
    const ks = Array.from(drawIndices(n, keys, seed), (i) => [keyTextOf(i), valueFor(i)]);
    const t0 = performance.now();
    for (const [k, v] of ks) {
      db.put(k, v, { sync });
      await db.persisted();
    }
    return ((performance.now() - t0) * 1000) / n;
  },

  /** IndexedDB's own store of the same keys (a Uint8Array per key, the key the string). */
  async idbOpen(name, keys) {
    await request(indexedDB.deleteDatabase(name)).catch(() => {});
    const r = indexedDB.open(name, 1);
    r.onupgradeneeded = () => r.result.createObjectStore('kv');
    idb = await request(r);
    for (let b = 0; b < keys; b += 1000) {
      const tx = idb.transaction('kv', 'readwrite');
      const store = tx.objectStore('kv');
      for (let i = b; i < Math.min(keys, b + 1000); i++) store.put(valueFor(i), keyTextOf(i));
      await done(tx);
    }
    return 0;
  },

  /** `n` puts to IndexedDB, each its own readwrite transaction (`durability`: 'default', 'relaxed' or 'strict') awaited until complete. µs per put. */
  async idbPut(durability, n, keys, seed) {
    const ks = Array.from(drawIndices(n, keys, seed), (i) => [keyTextOf(i), valueFor(i)]);
    const t0 = performance.now();
    for (const [k, v] of ks) {
      const tx = idb.transaction('kv', 'readwrite', { durability });
      tx.objectStore('kv').put(v, k);
      await done(tx);
    }
    return ((performance.now() - t0) * 1000) / n;
  },

  /** `n` gets from IndexedDB, each its own readonly transaction: µs per get. */
  async idbGet(n, keys, seed) {
    const idx = drawIndices(n, keys, seed);
    let sum = 0;
    const t0 = performance.now();
    for (const i of idx) sum += checksum(await request(idb.transaction('kv').objectStore('kv').get(keyTextOf(i))));
    const us = ((performance.now() - t0) * 1000) / n;
    let want = 0;
    for (const i of idx) want += expectedChecksum(i);
    if (sum !== want) throw new Error(`IndexedDB: get read ${sum}, not ${want}`);
    return us;
  },

  close() {
    for (const db of dbs.values()) db.close();
    dbs.clear();
    idb?.close();
    return 0;
  },
};

self.onmessage = async ({ data: [op, ...args] }) => {
  try {
    self.postMessage(await ops[op](...args));
  } catch (e) {
    self.postMessage({ error: `${op}: ${e?.code ?? ''} ${e?.message ?? e}` });
  }
};
