/**
 * The database handle of a worker: synchronous calls into the engine, with
 * zero-copy reads, and background work pumped between calls.
 */

import type { Database as WasmDatabase } from '../../pkg/silt_wasm.js';
import { type MultiGetResult, type MultiGot, PinnedValue } from '../boundary/results.js';
import { WriteBatch, type IngestOptions, type IngestReport } from '../core/batch.js';
import { checkRangeOrder, compareBytes, show, valueBytes, type Key } from '../core/bytes.js';
import {
  type Codec,
  registerCodec,
  type EncodingOptions,
  exportForm,
  type ExportOptions,
  type KeyOf,
  type KeyTypeOf,
  type RangeOptions,
  type ReadValueOf,
  type ValueTypeOf,
  ENCODING_OPTIONS,
  EXPORT_OPTIONS,
  RANGE_OPTIONS,
} from '../core/encoding.js';
import { COUNT_OPTIONS, SNAPSHOT_OPTIONS, VALUE_READ_OPTIONS } from '../core/call-options.js';
import { checkOptionNames, type Exactly } from '../core/option-names.js';
import { SiltError } from '../core/errors.js';
import type { Operations } from '../core/operations.js';
import type { PoolKeeper } from '../opfs/pool.js';
import { exportStream, type ImportReport, type ImportSource, importInto } from './backup.js';
import { type Closer, Core, ROOT, type StorageKind } from './core.js';
import { changes } from './change-feed.js';
import { type LocalReads, localLiveSource } from './live-source.js';
import { type Live, type LiveOptions, type LiveResult, type LiveSource, type LiveValue, liveRange, liveValue } from '../tabs/live-query.js';
import { ingestInto } from './ingest.js';
import { ingestRocksdbOn, type RocksdbIngestReport } from './rocksdb.js';
import { type Watch, type WatchEvent, type WatchOptions, watchOn } from '../tabs/watch.js';
import { multiGetOf } from './multi-get.js';
import { ITERATOR_OPTIONS, iteratorOptions, type EntryIterator, type IteratorOptions, type KeyIterator, type ValueIterator } from './iterator.js';
import type { CountOptions, GetOptions, MultiGetOptions, ReadOptions, SublevelOptions, WriteOptions } from './options.js';
import { Snapshot } from './snapshot.js';
import { type Statistics, statisticsOf, type VerifyReport } from './statistics.js';
import { attemptTransaction, Transaction, TRANSACTION_OPTIONS, type TransactionOptions, type UpdateResult, updateIn, withRetries } from './transaction.js';
import { dispose } from '../core/dispose.js';

/**
 * An open Silt database, in the thread that opened it: or one of its
 * sublevels (`db.sublevel('users')`), which is a `Database` too, over the
 * keys behind its prefix.
 *
 * Calls are synchronous: they run the engine in this thread, so in a web
 * page use it from a worker (`open()` in a worker, or `connect()` from the
 * page). Every failure throws a `SiltError`; after `close()`, every call
 * but `close()` throws one with code `"Closed"`.
 *
 * `K` and `V` are the types of keys and values, as the encodings chosen at
 * open (`keyEncoding`, `valueEncoding`) make them: by default keys are
 * `Uint8Array`s or strings and values `Uint8Array`s.
 */
export class Database<K = Key, V = Uint8Array> implements Disposable, Operations<K, V, Snapshot> {
  #core: Core;
  #codec: Codec;

  /** @internal Use `open()` or `openMemory()`. */
  constructor(inner: WasmDatabase | Core, name: string, keeper: PoolKeeper | undefined, sync: boolean, closer: Closer | undefined, codec: Codec = ROOT) {
    this.#core = inner instanceof Core ? inner : new Core(inner, name, keeper, sync, closer!);
    this.#codec = codec;
    registerCodec(this, codec);
  }

  /** Where its files live: `'opfs'`, `'indexeddb'` (in memory, persisted to IndexedDB) or `'memory'` (`openMemory()`). */
  get storage(): StorageKind {
    return this.#core.closer.storage;
  }

  /**
   * Resolves once every write so far is durable where the database lives:
   * at once on OPFS; in IndexedDB once the commit that carries it completes
   * (await it where a write must survive a crash of the tab; `connect()`
   * does before it answers a write). Rejects with `QuotaExceeded` or
   * `IoError` if a commit fails (the writes stay in memory; the next call
   * retries).
   */
  persisted(): Promise<void> {
    return this.#core.closer.persisted();
  }

  /** The name the database was opened with. */
  get name(): string {
    return this.#core.name;
  }

  /** The names of the sublevels from the database down to this one (empty for the database itself). */
  get path(): readonly string[] {
    return this.#codec.path;
  }

  /**
   * The sequence number of the last write (0 for a new database). Each
   * update of a write takes the next number, in order; `connect()`'s change
   * events (`watch`) carry them. A method, as through `connect()`.
   */
  latestSequence(): number {
    return this.#core.call(() => this.#core.inner.latestSequence);
  }

  /**
   * The changes committed from now on (or after `since`) to the keys of
   * `options`' range, in commit order, as `connect()`'s `watch` reports
   * them: an async iterable, or `callback` called with each event (in a
   * later microtask than the write, never inside it). A write whose keys
   * cannot be listed (an import; a transaction begun before the first
   * watch) is a `Gap`. `since` reaches back to the database's first watch
   * at most (its history starts then; through `connect()`, at the
   * leader's start). With `values: true`, each change of a key carries
   * its value (`KeyChange`). See `WatchEvent`.
   */
  watch(options: WatchOptions<K> = {}, callback?: (event: WatchEvent<KeyOf<K>, V>) => void): Watch<KeyOf<K>, V> {
    if (this.closed) throw new SiltError('Closed', 'the database was closed');
    return watchOn(this.#core.feedForWatch(), this.#codec, options, callback);
  }

  /** A live query of `options`' range: its entries now, then again at each change (see `Live`, `LiveResult`). */
  live(options: LiveOptions<K> = {}): Live<LiveResult<KeyOf<K>, V>> {
    return liveRange(this.#liveSource(), options);
  }

  /** A live query of `key`'s value: now, then again at each change (see `Live`, `LiveValue`). */
  liveGet(key: K): Live<LiveValue<V>> {
    return liveValue(this.#liveSource(), key);
  }

  #liveSource(): LiveSource {
    if (this.closed) throw new SiltError('Closed', 'the database was closed');
    return localLiveSource(this as unknown as LocalReads, this.#core, this.#codec);
  }

  /** Whether `close()` has run. */
  get closed(): boolean {
    return this.#core.inner.isClosed;
  }

  /**
   * The sublevel `name` of this database (or sublevel): a `Database` over
   * the keys stored behind its prefix (`!name!`, see `docs/format.md`), with
   * its own encodings (default: this one's). Its reads, iterators, counts
   * and `clear()` see only its keys. Sublevels nest; a batch or a
   * transaction spans several atomically (`batch.in(sub)`, `tx.in(sub)`).
   * A name is a non-empty string without `!`.
   */
  sublevel<const O extends EncodingOptions<never, never>>(
    name: string,
    options: Exactly<O, EncodingOptions<never, never>>,
  ): Database<KeyTypeOf<O['keyEncoding'], K>, ValueTypeOf<O['valueEncoding'], V>>;
  /** The sublevel `name`, of the key and value types given as type parameters (`db.sublevel<string, Note>('notes', ...)`). */
  sublevel<SK = K, SV = V>(name: string, options?: SublevelOptions<SK, SV>): Database<SK, SV>;
  sublevel<SK = K, SV = V>(name: string, options?: SublevelOptions<SK, SV>): Database<SK, SV> {
    checkOptionNames(options, ENCODING_OPTIONS, 'db.sublevel()');
    const codec = this.#codec.child(name, options as EncodingOptions<unknown, unknown> | undefined);
    return new Database<SK, SV>(this.#core, '', undefined, false, undefined, codec);
  }

  /** @internal The codec of this database or sublevel (batches and transactions). */
  static codecOf(db: Database<unknown, unknown>): Codec {
    return db.#codec;
  }

  /** @internal The engine and pool of `db` (a `connect()` leader's exports and imports). */
  static internals(db: Database<unknown, unknown>): {
    inner: WasmDatabase;
    ready(files?: number): Promise<void> | undefined;
    afterWrite(): void;
    watches(): number;
  } {
    const core = db.#core;
    const ready = (files?: number) => (core.keeper && files !== undefined ? core.keeper.topUp(Math.max(core.keeper.target, files)) : core.keeper?.topUp());
    return { inner: core.inner, ready, afterWrite: () => core.afterWrite(), watches: () => core.feed?.watchers.size ?? 0 };
  }

  /** @internal Whether `db` is a view of the same open database. */
  static sameDatabase(a: Database<unknown, unknown>, b: Database<unknown, unknown>): boolean {
    return a.#core === b.#core;
  }

  /** Stores `value` under `key`, replacing any previous value. */
  put(key: K, value: V, options?: WriteOptions): void {
    const c = this.#codec;
    const k = c.key(key);
    const v = c.value(value);
    const core = this.#core;
    const sync = core.syncOf(options, 'db.put()');
    core.write(
      () => core.inner.put(k, v, sync),
      () => changes.put(k),
    );
  }

  /**
   * Records a merge operand for `key`: the database's `mergeOperator`
   * (chosen at open) combines it with the value when it is read, so the
   * write needs no read (a counter: `db.merge(key, u64(1))` with
   * `'u64add'`). Operands are bytes whatever the value encoding. Without a
   * `mergeOperator`, `InvalidArgument`.
   */
  merge(key: K, operand: Uint8Array, options?: WriteOptions): void {
    const k = this.#codec.key(key);
    const v = valueBytes(operand, 'operand');
    const core = this.#core;
    const sync = core.syncOf(options, 'db.merge()');
    core.write(
      () => core.inner.merge(k, v, sync),
      () => changes.merge(k),
    );
  }

  /** Removes `key`; removing a missing key is not an error. */
  delete(key: K, options?: WriteOptions): void {
    const k = this.#codec.key(key);
    const core = this.#core;
    const sync = core.syncOf(options, 'db.delete()');
    core.write(
      () => core.inner.delete(k, sync),
      () => changes.delete(k),
    );
  }

  /**
   * Removes every key from `start` (included) to `end` (excluded), with one
   * range tombstone: as cheap for a million keys as for one.
   */
  deleteRange(start: K, end: K, options?: WriteOptions): void {
    const s = this.#codec.key(start, 'start');
    const e = this.#codec.key(end, 'end');
    checkRangeOrder(s, e, start, end);
    const core = this.#core;
    const sync = core.syncOf(options, 'db.deleteRange()');
    core.write(
      () => core.inner.deleteRange(s, e, sync),
      () => changes.deleteRange(s, e),
    );
  }

  /**
   * Removes every key in `range` (default: every key of this database or
   * sublevel) with one range tombstone, not a delete per key: as cheap for
   * a million keys as for one.
   */
  clear(range: RangeOptions<K> = {}, options?: WriteOptions): void {
    if (typeof range !== 'object' || range === null) throw new SiltError('InvalidArgument', `clear() takes a range object, got ${show(range)}`);
    checkOptionNames(range, RANGE_OPTIONS, 'db.clear()');
    const { lower, upper } = this.#codec.bounds(range);
    const sync = this.#core.syncOf(options, 'db.clear()');
    if (lower !== undefined && upper !== undefined && compareBytes(lower, upper) >= 0) return;
    this.#core.clear(lower ?? EMPTY, upper, sync);
  }

  /** A new batch of updates in this database's (or sublevel's) keys and encodings; `db.write(batch)` applies it. */
  batch(): WriteBatch<K, V> {
    return WriteBatch.withCodec<K, V>(this.#codec);
  }

  /** Applies every update of `batch` atomically (it may span sublevels). */
  write(batch: WriteBatch<unknown, unknown>, options?: WriteOptions): void {
    if (!(batch instanceof WriteBatch)) throw new SiltError('InvalidArgument', 'write() takes a WriteBatch');
    const core = this.#core;
    const sync = core.syncOf(options, 'db.write()');
    core.write(
      () => core.inner.write(batch.encoded(), sync),
      () => changes.batch(batch.encoded()),
    );
  }

  /**
   * Loads `entries` (pairs `[key, value]`, or a `WriteBatch` of puts) as
   * new table files, added in one atomic step: no log, no memtable, so a
   * bulk import costs a fraction of the same puts. Durable when the
   * Promise resolves (every earlier write too); a crash before leaves
   * none of it. Snapshots and iterators from before do not see it. The
   * files go as deep in the LSM as nothing newer overlaps their keys (see
   * docs/architecture.md); other writes wait while it runs. Unsorted
   * entries are sorted (pass `sorted: true` when they already are); of
   * equal keys the last wins.
   */
  ingest(entries: WriteBatch<K, V> | Iterable<readonly [K, V]>, options?: IngestOptions): Promise<IngestReport> {
    return callAsync(() => ingestInto(this.#core, entries, options, () => this.batch()));
  }

  /**
   * The value of `key`, or `undefined`: a value the caller owns. Bytes come
   * in a buffer of their own, safe to keep and to transfer; with a value
   * encoding, the decoded value. One call into wasm and one copy. To read
   * without a copy, `getPinned`.
   */
  get<const O extends GetOptions<unknown> = GetOptions<V>>(key: K, options?: Exactly<O, GetOptions<unknown>>): ReadValueOf<O, V> | undefined {
    checkOptionNames(options, VALUE_READ_OPTIONS, 'db.get()');
    const core = this.#core;
    const snapshot = options === undefined ? 0 : core.snapshotOf(options);
    const c = options?.valueEncoding === undefined ? this.#codec : this.#codec.with(options as EncodingOptions<unknown, unknown>);
    // utf8 and json make new values: the bytes under them need no buffer of their own.
    const b = core.exchange.getCopy(c.plainKeys ? key : c.key(key), snapshot, c.sharesBytes);
    return (b === undefined || c.plainValues ? b : c.unvalue(b)) as ReadValueOf<O, V> | undefined;
  }

  /**
   * The stored bytes of `key` without a copy, or `undefined`: a
   * `PinnedValue` whose `.bytes` is a view of wasm memory, pinned where the
   * engine holds it (a block of the block cache, or the memtable) until
   * `release()` or the end of a `using` scope. The bytes as stored: a value
   * encoding does not apply. In a worker only (RocksDB's `GetPinnable`).
   */
  getPinned(key: K, options?: ReadOptions): PinnedValue | undefined {
    checkOptionNames(options, SNAPSHOT_OPTIONS, 'db.getPinned()');
    const core = this.#core;
    const snapshot = options === undefined ? 0 : core.snapshotOf(options);
    const c = this.#codec;
    const exchange = core.exchange;
    const handle = exchange.get(c.plainKeys ? key : c.key(key), snapshot);
    return handle === 0 ? undefined : new PinnedValue(exchange, handle, exchange.offset, exchange.length);
  }

  /** Whether `key` has a value (see `Operations.has`): its handle is let go of at once, nothing copied. */
  has(key: K, options?: ReadOptions): boolean {
    checkOptionNames(options, SNAPSHOT_OPTIONS, 'db.has()');
    const core = this.#core;
    const exchange = core.exchange;
    const handle = exchange.get(this.#codec.plainKeys ? key : this.#codec.key(key), options === undefined ? 0 : core.snapshotOf(options));
    if (handle !== 0) exchange.release(handle);
    return handle !== 0;
  }

  /** Whether each of `keys` has a value (see `Operations.hasMany`): one batched MultiGet, nothing copied. */
  hasMany(keys: K[], options?: ReadOptions): boolean[] {
    checkOptionNames(options, SNAPSHOT_OPTIONS, 'db.hasMany()');
    const r = this.multiGet(keys, { ...options, valueEncoding: 'view' }) as unknown as MultiGetResult;
    try {
      return Array.from({ length: r.length }, (_, i) => r.has(i));
    } finally {
      r.release();
    }
  }

  /**
   * The values of many keys, read at one point in time: the keys are
   * written into wasm memory and read with one call into wasm. With bytes
   * values, a `MultiGetResult` pinning them together: `result.get(i)` is a
   * view (no copy) of the value of `keys[i]`; release it (or `using`) when
   * done. With another value encoding, an array of decoded values.
   */
  multiGet<const O extends MultiGetOptions & GetOptions<unknown> = GetOptions<V>>(
    keys: K[],
    options?: Exactly<O, MultiGetOptions & GetOptions<unknown>>,
  ): MultiGot<ReadValueOf<O, V>> {
    return multiGetOf(this.#core, this.#codec, keys, options) as MultiGot<ReadValueOf<O, V>>;
  }

  /**
   * Begins an optimistic transaction (see `Transaction`): reads at a
   * snapshot taken now with its own writes on top, commit all or nothing,
   * `Conflict` if someone else wrote what it depends on first. It may stay
   * open across any `await`; commit or abort it (`using` aborts it).
   * `transaction(fn)` does all of that and retries.
   */
  begin(): Transaction<K, V> {
    const core = this.#core;
    const id = core.call(() => core.inner.beginTransaction());
    const host = core.transactionHost((db) => {
      if (!(db instanceof Database) || !Database.sameDatabase(db as Database<unknown, unknown>, this as Database<unknown, unknown>)) {
        throw new SiltError('InvalidArgument', 'tx.in() takes a sublevel of the database the transaction is on');
      }
      return Database.codecOf(db as Database<unknown, unknown>);
    });
    return new Transaction<K, V>(host, id, this.#codec);
  }

  /**
   * Runs `fn` in a transaction and commits it when `fn` returns (or its
   * Promise resolves: `fn` may await anything), returning what `fn`
   * returned. On a conflict `fn` runs again in a new transaction, up to
   * `retries` times with a growing backoff, then `Conflict` is thrown. If
   * `fn` throws (or calls `tx.abort()`), nothing is written and its error
   * is thrown (nothing, after an abort).
   */
  transaction<T>(fn: (tx: Transaction<K, V>) => T | Promise<T>, options?: TransactionOptions): Promise<T> {
    return callAsync(() => {
      if (typeof fn !== 'function') throw new SiltError('InvalidArgument', `transaction() takes a function, got ${show(fn)}`);
      checkOptionNames(options, TRANSACTION_OPTIONS, 'db.transaction()');
      return withRetries(options, (commit) => attemptTransaction(this.begin(), fn, commit, this.#core.keeper));
    });
  }

  /**
   * Reads `key`, passes its value (a copy or the decoded value, or
   * `undefined`) to `f`, and writes what `f` returns (a value; `null`
   * deletes the key; `undefined` leaves it), in a transaction retried on
   * conflict. Resolves to the new value. For a counter, `merge` with
   * `mergeOperator: 'u64add'` needs no read at all.
   */
  update(key: K, f: (value: V | undefined) => UpdateResult<V>, options?: TransactionOptions): Promise<V | undefined> {
    return callAsync(() => {
      this.#codec.key(key); // checked now
      if (typeof f !== 'function') throw new SiltError('InvalidArgument', `update() takes a function, got ${show(f)}`);
      checkOptionNames(options, TRANSACTION_OPTIONS, 'db.update()');
      return this.transaction((tx) => updateIn(tx, key, f, this.#codec.plainValues), options);
    });
  }

  /** A snapshot of the current state; release it when done. */
  snapshot(): Snapshot {
    const core = this.#core;
    const id = core.call(() => core.inner.snapshot());
    return new Snapshot(core.inner, id, core);
  }

  /**
   * An iterator over the keys within `options`' range (sync and async),
   * yielding `[key, value]` entries decoded by the encodings (the
   * database's, or the iterator's own), at most `limit` of them.
   */
  iterator<IV = V>(options: IteratorOptions<K, IV> = {}): EntryIterator<KeyOf<K>, IV> {
    return this.#iterator(options, 'db.iterator()');
  }

  #iterator<IV>(options: IteratorOptions<K, IV>, call: string): EntryIterator<KeyOf<K>, IV> {
    const core = this.#core;
    if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', `${call}'s options must be an object, got ${show(options)}`);
    checkOptionNames(options, ITERATOR_OPTIONS, call);
    const c = this.#codec.with(options as EncodingOptions<unknown, unknown>);
    const { lower, upper, batchSize, reverse, autoRefresh, limit } = iteratorOptions(options, c);
    const snapshot = core.snapshotOf(options);
    const inner = core.call(() => core.inner.iterator(lower, upper, reverse, snapshot, autoRefresh));
    return core.track<KeyOf<K>, IV>(inner, batchSize, c, limit);
  }

  /** The keys within `options`' range, in order (an iterator of keys only; sync and async). */
  keys(options: IteratorOptions<K, V> = {}): KeyIterator<KeyOf<K>> {
    return this.#iterator<V>(options, 'db.keys()').keys();
  }

  /** The values of the keys within `options`' range, in key order (sync and async). */
  values<IV = V>(options: IteratorOptions<K, IV> = {}): ValueIterator<IV> {
    return this.#iterator<IV>(options, 'db.values()').values();
  }

  /** The same as `iterator(options)`: `[key, value]` entries. */
  entries<IV = V>(options: IteratorOptions<K, IV> = {}): EntryIterator<KeyOf<K>, IV> {
    return this.#iterator<IV>(options, 'db.entries()');
  }

  /**
   * The number of keys in `range` (default: every key of this database or
   * sublevel), exact, as of `range.snapshot` or now: counted inside the
   * engine, no key or value crosses into JavaScript.
   */
  count(range: CountOptions<K> = {}): number {
    if (typeof range !== 'object' || range === null) throw new SiltError('InvalidArgument', `count() takes a range object, got ${show(range)}`);
    checkOptionNames(range, COUNT_OPTIONS, 'db.count()');
    const core = this.#core;
    const { lower, upper } = this.#codec.bounds(range);
    const snapshot = core.snapshotOf(range);
    return core.call(() => core.inner.count(lower, upper, snapshot));
  }

  /**
   * About how many bytes of storage the keys in `range` take (default:
   * every key of this database or sublevel): from the table files' indexes,
   * reading no data, so it costs the same for any range. Writes not yet
   * flushed from memory are not counted.
   */
  approximateSize(range: RangeOptions<K> = {}): number {
    if (typeof range !== 'object' || range === null) throw new SiltError('InvalidArgument', `approximateSize() takes a range object, got ${show(range)}`);
    checkOptionNames(range, RANGE_OPTIONS, 'db.approximateSize()');
    const core = this.#core;
    const { lower, upper } = this.#codec.bounds(range);
    return core.call(() => core.inner.approximateSize(lower, upper));
  }

  /**
   * A backup as of now, as one versioned byte stream (`docs/format.md`) to
   * save as a file, upload, or give to `import()` / `importDatabase()`.
   * Each chunk carries a checksum. Of the whole database, by default its
   * table files as they are (`form: 'tables'`: fast to import); of a
   * `range` or a sublevel, every key in it and its value, with their
   * stored prefixes (`form: 'entries'`, which a whole database can ask for
   * too: only live values travel). The export reads at a snapshot taken
   * now: writes made while it is read are not in it. Read it to its end or
   * cancel it.
   */
  export(options: ExportOptions<K> = {}): ReadableStream<Uint8Array> {
    if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', `export() takes an options object, got ${show(options)}`);
    checkOptionNames(options, EXPORT_OPTIONS, 'db.export()');
    const { lower, upper } = this.#codec.bounds(options);
    const { form, lz4, targetFileSize } = exportForm(options, { lower, upper });
    const core = this.#core;
    const exp = core.call(() => core.inner.exportStart(lower, upper, undefined, undefined, form, lz4, targetFileSize));
    return exportStream(exp, () => {});
  }

  /**
   * Fills this database, which must be empty, from an export (a stream, a
   * Blob or File, bytes, or an iterable of chunks): the entries go straight
   * into table files, and become visible together at the end, once every
   * chunk's checksum and the stream's end record have been checked. A
   * damaged or truncated export is refused with `Corruption` or
   * `ChecksumMismatch`, and nothing of it is left. On the database itself,
   * not a sublevel (the export's keys carry their prefixes).
   */
  async import(source: ImportSource): Promise<ImportReport> {
    if (this.#codec.prefix.length > 0) {
      throw new SiltError('InvalidArgument', 'import() fills the database itself, not a sublevel: the exported keys carry their sublevel prefixes');
    }
    const core = this.#core;
    const report = await importInto(core.inner, source, () => core.keeper?.topUp());
    core.feed?.wrote(undefined); // its keys are not listed: a gap
    core.afterWrite();
    return report;
  }

  /**
   * Adds RocksDB table files in one step: a tar archive of them
   * (`export({ form: 'rocksdb' })`, or `tar --format=ustar` of tables from
   * RocksDB's `SstFileWriter`) or one `.sst`, uncompressed or LZ4. Every
   * table is read (into memory) and verified first (damage: `Corruption`,
   * nothing written); a later table's keys win. Not on a sublevel.
   * Through `connect()`, in order with the writes called after it.
   */
  ingestRocksdb(source: ImportSource): Promise<RocksdbIngestReport> {
    return ingestRocksdbOn(this.#core, this.#codec.prefix, source);
  }

  /** Flushes every memtable to table files and waits for it. */
  flush(): void {
    const core = this.#core;
    core.write(() => core.inner.flush());
  }

  /**
   * Compacts every key from `begin` to `end` (both included; either may be
   * left out: the first or last key of this database or sublevel) down to
   * the last level: afterwards deleted and overwritten data there takes no
   * space, unless a snapshot still needs it. The compaction runs in short
   * steps between other work, so the worker goes on serving requests (and
   * reads see every write) while it runs; the promise resolves once it is
   * done and background work has caught up.
   */
  async compactRange(begin?: K, end?: K): Promise<void> {
    const c = this.#codec;
    const b = begin === undefined ? (c.prefix.length > 0 ? c.prefix : undefined) : c.key(begin, 'begin');
    const e = end === undefined ? c.end : c.key(end, 'end');
    const core = this.#core;
    core.write(() => core.inner.startCompactRange(b, e));
    await this.idle();
  }

  /**
   * Reads every block of every table file and checks every checksum and
   * every key. Returns what it checked, or throws the first damage found
   * (`Corruption` or `ChecksumMismatch`, naming the file and offset). It
   * reads the whole database: as slow as a full scan.
   */
  verify(): VerifyReport {
    const core = this.#core;
    return core.call(() => core.inner.verify()) as VerifyReport;
  }

  /** Counters and gauges: engine, block cache, bloom filters, pool, memory, storage. */
  statistics(): Statistics {
    return statisticsOf(this.#core);
  }

  /**
   * Resolves once background work has caught up and the file pool is
   * topped up: what a worker awaits between bursts of synchronous writes.
   */
  async idle(): Promise<void> {
    await this.#core.pump.idle();
  }

  /**
   * Closes the database (a sublevel's `close()` closes the whole
   * database): syncs its log, releases open iterators (their next step
   * throws `Closed`) and snapshots, closes its OPFS files and releases its
   * Web Lock. Results of `get` / `multiGet` stay readable until released.
   * Closing twice does nothing. If the engine reports an error while
   * closing, the database is closed anyway and the error is thrown.
   */
  close(): void {
    if (!this.closed) this.#core.close();
  }

  [dispose](): void {
    this.close();
  }
}

const EMPTY = new Uint8Array(0);

/** Runs `f`, turning a synchronous throw (bad input) into a rejection. */
async function callAsync<T>(f: () => Promise<T>): Promise<T> {
  return f();
}
