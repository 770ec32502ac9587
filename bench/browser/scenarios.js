// Silt's own browser tables, beside the suite: RocksDB PR 5011's MultiGet
// table and PR 13354's auto-refresh iterator benchmark, run inside a
// dedicated worker (worker.js, cmd 'scenario') on real OPFS through the
// siltdb package, so every figure includes the JS/wasm boundary; timed with
// performance.now() in the worker. Driven by bench/run/tables.mjs.
//
// Keys and values are the suite's (common.js): db_bench's 16-byte keys and
// 100-byte values, half compressible.
import { open, removeDatabase, WriteBatch } from '/siltdb/dist/index.js';
import { keyOf, median, rng, VALUE_BYTES, valueFor } from './common.js';

const tick = () => new Promise((r) => setTimeout(r, 0));

/**
 * Writes `count` keys chosen by `pick(j)` in batches of 1000, letting
 * background work run between batches. A write that stalls does
 * compaction work itself and may use up the pool of open OPFS files
 * (PoolExhausted, nothing written): then, as siltdb's README says, wait
 * for background work and write again. How often that happened is
 * reported.
 */
async function fill(db, count, pick) {
  const batch = new WriteBatch();
  const t0 = performance.now();
  let poolWaits = 0;
  for (let j = 0; j < count; j++) {
    const i = pick(j);
    batch.put(keyOf(i), valueFor(i));
    if (batch.length === 1000 || j === count - 1) {
      try {
        db.write(batch);
      } catch (e) {
        if (e.code !== 'PoolExhausted') throw e;
        poolWaits++;
        await db.idle();
        db.write(batch);
      }
      batch.clear();
      await tick();
    }
  }
  const writeMs = performance.now() - t0;
  await db.idle(); // flushes and compactions caught up
  return { writeMs, settledMs: performance.now() - t0, poolWaits, stalls: db.statistics().tickers['silt.write.stalls'] ?? 0 };
}

function shape(db) {
  const s = db.statistics();
  return {
    filesPerLevel: s.properties.filesPerLevel,
    bytesPerLevel: s.properties.bytesPerLevel,
    blockCacheUsage: s.properties.blockCacheUsage,
    blockCacheCapacity: s.properties.blockCacheCapacity,
    memoryBytes: s.memory.bytes,
    memoryMode: s.memory.mode,
  };
}

/**
 * RocksDB PR 5011's MultiGet table: rows Get / MultiGet (no
 * batching) / MultiGet (batched), batch sizes, strides. Each cell reads
 * `reads` keys; the three rows of a cell run in turn on the same keys,
 * in a rotating order, `reps` times; the median is kept. Every byte of
 * every value found is read through the zero-copy views.
 */
async function multiGetTable({ name, num, reads, reps, batches, strides, cacheBytes }) {
  await removeDatabase(name).catch(() => {});
  const db = await open(name, {
    compression: 'none',
    bloomBitsPerKey: 10,
    blockCacheCapacity: cacheBytes,
    writeBufferSize: 4 << 20, // and the engine's defaults: 4 MiB target file size, 16 MiB level base
    poolReserve: 32,
  });
  const r = rng(301);
  const filled = await fill(db, num, () => r() % num); // fillrandom: random keys, with repeats
  // Warm the cache: every key read once (every data, index and filter block).
  const tw = performance.now();
  for (let i = 0; i < num; i += 1000) {
    const keys = [];
    for (let j = i; j < Math.min(num, i + 1000); j++) keys.push(keyOf(j));
    db.multiGet(keys).release();
  }
  await tick();
  const warmMs = performance.now() - tw;
  const before = shape(db);

  const rows = [
    [
      'Get',
      (keyBatches) => {
        let found = 0;
        let sum = 0;
        for (const keys of keyBatches) {
          for (const k of keys) {
            const v = db.getPinned(k);
            if (v === undefined) continue;
            const b = v.bytes;
            for (let j = 0; j < b.length; j++) sum += b[j];
            found++;
            v.release();
          }
        }
        return { found, sum };
      },
    ],
    ...[
      ['MultiGet (no batching)', false],
      ['MultiGet (batched)', true],
    ].map(([label, batched]) => [
      label,
      (keyBatches) => {
        let found = 0;
        let sum = 0;
        const options = { batched };
        for (const keys of keyBatches) {
          const res = db.multiGet(keys, options);
          const n = res.length;
          for (let i = 0; i < n; i++) {
            const b = res.get(i);
            if (b === undefined) continue;
            for (let j = 0; j < b.length; j++) sum += b[j];
            found++;
          }
          res.release();
        }
        return { found, sum };
      },
    ]),
  ];

  const cells = [];
  const started = performance.now();
  for (const stride of strides) {
    for (const size of batches) {
      const kr = rng(7 + stride * 131 + size);
      const keyBatches = [];
      for (let b = 0; b < Math.ceil(reads / size); b++) {
        const first = kr() % num;
        const keys = [];
        for (let j = 0; j < size; j++) keys.push(keyOf(stride === 0 ? kr() % num : (first + j * stride) % num));
        keyBatches.push(keys);
      }
      const n = keyBatches.length * size;
      const times = rows.map(() => []);
      const outcomes = rows.map(() => undefined);
      for (let rep = 0; rep < reps; rep++) {
        for (let k = 0; k < rows.length; k++) {
          const row = (k + rep) % rows.length;
          const t0 = performance.now();
          const o = rows[row][1](keyBatches);
          times[row].push(((performance.now() - t0) * 1000) / n);
          outcomes[row] ??= o;
          if (o.found !== outcomes[row].found || o.sum !== outcomes[row].sum) throw new Error(`row ${rows[row][0]}: runs disagree`);
        }
        await tick(); // releases sent, the pump (nothing to do) gets its turn
      }
      if (outcomes.some((o) => o.found !== outcomes[0].found || o.sum !== outcomes[0].sum)) {
        throw new Error(`stride ${stride} batch ${size}: the three rows read different values`);
      }
      rows.forEach(([label], row) => {
        cells.push({ stride, batch: size, row: label, usPerKey: median(times[row]), runs: times[row], keys: n, found: outcomes[row].found });
      });
    }
  }
  const s = db.statistics();
  const out = {
    num,
    reads,
    reps,
    fill: filled,
    warmMs,
    measureMs: performance.now() - started,
    shape: before,
    shapeAfter: shape(db),
    tickers: Object.fromEntries(Object.entries(s.tickers).filter(([k]) => /block\.cache\.(hit|miss)|bloom|keys\.read/.test(k))),
    cells,
  };
  db.close();
  await removeDatabase(name).catch(() => {});
  return out;
}

/**
 * seekrandom with one explicit snapshot for all scans (RocksDB PR 13354's
 * benchmark), auto refresh off and on in alternating runs; then the bytes
 * a long-running iterator pins after a flush and a full compaction.
 * Keys are all distinct (a permutation), and each scan starts at a random
 * key at least `nexts` from the end, so every scan reads `nexts + 1` entries.
 */
async function iteratorTable({ name, num, reps, nextsList, entriesPerRun, cacheBytes }) {
  await removeDatabase(name).catch(() => {});
  const db = await open(name, { blockCacheCapacity: cacheBytes, poolReserve: 32 });
  const filled = await fill(db, num, (j) => (j * 7919) % num);
  // Warm the cache: one full scan.
  const tw = performance.now();
  let warmEntries = 0;
  for (const _ of db.iterator({ batchSize: 1024 })) warmEntries++;
  const warmMs = performance.now() - tw;
  const before = shape(db);

  const snapshot = db.snapshot(); // one, for every scan
  const rows = [];
  const started = performance.now();
  for (const nexts of nextsList) {
    const seeks = Math.max(5, Math.round(entriesPerRun / (nexts + 1)));
    const batchSize = Math.min(nexts + 1, 1024);
    const times = { off: [], on: [] };
    const reads = { off: [], on: [] };
    for (let rep = 0; rep < reps; rep++) {
      for (const mode of rep % 2 ? ['on', 'off'] : ['off', 'on']) {
        const r = rng(99 + rep);
        const autoRefresh = mode === 'on';
        let entries = 0;
        let bytes = 0;
        const t0 = performance.now();
        for (let s = 0; s < seeks; s++) {
          const it = db.iterator({ gte: keyOf(r() % (num - nexts)), snapshot, autoRefresh, batchSize });
          let n = 0;
          for (const [, v] of it) {
            bytes += v.length;
            if (++n > nexts) break;
          }
          entries += n;
        }
        times[mode].push(((performance.now() - t0) * 1000) / seeks);
        reads[mode].push(entries);
        if (bytes !== entries * VALUE_BYTES) throw new Error(`${mode}: ${bytes} value bytes read in ${entries} entries`);
        await tick();
      }
    }
    if (reads.off.some((x) => x !== reads.off[0]) || reads.on.some((x) => x !== reads.off[0])) throw new Error('runs read different numbers of entries');
    rows.push({ nexts, seeks, entriesPerSeek: reads.off[0] / seeks, off: median(times.off), on: median(times.on), runsOff: times.off, runsOn: times.on });
  }
  const measureMs = performance.now() - started;
  snapshot.release();

  // Pinning: both iterators on one snapshot, positioned; then new writes,
  // a flush and a full compaction; then one more step each.
  const pinnedNow = () => {
    const s = db.statistics();
    const p = s.properties;
    return { memtables: p.allMemtableBytes - p.memtableBytes, tables: p.liveTableBytes - p.tableBytes, poolDataBytes: s.pool.dataBytes };
  };
  const snap = db.snapshot();
  const off = db.iterator({ snapshot: snap, batchSize: 1 });
  const on = db.iterator({ snapshot: snap, autoRefresh: true, batchSize: 1 });
  off.next();
  on.next();
  const tp = performance.now();
  await fill(db, Math.floor(num / 10), (j) => (j * 7) % num);
  db.flush();
  await db.compactRange();
  await db.idle();
  off.next();
  on.next();
  await db.idle(); // the pump deletes what nothing holds any more
  const both = pinnedNow();
  off.release();
  await db.idle();
  const onOnly = pinnedNow();
  on.release();
  await db.idle();
  const none = pinnedNow();
  snap.release();
  const pinning = {
    written: Math.floor(num / 10),
    ms: performance.now() - tp,
    off: { memtables: both.memtables - onOnly.memtables, tables: both.tables - onOnly.tables, poolDataBytes: both.poolDataBytes - onOnly.poolDataBytes },
    on: { memtables: onOnly.memtables, tables: onOnly.tables, poolDataBytes: onOnly.poolDataBytes - none.poolDataBytes },
    shapeAfter: shape(db),
  };
  const s = db.statistics();
  const out = {
    num,
    reps,
    entriesPerRun,
    fill: filled,
    warmMs,
    warmEntries,
    measureMs,
    shape: before,
    rows,
    pinning,
    refreshes: s.tickers['silt.iter.auto.refresh'] ?? 0,
  };
  db.close();
  await removeDatabase(name).catch(() => {});
  return out;
}

/**
 * What reading one block from OPFS costs a get, and what it is made of:
 * gets of random keys with a block cache too small to hold anything (every
 * data block read from OPFS, its checksum checked, decompressed, parsed)
 * against the same gets with every block cached, for 4 and 16 KiB blocks,
 * LZ4 and no compression; and the bare OPFS read (a sync access handle's
 * read of that many bytes at a random offset of a file as large as the
 * tables) in the same worker. The difference between a missing and a
 * cached get is the block read; less the bare read, what Silt adds to it.
 */
async function blockReadTable({ name, num, reads, reps }) {
  const rows = [];
  for (const blockSize of [4096, 16384]) {
    for (const compression of ['lz4', 'none']) {
      const dbName = `${name}-${blockSize}-${compression}`;
      await removeDatabase(dbName).catch(() => {});
      const options = { compression, blockSize, bloomBitsPerKey: 10, writeBufferSize: 4 << 20, poolReserve: 32 };
      let db = await open(dbName, { ...options, blockCacheCapacity: 64 << 20 });
      const r = rng(17);
      await fill(db, num, () => r() % num);
      await db.compactRange();
      const tableBytes = db.statistics().properties.tableBytes;
      db.close();
      const keys = Array.from({ length: reads }, () => keyOf(r() % num));
      const timeGets = () => {
        let found = 0;
        const t0 = performance.now();
        for (const k of keys) {
          const v = db.getPinned(k);
          if (v !== undefined) {
            found += v.bytes.length > 0 ? 1 : 0;
            v.release();
          }
        }
        return { us: ((performance.now() - t0) * 1000) / keys.length, found };
      };
      const measure = async (cacheBytes) => {
        db = await open(dbName, { ...options, blockCacheCapacity: cacheBytes });
        timeGets(); // warm: tables open, and with a cache, every block read cached
        const before = db.statistics().tickers;
        const runs = [];
        for (let rep = 0; rep < reps; rep++) {
          runs.push(timeGets().us);
          await tick();
        }
        const after = db.statistics().tickers;
        const misses = (after['rocksdb.block.cache.miss'] ?? 0) - (before['rocksdb.block.cache.miss'] ?? 0);
        db.close();
        return { us: median(runs), runs, blockReadsPerGet: misses / (reads * reps) };
      };
      const cached = await measure(64 << 20);
      const missing = await measure(1);
      rows.push({ blockSize, compression, tableBytes, cached, missing });
      await removeDatabase(dbName).catch(() => {});
    }
  }
  // The bare OPFS read: random offsets of a file as large as the lz4 tables.
  const root = await navigator.storage.getDirectory();
  const file = await root.getFileHandle('silt-bench-block-read.bin', { create: true });
  const h = await file.createSyncAccessHandle();
  const size = 32 << 20;
  const raw = [];
  try {
    h.truncate(0);
    const chunk = new Uint8Array(1 << 20);
    for (let at = 0; at < size; at += chunk.length) {
      for (let i = 0; i < chunk.length; i += 4096) chunk[i] = (at + i) & 0xff;
      h.write(chunk, { at });
    }
    h.flush();
    const r = rng(23);
    for (const bytes of [4096, 16384]) {
      const buf = new Uint8Array(bytes);
      const times = [];
      for (let rep = 0; rep < reps; rep++) {
        const t0 = performance.now();
        for (let i = 0; i < reads; i++) h.read(buf, { at: (r() % (size / bytes)) * bytes });
        times.push(((performance.now() - t0) * 1000) / reads);
      }
      raw.push({ bytes, us: median(times), runs: times });
    }
  } finally {
    h.close();
    await root.removeEntry('silt-bench-block-read.bin').catch(() => {});
  }
  return { num, reads, reps, rows, raw };
}

/** The tables worker.js runs by name. */
export const TABLES = { multiGetTable, iteratorTable, blockReadTable };
