// Scenarios of the reliability tests (tests/e2e/reliability.spec.ts), run in
// a dedicated worker on real OPFS: a write stream that is killed at random
// points and checked against its oracle when reopened, holding a database
// (for the Web Lock tests), trying to open one, and the soak.
import { open, SiltError, WriteBatch } from '/siltdb/dist/index.js';
import { apply, indexOf, keyOf, KEYS, longestMatchingPrefix, Stream } from './reliability-oracle.js';
import { soak } from './reliability-soak.js';
import { serve } from './worker-rpc.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const tick = () => new Promise((r) => setTimeout(r, 0));
const report = (progress) => postMessage({ progress });

/**
 * Memtables of 64 KiB: a flush every few hundred ops and L0 compactions
 * all the time, so a kill lands in the middle of one often.
 */
const STREAM_OPTIONS = { writeBufferSize: 64 * 1024 };

/** Databases kept open until the worker dies (the lock tests hold them). */
const held = [];

/**
 * The database's state, by key index, read twice: by a full scan and by
 * one multiGet of every key, which must agree. Keys outside the key space
 * are counted (a stream never writes one).
 */
function readState(db) {
  const seen = new Array(KEYS).fill(undefined);
  let foreign = 0;
  let scanned = 0;
  for (const [k, v] of db.iterator()) {
    scanned++;
    const x = indexOf(dec.decode(k));
    if (x < 0) foreign++;
    else seen[x] = dec.decode(v);
  }
  let disagree = 0;
  using r = db.multiGet(Array.from({ length: KEYS }, (_, x) => keyOf(x)));
  for (let x = 0; x < KEYS; x++) if (r.text(x) !== seen[x]) disagree++;
  return { seen, foreign, scanned, disagree };
}

/** One op of the stream against the database. */
async function execute(db, op, errors) {
  const sync = { sync: op.sync };
  switch (op.kind) {
    case 'put':
      return db.put(keyOf(op.x), enc.encode(op.value), sync);
    case 'delete':
      return db.delete(keyOf(op.x), sync);
    case 'deleteRange':
      return db.deleteRange(keyOf(op.a), keyOf(op.b), sync);
    case 'batch': {
      const batch = new WriteBatch();
      for (const o of op.ops) {
        if (o.kind === 'put') batch.put(keyOf(o.x), enc.encode(o.value));
        else if (o.kind === 'delete') batch.delete(keyOf(o.x));
        else batch.deleteRange(keyOf(o.a), keyOf(o.b));
      }
      return db.write(batch, sync);
    }
    case 'compact': {
      const done = db.compactRange(keyOf(op.a), keyOf(op.b));
      if (op.wait) return done;
      // Left running in steps between the next writes.
      done.catch((e) => errors.push(`compactRange(${op.a}, ${op.b}): ${e.code}: ${e.message}`));
      return undefined;
    }
  }
  throw new Error(`unknown op ${op.kind}`);
}

/**
 * Writes `op`; a write that finds the file pool empty (`PoolExhausted`:
 * it wrote nothing) is retried once background work and the pool have
 * caught up, as an app would.
 */
async function write(db, op, errors) {
  try {
    await execute(db, op, errors);
  } catch (e) {
    if (!(e instanceof SiltError) || e.code !== 'PoolExhausted') throw e;
    await db.idle();
    await execute(db, op, errors);
  }
}

const scenarios = {
  /**
   * Opens the database the previous (killed) writer of stream `seed` left
   * and checks it against the oracle: its state must be the stream's state
   * after some prefix of at least `acked` ops (every write acknowledged
   * with sync), between `base` (the last prefix checked) and `reach` (no
   * writer got further). Reports the check, then goes on writing the stream
   * from where the database is, reporting each synced write once it
   * returned, until `limit` more ops are written (or the worker is killed).
   */
  async killStream({ name, seed, base, acked, reach, limit, tickEvery }) {
    const t0 = performance.now();
    report({ phase: 'opening' });
    const db = await open(name, { ...STREAM_OPTIONS, wait: true, signal: AbortSignal.timeout(10_000) });
    held.push(db);
    report({ phase: 'checking' });
    const state = readState(db);
    // Every block of every table: checksums and key order (throws on damage).
    const verified = db.verify();
    const stream = new Stream(seed);
    const model = new Array(KEYS).fill(undefined);
    for (let k = 0; k < base; k++) apply(model, stream.next());
    const { longest, fewest } = longestMatchingPrefix(stream, model, base, reach, state.seen);
    const check = {
      base,
      reach,
      acked,
      prefix: longest,
      fewestDiffering: fewest,
      scanned: state.scanned,
      foreign: state.foreign,
      disagree: state.disagree,
      verified,
      checkMs: Math.round(performance.now() - t0),
    };
    if (longest < 0 || state.foreign > 0 || state.disagree > 0) {
      report({ checked: { ...check, to: reach } });
      return { check, to: reach }; // no prefix to go on from: the test fails on this
    }
    // Go on from the prefix the database holds.
    const next = new Stream(seed);
    for (let k = 0; k < longest; k++) next.next();
    const to = longest + limit;
    report({ checked: { ...check, to }, phase: 'writing' });
    const errors = [];
    for (let i = longest; i < to; i++) {
      const op = next.next();
      await write(db, op, errors);
      if (op.sync) report({ acked: i + 1 });
      if (errors.length > 0) throw new SiltError('Internal', errors.join('; '));
      if (i % tickEvery === 0) {
        // Whether a flush or compaction is under way (what a kill now interrupts).
        report({ written: i + 1, busy: db.statistics().properties.backgroundWorkPending === 1 });
        await tick(); // a worker serving requests: background work and pool top-ups run
      }
    }
    await db.idle();
    const lastError = db.statistics().background.lastError;
    if (lastError) throw new SiltError(lastError.code, `background work failed: ${lastError.message}`);
    report({ written: to, phase: 'done' });
    return { check, to };
  },

  /** Opens the database and keeps it open (its Web Lock held) until the worker dies. */
  async hold({ name, wait }) {
    const db = await open(name, { wait: !!wait, signal: AbortSignal.timeout(10_000) });
    held.push(db);
    db.put('holder', enc.encode(`${Date.now()}`), { sync: true });
    report({ open: true });
    return 'held';
  },

  /**
   * Tries to open the database; reports the outcome, its message and how
   * long it took, and closes it again.
   */
  async tryOpen({ name, wait, timeoutMs }) {
    const t0 = performance.now();
    report({ trying: true });
    try {
      const options = { wait: !!wait };
      if (timeoutMs) options.signal = AbortSignal.timeout(timeoutMs);
      const db = await open(name, options);
      const holder = db.get('holder');
      db.close();
      return { outcome: 'opened', ms: performance.now() - t0, sawHolder: holder !== undefined };
    } catch (e) {
      if (!(e instanceof SiltError)) throw e;
      return { outcome: e.code, message: e.message, ms: performance.now() - t0 };
    }
  },

  soak,
};

serve(scenarios);
