// The browser benchmark suite (bench/browser, `npm run bench`) at a tiny N, so
// that it cannot rot silently: every engine whose adapter file exists runs
// every workload with the expected checksums (checked inside the worker: a
// wrong value fails the run), persistent engines read their data back after
// a page reload, and a wrong value is caught. Silt, IndexedDB and SQLite-wasm
// always run, each configuration of them too (library defaults, connect(),
// exclusive locking). LevelDB-in-wasm is a peer built by `npm run bench:setup`, not
// by `npm test`: it runs when its build exists, and the test says so (an
// annotation) when it does not; any other unavailable engine fails.
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, test, type Page } from '@playwright/test';

type Engine = { id: string; available: boolean; reason?: string; persistent: boolean; files: string[]; storage: string };
type Row = { workload: string; unit: string; ops: number; usPerOp: number; runsMs: number[]; variant?: boolean; via?: string };
type Result = { engine: string; rows: Row[] };
type Bench = {
  engines: Engine[];
  runEngine(id: string, params: object): Promise<Result>;
  verify(id: string, params: object): Promise<{ keysChecked: number }>;
  destroy(id: string): Promise<void>;
  lastRun: {
    results: Record<string, Result>;
    persistence: Record<string, { ok?: boolean; text: string }>;
    errors: Record<string, string>;
    bundles: Record<string, { raw: number; gzip: number }>;
  };
};
declare global {
  interface Window {
    bench: Bench;
  }
}

const enginesDir = fileURLToPath(new URL('../../bench/browser/engines/', import.meta.url));
const levelDbBuilt = existsSync(fileURLToPath(new URL('../../bench/browser/leveldb/dist/leveldb.wasm', import.meta.url)));
const adapterFiles = readdirSync(enginesDir)
  .filter((f) => f.endsWith('.js'))
  .map((f) => f.slice(0, -3))
  .sort();
const params = { num: 2_000, reads: 320, seeks: 20, seekNexts: 100, reps: 1 };
const READS = [
  'fillseq',
  'fillrandom',
  'readrandom',
  'readhot',
  'multireadrandom (batch 32, stride 0)',
  'multireadrandom (batch 32, stride 16)',
  'seekrandom (seek_nexts 100)',
];
/** The workloads each engine runs: count where it can count, the transaction ones where it has transactions (and merge, a merge operator). */
function workloadsOf(id: string): string[] {
  const txn = id.startsWith('silt')
    ? ['transfer', 'transfer, 2 callers', 'counter', ...(id === 'silt:defaults' ? [] : ['counter, merge'])]
    : id.startsWith('leveldb')
      ? []
      : ['transfer', 'counter'];
  const ranges = id.startsWith('silt') ? ['count', 'approximateSize'] : id.startsWith('leveldb') ? [] : ['count'];
  // Silt in a worker of its own (not through connect()), on OPFS.
  const backups = id.startsWith('silt') && id !== 'silt:connect' && id !== 'silt:memory' ? ['backup (export + import)', 'copy (iterator + batches)'] : [];
  // A database in memory lives only while open: nothing to reopen.
  const reopen = id === 'silt:memory' ? [] : ['reopen'];
  return [...READS, ...ranges, ...backups, ...txn, ...reopen];
}

function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`${msg.type()}: ${msg.text()}`);
  });
  return problems;
}

async function openBench(page: Page, query = ''): Promise<Engine[]> {
  await page.goto(`/benchmarks/${query}`);
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 20_000 });
  return page.evaluate(() => window.bench.engines);
}

test('every engine adapter runs every workload with the expected checksums, and persistent engines survive a reload', async ({ page }) => {
  // A watchdog against a hang, not a speed check: every engine runs every
  // workload here (about a minute on the 2-core machine alone; 2.3 and 2.5
  // minutes beside two CPU hogs and a build, where 150 s tripped: issue 32),
  // so it leaves room for a machine several times slower.
  test.setTimeout(480_000);
  const problems = watch(page);
  const engines = await openBench(page);
  // The page lists exactly the adapter files, and each can run (a missing
  // vendor build is a failure with its reason, never a silent skip), with
  // their other configurations (library defaults, ...).
  expect(
    engines
      .filter((e) => !e.id.includes(':'))
      .map((e) => e.id)
      .sort(),
  ).toEqual(adapterFiles);
  expect(adapterFiles).toEqual(expect.arrayContaining(['indexeddb', 'silt', 'sqlite']));
  expect(engines.map((e) => e.id)).toEqual(expect.arrayContaining(['silt:defaults', 'silt:connect', 'sqlite:exclusive', 'sqlite:defaults']));
  // Soft assertions: one broken engine does not hide how the others did.
  for (const e of engines) {
    if (e.id.startsWith('leveldb') && !levelDbBuilt) {
      expect(e.available, 'LevelDB is unavailable while its build is missing').toBe(false);
      test.info().annotations.push({ type: 'not run', description: `leveldb: not built (npm run bench:setup builds it): ${e.reason}` });
      console.log(`bench.spec: LevelDB-in-wasm is not built, so it did not run (npm run bench:setup builds it)`);
      continue;
    }
    expect.soft(e.available, `${e.id}: ${e.reason}`).toBe(true);
  }

  const ran: Engine[] = [];
  for (const e of engines.filter((x) => x.available)) {
    let r: Result;
    try {
      r = await page.evaluate(([id, p]) => window.bench.runEngine(id, p), [e.id, params] as const);
    } catch (err) {
      expect.soft(String(err), `${e.id}: the suite failed`).toBe('');
      continue;
    }
    ran.push(e);
    const main = r.rows.filter((row) => !row.variant);
    expect
      .soft(
        main.map((row) => row.workload),
        e.id,
      )
      .toEqual(workloadsOf(e.id));
    for (const row of r.rows) {
      expect.soft(row.usPerOp, `${e.id} ${row.workload}`).toBeGreaterThan(0);
      expect.soft(Number.isFinite(row.usPerOp), `${e.id} ${row.workload}`).toBe(true);
      expect.soft(row.runsMs, `${e.id} ${row.workload}`).toHaveLength(params.reps);
    }
    expect.soft(main.find((row) => row.workload === 'readrandom')?.ops, e.id).toBe(params.reads);
  }
  // A real reload; then each persistent engine's database in a new worker.
  await page.reload();
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 20_000 });
  for (const e of ran) {
    if (e.persistent) {
      const v = await page.evaluate(([id, p]) => window.bench.verify(id, p), [e.id, params] as const).catch((err: Error) => err);
      expect.soft(v instanceof Error ? v.message : v.keysChecked, `${e.id}: the persistence check`).toBeGreaterThan(1000);
    }
    await page.evaluate((id) => window.bench.destroy(id), e.id);
  }
  // Destroyed means gone: the check now fails.
  await expect(page.evaluate(([p]) => window.bench.verify('indexeddb', p), [params] as const)).rejects.toThrow(/missing after the reload/);
  await page.evaluate(() => window.bench.destroy('indexeddb'));
  expect(problems).toEqual([]);
});

test('a wrong value fails the suite instead of giving a number', async ({ page }) => {
  const problems = watch(page);
  await openBench(page);
  // IndexedDB works on the page too: run the workloads there on adapters
  // that return one wrong checksum, in each kind of read.
  const outcomes = await page.evaluate(async () => {
    type Adapter = Record<string, unknown> & {
      get(h: unknown, k: Uint8Array): Promise<number>;
      multiGet(h: unknown, ks: Uint8Array[]): Promise<number>;
      scan(h: unknown, k: Uint8Array, n: number): Promise<number>;
      destroy(name: string): Promise<void>;
    };
    const { runSuite } = (await import('/bench/workloads.js' as string)) as { runSuite(a: object, p: object): Promise<unknown> };
    const idb = ((await import('/bench/engines/indexeddb.js' as string)) as { default: Adapter }).default;
    const p = { name: 'bench-broken', num: 600, reads: 64, seeks: 4, seekNexts: 10, reps: 1 };
    const broken = {
      get: { get: async (h: unknown, k: Uint8Array) => (await idb.get(h, k)) + (k[6] === 1 && k[7] === 44 ? 1 : 0) },
      multiGet: { multiGet: async (h: unknown, ks: Uint8Array[]) => (await idb.multiGet(h, ks)) - 1 },
      scan: { scan: (h: unknown, k: Uint8Array, n: number) => idb.scan(h, k, n - 1), variants: undefined },
      absent: { get: async (h: unknown, k: Uint8Array) => Math.max(0, await idb.get(h, k)) },
    };
    const out: Record<string, string> = {};
    for (const [name, patch] of Object.entries(broken)) {
      try {
        await runSuite({ ...idb, ...patch }, p);
        out[name] = 'no error';
      } catch (e) {
        out[name] = (e as Error).message;
      }
    }
    await idb.destroy(p.name);
    return out;
  });
  expect(outcomes.get).toMatch(/^indexeddb: get of key 300: checksum \d+, expected \d+/);
  expect(outcomes.multiGet).toMatch(/multiGet of 2 present and 2 absent keys: checksum/);
  expect(outcomes.scan).toMatch(/seekrandom \(seek_nexts 10\) \(warm-up\): checksum/);
  expect(outcomes.absent).toMatch(/get of an absent key returned 0, expected -1/);
  expect(problems).toEqual([]);
});

test('the Benchmarks view runs the suite live: table, goals, charts, persistence, bundle sizes', async ({ page }) => {
  // About 30 s on the 2-core machine with other work beside it: watchdogs
  // with room for a machine three times as slow.
  test.setTimeout(120_000);
  const problems = watch(page);
  const engines = await openBench(page, '?num=1000&reads=64&seeks=4&seek-nexts=10&reps=1');
  await page.locator('#run').click();
  await expect(page.locator('body')).toHaveAttribute('data-state', 'done', { timeout: 110_000 });
  await expect(page.locator('#error')).toBeHidden();
  // The engines that can run and are chosen by default (LevelDB only once
  // built; see the first test; other configurations are left to choose).
  const ids = engines.filter((e) => e.available && !e.id.includes(':')).map((e) => e.id);
  // One column per engine and one "Silt vs" column per other engine.
  await expect(page.locator('#results thead th')).toHaveCount(2 + ids.length + ids.length - 1);
  const all = workloadsOf('silt');
  await expect(page.locator('#results tbody tr')).toHaveCount(all.length);
  await expect(page.locator('#results tbody tr').first().locator('td').first()).toHaveText('fillseq');
  // Every engine has every read workload; only engines without transactions
  // (or merges) leave a transaction row empty.
  for (const tr of await page.locator('#results tbody tr').all()) {
    const workload = (await tr.locator('td').first().textContent())?.trim() ?? '';
    if ([...READS, 'reopen'].includes(workload)) await expect(tr.locator('td', { hasText: /^–$/ })).toHaveCount(0);
  }
  // Every goal is met, missed, or not measured (an engine it compares
  // with did not run: LevelDB until it is built); some are measured.
  for (const row of await page.locator('#goals tbody tr td:last-child').allTextContents()) expect(row).toMatch(/^(met \(|MISSED \(|n\/a)/);
  await expect(page.locator('#goals tbody tr', { hasText: /(met|MISSED) \(/ }).first()).toBeVisible();
  await expect(page.locator('#charts canvas')).toHaveCount(all.length);
  await expect(page.locator('#persistence tbody tr')).toHaveCount(ids.length);
  for (const row of await page.locator('#persistence tbody tr td:nth-child(2)').allTextContents()) expect(row).toMatch(/^(ok: \d[\d,]* keys read back|n\/a)/);
  await expect(page.locator('#bundles tbody tr')).toHaveCount(ids.length);
  const run = await page.evaluate(() => window.bench.lastRun);
  expect(run.errors).toEqual({});
  expect(run.bundles.silt.raw).toBeGreaterThan(100_000); // the wasm alone is hundreds of KB
  expect(run.bundles.silt.gzip).toBeLessThan(run.bundles.silt.raw);
  expect(run.bundles.indexeddb.raw).toBe(0);
  // SQLite measured both ways of multiGet; IndexedDB both ways of scanning.
  const vias = (id: string) => new Set(run.results[id].rows.filter((r) => r.variant).map((r) => r.via));
  expect(vias('sqlite')).toEqual(new Set(['IN (32 ?)', '32 point lookups']));
  expect(vias('silt')).toEqual(new Set(['view', 'owned', 'batch', 'for...of']));
  expect(vias('indexeddb')).toEqual(new Set(['cursor', 'getAll']));
  expect(problems).toEqual([]);
});
