/**
 * Operands and values of the `'u64add'` merge operator: unsigned 64-bit
 * integers, 8 bytes little-endian, added with wrap-around.
 */

import { foreignBytes, show } from './bytes.js';
import { SiltError } from './errors.js';

const U64 = 2n ** 64n;

/**
 * `n` as a `'u64add'` operand or value (8 bytes, little-endian). A negative
 * `n` (down to -2^63) is its two's complement, so merging it subtracts:
 * `db.merge(key, u64(-1))` counts down.
 */
export function u64(n: number | bigint): Uint8Array {
  let v: bigint;
  if (typeof n === 'bigint') v = n;
  else if (typeof n === 'number' && Number.isSafeInteger(n)) v = BigInt(n);
  else throw new SiltError('InvalidArgument', `u64() takes an integer (a safe number or a bigint), got ${show(n)}`);
  if (v < -(2n ** 63n) || v >= U64) throw new SiltError('InvalidArgument', `u64() takes -2^63 to 2^64 - 1, got ${v}`);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, (v + U64) % U64, true);
  return out;
}

/** The unsigned 64-bit integer in 8 little-endian bytes (a `'u64add'` value). */
export function readU64(bytes: Uint8Array): bigint {
  const b = foreignBytes(bytes) ?? bytes; // (one of another realm: viewed as this realm's)
  if (!(b instanceof Uint8Array) || b.length !== 8) {
    throw new SiltError('InvalidArgument', `readU64() takes 8 bytes, got ${b instanceof Uint8Array ? `${b.length} bytes` : show(b)}`);
  }
  return new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, true);
}
