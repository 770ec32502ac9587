// The page side of the reliability tests (tests/e2e/reliability.spec.ts),
// loaded into harness.html with a dynamic import: starts workers running
// reliability-worker.js, keeps what they report, and terminates them.
// Playwright drives it through window.reliability.
import { WorkerClient } from './worker-rpc.js';

const workers = new Map();
let nextWorker = 1;

/** A new worker; `ended` says whether a scenario started in it ended. */
function newWorker() {
  const id = nextWorker++;
  const entry = new WorkerClient(new URL('./reliability-worker.js', import.meta.url));
  entry.ended = false;
  workers.set(id, entry);
  return id;
}

function call(id, scenario, args) {
  const entry = workers.get(id);
  if (!entry) return Promise.reject(new Error(`no worker ${id} (terminated?)`));
  return entry.call(scenario, args);
}

window.reliability = {
  /** Runs a scenario in a new worker without waiting; returns the worker's id. */
  start(scenario, args) {
    const id = newWorker();
    const entry = workers.get(id);
    call(id, scenario, args).then(
      (value) => {
        entry.ended = true;
        entry.progress.result = value;
      },
      (e) => {
        entry.ended = true;
        entry.failure ??= { code: e.code ?? 'none', message: e.message };
      },
    );
    return id;
  },
  /** Runs a scenario in a new worker; resolves to { ok, value } or { ok: false, code, message }. */
  async run(scenario, args) {
    const id = newWorker();
    try {
      return { ok: true, value: await call(id, scenario, args) };
    } catch (e) {
      return { ok: false, code: e.code ?? 'none', message: e.message };
    } finally {
      window.reliability.terminate(id);
    }
  },
  /** What a worker reported so far, how it failed, whether its scenario ended. */
  status(id) {
    const entry = workers.get(id);
    if (!entry) return undefined;
    return { progress: { ...entry.progress }, failure: entry.failure, ended: entry.ended };
  },
  /** Kills a worker wherever it is; returns its last status. */
  terminate(id) {
    const entry = workers.get(id);
    if (!entry) return undefined;
    entry.terminate();
    workers.delete(id);
    return { progress: { ...entry.progress }, failure: entry.failure, ended: entry.ended };
  },
};
