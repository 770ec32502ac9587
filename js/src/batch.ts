/**
 * `WriteBatch`: updates applied atomically by `db.write(batch)`.
 *
 * The batch is encoded as it is built, into one buffer that crosses into
 * wasm once (format in crates/wasm/src/batch.rs):
 * `0x01 klen:u32 vlen:u32 key value` for a put, `0x00 klen:u32 key` for a
 * delete, `0x02 klen:u32 vlen:u32 key operand` for a merge,
 * `0x03 slen:u32 elen:u32 start end` for a range delete, little-endian.
 */

import { keyBytes, valueBytes, type Key } from './bytes.js';
import { SiltError } from './errors.js';

/** One update of a batch, decoded (`end` for a range delete). */
export type BatchOp =
  | { kind: 'put'; key: Uint8Array; value: Uint8Array }
  | { kind: 'delete'; key: Uint8Array }
  | { kind: 'merge'; key: Uint8Array; value: Uint8Array }
  | { kind: 'deleteRange'; key: Uint8Array; end: Uint8Array };

const PUT = 0x01;
const DELETE = 0x00;
const MERGE = 0x02;
const DELETE_RANGE = 0x03;
const BOOKKEEPING_PUT = 0x81;

export class WriteBatch {
  #buf: Uint8Array = new Uint8Array(256);
  #len = 0;
  #count = 0;

  /** Sets `key` to `value` when the batch is written. */
  put(key: Key, value: Uint8Array): this {
    return this.#pair(PUT, key, value);
  }

  /**
   * Adds a merge operand for `key` when the batch is written (the database's
   * `mergeOperator` combines it with the value when read).
   */
  merge(key: Key, operand: Uint8Array): this {
    return this.#pair(MERGE, key, operand);
  }

  #pair(tag: number, key: Key, value: Uint8Array): this {
    const k = keyBytes(key);
    const v = valueBytes(value);
    this.#reserve(9 + k.length + v.length);
    this.#buf[this.#len++] = tag;
    this.#u32(k.length);
    this.#u32(v.length);
    this.#buf.set(k, this.#len);
    this.#len += k.length;
    this.#buf.set(v, this.#len);
    this.#len += v.length;
    this.#count++;
    return this;
  }

  /**
   * @internal A put of the package's own bookkeeping (a `connect()`
   * leader's write record): stored as a put, but a batch of deletes that
   * carries it still frees space in a full database (the engine's
   * `WriteBatch::put_bookkeeping`).
   */
  static putBookkeeping(b: WriteBatch, key: Uint8Array, value: Uint8Array): void {
    b.#reserve(9 + key.length + value.length);
    b.#buf[b.#len++] = BOOKKEEPING_PUT;
    b.#u32(key.length);
    b.#u32(value.length);
    b.#buf.set(key, b.#len);
    b.#len += key.length;
    b.#buf.set(value, b.#len);
    b.#len += value.length;
    b.#count++;
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

  /**
   * @internal The updates of an encoded batch, in order (views of `bytes`).
   * Throws `InvalidArgument` for bytes `WriteBatch` did not write.
   */
  static decode(bytes: Uint8Array): BatchOp[] {
    const ops: BatchOp[] = [];
    const u32 = (at: number): number => {
      if (at + 4 > bytes.length) throw bad();
      return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
    };
    const take = (at: number, n: number): Uint8Array => {
      if (at + n > bytes.length) throw bad();
      return bytes.subarray(at, at + n);
    };
    const bad = () => new SiltError('InvalidArgument', 'a write batch is malformed (not encoded by WriteBatch)');
    let at = 0;
    while (at < bytes.length) {
      const tag = bytes[at++];
      if (tag === PUT || tag === MERGE || tag === DELETE_RANGE) {
        const a = u32(at);
        const b = u32(at + 4);
        const first = take(at + 8, a);
        const second = take(at + 8 + a, b);
        at += 8 + a + b;
        ops.push(tag === DELETE_RANGE ? { kind: 'deleteRange', key: first, end: second } : { kind: tag === PUT ? 'put' : 'merge', key: first, value: second });
      } else if (tag === DELETE) {
        const a = u32(at);
        ops.push({ kind: 'delete', key: take(at + 4, a) });
        at += 4 + a;
      } else {
        throw bad();
      }
    }
    return ops;
  }

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = Math.max(this.#buf.length * 2, 256); // a batch from fromEncoded may have an empty buffer
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
