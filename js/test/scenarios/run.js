// Runs the shared scenarios (index.js) against one API: the part of the
// runners that vitest (js/test/scenarios.test.ts) and the browser pages
// (tests/pages/shared-scenarios.js, harness-worker.js) share.

/**
 * One API to run scenarios against.
 * @typedef {object} Target
 * @property {'worker' | 'connect'} api
 * @property {boolean} sublevel  run each scenario on a sublevel of each database it opens
 * @property {import('./scenario.js').Lib} lib
 * @property {(options: Record<string, unknown>) => Promise<any>} openRoot  a new, empty database, opened with `options`
 * @property {(db: any) => Promise<void> | void} closeRoot  closes a database `openRoot` opened (it may be closed already)
 */

/**
 * An outcome of a scenario in a browser run (plain data, to cross to the test).
 * @typedef {object} Outcome
 * @property {string} name
 * @property {boolean} ok
 * @property {number} ms  how long it took
 * @property {string} [error]
 * @property {string} [differs]  the known difference it fails for on this API
 */

/** The name of the sublevel the scenarios run on, when they run on one. */
export const SUBLEVEL = 'scenario';

/**
 * `options` of an open split in two: the encodings (a sublevel's, or what
 * `connect()` keeps on the page) and the rest (the database's).
 * @param {Record<string, unknown>} options
 * @returns {{ encodings: Record<string, unknown>, engine: Record<string, unknown> }}
 */
export function splitOptions(options) {
  const { keyEncoding, valueEncoding, ...engine } = options;
  return { encodings: { ...(keyEncoding === undefined ? {} : { keyEncoding }), ...(valueEncoding === undefined ? {} : { valueEncoding }) }, engine };
}

/**
 * Whether scenario `s` runs on a sublevel (`sublevel`) or a database.
 * @param {import('./scenario.js').Scenario} s
 * @param {boolean} sublevel
 */
export function applies(s, sublevel) {
  return !(sublevel && s.rootOnly);
}

/**
 * Runs `s` against `target`; throws what it throws. Every database it
 * opened is closed afterwards.
 * @param {import('./scenario.js').Scenario} s
 * @param {Target} target
 */
export async function runScenario(s, target) {
  const roots = [];
  /** @type {import('./scenario.js').Context} */
  const context = {
    api: target.api,
    sublevel: target.sublevel,
    lib: target.lib,
    async open(options = {}) {
      if (!target.sublevel) {
        const db = await target.openRoot(options);
        roots.push(db);
        return db;
      }
      const { encodings, engine } = splitOptions(options);
      const root = await target.openRoot(engine);
      roots.push(root);
      return root.sublevel(SUBLEVEL, encodings);
    },
  };
  try {
    await s.run(context);
  } finally {
    for (const db of roots) await target.closeRoot(db);
  }
}

/**
 * The name of scenario `name` of suite `suite` in a browser run's outcomes.
 * @param {string} suite
 * @param {string} name
 */
export const qualified = (suite, name) => `${suite}: ${name}`;

/**
 * The names of every scenario of `suites` that runs on a sublevel
 * (`sublevel`) or on a database, as a browser run of them reports them.
 * @param {[string, import('./scenario.js').Scenario[]][]} suites
 * @param {boolean} sublevel
 */
export function namesOf(suites, sublevel) {
  return suites.flatMap(([suite, scenarios]) => scenarios.filter((s) => applies(s, sublevel)).map((s) => qualified(suite, s.name)));
}

/**
 * Runs every scenario of suite `suite` that applies to `target`, one after
 * another, and resolves to their outcomes (a browser run's report).
 * @param {string} suite
 * @param {import('./scenario.js').Scenario[]} scenarios
 * @param {Target} target
 * @returns {Promise<Outcome[]>}
 */
export async function runAll(suite, scenarios, target) {
  const out = [];
  for (const s of scenarios) {
    if (!applies(s, target.sublevel)) continue;
    const name = qualified(suite, s.name);
    const differs = s.differs?.[target.api];
    const t0 = performance.now();
    try {
      await runScenario(s, target);
      out.push({ name, ok: true, ms: performance.now() - t0, ...(differs === undefined ? {} : { differs }) });
    } catch (e) {
      const error = /** @type {{ name?: string, code?: string, message?: string, stack?: string }} */ (e);
      const text = `${error?.name ?? 'Error'}${error?.code ? ` ${error.code}` : ''}: ${error?.message ?? String(e)}`;
      out.push({ name, ok: false, ms: performance.now() - t0, error: text, ...(differs === undefined ? {} : { differs }) });
    }
  }
  return out;
}

/**
 * What is wrong with a run's outcomes: a scenario that failed, and one
 * marked as failing on this API (`differs`) that passed (the difference
 * is gone: remove the mark).
 * @param {Outcome[]} outcomes
 * @returns {string[]}
 */
export function problems(outcomes) {
  const out = [];
  for (const o of outcomes) {
    if (o.differs === undefined && !o.ok) out.push(`${o.name}: ${o.error}`);
    if (o.differs !== undefined && o.ok) out.push(`${o.name}: passed, though marked as differing here (${o.differs}); remove the mark`);
  }
  return out;
}
