#!/usr/bin/env node
// `npm run bench`: the browser suite. Silt beside raw IndexedDB, SQLite's
// official wasm build on OPFS (opfs-sahpool) and every other engine adapter
// in bench/browser/engines/ (LevelDB compiled with emscripten, once
// `npm run bench:setup` has built it), in Debian's Chromium.
//
// Serves the demo (demo/server.mjs, on 127.0.0.1, a free port), launches
// /usr/bin/chromium through playwright-core with a kept temporary profile,
// opens the demo's Benchmarks page (/benchmarks/), runs each engine's suite in
// its own dedicated worker (the workloads are in bench/browser/workloads.js,
// timed inside the worker), reloads the page and reopens every persistent
// engine's database to check a sample of keys, measures each engine's
// shipped JS + wasm (raw and gzip -9, from the served files), prints a table
// and writes
//
//   <out>/browser.md     the table, ratios, goals, options, bundle sizes, machine, browser, date
//   <out>/browser.json   JSON lines: a header, then one line per engine × workload (and goals, persistence)
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg) and npm ci (the demo's
// dependencies). Never downloads a browser. A benchmark, not a test: it may
// take minutes; a watchdog ends it (--timeout-min).
//
//   node bench/run/suite.mjs [--num 100000] [--reads 10000] [--seeks 1000] [--seek-nexts 100] [--reps 5]
//                            [--engines silt,indexeddb,sqlite,leveldb] [--out docs/bench] [--timeout-min 30]
//   node bench/run/suite.mjs --render     (browser.md and browser-1000000.md again from their JSON)
//
// Then, unless --skip-tabs, the tabs scenario (bench/run/tabs.mjs, docs/bench/tabs.md) and live
// queries across tabs (bench/run/live.mjs, docs/bench/live.md), and unless
// --skip-page, the page path (bench/run/page.mjs, docs/bench/page.md: a page's calls from its main
// thread beside the floor, IndexedDB and SQLite-wasm, and cold starts), and unless --skip-bytes,
// storage bytes (bench/run/bytes.mjs, docs/bench/bytes.md: one JSON data set in Silt with and without
// a compression dictionary, IndexedDB and SQLite-wasm).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { formatCell, goals, goalText, mainRow, SILT, speedup, UNIT_TEXT, variantRows, workloadsOf } from '../browser/report.js';
import { list, parseArgs, runMain } from './args.mjs';
import { withBenchPage, waitReady } from './browser-session.mjs';
import { sortEngines } from '../browser/runner.js';
import { metaMarkdown, startRun } from './machine.mjs';

const USAGE =
  'usage: node bench/run/suite.mjs [--num N] [--reads N] [--seeks N] [--seek-nexts N] [--reps N] [--engines a,b,c] [--out DIR] [--timeout-min M] [--render] [--skip-tabs] [--skip-page] [--skip-bytes] [--browser chromium|firefox]';
const FLAGS = {
  num: 100_000,
  reads: 10_000,
  seeks: 1_000,
  'seek-nexts': 100,
  reps: 5,
  engines: 'silt,silt:defaults,silt:connect,indexeddb,sqlite,sqlite:exclusive,sqlite:defaults,leveldb,leveldb:js,leveldb:defaults',
  out: 'docs/bench',
  'timeout-min': 30,
  render: false,
  'skip-tabs': false,
  'skip-page': false,
  'skip-bytes': false,
  browser: 'chromium',
};

const log = (m) => process.stderr.write(`[bench] ${m}\n`);

/** Raw and gzip -9 bytes of the files an engine ships, fetched from the server. */
async function bundle(url, files) {
  let raw = 0;
  let gzip = 0;
  for (const f of files) {
    const res = await fetch(new URL(f, url));
    if (!res.ok) throw new Error(`GET ${f} answered ${res.status}`);
    const bytes = Buffer.from(await res.arrayBuffer());
    raw += bytes.length;
    gzip += gzipSync(bytes, { level: 9 }).length;
  }
  return { files: files.length, raw, gzip, list: files };
}

async function main() {
  const o = parseArgs(process.argv.slice(2), FLAGS, USAGE);
  if (o.render) {
    // browser.md again from browser.json (and browser-1000000.json, and the
    // findings), without running anything.
    for (const base of ['browser-1000000', 'browser']) {
      const run = runFromJson(join(o.out, `${base}.json`));
      if (!run) continue;
      writeFileSync(join(o.out, `${base}.md`), markdown(run, o.out));
      log(`wrote ${join(o.out, `${base}.md`)} from ${join(o.out, `${base}.json`)}`);
    }
    return;
  }
  const params = { num: o.num, reads: o.reads, seeks: o.seeks, seekNexts: o['seek-nexts'], reps: o.reps };
  const which = o.browser;
  if (which !== 'chromium' && which !== 'firefox') throw new Error(`--browser must be chromium or firefox, got ${JSON.stringify(which)}\n${USAGE}`);
  const wanted = list(o.engines);
  const runInfo = startRun(
    `bash scripts/build.sh && npm run bench -- --num ${params.num} --reads ${params.reads} --seeks ${params.seeks} --seek-nexts ${params.seekNexts} --reps ${params.reps} --engines ${wanted.join(',')}${which === 'firefox' ? ' --browser firefox' : ''}`,
  );
  const failures = [];
  await withBenchPage(
    async ({ page, url, browser }) => {
      const described = await page.evaluate(() => window.bench.engines);
      const engines = {};
      const skipped = {};
      for (const id of wanted) {
        const d = described.find((e) => e.id === id);
        if (!d) skipped[id] = `there is no adapter bench/browser/engines/${id}.js`;
        else if (!d.available) skipped[id] = d.reason;
        else engines[id] = d;
        if (skipped[id]) log(`${id}: SKIPPED: ${skipped[id]}`);
      }

      const results = {};
      const errors = {};
      for (const id of Object.keys(engines)) {
        log(`${id}: suite, N = ${params.num.toLocaleString('en')}`);
        const t0 = Date.now();
        try {
          // As JSON text: Firefox's WebDriver BiDi hands an object seen twice
          // in one result (a row's runs shared by its variant) over once.
          results[id] = JSON.parse(await page.evaluate(async ([e, p]) => JSON.stringify(await window.bench.runEngine(e, p)), [id, params]));
          log(`${id}: done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
        } catch (e) {
          errors[id] = e.message.split('\n')[0];
          failures.push(`${id}: ${errors[id]}`);
          log(`${id}: FAILED: ${errors[id]}`);
        }
      }
      // Persistence: a real page reload, then each database reopened in a new worker.
      await page.reload();
      await waitReady(page);
      const persistence = {};
      for (const id of Object.keys(results)) {
        if (!engines[id].persistent) {
          persistence[id] = { ok: null, text: `n/a (${engines[id].storage})` };
        } else {
          try {
            const v = await page.evaluate(([e, p]) => window.bench.verify(e, p), [id, params]);
            persistence[id] = {
              ok: true,
              keysChecked: v.keysChecked,
              text: `ok: ${v.keysChecked.toLocaleString('en')} keys read back after a page reload (open ${v.openMs.toFixed(1)} ms)`,
            };
          } catch (e) {
            persistence[id] = { ok: false, text: `FAILED: ${e.message.split('\n')[0]}` };
            failures.push(`${id} persistence: ${persistence[id].text}`);
          }
        }
        log(`${id}: persistence ${persistence[id].text}`);
      }
      for (const id of Object.keys(engines)) {
        await page.evaluate((e) => window.bench.destroy(e), id).catch((e) => log(`${id}: could not delete its database: ${e.message}`));
      }
      const bundles = {};
      for (const [id, e] of Object.entries(engines)) bundles[id] = await bundle(url, e.files);
      // What an adapter learns when it opens (e.g. SQLite's journal mode) is in its result.
      for (const [id, e] of Object.entries(engines)) e.options = { ...e.options, ...results[id]?.options };

      const meta = runInfo.finish({ browser });
      const run = { meta, params, engines, skipped, errors, results, persistence, bundles, browserName: which };
      mkdirSync(o.out, { recursive: true });
      // The default N writes browser.md; another N its own files, which
      // browser.md then includes (the 1,000,000-key table).
      const stem = which === 'firefox' ? 'browser-firefox' : 'browser';
      const base = params.num === FLAGS.num ? stem : `${stem}-${params.num}`;
      writeFileSync(join(o.out, `${base}.json`), jsonLines(run));
      const md = markdown(run, o.out);
      writeFileSync(join(o.out, `${base}.md`), md);
      process.stdout.write(`\n${tableMarkdown(run)}\n${goalsMarkdown(run)}\n`);
      log(`wrote ${join(o.out, `${base}.md`)} and ${join(o.out, `${base}.json`)}`);
    },
    { timeoutMin: o['timeout-min'], log, browser: which },
  );
  if (failures.length > 0) {
    log(`FAILED:\n  ${failures.join('\n  ')}`);
    process.exitCode = 1;
  }
  // Then the tabs scenario (bench/run/tabs.mjs): one database shared by 1, 2 and 4 tabs.
  if (!o['skip-tabs'] && which === 'chromium') {
    log('the tabs scenario: node bench/run/tabs.mjs');
    execFileSync(process.execPath, [fileURLToPath(new URL('./tabs.mjs', import.meta.url))], { stdio: 'inherit' });
  }
  // Then live queries across tabs (bench/run/live.mjs).
  if (!o['skip-tabs'] && which === 'chromium') {
    log('live queries across tabs: node bench/run/live.mjs');
    execFileSync(process.execPath, [fileURLToPath(new URL('./live.mjs', import.meta.url))], { stdio: 'inherit' });
  }
  // Then the page path (bench/run/page.mjs): a page's calls from its main thread, and cold starts.
  if (!o['skip-page'] && which === 'chromium') {
    log('the page path: node bench/run/page.mjs');
    execFileSync(process.execPath, [fileURLToPath(new URL('./page.mjs', import.meta.url))], { stdio: 'inherit' });
  }
  // Then storage bytes (bench/run/bytes.mjs): one JSON data set in each store.
  if (!o['skip-bytes'] && which === 'chromium') {
    log('storage bytes: node bench/run/bytes.mjs');
    execFileSync(process.execPath, [fileURLToPath(new URL('./bytes.mjs', import.meta.url))], { stdio: 'inherit' });
  }
}

// ---------------------------------------------------------------------------
// Output.

function jsonLines(run) {
  const lines = [
    {
      type: 'header',
      ...run.meta,
      params: run.params,
      engines: Object.fromEntries(
        Object.entries(run.engines).map(([id, e]) => [
          id,
          { label: e.label, storage: e.storage, persistent: e.persistent, options: e.options, bundle: run.bundles[id] },
        ]),
      ),
      skipped: run.skipped,
      errors: run.errors,
    },
  ];
  for (const [id, r] of Object.entries(run.results)) {
    for (const row of r.rows) lines.push({ type: 'result', engine: id, ...row });
  }
  for (const [id, p] of Object.entries(run.persistence)) lines.push({ type: 'persistence', engine: id, ...p });
  for (const g of goals(run.results, run.bundles)) lines.push({ type: 'goal', ...g });
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}

const labelOf = (run, id) => run.engines[id]?.label ?? id;
const ratioText = (x) => (x === undefined ? '–' : `${x >= 100 ? x.toFixed(0) : x.toFixed(2)}×`);
const opsText = (row) => (row ? `${Math.round(row.opsPerSec).toLocaleString('en')}/s` : '–');

/** One row per engine (and configuration), one column per workload. */
function tableMarkdown(run) {
  const ids = sortEngines(Object.keys(run.results));
  const ws = workloadsOf(run.results);
  const unitOf = (w) => ids.map((id) => mainRow(run.results[id], w)).find(Boolean)?.unit;
  let md = `| engine | ${ws.map((w) => `${w} (${UNIT_TEXT[unitOf(w)] ?? ''})`).join(' | ')} |\n|---|${ws.map(() => '---:').join('|')}|\n`;
  for (const id of ids) {
    const cells = ws.map((w) => {
      const r = mainRow(run.results[id], w);
      if (!r) return '–';
      let c = formatCell(r);
      if (w.startsWith('fill')) c += ` (${opsText(r)})`;
      if (r.via) c += ` (${r.via})`;
      return c;
    });
    md += `| ${labelOf(run, id)} | ${cells.join(' | ')} |\n`;
  }
  const others = run.results[SILT] ? ids.filter((id) => id !== SILT) : [];
  if (others.length) {
    md += `\nHow many times faster Silt (tuned) is than each (its main row against theirs):\n\n| against | ${ws.join(' | ')} |\n|---|${ws.map(() => '---:').join('|')}|\n`;
    for (const id of others) md += `| ${labelOf(run, id)} | ${ws.map((w) => ratioText(speedup(run.results, w, id))).join(' | ')} |\n`;
  }
  return md;
}

function goalsMarkdown(run) {
  const gs = goals(run.results, run.bundles);
  const missed = gs.filter((g) => g.met === false);
  let md = `Goals: ${gs.filter((g) => g.met).length} met, ${missed.length} missed, ${gs.filter((g) => g.met === undefined).length} not measured.\n\n| workload | goal | result |\n|---|---|---|\n`;
  for (const g of gs) md += `| ${g.workload} | ${g.goal} | ${goalText(g)} |\n`;
  return md;
}

/** A run as jsonLines wrote it, read back (for --render and the 1M table). */
function runFromJson(file) {
  if (!existsSync(file)) return undefined;
  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const { type: _, params, engines, skipped, errors, ...meta } = lines.find((l) => l.type === 'header');
  const results = {};
  const persistence = {};
  for (const { type, engine, ...rest } of lines) {
    if (type === 'result') {
      results[engine] ??= { engine, params, rows: [] };
      results[engine].rows.push(rest);
    } else if (type === 'persistence') persistence[engine] = rest;
  }
  const bundles = Object.fromEntries(Object.entries(engines).map(([id, e]) => [id, e.bundle]));
  return { meta, params, engines, skipped: skipped ?? {}, errors: errors ?? {}, results, persistence, bundles };
}

/** The run another N left in `out` (browser-<num>.json), if any. */
const otherRun = (out, num) => runFromJson(join(out, `browser-${num}.json`));

function markdown(run, out) {
  const p = run.params;
  const ids = Object.keys(run.results);
  let md =
    `# Browser benchmarks: Silt beside IndexedDB, SQLite-wasm and others, in ${run.browserName === 'firefox' ? 'Firefox' : 'Chromium'}\n\n` +
    `Generated by \`npm run bench\` (bench/run/suite.mjs; the workloads are in bench/browser/workloads.js, the engines in ` +
    `bench/browser/engines/). Each engine runs in its own dedicated worker of a page served from 127.0.0.1; every figure ` +
    `is timed inside that worker with \`performance.now()\` (${run.browserName === 'firefox' ? '1 ms' : '100 µs'} resolution without cross-origin isolation: read and fill ` +
    `runs last tens of milliseconds or more, a reopen under a millisecond is only that precise). A warm-up run first, then the median of ${p.reps} runs. ` +
    `db_bench's workloads: 16-byte keys, 100-byte values (half compressible), N = ${p.num.toLocaleString('en')} keys.\n\n` +
    `- **fillseq**: keys 0..N-1 in order, in batches of 1,000 (one atomic batch / transaction each), into a new database; ` +
    `**fillrandom**: the same keys in random order (a permutation), also in batches of 1,000. Time per key written; ` +
    `the warm-up wrote a tenth of N. The time an engine then needs for its background work to catch up (Silt: ` +
    `\`await db.idle()\`) is not in the figure, it is listed below.\n` +
    `- **readrandom**: ${p.reads.toLocaleString('en')} gets of random keys (all present) for every engine, one call each, ` +
    `on the database fillrandom left.\n` +
    `- **multireadrandom**: ${Math.floor(p.reads / 32).toLocaleString('en')} calls of 32 keys; stride 0 = 32 random keys, ` +
    `stride 16 = a random start, then start + 16·j (db_bench's --multiread_stride). Time per key. Where an engine has ` +
    `several ways (SQLite: 32 point lookups or one \`IN\` query), each is measured and the faster is the engine's row.\n` +
    `- **seekrandom**: ${p.seeks.toLocaleString('en')} seeks to a random key, each reading that entry and the next ` +
    `${p.seekNexts} (db_bench's --seek_nexts ${p.seekNexts}). Time per seek. IndexedDB: by cursor and by \`getAll\`, the faster is its row.\n` +
    `- **reopen**: close the populated database and open it again (then one get is checked).\n` +
    `- Every read returns the sum of every byte of every value it read (zero-copy views are really read), checked ` +
    `against the sum predicted from the keys: a wrong value fails the run.\n\n` +
    metaMarkdown(run.meta) +
    `\n`;
  md +=
    `Engines: each with its tuned options and, where it has them, its library defaults (\`:defaults\`, what a new ` +
    `user gets); SQLite also with \`locking_mode=EXCLUSIVE\`; LevelDB also with its values handed to JavaScript as a binding ` +
    `would (\`:js\`: each value copied into a Uint8Array, summed in JavaScript) besides summed in C where it holds them; ` +
    `Silt also through \`connect()\` (the Promise API of a page). Where an engine has several ways of an operation ` +
    `(Silt: a pinned view from \`getPinned\` or an owned value from \`get\`; the batch API or \`for...of\`), each is measured (see "Every way measured") ` +
    `and the fastest is its row.\n\n`;
  md += `## Results, N = ${p.num.toLocaleString('en')} (median time per operation, lower is better)\n\n${tableMarkdown(run)}\n${goalsMarkdown(run)}`;
  if (p.num === FLAGS.num && run.browserName !== 'firefox') {
    const big = otherRun(out, 1_000_000);
    if (big) {
      md +=
        `\n## Results, N = 1,000,000 (\`npm run bench -- --num 1000000\`; its own run: ${big.meta.date})\n\n` +
        `${tableMarkdown(big)}\n${goalsMarkdown(big)}\nThe whole run: docs/bench/browser-1000000.md.\n`;
    }
  }
  // The analysis of the misses is written by hand beside the results.
  const findings = new URL('../../docs/bench/browser-findings.md', import.meta.url);
  if (run.browserName !== 'firefox' && existsSync(findings)) md += `\n${readFileSync(findings, 'utf8')}`;
  const variants = ids.flatMap((id) => variantRows(run.results[id]).map((r) => [id, r]));
  if (variants.length) {
    md += `\n## Every way measured\n\n| engine | workload | way | time | runs (ms) |\n|---|---|---|---:|---|\n`;
    for (const [id, r] of variants)
      md += `| ${labelOf(run, id)} | ${r.workload} | ${r.via} | ${formatCell(r)} | ${r.runsMs.map((x) => x.toFixed(1)).join(', ')} |\n`;
  }
  md +=
    `\n## Background work after the fills (not in the fill figures above)\n\n` +
    `Milliseconds until the engine's background work caught up after the last batch (the adapter's settle(); engines ` +
    `without one finish their work inside each batch), and the fill's rate counting that time too.\n\n` +
    `| engine | fillseq settle | fillseq with settle | fillrandom settle | fillrandom with settle |\n|---|---:|---:|---:|---:|\n`;
  for (const id of ids) {
    const cells = ['fillseq', 'fillrandom'].flatMap((w) => {
      const r = mainRow(run.results[id], w);
      if (!r) return ['–', '–'];
      return [`${r.settleMedianMs.toFixed(1)} ms`, `${Math.round(r.ops / (r.settledMedianMs / 1000)).toLocaleString('en')}/s`];
    });
    md += `| ${labelOf(run, id)} | ${cells.join(' | ')} |\n`;
  }
  md += `\n## Persistence (after a page reload, each database reopened in a new worker; the first and last key and a random sample checked)\n\n| engine | result |\n|---|---|\n`;
  for (const [id, v] of Object.entries(run.persistence)) md += `| ${labelOf(run, id)} | ${v.text} |\n`;
  md +=
    `\n## Shipped JavaScript and wasm\n\nThe files each engine's users ship (for siltdb: the module graph of its entry point and the wasm), ` +
    `as served; gzip -9 by Node's zlib.\n\n| engine | files | bytes | gzipped |\n|---|---:|---:|---:|\n`;
  for (const [id, b] of Object.entries(run.bundles))
    md += `| ${labelOf(run, id)} | ${b.files} | ${b.raw.toLocaleString('en')} | ${b.gzip.toLocaleString('en')} |\n`;
  md += `\n## Engines: storage and options\n\n`;
  for (const e of Object.values(run.engines)) {
    md += `### ${e.label}\n\nStorage: ${e.storage}${e.persistent ? '' : ' (not persistent)'}.\n\n`;
    for (const [k, v] of Object.entries(e.options ?? {})) md += `- ${k}: ${typeof v === 'object' ? `\`${JSON.stringify(v)}\`` : v}\n`;
    md += '\n';
  }
  if (Object.keys(run.skipped).length || Object.keys(run.errors).length) {
    md += `## Not measured\n\n`;
    for (const [id, r] of Object.entries(run.skipped)) md += `- ${id}: skipped: ${r}\n`;
    for (const [id, r] of Object.entries(run.errors)) md += `- ${id}: FAILED: ${r}\n`;
  }
  return md;
}

runMain(main, log);
