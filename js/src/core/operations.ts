/**
 * The operations a worker's `Database` and `connect()`'s `RemoteDatabase`
 * both have, declared once: their synchronous form here (what `Database`
 * implements), their async form derived (`RemoteOperations`, what
 * `RemoteDatabase` has), so the compiler refuses a difference between the
 * two APIs. How a page asks for each and how the leader serves it is
 * declared once too, in tabs/operations.ts; the protocol's request type,
 * the leader's dispatch, the rule for a request pending at a failover and
 * the page's methods follow from that table (docs/architecture.md, "Adding
 * an operation").
 *
 * What is not here is a session rather than one call (iterators,
 * transactions, exports and imports, watches, sublevels) or differs on
 * purpose (`getPinned` and `multiGet`'s `batched` are the worker's; see
 * DESIGN.md's read contract).
 */

import type { IngestOptions, IngestReport, WriteBatch } from './batch.js';
import type { CountRange, SnapshotOption, ValueReadOptions, WriteOptions } from './call-options.js';
import type { RangeOptions, ReadValueOf } from './encoding.js';
import type { Exactly } from './option-names.js';
import type { MultiGot } from '../boundary/results.js';
import type { VerifyReport } from '../local/statistics.js';

export type { CountRange, SnapshotOption, ValueReadOptions, WriteOptions } from './call-options.js';

/** The operations of both APIs, in a worker's synchronous form. */
export interface Operations<K, V, S> {
  /** Stores `value` under `key`, replacing any previous value. */
  put(key: K, value: V, options?: WriteOptions): void;
  /** Removes `key`; removing a missing key is not an error. */
  delete(key: K, options?: WriteOptions): void;
  /**
   * Records a merge operand for `key`: the database's `mergeOperator`
   * (chosen at open) combines it with the value when it is read, so the
   * write needs no read (a counter: `db.merge(key, u64(1))` with
   * `'u64add'`). Operands are bytes whatever the value encoding. Without a
   * `mergeOperator`, `InvalidArgument`.
   */
  merge(key: K, operand: Uint8Array, options?: WriteOptions): void;
  /**
   * Removes every key from `start` (included) to `end` (excluded), with one
   * range tombstone: as cheap for a million keys as for one.
   */
  deleteRange(start: K, end: K, options?: WriteOptions): void;
  /**
   * Removes every key in `range` (default: every key of this database or
   * sublevel) with one range tombstone, not a delete per key: as cheap for
   * a million keys as for one.
   */
  clear(range?: RangeOptions<K>, options?: WriteOptions): void;
  /** Applies every update of `batch` atomically (it may span sublevels). */
  write(batch: WriteBatch<unknown, unknown>, options?: WriteOptions): void;
  /**
   * Loads `entries` (pairs `[key, value]`, or a `WriteBatch` of puts) as
   * new table files, added in one atomic step: no log, no memtable, so a
   * bulk import costs a fraction of the same puts. Durable when the
   * Promise resolves (every earlier write too); a crash before leaves
   * none of it. Snapshots and iterators from before do not see it. The
   * files go as deep in the LSM as nothing newer overlaps their keys (see
   * docs/architecture.md); other writes wait while it runs. Unsorted
   * entries are sorted (pass `sorted: true` when they already are); of
   * equal keys the last wins. Through `connect()`, watchers see it as one
   * change of kind `'ingest'` over the range of its keys.
   */
  ingest(entries: WriteBatch<K, V> | Iterable<readonly [K, V]>, options?: IngestOptions): Promise<IngestReport>;
  /**
   * The value of `key`, or `undefined`: a value the caller owns. Bytes come
   * in a buffer of their own, safe to keep and to transfer; with a value
   * encoding, the decoded value.
   */
  get<const O extends ValueReadOptions<unknown, S> = ValueReadOptions<V, S>>(
    key: K,
    options?: Exactly<O, ValueReadOptions<unknown, S>>,
  ): ReadValueOf<O, V> | undefined;
  /**
   * The values of `keys`, read at one point in time, in order: with bytes
   * values a `MultiGetResult` (in a worker its values are views of wasm
   * memory, pinned together; through `connect()` copies sent in one
   * buffer; release it, or `using`), with a value encoding an array of
   * decoded values.
   */
  multiGet<const O extends ValueReadOptions<unknown, S> = ValueReadOptions<V, S>>(
    keys: K[],
    options?: Exactly<O, ValueReadOptions<unknown, S>>,
  ): MultiGot<ReadValueOf<O, V>>;
  /**
   * Whether `key` has a value (at `snapshot`, or now). No value leaves the
   * engine: in a worker nothing is copied out of wasm memory, through
   * `connect()` only the answer crosses (as abstract-level 3's `has`).
   */
  has(key: K, options?: SnapshotOption<S>): boolean;
  /**
   * Whether each of `keys` has a value, in order, read at one point in
   * time with the engine's batched MultiGet; no value copied out.
   */
  hasMany(keys: K[], options?: SnapshotOption<S>): boolean[];
  /**
   * The number of keys in `range` (default: every key of this database or
   * sublevel), exact: counted by a scan of the keys (no values copied), at
   * `range.snapshot` or now.
   */
  count(range?: CountRange<K, S>): number;
  /**
   * About how many bytes of storage the keys in `range` take, from the
   * indexes of the table files (no data read); writes still in memory are
   * not counted.
   */
  approximateSize(range?: RangeOptions<K>): number;
  /** A snapshot of the database as of now: reads at it see nothing written after. Release it when done. */
  snapshot(): S;
  /** The sequence number of the last write (for `watch({ since })` through `connect()`). */
  latestSequence(): number;
  /** Writes the memtable out as a table file now (normally done in the background). */
  flush(): void;
  /** Resolves when the background work (flushes, compactions) has caught up. */
  idle(): Promise<void>;
  /** Compacts every key from `begin` to `end` (both included, both optional: the first or last key of this database or sublevel). */
  compactRange(begin?: K, end?: K): Promise<void>;
  /**
   * Reads every table file and checks every checksum and key; throws the
   * first damage found (`Corruption`, `ChecksumMismatch`).
   */
  verify(): VerifyReport;
}

/** The operations without a generic signature: their async form follows from the synchronous one. */
export type PlainOperationName = Exclude<keyof Operations<unknown, unknown, unknown>, 'get' | 'multiGet'>;

/**
 * The operations in `connect()`'s form: each returns a Promise (the
 * generic reads spelled out, since a mapped type loses a method's own
 * type parameters; tests/types check the two forms name the same
 * operations).
 */
export type RemoteOperations<K, V, S> = {
  [M in PlainOperationName]: (...args: Parameters<Operations<K, V, S>[M]>) => Promise<Awaited<ReturnType<Operations<K, V, S>[M]>>>;
} & RemoteReads<K, V, S>;

/** `get` and `multiGet` in `connect()`'s form. */
export interface RemoteReads<K, V, S> {
  /** See `Operations.get`. */
  get<const O extends ValueReadOptions<unknown, S> = ValueReadOptions<V, S>>(
    key: K,
    options?: Exactly<O, ValueReadOptions<unknown, S>>,
  ): Promise<ReadValueOf<O, V> | undefined>;
  /** See `Operations.multiGet`. */
  multiGet<const O extends ValueReadOptions<unknown, S> = ValueReadOptions<V, S>>(
    keys: K[],
    options?: Exactly<O, ValueReadOptions<unknown, S>>,
  ): Promise<MultiGot<ReadValueOf<O, V>>>;
}

/** The name of an operation declared here. */
export type OperationName = keyof Operations<unknown, unknown, unknown>;
