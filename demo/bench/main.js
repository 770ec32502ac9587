// The "Benchmarks" view: runs the suite live, one dedicated worker per
// engine (worker.js), and shows a table, the goals, bar charts and bundle
// sizes. `window.bench` is the same machinery for scripts/bench.mjs and
// tests/e2e/bench.spec.ts (which reload the page between the suite and the
// persistence check).
import { formatCell, goals, goalText, mainRow, SILT, speedup, UNIT_TEXT, variantRows, workloadsOf } from './report.js';

const $ = (id) => document.getElementById(id);
/** The order engines are shown in; engines not named here follow, by id. */
const ORDER = ['silt', 'indexeddb', 'sqlite', 'leveldb'];
const dbName = (id) => `bench-${id}`;

/** One engine's worker: requests as Promises, progress to a callback. */
class EngineWorker {
  #worker;
  #next = 1;
  #pending = new Map();
  #onProgress;

  constructor(id, onProgress = () => {}) {
    this.id = id;
    this.#onProgress = onProgress;
    this.#worker = new Worker(`/bench/worker.js?engine=${encodeURIComponent(id)}`, { type: 'module' });
    this.#worker.onmessage = (e) => {
      if (e.data.progress !== undefined) return this.#onProgress(e.data.progress);
      const p = this.#pending.get(e.data.id);
      if (!p) return;
      this.#pending.delete(e.data.id);
      if (e.data.ok) p.resolve(e.data.value);
      else p.reject(Object.assign(new Error(e.data.error.message), { name: e.data.error.name, code: e.data.error.code, workerStack: e.data.error.stack }));
    };
    // A module that fails to load or an uncaught error: every request fails with it.
    this.#worker.onerror = (e) => {
      e.preventDefault();
      const err = new Error(`the worker of engine ${id} failed: ${e.message || 'could not load worker.js or a module it imports'}`);
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    };
  }

  call(cmd, args) {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, cmd, args });
    });
  }

  terminate() {
    this.#worker.terminate();
    const err = new Error(`the worker of engine ${this.id} was terminated`);
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }
}

/** Runs `f` with a fresh worker for engine `id`, terminated afterwards. */
async function withWorker(id, f, onProgress) {
  const w = new EngineWorker(id, onProgress);
  try {
    return await f(w);
  } finally {
    w.terminate();
  }
}

/** The ids of the engine adapters the server has (demo/bench/engines/*.js). */
async function listEngines() {
  const res = await fetch('/bench/engines/');
  if (!res.ok) throw new Error(`GET /bench/engines/ answered ${res.status}`);
  const ids = await res.json();
  const rank = (id) => (ORDER.includes(id) ? ORDER.indexOf(id) : ORDER.length);
  return ids.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/**
 * What engine `id` is, and whether it can run: { id, available, reason?,
 * label, storage, options, files, persistent }. An adapter whose module
 * does not load, or whose shipped files the server lacks (a vendor build
 * not built), is unavailable, with the reason.
 */
async function describe(id) {
  try {
    const d = await withWorker(id, (w) => w.call('describe'));
    if (d.missing.length > 0) {
      return { ...d, available: false, reason: `its files are not built or not served: ${d.missing.join(', ')}` };
    }
    return { ...d, available: true };
  } catch (e) {
    return { id, available: false, reason: e.message };
  }
}

/** Runs the suite for one engine in a fresh worker; the database is left in place. */
function runEngine(id, params, onProgress) {
  return withWorker(id, (w) => w.call('suite', { name: dbName(id), ...params }), onProgress);
}

/** Reopens what the suite left, in a fresh worker, and checks a sample of keys. */
function verify(id, params) {
  return withWorker(id, (w) => w.call('verify', { name: dbName(id), ...params }));
}

function destroy(id) {
  return withWorker(id, (w) => w.call('destroy', { name: dbName(id) }));
}

async function gzipSize(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream('gzip'));
  return (await new Response(stream).arrayBuffer()).byteLength;
}

/** Raw and gzipped bytes of the files an engine ships (CompressionStream's gzip). */
async function bundleSizes(files) {
  let raw = 0;
  let gzip = 0;
  for (const f of files) {
    const res = await fetch(f);
    if (!res.ok) throw new Error(`GET ${f} answered ${res.status}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    raw += bytes.length;
    gzip += await gzipSize(bytes);
  }
  return { files: files.length, raw, gzip };
}

// ---------------------------------------------------------------------------
// The view.

const state = { engines: [], run: undefined };
let charts = [];

const log = (m) => {
  $('log').textContent += `${m}\n`;
  $('log').scrollTop = $('log').scrollHeight;
  console.log(`[bench] ${m}`);
};

function showError(e) {
  $('error').hidden = false;
  $('error').textContent = String(e?.message ?? e);
}

function td(text, cls) {
  const c = document.createElement('td');
  c.textContent = text;
  if (cls) c.className = cls;
  return c;
}

function th(text, cls) {
  const c = document.createElement('th');
  c.textContent = text;
  if (cls) c.className = cls;
  return c;
}

function tr(...cells) {
  const r = document.createElement('tr');
  r.append(...cells);
  return r;
}

const labelOf = (id) => state.engines.find((e) => e.id === id)?.label ?? id;

function renderTables(run) {
  const ids = Object.keys(run.results);
  const others = ids.filter((id) => id !== SILT);
  const head = $('results').tHead;
  head.replaceChildren(
    tr(th('workload'), th('unit'), ...ids.map((id) => th(labelOf(id), 'num')), ...(run.results[SILT] ? others.map((id) => th(`Silt vs ${labelOf(id)}`, 'num')) : [])),
  );
  const body = $('results').tBodies[0];
  body.replaceChildren(
    ...workloadsOf(run.results).map((w) => {
      const unit = ids.map((id) => mainRow(run.results[id], w)).find(Boolean)?.unit;
      const cells = ids.map((id) => {
        const r = mainRow(run.results[id], w);
        return td(r?.via ? `${formatCell(r)} (${r.via})` : formatCell(r), 'num');
      });
      const ratios = run.results[SILT]
        ? others.map((id) => {
            const x = speedup(run.results, w, id);
            return td(x === undefined ? '–' : `${x >= 100 ? x.toFixed(0) : x.toFixed(2)}×`, 'num');
          })
        : [];
      return tr(td(w), td(UNIT_TEXT[unit] ?? ''), ...cells, ...ratios);
    }),
  );
  $('goals').tBodies[0].replaceChildren(
    ...goals(run.results).map((g) => tr(td(g.workload), td(g.goal), td(goalText(g), g.met === false ? 'missed' : g.met ? 'met' : ''))),
  );
  $('variants').tBodies[0].replaceChildren(
    ...ids.flatMap((id) => variantRows(run.results[id]).map((r) => tr(td(labelOf(id)), td(r.workload), td(r.via), td(formatCell(r), 'num')))),
  );
  $('persistence').tBodies[0].replaceChildren(...Object.entries(run.persistence).map(([id, p]) => tr(td(labelOf(id)), td(p.text, p.ok === false ? 'missed' : ''))));
  $('bundles').tBodies[0].replaceChildren(
    ...Object.entries(run.bundles).map(([id, b]) =>
      tr(td(labelOf(id)), td(state.engines.find((e) => e.id === id)?.storage ?? ''), td(String(b.files), 'num'), td(b.raw.toLocaleString('en'), 'num'), td(b.gzip.toLocaleString('en'), 'num')),
    ),
  );
}

const COLORS = { silt: '#2a6f4e', indexeddb: '#b5651d', sqlite: '#3b5b92', leveldb: '#8a3b78' };

function renderCharts(run) {
  for (const c of charts) c.destroy();
  charts = [];
  const box = $('charts');
  box.replaceChildren();
  if (typeof globalThis.Chart !== 'function') {
    box.textContent = 'Chart.js did not load (/vendor/chart/chart.umd.min.js): the tables above have every figure.';
    return;
  }
  const ids = Object.keys(run.results);
  for (const w of workloadsOf(run.results)) {
    const rows = ids.map((id) => [id, mainRow(run.results[id], w)]).filter(([, r]) => r);
    const values = rows.map(([, r]) => (r.unit === 'open' ? r.medianMs : r.usPerOp));
    const unit = rows[0][1].unit === 'open' ? 'ms per open' : `µs ${UNIT_TEXT[rows[0][1].unit]}`;
    const log = Math.max(...values) / Math.min(...values) > 20;
    const fig = document.createElement('figure');
    const cap = document.createElement('figcaption');
    cap.textContent = `${w}: ${unit}${log ? ' (log scale)' : ''}`;
    const canvas = document.createElement('canvas');
    fig.append(cap, canvas);
    box.append(fig);
    charts.push(
      new globalThis.Chart(canvas, {
        type: 'bar',
        data: {
          labels: rows.map(([id]) => labelOf(id)),
          datasets: [{ label: unit, data: values, backgroundColor: rows.map(([id]) => COLORS[id] ?? '#777') }],
        },
        options: {
          animation: false,
          maintainAspectRatio: false,
          plugins: { legend: { display: false } },
          scales: { y: { type: log ? 'logarithmic' : 'linear', title: { display: true, text: unit } } },
        },
      }),
    );
  }
}

function params() {
  const n = (id) => Number($(id).value);
  return { num: n('num'), reads: n('reads'), seeks: n('seeks'), seekNexts: n('seek-nexts'), reps: n('reps') };
}

/**
 * The live run: for each chosen engine, the suite in a fresh worker, then a
 * persistence check in another worker (the first terminated, as a reload
 * would), then the database is deleted. Results render as they arrive.
 */
async function run(p, ids) {
  const r = { params: p, results: {}, persistence: {}, bundles: {}, skipped: {}, errors: {} };
  state.run = r;
  document.body.dataset.state = 'running';
  $('run').disabled = true;
  $('error').hidden = true;
  $('log').textContent = '';
  const steps = ids.length * 3;
  let done = 0;
  const step = () => ($('progress').value = ++done / steps);
  $('progress').value = 0;
  try {
    for (const id of ids) {
      const e = state.engines.find((x) => x.id === id);
      if (!e?.available) {
        r.skipped[id] = e?.reason ?? 'unknown engine';
        log(`${id}: skipped: ${r.skipped[id]}`);
        done += 3;
        continue;
      }
      r.bundles[id] = await bundleSizes(e.files);
      try {
        $('status').textContent = `${e.label}: running…`;
        r.results[id] = await runEngine(id, p, (text) => {
          $('status').textContent = text;
          log(text);
        });
        step();
        if (e.persistent) {
          const v = await verify(id, p);
          r.persistence[id] = { ok: true, text: `ok: ${v.keysChecked.toLocaleString('en')} keys read back (open ${v.openMs.toFixed(1)} ms)` };
        } else {
          r.persistence[id] = { ok: undefined, text: `n/a (${e.storage})` };
        }
        step();
      } catch (err) {
        r.errors[id] = err.message;
        r.persistence[id] ??= { ok: false, text: `FAILED: ${err.message}` };
        log(`${id}: FAILED: ${err.message}`);
        showError(`${e.label}: ${err.message}`);
      } finally {
        await destroy(id).catch((err) => log(`${id}: could not delete its database: ${err.message}`));
        step();
      }
      renderTables(r);
      renderCharts(r);
    }
    $('status').textContent = Object.keys(r.errors).length ? `Done, with failures: ${Object.keys(r.errors).join(', ')}` : 'Done.';
    document.body.dataset.state = Object.keys(r.errors).length ? 'failed' : 'done';
  } catch (err) {
    showError(err);
    document.body.dataset.state = 'failed';
  } finally {
    $('run').disabled = false;
  }
  return r;
}

async function start() {
  const ids = await listEngines();
  state.engines = await Promise.all(ids.map(describe));
  const box = $('engines');
  for (const e of state.engines) {
    const label = document.createElement('label');
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.value = e.id;
    input.checked = e.available;
    input.disabled = !e.available;
    label.append(input, ` ${e.label ?? e.id}`);
    if (!e.available) label.title = e.reason;
    box.append(label);
    if (!e.available) log(`${e.id}: unavailable: ${e.reason}`);
  }
  const q = new URL(location.href).searchParams;
  for (const [k, id] of [['num', 'num'], ['reads', 'reads'], ['seeks', 'seeks'], ['seek-nexts', 'seek-nexts'], ['reps', 'reps']]) {
    if (q.has(k)) $(id).value = q.get(k);
  }
  $('form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const chosen = [...box.querySelectorAll('input:checked')].map((i) => i.value);
    run(params(), chosen);
  });
  $('run').disabled = false;
  $('status').textContent = `Ready: ${state.engines.filter((e) => e.available).length} of ${state.engines.length} engines available.`;
  document.body.dataset.state = 'ready';
}

window.bench = {
  listEngines,
  describe,
  runEngine: (id, p) => runEngine(id, p, (text) => console.log(`[bench] ${text}`)),
  verify,
  destroy,
  bundleSizes,
  run,
  get engines() {
    return state.engines;
  },
  get lastRun() {
    return state.run;
  },
};

start().catch((e) => {
  showError(e);
  document.body.dataset.state = 'error';
});
