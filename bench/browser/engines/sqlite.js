// SQLite's official WebAssembly build (npm @sqlite.org/sqlite-wasm, served
// at /vendor/sqlite-wasm/) on the opfs-sahpool VFS (a pool of OPFS sync
// access handles, like siltdb's; no COOP/COEP needed), in this dedicated
// worker. One table kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID, prepared
// statements reused (bind, step, reset), each putBatch in BEGIN/COMMIT.
//
// Done the fastest way the C API allows, so that the comparison is with
// SQLite at its best: keys and values are copied into one scratch buffer in
// wasm memory and bound with SQLITE_STATIC (no allocation per bind), and
// values are read in place (sqlite3_column_blob: a view of wasm memory, no
// copy), every byte of each. multiGet is measured two ways (32 point
// lookups on one prepared statement, and one SELECT ... WHERE k IN (32 ?));
// the faster is SQLite's multireadrandom.
import sqlite3InitModule from '/vendor/sqlite-wasm/index.mjs';
import { checksum, u64Bytes, u64Of } from '../common.js';

const VFS = 'opfs-sahpool';
const POOL_DIR = '.silt-bench-sahpool';
const CACHE_KIB = 64 << 10; // the same budget as Silt's block cache: 64 MiB
const PRAGMAS = {
  cache_size: -CACHE_KIB,
  // Silt does not flush per write by default (sync=false); OFF is SQLite's
  // closest: no xSync (FileSystemSyncAccessHandle.flush) at commit.
  synchronous: 'OFF',
  temp_store: 'MEMORY',
};

let sqlite3;
let poolUtil;
const handles = new Set();

/**
 * Loads the module and installs the VFS, once per worker. The VFS holds
 * every OPFS file of its pool open, so a worker that was just terminated
 * (a page reload) may still hold them for a moment: retry for a few
 * seconds, keeping the pool's files if an attempt fails (the default would
 * delete them).
 */
async function init() {
  if (poolUtil) return poolUtil;
  if (!sqlite3) {
    // The 'opfs' VFS (not the one used here) needs SharedArrayBuffer, which a
    // page without COOP/COEP lacks; SQLite says so on every load. Keep quiet
    // about that one, pass on everything else.
    globalThis.sqlite3ApiConfig = {
      warn: (...args) => {
        if (!/inability to install 'opfs'/.test(String(args[0]))) console.warn(...args);
      },
    };
    sqlite3 = await sqlite3InitModule();
  }
  const deadline = performance.now() + 10_000;
  for (let attempt = 0; ; attempt++) {
    try {
      poolUtil = await sqlite3.installOpfsSAHPoolVfs({
        name: VFS,
        directory: POOL_DIR,
        initialCapacity: 6,
        preserveOnInitFailure: true,
        forceReinitIfPreviouslyFailed: attempt > 0,
      });
      return poolUtil;
    } catch (e) {
      if (performance.now() > deadline) {
        throw new Error(`SQLite: could not install the ${VFS} VFS in 10 s (its OPFS files are held elsewhere?): ${e?.message ?? e}`, { cause: e });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

const fileOf = (name) => `/${name}.sqlite3`;

/** A row's blob column read in place: the sum of its bytes (no copy). */
function blobChecksum(pStmt, col) {
  const p = sqlite3.capi.sqlite3_column_blob(pStmt, col);
  const n = sqlite3.capi.sqlite3_column_bytes(pStmt, col);
  return checksum(sqlite3.wasm.heap8u().subarray(p, p + n));
}

function fail(h, what) {
  throw new Error(`SQLite ${what}: ${sqlite3.capi.sqlite3_errmsg(h.db.pointer)}`);
}

/** Binds `bytes` to parameter `i` of `stmt` from the scratch buffer at `at` (SQLITE_STATIC). */
function bindBytes(h, stmt, i, bytes, at) {
  sqlite3.wasm.heap8u().set(bytes, h.scratch + at);
  if (sqlite3.capi.sqlite3_bind_blob(stmt.pointer, i, h.scratch + at, bytes.length, sqlite3.capi.SQLITE_STATIC) !== 0) fail(h, 'bind');
}

/** The IN (?, ..., ?) statement for `n` keys, prepared once per size. */
function inList(h, n) {
  let s = h.inList.get(n);
  if (!s) {
    s = h.db.prepare(`SELECT v FROM kv WHERE k IN (${Array(n).fill('?').join(',')})`);
    h.inList.set(n, s);
  }
  return s;
}

function pointLookup(h, key) {
  const s = h.get;
  bindBytes(h, s, 1, key, 0);
  const found = s.step();
  const sum = found ? blobChecksum(s.pointer, 0) : -1;
  s.reset();
  return sum;
}

/** A row's blob, copied out (undefined: no row). */
function lookupCopy(h, key) {
  const s = h.get;
  bindBytes(h, s, 1, key, 0);
  let v;
  if (s.step()) {
    const p = sqlite3.capi.sqlite3_column_blob(s.pointer, 0);
    v = sqlite3.wasm.heap8u().slice(p, p + sqlite3.capi.sqlite3_column_bytes(s.pointer, 0));
  }
  s.reset();
  return v;
}

/** BEGIN IMMEDIATE; `keys` read; `f` makes their new values; all written; COMMIT. */
function readModifyWrite(h, keys, f) {
  h.db.exec('BEGIN IMMEDIATE');
  try {
    const next = f(keys.map((k) => lookupCopy(h, k)));
    const s = h.put;
    keys.forEach((k, i) => {
      bindBytes(h, s, 1, k, 0);
      bindBytes(h, s, 2, next[i], 16);
      s.step();
      s.reset();
    });
    h.db.exec('COMMIT');
  } catch (e) {
    h.db.exec('ROLLBACK');
    throw e;
  }
}

function multiGetPointLookups(h, keys) {
  let sum = 0;
  for (let i = 0; i < keys.length; i++) {
    const c = pointLookup(h, keys[i]);
    if (c >= 0) sum += c;
  }
  return sum;
}

/**
 * One `SELECT v FROM kv WHERE k IN (...)`. It answers each distinct present
 * key once, so when it returns fewer rows than keys (some absent, or a key
 * asked twice) the sum is made again key by key (never in the timed runs:
 * their keys are distinct and present).
 */
/** Keys one multiGet binds at most: the scratch buffer holds this many 16-byte keys. */
const MAX_KEYS = 64;

function multiGetInList(h, keys) {
  if (keys.length > MAX_KEYS || keys.some((k) => k.length !== 16)) {
    throw new Error(`the SQLite adapter binds at most ${MAX_KEYS} keys of 16 bytes per multiGet, got ${keys.length}`);
  }
  const s = inList(h, keys.length);
  for (let i = 0; i < keys.length; i++) bindBytes(h, s, i + 1, keys[i], i * 16);
  let sum = 0;
  let rows = 0;
  while (s.step()) {
    sum += blobChecksum(s.pointer, 0);
    rows++;
  }
  s.reset();
  return rows === keys.length ? sum : multiGetPointLookups(h, keys);
}

function make(id, label, pragmas, describe) {
  return {
    id,
    label,
    storage: 'OPFS (opfs-sahpool)',
    // Filled in by open() with what SQLite reports (version, page size, journal mode).
    options: {
      schema: 'CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID',
      vfs: VFS,
      pragmas,
      ...describe,
      cacheBytes: pragmas.cache_size === undefined ? 'the default (2,000 KiB)' : CACHE_KIB * 1024,
      writes: 'INSERT OR REPLACE, BEGIN/COMMIT per putBatch',
      binding: 'keys and values copied into one scratch buffer in wasm memory, bound SQLITE_STATIC',
      reads: 'values read in place (sqlite3_column_blob), every byte',
      multiGet: "32 point lookups on one prepared statement, or SELECT v FROM kv WHERE k IN (32 ?): both measured, the faster is SQLite's row",
      scan: 'SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT ?',
      transactions: 'transfer and counter: BEGIN IMMEDIATE, SELECT v per key, INSERT OR REPLACE per key, COMMIT',
    },
    files: ['/vendor/sqlite-wasm/index.mjs', '/vendor/sqlite-wasm/sqlite3.wasm'],
    persistent: true,

    async open(name) {
      const pool = await init();
      const db = new pool.OpfsSAHPoolDb(fileOf(name));
      try {
        for (const [k, v] of Object.entries(pragmas)) db.exec(`PRAGMA ${k} = ${v}`);
        db.exec('CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID');
        const h = {
          db,
          scratch: sqlite3.wasm.alloc(16 * MAX_KEYS + 4096),
          put: db.prepare('INSERT OR REPLACE INTO kv(k, v) VALUES (?, ?)'),
          get: db.prepare('SELECT v FROM kv WHERE k = ?'),
          scan: db.prepare('SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT ?'),
          count: db.prepare('SELECT count(*) FROM kv WHERE k BETWEEN ? AND ?'),
          inList: new Map(),
        };
        handles.add(h);
        const pragma = (p) => db.selectValue(`PRAGMA ${p}`);
        Object.assign(this.options, {
          version: sqlite3.version.libVersion,
          package: '@sqlite.org/sqlite-wasm',
          journal_mode: pragma('journal_mode'),
          page_size: pragma('page_size'),
          locking_mode: pragma('locking_mode'),
        });
        return h;
      } catch (e) {
        db.close();
        throw e;
      }
    },

    putBatch(h, keys, values) {
      h.db.exec('BEGIN');
      try {
        const s = h.put;
        for (let i = 0; i < keys.length; i++) {
          bindBytes(h, s, 1, keys[i], 0);
          bindBytes(h, s, 2, values[i], 16);
          s.step();
          s.reset();
        }
        h.db.exec('COMMIT');
      } catch (e) {
        h.db.exec('ROLLBACK');
        throw e;
      }
    },

    get: pointLookup,
    multiGet: multiGetInList,

    transfer(h, from, to, amount) {
      readModifyWrite(h, [from, to], ([a, b]) => [u64Bytes(u64Of(a) - amount), u64Bytes(u64Of(b) + amount)]);
    },

    bump(h, key) {
      readModifyWrite(h, [key], ([v]) => [u64Bytes((v === undefined ? 0 : u64Of(v)) + 1)]);
    },

    count(h, lo, hi) {
      const s = h.count;
      bindBytes(h, s, 1, lo, 0);
      bindBytes(h, s, 2, hi, 16);
      s.step();
      const n = s.get(0);
      s.reset();
      return n;
    },

    scan(h, startKey, n) {
      const s = h.scan;
      bindBytes(h, s, 1, startKey, 0);
      s.bind(2, n);
      let sum = 0;
      while (s.step()) sum += blobChecksum(s.pointer, 1);
      s.reset();
      return sum;
    },

    variants: {
      multiGet: { 'IN (32 ?)': multiGetInList, '32 point lookups': multiGetPointLookups },
    },

    async close(h) {
      if (!handles.delete(h)) return;
      for (const s of [h.put, h.get, h.scan, ...h.inList.values()]) s.finalize();
      sqlite3.wasm.dealloc(h.scratch);
      h.db.close();
    },

    async destroy(name) {
      const pool = await init();
      pool.unlink(fileOf(name));
      pool.unlink(`${fileOf(name)}-journal`);
    },
  };
}

const CONFIGS = {
  // locking_mode=EXCLUSIVE: the database file stays locked between
  // transactions, so SQLite skips re-checking it (and its cache) each time.
  exclusive: () => make('sqlite:exclusive', 'SQLite-wasm, exclusive locking', { ...PRAGMAS, locking_mode: 'EXCLUSIVE' }, {}),
  defaults: () =>
    make(
      'sqlite:defaults',
      'SQLite-wasm, library defaults',
      {},
      { defaults: 'no PRAGMA: SQLite defaults (2,000 KiB page cache, synchronous FULL, normal locking)' },
    ),
};

export default {
  ...make('sqlite', 'SQLite-wasm (opfs-sahpool)', PRAGMAS, {}),
  configs: Object.fromEntries(Object.keys(CONFIGS).map((c) => [c, c])),
  withConfig: (config) => CONFIGS[config](),
};
