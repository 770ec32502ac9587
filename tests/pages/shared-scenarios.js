// The scenarios both APIs share (js/test/scenarios, served at
// /test-scenarios/: the same files vitest runs) in a real browser: through
// `open()` on OPFS in a dedicated worker (harness-worker.js registers
// `sharedSuiteInWorker`) and through `connect()` on a page
// (`sharedSuiteOnPage`, imported by the page). Each database a scenario
// opens is a new one; each call resolves to the outcome of every scenario
// of the suites asked for, which tests/e2e/scenarios.spec.ts and
// tests/firefox/run.mjs check with `problems()` (run.js).
import * as siltdb from '/siltdb/dist/index.js';
import { suites } from '/test-scenarios/index.js';
import { runAll } from '/test-scenarios/run.js';

let opened = 0;
/** A database name of its own (a Firefox profile keeps OPFS across the checks of a run). */
const fresh = (api) => `scenario-${api}-${Date.now().toString(36)}-${++opened}`;

/**
 * Runs the scenarios of the suites named (all when `only` is absent) on `target`.
 * @param {string[] | undefined} only
 * @param {import('/test-scenarios/run.js').Target} target
 */
async function runSuites(only, target) {
  const out = [];
  for (const [suite, scenarios] of suites) {
    if (only !== undefined && !only.includes(suite)) continue;
    out.push(...(await runAll(suite, scenarios, target)));
  }
  return out;
}

/**
 * The shared scenarios through `open()` in this worker, on databases (or,
 * with `sublevel`, sublevels) on OPFS, or where `storage` says
 * (`'indexeddb'`: the IndexedDB storage).
 */
export function sharedSuiteInWorker({ suites: only, sublevel, storage }) {
  return runSuites(only, {
    api: 'worker',
    sublevel,
    lib: siltdb,
    openRoot: (options) => siltdb.open(fresh('worker'), storage === undefined ? options : { storage, ...options }),
    closeRoot: (db) => db.close(),
  });
}

/** The shared scenarios through `connect()` from this page, each database led by a worker connect() starts. */
export function sharedSuiteOnPage({ suites: only, sublevel }) {
  return runSuites(only, {
    api: 'connect',
    sublevel,
    lib: siltdb,
    openRoot: (options) => siltdb.connect(fresh('connect'), options),
    closeRoot: (db) => db.close(),
  });
}
