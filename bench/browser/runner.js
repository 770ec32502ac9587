// The page side of the browser suite: one dedicated worker per engine
// (worker.js), and what a page does with it (list the engines, describe one,
// run its suite, check what it left after a reload, delete it, measure what
// it ships, run one of Silt's own tables). The demo's Benchmarks page
// (demo/benchmarks/) draws it and exposes it as `window.bench` to
// bench/run/*.mjs and tests/e2e/bench.spec.ts.

/** The order engines are shown in; engines not named here follow, by id. */
const ORDER = ['silt', 'indexeddb', 'sqlite', 'leveldb'];
/** Database names: `sqlite:exclusive` → `bench-sqlite-exclusive`. */
const dbName = (id) => `bench-${id.replace(':', '-')}`;

/** One engine's worker: requests as Promises, progress to a callback. */
class EngineWorker {
  #worker;
  #next = 1;
  #pending = new Map();
  #onProgress;

  constructor(id, onProgress = () => {}) {
    this.id = id;
    this.#onProgress = onProgress;
    this.#worker = new Worker(new URL(`./worker.js?engine=${encodeURIComponent(id)}`, import.meta.url), { type: 'module' });
    this.#worker.onmessage = (e) => {
      if (e.data.progress !== undefined) return this.#onProgress(e.data.progress);
      const p = this.#pending.get(e.data.id);
      if (!p) return;
      this.#pending.delete(e.data.id);
      if (e.data.ok) p.resolve(e.data.value);
      else p.reject(Object.assign(new Error(e.data.error.message), { name: e.data.error.name, code: e.data.error.code, workerStack: e.data.error.stack }));
    };
    // A module that fails to load or an uncaught error: every request fails with it.
    this.#worker.onerror = (e) => {
      e.preventDefault();
      const err = new Error(`the worker of engine ${id} failed: ${e.message || 'could not load worker.js or a module it imports'}`);
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    };
  }

  call(cmd, args) {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, cmd, args });
    });
  }

  terminate() {
    this.#worker.terminate();
    const err = new Error(`the worker of engine ${this.id} was terminated`);
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }
}

/** Runs `f` with a fresh worker for engine `id`, terminated afterwards. */
async function withWorker(id, f, onProgress) {
  const w = new EngineWorker(id, onProgress);
  try {
    return await f(w);
  } finally {
    w.terminate();
  }
}

/** The ids of the engine adapters the server has (bench/browser/engines/*.js). */
export async function listEngines() {
  const res = await fetch(new URL('./engines/', import.meta.url));
  if (!res.ok) throw new Error(`GET /bench/engines/ answered ${res.status}`);
  const ids = await res.json();
  return sortEngines(ids);
}

/** Engine ids (configurations included, `engine:config`) in the order tables show them. */
export function sortEngines(ids) {
  const rank = (id) => {
    const base = id.split(':')[0];
    return ORDER.includes(base) ? ORDER.indexOf(base) : ORDER.length;
  };
  return [...ids].sort(
    (a, b) =>
      rank(a) - rank(b) || a.split(':')[0].localeCompare(b.split(':')[0]) || (a.includes(':') ? 1 : 0) - (b.includes(':') ? 1 : 0) || a.localeCompare(b),
  );
}

/**
 * What engine `id` is, and whether it can run: { id, available, reason?,
 * label, storage, options, files, persistent }. An adapter whose module
 * does not load, or whose shipped files the server lacks (a vendor build
 * not built), is unavailable, with the reason.
 */
export async function describe(id) {
  try {
    const d = await withWorker(id, (w) => w.call('describe'));
    if (d.missing.length > 0) {
      return { ...d, available: false, reason: `its files are not built or not served: ${d.missing.join(', ')}` };
    }
    return { ...d, available: true };
  } catch (e) {
    return { id, available: false, reason: e.message };
  }
}

/** Runs the suite for one engine in a fresh worker; the database is left in place. */
export function runEngine(id, params, onProgress) {
  return withWorker(id, (w) => w.call('suite', { name: dbName(id), ...params }), onProgress);
}

/** Reopens what the suite left, in a fresh worker, and checks a sample of keys. */
export function verify(id, params) {
  return withWorker(id, (w) => w.call('verify', { name: dbName(id), ...params }));
}

export function destroy(id) {
  return withWorker(id, (w) => w.call('destroy', { name: dbName(id) }));
}

async function gzipSize(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream('gzip'));
  return (await new Response(stream).arrayBuffer()).byteLength;
}

/** Raw and gzipped bytes of the files an engine ships (CompressionStream's gzip). */
export async function bundleSizes(files) {
  let raw = 0;
  let gzip = 0;
  for (const f of files) {
    const res = await fetch(f);
    if (!res.ok) throw new Error(`GET ${f} answered ${res.status}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    raw += bytes.length;
    gzip += await gzipSize(bytes);
  }
  return { files: files.length, raw, gzip };
}

/**
 * Runs one of Silt's own tables (scenarios.js: `multiGetTable`,
 * `iteratorTable`) in a fresh worker; resolves to its result.
 */
export function runScenario(name, params, onProgress) {
  return withWorker('silt', (w) => w.call('scenario', { name, params }), onProgress);
}
