/**
 * Checking and encoding keys and values at the boundary, before anything
 * reaches wasm memory.
 */

import { SiltError } from './errors.js';
import { isWasmMemory } from '../boundary/wasm.js';

/** A key: bytes, or a string stored as its UTF-8 encoding. */
export type Key = Uint8Array | string;

const utf8 = new TextEncoder();
const EMPTY = new Uint8Array(0);

/** Whether `buffer` was detached (transferred to a worker or another buffer). */
function isDetached(buffer: ArrayBufferLike): boolean {
  const flag = (buffer as { detached?: unknown }).detached;
  if (typeof flag === 'boolean') return flag;
  try {
    new Uint8Array(buffer, 0, 0); // throws on a detached buffer
    return false;
  } catch {
    return true;
  }
}

/**
 * Bytes the boundary can read safely: a view of a detached buffer is
 * refused (reading it would throw a TypeError deep in the bindings); an
 * empty or out-of-bounds view reads as empty; a view of wasm memory (a
 * pinned value given back) is copied first, since the call may grow memory
 * and detach it.
 */
export function checkedBytes(bytes: Uint8Array, what: string): Uint8Array {
  if (bytes.byteLength === 0) {
    if (isDetached(bytes.buffer)) {
      throw new SiltError('InvalidArgument', `${what} is a view of a detached ArrayBuffer (it was transferred); pass bytes that are still there`);
    }
    return EMPTY;
  }
  return isWasmMemory(bytes.buffer) ? bytes.slice() : bytes;
}

/**
 * A Uint8Array made in another realm (an iframe's, a worker's message
 * already arrives as this realm's) as a view of this realm's over the same
 * bytes, so that every later check takes it; undefined for anything else.
 * (`instanceof` is false across realms; `ArrayBuffer.isView` and the
 * `Symbol.toStringTag` getter of typed arrays are not.)
 */
export function foreignBytes(x: unknown): Uint8Array | undefined {
  if (typeof x !== 'object' || x === null || x instanceof Uint8Array || !ArrayBuffer.isView(x)) return undefined;
  if (Object.prototype.toString.call(x) !== '[object Uint8Array]') return undefined;
  const v = x as Uint8Array;
  try {
    return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  } catch {
    return new Uint8Array(0); // its buffer was detached: checkedBytes says so by name
  }
}

/**
 * The bytes of `key`. A string is UTF-8 encoded; a string with a lone
 * surrogate is refused, because the encoder would replace it with U+FFFD and
 * two different strings would then name the same key.
 */
export function keyBytes(key: unknown, what = 'key'): Uint8Array {
  if (key instanceof Uint8Array) return checkedBytes(key, what);
  if (typeof key === 'string') {
    // Short ASCII keys (most keys) by hand: a call of TextEncoder costs
    // more than encoding them (about 1 µs each in V8).
    const n = key.length;
    if (n <= ASCII_FAST_PATH) {
      const out = new Uint8Array(n);
      let i = 0;
      for (; i < n; i++) {
        const c = key.charCodeAt(i);
        if (c >= 0x80) break;
        out[i] = c;
      }
      if (i === n) return out;
    }
    if (!key.isWellFormed()) {
      throw new SiltError('InvalidArgument', `${what} is a string with a lone surrogate; it has no UTF-8 encoding`);
    }
    return utf8.encode(key);
  }
  const foreign = foreignBytes(key);
  if (foreign !== undefined) return foreign.byteLength === 0 ? checkedBytes(key as Uint8Array, what) : foreign;
  throw new SiltError(
    'InvalidArgument',
    `${what} must be a Uint8Array or a string, got ${describe(key)}: convert it (String(n)), or open the database with a keyEncoding that takes it ('json')`,
  );
}

/** Strings up to this long are tried as ASCII first (`keyBytes`). */
const ASCII_FAST_PATH = 64;

/** The bytes of `value`, which must already be a `Uint8Array`. */
export function valueBytes(value: unknown, what = 'value'): Uint8Array {
  if (value instanceof Uint8Array) return checkedBytes(value, what);
  const foreign = foreignBytes(value);
  if (foreign !== undefined) return foreign.byteLength === 0 ? checkedBytes(value as Uint8Array, what) : foreign;
  const fix =
    what === 'operand'
      ? "merge operands are bytes whatever the valueEncoding (for 'u64add', u64(n) makes one)"
      : typeof value === 'string'
        ? "this database (or sublevel) stores bytes: open it with { valueEncoding: 'utf8' } to store strings, or pass new TextEncoder().encode(value)"
        : "this database (or sublevel) stores bytes: open it with { valueEncoding: 'json' } (or your own encoding) to store other values";
  throw new SiltError('InvalidArgument', `${what} must be a Uint8Array, got ${describe(value)}: ${fix}`);
}

function describe(x: unknown): string {
  if (x === null) return 'null';
  if (typeof x === 'object') return (x as object).constructor?.name ?? 'object';
  return typeof x;
}

/**
 * A value for an error message, whatever it is: `String(x)` throws for a
 * Symbol in a template, for a typed array over a detached buffer, and for
 * objects whose `toString` throws.
 */
function show(x: unknown): string {
  switch (typeof x) {
    case 'string':
      return JSON.stringify(x.length > 64 ? `${x.slice(0, 64)}...` : x);
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(x);
    case 'bigint':
      return `${x}n`;
    case 'symbol':
      return x.toString();
    default:
      return describe(x);
  }
}

/** Many keys back to back in one buffer, and their lengths. */
export function packKeys(keys: unknown): { buf: Uint8Array; lens: Uint32Array } {
  if (!Array.isArray(keys)) {
    throw new SiltError('InvalidArgument', `keys must be an array of keys, got ${describe(keys)}`);
  }
  const parts = keys.map((k, i) => keyBytes(k, `keys[${i}]`));
  const lens = new Uint32Array(parts.length);
  let total = 0;
  parts.forEach((p, i) => {
    lens[i] = p.length;
    total += p.length;
  });
  const buf = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    buf.set(p, at);
    at += p.length;
  }
  return { buf, lens };
}

/** The smallest key after `key` in byte order: `key` followed by a zero. */
export function successor(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length + 1);
  out.set(key);
  return out;
}

/** Byte order of two keys: bytewise, a key before the longer keys it is a prefix of. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/**
 * Refuses a range whose `end` (stored bytes, excluded) comes before its
 * `start` (included), as RocksDB's `DeleteRange` does: such a range is a
 * mistake (the bounds swapped), not an empty one. `start` equal to `end`
 * is an empty range, allowed. `start`, `end`: the keys as given, for the
 * message.
 */
export function checkRangeOrder(s: Uint8Array, e: Uint8Array, start: unknown, end: unknown): void {
  if (compareBytes(s, e) > 0) {
    throw new SiltError(
      'InvalidArgument',
      `deleteRange(start, end) removes the keys from start (included) to end (excluded), but end ${show(end)} sorts before start ${show(start)}: swap them (keys sort by their bytes)`,
    );
  }
}

export { describe, show };
