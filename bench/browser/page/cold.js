// One cold start (bench/run/page.mjs), in a tab of its own: from this
// script's first line to the first value read back, for one engine
// (?engine=), as an app's page does it on load: Silt: import siltdb,
// connect(name), get; IndexedDB: open, one get in a transaction; SQLite:
// start its worker (sqlite-worker.js: import SQLite, install opfs-sahpool,
// open with the library's defaults), one get. On the first visit (#fill=N,
// a fragment: the return visits load this very URL from the HTTP cache) the
// database is new: the get finds nothing, then keys 0..N-1 are written for
// the visits after. Leaves `window.result` and sets
// document.body.dataset.state to 'done' (or 'error', with `window.failure`).
import { expectedChecksum, checksum, keyTextOf, valueFor } from '../common.js';
import { rpc } from './rpc.js';

const t0 = performance.now();
const q = new URLSearchParams(location.search);
const name = q.get('name');
const fill = Number(new URLSearchParams(location.hash.slice(1)).get('fill') ?? 0);
const PROBE = 500;
const stages = {};
const mark = (stage) => {
  stages[stage] = performance.now() - t0;
};

const engines = {
  async silt() {
    const { connect } = await import('/siltdb/dist/index.js');
    mark('imported');
    const db = await connect(name);
    mark('connected');
    const v = await db.get(keyTextOf(PROBE));
    mark('value');
    return {
      value: v,
      async fill() {
        for (let b = 0; b < fill; b += 1000) {
          const batch = db.batch();
          for (let i = b; i < Math.min(fill, b + 1000); i++) batch.put(keyTextOf(i), valueFor(i));
          await db.write(batch);
        }
      },
    };
  },
  async indexeddb() {
    const open = indexedDB.open(name, 1);
    open.onupgradeneeded = () => open.result.createObjectStore('kv');
    const db = await done(open);
    mark('connected');
    const v = await done(db.transaction('kv', 'readonly').objectStore('kv').get(keyTextOf(PROBE)));
    mark('value');
    return {
      value: v,
      fill() {
        const tx = db.transaction('kv', 'readwrite');
        for (let i = 0; i < fill; i++) tx.objectStore('kv').put(valueFor(i), keyTextOf(i));
        return new Promise((resolve, reject) => {
          tx.oncomplete = resolve;
          tx.onerror = tx.onabort = () => reject(tx.error);
        });
      },
    };
  },
  async sqlite() {
    const call = rpc(new Worker(new URL('./sqlite-worker.js', import.meta.url), { type: 'module' }));
    await call(['open', 'defaults', name]);
    mark('connected');
    const v = await call(['get', 'defaults', keyTextOf(PROBE)]);
    mark('value');
    return { value: v, fill: () => call(['fill', 'defaults', fill]) };
  },
};

function done(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** The page's own resources (HTML and modules, not a worker's): how many came from the HTTP cache. */
function resources() {
  const all = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
  return { total: all.length, fromCache: all.filter((e) => e.transferSize === 0 && e.decodedBodySize > 0).length };
}

(async () => {
  const engine = q.get('engine');
  const got = await engines[engine]();
  if (fill > 0) {
    if (got.value !== undefined) throw new Error(`${engine}: the first visit found key ${PROBE} already there`);
    await got.fill();
  } else if (got.value === undefined || checksum(got.value) !== expectedChecksum(PROBE)) {
    throw new Error(`${engine}: key ${PROBE} read back ${got.value === undefined ? 'missing' : 'wrong'}`);
  }
  window.result = { engine, ms: stages.value, sinceNavigationMs: t0 + stages.value, scriptStartMs: t0, stages, resources: resources() };
  document.body.dataset.state = 'done';
})().catch((e) => {
  window.failure = String(e?.stack ?? e);
  document.body.dataset.state = 'error';
});
