#!/usr/bin/env node
// `npm run bench`: the browser performance suite (issue #7). Silt beside
// raw IndexedDB, SQLite's official wasm build on OPFS (opfs-sahpool) and
// every other engine adapter in demo/bench/engines/ (LevelDB compiled with
// emscripten when its build exists), in Debian's Chromium.
//
// Serves demo/ (demo/server.mjs, on 127.0.0.1, a free port), launches
// /usr/bin/chromium through playwright-core with a kept temporary profile,
// opens /bench/, runs each engine's suite in its own dedicated worker (the
// workloads are in demo/bench/workloads.js, timed inside the worker),
// reloads the page and reopens every persistent engine's database to check
// a sample of keys, measures each engine's shipped JS + wasm (raw and
// gzip -9, from the served files), prints a table and writes
//
//   <out>/browser.md     the table, ratios, goals, options, bundle sizes, machine, browser, date
//   <out>/browser.json   JSON lines: a header, then one line per engine × workload (and goals, persistence)
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg) and npm ci (the demo's
// dependencies). Never downloads a browser. A benchmark, not a test: it may
// take minutes; a watchdog ends it (--timeout-min).
//
//   node scripts/bench.mjs [--num 100000] [--reads 10000] [--seeks 1000] [--seek-nexts 100] [--reps 5]
//                          [--engines silt,indexeddb,sqlite,leveldb] [--out docs/bench] [--timeout-min 30]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { chromiumArgs, executablePath, startDemoServer } from './browser.mjs';
import { formatCell, goals, goalText, mainRow, SILT, speedup, UNIT_TEXT, variantRows, workloadsOf } from '../demo/bench/report.js';

const USAGE = 'usage: node scripts/bench.mjs [--num N] [--reads N] [--seeks N] [--seek-nexts N] [--reps N] [--engines a,b,c] [--out DIR] [--timeout-min M]';
const FLAGS = { num: 100_000, reads: 10_000, seeks: 1_000, 'seek-nexts': 100, reps: 5, engines: 'silt,indexeddb,sqlite,leveldb', out: 'docs/bench', 'timeout-min': 30 };

function parseArgs(argv) {
  const o = { ...FLAGS };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    }
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (!m || !(m[1] in FLAGS)) throw new Error(`unknown argument ${JSON.stringify(a)}\n${USAGE}`);
    const v = m[2] ?? argv[++i];
    if (v === undefined) throw new Error(`--${m[1]} needs a value\n${USAGE}`);
    if (typeof FLAGS[m[1]] === 'number') {
      const n = Number(v.replace(/_/g, ''));
      if (!Number.isInteger(n) || n < 0) throw new Error(`--${m[1]} must be a non-negative integer, got ${JSON.stringify(v)}`);
      o[m[1]] = n;
    } else {
      o[m[1]] = v;
    }
  }
  return o;
}

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

function chromiumVersion() {
  try {
    return execFileSync(executablePath, ['--version'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

async function waitReady(page) {
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state), undefined, { timeout: 60_000 });
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state !== 'ready') throw new Error(`the benchmark page failed to start: ${await page.locator('#error').textContent()}`);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const params = { num: o.num, reads: o.reads, seeks: o.seeks, seekNexts: o['seek-nexts'], reps: o.reps };
  const wanted = o.engines.split(',').map((s) => s.trim()).filter(Boolean);
  const loadAtStart = os.loadavg()[0];
  const { server, url } = await startDemoServer();
  const watchdog = setTimeout(() => {
    log(`watchdog: giving up after ${o['timeout-min']} minutes`);
    server.kill('SIGKILL');
    process.exit(2);
  }, o['timeout-min'] * 60_000);
  const profile = mkdtempSync(join(os.tmpdir(), 'silt-bench-profile-'));
  let context;
  const failures = [];
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath, args: chromiumArgs, headless: true, timeout: 30_000 });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      const t = m.text();
      if (t.startsWith('[bench] ')) log(t.slice(8));
      else if (m.type() === 'error' || m.type() === 'warning') log(`console ${m.type()}: ${t}`);
    });
    page.on('pageerror', (e) => log(`page error: ${e.message}`));
    await page.goto(`${url}bench/`);
    await waitReady(page);
    const described = await page.evaluate(() => window.bench.engines);
    const engines = {};
    const skipped = {};
    for (const id of wanted) {
      const d = described.find((e) => e.id === id);
      if (!d) skipped[id] = `there is no adapter demo/bench/engines/${id}.js`;
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
        results[id] = await page.evaluate(([e, p]) => window.bench.runEngine(e, p), [id, params]);
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
          persistence[id] = { ok: true, keysChecked: v.keysChecked, text: `ok: ${v.keysChecked.toLocaleString('en')} keys read back after a page reload (open ${v.openMs.toFixed(1)} ms)` };
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

    const ua = await page.evaluate(() => navigator.userAgent);
    const cpus = os.cpus();
    const meta = {
      browser: `${chromiumVersion()} (headless, ${executablePath}; ${ua})`,
      machine: `${cpus[0]?.model ?? os.arch()}, ${cpus.length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.platform()} ${os.release()}`,
      date: new Date().toISOString(),
      // Other work on the machine skews every figure: the 1-minute load average, at the start and at the end.
      load: `${loadAtStart.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end (1-minute load average, ${cpus.length} cores)`,
      command: `npm run bench -- --num ${params.num} --reads ${params.reads} --seeks ${params.seeks} --seek-nexts ${params.seekNexts} --reps ${params.reps} --engines ${wanted.join(',')}`,
    };
    const run = { meta, params, engines, skipped, errors, results, persistence, bundles };
    mkdirSync(o.out, { recursive: true });
    writeFileSync(join(o.out, 'browser.json'), jsonLines(run));
    const md = markdown(run);
    writeFileSync(join(o.out, 'browser.md'), md);
    process.stdout.write(`\n${tableMarkdown(run)}\n${goalsMarkdown(run)}\n`);
    log(`wrote ${join(o.out, 'browser.md')} and ${join(o.out, 'browser.json')}`);
  } finally {
    clearTimeout(watchdog);
    await context?.close().catch(() => {});
    server.kill('SIGTERM');
    rmSync(profile, { recursive: true, force: true });
  }
  if (failures.length > 0) {
    log(`FAILED:\n  ${failures.join('\n  ')}`);
    process.exitCode = 1;
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
        Object.entries(run.engines).map(([id, e]) => [id, { label: e.label, storage: e.storage, persistent: e.persistent, options: e.options, bundle: run.bundles[id] }]),
      ),
      skipped: run.skipped,
      errors: run.errors,
    },
  ];
  for (const [id, r] of Object.entries(run.results)) {
    for (const row of r.rows) lines.push({ type: 'result', engine: id, ...row });
  }
  for (const [id, p] of Object.entries(run.persistence)) lines.push({ type: 'persistence', engine: id, ...p });
  for (const g of goals(run.results)) lines.push({ type: 'goal', ...g });
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

const labelOf = (run, id) => run.engines[id]?.label ?? id;
const ratioText = (x) => (x === undefined ? '–' : `${x >= 100 ? x.toFixed(0) : x.toFixed(2)}×`);
const opsText = (row) => (row ? `${Math.round(row.opsPerSec).toLocaleString('en')}/s` : '–');

function tableMarkdown(run) {
  const ids = Object.keys(run.results);
  const others = run.results[SILT] ? ids.filter((id) => id !== SILT) : [];
  const byWorkload = new Map();
  for (const g of goals(run.results)) byWorkload.set(g.workload, [...(byWorkload.get(g.workload) ?? []), `${g.goal}: ${goalText(g)}`]);
  let md = `| workload | unit | ${ids.map((id) => labelOf(run, id)).join(' | ')} | ${others.map((id) => `Silt vs ${labelOf(run, id)}`).join(' | ')}${others.length ? ' | ' : ''}goals |\n`;
  md += `|---|---|${ids.map(() => '---:').join('|')}|${others.map(() => '---:').join('|')}${others.length ? '|' : ''}---|\n`;
  for (const w of workloadsOf(run.results)) {
    const rows = ids.map((id) => mainRow(run.results[id], w));
    const unit = rows.find(Boolean)?.unit;
    const cells = rows.map((r) => {
      if (!r) return '–';
      let c = formatCell(r);
      if (w.startsWith('fill')) c += ` (${opsText(r)})`;
      if (r.via) c += ` (${r.via})`;
      return c;
    });
    md += `| ${w} | ${UNIT_TEXT[unit] ?? ''} | ${cells.join(' | ')} | ${others.map((id) => ratioText(speedup(run.results, w, id))).join(' | ')}${others.length ? ' | ' : ''}${(byWorkload.get(w) ?? []).join('; ')} |\n`;
  }
  return md;
}

function goalsMarkdown(run) {
  const gs = goals(run.results);
  const missed = gs.filter((g) => g.met === false);
  return `Goals: ${gs.filter((g) => g.met).length} met, ${missed.length} missed, ${gs.filter((g) => g.met === undefined).length} not measured.` +
    (missed.length ? ` Missed: ${missed.map((g) => `${g.workload}: ${g.goal} (${goalText(g)})`).join('; ')}.` : '') + '\n';
}

function markdown(run) {
  const p = run.params;
  const ids = Object.keys(run.results);
  let md = `# Browser benchmarks: Silt beside IndexedDB, SQLite-wasm and others, in Chromium\n\n` +
    `Generated by \`npm run bench\` (scripts/bench.mjs; the workloads are in demo/bench/workloads.js, the engines in ` +
    `demo/bench/engines/). Each engine runs in its own dedicated worker of a page served from 127.0.0.1; every figure ` +
    `is timed inside that worker with \`performance.now()\` (100 µs resolution without cross-origin isolation: read and fill ` +
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
    `Browser: ${run.meta.browser}.\n\nMachine: ${run.meta.machine}; shared with other work while this ran: load ${run.meta.load}.\n\n` +
    `Date: ${run.meta.date}.\n\nReproduce: \`bash scripts/build.sh && ${run.meta.command}\`\n\n`;
  md += `## Results (median time per operation, lower is better; "Silt vs X" = how many times faster Silt is)\n\n${tableMarkdown(run)}\n${goalsMarkdown(run)}`;
  // The analysis of the misses is written by hand beside the results.
  const findings = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'bench', 'browser-findings.md');
  if (existsSync(findings)) md += `\n${readFileSync(findings, 'utf8')}`;
  const variants = ids.flatMap((id) => variantRows(run.results[id]).map((r) => [id, r]));
  if (variants.length) {
    md += `\n## Every way measured\n\n| engine | workload | way | time | runs (ms) |\n|---|---|---|---:|---|\n`;
    for (const [id, r] of variants) md += `| ${labelOf(run, id)} | ${r.workload} | ${r.via} | ${formatCell(r)} | ${r.runsMs.map((x) => x.toFixed(1)).join(', ')} |\n`;
  }
  md += `\n## Background work after the fills (not in the fill figures above)\n\n` +
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
  md += `\n## Shipped JavaScript and wasm\n\nThe files each engine's users ship (for siltdb: the module graph of its entry point and the wasm), ` +
    `as served; gzip -9 by Node's zlib.\n\n| engine | files | bytes | gzipped |\n|---|---:|---:|---:|\n`;
  for (const [id, b] of Object.entries(run.bundles)) md += `| ${labelOf(run, id)} | ${b.files} | ${b.raw.toLocaleString('en')} | ${b.gzip.toLocaleString('en')} |\n`;
  md += `\n## Engines: storage and options\n\n`;
  for (const [id, e] of Object.entries(run.engines)) {
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

main().catch((e) => {
  log(e.stack ?? String(e));
  process.exitCode = 1;
});
