// Scenarios of long-running async iterators on real OPFS (RocksDB PR 13354): a scan
// with an explicit snapshot that writes, flushes and fully compacts between
// awaits, watching which table files the OPFS pool still holds while the
// scan goes on; and how iterators end (break, return(), close()).
import { open, SiltError, WriteBatch } from '/siltdb/dist/index.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const key = (i) => `key-${String(i).padStart(8, '0')}`;
const tick = () => new Promise((r) => setTimeout(r, 0));

/** The table files the pool's headers name right now. */
function tables(db) {
  return db.statistics().pool.paths.filter((p) => p.endsWith('.sst'));
}

/** Bytes held beyond what the current version needs (memtables, tables). */
function pinned(db) {
  const p = db.statistics().properties;
  return { memtables: p.allMemtableBytes - p.memtableBytes, tables: p.liveTableBytes - p.tableBytes };
}

/**
 * A database of `n` keys in several levels, L0 and the memtable, and a
 * model of it (key → value).
 */
async function build(name, n) {
  // Memtables large enough that the second writes make one L0 file; a
  // large pool reserve for the rounds of writes between two awaits.
  const db = await open(name, { writeBufferSize: 256 * 1024, poolReserve: 64 });
  const model = new Map();
  const put = (k, v) => {
    db.put(k, enc.encode(v));
    model.set(k, v);
  };
  // Random order, so that flushed files overlap and compactions merge.
  const batch = new WriteBatch();
  for (let j = 0; j < n; j++) {
    const i = (j * 7919) % n;
    const v = `first-${i}-`.padEnd(100, 'x');
    batch.put(key(i), enc.encode(v));
    model.set(key(i), v);
    if (batch.length === 250) {
      db.write(batch);
      batch.clear();
      await tick(); // a worker serving requests: pump and pool top-ups run
    }
  }
  db.write(batch);
  await db.compactRange(); // everything in the last level
  for (let i = 0; i < n; i += 10) put(key(i), `second-${i}-`.padEnd(60, 'y'));
  db.flush(); // an L0 file
  for (let i = 5; i < n; i += 13) put(key(i), `third-${i}`); // the memtable
  db.deleteRange(key(n - 40), key(n - 20));
  for (let i = n - 40; i < n - 20; i++) model.delete(key(i));
  return { db, model };
}

/** The writes of one round between awaits, none of which the snapshot sees. */
function mutate(db, round, position, n) {
  const at = Math.max(0, Math.min(n - 1, position));
  // Overwrites behind, at and ahead of the cursor, and of every 23rd key.
  for (let i = 0; i < n; i += 23) db.put(key(i), enc.encode(`round${round}-${i}`.padEnd(120, 'z')));
  for (const i of [at - 3, at, at + 1, at + 2, at + 50]) if (i >= 0 && i < n) db.put(key(i), enc.encode(`near-${round}`));
  // Deletes, and a range delete over the cursor.
  for (let i = 3; i < n; i += 11) db.delete(key(i));
  db.deleteRange(key(Math.max(0, at - 200)), key(Math.min(n, at + 400)));
  // New keys in the range, between existing ones.
  for (let i = 0; i < n; i += 97) db.put(`${key(i)}-new-${round}`, enc.encode('new'));
}

/**
 * Scans the whole database as of a snapshot with `for await`, while
 * `rounds` times (spread over the scan) writes land, everything is flushed
 * and fully compacted, between awaits. Reports what the scan yielded
 * against the snapshot's model, and what the pool held as it went.
 */
export async function refreshingScan({ name, n, rounds, autoRefresh, reverse, breakAt }) {
  const { db, model } = await build(name, n);
  const snapshot = db.snapshot();
  const expected = [...model.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (reverse) expected.reverse();
  await db.idle();
  const atStart = tables(db);
  const dataAtStart = db.statistics().pool.dataBytes;
  const refreshesAtStart = db.statistics().tickers['silt.iter.auto.refresh'] ?? 0;

  const every = Math.floor(expected.length / (rounds + 1));
  const got = [];
  let round = 0;
  let oldGoneAt = -1; // entries yielded when no file of the start was left
  let held; // what the pool held after the last round, mid-scan
  let it;
  const report = { rounds: [] };
  try {
    it = db.iterator({ snapshot, autoRefresh, reverse, batchSize: 64 });
    for await (const [k, v] of it) {
      got.push([dec.decode(k), dec.decode(v)]);
      const count = got.length;
      if (round < rounds && count % every === 0) {
        const position = Number(dec.decode(k).slice(4, 12));
        mutate(db, round, position, n);
        db.flush();
        await db.compactRange(); // a full compaction, between two steps of the scan
        await db.idle(); // nothing left to do: from here only the scan's own steps (refreshes) let files go
        round++;
        const s = db.statistics();
        report.rounds.push({ at: count, filesPerLevel: s.properties.filesPerLevel, tables: tables(db).length });
      }
      if (oldGoneAt < 0 && round > 0 && count % 16 === 0 && !tables(db).some((f) => atStart.includes(f))) oldGoneAt = count;
      if (round === rounds && held === undefined && count >= report.rounds[rounds - 1].at + Math.floor(every / 2)) {
        // Well after the last round (many batches and awaits later), still mid-scan.
        const p = db.statistics().properties;
        held = { at: count, tables: tables(db), current: p.filesPerLevel.reduce((a, b) => a + b, 0), pinned: pinned(db), pool: db.statistics().pool };
      }
      if (breakAt !== undefined && count === breakAt) break;
    }
  } finally {
    snapshot.release();
  }
  await db.idle(); // the pump's next step deletes what the iterator let go of
  const after = { tables: tables(db), pinned: pinned(db), pool: db.statistics().pool };
  const s = db.statistics();

  let firstMismatch = -1;
  const limit = breakAt ?? expected.length;
  for (let i = 0; i < Math.max(got.length, limit); i++) {
    const g = got[i];
    const e = expected[i];
    if (!g || !e || g[0] !== e[0] || g[1] !== e[1]) {
      firstMismatch = i;
      break;
    }
  }
  const out = {
    yielded: got.length,
    expectedCount: expected.length,
    firstMismatch,
    mismatch: firstMismatch < 0 ? null : { got: got[firstMismatch] ?? null, expected: expected[firstMismatch] ?? null },
    roundsDone: round,
    rounds: report.rounds,
    atStart: { tables: atStart, dataBytes: dataAtStart },
    oldGoneAt,
    held: held && {
      at: held.at,
      oldLeft: held.tables.filter((f) => atStart.includes(f)).length,
      // Table files on OPFS, and those the current version has.
      tables: held.tables.length,
      currentTables: held.current,
      pinned: held.pinned,
      removedOpen: held.pool.removedOpen,
      dataBytes: held.pool.dataBytes,
    },
    after: {
      oldLeft: after.tables.filter((f) => atStart.includes(f)).length,
      pinned: after.pinned,
      removedOpen: after.pool.removedOpen,
      dataBytes: after.pool.dataBytes,
    },
    released: it?.released ?? false,
    refreshes: (s.tickers['silt.iter.auto.refresh'] ?? 0) - refreshesAtStart,
    pinnedResults: s.pinnedResults,
  };
  db.close();
  return out;
}

/**
 * Iterators let go of everything when a loop breaks, when `return()` is
 * called on the async iterator, and when one is released by hand.
 */
export async function iteratorEnds({ name }) {
  const db = await open(name, { writeBufferSize: 64 * 1024 });
  const writeEvery = async (step, value) => {
    const batch = new WriteBatch();
    for (let i = 0; i < 6000; i += step) batch.put(key(i), enc.encode(value(i)));
    db.write(batch);
    await db.idle();
  };
  await writeEvery(1, (i) => `value-${i}`.padEnd(80, '.'));
  await db.compactRange();
  const out = {};
  const makeObsolete = async () => {
    await writeEvery(2, () => 'overwritten');
    await db.compactRange();
  };
  const measure = () => ({ pinned: pinned(db), tables: tables(db).length });

  // 1. break out of for await
  {
    const it = db.iterator({ batchSize: 50 });
    let n = 0;
    let during;
    for await (const _ of it) {
      if (++n === 10) {
        await makeObsolete();
        during = measure();
      }
      if (n === 120) break;
    }
    await db.idle();
    out.break = { during, after: measure(), released: it.released, next: it.next().done };
  }
  // 2. return() on the async iterator object, as a consumer that stops early does
  {
    const it = db.iterator({ batchSize: 50, reverse: true });
    const ai = it[Symbol.asyncIterator]();
    await ai.next();
    await makeObsolete();
    const during = measure();
    const r = await ai.return();
    await db.idle();
    out.return = { during, after: measure(), released: it.released, result: r, next: (await ai.next()).done };
  }
  // 3. a sync loop with release() by hand
  {
    const it = db.iterator({ batchSize: 50 });
    it.next();
    await makeObsolete();
    const during = measure();
    it.release();
    await db.idle();
    let code = 'none';
    try {
      it.next();
    } catch (e) {
      code = e instanceof SiltError ? e.code : `not a SiltError: ${e}`;
    }
    out.release = { during, after: measure(), code };
  }
  db.close();
  return out;
}

/**
 * An async loop whose database is closed while it runs: its next step
 * fails with a SiltError `Closed`, and the database reopens cleanly.
 */
export async function iteratorOutlivesClose({ name }) {
  const db = await open(name, { writeBufferSize: 64 * 1024 });
  for (let i = 0; i < 3000; i++) db.put(key(i), enc.encode(`value-${i}`));
  await db.idle();
  const it = db.iterator({ batchSize: 100, autoRefresh: true });
  let seen = 0;
  let error = null;
  try {
    for await (const _ of it) {
      if (++seen === 150) db.close();
    }
  } catch (e) {
    error = { isSiltError: e instanceof SiltError, code: e.code, message: e.message };
  }
  let again = 'none';
  try {
    it.next();
  } catch (e) {
    again = e.code;
  }
  const reopened = await open(name);
  const count = [...reopened.iterator()].length;
  reopened.close();
  return { seen, error, again, released: it.released, count };
}

/**
 * The batch API on OPFS (tables in several levels, L0, the memtable, a
 * range tombstone): `nextBatch` in both directions, within bounds, at a
 * snapshot while writes, flushes and a compaction land between batches,
 * against the model; `seek` on the live iterator; and a transient batch
 * read after the next call (it must read as empty, here where
 * `ArrayBuffer.prototype.transfer` exists).
 */
export async function batchScans({ name, n }) {
  const { db, model } = await build(name, n);
  const snapshot = db.snapshot();
  const sorted = [...model.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const out = { canTransfer: typeof ArrayBuffer.prototype.transfer === 'function', scans: [] };
  const scans = [
    { reverse: false },
    { reverse: true },
    { reverse: false, gte: key(1000), lt: key(3000) },
    { reverse: true, gt: key(n - 500), lte: key(n - 3) },
  ];
  let round = 0;
  for (const bounds of scans) {
    const inRange = sorted.filter(
      ([k]) =>
        (bounds.gte === undefined || k >= bounds.gte) &&
        (bounds.gt === undefined || k > bounds.gt) &&
        (bounds.lt === undefined || k < bounds.lt) &&
        (bounds.lte === undefined || k <= bounds.lte),
    );
    if (bounds.reverse) inRange.reverse();
    const it = db.iterator({ ...bounds, snapshot, autoRefresh: true });
    let at = 0;
    let mismatch = null;
    let batches = 0;
    let stale = null;
    for (let b = it.nextBatch(); b !== undefined; b = it.nextBatch()) {
      if (stale !== null && (stale.bytes.length !== 0 || stale.view.length !== 0)) mismatch ??= { staleBatchStillReads: true };
      batches++;
      for (let i = 0; i < b.length; i++, at++) {
        const want = inRange[at];
        const k = b.keyText(i);
        const v = b.valueText(i);
        if (mismatch === null && (want === undefined || want[0] !== k || want[1] !== v)) mismatch = { at, got: [k, v], want: want ?? null };
      }
      stale = { bytes: b.bytes, view: b.valueAt(0) };
      // Writes the snapshot does not see, then a flush and a compaction, between batches.
      if (batches % 3 === 0) {
        mutate(db, round++, 500, n);
        db.flush();
        if (batches % 6 === 0) await db.compactRange();
      }
    }
    // seek on the live iterator: back to the middle of the range.
    const mid = inRange[Math.floor(inRange.length / 2)];
    it.seek(mid[0]);
    const again = it.nextBatch();
    const seekOk = again !== undefined && again.keyText(0) === mid[0] && again.valueText(0) === mid[1];
    it.release();
    out.scans.push({ bounds, expected: inRange.length, read: at, batches, mismatch, seekOk });
  }
  snapshot.release();
  db.close();
  return out;
}
