// Raw IndexedDB, as a web app would use it: one object store, binary keys
// (the 16-byte Uint8Array), values stored as Uint8Array (structured clone).
// One readwrite transaction per putBatch; get = one readonly transaction
// with one get; multiGet = the gets of a batch in parallel in one
// transaction; scans by cursor and by getAll on a key range (two variants,
// each its own row).
import { checksum, u64Bytes, u64Of } from '../common.js';

/**
 * A read-modify-write in one readwrite transaction: `keys` read (in
 * parallel), `f` makes their new values, all written; resolves when it
 * commits. No await of anything but the requests: an IndexedDB
 * transaction commits itself once the code awaits something else.
 */
function readModifyWrite(db, keys, f) {
  const tx = db.transaction(STORE, 'readwrite', { durability: DURABILITY });
  const store = tx.objectStore(STORE);
  const values = new Array(keys.length);
  let left = keys.length;
  keys.forEach((k, i) => {
    const req = store.get(k);
    req.onsuccess = () => {
      values[i] = req.result;
      if (--left === 0) {
        const next = f(values);
        for (let j = 0; j < keys.length; j++) store.put(next[j], keys[j]);
      }
    };
  });
  return completion(tx, 'read-modify-write');
}

const STORE = 'kv';
// Silt's writes are not flushed per write by default; 'relaxed' is
// IndexedDB's equivalent (Chromium's default too, said here explicitly).
const DURABILITY = 'relaxed';

/** The result of a request, or its error with what was asked. */
function request(req, what) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(new Error(`IndexedDB ${what}: ${req.error?.name}: ${req.error?.message}`));
  });
}

/** Resolves when the transaction commits; rejects if it fails or aborts. */
function completion(tx, what) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(new Error(`IndexedDB ${what}: ${tx.error?.name}: ${tx.error?.message}`));
    tx.onabort = () => reject(new Error(`IndexedDB ${what} aborted${tx.error ? `: ${tx.error.name}: ${tx.error.message}` : ''}`));
  });
}

function scanByCursor(db, startKey, n) {
  const tx = db.transaction(STORE, 'readonly');
  const req = tx.objectStore(STORE).openCursor(IDBKeyRange.lowerBound(startKey));
  return new Promise((resolve, reject) => {
    let sum = 0;
    let read = 0;
    req.onsuccess = () => {
      const cursor = req.result;
      if (cursor === null) return resolve(sum);
      sum += checksum(cursor.value);
      if (++read >= n) return resolve(sum);
      cursor.continue();
    };
    req.onerror = () => reject(new Error(`IndexedDB cursor: ${req.error?.name}: ${req.error?.message}`));
  });
}

async function scanByGetAll(db, startKey, n) {
  const tx = db.transaction(STORE, 'readonly');
  const values = await request(tx.objectStore(STORE).getAll(IDBKeyRange.lowerBound(startKey), n), 'getAll');
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += checksum(values[i]);
  return sum;
}

export default {
  id: 'indexeddb',
  label: 'IndexedDB',
  storage: 'IndexedDB',
  options: {
    keys: 'binary (Uint8Array, 16 bytes)',
    values: 'Uint8Array (structured clone)',
    durability: DURABILITY,
    putBatch: 'one readwrite transaction, one put per key',
    get: 'one readonly transaction, one get',
    multiGet: 'one readonly transaction, the gets in parallel',
    scan: 'cursor (openCursor on IDBKeyRange.lowerBound, continue()) or getAll(range, n): both measured',
    transactions: 'transfer and counter: one readwrite transaction, the gets in parallel, the puts in their success handler',
  },
  files: [], // built into the browser
  persistent: true,

  open(name) {
    return new Promise((resolve, reject) => {
      const req = indexedDB.open(name, 1);
      req.onupgradeneeded = () => req.result.createObjectStore(STORE);
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(new Error(`IndexedDB open of "${name}": ${req.error?.name}: ${req.error?.message}`));
      req.onblocked = () => reject(new Error(`IndexedDB open of "${name}" is blocked by another connection`));
    });
  },

  putBatch(db, keys, values) {
    const tx = db.transaction(STORE, 'readwrite', { durability: DURABILITY });
    const store = tx.objectStore(STORE);
    for (let i = 0; i < keys.length; i++) store.put(values[i], keys[i]);
    return completion(tx, 'putBatch');
  },

  async get(db, key) {
    const tx = db.transaction(STORE, 'readonly');
    const v = await request(tx.objectStore(STORE).get(key), 'get');
    return v === undefined ? -1 : checksum(v);
  },

  async multiGet(db, keys) {
    const store = db.transaction(STORE, 'readonly').objectStore(STORE);
    const values = await Promise.all(keys.map((k) => request(store.get(k), 'get')));
    let sum = 0;
    for (const v of values) if (v !== undefined) sum += checksum(v);
    return sum;
  },

  scan: scanByCursor,

  /** IDBObjectStore.count over a key range. */
  count(db, lo, hi) {
    return request(db.transaction(STORE, 'readonly').objectStore(STORE).count(IDBKeyRange.bound(lo, hi)), 'count');
  },

  transfer(db, from, to, amount) {
    return readModifyWrite(db, [from, to], ([a, b]) => [u64Bytes(u64Of(a) - amount), u64Bytes(u64Of(b) + amount)]);
  },

  bump(db, key) {
    return readModifyWrite(db, [key], ([v]) => [u64Bytes((v === undefined ? 0 : u64Of(v)) + 1)]);
  },

  variants: {
    scan: { cursor: scanByCursor, getAll: scanByGetAll },
  },

  async close(db) {
    db.close();
  },

  destroy(name) {
    return new Promise((resolve, reject) => {
      const req = indexedDB.deleteDatabase(name);
      let timer;
      req.onsuccess = () => {
        clearTimeout(timer);
        resolve();
      };
      req.onerror = () => {
        clearTimeout(timer);
        reject(new Error(`IndexedDB deleteDatabase("${name}"): ${req.error?.name}: ${req.error?.message}`));
      };
      // 'blocked' also fires while a closed connection finishes its last
      // transactions; the deletion goes ahead once they are done.
      req.onblocked = () => {
        timer ??= setTimeout(() => reject(new Error(`IndexedDB deleteDatabase("${name}") is blocked by a connection still open after 5 s`)), 5_000);
      };
    });
  },
};
