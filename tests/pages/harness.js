// The page side of the browser tests: starts workers running
// harness-worker.js, runs named scenarios in them, and terminates them.
// Playwright drives it through window.silt.
const workers = new Map();
let nextWorker = 1;
let nextCall = 1;

function newWorker() {
  const id = nextWorker++;
  const worker = new Worker(new URL('./harness-worker.js', import.meta.url), { type: 'module' });
  const entry = { worker, pending: new Map(), progress: {} };
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
    for (const p of entry.pending.values()) p.reject(new Error(`worker error: ${e.message}`));
    entry.pending.clear();
  });
  workers.set(id, entry);
  return id;
}

function run(id, scenario, args) {
  const entry = workers.get(id);
  const call = nextCall++;
  return new Promise((resolve, reject) => {
    entry.pending.set(call, { resolve, reject });
    entry.worker.postMessage({ call, scenario, args });
  });
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
    workers.get(id).worker.terminate();
    workers.delete(id);
  },
  /** The package itself on this page (connect() from the main thread). */
  lib: () => import('/siltdb/dist/index.js'),
};
document.body.dataset.state = 'ready';
