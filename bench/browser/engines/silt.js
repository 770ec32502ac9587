// Silt through the `siltdb` package, in this dedicated worker, on OPFS:
// synchronous calls and zero-copy reads (every byte of every view is read,
// then the result is released).
import { open, removeDatabase, WriteBatch } from '/siltdb/dist/index.js';
import { checksum, moduleGraph } from '../common.js';

// The engine's defaults, but a block cache that holds the whole data set
// (SQLite gets the same budget as its page cache), and more free OPFS files
// ready for a bulk load (siltdb's README: PoolExhausted).
const options = {
  blockCacheCapacity: 64 << 20,
  bloomBitsPerKey: 10,
  compression: 'lz4',
  writeBufferSize: 4 << 20,
  maxWriteBufferNumber: 2,
  blockSize: 4096,
  poolReserve: 32,
  sync: false,
};

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

export default {
  id: 'silt',
  label: 'Silt (siltdb)',
  storage: 'OPFS',
  options: {
    ...options,
    sync: 'false (writes reach OPFS without a flush per write; the default)',
    api: 'open() in the worker; get / multiGet views read byte by byte, then released; scans: iterator({ gte, batchSize: n }).nextBatch() (one bytes array and offsets), and for...of entries',
    settle: 'await db.idle() after each fill (flushes and compactions caught up; timed apart)',
  },
  // What a user of open() ships: the package's module graph and the wasm.
  files: await moduleGraph('/siltdb/dist/index.js', ['/siltdb/pkg/silt_wasm_bg.wasm']),
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

  get(db, key) {
    const v = db.get(key);
    if (v === undefined) return -1;
    const sum = checksum(v.bytes);
    v.release();
    return sum;
  },

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

  variants: {
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
};
