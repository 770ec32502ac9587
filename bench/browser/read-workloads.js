// The read workloads that bench/run/profile-reads.mjs (Node) and
// bench/run/profile-browser.mjs (Chromium) time and profile: the suite's
// data set (common.js) in an in-memory database (openMemory: the same
// engine, bindings and JavaScript as on OPFS, whose blocks the block cache
// keeps out of these reads anyway), read as the suite's Silt adapter does.
// Each workload returns [checksum, operations].
import { below, checksum, keyOf, rng, valueFor } from './common.js';

/**
 * Fills `num` keys through `silt` (the siltdb module) and returns the
 * workloads over `reads` random keys, and the database (close it after).
 */
export async function readWorkloads(silt, { num, reads, options = {} }) {
  const db = await silt.openMemory({ blockCacheCapacity: 64 << 20, writeBufferSize: 4 << 20, ...options });
  const batch = new silt.WriteBatch();
  for (let i = 0; i < num; i += 1000) {
    batch.clear();
    for (let j = i; j < Math.min(num, i + 1000); j++) batch.put(keyOf(j), valueFor(j));
    db.write(batch);
  }
  await db.idle();
  const r = rng(7);
  const keys = Array.from({ length: reads }, () => keyOf(below(r, num)));
  // The suite's readhot: 9 gets in 10 on the hot 1% of the keys (every
  // 100th), the rest uniform.
  const hr = rng(103);
  const hot = Math.max(1, Math.floor(num / 100));
  const hotKeys = Array.from({ length: reads }, () => keyOf(below(hr, 10) < 9 ? (below(hr, hot) * 100) % num : below(hr, num)));
  /** One scan from each of the first tenth of the keys; [checksum, scans]. */
  const seeks = (scan) => {
    let s = 0;
    const n = Math.max(1, Math.floor(keys.length / 10));
    for (let i = 0; i < n; i++) s += scan(keys[i]);
    return [s, n];
  };
  /** A get of each of `list` through a pinned view (`getPinned`); [checksum, gets]. */
  const gets = (list) => {
    let s = 0;
    for (const k of list) {
      const v = db.getPinned(k);
      s += checksum(v.bytes);
      v.release();
    }
    return [s, list.length];
  };
  const workloads = {
    getPinned: () => gets(keys),
    get() {
      let s = 0;
      for (const k of keys) s += checksum(db.get(k));
      return [s, keys.length];
    },
    readhot: () => gets(hotKeys),
    multiGet() {
      let s = 0;
      for (let i = 0; i + 32 <= keys.length; i += 32) {
        const res = db.multiGet(keys.slice(i, i + 32));
        for (let j = 0; j < res.length; j++) s += checksum(res.get(j));
        res.release();
      }
      return [s, keys.length];
    },
    'seek+100'() {
      return seeks((k) => {
        let s = 0;
        let n = 0;
        for (const [, v] of db.iterator({ gte: k, batchSize: 101 })) {
          s += checksum(v);
          if (++n >= 101) break;
        }
        return s;
      });
    },
    // A backup in memory: the whole database exported (tables form) and
    // imported into a new in-memory database, once; per key.
    async backup() {
      const chunks = [];
      const reader = db.export().getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value);
      const dst = await silt.openMemory({ blockCacheCapacity: 64 << 20, writeBufferSize: 4 << 20, ...options });
      await dst.import(chunks);
      dst.close();
      return [chunks.length, num];
    },
    // count() of the whole database, five times: keys counted inside the
    // engine, none handed out.
    count() {
      let s = 0;
      for (let i = 0; i < 5; i++) s += db.count();
      return [s, 5];
    },
    // The batch API: one batch of 101 entries, values summed where they
    // are in the batch's bytes (offsets), no object per entry.
    'seek+100 batch'() {
      return seeks((k) => {
        const it = db.iterator({ gte: k, batchSize: 101 });
        const b = it.nextBatch();
        let s = 0;
        const { bytes, offsets } = b;
        for (let e = 0; e < b.length; e++) {
          const end = offsets[2 * e + 2];
          for (let j = offsets[2 * e + 1]; j < end; j++) s += bytes[j];
        }
        it.release(); // after reading: it ends the transient batch
        return s;
      });
    },
    // The batch API with a view per value.
    'seek+100 views'() {
      return seeks((k) => {
        const it = db.iterator({ gte: k, batchSize: 101 });
        const b = it.nextBatch();
        let s = 0;
        for (let e = 0; e < b.length; e++) s += checksum(b.valueAt(e));
        it.release();
        return s;
      });
    },
  };
  return { db, workloads };
}

/**
 * Runs `run` (which may return a promise) once to warm up, then `reps`
 * times; µs per operation, sorted.
 */
export async function timeWorkload(run, reps) {
  await run();
  const times = [];
  for (let rep = 0; rep < reps; rep++) {
    const t = performance.now();
    const [, ops] = await run();
    times.push(((performance.now() - t) * 1000) / ops);
  }
  return times.sort((a, b) => a - b);
}
