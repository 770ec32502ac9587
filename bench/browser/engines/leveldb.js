// LevelDB 1.20 compiled to WebAssembly with emscripten 3.1.6, in this
// dedicated worker: the LevelDB and snappy sources that classic-level 3.0.0
// ships in deps/, behind the small C API of bench/browser/leveldb/silt_leveldb.cc
// (built into /bench/leveldb/dist/ by bench/browser/leveldb/build.sh; see the
// README there).
//
// Files live in emscripten's MEMFS, in memory: emscripten 3.1.6 has no OPFS
// backend (WASMFS's came in a later release). So nothing survives a reload,
// and LevelDB's I/O costs less than it would on OPFS: keep that in mind when
// reading its rows.
//
// Built and called the fastest fair way: -O3, NDEBUG, snappy, a 10
// bits/key bloom filter, the block cache Silt and SQLite get (64 MiB); one
// call into wasm per benchmark step (keys copied into one scratch buffer in
// wasm memory, allocated once), and the checksum computed in C where the
// value lies, reading every byte without copying it out (see the C file).
// Flushes and compactions run on this thread: queued, and run at the start
// of the next write or at settle() (timed apart, like Silt's idle()).

import { checksum } from '../common.js';

const VENDOR = new URL('../leveldb/dist/', import.meta.url);
const BUILD_HINT = 'built by `npm run bench:setup` (bench/browser/leveldb/build.sh)';

/** The options LevelDB is opened with (open() can override them for tests). */
const DEFAULT_OPTIONS = Object.freeze({
  cacheBytes: 64 << 20,
  bloomBitsPerKey: 10,
  blockSize: 4096,
  writeBufferSize: 4 << 20,
  compression: 'snappy',
});

/** What build.sh recorded: emscripten's version and the flags. */
async function buildInfo() {
  const url = new URL('build.json', VENDOR);
  try {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
    return await res.json();
  } catch (e) {
    return `unknown: ${url.pathname} could not be read (${e?.message ?? e}); it is ${BUILD_HINT}`;
  }
}

const INITIAL_SCRATCH = 256 << 10; // a 1,000-entry batch of 16 + 100 bytes fits
const encoder = new TextEncoder();

let modulePromise;
/** The emscripten module of this worker, instantiated once. */
function init() {
  modulePromise ??= (async () => {
    const url = new URL('leveldb.js', VENDOR);
    let createLevelDB;
    try {
      ({ default: createLevelDB } = await import(url.href));
    } catch (e) {
      throw new Error(`LevelDB: could not load ${url.pathname} (${BUILD_HINT}): ${e?.message ?? e}`, { cause: e });
    }
    const M = await createLevelDB();
    return { M, scratch: M._malloc(INITIAL_SCRATCH), capacity: INITIAL_SCRATCH, view: undefined };
  })();
  modulePromise.catch(() => {
    modulePromise = undefined; // let a later call try again
  });
  return modulePromise;
}

/** The loaded module; set by open() and destroy(), which every other call follows. */
let mod;

/** The scratch buffer's address, grown (never shrunk) to hold `bytes`. */
function scratch(bytes) {
  if (bytes > mod.capacity) {
    let cap = mod.capacity;
    while (cap < bytes) cap *= 2;
    const p = mod.M._malloc(cap);
    if (p === 0) throw new Error(`LevelDB: out of wasm memory for a ${bytes}-byte scratch buffer`);
    mod.M._free(mod.scratch);
    mod.scratch = p;
    mod.capacity = cap;
  }
  return mod.scratch;
}

/** wasm memory as bytes and as a DataView; read again after every call (memory may have grown). */
function heap() {
  const bytes = mod.M.HEAPU8;
  if (mod.view?.buffer !== bytes.buffer) mod.view = new DataView(bytes.buffer);
  return bytes;
}

/** The C API's last error, thrown. */
function fail() {
  throw new Error(mod.M.UTF8ToString(mod.M._ldb_last_error()));
}

/** `name` as a NUL-terminated UTF-8 string in the scratch buffer. */
function cName(name) {
  if (typeof name !== 'string' || name === '') throw new Error(`LevelDB: a database name must be a non-empty string, got ${JSON.stringify(name)}`);
  const bytes = encoder.encode(name);
  const at = scratch(bytes.length + 1);
  const h = heap();
  h.set(bytes, at);
  h[at + bytes.length] = 0;
  return at;
}

function live(handle) {
  if (handle.ptr === 0) throw new Error(`LevelDB: database ${handle.name} is closed`);
  return handle.ptr;
}

/** `key` copied into the scratch buffer; its address. */
function putKey(key) {
  const at = scratch(key.length);
  heap().set(key, at);
  return at;
}

function checkOverrides(overrides) {
  const o = { ...DEFAULT_OPTIONS, ...overrides };
  for (const k of Object.keys(overrides)) {
    if (!(k in DEFAULT_OPTIONS)) throw new Error(`LevelDB: unknown option ${k} (known: ${Object.keys(DEFAULT_OPTIONS).join(', ')})`);
  }
  for (const k of ['cacheBytes', 'blockSize', 'writeBufferSize']) {
    if (!Number.isInteger(o[k]) || o[k] < 1 || o[k] > 2 ** 31) throw new Error(`LevelDB: ${k} must be an integer from 1 to 2^31, got ${o[k]}`);
  }
  if (!Number.isInteger(o.bloomBitsPerKey) || o.bloomBitsPerKey < 0 || o.bloomBitsPerKey > 64) {
    throw new Error(`LevelDB: bloomBitsPerKey must be an integer from 0 (no filter) to 64, got ${o.bloomBitsPerKey}`);
  }
  if (o.compression !== 'snappy' && o.compression !== 'none') throw new Error(`LevelDB: compression must be 'snappy' or 'none', got ${o.compression}`);
  return o;
}

/** A value of `len` bytes at `at` in wasm memory, copied into a Uint8Array of its own. */
function copyOut(at, len) {
  return heap().slice(at, at + len);
}

/**
 * Values handed to JavaScript as a binding would (a copy of each value into
 * a Uint8Array, summed in JavaScript), instead of summed in C.
 */
const toJs = {
  get(handle, key) {
    const ptr = live(handle);
    const n = mod.M._ldb_get_copy(ptr, putKey(key), key.length);
    if (n === -2) fail();
    if (n === -1) return -1;
    return checksum(copyOut(mod.M._ldb_out(ptr), n));
  },

  multiGet(handle, keys) {
    const ptr = live(handle);
    const at = packKeys(keys);
    if (mod.M._ldb_multi_get_copy(ptr, at.at, at.len, keys.length) < 0) fail();
    let p = mod.M._ldb_out(ptr);
    heap(); // the call may have grown memory: a fresh view
    let sum = 0;
    for (let i = 0; i < keys.length; i++) {
      const n = mod.view.getInt32(p, true);
      p += 4;
      if (n >= 0) {
        sum += checksum(copyOut(p, n));
        p += n;
      }
    }
    return sum;
  },

  scan(handle, startKey, n) {
    const ptr = live(handle);
    const count = mod.M._ldb_scan_copy(ptr, putKey(startKey), startKey.length, n);
    if (count < 0) fail();
    let p = mod.M._ldb_out(ptr);
    heap(); // the call may have grown memory: a fresh view
    let sum = 0;
    for (let i = 0; i < count; i++) {
      const klen = mod.view.getUint32(p, true);
      const vlen = mod.view.getUint32(p + 4, true);
      p += 8;
      copyOut(p, klen); // the key, handed over as a binding's iterator does
      sum += checksum(copyOut(p + klen, vlen));
      p += klen + vlen;
    }
    return sum;
  },
};

/** `keys` packed into the scratch buffer as (u32 length, bytes); where and how long. */
function packKeys(keys) {
  let len = 0;
  for (let i = 0; i < keys.length; i++) len += 4 + keys[i].length;
  const at = scratch(len);
  const bytes = heap();
  const dv = mod.view;
  let p = at;
  for (let i = 0; i < keys.length; i++) {
    dv.setUint32(p, keys[i].length, true);
    bytes.set(keys[i], p + 4);
    p += 4 + keys[i].length;
  }
  return { at, len };
}

const BUILD = await buildInfo();

/**
 * One configuration of the adapter: LevelDB opened with `defaults` (over
 * DEFAULT_OPTIONS), its values summed in C (`js` false) or copied into
 * JavaScript and summed there (`js` true).
 */
function make(id, label, defaults, js, describe) {
  const adapter = {
    id,
    label,
    storage: 'MEMFS (in-memory)',
    options: {
      ...checkOverrides(defaults),
      cache: 'LRU block cache (NewLRUCache), cacheBytes of uncompressed blocks',
      filter: 'NewBloomFilterPolicy(bloomBitsPerKey) (none when 0)',
      sync: 'false (LevelDB default; MEMFS has nothing to sync)',
      maxOpenFiles: 1000,
      source: 'LevelDB 1.20 + snappy 1.1.4 from classic-level@3.0.0 deps/ (with its value-sink patch), npm-pack-ed, sha512 checked',
      env: 'PosixEnv on emscripten MEMFS; no threads: Schedule queues work, CondVar::Wait runs it (bench/browser/leveldb/single_thread_env.h)',
      background:
        'queued flushes/compactions run at the start of the next putBatch, at settle() (timed apart), or when LevelDB waits for them; reads never run them',
      api: 'one wasm call per step; keys copied into one scratch buffer in wasm memory (allocated once)',
      checksum: js
        ? 'in JavaScript, as a binding hands values over: each value copied out of LevelDB (Get into a std::string; the iterator) and into a Uint8Array of its own (keys of scans too), then every byte summed'
        : 'in C over the value where LevelDB holds it (ValueSink in Get, the iterator value in scans): every byte, no copy to JS',
      multiGet: 'LevelDB has no MultiGet: 32 Gets in a loop in C, one wasm call',
      scan: 'NewIterator, Seek, n Next in C, one wasm call',
      build: BUILD,
      ...describe,
    },
    files: ['/bench/leveldb/dist/leveldb.js', '/bench/leveldb/dist/leveldb.wasm'],
    persistent: false,

    /**
     * Opens (creating if missing) the database `name` in MEMFS. `overrides`
     * replaces some of the options (tests use a small writeBufferSize to make
     * flushes and compactions happen on little data).
     */
    async open(name, overrides = {}) {
      mod = await init();
      const o = checkOverrides({ ...defaults, ...overrides });
      const ptr = mod.M._ldb_open(cName(name), o.cacheBytes, o.bloomBitsPerKey, o.blockSize, o.writeBufferSize, o.compression === 'snappy' ? 1 : 0);
      if (ptr === 0) fail();
      return { ptr, name };
    },

    /** One WriteBatch, written atomically. */
    putBatch(handle, keys, values) {
      const ptr = live(handle);
      if (keys.length !== values.length) throw new Error(`LevelDB: putBatch got ${keys.length} keys but ${values.length} values`);
      let len = 0;
      for (let i = 0; i < keys.length; i++) len += 8 + keys[i].length + values[i].length;
      const at = scratch(len);
      const bytes = heap();
      const dv = mod.view;
      let p = at;
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        const v = values[i];
        dv.setUint32(p, k.length, true);
        dv.setUint32(p + 4, v.length, true);
        bytes.set(k, p + 8);
        bytes.set(v, p + 8 + k.length);
        p += 8 + k.length + v.length;
      }
      if (mod.M._ldb_put_batch(ptr, at, len, keys.length) !== 0) fail();
    },

    get(handle, key) {
      const ptr = live(handle);
      const sum = mod.M._ldb_get(ptr, putKey(key), key.length);
      if (sum === -2) fail();
      return sum; // -1: absent
    },

    multiGet(handle, keys) {
      const ptr = live(handle);
      const { at, len } = packKeys(keys);
      const sum = mod.M._ldb_multi_get(ptr, at, len, keys.length);
      if (sum < 0) fail();
      return sum;
    },

    scan(handle, startKey, n) {
      const ptr = live(handle);
      const sum = mod.M._ldb_scan(ptr, putKey(startKey), startKey.length, n);
      if (sum < 0) fail();
      return sum;
    },

    /** Runs the flushes and compactions the fill left queued (single-threaded: nobody else will). */
    settle(handle) {
      live(handle);
      mod.M._ldb_settle();
    },

    /** LevelDB's GetProperty (e.g. 'leveldb.stats', 'leveldb.num-files-at-level0'): for tests and diagnostics. */
    property(handle, name) {
      const ptr = live(handle);
      const p = mod.M._ldb_property(ptr, cName(name));
      if (p === 0) fail();
      return mod.M.UTF8ToString(p);
    },

    async close(handle) {
      if (handle.ptr === 0) return;
      mod.M._ldb_close(handle.ptr);
      handle.ptr = 0;
    },

    /** Deletes the database's files and directory (nothing if it does not exist). REQUIRES: it is not open. */
    async destroy(name) {
      mod = await init();
      if (mod.M._ldb_destroy(cName(name)) !== 0) fail();
    },
  };
  return js ? { ...adapter, ...toJs } : adapter;
}

const CONFIGS = {
  js: () => make('leveldb:js', 'LevelDB, values to JS', {}, true, {}),
  // LevelDB's own defaults: an 8 MiB block cache, no filter policy.
  defaults: () =>
    make('leveldb:defaults', 'LevelDB, library defaults', { cacheBytes: 8 << 20, bloomBitsPerKey: 0 }, false, {
      defaults: "LevelDB's Options(): 8 MiB block cache, no filter policy, 4 KiB blocks, 4 MiB write buffer, snappy",
    }),
};

export default {
  ...make('leveldb', 'LevelDB 1.20 (emscripten)', {}, false, {}),
  configs: Object.fromEntries(Object.keys(CONFIGS).map((c) => [c, c])),
  withConfig: (config) => CONFIGS[config](),
};
