/**
 * `WriteBatch`: updates applied atomically by `db.write(batch)`.
 *
 * The batch is encoded as it is built, into one buffer that crosses into
 * wasm once (format in crates/wasm/src/batch.rs):
 * `0x01 klen:u32 vlen:u32 key value` for a put, `0x00 klen:u32 key` for a
 * delete, `0x03 slen:u32 elen:u32 start end` for a range delete,
 * little-endian.
 */

import { keyBytes, valueBytes, type Key } from './bytes.js';

const PUT = 0x01;
const DELETE = 0x00;
const DELETE_RANGE = 0x03;

export class WriteBatch {
  #buf: Uint8Array = new Uint8Array(256);
  #len = 0;
  #count = 0;

  /** Sets `key` to `value` when the batch is written. */
  put(key: Key, value: Uint8Array): this {
    const k = keyBytes(key);
    const v = valueBytes(value);
    this.#reserve(9 + k.length + v.length);
    this.#buf[this.#len++] = PUT;
    this.#u32(k.length);
    this.#u32(v.length);
    this.#buf.set(k, this.#len);
    this.#len += k.length;
    this.#buf.set(v, this.#len);
    this.#len += v.length;
    this.#count++;
    return this;
  }

  /** Removes `key` when the batch is written. */
  delete(key: Key): this {
    const k = keyBytes(key);
    this.#reserve(5 + k.length);
    this.#buf[this.#len++] = DELETE;
    this.#u32(k.length);
    this.#buf.set(k, this.#len);
    this.#len += k.length;
    this.#count++;
    return this;
  }

  /** Removes every key from `start` (included) to `end` (excluded). */
  deleteRange(start: Key, end: Key): this {
    const s = keyBytes(start, 'start');
    const e = keyBytes(end, 'end');
    this.#reserve(9 + s.length + e.length);
    this.#buf[this.#len++] = DELETE_RANGE;
    this.#u32(s.length);
    this.#u32(e.length);
    this.#buf.set(s, this.#len);
    this.#len += s.length;
    this.#buf.set(e, this.#len);
    this.#len += e.length;
    this.#count++;
    return this;
  }

  /** Updates in the batch. */
  get length(): number {
    return this.#count;
  }

  /** Bytes of the encoded batch. */
  get byteLength(): number {
    return this.#len;
  }

  /** Empties the batch for reuse. */
  clear(): void {
    this.#len = 0;
    this.#count = 0;
  }

  /**
   * The encoded updates (a view of the batch's buffer, valid until the
   * batch changes). For `db.write` and for sending a batch to a worker.
   */
  encoded(): Uint8Array {
    return this.#buf.subarray(0, this.#len);
  }

  /** @internal A batch from another batch's `encoded()` and `length` (for workers). */
  static fromEncoded(bytes: Uint8Array, count: number): WriteBatch {
    const b = new WriteBatch();
    b.#buf = bytes;
    b.#len = bytes.length;
    b.#count = count;
    return b;
  }

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
  }

  #u32(x: number): void {
    const b = this.#buf;
    let at = this.#len;
    b[at++] = x & 0xff;
    b[at++] = (x >>> 8) & 0xff;
    b[at++] = (x >>> 16) & 0xff;
    b[at++] = (x >>> 24) & 0xff;
    this.#len = at;
  }
}
