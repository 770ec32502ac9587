/**
 * `WriteBatch`: updates applied atomically by `db.write(batch)`.
 *
 * The batch is encoded as it is built, into one buffer that crosses into
 * wasm once (format in crates/wasm/src/batch.rs):
 * `0x01 klen:u32 vlen:u32 key value` for a put, `0x00 klen:u32 key` for a
 * delete, `0x02 klen:u32 vlen:u32 key operand` for a merge,
 * `0x03 slen:u32 elen:u32 start end` for a range delete, little-endian.
 */

import { checkRangeOrder, show, valueBytes, type Key } from './bytes.js';
import { Codec, codecOf } from './encoding.js';
import { SiltError } from './errors.js';
import { checkOptionNames, optionNames } from './option-names.js';

/** One update of a batch, decoded (`end` for a range delete). */
export type BatchOp =
  | { kind: 'put'; key: Uint8Array; value: Uint8Array }
  | { kind: 'delete'; key: Uint8Array }
  | { kind: 'merge'; key: Uint8Array; value: Uint8Array }
  | { kind: 'deleteRange'; key: Uint8Array; end: Uint8Array };

/**
 * The tag byte of each kind of update in an encoded batch: the one copy in
 * TypeScript (the leader's change records read them too). The wasm
 * module's are crates/wasm/src/batch.rs's; js/test/contract.test.ts fails
 * when the two differ. A page encodes batches without loading the module,
 * so they cannot be read from it.
 */
export const BATCH_TAGS = { delete: 0x00, put: 0x01, merge: 0x02, deleteRange: 0x03, bookkeepingPut: 0x81 } as const;

const { put: PUT, delete: DELETE, merge: MERGE, deleteRange: DELETE_RANGE, bookkeepingPut: BOOKKEEPING_PUT } = BATCH_TAGS;

/** The encoded updates, shared by a batch and its views in other sublevels (`in`). */
class Data {
  buf: Uint8Array = new Uint8Array(256);
  len = 0;
  count = 0;
}

const ROOT = Codec.root(undefined);

/**
 * Updates applied atomically by `db.write(batch)`. `new WriteBatch()`
 * takes bytes (and string keys); `db.batch()` takes the keys and values of
 * the database or sublevel it came from, in its encodings, and
 * `batch.in(sub)` is the same batch taking another sublevel's: one batch,
 * written atomically, may span sublevels.
 */
export class WriteBatch<K = Key, V = Uint8Array> {
  #d: Data;
  #codec: Codec;

  constructor() {
    this.#d = new Data();
    this.#codec = ROOT;
  }

  /** @internal A batch in `codec`'s keys and encodings (`db.batch()`). */
  static withCodec<K, V>(codec: Codec, data?: unknown): WriteBatch<K, V> {
    const b = new WriteBatch<K, V>();
    b.#codec = codec;
    if (data !== undefined) b.#d = data as Data;
    return b;
  }

  /** @internal The updates of `b`, to share with a view (`withCodec`). */
  static dataOf(b: WriteBatch<unknown, unknown>): unknown {
    return b.#d;
  }

  /**
   * This batch, taking the keys and values of `sublevel` (a database or
   * sublevel handle): updates added through it are part of this batch.
   */
  in<SK, SV>(sublevel: { sublevel(name: string): unknown; put(key: SK, value: SV): unknown }): WriteBatch<SK, SV> {
    return WriteBatch.withCodec<SK, SV>(codecOf(sublevel, 'batch.in()'), this.#d);
  }

  /** Sets `key` to `value` when the batch is written. */
  put(key: K, value: V): this {
    const k = this.#codec.key(key);
    return this.#pair(PUT, k, this.#codec.value(value));
  }

  /**
   * Adds a merge operand for `key` when the batch is written (the database's
   * `mergeOperator` combines it with the value when read). Operands are
   * bytes whatever the value encoding.
   */
  merge(key: K, operand: Uint8Array): this {
    const k = this.#codec.key(key);
    return this.#pair(MERGE, k, valueBytes(operand, 'operand'));
  }

  #pair(tag: number, k: Uint8Array, v: Uint8Array): this {
    this.#reserve(9 + k.length + v.length);
    this.#d.buf[this.#d.len++] = tag;
    this.#u32(k.length);
    this.#u32(v.length);
    this.#d.buf.set(k, this.#d.len);
    this.#d.len += k.length;
    this.#d.buf.set(v, this.#d.len);
    this.#d.len += v.length;
    this.#d.count++;
    return this;
  }

  /**
   * @internal A put of the package's own bookkeeping (a `connect()`
   * leader's write record): stored as a put, but a batch of deletes that
   * carries it still frees space in a full database (the engine's
   * `WriteBatch::put_bookkeeping`).
   */
  static putBookkeeping(b: WriteBatch<unknown, unknown>, key: Uint8Array, value: Uint8Array): void {
    b.#reserve(9 + key.length + value.length);
    b.#d.buf[b.#d.len++] = BOOKKEEPING_PUT;
    b.#u32(key.length);
    b.#u32(value.length);
    b.#d.buf.set(key, b.#d.len);
    b.#d.len += key.length;
    b.#d.buf.set(value, b.#d.len);
    b.#d.len += value.length;
    b.#d.count++;
  }

  /** Removes `key` when the batch is written. */
  delete(key: K): this {
    const k = this.#codec.key(key);
    this.#reserve(5 + k.length);
    this.#d.buf[this.#d.len++] = DELETE;
    this.#u32(k.length);
    this.#d.buf.set(k, this.#d.len);
    this.#d.len += k.length;
    this.#d.count++;
    return this;
  }

  /** Removes every key from `start` (included) to `end` (excluded). */
  deleteRange(start: K, end: K): this {
    const s = this.#codec.key(start, 'start');
    const e = this.#codec.key(end, 'end');
    checkRangeOrder(s, e, start, end);
    return this.#pair(DELETE_RANGE, s, e);
  }

  /** Updates in the batch. */
  get length(): number {
    return this.#d.count;
  }

  /** Bytes of the encoded batch. */
  get byteLength(): number {
    return this.#d.len;
  }

  /** Empties the batch for reuse. */
  clear(): void {
    this.#d.len = 0;
    this.#d.count = 0;
  }

  /**
   * The encoded updates (a view of the batch's buffer, valid until the
   * batch changes). For `db.write` and for sending a batch to a worker.
   */
  encoded(): Uint8Array {
    return this.#d.buf.subarray(0, this.#d.len);
  }

  /** @internal A batch from another batch's `encoded()` and `length` (for workers). */
  static fromEncoded(bytes: Uint8Array, count: number): WriteBatch<Uint8Array, Uint8Array> {
    const b = new WriteBatch();
    b.#d.buf = bytes;
    b.#d.len = bytes.length;
    b.#d.count = count;
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

  /**
   * @internal Makes room for `bytes` more encoded bytes in one allocation,
   * for a caller that knows about how much it will add (`ingest()`): a
   * buffer grown by doubling to a hundred megabytes costs twice its
   * bytes again in allocation and copies.
   */
  static reserveExactly(b: WriteBatch<unknown, unknown>, bytes: number): void {
    if (b.#d.len + bytes > b.#d.buf.length) b.#grow(b.#d.len + bytes);
  }

  /** @internal Encoded bytes so far. */
  static encodedLength(b: WriteBatch<unknown, unknown>): number {
    return b.#d.len;
  }

  #reserve(n: number): void {
    if (this.#d.len + n <= this.#d.buf.length) return;
    let size = Math.max(this.#d.buf.length * 2, 256); // a batch from fromEncoded may have an empty buffer
    while (size < this.#d.len + n) size *= 2;
    this.#grow(size);
  }

  #grow(size: number): void {
    const next = new Uint8Array(size);
    next.set(this.#d.buf.subarray(0, this.#d.len));
    this.#d.buf = next;
  }

  #u32(x: number): void {
    const b = this.#d.buf;
    let at = this.#d.len;
    b[at++] = x & 0xff;
    b[at++] = (x >>> 8) & 0xff;
    b[at++] = (x >>> 16) & 0xff;
    b[at++] = (x >>> 24) & 0xff;
    this.#d.len = at;
  }
}

/** Options of `ingest()`. */
export interface IngestOptions {
  /**
   * The entries' encoded keys are in ascending byte order already (equal
   * keys allowed: the last one wins): the sort is skipped, and keys out of
   * order fail the call with `InvalidArgument`, writing nothing. Default
   * false: siltdb sorts them.
   */
  sorted?: boolean;
}

/** What `ingest()` did. */
export interface IngestReport {
  /** Distinct keys written (a key given twice counts once: its last value). */
  keys: number;
  /** Table files added. */
  files: number;
  /** Bytes of those files. */
  bytes: number;
  /**
   * The LSM level they went to: the deepest at which no table's key range
   * overlaps theirs (6, the last, for an empty database; 0, as one file,
   * over keys earlier writes spread everywhere).
   */
  level: number;
  /** The sequence number every entry got (what `latestSequence` is after it). */
  sequence: number;
  /** Whether unflushed writes overlapping the keys were flushed first. */
  flushedMemtables: boolean;
}

/** The names of `IngestOptions`. */
export const INGEST_OPTIONS = optionNames<IngestOptions>({ sorted: true });

/** @internal `options.sorted` of `ingest()`, checked. */
export function ingestSorted(options: IngestOptions | undefined): boolean {
  checkOptionNames(options, INGEST_OPTIONS, 'db.ingest()');
  const sorted = options?.sorted ?? false;
  if (typeof sorted !== 'boolean') throw new SiltError('InvalidArgument', `sorted must be a boolean, got ${show(sorted)}`);
  return sorted;
}

/** Entries of an array given to `ingest()` encoded before its batch is sized for the rest. */
const INGEST_SAMPLE = 1024;

/** @internal The entries of `ingest()` as a batch of puts (`make` gives an empty one in the right encodings). */
export function ingestBatch<K, V>(entries: WriteBatch<K, V> | Iterable<readonly [K, V]>, make: () => WriteBatch<K, V>): WriteBatch<K, V> {
  if (entries instanceof WriteBatch) return entries;
  if (entries === null || typeof entries !== 'object' || typeof (entries as Iterable<unknown>)[Symbol.iterator] !== 'function') {
    throw new SiltError('InvalidArgument', `ingest() takes a WriteBatch or an iterable of [key, value] pairs, got ${show(entries)}`);
  }
  const batch = make();
  // An array's size is known: after a sample of its entries, the buffer
  // is sized for all of them at once (1M entries of 116 bytes: 460 -> 170
  // ms of encoding in Node), with an eighth to spare.
  const total = Array.isArray(entries) ? entries.length : 0;
  let i = 0;
  for (const e of entries) {
    if (!Array.isArray(e) || e.length !== 2) throw new SiltError('InvalidArgument', `entry ${i} must be a [key, value] pair, got ${show(e)}`);
    batch.put(e[0] as K, e[1] as V);
    i++;
    if (i === INGEST_SAMPLE && total >= 2 * INGEST_SAMPLE) {
      const perEntry = WriteBatch.encodedLength(batch) / i;
      WriteBatch.reserveExactly(batch, Math.ceil(perEntry * (total - i) * 1.125));
    }
  }
  return batch;
}
