// The page side of the browser tests: starts workers running
// harness-worker.js, runs named scenarios in them, and terminates them.
// Playwright drives it through window.silt.
import { WorkerClient } from './worker-rpc.js';

const workers = new Map();
let nextWorker = 1;

function newWorker() {
  const id = nextWorker++;
  workers.set(id, new WorkerClient(new URL('./harness-worker.js', import.meta.url)));
  return id;
}

function run(id, scenario, args) {
  return workers.get(id).call(scenario, args);
}

/** Runs a scenario; resolves to { ok, value } or { ok: false, code, message }. */
async function runSafe(id, scenario, args) {
  try {
    return { ok: true, value: await run(id, scenario, args) };
  } catch (e) {
    return { ok: false, code: e.code ?? 'none', message: e.message };
  }
}

window.silt = {
  newWorker,
  run: runSafe,
  /** Starts a scenario without waiting for it (its progress is readable). */
  start(id, scenario, args) {
    run(id, scenario, args).catch(() => {});
  },
  progress: (id) => ({ ...workers.get(id).progress }),
  terminate(id) {
    workers.get(id).terminate();
    workers.delete(id);
  },
  /** The package itself on this page (connect() from the main thread). */
  lib: () => import('/siltdb/dist/index.js'),
};
document.body.dataset.state = 'ready';
