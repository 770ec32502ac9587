// The assertions of the shared scenarios (index.js): plain JavaScript, so
// that one file runs in vitest (Node) and in a browser page or worker,
// where there is no `expect`. A failed check throws a `CheckFailed` with
// `actual` and `expected`, which vitest shows as a diff.

/** A check that did not hold. */
export class CheckFailed extends Error {
  /**
   * @param {string} message
   * @param {{ actual: unknown, expected: unknown }} [diff]  what was compared
   */
  constructor(message, diff) {
    super(message);
    this.name = 'CheckFailed';
    if (diff !== undefined) {
      this.actual = diff.actual;
      this.expected = diff.expected;
      this.showDiff = true;
    }
  }
}

/**
 * Whether `a` and `b` are equal as vitest's `toEqual` says: primitives by
 * `Object.is`, arrays and typed arrays element by element (of the same
 * kind), other objects by their own enumerable properties, where one
 * holding `undefined` is one not there.
 * @param {unknown} a
 * @param {unknown} b
 * @returns {boolean}
 */
export function equal(a, b) {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) {
    if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a.constructor.name !== b.constructor.name) return false;
    const x = /** @type {ArrayLike<number>} */ (/** @type {unknown} */ (a));
    const y = /** @type {ArrayLike<number>} */ (/** @type {unknown} */ (b));
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) return false;
    return true;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => equal(v, b[i]));
  const ka = Object.keys(a).filter((k) => /** @type {Record<string, unknown>} */ (a)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => /** @type {Record<string, unknown>} */ (b)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && equal(/** @type {Record<string, unknown>} */ (a)[k], /** @type {Record<string, unknown>} */ (b)[k]));
}

/**
 * A value, short, for a message: bytes as their text where it is
 * printable, bigints with their `n`.
 * @param {unknown} v
 * @returns {string}
 */
export function show(v) {
  try {
    const s = JSON.stringify(v, (_, x) => {
      if (x === undefined) return '(undefined)';
      if (typeof x === 'bigint') return `${x}n`;
      if (x instanceof Uint8Array) {
        const t = new TextDecoder().decode(x);
        return /^[\x20-\x7e]*$/.test(t) ? `bytes(${t})` : `bytes[${Array.from(x.subarray(0, 32)).join(',')}${x.length > 32 ? ',…' : ''}]`;
      }
      return x;
    });
    return s === undefined ? String(v) : s.length > 300 ? `${s.slice(0, 300)}…` : s;
  } catch {
    return String(v);
  }
}

/**
 * Checks that `actual` equals `expected` (`equal`).
 * @param {unknown} actual
 * @param {unknown} expected
 * @param {string} [what]  what is checked, for the message
 */
export function eq(actual, expected, what = 'value') {
  if (!equal(actual, expected)) throw new CheckFailed(`${what}: expected ${show(expected)}, got ${show(actual)}`, { actual, expected });
}

/**
 * Checks that `condition` holds.
 * @param {unknown} condition
 * @param {string} what  what should hold, for the message
 */
export function ok(condition, what) {
  if (!condition) throw new CheckFailed(`expected ${what}`);
}

/**
 * What `f` throws or rejects with: a SiltError's code, `'none'` when it
 * does neither, or what else it threw.
 * @param {() => unknown} f
 * @returns {Promise<string>}
 */
export async function codeOf(f) {
  try {
    await f();
    return 'none';
  } catch (e) {
    const err = /** @type {{ name?: unknown, code?: unknown }} */ (e);
    return err?.name === 'SiltError' && typeof err.code === 'string' ? err.code : `not a SiltError: ${String(e)}`;
  }
}

/**
 * Checks that `f` throws, or rejects with, a SiltError of code `code` (whose
 * message matches `message`, if given), and returns it.
 * @param {() => unknown} f
 * @param {string} code
 * @param {RegExp} [message]
 * @returns {Promise<Error & { code: string }>}
 */
export async function fails(f, code, message) {
  let error;
  try {
    await f();
  } catch (e) {
    error = /** @type {Error & { code: string }} */ (e);
  }
  if (error === undefined) throw new CheckFailed(`expected a SiltError ${code}, nothing was thrown`);
  if (error.name !== 'SiltError' || error.code !== code) {
    throw new CheckFailed(`expected a SiltError ${code}, got ${error.name} ${error.code ?? ''}: ${error.message}`, {
      actual: `${error.name} ${error.code}`,
      expected: `SiltError ${code}`,
    });
  }
  if (message !== undefined && !message.test(error.message)) throw new CheckFailed(`expected a message matching ${message}, got "${error.message}"`);
  return error;
}
