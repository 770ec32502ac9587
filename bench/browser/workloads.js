// The workloads of the browser suite, with db_bench's names, run inside the
// engine's dedicated worker against one adapter (bench/browser/engines/*.js)
// and timed there with performance.now():
//
//   fillseq          keys 0..N-1 in order, in batches of 1,000 (one putBatch each)
//   fillrandom       a permutation of 0..N-1, in batches of 1,000
//   readrandom       `reads` gets of random keys, all present
//   readhot          `reads` gets, 9 in 10 of the hot 1% of the keys (every
//                    100th key), the rest random: a skewed read workload
//   multireadrandom  `reads / 32` multiGets of 32 keys: stride 0 = 32 distinct
//                    random keys; stride 16 = a random start, then start + 16·j
//   seekrandom       `seeks` scans: seek to a random key, read it and the
//                    next `seekNexts` entries (db_bench: one Seek, seek_nexts Next)
//   reopen           close the populated database and open it again
//   transfer         (adapters with `transfer`) `transfers` transactions, each
//                    reading two of `accounts` balances and writing both
//                    (from − a, to + a); after each run every balance is
//                    read back and checked against a replay in JavaScript
//   transfer, 2 callers  (adapters with `transferConcurrently`) the same
//                    transfers split between two callers that run at once,
//                    each awaiting between its reads and its writes: they
//                    conflict, retry, and the balances must still match
//   counter          (adapters with `bump`) `bumps` increments of one of 100
//                    counters, each a read-modify-write transaction; checked
//   counter, merge   (adapters with `bumpMerge`) the same as merge operands
//                    (Silt's 'u64add'): no read at all
//   count            (adapters with `count`) the number of keys from the
//                    first to the last filled key (all N), checked = N
//   backup, copy     (adapters with `backup` and `copy`) a new database of
//                    all N keys through export + import, and through an
//                    iterator and write batches, each until closed
//   approximateSize  (adapters with `approximateSize`) `sample` calls over
//                    random ranges of the filled keys, each from the
//                    engine's own estimate (no scan)
//
// Each timed workload runs once as a warm-up (fills: a tenth of N into a
// scratch database; reads: the same keys), then `reps` times; the median is
// kept, and every run's figure is in the result. Every read returns a
// checksum (the sum of every byte of every value it read, see common.js),
// compared with the one predicted from the key indexes: a wrong checksum
// throws, so a broken engine is a failed run, never a number.
//
// An adapter may also have
//   settle(handle)   called (and timed, reported apart) after each fill:
//                    lets background work (flushes, compactions) catch up
//                    before reads are timed;
//   variants         { get | multiGet | scan: { name: fn } }: other
//                    ways of doing an operation, each measured as its own row;
//                    the workload's main row is then the fastest of them
//                    (named in the row's `via`).
import { accountKey, checksum, expectedChecksum, keyOf, median, permutation, rng, below, u64Bytes, valueFor } from './common.js';

/** The suite's parameters and their defaults (bench/run/suite.mjs has the same flags). */
export const DEFAULTS = Object.freeze({
  num: 100_000,
  reads: 10_000,
  seeks: 1_000,
  seekNexts: 100,
  reps: 5,
  batch: 1_000,
  multiBatch: 32,
  strides: [0, 16],
  sample: 1_000,
  accounts: 10_000,
  transfers: 2_000,
  bumps: 2_000,
});

/** Checked parameters: DEFAULTS overridden by `params`, or a clear error. */
export function suiteParams(params = {}) {
  const p = { ...DEFAULTS, ...params };
  // The transaction workloads scale down with a small suite (tests, the
  // demo's quick runs): at most num accounts, at most reads transactions.
  if (params.accounts === undefined) p.accounts = Math.min(DEFAULTS.accounts, p.num);
  if (params.transfers === undefined) p.transfers = Math.min(DEFAULTS.transfers, p.reads);
  if (params.bumps === undefined) p.bumps = Math.min(DEFAULTS.bumps, p.reads);
  const int = (name, min) => {
    if (!Number.isInteger(p[name]) || p[name] < min) throw new Error(`${name} must be an integer ≥ ${min}, got ${p[name]}`);
  };
  int('num', 100);
  int('reads', 32);
  int('seeks', 1);
  int('seekNexts', 0);
  int('reps', 1);
  int('batch', 1);
  int('multiBatch', 1);
  int('sample', 1);
  int('accounts', 2);
  int('transfers', 1);
  int('bumps', 1);
  if (p.num <= p.seekNexts + 1) throw new Error(`num (${p.num}) must exceed seekNexts + 1 (${p.seekNexts + 1})`);
  if (!Array.isArray(p.strides) || p.strides.some((s) => !Number.isInteger(s) || s < 0)) throw new Error('strides must be integers ≥ 0');
  for (const s of p.strides) {
    if (s * (p.multiBatch - 1) >= p.num) throw new Error(`stride ${s} × ${p.multiBatch - 1} does not fit in num ${p.num}`);
  }
  if (typeof p.name !== 'string' || p.name === '') throw new Error('name (the database name) must be a non-empty string');
  return p;
}

const isPromise = (x) => x instanceof Promise;

/** Throws a clear error if two checksums differ. */
function check(engine, what, got, expected) {
  if (got !== expected) {
    throw new Error(`${engine}: ${what}: checksum ${got}, expected ${expected} (the engine returned wrong or missing values)`);
  }
}

/** Prefix sums of expected checksums: the sum over [a, b) in O(1). */
function checksumPrefix(num) {
  const prefix = new Float64Array(num + 1);
  for (let i = 0; i < num; i++) prefix[i + 1] = prefix[i] + expectedChecksum(i);
  return prefix;
}

/** The batches of a fill: arrays of keys and values, built before timing. */
function batchesOf(order, batch, keys, values) {
  const out = [];
  for (let at = 0; at < order.length; at += batch) {
    const ks = [];
    const vs = [];
    for (let j = at; j < Math.min(order.length, at + batch); j++) {
      ks.push(keys[order[j]]);
      vs.push(values[order[j]]);
    }
    out.push([ks, vs]);
  }
  return out;
}

/** Writes every batch; milliseconds. */
async function writeBatches(adapter, h, batches) {
  const t0 = performance.now();
  for (const [ks, vs] of batches) {
    const r = adapter.putBatch(h, ks, vs);
    if (isPromise(r)) await r;
  }
  return performance.now() - t0;
}

async function settle(adapter, h) {
  if (typeof adapter.settle !== 'function') return 0;
  const t0 = performance.now();
  await adapter.settle(h);
  return performance.now() - t0;
}

/** One row of results: `ops` operations per run, each run's milliseconds. */
function row(workload, unit, ops, runsMs, extra = {}) {
  const ms = median(runsMs);
  return { workload, unit, ops, runsMs, medianMs: ms, usPerOp: (ms * 1000) / ops, opsPerSec: ops / (ms / 1000), ...extra };
}

/**
 * Times `run` (which returns the checksum of what it read) once to warm up
 * and `reps` times, checking each checksum against `expected`.
 */
async function timed(engine, what, reps, expected, run) {
  const runs = [];
  for (let rep = -1; rep < reps; rep++) {
    const t0 = performance.now();
    let sum = run();
    if (isPromise(sum)) sum = await sum;
    const ms = performance.now() - t0;
    check(engine, `${what}${rep < 0 ? ' (warm-up)' : ` (run ${rep + 1})`}`, sum, expected);
    if (rep >= 0) runs.push(ms);
    await new Promise((r) => setTimeout(r, 0)); // the worker's event loop gets a turn between runs
  }
  return runs;
}

/** Loops of each read operation: return the sum of the checksums. */
async function getLoop(get, h, keys) {
  let sum = 0;
  for (let i = 0; i < keys.length; i++) {
    let c = get(h, keys[i]);
    if (isPromise(c)) c = await c;
    if (c < 0) return -1; // absent: the checksum check reports it
    sum += c;
  }
  return sum;
}

async function multiGetLoop(multiGet, h, batches) {
  let sum = 0;
  for (let i = 0; i < batches.length; i++) {
    let c = multiGet(h, batches[i]);
    if (isPromise(c)) c = await c;
    sum += c;
  }
  return sum;
}

async function scanLoop(scan, h, starts, n) {
  let sum = 0;
  for (let i = 0; i < starts.length; i++) {
    let c = scan(h, starts[i], n);
    if (isPromise(c)) c = await c;
    sum += c;
  }
  return sum;
}

/** The ways to do `op`: the adapter's variants, or the operation itself. */
function waysOf(adapter, op) {
  const v = adapter.variants?.[op];
  if (v && Object.keys(v).length > 0) return Object.entries(v);
  return [[undefined, adapter[op]]];
}

/** Rows for every way of a workload, and its main row (the fastest way). */
async function measureWays(adapter, workload, unit, ops, reps, expected, ways, runOne) {
  const rows = [];
  for (const [via, fn] of ways) {
    const runs = await timed(adapter.id, via ? `${workload} [${via}]` : workload, reps, expected, () => runOne(fn));
    rows.push(row(workload, unit, ops, runs, via ? { via } : {}));
  }
  if (rows.length === 1) return rows;
  const best = rows.reduce((a, b) => (b.medianMs < a.medianMs ? b : a));
  return [{ ...best, best: true, of: rows.map((r) => r.via) }, ...rows.map((r) => ({ ...r, variant: true }))];
}

/**
 * Runs the whole suite on `adapter` and leaves the populated database
 * closed (not destroyed: the persistence check reopens it). `progress(text)`
 * is told what runs. Returns the rows and what was measured besides.
 */
export async function runSuite(adapter, params, progress = () => {}) {
  const p = suiteParams(params);
  const { num, reps, name } = p;
  const id = adapter.id;
  const say = (m) => progress(`${id}: ${m}`);
  const started = performance.now();

  say(`generating ${num.toLocaleString('en')} keys and values`);
  const keys = new Array(num);
  const values = new Array(num);
  for (let i = 0; i < num; i++) {
    keys[i] = keyOf(i);
    values[i] = valueFor(i);
  }
  const prefix = checksumPrefix(num);
  const sumOf = (indexes) => indexes.reduce((s, i) => s + (prefix[i + 1] - prefix[i]), 0);

  const rows = [];
  const fills = {};
  let h;
  try {
    // Warm-up for the fills: a tenth of N, in random order, into a scratch database.
    say('warming up the write path');
    await adapter.destroy(name);
    h = await adapter.open(name);
    await writeBatches(adapter, h, batchesOf(permutation(Math.max(1, Math.floor(num / 10)), 5), p.batch, keys, values));
    await settle(adapter, h);
    await adapter.close(h);
    h = undefined;

    const orders = { fillseq: Uint32Array.from({ length: num }, (_, i) => i), fillrandom: permutation(num, 17) };
    for (const workload of ['fillseq', 'fillrandom']) {
      const batches = batchesOf(orders[workload], p.batch, keys, values);
      const runs = [];
      const settles = [];
      for (let rep = 0; rep < reps; rep++) {
        say(`${workload} ${rep + 1}/${reps}`);
        await adapter.destroy(name);
        h = await adapter.open(name);
        runs.push(await writeBatches(adapter, h, batches));
        settles.push(await settle(adapter, h));
        if (workload === 'fillseq' || rep < reps - 1) {
          await adapter.close(h);
          h = undefined;
        }
      }
      fills[workload] = { settleMs: settles, batches: batches.length };
      const settled = runs.map((ms, i) => ms + settles[i]);
      rows.push(row(workload, 'op', num, runs, { batch: p.batch, settleMs: settles, settleMedianMs: median(settles), settledMedianMs: median(settled) }));
    }

    // Reads, on the database fillrandom left (every key once, settled).
    say('checking values, misses and batches before timing reads');
    {
      const probe = [0, 1, num >> 1, num - 1];
      for (const i of probe) {
        let c = adapter.get(h, keys[i]);
        if (isPromise(c)) c = await c;
        check(id, `get of key ${i}`, c, expectedChecksum(i));
      }
      let miss = adapter.get(h, keyOf(num + 7));
      if (isPromise(miss)) miss = await miss;
      if (miss !== -1) throw new Error(`${id}: get of an absent key returned ${miss}, expected -1`);
      const mixed = [keyOf(num + 1), keys[3], keyOf(num + 2), keys[num - 2]];
      for (const [via, fn] of waysOf(adapter, 'multiGet')) {
        let c = fn(h, mixed);
        if (isPromise(c)) c = await c;
        check(id, `multiGet of 2 present and 2 absent keys${via ? ` [${via}]` : ''}`, c, expectedChecksum(3) + expectedChecksum(num - 2));
      }
    }

    const kr = rng(101);
    const readIdx = Array.from({ length: p.reads }, () => below(kr, num));
    const readKeys = readIdx.map((i) => keys[i]);
    say(`readrandom (${p.reads.toLocaleString('en')} gets)`);
    rows.push(...(await measureWays(adapter, 'readrandom', 'op', p.reads, reps, sumOf(readIdx), waysOf(adapter, 'get'), (fn) => getLoop(fn, h, readKeys))));

    const hr = rng(103);
    const hot = Math.max(1, Math.floor(num / 100));
    const hotIdx = Array.from({ length: p.reads }, () => (below(hr, 10) < 9 ? (below(hr, hot) * 100) % num : below(hr, num)));
    const hotKeys = hotIdx.map((i) => keys[i]);
    say(`readhot (${p.reads.toLocaleString('en')} gets, 90% on 1% of the keys)`);
    rows.push(...(await measureWays(adapter, 'readhot', 'op', p.reads, reps, sumOf(hotIdx), waysOf(adapter, 'get'), (fn) => getLoop(fn, h, hotKeys))));

    for (const stride of p.strides) {
      const mr = rng(211 + stride);
      const calls = Math.max(1, Math.floor(p.reads / p.multiBatch));
      const idx = [];
      const batches = [];
      for (let c = 0; c < calls; c++) {
        const first = below(mr, num - stride * (p.multiBatch - 1));
        const ks = [];
        const inBatch = new Set();
        for (let j = 0; j < p.multiBatch; j++) {
          let i = first + j * stride;
          if (stride === 0) {
            do i = below(mr, num);
            while (inBatch.has(i));
          }
          inBatch.add(i);
          idx.push(i);
          ks.push(keys[i]);
        }
        batches.push(ks);
      }
      const workload = `multireadrandom (batch ${p.multiBatch}, stride ${stride})`;
      say(workload);
      const ways = waysOf(adapter, 'multiGet');
      rows.push(...(await measureWays(adapter, workload, 'key', idx.length, reps, sumOf(idx), ways, (fn) => multiGetLoop(fn, h, batches))));
    }

    {
      const sr = rng(307);
      const n = p.seekNexts + 1;
      const starts = Array.from({ length: p.seeks }, () => below(sr, num - n + 1));
      const expected = starts.reduce((s, i) => s + (prefix[i + n] - prefix[i]), 0);
      const startKeys = starts.map((i) => keys[i]);
      const workload = `seekrandom (seek_nexts ${p.seekNexts})`;
      say(`${workload}, ${p.seeks.toLocaleString('en')} seeks`);
      rows.push(...(await measureWays(adapter, workload, 'seek', p.seeks, reps, expected, waysOf(adapter, 'scan'), (fn) => scanLoop(fn, h, startKeys, n))));
    }

    if (typeof adapter.count === 'function') {
      say(`count (all ${num.toLocaleString('en')} keys)`);
      const runs = [];
      for (let rep = -1; rep < reps; rep++) {
        // Counted again until 5 ms have passed: a small count takes less
        // than the browser's timer resolution (100 µs without cross-origin
        // isolation) and would measure 0.
        const t0 = performance.now();
        let calls = 0;
        let ms = 0;
        do {
          let c = adapter.count(h, keys[0], keys[num - 1]);
          if (isPromise(c)) c = await c;
          if (c !== num) throw new Error(`${id}: count gave ${c}, expected ${num}`);
          calls++;
          ms = performance.now() - t0;
        } while (ms < 5);
        if (rep >= 0) runs.push(ms / calls);
      }
      rows.push(row('count', 'count', 1, runs, { keys: num }));
    }

    if (typeof adapter.approximateSize === 'function') {
      const ar = rng(809);
      const ranges = Array.from({ length: p.sample }, () => {
        const a = below(ar, num);
        const b = below(ar, num);
        return [keys[Math.min(a, b)], keys[Math.max(a, b)]];
      });
      say(`approximateSize (${p.sample.toLocaleString('en')} random ranges)`);
      const runs = [];
      for (let rep = -1; rep < reps; rep++) {
        const t0 = performance.now();
        let total = 0;
        for (const [lo, hi] of ranges) {
          let n = adapter.approximateSize(h, lo, hi);
          if (isPromise(n)) n = await n;
          total += n;
        }
        const ms = performance.now() - t0;
        // (0 is right for data still in memtables: what tables hold is counted.)
        if (!Number.isFinite(total) || total < 0) throw new Error(`${id}: approximateSize of ${p.sample} ranges summed to ${total}`);
        if (rep >= 0) runs.push(ms);
      }
      rows.push(row('approximateSize', 'op', p.sample, runs));
    }

    if (typeof adapter.backup === 'function' && typeof adapter.copy === 'function') {
      // Both make a new database of every key (the fill's and nothing else
      // yet), durable and closed; each run's copy is removed after it.
      for (const [workload, fn] of [
        ['backup (export + import)', adapter.backup],
        ['copy (iterator + batches)', adapter.copy],
      ]) {
        say(`${workload} of ${num.toLocaleString('en')} keys`);
        const runs = [];
        for (let rep = -1; rep < reps; rep++) {
          const to = `${name}-copy-${rep + 1}`;
          await adapter.destroy?.(to);
          const t0 = performance.now();
          const n = await fn(h, to);
          const ms = performance.now() - t0;
          await adapter.destroy?.(to);
          if (n !== num) throw new Error(`${id}: ${workload} copied ${n} keys, expected ${num}`);
          if (rep >= 0) runs.push(ms);
        }
        rows.push(row(workload, 'key', num, runs));
      }
    }

    if (typeof adapter.transfer === 'function' || typeof adapter.bump === 'function' || typeof adapter.bumpMerge === 'function') {
      rows.push(...(await transactionWorkloads(adapter, h, p, say)));
    }

    // Reopen: close the populated database and open it again; a read after
    // each open checks that it is the same database. Not for an engine
    // whose database lives only while open (`reopens: false`).
    if (adapter.reopens !== false) {
      say('reopen');
      const reopenRuns = [];
      for (let rep = -1; rep < reps; rep++) {
        await adapter.close(h);
        h = undefined;
        const t0 = performance.now();
        h = await adapter.open(name);
        const ms = performance.now() - t0;
        let c = adapter.get(h, keys[num - 1]);
        if (isPromise(c)) c = await c;
        check(id, `get after reopen ${rep + 2}`, c, expectedChecksum(num - 1));
        if (rep >= 0) reopenRuns.push(ms);
      }
      rows.push(row('reopen', 'open', 1, reopenRuns));
    }
  } finally {
    if (h !== undefined) await adapter.close(h);
  }
  // The options as the adapter left them (some record what the engine reported when opened).
  return { engine: id, params: p, options: adapter.options, rows, fills, totalMs: performance.now() - started };
}

/** Reads every key of `keys` and checks their checksums against `values` (numbers, as u64 bytes). */
async function checkBalances(adapter, h, what, keys, values) {
  let expected = 0;
  for (const v of values) expected += checksum(u64Bytes(v));
  check(adapter.id, what, await getLoop(adapter.get, h, keys), expected);
}

/** The transaction workloads (see the top of this file), on the populated database. */
async function transactionWorkloads(adapter, h, p, say) {
  const rows = [];
  const accounts = Array.from({ length: p.accounts }, (_, i) => accountKey('acct/', i));
  const balances = new Array(p.accounts).fill(1_000_000);
  for (let at = 0; at < accounts.length; at += p.batch) {
    const ks = accounts.slice(at, at + p.batch);
    const r = adapter.putBatch(
      h,
      ks,
      ks.map(() => u64Bytes(1_000_000)),
    );
    if (isPromise(r)) await r;
  }
  const tr = rng(503);
  const transfersOf = () =>
    Array.from({ length: p.transfers }, () => {
      const from = below(tr, p.accounts);
      let to = below(tr, p.accounts - 1);
      if (to >= from) to++;
      return [from, to, 1 + below(tr, 100)];
    });
  const replay = (transfers) => {
    for (const [from, to, amount] of transfers) {
      balances[from] -= amount;
      balances[to] += amount;
    }
  };
  if (typeof adapter.transfer === 'function') {
    say(`transfer (${p.transfers.toLocaleString('en')} transactions over ${p.accounts.toLocaleString('en')} accounts)`);
    const runs = [];
    for (let rep = -1; rep < p.reps; rep++) {
      const transfers = transfersOf();
      const t0 = performance.now();
      for (const [from, to, amount] of transfers) {
        const r = adapter.transfer(h, accounts[from], accounts[to], amount);
        if (isPromise(r)) await r;
      }
      const ms = performance.now() - t0;
      replay(transfers);
      await checkBalances(adapter, h, `balances after transfer run ${rep + 2}`, accounts, balances);
      if (rep >= 0) runs.push(ms);
    }
    rows.push(row('transfer', 'txn', p.transfers, runs, { accounts: p.accounts }));
  }
  if (typeof adapter.transferConcurrently === 'function') {
    say('transfer, 2 callers at once');
    const runs = [];
    const conflicts = [];
    for (let rep = -1; rep < p.reps; rep++) {
      const transfers = transfersOf();
      const t0 = performance.now();
      const retried = await adapter.transferConcurrently(
        h,
        [0, 1].map((c) => transfers.filter((_, i) => i % 2 === c).map(([f, t, a]) => [accounts[f], accounts[t], a])),
      );
      const ms = performance.now() - t0;
      replay(transfers);
      await checkBalances(adapter, h, `balances after concurrent transfer run ${rep + 2}`, accounts, balances);
      if (rep >= 0) {
        runs.push(ms);
        conflicts.push(retried);
      }
    }
    rows.push(row('transfer, 2 callers', 'txn', p.transfers, runs, { accounts: p.accounts, conflictsRetried: conflicts }));
  }
  const counters = Array.from({ length: 100 }, (_, i) => accountKey('ctr/', i));
  const cr = rng(601);
  for (const [workload, bump] of [
    ['counter', adapter.bump],
    ['counter, merge', adapter.bumpMerge],
  ]) {
    if (typeof bump !== 'function') continue;
    say(`${workload} (${p.bumps.toLocaleString('en')} increments)`);
    const counts = new Array(counters.length).fill(0);
    const reset = adapter.putBatch(
      h,
      counters,
      counters.map(() => u64Bytes(0)),
    );
    if (isPromise(reset)) await reset;
    const runs = [];
    for (let rep = -1; rep < p.reps; rep++) {
      const which = Array.from({ length: p.bumps }, () => below(cr, counters.length));
      const t0 = performance.now();
      for (const i of which) {
        const r = bump(h, counters[i]);
        if (isPromise(r)) await r;
      }
      const ms = performance.now() - t0;
      for (const i of which) counts[i]++;
      await checkBalances(adapter, h, `counters after ${workload} run ${rep + 2}`, counters, counts);
      if (rep >= 0) runs.push(ms);
    }
    rows.push(row(workload, 'op', p.bumps, runs));
  }
  return rows;
}

/**
 * The persistence check, after a page reload (or in a new worker): opens
 * the database the suite left, reads `sample` random keys plus the first
 * and the last, checks every checksum and that a key past the end is
 * absent, and closes it.
 */
export async function verifyPersisted(adapter, params) {
  const p = suiteParams(params);
  const r = rng(401);
  const idx = [0, p.num - 1, ...Array.from({ length: p.sample }, () => below(r, p.num))];
  const t0 = performance.now();
  const h = await adapter.open(p.name);
  const openMs = performance.now() - t0;
  try {
    for (const i of idx) {
      let c = adapter.get(h, keyOf(i));
      if (isPromise(c)) c = await c;
      if (c === -1) throw new Error(`${adapter.id}: key ${i} is missing after the reload`);
      check(adapter.id, `key ${i} after the reload`, c, expectedChecksum(i));
    }
    let miss = adapter.get(h, keyOf(p.num + 3));
    if (isPromise(miss)) miss = await miss;
    if (miss !== -1) throw new Error(`${adapter.id}: a key never written reads as present after the reload`);
  } finally {
    await adapter.close(h);
  }
  return { engine: adapter.id, keysChecked: idx.length, openMs };
}
