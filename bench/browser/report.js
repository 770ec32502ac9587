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

/**
 * The suite's goals (the targets Silt is measured against; docs/bench/browser.md
 * reports them), each { workload, goal, value, met } where `value`
 * is the measured ratio (or milliseconds) and `met` is true, false, or
 * undefined when an engine it needs did not run.
 */
export function goals(results) {
  const out = [];
  const ratioGoal = (workload, other, min, label, strict = false) => {
    const r = speedup(results, workload, other);
    out.push({ workload, goal: label, value: r, unit: '×', met: r === undefined ? undefined : strict ? r > min : r >= min });
  };
  const workloads = workloadsOf(results);
  for (const w of workloads) {
    if (w === 'readrandom') {
      ratioGoal(w, 'sqlite', 10, 'Silt ≥ 10× faster than SQLite-wasm');
      ratioGoal(w, 'indexeddb', 100, 'Silt ≥ 100× faster than IndexedDB');
    }
    if (isMultiGet(w) && w.includes('batch 32')) ratioGoal(w, 'sqlite', 5, "Silt ≥ 5× faster per key than SQLite-wasm's best way");
    if (w === 'fillseq' || w === 'fillrandom') ratioGoal(w, 'sqlite', 3, "Silt ≥ 3× SQLite-wasm's ops/s");
    if (w.startsWith('seekrandom') && w.includes('seek_nexts 100)')) ratioGoal(w, 'sqlite', 5, 'Silt ≥ 5× faster than SQLite-wasm');
    if (results.leveldb) {
      if (isMultiGet(w)) ratioGoal(w, 'leveldb', 1, 'Silt beats LevelDB-in-wasm', true);
      else ratioGoal(w, 'leveldb', 1, 'Silt at least matches LevelDB-in-wasm');
    }
    if (w === 'reopen') {
      const s = mainRow(results[SILT], w);
      const num = results[SILT]?.params.num;
      out.push({
        workload: w,
        goal: `Silt reopens a ${num?.toLocaleString('en') ?? '?'}-key database in < 50 ms${num !== undefined && num < 100_000 ? ' (the goal is for 100,000 keys)' : ''}`,
        value: s?.medianMs,
        unit: 'ms',
        met: s === undefined ? undefined : s.medianMs < 50,
      });
    }
  }
  return out;
}

/** A goal as text: "met (12.3×)", "MISSED (4.1×)", "n/a (engine not run)". */
export function goalText(g) {
  if (g.met === undefined) return 'n/a (engine not run)';
  const v = g.unit === 'ms' ? `${g.value.toFixed(1)} ms` : `${g.value >= 100 ? g.value.toFixed(0) : g.value.toFixed(2)}×`;
  return `${g.met ? 'met' : 'MISSED'} (${v})`;
}

/** A time per operation for tables: µs with 3 significant digits; reopen in ms. */
export function formatCell(row) {
  if (!row) return '–';
  if (row.unit === 'open') return `${row.medianMs.toFixed(1)} ms`;
  const us = row.usPerOp;
  return `${us >= 100 ? us.toFixed(0) : us >= 10 ? us.toFixed(1) : us >= 1 ? us.toFixed(2) : us.toFixed(3)} µs`;
}

/** What one operation is, for table headings. */
export const UNIT_TEXT = { op: 'per op', key: 'per key', seek: 'per seek', open: 'per open' };
