/**
 * Checking and encoding keys and values at the boundary, before anything
 * reaches wasm memory.
 */

import { SiltError } from './errors.js';

/** A key: bytes, or a string stored as its UTF-8 encoding. */
export type Key = Uint8Array | string;

const utf8 = new TextEncoder();

/**
 * The bytes of `key`. A string is UTF-8 encoded; a string with a lone
 * surrogate is refused, because the encoder would replace it with U+FFFD and
 * two different strings would then name the same key.
 */
export function keyBytes(key: unknown, what = 'key'): Uint8Array {
  if (key instanceof Uint8Array) return key;
  if (typeof key === 'string') {
    if (!key.isWellFormed()) {
      throw new SiltError('InvalidArgument', `${what} is a string with a lone surrogate; it has no UTF-8 encoding`);
    }
    return utf8.encode(key);
  }
  throw new SiltError('InvalidArgument', `${what} must be a Uint8Array or a string, got ${describe(key)}`);
}

/** The bytes of `value`, which must already be a `Uint8Array`. */
export function valueBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  throw new SiltError('InvalidArgument', `value must be a Uint8Array, got ${describe(value)}`);
}

function describe(x: unknown): string {
  if (x === null) return 'null';
  if (typeof x === 'object') return (x as object).constructor?.name ?? 'object';
  return typeof x;
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

export { describe };
