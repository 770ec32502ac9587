// Named scenarios run in a test worker by message, both sides:
// - in the worker (harness-worker.js, reliability-worker.js): `serve`;
// - on the page (harness.js, reliability-page.js): `WorkerClient` starts the
//   worker, runs scenarios in it, keeps the progress it reports, and turns
//   its failures into rejected calls.
let nextCall = 1;

export class WorkerClient {
  /** Starts a module worker running `url`. */
  constructor(url) {
    this.worker = new Worker(url, { type: 'module' });
    this.pending = new Map();
    /** The latest of each field the worker reported. */
    this.progress = {};
    /** The worker's uncaught error, if any ({ code: 'WorkerError', message }). */
    this.failure = undefined;
    this.worker.addEventListener('message', ({ data }) => {
      if (data.progress) {
        Object.assign(this.progress, data.progress);
        return;
      }
      const p = this.pending.get(data.call);
      if (!p) return;
      this.pending.delete(data.call);
      if (data.ok) p.resolve(data.value);
      else p.reject(Object.assign(new Error(data.error.message), { code: data.error.code }));
    });
    this.worker.addEventListener('error', (e) => {
      // A script that fails to load (or a module it imports) fires a plain
      // Event, with no message.
      const what = e.message ? `uncaught in the worker: ${e.message} (${e.filename}:${e.lineno})` : 'the worker script or a module it imports failed to load';
      this.failure ??= { code: 'WorkerError', message: what };
      for (const p of this.pending.values()) p.reject(new Error(`worker error: ${what}`));
      this.pending.clear();
    });
  }

  /** Runs `scenario(args)` in the worker; resolves to its value. */
  call(scenario, args) {
    const call = nextCall++;
    return new Promise((resolve, reject) => {
      this.pending.set(call, { resolve, reject });
      this.worker.postMessage({ call, scenario, args });
    });
  }

  terminate() {
    this.worker.terminate();
  }
}

/**
 * In a worker: answers each { call, scenario, args } message with the
 * scenario's value, or its error's code and message.
 */
export function serve(scenarios) {
  self.addEventListener('message', async ({ data }) => {
    const { call, scenario, args } = data;
    try {
      const value = await scenarios[scenario](args);
      postMessage({ call, ok: true, value });
    } catch (e) {
      postMessage({ call, ok: false, error: { code: e?.code ?? 'none', message: String(e?.message ?? e) } });
    }
  });
}
