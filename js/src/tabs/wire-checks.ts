/**
 * Checks of what arrives from another realm of the origin (issue 40, item
 * 2): the fields of each request the leader receives, declared with each
 * operation (operations.ts) and step (leader-steps.ts) beside the type of
 * its request, and the answers and change records a connection receives.
 * Another tab may run an older or newer siltdb (after a deploy, until it
 * reloads) or code with a bug: what it sends is read only once its shape
 * is known, so that it gets a typed error back (or is dropped and counted)
 * and never makes the leader throw, stop its queue or misread a field.
 *
 * A check returns what the value should have been, or `undefined` when it
 * is fine: the leader's refusal names the field and that.
 */

/** What a value should be (undefined: it is). */
export type Check = (v: unknown) => string | undefined;

/** A check of each field of a request `W` (every field, optional ones included, and nothing else: a compile error otherwise). */
export type Fields<W> = { readonly [K in keyof W]-?: Check };

/** The largest count or number that travels (ids, counts, sequence numbers): a safe integer. */
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** A key: a string (UTF-8) or bytes. */
export const KEY: Check = (v) => (typeof v === 'string' || v instanceof Uint8Array ? undefined : 'a string or a Uint8Array');
export const BYTES: Check = (v) => (v instanceof Uint8Array ? undefined : 'a Uint8Array');
export const BOOL: Check = (v) => (typeof v === 'boolean' ? undefined : 'a boolean');
/** A number the protocol counts with: an id, a count, a sequence number. */
export const COUNT: Check = (v) => (isCount(v) ? undefined : 'a non-negative integer');
/** A leader's or connection's id (what `crypto.randomUUID()` and the like make). */
export const NAME: Check = (v) => (typeof v === 'string' && v.length > 0 && v.length <= 200 ? undefined : 'a string of 1 to 200 characters');
export const KEYS: Check = (v) => {
  if (!Array.isArray(v)) return 'an array of keys';
  for (const k of v) if (KEY(k) !== undefined) return 'an array of keys (strings or Uint8Arrays)';
  return undefined;
};

export const optional =
  (c: Check): Check =>
  (v) => {
    if (v === undefined) return undefined;
    const bad = c(v);
    return bad === undefined ? undefined : `${bad} or absent`;
  };

export const nullable =
  (c: Check): Check =>
  (v) => {
    if (v === null) return undefined;
    const bad = c(v);
    return bad === undefined ? undefined : `${bad} or null`;
  };

export const oneOf =
  (...values: readonly string[]): Check =>
  (v) =>
    typeof v === 'string' && values.includes(v) ? undefined : `one of ${values.map((x) => `'${x}'`).join(', ')}`;

/** A plain object whose fields pass `fields` (each optional one absent or fine), with no other field. */
export function record(fields: Readonly<Record<string, Check>>): Check {
  return (v) => {
    if (!isObject(v)) return 'an object';
    const bad = checkFields(v, fields);
    return bad === undefined ? undefined : `an object whose ${bad}`;
  };
}

/** Whether `v` is a non-null object (not an array). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * What is wrong with the fields of `o` (`skip`: fields checked elsewhere,
 * like a request's `op`), or undefined: each field of `fields` passes its
 * check (absent counts as `undefined`), and `o` has no other.
 */
export function checkFields(o: Record<string, unknown>, fields: Readonly<Record<string, Check>>, skip?: string): string | undefined {
  for (const name in o) {
    if (name !== skip && !Object.hasOwn(fields, name)) return `field ${name} is not one it has`;
  }
  for (const name in fields) {
    const bad = fields[name]!(o[name]);
    if (bad !== undefined) return `field ${name} should be ${bad}`;
  }
  return undefined;
}

/**
 * Whether `r` is a change record as a leader of this protocol writes one
 * (`ChangeRecord`): its arrays of the right kinds and lengths, every key's
 * bounds inside its bytes. A watch reads nothing else.
 */
export function isChangeRecord(r: unknown): boolean {
  if (!isObject(r)) return false;
  const { first, last, kinds, bounds, keys, from } = r;
  if (COUNT(first) !== undefined || COUNT(last) !== undefined || (last as number) < (first as number) - 1 || NAME(from) !== undefined) return false;
  if (!(kinds instanceof Uint8Array) || !(bounds instanceof Uint32Array) || !(keys instanceof Uint8Array)) return false;
  const n = kinds.length;
  if (bounds.length !== 2 * n + 1) return false;
  for (let i = 0; i + 1 < bounds.length; i++) if (bounds[i]! > bounds[i + 1]! || bounds[i + 1]! > keys.length) return false;
  for (const k of kinds) if (k > 5) return false;
  return r.values === undefined || isRecordValues(r.values, n);
}

/** A change record's values: a length for each of its `n` updates (-1: none), the bytes of all of them. */
function isRecordValues(v: unknown, n: number): boolean {
  if (!isObject(v) || !(v.bytes instanceof Uint8Array) || !(v.lens instanceof Int32Array) || v.lens.length !== n) return false;
  let total = 0;
  for (const l of v.lens) {
    if (l < -1) return false;
    if (l > 0) total += l;
  }
  return total === v.bytes.length;
}
