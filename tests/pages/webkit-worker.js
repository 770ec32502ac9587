// The worker side of webkit-page.js: open() (on OPFS, or on the IndexedDB
// storage where the browser's workers have no sync access handles), or
// openMemory(); the shared API scenarios; a stream of acknowledged writes
// for a kill; a database written on one visit and read on the next.
import { open, openMemory } from '/siltdb/dist/index.js';
import { problems } from '/test-scenarios/run.js';
import { sharedSuiteInWorker } from './shared-scenarios.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const key = (i) => `key-${String(i).padStart(8, '0')}`;
const env = () => ({ syncAccessHandles: typeof FileSystemFileHandle === 'function' && 'createSyncAccessHandle' in FileSystemFileHandle.prototype });

const scenarios = {
  async memory() {
    const db = await openMemory();
    db.put('k', enc.encode('memory'));
    const value = dec.decode(db.get('k'));
    db.close();
    return value;
  },

  async open() {
    const db = await open('webkit-open', { signal: AbortSignal.timeout(10_000) });
    db.put('k', enc.encode('open'));
    const value = dec.decode(db.get('k'));
    const storage = db.storage;
    db.close();
    return { value, storage };
  },

  /** The shared scenarios through open(): the problems found (none expected) and how many ran. */
  async suite() {
    const outcomes = await sharedSuiteInWorker({});
    return { ran: outcomes.length, problems: problems(outcomes) };
  },

  /** Writes keys in batches of 100, each acknowledged by persisted() and reported, until terminated. */
  async stream({ name }) {
    const db = await open(name);
    for (let i = 0; ; i += 100) {
      for (let j = i; j < i + 100; j++) db.put(key(j), enc.encode(`v${j}`));
      await db.persisted();
      postMessage({ progress: i + 100 });
    }
  },

  /** How many keys `name` holds from key 0 on without a gap, and the storage. */
  async count({ name }) {
    const db = await open(name, { wait: true, signal: AbortSignal.timeout(10_000) });
    let n = 0;
    while (db.get(key(n)) !== undefined) n++;
    const storage = db.storage;
    const total = db.count();
    db.close();
    return { n, total, storage };
  },

  /** Writes `n` keys to `name` (a sync write last), waits for persisted(), closes. */
  async write({ name, n }) {
    const db = await open(name);
    for (let i = 0; i < n; i++) db.put(key(i), enc.encode(`v${i}`));
    db.put('last', enc.encode('synced'), { sync: true });
    await db.persisted();
    db.close();
    return n;
  },
};

self.onmessage = async ({ data: { scenario, args } }) => {
  try {
    postMessage({ ok: true, value: await scenarios[scenario](args ?? {}), env: env() });
  } catch (e) {
    postMessage({ ok: false, error: { code: e?.code ?? 'none', message: String(e?.message ?? e), cause: e?.cause?.name } });
  }
};
