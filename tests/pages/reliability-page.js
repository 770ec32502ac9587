// The page side of the reliability tests (tests/e2e/reliability.spec.ts),
// loaded into harness.html with a dynamic import: starts workers running
// reliability-worker.js, keeps what they report, and terminates them.
// Playwright drives it through window.reliability.
const workers = new Map();
let nextWorker = 1;
let nextCall = 1;

function newWorker() {
  const id = nextWorker++;
  const worker = new Worker(new URL('./reliability-worker.js', import.meta.url), { type: 'module' });
  // progress: the latest of each field the worker reported; failure: how a
  // started scenario ended if it threw, or the worker's uncaught error.
  const entry = { worker, pending: new Map(), progress: {}, failure: undefined, ended: false };
  worker.addEventListener('message', ({ data }) => {
    if (data.progress) {
      Object.assign(entry.progress, data.progress);
      return;
    }
    const p = entry.pending.get(data.call);
    if (!p) return;
    entry.pending.delete(data.call);
    if (data.ok) p.resolve(data.value);
    else p.reject(Object.assign(new Error(data.error.message), { code: data.error.code }));
  });
  worker.addEventListener('error', (e) => {
    // A script that fails to load (or a module it imports) fires a plain
    // Event, with no message.
    const what = e.message
      ? `uncaught in the worker: ${e.message} (${e.filename}:${e.lineno})`
      : 'the worker script or a module it imports failed to load';
    entry.failure ??= { code: 'WorkerError', message: what };
    for (const p of entry.pending.values()) p.reject(new Error(`worker error: ${what}`));
    entry.pending.clear();
  });
  workers.set(id, entry);
  return id;
}

function call(id, scenario, args) {
  const entry = workers.get(id);
  if (!entry) return Promise.reject(new Error(`no worker ${id} (terminated?)`));
  const c = nextCall++;
  return new Promise((resolve, reject) => {
    entry.pending.set(c, { resolve, reject });
    entry.worker.postMessage({ call: c, scenario, args });
  });
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
    entry.worker.terminate();
    workers.delete(id);
    return { progress: { ...entry.progress }, failure: entry.failure, ended: entry.ended };
  },
};
