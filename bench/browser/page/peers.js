// The peers of the page benchmark (bench/run/page.mjs), each used from the
// page's main thread the way an app uses it, behind one shape:
// `get(key)` → the value (a Uint8Array) or undefined, `put(key, value)`,
// `scan(key, n)` → the sum of every byte of the `n` values from `key` on
// (every entry's key and value reach the page), `fill(n)` writes keys
// 0..n-1 (keyTextOf, valueFor), `close()`. Keys are the page's strings.
import { connect } from '/siltdb/dist/index.js';
import { checksum, keyTextOf, valueFor } from '../common.js';
import { rpc } from './rpc.js';

/**
 * The floor: a dedicated worker answering from a Map (map-worker.js) over
 * rpc.js; `accept(port)` has it serve a page of another tab too (the
 * follower's floor: port-relay.js).
 */
export function floor() {
  const worker = new Worker(new URL('./map-worker.js', import.meta.url), { type: 'module' });
  const call = rpc(worker);
  return {
    get: (key) => call(['get', key]),
    put: (key, value) => call(['put', key, value]),
    scan: async (key, n) => sumOf(await call(['scan', key, n]), n, 'the floor'),
    fill: (n) => call(['fill', n]),
    accept: (port) => worker.postMessage({ port }, [port]),
    close: async () => {},
    /** The floor of a put that outlives its tab: the same worker, each put appended to an OPFS file first (map-worker.js's putLogged). */
    async logged(name) {
      await call(['openLog', name]);
      return { get: (key) => call(['get', key]), put: (key, value) => call(['putLogged', key, value]), close: async () => {} };
    },
  };
}

/** The floor of a follower (another tab): a MessagePort to the leading tab's floor worker, through port-relay.js. */
export function floorFromAnotherTab() {
  const relay = new SharedWorker(new URL('./port-relay.js', import.meta.url), { name: 'bench-port-relay' });
  const { port1, port2 } = new MessageChannel();
  relay.port.postMessage({ port: port2 }, [port2]);
  const call = rpc(port1);
  return { get: (key) => call(['get', key]), close: async () => port1.close() };
}

/** In the leading tab: the floor worker serves the ports other tabs send (`floorFromAnotherTab`). */
export function hostFloorForOtherTabs(floorPeer) {
  const relay = new SharedWorker(new URL('./port-relay.js', import.meta.url), { name: 'bench-port-relay' });
  relay.port.onmessage = ({ data }) => floorPeer.accept(data.port);
  relay.port.postMessage('host');
}

/** `entries` ([key, value] pairs): the sum of their values' bytes, after checking there are `n`. */
function sumOf(entries, n, who) {
  if (entries.length !== n) throw new Error(`${who}: a scan of ${n} read ${entries.length} entries`);
  let sum = 0;
  for (const [, v] of entries) sum += checksum(v);
  return sum;
}

/** Silt through connect() with the library's defaults (no option at all), or `options`. */
export async function silt(name, options) {
  const db = await connect(name, options);
  return {
    db,
    get: (key) => db.get(key),
    put: (key, value) => db.put(key, value),
    async scan(key, n) {
      let sum = 0;
      let read = 0;
      for await (const [, v] of db.iterator({ gte: key, limit: n })) {
        sum += checksum(v);
        read++;
      }
      if (read !== n) throw new Error(`silt: a scan of ${n} read ${read} entries`);
      return sum;
    },
    async fill(n) {
      for (let b = 0; b < n; b += 1000) {
        const batch = db.batch();
        for (let i = b; i < Math.min(n, b + 1000); i++) batch.put(keyTextOf(i), valueFor(i));
        await db.write(batch);
      }
      await db.flush();
      await db.idle();
    },
    close: () => db.close(),
  };
}

// IndexedDB as idb-keyval (v6) uses it: one connection opened once, then
// every call a transaction of its own on that connection (its createStore
// and promisifyRequest); a put resolves when its transaction completes.

/** idb-keyval's promisifyRequest: a request's result, or a transaction's completion. */
function promisifyRequest(request) {
  return new Promise((resolve, reject) => {
    request.oncomplete = request.onsuccess = () => resolve(request.result);
    request.onabort = request.onerror = () => reject(request.error);
  });
}

/** idb-keyval's createStore: `(mode, callback) => callback(store)` in a new transaction. */
function createStore(dbName, storeName) {
  const request = indexedDB.open(dbName);
  request.onupgradeneeded = () => request.result.createObjectStore(storeName);
  const dbp = promisifyRequest(request);
  return (txMode, callback) => dbp.then((db) => callback(db.transaction(storeName, txMode).objectStore(storeName)));
}

/**
 * IndexedDB from the main thread, idb-keyval's way: no durability given,
 * so the browser's default (Chromium's is 'relaxed' since 121). A scan: one readonly transaction, one getAllRecords(range, n) where the
 * browser has it (keys and values in one request), else getAllKeys and
 * getAll side by side.
 */
export async function indexeddb(name) {
  const store = createStore(name, 'kv');
  await store('readonly', () => {});
  return {
    get: (key) => store('readonly', (s) => promisifyRequest(s.get(key))),
    put: (key, value) =>
      store('readwrite', (s) => {
        s.put(value, key);
        return promisifyRequest(s.transaction);
      }),
    scan: (key, n) =>
      store('readonly', async (s) => {
        const range = IDBKeyRange.lowerBound(key);
        if (typeof s.getAllRecords === 'function') {
          const records = await promisifyRequest(s.getAllRecords({ query: range, count: n }));
          return sumOf(
            records.map((r) => [r.key, r.value]),
            n,
            'IndexedDB',
          );
        }
        const [keys, values] = await Promise.all([promisifyRequest(s.getAllKeys(range, n)), promisifyRequest(s.getAll(range, n))]);
        return sumOf(
          keys.map((k, i) => [k, values[i]]),
          n,
          'IndexedDB',
        );
      }),
    async fill(n) {
      for (let b = 0; b < n; b += 1000) {
        await store('readwrite', (s) => {
          for (let i = b; i < Math.min(n, b + 1000); i++) s.put(valueFor(i), keyTextOf(i));
          return promisifyRequest(s.transaction);
        });
      }
    },
    scanWay: typeof IDBObjectStore.prototype.getAllRecords === 'function' ? 'getAllRecords({ query, count })' : 'getAllKeys + getAll',
    close: () => store('readonly', (s) => s.transaction.db.close()),
  };
}

/**
 * SQLite-wasm in a dedicated worker (sqlite-worker.js) behind rpc.js; one
 * worker holds every configuration's database (opfs-sahpool lets one worker
 * hold a pool's files).
 */
export function sqliteWorker() {
  const call = rpc(new Worker(new URL('./sqlite-worker.js', import.meta.url), { type: 'module' }));
  return {
    /** The database of `config` ('exclusive' or 'defaults') as a peer; resolves with SQLite's options. */
    async open(config, name) {
      const options = await call(['open', config, name]);
      return {
        options,
        get: (key) => call(['get', config, key]),
        put: (key, value) => call(['put', config, key, value]),
        scan: async (key, n) => sumOf(await call(['scan', config, key, n]), n, 'SQLite'),
        fill: (n) => call(['fill', config, n]),
        close: async () => {},
      };
    },
  };
}
