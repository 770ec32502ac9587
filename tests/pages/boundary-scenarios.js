// What a read costs at the JS/wasm boundary, on real OPFS: calls
// into wasm and out of it, and bytes copied out of wasm memory, counted by
// siltdb's boundary counters. Must run first in a fresh worker: counting
// calls starts before the module loads.
import { boundaryCounters, enableBoundaryCounters, open, WriteBatch } from '/siltdb/dist/index.js';

const key = (i) => `key-${String(i).padStart(8, '0')}`;
const valueFor = (i) => new Uint8Array(100).fill(i % 251);
const tick = () => new Promise((r) => setTimeout(r, 0));

function diff(a, b) {
  const byName = {};
  for (const [k, v] of Object.entries(b.byName)) if (v !== (a.byName[k] ?? 0)) byName[k] = v - (a.byName[k] ?? 0);
  return { calls: b.calls - a.calls, callbacks: b.callbacks - a.callbacks, copiedBytes: b.copiedBytes - a.copiedBytes, byName };
}

/** Reads every byte through the views; returns their sum. */
function readAll(values) {
  let sum = 0;
  for (const v of values) if (v) for (let j = 0; j < v.length; j++) sum += v[j];
  return sum;
}

export async function multiGetBoundary({ name, n, rounds }) {
  enableBoundaryCounters();
  const db = await open(name, { writeBufferSize: 256 * 1024, blockCacheCapacity: 64 << 20, compression: 'none' });
  const batch = new WriteBatch();
  for (let j = 0; j < n; j++) {
    const i = (j * 7919) % n;
    batch.put(key(i), valueFor(i));
    if (batch.length === 500) {
      db.write(batch);
      batch.clear();
      await tick();
    }
  }
  db.write(batch);
  await db.compactRange(); // the last level
  for (let i = 0; i < n; i += 10) db.put(key(i), valueFor(i));
  db.flush(); // newer copies in L0
  for (let i = 5; i < n; i += 10) db.put(key(i), valueFor(i)); // and in the memtable
  await db.idle();
  // Warm the block cache: every block read once.
  for (let i = 0; i < n; i += 256) {
    const r = db.multiGet(Array.from({ length: Math.min(256, n - i) }, (_, j) => key(i + j)));
    r.release();
  }
  await tick();

  const out = { memoryMode: db.statistics().memory.mode, filesPerLevel: db.statistics().properties.filesPerLevel, strides: {} };
  for (const stride of [0, 16, 4096]) {
    let seed = 12345 + stride;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const batches = Array.from({ length: rounds }, () => {
      const first = rand() % n;
      return Array.from({ length: 32 }, (_, j) => (stride === 0 ? rand() % n : (first + j * stride) % n));
    });
    const keyBatches = batches.map((b) => b.map(key));
    const expected = batches.reduce((s, b) => s + b.reduce((t, i) => t + (i % 251) * 100, 0), 0);
    const before = boundaryCounters();
    let sum = 0;
    let found = 0;
    for (const keys of keyBatches) {
      const r = db.multiGet(keys);
      for (const v of r) if (v) found++;
      sum += readAll(r);
      r.release();
    }
    const after = boundaryCounters();
    out.strides[stride] = { ...diff(before, after), sumOk: sum === expected, found, keys: rounds * 32 };
  }
  // The same loop through the unbatched MultiGet, and through get.
  {
    const keys = Array.from({ length: 32 }, (_, j) => key((j * 613) % n));
    const before = boundaryCounters();
    for (let r = 0; r < rounds; r++) db.multiGet(keys, { batched: false }).release();
    out.unbatched = diff(before, boundaryCounters());
    const beforeGet = boundaryCounters();
    let sum = 0;
    for (const k of keys) {
      const v = db.getPinned(k);
      sum += readAll([v.bytes]);
      v.release();
    }
    out.get = { ...diff(beforeGet, boundaryCounters()), sum };
  }
  // Controls: the counters move when values are copied, and for a copying read.
  {
    await tick();
    const c0 = boundaryCounters();
    const r = db.multiGet([key(1), key(2), key(3)]);
    r.copy(0);
    r.text(1);
    r.release();
    const c1 = boundaryCounters();
    db.get(key(4));
    const c2 = boundaryCounters();
    out.controls = { copyAndText: diff(c0, c1), get: diff(c1, c2) };
  }
  out.enabled = boundaryCounters().enabled;
  db.close();
  return out;
}
