// What a shared scenario is, and what its body gets (index.js has the
// suite; run.js runs it). A scenario is written once, with `await` on
// every call, against whatever database `t.open()` hands out: a worker's
// `Database` from `open()`, whose calls are synchronous (awaiting them
// changes nothing), or a page's `RemoteDatabase` from `connect()`, whose
// calls return Promises; and either may be a sublevel (as abstract-level
// runs its suite on a database and again on a sublevel). Its checks are
// check.js's: this file and the scenarios import nothing else, so that the
// same files run in vitest and in a browser.

/**
 * What a scenario's body gets.
 * @typedef {object} Context
 * @property {'worker' | 'connect'} api  which API `open` hands out (for messages: a body is the same for both)
 * @property {boolean} sublevel  whether `open` hands out a sublevel of a new database rather than the database
 * @property {(options?: Record<string, unknown>) => Promise<any>} open
 *   A new, empty database of the API under test, opened with `options`
 *   (engine options and encodings, as `open()` and `connect()` take them);
 *   the runner closes it after the scenario.
 * @property {Lib} lib  the package's exports the scenarios use
 */

/**
 * The package's exports the scenarios use (from `siltdb` in vitest or
 * `/siltdb/dist/index.js` in a browser: never imported here).
 * @typedef {object} Lib
 * @property {new (...args: never[]) => Error} SiltError
 * @property {(n: number | bigint) => Uint8Array} u64
 * @property {(b: Uint8Array) => bigint} readU64
 */

/**
 * One scenario.
 * @typedef {object} Scenario
 * @property {string} name
 * @property {(t: Context) => Promise<void>} run
 * @property {boolean} [rootOnly]  whether it needs a database, not a sublevel (backups of a whole database, say)
 * @property {Partial<Record<'worker' | 'connect', string>>} [differs]
 *   A difference between the APIs, known and not fixed yet: on the API
 *   named, the scenario fails (for the reason given), and the runners
 *   require that it still does, so that a fix shows.
 */

/**
 * @param {string} name
 * @param {(t: Context) => Promise<void>} run
 * @param {Omit<Scenario, 'name' | 'run'>} [options]
 * @returns {Scenario}
 */
export function scenario(name, run, options = {}) {
  return { name, run, ...options };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** @param {string} s */
export const bytes = (s) => encoder.encode(s);

/** @param {Uint8Array | undefined} b */
export const text = (b) => (b === undefined ? undefined : decoder.decode(b));

/**
 * Every item of an iterator, sync or async, with `for await`.
 * @template T
 * @param {AsyncIterable<T> | Iterable<T>} it
 * @returns {Promise<T[]>}
 */
export async function collect(it) {
  const out = [];
  for await (const x of it) out.push(x);
  return out;
}

/**
 * The entries of an iterator of bytes, as text.
 * @param {AsyncIterable<[Uint8Array, Uint8Array]> | Iterable<[Uint8Array, Uint8Array]>} it
 * @returns {Promise<[string | undefined, string | undefined][]>}
 */
export async function textEntries(it) {
  return (await collect(it)).map(([k, v]) => [text(k), text(v)]);
}

/**
 * The keys of an iterator of bytes entries (or of bytes keys), as text.
 * @param {AsyncIterable<[Uint8Array, Uint8Array] | Uint8Array> | Iterable<[Uint8Array, Uint8Array] | Uint8Array>} it
 * @returns {Promise<(string | undefined)[]>}
 */
export async function textKeys(it) {
  return (await collect(it)).map((x) => text(Array.isArray(x) ? x[0] : x));
}

/** Waits `ms` (a timer: other work runs meanwhile). @param {number} ms */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A key of `i` padded to `width` digits. @param {number} i @param {number} [width] */
export const key = (i, width = 4) => `k${String(i).padStart(width, '0')}`;
