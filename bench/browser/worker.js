// The generic benchmark worker: one dedicated module worker per engine.
// `new Worker('/bench/worker.js?engine=<id>', { type: 'module' })` loads the
// adapter bench/browser/engines/<id>.js and then answers requests. An id
// `<engine>:<config>` (say `sqlite:exclusive`) loads the same adapter and
// runs it as `adapter.withConfig(config)` (another configuration of the
// same engine, e.g. its library defaults)
//
//   { id, cmd: 'describe' }                 the adapter's label, storage, options, files, and
//                                           which of its files the server does not have
//   { id, cmd: 'suite', args: params }      runSuite (workloads.js); posts { progress } meanwhile
//   { id, cmd: 'verify', args: params }     verifyPersisted (workloads.js)
//   { id, cmd: 'destroy', args: { name } }  the adapter's destroy(name)
//   { id, cmd: 'scenario', args: { name, params } }
//                                           one of Silt's own tables (scenarios.js), whatever
//                                           the engine; posts { progress } meanwhile
//
// with { id, ok: true, value } or { id, ok: false, error: { name, message, stack } }.
// Module workers cannot resolve bare specifiers: adapters import by URL.
import { runSuite, verifyPersisted } from './workloads.js';

const REQUIRED = ['open', 'putBatch', 'get', 'multiGet', 'scan', 'close', 'destroy'];
const ID = /^[a-z0-9][a-z0-9_-]{0,63}(:[a-z0-9][a-z0-9_-]{0,31})?$/;

const engine = new URL(self.location.href).searchParams.get('engine');
let adapter;

/** Imports and checks the adapter once; every error names the engine and what is wrong. */
function load() {
  adapter ??= (async () => {
    if (engine === null || !ID.test(engine)) {
      throw new Error(`the worker needs ?engine=<id> or <id>:<config> (lower-case letters, digits, '-', '_'); got ${JSON.stringify(engine)}`);
    }
    const [base, config] = engine.split(':');
    let mod;
    try {
      mod = await import(`./engines/${base}.js`);
    } catch (e) {
      throw new Error(`engine ${engine}: could not load /bench/engines/${base}.js: ${e?.message ?? e}`, { cause: e });
    }
    let a = mod.default;
    if (a === null || typeof a !== 'object') throw new Error(`engine ${engine}: /bench/engines/${base}.js has no default export object`);
    if (config !== undefined) {
      const known = Object.keys(a.configs ?? {});
      if (typeof a.withConfig !== 'function' || !known.includes(config)) {
        throw new Error(`engine ${engine}: the adapter has no configuration ${JSON.stringify(config)} (it has: ${known.join(', ') || 'none'})`);
      }
      a = await a.withConfig(config);
    }
    if (a.id !== engine) throw new Error(`engine ${engine}: the adapter's id is ${JSON.stringify(a.id)}, not its file name`);
    const missing = REQUIRED.filter((f) => typeof a[f] !== 'function');
    if (missing.length > 0) throw new Error(`engine ${engine}: the adapter lacks ${missing.map((f) => `${f}()`).join(', ')}`);
    if (!Array.isArray(a.files)) throw new Error(`engine ${engine}: the adapter's files must be an array of URLs`);
    return a;
  })();
  return adapter;
}

/** The adapter's files that the server does not have (HEAD requests). */
async function missingFiles(a) {
  const missing = [];
  for (const f of a.files) {
    const res = await fetch(f, { method: 'HEAD' }).catch(() => undefined);
    if (!res?.ok) missing.push(f);
  }
  return missing;
}

const commands = {
  async describe() {
    const a = await load();
    const { id, label, storage, options, files, persistent } = a;
    return {
      configs: id.includes(':') ? [] : Object.keys(a.configs ?? {}),
      id,
      label: String(label ?? id),
      storage: String(storage ?? '?'),
      options: options ?? {},
      files,
      persistent: persistent === true,
      missing: await missingFiles(a),
    };
  },
  async suite(params) {
    const a = await load();
    return runSuite(a, params, (text) => self.postMessage({ progress: text }));
  },
  async verify(params) {
    return verifyPersisted(await load(), params);
  },
  async destroy({ name }) {
    await (await load()).destroy(name);
    return true;
  },
  async scenario({ name, params }) {
    const scenarios = await import('./scenarios.js');
    const f = scenarios.TABLES[name];
    if (typeof f !== 'function') throw new Error(`unknown scenario ${JSON.stringify(name)}; there are ${Object.keys(scenarios.TABLES).join(', ')}`);
    return f(params, (text) => self.postMessage({ progress: text }));
  },
};

self.onmessage = async (e) => {
  const { id, cmd, args } = e.data ?? {};
  try {
    const f = commands[cmd];
    if (!f) throw new Error(`unknown command ${JSON.stringify(cmd)}`);
    self.postMessage({ id, ok: true, value: await f(args ?? {}) });
  } catch (err) {
    const error = { name: err?.name ?? 'Error', message: err?.message ?? String(err), code: err?.code, stack: err?.stack };
    self.postMessage({ id, ok: false, error });
  }
};
