// The soak of the reliability tests: for a bounded time, one worker mixes
// every kind of call a web app makes — puts, deletes, range deletes,
// batches, pinned gets, multiGets whose views are held a while, snapshots,
// async scans with autoRefresh running between the writes, flushes and
// manual compactions — checks every read against a Map that mirrors every
// write, and samples once a second what could grow without bound: wasm
// memory, the OPFS files of the database and their bytes, table bytes kept
// alive, pinned bytes.
import { open, WriteBatch } from '/siltdb/dist/index.js';
import { rng } from './reliability-oracle.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const tick = () => new Promise((r) => setTimeout(r, 0));

/** Key `x` of the soak's space; zero-padded so that index order is key order. */
const keyOf = (x) => `s${String(x).padStart(6, '0')}`;
/**
 * Random text values are cut from: large enough that a 4 KiB block holds
 * no repeats, so LZ4 stores values at about their size, as it would an
 * app's data.
 */
function fillOf(r) {
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from({ length: 256 * 1024 }, () => letters[Math.floor(r() * letters.length)]).join('');
}

/** A value that names its key and its write, at least `len` bytes long. */
function valueFor(fill, x, n, len, at) {
  const head = `${x}#${n}|`;
  return head + fill.slice(at, at + Math.max(0, len - head.length));
}

/** Bytes of the pooled files' header (docs/format.md, "OPFS pool file"). */
const POOL_HEADER = 4096;

/**
 * The size of a pooled file and the logical file it holds, from its header
 * ('' if free). A File is a snapshot that stops being readable once the
 * pool writes to it (between two awaits here): then read it again.
 */
async function pooledFile(handle) {
  for (let attempt = 0; ; attempt++) {
    const file = await handle.getFile();
    try {
      const head = new DataView(await file.slice(0, 24 + 512).arrayBuffer());
      const n = head.byteLength < 16 ? 0 : head.getUint32(12, true);
      const name = n === 0 || n > 512 ? '' : dec.decode(new Uint8Array(head.buffer, 24, n));
      return { size: file.size, name };
    } catch (e) {
      if (e.name !== 'NotReadableError' || attempt === 5) throw e;
    }
  }
}

/**
 * Files and bytes in a database's OPFS directory, and the logical bytes
 * of what the pooled files hold: tables, logs, manifests (headers and free
 * files make up the rest). Headers are read from storage, not asked of the
 * pool, so a file the pool lost track of still counts.
 */
async function usage(dir) {
  const u = { files: 0, bytes: 0, unreadable: 0, tables: 0, logs: 0, logFiles: 0, manifests: 0, freeFiles: 0 };
  for await (const [, h] of dir.entries()) {
    if (h.kind !== 'file') continue;
    u.files++;
    let file;
    try {
      file = await pooledFile(h);
    } catch {
      u.unreadable++; // a file another context holds exclusively
      continue;
    }
    const { size, name } = file;
    u.bytes += size;
    const data = Math.max(0, size - POOL_HEADER);
    if (name.endsWith('.sst')) u.tables += data;
    else if (name.endsWith('.log')) {
      u.logs += data;
      u.logFiles++;
    } else if (name.includes('MANIFEST-')) u.manifests += data;
    else if (name === '') u.freeFiles++;
  }
  return u;
}

/** The OPFS directory siltdb keeps database `name` in (see js/src/local/open.ts). */
async function databaseDirectory(name) {
  const root = await navigator.storage.getDirectory();
  return (await root.getDirectoryHandle('siltdb')).getDirectoryHandle(name);
}

/**
 * Runs the mixed workload on database `name` for `seconds`, with `keys`
 * keys, sampling every `sampleMs`. Returns the samples, what was done, and
 * every disagreement with the mirror (which the test expects to be none).
 */
export async function soak({ name, seconds, seed, keys, sampleMs }) {
  const r = rng(seed);
  const int = (n) => Math.floor(r() * n);
  const fill = fillOf(r);
  const db = await open(name, { writeBufferSize: 256 * 1024, poolReserve: 32 });
  const dir = await databaseDirectory(name);
  const mirror = new Map();
  const ops = { put: 0, delete: 0, deleteRange: 0, batch: 0, get: 0, multiGet: 0, scan: 0, scanned: 0, snapshot: 0, flush: 0, compact: 0, sync: 0 };
  let total = 0;
  const wrong = [];
  let wrongCount = 0;
  const disagree = (what) => {
    wrongCount++;
    if (wrong.length < 10) wrong.push(what);
  };
  const errors = [];

  // Writes, mirrored.
  const put = (x, target) => {
    const v = valueFor(fill, x, total, 16 + int(1000), int(fill.length - 1024));
    target.put(keyOf(x), enc.encode(v));
    mirror.set(keyOf(x), v);
  };
  const del = (x, target) => {
    target.delete(keyOf(x));
    mirror.delete(keyOf(x));
  };
  const delRange = (a, b, target) => {
    target.deleteRange(keyOf(a), keyOf(b));
    for (let x = a; x < b; x++) mirror.delete(keyOf(x));
  };
  const expectValue = (k, got, model, how) => {
    if (got !== model.get(k)) disagree(`${how} ${k}: got ${got?.slice(0, 24)}, mirror ${model.get(k)?.slice(0, 24)}`);
  };

  // Held for a while, checked when let go: multiGet results (their views
  // must still show the values read, however much was written since) and
  // snapshots (reads at them must see their time's mirror).
  const views = [];
  const snapshots = [];
  const releaseDue = () => {
    for (let i = views.length - 1; i >= 0; i--) {
      const h = views[i];
      if (h.until > total) continue;
      for (let j = 0; j < h.keys.length; j++) {
        const v = h.result.get(j);
        const got = v === undefined ? undefined : dec.decode(v.slice());
        if (got !== h.expected[j]) disagree(`held view ${h.keys[j]}: got ${got?.slice(0, 24)}, read ${h.expected[j]?.slice(0, 24)}`);
      }
      h.result.release();
      views.splice(i, 1);
    }
    for (let i = snapshots.length - 1; i >= 0; i--) {
      const s = snapshots[i];
      if (s.until > total) continue;
      for (let n = 0; n < 16; n++) {
        const k = keyOf(int(keys));
        const got = db.get(k, { snapshot: s.snapshot });
        expectValue(k, got === undefined ? undefined : dec.decode(got), s.model, 'get at snapshot');
      }
      s.snapshot.release();
      snapshots.splice(i, 1);
    }
  };

  // Scans run as a second task of the worker, between the writes: async
  // iterators over a random range, as of a snapshot (with autoRefresh, so a
  // long scan does not pin obsolete files) or of their creation.
  let stop = false;
  const scanner = (async () => {
    while (!stop) {
      const a = int(keys);
      const b = Math.min(keys, a + 200 + int(4000));
      const reverse = r() < 0.3;
      const withSnapshot = r() < 0.7;
      const model = new Map(mirror);
      const snapshot = withSnapshot ? db.snapshot() : undefined;
      const it = db.iterator({ gte: keyOf(a), lt: keyOf(b), reverse, snapshot, autoRefresh: withSnapshot, batchSize: 64 });
      const expected = [];
      for (let x = a; x < b; x++) if (model.has(keyOf(x))) expected.push(keyOf(x));
      if (reverse) expected.reverse();
      let n = 0;
      for await (const [k, v] of it) {
        const ks = dec.decode(k);
        if (ks !== expected[n]) {
          disagree(`scan [${a}, ${b}) entry ${n}: got key ${ks}, expected ${expected[n]}`);
          break;
        }
        expectValue(ks, dec.decode(v), model, 'scan');
        n++;
        if (stop) break;
      }
      if (!stop && n !== expected.length) disagree(`scan [${a}, ${b}): ${n} entries, expected ${expected.length}`);
      it.release();
      snapshot?.release();
      ops.scan++;
      ops.scanned += n;
      await tick();
    }
  })();

  const samples = [];
  const sample = async (t) => {
    const s = db.statistics();
    const p = s.properties;
    // The listing awaits each file: meanwhile the scanner, background work
    // and the pool's top-ups run (writes do not: this loop makes them). So
    // the pool may gain files the first statistics did not count: the
    // listing is bounded by the larger of the counts before and after it.
    const u = await usage(dir);
    const after = db.statistics();
    const one = {
      t: Math.round(t / 100) / 10,
      ops: total,
      wasmBytes: s.memory.bytes,
      heapBytes: s.memory.heapBytes,
      poolFiles: s.pool.files,
      poolFilesAfter: after.pool.files,
      poolFree: s.pool.free,
      poolDataBytes: s.pool.dataBytes,
      opfsFiles: u.files,
      opfsBytes: u.bytes,
      opfsUnreadable: u.unreadable,
      opfsTableBytes: u.tables,
      opfsLogBytes: u.logs,
      opfsLogFiles: u.logFiles,
      opfsManifestBytes: u.manifests,
      opfsFreeFiles: u.freeFiles,
      tableBytes: p.tableBytes,
      liveTableBytes: p.liveTableBytes,
      memtableBytes: p.allMemtableBytes,
      pinnedBytes: p.pinnedBytes,
      blockCacheUsage: p.blockCacheUsage,
      rowCacheUsage: p.rowCacheUsage,
      liveSnapshots: p.liveSnapshots,
      pinnedResults: s.pinnedResults,
      l0Files: p.filesPerLevel[0],
      writesWaitingForFiles: after.tickers['silt.write.waiting.for.files'] ?? 0,
    };
    samples.push(one);
    postMessage({ progress: { sample: one } });
  };

  // Most of the key space first, in batches, so that the samples' middle
  // third already sees the steady state (the mix keeps about 2/3 of the
  // keys live).
  for (let x = 0; x < keys; ) {
    const batch = new WriteBatch();
    for (const end = Math.min(keys, x + 500); x < end; x++) if (r() < 0.7) put(x, batch);
    db.write(batch);
    await tick();
  }
  await db.idle();

  const t0 = performance.now();
  let nextSample = 0;
  try {
    while (performance.now() - t0 < seconds * 1000) {
      const now = performance.now() - t0;
      if (now >= nextSample) {
        await sample(now);
        nextSample += sampleMs;
      }
      for (let n = 0; n < 64; n++) {
        total++;
        const p = r();
        const sync = r() < 0.003;
        if (sync) ops.sync++;
        if (p < 0.4) {
          put(int(keys), { put: (k, v) => db.put(k, v, { sync }) });
          ops.put++;
        } else if (p < 0.48) {
          del(int(keys), { delete: (k) => db.delete(k, { sync }) });
          ops.delete++;
        } else if (p < 0.482) {
          const a = int(keys);
          delRange(a, Math.min(keys, a + 1 + int(200)), { deleteRange: (s, e) => db.deleteRange(s, e, { sync }) });
          ops.deleteRange++;
        } else if (p < 0.532) {
          const batch = new WriteBatch();
          for (let j = 2 + int(31); j > 0; j--) {
            const q = r();
            if (q < 0.8) put(int(keys), batch);
            else if (q < 0.97) del(int(keys), batch);
            else {
              const a = int(keys);
              delRange(a, Math.min(keys, a + 1 + int(50)), batch);
            }
          }
          db.write(batch, { sync });
          ops.batch++;
        } else if (p < 0.85) {
          const k = keyOf(int(keys));
          if (r() < 0.5) {
            const v = db.get(k);
            expectValue(k, v === undefined ? undefined : dec.decode(v), mirror, 'get');
          } else {
            using v = db.getPinned(k);
            expectValue(k, v?.text(), mirror, 'getPinned');
          }
          ops.get++;
        } else if (p < 0.9991) {
          const ks = Array.from({ length: 1 + int(64) }, () => keyOf(int(keys)));
          const result = db.multiGet(ks);
          const expected = ks.map((k) => mirror.get(k));
          for (let j = 0; j < ks.length; j++) if (result.text(j) !== expected[j]) disagree(`multiGet ${ks[j]}`);
          // Some results are held (views pinned) for a few thousand ops.
          if (r() < 0.05 && views.length < 32) views.push({ result, keys: ks, expected, until: total + int(5000) });
          else result.release();
          ops.multiGet++;
        } else if (p < 0.9996) {
          if (snapshots.length < 4) {
            snapshots.push({ snapshot: db.snapshot(), model: new Map(mirror), until: total + int(20_000) });
            ops.snapshot++;
          }
        } else if (p < 0.9998) {
          db.flush();
          ops.flush++;
        } else {
          const a = int(keys);
          const done = db.compactRange(keyOf(a), keyOf(Math.min(keys - 1, a + int(keys))));
          if (r() < 0.5) await done;
          else done.catch((e) => errors.push(`compactRange: ${e.code}: ${e.message}`));
          ops.compact++;
        }
      }
      releaseDue();
      await tick(); // requests, the scanner, background work and pool top-ups run
    }
  } finally {
    stop = true;
    await scanner;
  }
  for (const h of views) h.until = 0;
  for (const s of snapshots) s.until = 0;
  releaseDue();
  await db.idle();
  await sample(performance.now() - t0);

  // The oracle, last: a full scan equals the mirror.
  const expected = [...mirror.keys()].sort();
  let n = 0;
  for (const [k, v] of db.iterator()) {
    const ks = dec.decode(k);
    if (ks !== expected[n]) {
      disagree(`final scan entry ${n}: got ${ks}, expected ${expected[n]}`);
      break;
    }
    expectValue(ks, dec.decode(v), mirror, 'final scan');
    n++;
  }
  if (n !== expected.length) disagree(`final scan: ${n} entries, mirror has ${expected.length}`);
  const lastError = db.statistics().background.lastError;
  if (lastError) errors.push(`background work: ${lastError.code}: ${lastError.message}`);
  db.close();
  return {
    seconds: (performance.now() - t0) / 1000,
    ops: total,
    byKind: ops,
    keysAtEnd: expected.length,
    wrongCount,
    wrong,
    errors,
    samples,
  };
}
