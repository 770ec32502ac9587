/**
 * Iterators over a database: sync-iterable in a worker's tight loop,
 * async-iterable where the worker should go on serving requests and
 * running background work between batches.
 */

import type { Iterator as WasmIterator } from '../../pkg/silt_wasm.js';
import { show, type Key } from '../core/bytes.js';
import { checkLimit, Codec, type EncodingOptions, type RangeOptions } from '../core/encoding.js';
import { copyOut, MAX_POOLED } from '../boundary/copies.js';
import { countCopied } from '../boundary/counters.js';
import { fromWasm, SiltError } from '../core/errors.js';
import { memoryBytesView, memoryWords } from '../boundary/wasm.js';
import type { Snapshot } from './snapshot.js';
import { nextTask } from '../core/task.js';
import { dispose } from '../core/dispose.js';
import { optionNames } from '../core/option-names.js';

/** Which keys to visit, in which order, as of when, and how to decode them. */
export interface IteratorOptions<K = Key, V = Uint8Array> extends RangeOptions<K>, EncodingOptions<K, V> {
  /** Largest key first. */
  reverse?: boolean;
  /** Stop after this many entries (default: no limit; `Infinity` or -1 say the same). */
  limit?: number;
  /** Read as of this snapshot (default: as of the iterator's creation). */
  snapshot?: Snapshot;
  /**
   * Read as of a snapshot (`snapshot`, or one taken for the iterator) and,
   * when a flush or compaction installs a new version, move onto it at the
   * next batch, keeping the same view and position: a long scan then stops
   * holding obsolete memtables and OPFS files (RocksDB's
   * `auto_refresh_iterator_with_snapshot`). Default false.
   */
  autoRefresh?: boolean;
  /**
   * Entries per batch (per crossing out of wasm), fixed. By default batches
   * start at 16 entries and double up to 1,024, so a short scan reads
   * little and a long one crosses rarely. A batch also stops at 256 KiB
   * (16 KiB when read entry by entry), past its first entry.
   */
  batchSize?: number;
}

/** Other libraries' iterator options, with siltdb's way. */
export const ITERATOR_ELSEWHERE = {
  keys: 'use db.keys() for keys only, db.values() for values only',
  values: 'use db.keys() for keys only, db.values() for values only',
  fillCache: 'siltdb needs none: every read fills the block cache',
  highWaterMark: 'use batchSize (entries per batch)',
  highWaterMarkBytes: 'use batchSize (entries per batch; a batch also stops at 256 KiB)',
};

/** The names of `IteratorOptions` (a worker's `iterator`, `keys`, `values`, `entries`). */
export const ITERATOR_OPTIONS = optionNames<IteratorOptions<unknown, unknown>>(
  {
    gt: true,
    gte: true,
    lt: true,
    lte: true,
    keyEncoding: true,
    valueEncoding: true,
    reverse: true,
    limit: true,
    snapshot: true,
    autoRefresh: true,
    batchSize: true,
  },
  ITERATOR_ELSEWHERE,
);

/** The names of a transaction's iterator options (it reads at the transaction's own snapshot). */
export const TRANSACTION_ITERATOR_OPTIONS = optionNames<Omit<IteratorOptions<unknown, unknown>, 'snapshot'>>(
  (({ snapshot: _, ...rest }) => rest)(ITERATOR_OPTIONS.record),
  { ...ITERATOR_ELSEWHERE, snapshot: "a transaction's iterator reads at the transaction's snapshot: do not pass one" },
);

/** A key and its value (by default both `Uint8Array` copies owned by the caller). */
export type Entry<K = Uint8Array, V = Uint8Array> = [key: K, value: V];

const ROOT_CODEC = Codec.root(undefined);

/** Engine bounds of a range of the database itself: lower inclusive, upper exclusive. */
export function bounds(o: RangeOptions<unknown>): { lower: Uint8Array | undefined; upper: Uint8Array | undefined } {
  return ROOT_CODEC.bounds(o);
}

/** @internal An iterator's options, checked (all but the snapshot), with bounds by `codec`. */
export function iteratorOptions(
  options: IteratorOptions<unknown, unknown>,
  codec: Codec = ROOT_CODEC,
): {
  lower: Uint8Array | undefined;
  upper: Uint8Array | undefined;
  batchSize: number | undefined;
  reverse: boolean;
  autoRefresh: boolean;
  limit: number;
} {
  if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', 'iterator options must be an object');
  const { lower, upper } = codec.bounds(options);
  const limit = checkLimit(options.limit);
  // A limit smaller than the first batch reads no more than it needs.
  const batchSize = checkBatchSize(options.batchSize) ?? (limit < FIRST_BATCH ? Math.max(limit, 1) : undefined);
  // Strict like `sync`: null is not a boolean either.
  const reverse = options.reverse === undefined ? false : options.reverse;
  if (typeof reverse !== 'boolean') throw new SiltError('InvalidArgument', `reverse must be a boolean, got ${show(reverse)}`);
  const autoRefresh = options.autoRefresh === undefined ? false : options.autoRefresh;
  if (typeof autoRefresh !== 'boolean') throw new SiltError('InvalidArgument', `autoRefresh must be a boolean, got ${show(autoRefresh)}`);
  return { lower, upper, batchSize, reverse, autoRefresh, limit };
}

export function checkBatchSize(n: unknown): number | undefined {
  if (n === undefined) return undefined;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 1 << 20) {
    throw new SiltError('InvalidArgument', `batchSize must be an integer from 1 to 1048576, got ${show(n)}`);
  }
  return n;
}

const FIRST_BATCH = 16;
/** The largest batch a scan grows to by itself (and a remote scan's first batch when its limit fits). */
export const MAX_AUTO_BATCH = 1024;
/** Bytes per transient batch (`nextBatch`), at most (past one entry). */
const BATCH_BYTES = 256 * 1024;
/**
 * Bytes per batch read entry by entry, at most (past one entry): such a
 * batch is copied into the shared chunks of copies.ts, which take copies
 * up to this size.
 */
const OWNED_BATCH_BYTES = MAX_POOLED;

/**
 * Batch memory of released iterators, for the next ones: a new
 * `ArrayBuffer` costs microseconds in Chromium (see copies.ts), more than a
 * short scan.
 */
const spareScratch: ArrayBuffer[] = [];
const SPARE_SCRATCH = 4;
const MAX_SPARE_BYTES = 1 << 20;

const utf8 = new TextDecoder('utf-8', { fatal: false });

/** Whether ArrayBuffers can be detached by moving their memory (ES2024). */
const canTransfer = typeof (ArrayBuffer.prototype as { transfer?: unknown }).transfer === 'function';

/**
 * Entries of one batch of a scan, in scan order: all their keys and values
 * in one byte array (`bytes`) and where each one is (`offsets`). `keyAt(i)`
 * and `valueAt(i)` are views of `bytes`, no copies, and so is every entry of
 * `for (const [key, value] of batch)`.
 *
 * A batch from `nextBatch()` or `batches()` is transient: it is valid until
 * the next call on its iterator, which reuses its memory. Afterwards it
 * reads as empty: `length` is 0, iterating it yields nothing, its arrays
 * and every view taken of them are empty (their buffer is detached), and
 * `keyAt` / `valueAt` / `keyText` / `valueText` throw `Released`; never
 * other bytes. Copy what must outlive it (`batch.valueAt(i).slice()`).
 */
export class EntryBatch implements Iterable<Entry> {
  /** Every key and value of the batch, back to back. */
  readonly bytes: Uint8Array;
  /**
   * `2 * length + 1` positions in `bytes`: key `i` is
   * `bytes[offsets[2i] .. offsets[2i+1]]`, its value
   * `bytes[offsets[2i+1] .. offsets[2i+2]]`.
   */
  readonly offsets: Uint32Array;
  /** Bytes of a sublevel's prefix at the start of every key in `bytes`, left out of `keyAt`. */
  readonly keyStart: number;

  /** @internal */
  constructor(bytes: Uint8Array, offsets: Uint32Array, keyStart = 0) {
    this.bytes = bytes;
    this.offsets = offsets;
    this.keyStart = keyStart;
  }

  /** The number of entries (0 once the batch was replaced: see the class). */
  get length(): number {
    const n = this.offsets.length;
    return n === 0 ? 0 : (n - 1) >>> 1;
  }

  /** @internal The first `n` entries of this batch (the same memory). */
  take(n: number): EntryBatch {
    return n >= this.length ? this : new EntryBatch(this.bytes, this.offsets.subarray(0, 2 * n + 1), this.keyStart);
  }

  #view(j: number, i: number, skip = 0): Uint8Array {
    const o = this.offsets;
    if (o.length === 0) {
      throw new SiltError('Released', 'this batch was replaced by the next call on its iterator: slice() what you keep of a batch before reading on');
    }
    if (i >>> 0 !== i || i >= this.length) {
      throw new SiltError('InvalidArgument', `entry ${show(i)} is not in this batch of ${this.length}`);
    }
    const start = o[j]! + skip;
    // The constructor rather than subarray(): no species lookup per entry.
    return new Uint8Array(this.bytes.buffer, this.bytes.byteOffset + start, o[j + 1]! - start);
  }

  /** The key of entry `i` (a view of `bytes`; in a sublevel, without its prefix). */
  keyAt(i: number): Uint8Array {
    return this.#view(2 * i, i, this.keyStart);
  }

  /** The value of entry `i` (a view of `bytes`). */
  valueAt(i: number): Uint8Array {
    return this.#view(2 * i + 1, i);
  }

  /** The key of entry `i` decoded as UTF-8. */
  keyText(i: number): string {
    return utf8.decode(this.keyAt(i));
  }

  /** The value of entry `i` decoded as UTF-8. */
  valueText(i: number): string {
    return utf8.decode(this.valueAt(i));
  }

  *[Symbol.iterator](): Generator<Entry, void, undefined> {
    for (let i = 0; i < this.length; i++) yield [this.keyAt(i), this.valueAt(i)];
  }
}

/**
 * A scan. Read it in batches (`for (const batch of it.batches())`, each
 * batch one crossing out of wasm with no object per entry), entry by entry
 * (`for (const [k, v] of it)`), or with `for await (const [k, v] of it)` to
 * let the worker run other work between batches. Batches start small (16
 * entries) and double up to 1,024 unless `batchSize` fixes them.
 * `seek(key)` moves a live iterator. Breaking out of any of these loops, or
 * running one to its end, releases the iterator; otherwise call `release()`
 * (or `using`) when abandoning it.
 */
export class EntryIterator<K = Uint8Array, V = Uint8Array> implements IterableIterator<Entry<K, V>>, AsyncIterable<Entry<K, V>>, Disposable {
  #inner: WasmIterator | undefined;
  /** How stored keys and values become entries (a sublevel's prefix, encodings). */
  #codec: Codec;
  /** Keys and values are handed out as the bytes they are. */
  #plain: boolean;
  /** Entries still to hand out (`limit`). */
  #left: number;
  /** Where the engine leaves the place of each batch (crates/wasm/src/iterator.rs). */
  #header: number;
  #fixedSize: number | undefined;
  #size: number;
  /** The batch read entry by entry (its bytes the caller's own). */
  #batch: EntryBatch | undefined;
  #at = 0;
  /** Offsets of `#batch`, reused from batch to batch. */
  #offsets = new Uint32Array(0);
  /** The memory of the transient batches `nextBatch` hands out. */
  #scratch = spareScratch.pop() ?? new ArrayBuffer(0);
  /** Whether the caller has a transient batch in `#scratch`. */
  #handedOut = false;
  #done = false;
  /** Released because its database was closed: every later step throws `Closed`. */
  #closed = false;
  #onRelease: () => void;

  /** @internal */
  constructor(inner: WasmIterator, batchSize: number | undefined, onRelease: () => void, codec: Codec = ROOT_CODEC, limit = Number.POSITIVE_INFINITY) {
    this.#inner = inner;
    this.#codec = codec;
    this.#plain = codec.plainKeys && codec.plainValues;
    this.#left = limit;
    this.#header = inner.headerPtr() >>> 2;
    this.#fixedSize = batchSize;
    this.#size = batchSize ?? FIRST_BATCH;
    this.#onRelease = onRelease;
  }

  #live(): WasmIterator {
    const inner = this.#inner;
    if (inner !== undefined) return inner;
    if (this.#closed) throw new SiltError('Closed', 'the database of this iterator was closed');
    throw new SiltError('Released', 'this iterator was released: make a new one (db.iterator()) to read on');
  }

  /** Reads the next batch into the engine iterator's buffers; returns its size. */
  #fill(inner: WasmIterator, maxBytes: number): number {
    let n: number;
    try {
      n = inner.fill(this.#size, maxBytes);
    } catch (e) {
      throw fromWasm(e);
    }
    // Doubling: a scan reads at most twice the entries it uses.
    if (this.#fixedSize === undefined && this.#size < MAX_AUTO_BATCH) this.#size *= 2;
    return n;
  }

  /** Ends the transient batch the caller has: its arrays read as empty from now on. */
  #invalidate(): void {
    if (!this.#handedOut) return;
    this.#handedOut = false;
    // transfer() moves the memory to a new buffer and detaches the old one
    // (and every view of it) at no copy; structuredClone with a transfer
    // list does the same where transfer() is missing (Node 20, Safari
    // before 17.4). A buffer the caller transferred elsewhere is detached
    // already.
    const old = this.#scratch;
    if (old.byteLength === 0) this.#scratch = new ArrayBuffer(0);
    else this.#scratch = canTransfer ? old.transfer() : structuredClone(old, { transfer: [old] });
  }

  /**
   * The next entries, as a transient batch (valid until the next call on
   * this iterator, see `EntryBatch`), or `undefined` at the end, where the
   * iterator stays live: `seek` may move it again; release it when done.
   * One crossing into wasm and one copy of the entries' bytes, into memory
   * the iterator reuses. A read error is thrown; the iterator then stays
   * where it was.
   */
  nextBatch(): EntryBatch | undefined {
    const inner = this.#live();
    this.#invalidate();
    // Entries left of a batch read entry by entry come first.
    // (Handed out as transient too, like every batch of nextBatch.)
    const left = this.#batch;
    if (left !== undefined) {
      this.#batch = undefined;
      if (this.#at < left.length) return this.#limited(this.#handOut(left.bytes, left.offsets.subarray(2 * this.#at)));
    }
    if (this.#left <= 0) return undefined;
    const n = this.#fill(inner, BATCH_BYTES);
    if (n === 0) return undefined;
    const words = memoryWords();
    const h = this.#header;
    const data = words[h]!;
    const length = words[h + 1]!;
    const at = words[h + 2]! >>> 2;
    countCopied(length);
    return this.#limited(this.#handOut(memoryBytesView().subarray(data, data + length), words.subarray(at, at + 2 * n + 1)));
  }

  /** `batch`, cut to the entries the limit leaves. */
  #limited(batch: EntryBatch): EntryBatch | undefined {
    if (this.#left === Number.POSITIVE_INFINITY) return batch;
    if (this.#left <= 0) return undefined;
    const b = batch.take(this.#left);
    this.#left -= b.length;
    return b;
  }

  /** A transient batch of `bytes` and `offsets`, copied into `#scratch`. */
  #handOut(src: Uint8Array, srcOffsets: Uint32Array): EntryBatch {
    const count = srcOffsets.length;
    const need = 4 * count + src.length;
    if (this.#scratch.byteLength < need) this.#scratch = new ArrayBuffer(Math.max(need, 2 * this.#scratch.byteLength, 4096));
    const offsets = new Uint32Array(this.#scratch, 0, count);
    offsets.set(srcOffsets);
    const bytes = new Uint8Array(this.#scratch, 4 * count, src.length);
    bytes.set(src);
    this.#handedOut = true;
    return new EntryBatch(bytes, offsets, this.#codec.prefix.length);
  }

  /** The next batch for reading entry by entry: its bytes the caller's own. */
  #nextOwned(inner: WasmIterator): EntryBatch | undefined {
    const n = this.#fill(inner, OWNED_BATCH_BYTES);
    if (n === 0) return undefined;
    const words = memoryWords();
    const h = this.#header;
    const at = words[h + 2]! >>> 2;
    const count = 2 * n + 1;
    if (this.#offsets.length < count) this.#offsets = new Uint32Array(Math.max(count, 2 * this.#offsets.length));
    const offsets = this.#offsets.subarray(0, count);
    offsets.set(words.subarray(at, at + count));
    return new EntryBatch(copyOut(memoryBytesView(), words[h]!, words[h + 1]!), offsets, this.#codec.prefix.length);
  }

  /**
   * Moves the iterator to the first key >= `key` (the last key <= `key` in
   * reverse), within its bounds; the next entry or batch starts there.
   */
  seek(key: K | Key): void {
    // Any call ends the transient batch, one that fails included.
    this.#invalidate();
    const k = this.#codec.key(key);
    const inner = this.#live();
    try {
      inner.seek(k);
    } catch (e) {
      throw fromWasm(e);
    }
    this.#batch = undefined;
    this.#at = 0;
    this.#size = this.#fixedSize ?? FIRST_BATCH;
  }

  /**
   * The batches from here to the end; breaking out of the loop or running
   * it to the end releases the iterator.
   */
  *batches(): Generator<EntryBatch, void, undefined> {
    try {
      for (let b = this.nextBatch(); b !== undefined; b = this.nextBatch()) yield b;
    } finally {
      this.release();
      if (!this.#closed) this.#done = true;
    }
  }

  /** The next batch for entry-by-entry reading; releases at the end or on error. */
  #refill(): EntryBatch | undefined {
    if (this.#done) return undefined;
    const inner = this.#live(); // Closed or Released
    this.#invalidate();
    let b: EntryBatch | undefined;
    try {
      b = this.#nextOwned(inner);
    } catch (e) {
      this.release();
      this.#done = true;
      throw e;
    }
    if (b === undefined) {
      this.release();
      this.#done = true;
    }
    this.#batch = b;
    this.#at = 0;
    return b;
  }

  next(): IteratorResult<Entry<K, V>, undefined> {
    if (this.#left <= 0) return this.#done ? { done: true, value: undefined } : this.return();
    let b = this.#batch;
    if (b === undefined || this.#at >= b.length) {
      if (this.#done) return { done: true, value: undefined };
      b = this.#refill();
      if (b === undefined) return { done: true, value: undefined };
    }
    this.#left--;
    const i = this.#at++;
    if (this.#plain) return { done: false, value: [b.keyAt(i), b.valueAt(i)] as Entry<K, V> };
    const c = this.#codec;
    return { done: false, value: [c.keys.decode(b.keyAt(i)) as K, c.values.decode(b.valueAt(i)) as V] };
  }

  /** The keys from here on (the values are not decoded); the same iterator underneath. */
  keys(): KeyIterator<K> {
    return new Projection<K>(this as EntryIterator<K, unknown>, (b, i) => this.#codec.keys.decode(b.keyAt(i)) as K);
  }

  /** The values from here on, in key order; the same iterator underneath. */
  values(): ValueIterator<V> {
    return new Projection<V>(this as EntryIterator<unknown, V>, (b, i) => this.#codec.values.decode(b.valueAt(i)) as V);
  }

  /** @internal The entry `next()` hands out next, as a batch and an index (for keys() and values()). */
  nextIndexed(): { batch: EntryBatch; index: number } | undefined {
    if (this.#left <= 0) {
      if (!this.#done) this.return();
      return undefined;
    }
    let b = this.#batch;
    if (b === undefined || this.#at >= b.length) {
      if (this.#done) return undefined;
      b = this.#refill();
      if (b === undefined) return undefined;
    }
    this.#left--;
    return { batch: b, index: this.#at++ };
  }

  /** @internal Whether the next step would cross into wasm (async iteration yields to the event loop first). */
  needsBatch(): boolean {
    const b = this.#batch;
    return (b === undefined || this.#at >= b.length) && !this.#done && this.#left > 0;
  }

  [Symbol.iterator](): this {
    return this;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Entry<K, V>> {
    const self = this;
    const it: AsyncIterableIterator<Entry<K, V>> = {
      async next(): Promise<IteratorResult<Entry<K, V>, undefined>> {
        // Before each batch, a turn of the event loop: requests, timers and
        // background work (flushes, compactions) run between batches.
        if (self.needsBatch()) await nextTask();
        return self.next();
      },
      async return(): Promise<IteratorResult<Entry<K, V>, undefined>> {
        return self.return();
      },
      [Symbol.asyncIterator]() {
        return it;
      },
    };
    return it;
  }

  /** Called when a `for...of` loop ends early: releases the iterator. */
  return(): IteratorResult<Entry<K, V>, undefined> {
    this.release();
    if (!this.#closed) this.#done = true;
    return { done: true, value: undefined };
  }

  /** Whether the iterator has let go of the engine's state. */
  get released(): boolean {
    return this.#inner === undefined;
  }

  /**
   * Lets go of everything the iterator holds (memtables and table files of
   * the version it reads). Releasing twice does nothing.
   */
  release(): void {
    const inner = this.#inner;
    if (inner === undefined) return;
    this.#inner = undefined;
    this.#invalidate();
    const scratch = this.#scratch;
    if (scratch.byteLength > 0 && scratch.byteLength <= MAX_SPARE_BYTES && spareScratch.length < SPARE_SCRATCH) spareScratch.push(scratch);
    this.#scratch = new ArrayBuffer(0);
    this.#batch = undefined;
    this.#at = 0;
    inner.release();
    inner.free();
    this.#onRelease();
  }

  /** @internal Its database is closing: release, and refuse every later step with `Closed`. */
  closeWithDatabase(): void {
    if (this.#inner === undefined) return;
    this.#closed = true;
    this.release();
  }

  [dispose](): void {
    this.release();
  }
}

/** Keys of a range, one by one (sync in a worker's loop, or async). */
export interface KeyIterator<K> extends IterableIterator<K>, AsyncIterable<K>, Disposable {
  /** Lets go of the iterator underneath. */
  release(): void;
}

/** Values of a range in key order, one by one (sync, or async). */
export type ValueIterator<V> = KeyIterator<V>;

/** Keys only or values only, from an `EntryIterator`. */
class Projection<T> implements KeyIterator<T> {
  #it: EntryIterator<unknown, unknown>;
  #pick: (b: EntryBatch, i: number) => T;

  constructor(it: EntryIterator<unknown, unknown>, pick: (b: EntryBatch, i: number) => T) {
    this.#it = it;
    this.#pick = pick;
  }

  next(): IteratorResult<T, undefined> {
    const n = this.#it.nextIndexed();
    return n === undefined ? { done: true, value: undefined } : { done: false, value: this.#pick(n.batch, n.index) };
  }

  return(): IteratorResult<T, undefined> {
    this.#it.return();
    return { done: true, value: undefined };
  }

  [Symbol.iterator](): this {
    return this;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    const self = this;
    const it: AsyncIterableIterator<T> = {
      async next(): Promise<IteratorResult<T, undefined>> {
        if (self.#it.needsBatch()) await nextTask();
        return self.next();
      },
      async return(): Promise<IteratorResult<T, undefined>> {
        return self.return();
      },
      [Symbol.asyncIterator]() {
        return it;
      },
    };
    return it;
  }

  release(): void {
    this.#it.release();
  }

  [dispose](): void {
    this.release();
  }
}
