// Scenarios the browser tests run inside a dedicated worker, where siltdb
// opens databases on real OPFS (more in the modules imported below). Each
// returns plain data for the test to check; failures come back with their
// SiltError code.
import { open, configureMemory, memoryMode, SiltError, WriteBatch } from '/siltdb/dist/index.js';
import * as boundaryScenarios from './boundary-scenarios.js';
import * as iteratorScenarios from './iterator-scenarios.js';
import * as backupScenarios from './backup-scenarios.js';
import * as handleScenarios from './handle-scenarios.js';
import { sharedSuiteInWorker } from './shared-scenarios.js';
import { serve } from './worker-rpc.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const key = (i) => `key-${String(i).padStart(8, '0')}`;
const valueFor = (i) => `value-${i}-${'x'.repeat(i % 50)}`;
const tick = () => new Promise((r) => setTimeout(r, 0));
// A worker killed by terminate() or a page reload releases its Web Lock
// shortly after, not at once: scenarios that reopen wait up to 5 s, as an
// app reopening after such a crash would.
const reopen = () => ({ wait: true, signal: AbortSignal.timeout(5_000) });

const scenarios = {
  /** Writes, reads back every way, closes, reopens and reads again. */
  async roundTrip({ name, n }) {
    const db = await open(name);
    const batch = new WriteBatch();
    for (let i = 0; i < n; i++) batch.put(key(i), enc.encode(valueFor(i)));
    db.write(batch, { sync: true });
    db.delete(key(1));
    db.deleteRange(key(10), key(20));
    db.flush();
    const out = {};
    out.owned = dec.decode(db.get(key(5)));
    {
      using v = db.getPinned(key(6));
      out.pinned = v.text();
    }
    {
      using r = db.multiGet([key(0), key(1), key(15), key(n - 1), 'nope']);
      out.multiGet = Array.from({ length: r.length }, (_, i) => r.text(i) ?? null);
    }
    out.scanCount = [...db.iterator()].length;
    out.reverseFirst = dec.decode(db.iterator({ reverse: true }).next().value[0]);
    const s = db.statistics();
    out.pool = s.pool;
    out.filesPerLevel = s.properties.filesPerLevel;
    out.memoryMode = s.memory.mode;
    db.close();
    const again = await open(name);
    out.afterReopen = dec.decode(again.get(key(n - 1)));
    out.afterReopenCount = [...again.iterator()].length;
    again.close();
    return out;
  },

  /** Writes keys [from, to) durably, then closes. */
  async write({ name, from, to }) {
    const db = await open(name, reopen());
    const batch = new WriteBatch();
    for (let i = from; i < to; i++) batch.put(key(i), enc.encode(valueFor(i)));
    db.write(batch, { sync: true });
    db.close();
    return to - from;
  },

  /** Counts keys [0, n) present with the right value. */
  async verify({ name, n }) {
    const db = await open(name, reopen());
    let good = 0;
    using r = db.multiGet(Array.from({ length: n }, (_, i) => key(i)));
    for (let i = 0; i < n; i++) if (r.text(i) === valueFor(i)) good++;
    r.release();
    db.close();
    return good;
  },

  /**
   * Writes key after key with sync, reporting each acknowledged write, until
   * the worker is terminated. Yields now and then, like a worker serving
   * requests, so background work and pool top-ups run.
   */
  async stream({ name }) {
    const db = await open(name, { ...reopen(), writeBufferSize: 64 * 1024 });
    for (let i = 0; ; i++) {
      db.put(key(i), enc.encode(valueFor(i)), { sync: i % 3 === 0 });
      if (i % 3 === 0) postMessage({ progress: { acked: i } });
      if (i % 50 === 0) await tick();
    }
  },

  /** Opens after a crash: every acknowledged key must be there. */
  async afterCrash({ name, acked }) {
    const db = await open(name, reopen());
    const missing = [];
    for (let i = 0; i <= acked; i++) {
      const v = db.get(key(i));
      if (i % 3 === 0 && (v === undefined || dec.decode(v) !== valueFor(i))) missing.push(i);
    }
    const total = [...db.iterator()].length;
    db.put('after-crash', enc.encode('writable'), { sync: true });
    db.close();
    return { missing: missing.slice(0, 10), missingCount: missing.length, total };
  },

  /**
   * The engine's fs contract suite on a pool of real OPFS files, in the
   * test-only wasm build (scripts/build.sh --tests: the shipped one has no
   * runFsContract). Its pool is filled the way PoolKeeper fills siltdb's.
   */
  async fsContract({ dirName, storage }) {
    const testBuild = await import('/test-pkg/silt_wasm_test.js');
    await testBuild.default();
    let dir;
    if (storage === 'indexeddb') {
      // The IndexedDB storage's files (in memory, committed to IndexedDB), as open() makes them.
      const { IdbTop } = await import('/siltdb/dist/idb/idb-directory.js');
      const top = new IdbTop(indexedDB);
      await top.removeEntry(dirName);
      dir = await top.getDirectoryHandle(dirName, { create: true });
    } else {
      const root = await navigator.storage.getDirectory();
      try {
        await root.removeEntry(dirName, { recursive: true });
      } catch {}
      dir = await root.getDirectoryHandle(dirName, { create: true });
    }
    const pool = new testBuild.OpfsPool();
    try {
      for (let i = 0; i < 48; i++) {
        const name = `${String(i).padStart(6, '0')}.pool`;
        const file = await dir.getFileHandle(name, { create: true });
        pool.add(await file.createSyncAccessHandle(), name);
      }
      return { failures: pool.runFsContract('contract'), files: pool.fileCount() };
    } finally {
      pool.close();
    }
  },

  /**
   * Holds views from multiGet while wasm memory grows. With resizable
   * buffers the held views must still read the right bytes; without, they
   * must be detached (empty), and the result must hand out fresh ones.
   */
  async growth({ name, resizable }) {
    configureMemory({ resizable });
    const db = await open(name);
    db.put('a', enc.encode('alpha'));
    db.put('b', enc.encode('bravo'));
    const r = db.multiGet(['a', 'b']);
    const held = [r.get(0), r.get(1)];
    const before = db.statistics().memory.bytes;
    for (let i = 0; db.statistics().memory.bytes === before && i < 64; i++) db.put(`big${i}`, new Uint8Array(4 << 20));
    const after = db.statistics().memory.bytes;
    const out = {
      mode: memoryMode(),
      grew: after > before,
      // Reading a detached view throws (or reads nothing): never other bytes.
      heldAfter: held.map((v) => {
        try {
          return dec.decode(v.slice());
        } catch {
          return 'refused';
        }
      }),
      heldLengths: held.map((v) => v.byteLength),
      fresh: [r.text(0), r.text(1)],
    };
    r.release();
    let releasedCode = 'none';
    try {
      r.get(0);
    } catch (e) {
      releasedCode = e.code;
    }
    out.releasedCode = releasedCode;
    db.close();
    return out;
  },

  /**
   * A bulk load that never awaits (siltdb gets no chance to add pooled
   * files or pump background work between its writes), or only every
   * `yieldEvery` entries (`await db.idle()` with `idle`): `n` entries in
   * batches of 100, values of `valueBytes` random bytes (or zeros), with
   * `options`. Reports the first error's code, what the pool and the
   * engine did, then checks every `check`-th entry after an idle() and a
   * verify().
   */
  async bulkNoAwait({ name, n, valueBytes, zeros = false, options = {}, check = 97, yieldEvery = 0, idle = false }) {
    const db = await open(name, options);
    const valueAt = (i) => {
      const v = new Uint8Array(valueBytes);
      if (zeros) return v;
      let x = (i * 2654435761) >>> 0;
      for (let j = 0; j < v.length; j++) {
        x = (Math.imul(x, 1103515245) + 12345) >>> 0;
        v[j] = x >>> 24;
      }
      return v;
    };
    let code = 'none';
    let message = '';
    let written = 0;
    let worstMs = 0;
    const t0 = performance.now();
    for (let i = 0; i < n && code === 'none'; i += 100) {
      if (yieldEvery > 0 && i > 0 && i % yieldEvery === 0) await (idle ? db.idle() : new Promise((r) => setTimeout(r, 0)));
      const b = db.batch();
      for (let j = i; j < Math.min(n, i + 100); j++) b.put(key(j), valueAt(j));
      const t = performance.now();
      try {
        db.write(b);
        written = Math.min(n, i + 100);
      } catch (e) {
        code = e.code ?? String(e);
        message = e.message;
      }
      worstMs = Math.max(worstMs, performance.now() - t);
    }
    const ms = performance.now() - t0;
    const before = db.statistics();
    await db.idle();
    let wrong = 0;
    for (let i = 0; i < written; i += check) {
      const got = db.get(key(i));
      const want = valueAt(i);
      if (!got || got.length !== want.length || got.some((x, j) => x !== want[j])) wrong++;
    }
    // The first entry of a refused batch: it must not have been written.
    const refusedPresent = code !== 'none' && db.get(key(written)) !== undefined;
    const verify = db.verify();
    const after = db.statistics();
    db.close();
    return {
      code,
      message,
      written,
      ms,
      worstMs,
      wrong,
      refusedPresent,
      tables: verify.tables,
      exhausted: before.pool.exhausted,
      waiting: before.tickers['silt.write.waiting.for.files'],
      stalls: before.tickers['silt.write.stalls'],
      l0AtEnd: before.properties.filesPerLevel[0],
      poolFiles: after.pool.files,
    };
  },

  /**
   * ingest() on OPFS: `n` entries sorted (as pairs), then `n` more unsorted
   * over half of the same keys (a WriteBatch), then a reopen; reports what
   * each ingest did and checks every `check`-th key both times.
   */
  async ingestLoad({ name, n, check = 101 }) {
    const valueAt = (i, round) => enc.encode(`${round}-${i}-${'v'.repeat(i % 64)}`);
    let db = await open(name);
    const first = await db.ingest(
      Array.from({ length: n }, (_, i) => [key(i), valueAt(i, 'a')]),
      { sorted: true },
    );
    const b = db.batch();
    for (let i = n + n / 2 - 1; i >= n / 2; i--) b.put(key(i), valueAt(i, 'b'));
    const second = await db.ingest(b);
    const want = (i) => (i < n / 2 ? valueAt(i, 'a') : valueAt(i, 'b'));
    const wrongIn = (d) => {
      let wrong = 0;
      for (let i = 0; i < n + n / 2; i += check) {
        const got = d.get(key(i));
        if (!got || dec.decode(got) !== dec.decode(want(i))) wrong++;
      }
      return wrong;
    };
    const wrongBefore = wrongIn(db);
    const count = db.count();
    db.close();
    db = await open(name);
    const wrongAfter = wrongIn(db);
    const tables = db.verify().tables;
    db.close();
    return { first, second, wrongBefore, wrongAfter, count, tables };
  },

  /**
   * A transaction of `n` puts of `valueBytes` each, awaiting a timer every
   * `awaitEvery`, with `spillBytes` as the spill size: first aborted, then
   * run through `transaction()` and committed. Reports what a second
   * handle saw before the commit, the spills, and the data after a reopen.
   */
  async largeTransaction({ name, n, valueBytes, spillBytes, awaitEvery = 10_000, check = 997 }) {
    const valueAt = (i) => {
      const v = new Uint8Array(valueBytes);
      v.fill(i % 251);
      v[0] = i & 0xff;
      return v;
    };
    const options = { transactionSpillBytes: spillBytes };
    let db = await open(name, options);
    db.put(key(1), enc.encode('before'));
    const load = async (tx) => {
      for (let i = 0; i < n; i++) {
        tx.put(key(i), valueAt(i));
        if (i % awaitEvery === awaitEvery - 1) await tick();
      }
    };
    const aborted = db.begin();
    await load(aborted);
    aborted.abort();
    const afterAbort = { count: db.count(), one: dec.decode(db.get(key(1))) };
    const spillsBefore = db.statistics().tickers['silt.transaction.spills'];
    let seenOutside = -1;
    let seenInside = -1;
    await db.transaction(async (tx) => {
      await load(tx);
      seenOutside = db.count();
      let inside = 0;
      for (let i = 0; i < n; i += check) {
        const got = tx.get(key(i));
        if (got && got.length === valueBytes && got[0] === (i & 0xff)) inside++;
      }
      seenInside = inside;
    });
    const tickers = db.statistics().tickers;
    const wrongIn = (d) => {
      let wrong = 0;
      for (let i = 0; i < n; i += check) {
        const got = d.get(key(i));
        if (!got || got.length !== valueBytes || got[0] !== (i & 0xff) || got[valueBytes - 1] !== i % 251) wrong++;
      }
      return wrong;
    };
    const wrongBefore = wrongIn(db);
    const count = db.count();
    db.close();
    db = await open(name, options);
    const wrongAfter = wrongIn(db);
    const countAfter = db.count();
    const verified = db.verify().tables;
    db.close();
    return {
      afterAbort,
      spillsAborted: spillsBefore,
      spills: tickers['silt.transaction.spills'] - spillsBefore,
      published: tickers['silt.transaction.published.from.files'],
      seenOutside,
      seenInside,
      checked: Math.ceil(n / check),
      wrongBefore,
      wrongAfter,
      count,
      countAfter,
      verified,
    };
  },

  /**
   * Parking (js/src/opfs/parking.ts): closes `name` after writing, then reopens
   * it at once in this worker (its files were kept open: fast, same data),
   * then closes it and leaves it parked for the test to claim from another
   * worker. Reports timings and whether the lock is still held.
   */
  async parkAndReopen({ name, n }) {
    const held = async () => (await navigator.locks.query()).held.some((l) => l.name === `siltdb:${name}`);
    const db = await open(name, { writeBufferSize: 256 * 1024 });
    const batch = new WriteBatch();
    for (let i = 0; i < n; i++) batch.put(key(i), enc.encode(valueFor(i)));
    db.write(batch);
    const filesBefore = db.statistics().pool.files;
    db.close();
    const heldWhileParked = await held();
    // Count the sync access handles the reopen opens.
    const proto = FileSystemFileHandle.prototype;
    const original = proto.createSyncAccessHandle;
    let handlesOpened = 0;
    proto.createSyncAccessHandle = function (...args) {
      handlesOpened++;
      return original.apply(this, args);
    };
    const t0 = performance.now();
    let again;
    try {
      again = await open(name);
    } finally {
      proto.createSyncAccessHandle = original;
    }
    const reopenMs = performance.now() - t0;
    const out = {
      heldWhileParked,
      reopenMs,
      handlesOpened,
      filesBefore,
      filesAfter: again.statistics().pool.files,
      last: dec.decode(again.get(key(n - 1))),
      count: [...again.iterator()].length,
    };
    again.put('parked', enc.encode('yes'), { sync: true });
    again.close();
    out.heldAfterClose = await held();
    return out;
  },

  /** Whether this realm sees `name`'s Web Lock held right now. */
  async lockHeld({ name }) {
    return (await navigator.locks.query()).held.some((l) => l.name === `siltdb:${name}`);
  },

  /** Opens `name` with open() and keeps it open (exclusive) until `closeHeld`; writes `value` under 'from'. */
  async holdOpen({ name, value }) {
    held = await open(name);
    held.put('from', new TextEncoder().encode(value));
    return 'held';
  },

  async closeHeld() {
    held?.close();
    held = undefined;
    return 'closed';
  },

  /** Opens `name` (waiting for it) and counts connect()'s write records in it. */
  async countRecords({ name }) {
    const db = await open(name, { wait: true });
    const prefix = new Uint8Array([255, 255, 255, 255, 255, 255, 255, 255, ...new TextEncoder().encode('siltdb/client/')]);
    let n = 0;
    for (const [k] of db.iterator({ gte: prefix })) if (k.length > prefix.length) n++;
    db.close();
    return n;
  },

  /** Tries to open; reports the error code, or 'opened'. */
  async tryOpen({ name, wait, read }) {
    try {
      const db = await open(name, { wait: !!wait });
      const value = read ? (db.get(read) ?? null) : undefined;
      db.close();
      return read ? `opened ${value === null ? 'missing' : dec.decode(value)}` : 'opened';
    } catch (e) {
      return e instanceof SiltError ? e.code : `not a SiltError: ${e}`;
    }
  },
};

/** The database `holdOpen` keeps open. */
let held;

// Iterators (iterator-scenarios.js), the boundary counters (boundary-scenarios.js),
// backups (backup-scenarios.js), the handle budget (handle-scenarios.js), and the scenarios both APIs share, through
// open() here (shared-scenarios.js; through connect() on the page).
Object.assign(scenarios, iteratorScenarios, boundaryScenarios, backupScenarios, handleScenarios, { sharedSuiteInWorker });

serve(scenarios);
