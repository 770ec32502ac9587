// The "Benchmarks" view of the demo: runs the browser suite live (bench/browser,
// served at /bench/), one dedicated worker per engine, and shows a table,
// the goals, bar charts and bundle sizes. `window.bench` is the machinery
// (bench/browser/runner.js) for bench/run/suite.mjs and
// tests/e2e/bench.spec.ts, which reload the page between the suite and the
// persistence check.
import { formatCell, goals, goalText, mainRow, SILT, speedup, UNIT_TEXT, variantRows, workloadsOf } from '/bench/report.js';
import { bundleSizes, describe, destroy, listEngines, runEngine, runScenario, sortEngines, verify } from '/bench/runner.js';

const $ = (id) => document.getElementById(id);

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
    tr(
      th('workload'),
      th('unit'),
      ...ids.map((id) => th(labelOf(id), 'num')),
      ...(run.results[SILT] ? others.map((id) => th(`Silt vs ${labelOf(id)}`, 'num')) : []),
    ),
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
  $('persistence').tBodies[0].replaceChildren(
    ...Object.entries(run.persistence).map(([id, p]) => tr(td(labelOf(id)), td(p.text, p.ok === false ? 'missed' : ''))),
  );
  $('bundles').tBodies[0].replaceChildren(
    ...Object.entries(run.bundles).map(([id, b]) =>
      tr(
        td(labelOf(id)),
        td(state.engines.find((e) => e.id === id)?.storage ?? ''),
        td(String(b.files), 'num'),
        td(b.raw.toLocaleString('en'), 'num'),
        td(b.gzip.toLocaleString('en'), 'num'),
      ),
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
  const bases = await Promise.all(ids.map(describe));
  // Each engine's other configurations (library defaults, ...): listed,
  // not chosen by default.
  const configs = await Promise.all(bases.flatMap((e) => (e.available ? (e.configs ?? []) : []).map((c) => describe(`${e.id}:${c}`))));
  const byId = new Map([...bases, ...configs].map((e) => [e.id, e]));
  state.engines = sortEngines([...byId.keys()]).map((id) => byId.get(id));
  const box = $('engines');
  for (const e of state.engines) {
    const label = document.createElement('label');
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.value = e.id;
    input.checked = e.available && !e.id.includes(':');
    input.disabled = !e.available;
    label.append(input, ` ${e.label ?? e.id}`);
    if (!e.available) label.title = e.reason;
    box.append(label);
    if (!e.available) log(`${e.id}: unavailable: ${e.reason}`);
  }
  const q = new URL(location.href).searchParams;
  for (const [k, id] of [
    ['num', 'num'],
    ['reads', 'reads'],
    ['seeks', 'seeks'],
    ['seek-nexts', 'seek-nexts'],
    ['reps', 'reps'],
  ]) {
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
  runScenario: (name, p) => runScenario(name, p, (text) => console.log(`[bench] ${text}`)),
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
