// Reading a run's results: the main row of each workload per engine, ratios
// of Silt against each other engine, and the suite's goals. Pure
// functions, shared by the benchmark page (demo/benchmarks/main.js) and
// bench/run/suite.mjs (which imports this file from Node).

/** The Silt engine's id: the one every ratio compares against. */
export const SILT = 'silt';

/** The workloads in the order tables and charts show them. */
export function workloadsOf(results) {
  const seen = [];
  for (const r of Object.values(results)) {
    for (const row of r.rows) if (!row.variant && !seen.includes(row.workload)) seen.push(row.workload);
  }
  return seen;
}

/** The main row of `workload` for one engine's result (the fastest way if it had several). */
export function mainRow(result, workload) {
  return result?.rows.find((r) => r.workload === workload && !r.variant);
}

/** The rows of the other ways an engine did a workload (variants), if any. */
export function variantRows(result) {
  return result?.rows.filter((r) => r.variant) ?? [];
}

/**
 * How many times faster Silt is than `other` on `workload` (time per
 * operation, so for fills the same as the ratio of ops/s), or undefined.
 */
export function speedup(results, workload, other) {
  const s = mainRow(results[SILT], workload);
  const o = mainRow(results[other], workload);
  if (!s || !o) return undefined;
  return o.usPerOp / s.usPerOp;
}

const isMultiGet = (w) => w.startsWith('multireadrandom');

/** A row of `result` by workload and way (`via`; undefined: the main row). */
function rowOf(result, workload, via) {
  return via === undefined ? mainRow(result, workload) : result?.rows.find((r) => r.workload === workload && r.via === via);
}

/** The fastest main row of `workload` among the engines `ids` that ran (an engine's best configuration). */
function bestOf(results, ids, workload) {
  return ids
    .map((id) => [id, mainRow(results[id], workload)])
    .filter(([, r]) => r)
    .reduce((a, b) => (a === undefined || b[1].usPerOp < a[1].usPerOp ? b : a), undefined);
}

/**
 * The suite's goals (issue 20's targets; docs/bench/browser.md reports
 * them), each { workload, goal, value, unit, met } where `value` is the
 * measured time, ratio or size and `met` is true, false, or undefined when
 * an engine or row it needs did not run. `bundles` (engine id → { gzip })
 * adds the size goal.
 */
export function goals(results, bundles = {}) {
  const out = [];
  const num = results[SILT]?.params.num ?? Object.values(results)[0]?.params.num;
  const big = num !== undefined && num >= 1_000_000;
  const push = (workload, goal, value, unit, met) => out.push({ workload, goal, value, unit, met: value === undefined ? undefined : met });
  /** Silt's row at most `max` µs. */
  const atMost = (workload, via, max, label, id = SILT) => {
    const r = rowOf(results[id], workload, via);
    push(workload, label, r?.usPerOp, 'µs', r !== undefined && r.usPerOp <= max);
  };
  /** Silt (tuned, main row) at least `min` times faster than `other`'s main row. */
  const faster = (workload, other, min, label) => {
    const r = speedup(results, workload, other);
    push(workload, label, r, '×', r >= min);
  };
  /** Silt's defaults within `max`× of the tuned row (the same way). */
  const defaultsWithin = (workload, via, max, label) => {
    const t = rowOf(results[SILT], workload, via);
    const d = rowOf(results['silt:defaults'], workload, via);
    push(workload, label, t && d ? d.usPerOp / t.usPerOp : undefined, '× of tuned', t && d && d.usPerOp / t.usPerOp <= max);
  };
  /** The row cache against none, both Silt in a worker with a view per get. */
  const rowCache = (workload, label, ok) => {
    const t = rowOf(results[SILT], workload, 'view');
    const rc = rowOf(results['silt:rowcache'], workload, 'view');
    const ratio = t && rc ? t.usPerOp / rc.usPerOp : undefined;
    push(workload, label, ratio, '× of no row cache', ratio !== undefined && ok(ratio));
  };
  /** Read-triggered compaction (the default) against none, a view per get. */
  const readCompaction = (workload, label, ok) => {
    const t = rowOf(results[SILT], workload, 'view');
    const off = rowOf(results['silt:noreadcompaction'], workload, 'view');
    const ratio = t && off ? off.usPerOp / t.usPerOp : undefined;
    push(workload, label, ratio, '× of none', ratio !== undefined && ok(ratio));
  };
  /** An engine's fill time counting its background work (to settle()), in ms. */
  const settledMs = (id, workload) => {
    const r = mainRow(results[id], workload);
    return r === undefined ? undefined : (r.settledMedianMs ?? r.medianMs);
  };
  for (const w of workloadsOf(results)) {
    if (w === 'fillseq' || w === 'fillrandom') {
      // Issue 19: fills counting the flushes and compactions they leave.
      const s = settledMs(SILT, w);
      const l = settledMs('leveldb', w);
      push(w, 'Silt ≥ 1.2× LevelDB-in-wasm, background work included', s && l ? l / s : undefined, '×', s && l && l / s >= 1.2);
      const q = ['sqlite', 'sqlite:exclusive', 'sqlite:defaults'].map((id) => settledMs(id, w)).filter((x) => x !== undefined);
      const best = q.length > 0 ? Math.min(...q) : undefined;
      push(w, "Silt ≥ 3× SQLite-wasm's best, background work included", s && best ? best / s : undefined, '×', s && best && best / s >= 3);
    }
    // The row cache's goal on readhot only: the suite's readrandom reads the
    // same 10,000 keys in every run, which a row cache learns (its cost on
    // uniform reads: bench/run/read-ab.mjs, docs/bench/row-cache.md).
    if (w === 'readhot' && results['silt:rowcache']) rowCache(w, 'with the row cache ≥ 2× faster than without', (r) => r >= 2);
    if (w === 'readrandom' && results['silt:noreadcompaction']) {
      readCompaction(w, 'with read-triggered compaction ≥ 1.3× faster than without', (r) => r >= 1.3);
    }
    if (w === 'readrandom') {
      if (!big) {
        atMost(w, 'view', 1.0, 'getPinned (a view) ≤ 1.0 µs');
        atMost(w, 'owned', 1.3, 'get (owned) ≤ 1.3 µs');
        defaultsWithin(w, 'view', 1.2, 'getPinned (view) with default options ≤ 1.2× tuned');
        defaultsWithin(w, 'owned', 1.2, 'get (owned) with default options ≤ 1.2× tuned');
        faster(w, 'leveldb', 1.5, 'Silt ≥ 1.5× LevelDB-in-wasm (values summed in C)');
        faster(w, 'sqlite:exclusive', 7, 'Silt ≥ 7× SQLite-wasm (exclusive locking)');
      } else {
        atMost(w, 'view', 4.0, 'get with default options ≤ 4 µs (1M keys)', 'silt:defaults');
        const d = rowOf(results['silt:defaults'], w, 'view');
        const q = mainRow(results['sqlite:exclusive'], w);
        push(
          w,
          'Silt with default options ≥ 3× SQLite-wasm (exclusive)',
          d && q ? q.usPerOp / d.usPerOp : undefined,
          '×',
          d && q && q.usPerOp / d.usPerOp >= 3,
        );
      }
    }
    if (isMultiGet(w) && w.includes('batch 32')) {
      if (w.endsWith('stride 0)')) atMost(w, undefined, 1.0, 'multiGet of 32 random keys ≤ 1.0 µs per key');
      if (w.endsWith('stride 16)')) atMost(w, undefined, 0.6, 'multiGet at stride 16 ≤ 0.6 µs per key');
      const sqlite = bestOf(results, ['sqlite', 'sqlite:exclusive', 'sqlite:defaults'], w);
      const s = mainRow(results[SILT], w);
      push(
        w,
        "Silt ≥ 2× SQLite-wasm's best way",
        sqlite && s ? sqlite[1].usPerOp / s.usPerOp : undefined,
        '×',
        sqlite && s && sqlite[1].usPerOp / s.usPerOp >= 2,
      );
      faster(w, 'leveldb', 1.3, 'Silt ≥ 1.3× LevelDB-in-wasm');
    }
    if (w.startsWith('seekrandom') && w.includes('seek_nexts 100)')) {
      if (!big) atMost(w, undefined, 20, 'seek + 100, every key and value delivered to JavaScript, ≤ 20 µs');
      faster(w, 'leveldb', 1.3, 'Silt ≥ 1.3× LevelDB-in-wasm (values summed in C)');
    }
    if (w === 'transfer') {
      // Issue 15: IndexedDB readwrite transactions and SQLite's BEGIN IMMEDIATE … COMMIT.
      faster(w, 'indexeddb', 5, 'Silt ≥ 5× IndexedDB readwrite transactions');
      const sqlite = bestOf(results, ['sqlite', 'sqlite:exclusive', 'sqlite:defaults'], w);
      const s = mainRow(results[SILT], w);
      push(
        w,
        "Silt ≥ 2× SQLite-wasm's best (BEGIN IMMEDIATE … COMMIT)",
        sqlite && s ? sqlite[1].usPerOp / s.usPerOp : undefined,
        '×',
        sqlite && s && sqlite[1].usPerOp / s.usPerOp >= 2,
      );
    }
    if (w === 'count') {
      // Issue 16: count() of the 100,000-key database against IndexedDB's.
      faster(w, 'indexeddb', 5, "Silt's count ≥ 5× IndexedDB's count()");
    }
    if (w === 'approximateSize') atMost(w, undefined, 50, 'approximateSize of any range ≤ 50 µs');
    if (w === 'backup (export + import)') {
      const c = mainRow(results[SILT], 'copy (iterator + batches)');
      const b = mainRow(results[SILT], w);
      push(
        w,
        'export + import ≥ 3× reading out with an iterator and writing back with batches',
        c && b ? c.usPerOp / b.usPerOp : undefined,
        '×',
        c && b && c.usPerOp / b.usPerOp >= 3,
      );
    }
    if (w === 'counter, merge') {
      const u = mainRow(results[SILT], 'counter');
      const m = mainRow(results[SILT], w);
      push(w, 'a counter bumped by merge ≥ 3× the same bump as update', u && m ? u.usPerOp / m.usPerOp : undefined, '×', u && m && u.usPerOp / m.usPerOp >= 3);
    }
    if (w === 'reopen') {
      const r = mainRow(results[SILT], w);
      const max = big ? 20 : 5;
      push(w, `reopen of the ${num?.toLocaleString('en') ?? '?'}-key database ≤ ${max} ms`, r?.medianMs, 'ms', r !== undefined && r.medianMs <= max);
    }
  }
  const b = bundles[SILT];
  if (b) out.push({ workload: 'bundle', goal: 'shipped wasm + JS ≤ 250 KB gzipped', value: b.gzip / 1000, unit: 'KB', met: b.gzip <= 250_000 });
  return out;
}

/** A goal as text: "met (12.3×)", "MISSED (4.1×)", "n/a (engine not run)". */
export function goalText(g) {
  if (g.met === undefined) return 'n/a (engine not run)';
  const n = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
  const v = g.unit === 'ms' ? `${g.value.toFixed(1)} ms` : g.unit === '×' ? `${n(g.value)}×` : `${n(g.value)} ${g.unit}`;
  return `${g.met ? 'met' : 'MISSED'} (${v})`;
}

/** A time per operation for tables: µs with 3 significant digits; reopen in ms. */
export function formatCell(row) {
  if (!row) return '–';
  if (row.unit === 'open' || row.unit === 'count') return `${row.medianMs.toFixed(row.medianMs >= 10 ? 1 : 2)} ms`;
  const us = row.usPerOp;
  return `${us >= 100 ? us.toFixed(0) : us >= 10 ? us.toFixed(1) : us >= 1 ? us.toFixed(2) : us.toFixed(3)} µs`;
}

/** What one operation is, for table headings. */
export const UNIT_TEXT = { op: 'per op', key: 'per key', seek: 'per seek', open: 'per open', txn: 'per transaction', count: 'per count' };
