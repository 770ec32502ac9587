#!/usr/bin/env node
// `npm run bench:page` (and the end of `npm run bench`): what a call costs
// from a page's main thread, as a new user makes it (issue 34), in Debian's
// Chromium with a kept profile on real OPFS, in one run. Each figure beside
// the floor measured in the same run, a dedicated worker answering from a
// Map over postMessage, and beside IndexedDB used from the main thread as
// idb-keyval does and SQLite-wasm in a worker behind a minimal postMessage
// layer (the peers: bench/browser/page/peers.js):
//   - get, put, a scan of 100 entries, 32 gets in one Promise.all: µs per
//     call, each call awaited before the next; the mean of --gets calls
//     (--scans, --groups), the median of --reps repetitions;
//   - Silt's own get and scan inside a worker (open(), no message), the part
//     of a page's call that is the engine's;
//   - a get from another tab (a follower), beside its own floor: a
//     MessagePort from that tab to the floor's worker here;
//   - cold start: from a fresh page load (a new tab) to the first value read
//     back, on a return visit (the files in the HTTP cache, the database
//     written with --cold-keys keys by the first visit), --cold-reps times;
//     the first visit's own figure beside.
// Writes docs/bench/page.md and docs/bench/page.json (JSON lines).
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg) and npm ci (the demo's
// dependencies: SQLite-wasm). Never downloads a browser. A benchmark, not a
// test: a watchdog ends it (--timeout-min).
//
//   node bench/run/page.mjs [--gets 20000] [--scans N] [--groups N] [--keys 100000] [--reps 3]
//                           [--cold-reps 5] [--cold-keys 1000] [--max-sec 15] [--out docs/bench] [--timeout-min 40]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { parseArgs, runMain } from './args.mjs';
import { withBenchPage } from './browser-session.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const USAGE =
  'usage: node bench/run/page.mjs [--gets N] [--scans N] [--groups N] [--keys N] [--reps N] [--cold-reps N] [--cold-keys N] [--max-sec S] [--out DIR] [--timeout-min M]';
const FLAGS = {
  gets: 20_000,
  scans: 0, // 0: a tenth of --gets
  groups: 0, // 0: --gets / 32 (as many keys as the gets)
  keys: 100_000,
  reps: 3,
  'cold-reps': 5,
  'cold-keys': 1000,
  'max-sec': 15,
  out: 'docs/bench',
  'timeout-min': 40,
};
const log = (m) => process.stderr.write(`[bench:page] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The peers, in the order of the columns; `ops` what each is measured on. */
const PEERS = [
  { id: 'floor', label: 'floor: a worker answering from a Map', ops: ['get', 'put', 'scan', 'get32', 'hot'] },
  { id: 'silt', label: 'Silt, connect() (library defaults)', ops: ['get', 'put', 'scan', 'get32', 'hot'] },
  { id: 'indexeddb', label: 'IndexedDB, main thread, idb-keyval style', ops: ['get', 'put', 'scan', 'get32', 'hot'] },
  { id: 'sqlite', label: "SQLite-wasm in a worker (the suite's pragmas, exclusive locking)", ops: ['get', 'put', 'scan', 'get32', 'hot'] },
  { id: 'silt:cache', label: 'Silt, connect() with a page cache (pageCacheCapacity 4 MiB)', ops: ['hot'] },
  { id: 'sqlite:defaults', label: 'SQLite-wasm in a worker (library defaults)', ops: ['get', 'put'] },
  {
    id: 'floor:logged',
    label:
      "the floor with each put appended to an OPFS file first (a sync access handle's write, not flushed: what a put that outlives its tab costs at least)",
    ops: ['put'],
  },
];
const OPS = {
  get: 'get (awaited one at a time)',
  put: 'put (awaited one at a time)',
  scan: 'scan of 100 entries',
  get32: '32 gets in one Promise.all (total)',
  hot: 'get of a key read before (1,000 hot keys, each read 5 times first)',
};
const COLD = [
  { id: 'silt', label: 'Silt: import siltdb, connect(), get' },
  { id: 'indexeddb', label: 'IndexedDB: open, get' },
  { id: 'sqlite', label: 'SQLite-wasm (library defaults): worker, init, install opfs-sahpool, open, get' },
];

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** One cold start: `engine`'s cold.html in a new tab, closed after; the page's result. */
async function coldVisit(context, url, engine, name, fill) {
  const tab = await context.newPage();
  tab.on('pageerror', (e) => log(`cold ${engine}: page error: ${e.message}`));
  tab.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') log(`cold ${engine}: console ${m.type()}: ${m.text()}`);
  });
  try {
    await tab.goto(`${url}bench/page/cold.html?engine=${engine}&name=${name}${fill ? `#fill=${fill}` : ''}`);
    await tab.waitForFunction(() => ['done', 'error'].includes(document.body?.dataset.state), null, { timeout: 60_000 });
    const { state, result, failure } = await tab.evaluate(() => ({ state: document.body.dataset.state, result: window.result, failure: window.failure }));
    if (state !== 'done') throw new Error(`cold start of ${engine}: ${failure}`);
    return result;
  } finally {
    await tab.close();
    // The closed tab's workers let go of their files and locks before the next visit.
    await sleep(500);
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2), FLAGS, USAGE);
  const options = {
    gets: o.gets,
    scans: o.scans || Math.max(1, Math.round(o.gets / 10)),
    groups: o.groups || Math.max(1, Math.round(o.gets / 32)),
    keys: o.keys,
    reps: o.reps,
    coldReps: o['cold-reps'],
    coldKeys: o['cold-keys'],
    maxSec: o['max-sec'],
  };
  if (options.keys < 1000) throw new Error(`--keys must be at least 1000 (the scans read 100 from a random key), got ${options.keys}`);
  const info = startRun(
    `bash scripts/build.sh && node bench/run/page.mjs --gets ${o.gets} --scans ${options.scans} --groups ${options.groups} --keys ${o.keys} --reps ${o.reps} --cold-reps ${options.coldReps} --cold-keys ${options.coldKeys} --max-sec ${options.maxSec}`,
  );
  const siltVersion = JSON.parse(readFileSync(new URL('../../js/package.json', import.meta.url), 'utf8')).version;
  await withBenchPage(
    async ({ page, url, browser }) => {
      const context = page.context();
      // Cold starts first: the page open so far (index.html) loaded nothing,
      // so each engine's first visit finds the HTTP cache empty.
      const cold = [];
      for (const { id } of COLD) {
        log(`cold start, first visit: ${id}`);
        cold.push({ ...(await coldVisit(context, url, id, 'bench-page-cold', options.coldKeys)), visit: 'first' });
      }
      for (let rep = 0; rep < options.coldReps; rep++) {
        for (const { id } of COLD) {
          const r = await coldVisit(context, url, id, 'bench-page-cold', 0);
          log(`cold start, return visit ${rep + 1}: ${id}: ${r.ms.toFixed(1)} ms`);
          cold.push({ ...r, visit: 'return', rep });
        }
      }

      log(`setting up every peer with ${options.keys.toLocaleString('en')} keys`);
      await page.evaluate(async () => {
        window.pageBench = await import('/bench/page/main-thread.js');
      });
      const peers = await page.evaluate((p) => window.pageBench.setup(p), { name: 'bench-page', keys: options.keys });
      log(`set up: ${JSON.stringify(Object.fromEntries(Object.entries(peers).map(([k, v]) => [k, `${v.fillMs.toFixed(0)} ms`])))}`);
      // A second tab: a follower of this page's database, and its floor (a
      // port to this page's floor worker, as siltdb's broker gives one).
      const follower = await context.newPage();
      follower.on('pageerror', (e) => log(`follower tab: page error: ${e.message}`));
      await follower.goto(`${url}bench/page/`);
      await follower.evaluate(async (name) => {
        window.pageBench = await import('/bench/page/main-thread.js');
        await window.pageBench.setupFollower({ name });
      }, 'bench-page');
      const followerRuns = { 'follower-floor': [], follower: [] };
      // runs[op][peer]: one measurement per repetition.
      const runs = Object.fromEntries(Object.keys(OPS).map((op) => [op, Object.fromEntries(PEERS.filter((p) => p.ops.includes(op)).map((p) => [p.id, []]))]));
      const inWorker = [];
      const ns = { get: options.gets, put: options.gets, scan: options.scans, get32: options.groups, hot: options.gets };
      for (let rep = 0; rep < options.reps; rep++) {
        for (const [opIndex, op] of Object.keys(OPS).entries()) {
          // Every peer reads the same keys in one repetition; which peer
          // goes first turns from one repetition to the next.
          const ids = PEERS.filter((p) => p.ops.includes(op)).map((p) => p.id);
          const order = ids.map((_, i) => ids[(i + rep) % ids.length]);
          for (const id of order) {
            // (Hot reads warm up on every hot key, five times over.)
            const warm = op === 'hot' ? 5_000 : 200;
            const m = { op, id, n: ns[op], keys: options.keys, seed: 1000 * (rep + 1) + opIndex, warm, maxMs: options.maxSec * 1000 };
            const r = await page.evaluate((m) => window.pageBench.measure(m), m);
            log(`rep ${rep + 1}: ${op} ${id}: ${r.us.toFixed(1)} µs (${r.calls.toLocaleString('en')} calls)`);
            runs[op][id].push(r);
          }
        }
        for (const id of rep % 2 ? ['follower', 'follower-floor'] : ['follower-floor', 'follower']) {
          const m = { op: 'get', id, n: options.gets, keys: options.keys, seed: 1000 * (rep + 1) + 99, warm: 200, maxMs: options.maxSec * 1000 };
          const r = await follower.evaluate((m) => window.pageBench.measure(m), m);
          log(`rep ${rep + 1}: get ${id} (another tab): ${r.us.toFixed(1)} µs (${r.calls.toLocaleString('en')} calls)`);
          followerRuns[id].push(r);
        }
        const w = await page.evaluate((m) => window.pageBench.measureInWorker(m), {
          gets: options.gets,
          scans: options.scans,
          keys: options.keys,
          seed: 7000 + rep,
        });
        log(`rep ${rep + 1}: silt in its worker: get ${w.getUs.toFixed(2)} µs, scan ${w.scanUs.toFixed(1)} µs`);
        inWorker.push(w);
        await page.evaluate(() => window.pageBench.settle());
      }
      await follower.evaluate(() => window.pageBench.teardownFollower());
      await follower.close();
      await page.evaluate(() => window.pageBench.teardown());
      const followerGet = Object.fromEntries(Object.entries(followerRuns).map(([id, list]) => [id, { us: median(list.map((r) => r.us)), runs: list }]));

      const results = Object.fromEntries(
        Object.entries(runs).map(([op, byPeer]) => [
          op,
          Object.fromEntries(Object.entries(byPeer).map(([id, list]) => [id, { us: median(list.map((r) => r.us)), runs: list }])),
        ]),
      );
      const worker = { getUs: median(inWorker.map((w) => w.getUs)), scanUs: median(inWorker.map((w) => w.scanUs)), runs: inWorker };
      const meta = info.finish({ browser });
      const run = { meta, options: { ...options, siltdb: siltVersion }, peers, results, worker, followerGet, cold, shipped: shippedBytes() };
      run.goals = goals(run);
      mkdirSync(o.out, { recursive: true });
      writeFileSync(join(o.out, 'page.json'), jsonLines(run));
      writeFileSync(join(o.out, 'page.md'), markdown(run));
      process.stdout.write(`\n${metaMarkdown(meta)}\n${tables(run)}`);
      log(`wrote ${join(o.out, 'page.md')} and ${join(o.out, 'page.json')}`);
    },
    { timeoutMin: o['timeout-min'], log, path: 'bench/page/', httpMaxAge: 3600 },
  );
}

// ---------------------------------------------------------------------------
// Output.

const us = (x) => (x === undefined ? '–' : x >= 100 ? `${x.toFixed(0)} µs` : x >= 10 ? `${x.toFixed(1)} µs` : `${x.toFixed(2)} µs`);
const ms = (x) => (x === undefined ? '–' : `${x.toFixed(x >= 100 ? 0 : 1)} ms`);
const times = (x) => (x === undefined || !Number.isFinite(x) ? '–' : `${x.toFixed(2)}×`);
const figure = (run, op, id) => run.results[op]?.[id]?.us;

/** Cold-start figures of `engine`: the first visit, the return visits (each, and their median). */
function coldOf(run, engine) {
  const first = run.cold.find((c) => c.engine === engine && c.visit === 'first');
  const returns = run.cold.filter((c) => c.engine === engine && c.visit === 'return');
  const med = (f) => (returns.length ? median(returns.map(f)) : undefined);
  return {
    first,
    returns,
    ms: med((c) => c.ms),
    sinceNavigationMs: med((c) => c.sinceNavigationMs),
    connectToValueMs: med((c) => c.stages.value - (c.stages.imported ?? 0)),
    importMs: med((c) => c.stages.imported),
  };
}

/** Issue 34's goals, from this run's figures. */
function goals(run) {
  const f = (op, id) => figure(run, op, id);
  const g = [];
  const add = (goal, value, text, met) => g.push({ goal, value, text, met });
  const get = f('get', 'silt');
  if (get !== undefined) {
    add('connect() get ≤ 1.3× the floor', get / f('get', 'floor'), times(get / f('get', 'floor')), get / f('get', 'floor') <= 1.3);
    const idb = f('get', 'indexeddb') / get;
    add('connect() get ≥ 4× faster than IndexedDB (main thread, idb-keyval style)', idb, `${times(idb)} faster`, idb >= 4);
    for (const id of ['sqlite', 'sqlite:defaults']) {
      const s = f('get', id) / get;
      add(`connect() get faster than ${labelOf(id)}`, s, `${times(s)} ${s >= 1 ? 'faster' : 'slower'}`, s > 1);
    }
    const fg = run.followerGet.follower.us / run.followerGet['follower-floor'].us;
    add("a follower's get (another tab) ≤ 1.3× its own floor", fg, times(fg), fg <= 1.3);
    const g32 = f('get32', 'silt') / get;
    add('32 gets in one Promise.all ≤ 3× one get', g32, times(g32), g32 <= 3);
    const put = f('put', 'silt') / f('put', 'floor');
    const logged = f('put', 'floor:logged');
    add(
      'an awaited put (default durability) ≤ 1.5× the floor',
      put,
      `${times(put)}${logged === undefined ? '' : ` (${times(f('put', 'silt') / logged)} the floor with an OPFS append per put)`}`,
      put <= 1.5,
    );
    const hit = f('hot', 'silt:cache');
    if (hit !== undefined) add('a page cache hit ≤ 2 µs', hit, `${us(hit)} (${times(f('hot', 'floor') / hit)} faster than the floor's round trip)`, hit <= 2);
    const bound = 2 * f('scan', 'floor') + run.worker.scanUs;
    const scan = f('scan', 'silt');
    add(
      "a scan of 100 ≤ 2× the floor's scan + the worker's own scan",
      scan / bound,
      `${us(scan)} against ${us(bound)} (2 × ${us(f('scan', 'floor'))} + ${us(run.worker.scanUs)}): ${times(scan / bound)}`,
      scan <= bound,
    );
  }
  if (run.shipped !== undefined) {
    const kb = run.shipped.gzip / 1000;
    add(
      'wasm + JS ≤ 250 KB gzipped',
      kb / 250,
      `${kb.toFixed(1)} KB (${run.shipped.files.map((f) => `${f.name} ${(f.gzip / 1000).toFixed(1)}`).join(', ')})`,
      kb <= 250,
    );
  }
  const silt = coldOf(run, 'silt');
  const sqlite = coldOf(run, 'sqlite');
  if (silt.ms !== undefined) {
    add(
      'cold start, connect() to the first value (return visit) ≤ 50 ms',
      silt.connectToValueMs,
      `${ms(silt.connectToValueMs)} (and ${ms(silt.importMs)} to import siltdb before)`,
      silt.connectToValueMs <= 50,
    );
    add(
      "cold start faster than SQLite-wasm's init + open + first get (return visit, from the script's start)",
      sqlite.ms / silt.ms,
      `${ms(silt.ms)} against ${ms(sqlite.ms)}`,
      silt.ms < sqlite.ms,
    );
  }
  return g;
}

/**
 * What a page using connect() loads of siltdb, as js/dist ships it: the
 * entry, the chunk it shares with the worker, the worker, the broker and
 * the wasm; bytes and gzip -9 bytes (Node's zlib) of each.
 */
function shippedBytes() {
  const dist = fileURLToPath(new URL('../../js/dist/', import.meta.url));
  // The entries and the chunks they import statically (as bench/browser/common.js's
  // moduleGraph): a chunk imported with import() only where it is used (the
  // IndexedDB storage) is not what a page on OPFS loads.
  const names = ['index.js', 'worker.js', 'broker.js'];
  for (let i = 0; i < names.length; i++) {
    const text = readFileSync(join(dist, names[i]), 'utf8');
    for (const m of text.matchAll(/(?:^|[\s;])(?:import|export)\s*(?:[\w*{}\s,$]+?\s*from\s*)?['"]\.\/([^'"/]+)['"]/g)) {
      if (!names.includes(m[1])) names.push(m[1]);
    }
  }
  names.push('silt_wasm_bg.wasm');
  const files = names.map((name) => {
    const bytes = readFileSync(join(dist, name));
    return { name, bytes: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
  });
  return { files, bytes: files.reduce((a, f) => a + f.bytes, 0), gzip: files.reduce((a, f) => a + f.gzip, 0) };
}

/** How many files Silt's return visits loaded into the page (its HTML and scripts, siltdb's modules). */
const siltFiles = (run) => run.cold.find((c) => c.engine === 'silt' && c.visit === 'return')?.resources.total ?? '?';

const labelOf = (id) => PEERS.find((p) => p.id === id)?.label ?? id;

/** The tables (printed, and in page.md). */
function tables(run) {
  const f = (op, id) => figure(run, op, id);
  const main = ['floor', 'silt', 'indexeddb', 'sqlite'];
  let md =
    `| operation | ${labelOf('floor')} | Silt, connect() | × floor | IndexedDB (main thread) | × floor | SQLite-wasm (worker) | × floor | Silt vs IndexedDB | Silt vs SQLite-wasm |\n` +
    `|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n`;
  for (const [op, text] of Object.entries(OPS)) {
    const floor = f(op, 'floor');
    const cells = main.slice(1).flatMap((id) => [us(f(op, id)), times(f(op, id) / floor)]);
    md += `| ${text} | ${us(floor)} | ${cells.join(' | ')} | ${times(f(op, 'indexeddb') / f(op, 'silt'))} | ${times(f(op, 'sqlite') / f(op, 'silt'))} |\n`;
  }
  const r = (id) => times(f('get32', id) / f('get', id));
  md += `| 32 gets in one Promise.all ÷ one get | ${r('floor')} | ${r('silt')} | | ${r('indexeddb')} | | ${r('sqlite')} | | | |\n`;
  md += `\n"× floor": the figure over the floor's for the same operation (lower is better). "Silt vs": the other's time over Silt's (above 1: Silt is faster).\n\n`;
  md += `| other configuration | operation | time | × floor | Silt's time over it |\n|---|---|---:|---:|---:|\n`;
  {
    const v = f('hot', 'silt:cache');
    const rates = run.results?.hot?.['silt:cache']?.runs?.map((r) => r.hitRate).filter((x) => x !== undefined) ?? [];
    const rate = rates.length ? ` (${(100 * Math.min(...rates)).toFixed(1)}% or more of its gets from the cache)` : '';
    md += `| ${labelOf('silt:cache')}${rate} | ${OPS.hot} | ${us(v)} | ${times(v / f('hot', 'floor'))} | ${times(f('hot', 'silt') / v)} |\n`;
  }
  for (const op of ['get', 'put']) {
    const v = f(op, 'sqlite:defaults');
    md += `| ${labelOf('sqlite:defaults')} | ${OPS[op]} | ${us(v)} | ${times(v / f(op, 'floor'))} | ${times(f(op, 'silt') / v)} |\n`;
  }
  {
    const v = f('put', 'floor:logged');
    md += `| ${labelOf('floor:logged')} | ${OPS.put} | ${us(v)} | ${times(v / f('put', 'floor'))} | ${times(f('put', 'silt') / v)} |\n`;
  }
  for (const [op, v] of [
    ['get', run.worker.getUs],
    ['scan', run.worker.scanUs],
  ]) {
    md += `| Silt inside its worker (open(), no message; timed there) | ${OPS[op]} | ${us(v)} | ${times(v / f(op, 'floor'))} | ${times(f(op, 'silt') / v)} |\n`;
  }
  const fl = run.followerGet;
  md +=
    `\nFrom another tab (a follower: this page leads; the tab's connection reaches the leader's worker over the MessagePort siltdb's broker ` +
    `hands it), get awaited one at a time: Silt ${us(fl.follower.us)} against its floor's ${us(fl['follower-floor'].us)} ` +
    `(a MessagePort from that tab to this page's floor worker, handed over by a SharedWorker the same way): ${times(fl.follower.us / fl['follower-floor'].us)}.\n`;
  md +=
    `\nCold start: from a fresh page load (a new tab) to the first value read back, ms. "From the script": from the first line of the page's ` +
    `module script; "from navigation": from the tab's navigation start (performance.timeOrigin), so the page's HTML and script too.\n\n` +
    `| engine: what is timed | first visit (empty HTTP cache and database), from the script | return visits, from the script (each) | median | median from navigation | page's files from the HTTP cache (return visits) |\n|---|---:|---|---:|---:|---:|\n`;
  for (const { id, label } of COLD) {
    const c = coldOf(run, id);
    const cached = c.returns.map((r) => `${r.resources.fromCache}/${r.resources.total}`);
    md += `| ${label} | ${ms(c.first?.ms)} | ${c.returns.map((r) => r.ms.toFixed(1)).join(', ')} | ${ms(c.ms)} | ${ms(c.sinceNavigationMs)} | ${[...new Set(cached)].join(', ')} |\n`;
  }
  const silt = coldOf(run, 'silt');
  if (silt.ms !== undefined) {
    md += `\nSilt's return visits, median: ${ms(silt.importMs)} to import siltdb, then ${ms(silt.connectToValueMs)} from \`connect()\` to the value.\n`;
  }
  md += `\nIssue 34's goals, from this run:\n\n| goal | result | met |\n|---|---|---|\n`;
  for (const g of run.goals) md += `| ${g.goal} | ${g.text} | ${g.met ? 'yes' : '**no**'} |\n`;
  return md;
}

function jsonLines(run) {
  const lines = [{ type: 'header', ...run.meta, options: run.options, peers: run.peers }];
  for (const [op, byPeer] of Object.entries(run.results)) {
    for (const [peer, r] of Object.entries(byPeer)) lines.push({ type: 'result', op, peer, ...r });
  }
  lines.push({ type: 'in-worker', peer: 'silt', ...run.worker });
  for (const [peer, r] of Object.entries(run.followerGet)) lines.push({ type: 'result', op: 'get from another tab', peer, ...r });
  for (const c of run.cold) lines.push({ type: 'cold', ...c });
  for (const g of run.goals) lines.push({ type: 'goal', ...g });
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}

function markdown(run) {
  const o = run.options;
  const sqlite = run.peers.sqlite?.options ?? {};
  return (
    `# From a page's main thread: Silt's connect() beside the floor, IndexedDB and SQLite-wasm (Chromium, OPFS)\n\n` +
    `Generated by \`npm run bench:page\` (bench/run/page.mjs; the page side in bench/browser/page/), also the end of \`npm run bench\`. ` +
    `Everything is called from the main thread of one page served from 127.0.0.1, as a web app's code calls it, each call awaited before the next ` +
    `(32 gets: issued together in one \`Promise.all\`). Keys are db_bench's \`%016d\` (16 decimal digits, a string on the page), values 100 bytes ` +
    `(bench/browser/common.js's valueFor); every peer holds keys 0..${(o.keys - 1).toLocaleString('en')}, written before the timing. A figure is ` +
    `the mean time per call over ${o.gets.toLocaleString('en')} gets or puts, ${o.scans.toLocaleString('en')} scans, ${o.groups.toLocaleString('en')} groups of 32 ` +
    `(or as many as ${o.maxSec} s allowed: the JSON has the calls made), after 200 untimed; keys drawn at random, the same for every peer within a repetition; ` +
    `the median of ${o.reps} repetitions, in which the peers take turns (which goes first turns too). Every byte of every value read is summed and checked against ` +
    `what the keys predict. A put writes a key's own value again (the data never changes). \`performance.now()\` has 100 µs resolution here (no cross-origin ` +
    `isolation), which the runs of thousands of calls average out; the cold starts are single page loads, each listed.\n\n` +
    metaMarkdown(run.meta) +
    `\n## Results\n\n${tables(run)}\n## What each peer does, and does not do\n\n` +
    `- **The floor**: a dedicated worker this page started (bench/browser/page/map-worker.js), holding the same keys in a \`Map\` of strings to ` +
    `Uint8Arrays, behind the minimal message layer below (rpc.js). A get posts \`['get', key]\` and gets the value back, cloned by postMessage; a put posts ` +
    `the key and value and gets \`0\` back; a scan gets 100 [key, value] entries in one message (from a sorted array, by binary search). It stores nothing ` +
    `durably and checks, encodes, versions and orders nothing: it is what any request from a page to a worker costs at least, one message each way. ` +
    `Beside it, for puts, the same worker appending each put (key and value behind two lengths, one write) to an OPFS file through a sync access handle ` +
    `before it answers, never flushed (a put of default durability): the least a put that outlives its tab costs, the platform's part of a durable write.\n` +
    `- **Silt, \`connect()\`**: siltdb ${o.siltdb} as built in js/dist and js/pkg, \`connect(name)\` with no option at all (library defaults: writes not ` +
    `flushed per write, \`sync: false\`; the engine's defaults). This page leads: its own worker (siltdb's) has the database open on OPFS; no other tab is ` +
    `attached. A get is \`await db.get(key)\` (a Uint8Array copy the caller owns), a put \`await db.put(key, value)\` (resolved when the leader has applied it), ` +
    `a scan \`for await (const [k, v] of db.iterator({ gte, limit: 100 }))\`. Everything \`connect()\` does on the way is in the figure: encoding and checking ` +
    `on the page, its request and answer messages, the leader's dispatch, the engine's work, the change record it keeps of a write (posted only to connections that watch: none here). Silt's ` +
    `tuned options are not measured here: they configure the engine inside the worker (whose own get and scan are the rows "Silt inside its worker"), ` +
    `not the page path. The database was written through \`connect()\` in batches of 1,000, then flushed (\`flush()\`, \`idle()\`); Silt is let \`idle()\` after each repetition's puts.\n` +
    `- **IndexedDB**: from the main thread, the way idb-keyval 6 uses it (its \`createStore\` and \`promisifyRequest\`, written out in ` +
    `bench/browser/page/peers.js): one connection opened once, then every get a readonly transaction of its own, every put a readwrite transaction of its ` +
    `own, awaited until the transaction completes; no durability option (Chromium's default, 'relaxed' since Chrome 121); values stored as Uint8Arrays ` +
    `(structured clone), the key the string itself. No worker and no OPFS: the browser's own IndexedDB does the work in another process. A scan (not an ` +
    `idb-keyval call): one readonly transaction, ${run.peers.indexeddb?.scan ?? 'getAllRecords'} on a key range from the start key (keys and values to the page). ` +
    `32 gets: 32 idb-keyval gets, 32 transactions.\n` +
    `- **SQLite-wasm**: @sqlite.org/sqlite-wasm ${sqlite.version ?? ''} on the opfs-sahpool VFS, in a dedicated worker (bench/browser/page/sqlite-worker.js), set up as ` +
    `the suite's adapter does (bench/browser/engines/sqlite.js: the table \`kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID\`, prepared statements reused), ` +
    `behind a message layer of about twenty lines (rpc.js on the page, the \`onmessage\` at the end of the worker): one message each way per call, answers ` +
    `in order, no ids. Each call is SQLite's oo1 API as an app writes it: bind (the key as text), step, \`get(0)\` (a copy of the blob out of wasm memory), ` +
    `reset; the value is then cloned to the page by postMessage. Each put is one autocommit transaction (\`INSERT OR REPLACE\`); a scan is ` +
    `\`SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT 100\`, 100 rows in one answer. Two configurations: tuned, the suite's ` +
    `\`sqlite:exclusive\` (\`${JSON.stringify(sqlite.pragmas ?? {})}\`: no xSync at commit, as Silt's default write is not flushed; journal_mode ` +
    `${sqlite.journal_mode ?? '?'}, and exclusive locking, which keeps the rollback journal from one commit to the next: with normal locking each ` +
    `autocommit put creates and deletes its journal, and opfs-sahpool flushes a pool file's header at both, which made a put several ms here whatever ` +
    `\`synchronous\` said) in the main table, and the library's defaults (no pragma: synchronous FULL, normal locking, a 2,000 KiB page cache) below it. ` +
    `Not SQLite at its ` +
    `fastest binding: the suite's adapter binds through a scratch buffer and reads values in place; here a call allocates its bindings, a few µs.\n` +
    `- **Silt inside its worker**: siltdb's \`open()\` in a dedicated worker of its own (bench/browser/page/silt-worker.js), library defaults, its own database ` +
    `written and flushed alike, timed inside the worker: the engine's part of a page's call. The goal for scans counts it.\n` +
    `- **Cold start**: each visit is a new tab on bench/browser/page/cold.html, closed after (half a second between visits, so that the last tab's ` +
    `workers let go of their files). The files are served with \`cache-control: max-age=3600\` (demo/server.mjs's SILT_HTTP_MAX_AGE) into the kept profile, ` +
    `so that a return visit loads them from the HTTP cache (the last column counts the page's own resources that came from it; a worker's are not in the ` +
    `page's timeline). The first visit of each engine (in the order of the table) finds the HTTP cache and its database empty, reads a key that is not ` +
    `there, then writes ${o.coldKeys.toLocaleString('en')} keys (Silt through \`connect()\`, not flushed: a tab that closes does not close its database, ` +
    `so the next open recovers them from its write-ahead log, as a real return visit would); every return visit reads one of them back and checks it. Silt: \`await import('siltdb')\`, ` +
    `\`connect(name)\`, \`get\` (the tab's own worker starts, loads the wasm and opens the database; siltdb is imported as js/dist ships it, ` +
    `bundled by js/scripts/bundle.mjs: the page loaded ${siltFiles(run)} files on a return visit, its own included); IndexedDB: \`indexedDB.open\`, one get in a transaction; ` +
    `SQLite-wasm: \`new Worker\`, the worker imports SQLite, initialises the wasm, installs opfs-sahpool and opens the database (library defaults), then ` +
    `one get over the message layer.\n\n` +
    `- **Shipped bytes**: js/dist's files that a page using \`connect()\` loads (its entry, the chunk it shares with the worker, the worker, the broker, ` +
    `the wasm), gzip -9 by Node's zlib, as they are on disk when the run ends.\n\n` +
    `Not measured here: the transports between tabs (bench/run/tabs.mjs).\n`
  );
}

runMain(main, log);
