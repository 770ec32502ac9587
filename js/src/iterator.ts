/**
 * Iterators over a database: sync-iterable in a worker's tight loop,
 * async-iterable where the worker should go on serving requests and
 * running background work between batches.
 */

import type { Iterator as WasmIterator } from '../pkg/silt_wasm.js';
import { keyBytes, show, successor, type Key } from './bytes.js';
import { fromWasm, SiltError } from './errors.js';
import type { Snapshot } from './snapshot.js';

/** Which keys to visit, in which order, as of when. */
export interface IteratorOptions {
  /** Keys greater than this. */
  gt?: Key;
  /** Keys greater than or equal to this. */
  gte?: Key;
  /** Keys less than this. */
  lt?: Key;
  /** Keys less than or equal to this. */
  lte?: Key;
  /** Largest key first. */
  reverse?: boolean;
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
  /** Entries fetched from wasm per crossing (default 256). */
  batchSize?: number;
}

/** A key and its value, both copies owned by the caller. */
export type Entry = [key: Uint8Array, value: Uint8Array];

/** Engine bounds: lower inclusive, upper exclusive. */
export function bounds(o: IteratorOptions): { lower: Uint8Array | undefined; upper: Uint8Array | undefined } {
  if (o.gt !== undefined && o.gte !== undefined) throw new SiltError('InvalidArgument', 'give gt or gte, not both');
  if (o.lt !== undefined && o.lte !== undefined) throw new SiltError('InvalidArgument', 'give lt or lte, not both');
  const lower = o.gte !== undefined ? keyBytes(o.gte, 'gte') : o.gt !== undefined ? successor(keyBytes(o.gt, 'gt')) : undefined;
  const upper = o.lt !== undefined ? keyBytes(o.lt, 'lt') : o.lte !== undefined ? successor(keyBytes(o.lte, 'lte')) : undefined;
  return { lower, upper };
}

export function checkBatchSize(n: unknown): number {
  if (n === undefined) return 256;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 1 << 20) {
    throw new SiltError('InvalidArgument', `batchSize must be an integer from 1 to 1048576, got ${show(n)}`);
  }
  return n;
}

/** Decodes one batch (format in crates/wasm/src/iterator.rs). */
export function decodeEntries(batch: Uint8Array, out: Entry[]): void {
  const { buffer, byteOffset } = batch;
  const view = new DataView(buffer, byteOffset, batch.byteLength);
  let at = 0;
  while (at < batch.length) {
    const klen = view.getUint32(at, true);
    const vlen = view.getUint32(at + 4, true);
    at += 8;
    // The constructor rather than subarray(): no species lookup per entry.
    const key = new Uint8Array(buffer, byteOffset + at, klen);
    out.push([key, new Uint8Array(buffer, byteOffset + at + klen, vlen)]);
    at += klen + vlen;
  }
}

const BATCH_BYTES = 256 * 1024;

/** Lets the event loop run a turn: messages, timers, background work. */
function nextTask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * A scan. Use `for (const [k, v] of it)` for a tight loop, or
 * `for await (const [k, v] of it)` to let the worker run other work
 * between batches. Breaking out of either loop releases the iterator;
 * otherwise call `release()` (or `using`) when abandoning it.
 */
export class Iterator implements IterableIterator<Entry>, AsyncIterable<Entry>, Disposable {
  #inner: WasmIterator | undefined;
  #batchSize: number;
  #pending: Entry[] = [];
  #at = 0;
  #done = false;
  /** Released because its database was closed: every later step throws `Closed`. */
  #closed = false;
  #onRelease: () => void;

  /** @internal */
  constructor(inner: WasmIterator, batchSize: number, onRelease: () => void) {
    this.#inner = inner;
    this.#batchSize = batchSize;
    this.#onRelease = onRelease;
  }

  /**
   * @internal The next batch as the engine encodes it (a buffer the caller
   * owns), or `undefined` at the end; for sending entries to a page.
   */
  nextEncoded(): Uint8Array | undefined {
    if (this.#inner === undefined) {
      if (this.#closed) throw new SiltError('Closed', 'the database of this iterator was closed');
      if (this.#done) return undefined;
      throw new SiltError('Released', 'this iterator was released');
    }
    let batch: Uint8Array | undefined;
    try {
      batch = this.#inner.nextBatch(this.#batchSize, BATCH_BYTES);
    } catch (e) {
      this.release();
      this.#done = true;
      throw fromWasm(e);
    }
    if (batch === undefined) {
      this.release();
      this.#done = true;
    }
    return batch;
  }

  #fill(): void {
    this.#pending = [];
    this.#at = 0;
    const batch = this.nextEncoded();
    if (batch !== undefined) decodeEntries(batch, this.#pending);
  }

  next(): IteratorResult<Entry, undefined> {
    if (this.#at >= this.#pending.length) this.#fill();
    const entry = this.#pending[this.#at];
    if (entry === undefined) return { done: true, value: undefined };
    this.#at++;
    return { done: false, value: entry };
  }

  [Symbol.iterator](): this {
    return this;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Entry> {
    const self = this;
    const it: AsyncIterableIterator<Entry> = {
      async next(): Promise<IteratorResult<Entry, undefined>> {
        // Before each batch, a turn of the event loop: requests, timers and
        // background work (flushes, compactions) run between batches.
        if (self.#at >= self.#pending.length && !self.#done) await nextTask();
        return self.next();
      },
      async return(): Promise<IteratorResult<Entry, undefined>> {
        return self.return();
      },
      [Symbol.asyncIterator]() {
        return it;
      },
    };
    return it;
  }

  /** Called when a `for...of` loop ends early: releases the iterator. */
  return(): IteratorResult<Entry, undefined> {
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
    this.#pending = [];
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

  [Symbol.dispose](): void {
    this.release();
  }
}
