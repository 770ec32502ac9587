/**
 * The database handle of a worker: synchronous calls into the engine, with
 * zero-copy reads, and background work pumped between calls.
 */

import type { Database as WasmDatabase, Iterator as WasmIterator } from '../pkg/silt_wasm.js';
import { WriteBatch } from './batch.js';
import { keyBytes, show, valueBytes, type Key } from './bytes.js';
import { contract, type Recovery } from './contract.js';
import { fromWasm, SiltError } from './errors.js';
import { Exchange } from './exchange.js';
import { Iterator, iteratorOptions, type IteratorOptions } from './iterator.js';
import type { PoolKeeper } from './pool.js';
import { collectedResults, MultiGetResult, PinnedValue } from './results.js';
import { Snapshot } from './snapshot.js';
import { Transaction, type TransactionOptions, type UpdateResult, updateIn, withRetries } from './transaction.js';
import { storageEstimate, type StorageEstimate } from './storage.js';
import { memoryBytes, memoryMode, type MemoryMode } from './wasm.js';

/** Options of one write. */
export interface WriteOptions {
  /**
   * Make the write durable before the call returns (default: the
   * database's `sync` open option, itself false by default). Without it a
   * crash may lose the latest writes, never part of a batch and never an
   * older write while keeping a newer one.
   */
  sync?: boolean;
}

/** Options of one read. */
export interface ReadOptions {
  /** Read as of this snapshot (default: the latest state). */
  snapshot?: Snapshot;
}

/** Options of one `multiGet`. */
export interface MultiGetOptions extends ReadOptions {
  /**
   * Use the engine's batched MultiGet (default true): keys grouped by the
   * table file that may hold them, each file searched once for its group,
   * its filter probed for the group at once. With false each key is looked
   * up on its own, as `get` does, still at one point in time and with one
   * call into wasm (for comparing the two, as RocksDB's benchmark does).
   */
  batched?: boolean;
}

/** What `statistics()` returns. */
export interface Statistics {
  name: string;
  /** On OPFS (true) or in memory (false). */
  persistent: boolean;
  /** Gauges of the engine (camelCase names). */
  properties: {
    superVersionNumber: number;
    lastSequence: number;
    memtableBytes: number;
    immutableMemtables: number;
    filesPerLevel: number[];
    bytesPerLevel: number[];
    tableBytes: number;
    /** Bytes of every memtable in memory, flushed ones iterators still pin included. */
    allMemtableBytes: number;
    /** Bytes of every table file kept, obsolete ones iterators still pin included. */
    liveTableBytes: number;
    /** Bytes of blocks and memtable entries pinned by results of `get` / `multiGet`. */
    pinnedBytes: number;
    blockCacheUsage: number;
    blockCacheCapacity: number;
    liveSnapshots: number;
    /** 1 while a flush or compaction is in progress or due. */
    backgroundWorkPending: number;
    [name: string]: number | number[];
  };
  /** Counters by their RocksDB names, e.g. `rocksdb.block.cache.hit`. */
  tickers: Record<string, number>;
  /** Histograms by their RocksDB names, e.g. `rocksdb.db.get.micros`. */
  histograms: Record<string, { count: number; sum: number; min: number; max: number; p50: number; p95: number; p99: number }>;
  /**
   * The OPFS file pool (persistent databases only): pooled files, free
   * ones, removed ones still open, bytes of logical data, creates refused,
   * the bytes every pooled file takes on storage (`bytes`, headers
   * included: what `maxBytes` caps), the cap and the part of it kept for
   * deletes and compactions (`maxBytes`, `reserveBytes`; only with
   * `maxBytes`), and the logical files the pooled files' headers name
   * (`db/000012.sst`).
   */
  pool?: {
    files: number;
    free: number;
    removedOpen: number;
    dataBytes: number;
    exhausted: number;
    bytes: number;
    maxBytes?: number;
    reserveBytes?: number;
    paths: string[];
  };
  /**
   * The origin's storage (`navigator.storage.estimate()` and
   * `persisted()`), where the browser has the Storage API: every database
   * of the origin and all else it stores. Cached: at most about a second
   * old when statistics are read regularly (`updatedAt` says when it was
   * taken); through `connect()` it is fresh.
   */
  storage?: StorageEstimate;
  /** Results pinning values right now (every database of this realm). */
  pinnedResults: number;
  /** Results released by garbage collection instead of `release()`. */
  collectedResults: number;
  memory: { bytes: number; mode: MemoryMode };
  background: { steps: number; lastError?: { code: string; message: string } };
}

/** What `verify()` returns: what it read and checked. */
export interface VerifyReport {
  /** Table files read. */
  tables: number;
  /** Entries checked. */
  entries: number;
  /** Bytes of the table files read. */
  tableBytes: number;
}

/** Failed steps in a row (that may be retried) before `idle()` gives up. */
const IDLE_RETRY_ATTEMPTS = 3;

/** Retrying background work that failed and may be retried: first and longest waits. */
const RETRY_MS = 50;
const RETRY_MAX_MS = 2_000;

/**
 * What the engine decided a failed step of background work means (the
 * binding puts it on the error it throws; crates/wasm/src/error.rs):
 * `stopWrites` for anything else, such as a closed database.
 */
function recoveryOf(e: unknown): Recovery {
  const r = (e as { recovery?: unknown } | null)?.recovery;
  return r === 'retryLater' || r === 'failAlone' ? r : 'stopWrites';
}

/**
 * Runs the engine's background work (flushes, later compactions) in short
 * slices on the event loop, so that requests queued meanwhile run between
 * slices and are never starved.
 */
class BackgroundPump {
  #inner: WasmDatabase;
  #keeper: PoolKeeper | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #due = 0;
  #stopped = false;
  /** Background work stopped writes: nothing more is pumped. */
  #failed = false;
  #retryMs = RETRY_MS;
  steps = 0;
  lastError: SiltError | undefined;
  static sliceMs = 4;
  static budget = 8;

  constructor(inner: WasmDatabase, keeper: PoolKeeper | undefined) {
    this.#inner = inner;
    this.#keeper = keeper;
  }

  /** Runs background work after `delayMs`, or sooner if already scheduled later. */
  kick(delayMs = 0): void {
    if (this.#stopped || this.#failed) return;
    const at = performance.now() + delayMs;
    if (this.#timer !== undefined) {
      if (this.#due <= at) return;
      clearTimeout(this.#timer);
    }
    this.#due = at;
    this.#timer = setTimeout(() => this.#run(), delayMs);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #run(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    const { workLeft, waitingForPool } = contract().work;
    const end = performance.now() + BackgroundPump.sliceMs;
    let bits = 0;
    try {
      do {
        bits = this.#inner.backgroundWork(BackgroundPump.budget);
        this.steps++;
      } while (bits & workLeft && !(bits & waitingForPool) && performance.now() < end);
    } catch (e) {
      this.lastError = fromWasm(e);
      if (recoveryOf(e) === 'stopWrites') {
        // Every later write reports the error: keep it for statistics()
        // and stop pumping.
        this.#failed = true;
        return;
      }
      // The engine kept the work (a file it could not create) or dropped
      // it for lack of space, and redoes it at a later step. Retry, less and
      // less often, until it goes through (a write's kick retries at once).
      this.kick(this.#retryMs);
      this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
      return;
    }
    this.lastError = undefined;
    this.#retryMs = RETRY_MS;
    if (bits & waitingForPool && this.#keeper) {
      this.#keeper.topUp().then(
        () => this.kick(),
        (e: unknown) => {
          this.lastError = fromWasm(e);
          this.#failed = true;
        },
      );
    } else if (bits & workLeft) {
      this.kick();
    }
  }
}

/** @internal What happens to a database's files and lock at close (open.ts). */
export interface Closer {
  /** Whether to close leaving the pooled files open (to park them). */
  keepFiles(): boolean;
  /** The engine closed; `kept`: its files are still open. */
  closed(kept: boolean): void;
}

/**
 * An open Silt database, in the thread that opened it.
 *
 * Calls are synchronous: they run the engine in this thread, so in a web
 * page use it from a worker (`open()` in a worker, or `connect()` from the
 * page). Every failure throws a `SiltError`; after `close()`, every call
 * but `close()` throws one with code `"Closed"`.
 */
export class Database implements Disposable {
  #inner: WasmDatabase;
  #name: string;
  #keeper: PoolKeeper | undefined;
  #sync: boolean;
  #pump: BackgroundPump;
  #closer: Closer;
  #liveIterators = new Set<Iterator>();
  #exchange: Exchange;

  /** @internal Use `open()` or `openMemory()`. */
  constructor(inner: WasmDatabase, name: string, keeper: PoolKeeper | undefined, sync: boolean, closer: Closer) {
    this.#inner = inner;
    this.#name = name;
    this.#keeper = keeper;
    this.#sync = sync;
    this.#closer = closer;
    this.#pump = new BackgroundPump(inner, keeper);
    this.#exchange = new Exchange(inner);
    // Memtables recovered from a WAL whose tail a crash tore are flushed
    // in the background from the start, not at the first write.
    this.#pump.kick();
  }

  /** The name the database was opened with. */
  get name(): string {
    return this.#name;
  }

  /**
   * The sequence number of the last write (0 for a new database). Each
   * update of a write takes the next number, in order; `connect()`'s change
   * events (`watch`) carry them.
   */
  get latestSequence(): number {
    return this.#call(() => this.#inner.latestSequence);
  }

  /** Whether `close()` has run. */
  get closed(): boolean {
    return this.#inner.isClosed;
  }

  #syncOf(options: WriteOptions | undefined): boolean {
    if (options?.sync === undefined) return this.#sync;
    if (typeof options.sync !== 'boolean') throw new SiltError('InvalidArgument', `sync must be a boolean, got ${show(options.sync)}`);
    return options.sync;
  }

  #snapshotOf(options: ReadOptions | IteratorOptions | undefined): number {
    const s = options?.snapshot;
    if (s === undefined) return 0;
    if (!(s instanceof Snapshot)) throw new SiltError('InvalidArgument', 'snapshot must be a Snapshot of this database');
    return s.idFor(this);
  }

  /** After a call that may have filled a memtable or used pooled files. */
  #afterWrite(): void {
    this.#pump.kick();
    this.#keeper?.topUpIfLow();
  }

  #call<T>(f: () => T): T {
    try {
      return f();
    } catch (e) {
      throw fromWasm(e);
    }
  }

  /** Stores `value` under `key`, replacing any previous value. */
  put(key: Key, value: Uint8Array, options?: WriteOptions): void {
    const k = keyBytes(key);
    const v = valueBytes(value);
    const sync = this.#syncOf(options);
    this.#call(() => this.#inner.put(k, v, sync));
    this.#afterWrite();
  }

  /**
   * Records a merge operand for `key`: the database's `mergeOperator`
   * (chosen at open) combines it with the value when it is read, so the
   * write needs no read (a counter: `db.merge(key, u64(1))` with
   * `'u64add'`). Without a `mergeOperator`, `InvalidArgument`.
   */
  merge(key: Key, operand: Uint8Array, options?: WriteOptions): void {
    const k = keyBytes(key);
    const v = valueBytes(operand, 'operand');
    const sync = this.#syncOf(options);
    this.#call(() => this.#inner.merge(k, v, sync));
    this.#afterWrite();
  }

  /** Removes `key`; removing a missing key is not an error. */
  delete(key: Key, options?: WriteOptions): void {
    const k = keyBytes(key);
    const sync = this.#syncOf(options);
    this.#call(() => this.#inner.delete(k, sync));
    this.#afterWrite();
  }

  /**
   * Removes every key from `start` (included) to `end` (excluded), with one
   * range tombstone: as cheap for a million keys as for one.
   */
  deleteRange(start: Key, end: Key, options?: WriteOptions): void {
    const s = keyBytes(start, 'start');
    const e = keyBytes(end, 'end');
    const sync = this.#syncOf(options);
    this.#call(() => this.#inner.deleteRange(s, e, sync));
    this.#afterWrite();
  }

  /** Applies every update of `batch` atomically. */
  write(batch: WriteBatch, options?: WriteOptions): void {
    if (!(batch instanceof WriteBatch)) throw new SiltError('InvalidArgument', 'write() takes a WriteBatch');
    const sync = this.#syncOf(options);
    this.#call(() => this.#inner.write(batch.encoded(), sync));
    this.#afterWrite();
  }

  /**
   * The value of `key`, pinned in wasm memory (`.bytes` is a view, no
   * copy), or `undefined`. Release it (or `using`) when done; use
   * `getCopy` to keep a value.
   */
  get(key: Key, options?: ReadOptions): PinnedValue | undefined {
    const snapshot = options === undefined ? 0 : this.#snapshotOf(options);
    const exchange = this.#exchange;
    const handle = exchange.get(key, snapshot);
    return handle === 0 ? undefined : new PinnedValue(exchange, handle, exchange.offset, exchange.length);
  }

  /**
   * A copy of the value of `key` that belongs to the caller, or
   * `undefined`: one call into wasm and one copy of the value.
   */
  getCopy(key: Key, options?: ReadOptions): Uint8Array | undefined {
    const snapshot = options === undefined ? 0 : this.#snapshotOf(options);
    return this.#exchange.getCopy(key, snapshot);
  }

  /**
   * The values of many keys, read at one point in time and pinned together:
   * the keys are written into wasm memory and read with one call into wasm,
   * and `result.get(i)` is a view (no copy) of the value of `keys[i]`.
   * Release the result (or `using`) when done.
   */
  multiGet(keys: Key[], options?: MultiGetOptions): MultiGetResult {
    const snapshot = this.#snapshotOf(options);
    const batched = options?.batched === undefined ? true : options.batched;
    if (typeof batched !== 'boolean') throw new SiltError('InvalidArgument', `batched must be a boolean, got ${show(batched)}`);
    return MultiGetResult.wrap(this.#exchange, this.#exchange.multiGet(keys, snapshot, batched));
  }

  /**
   * Begins an optimistic transaction (see `Transaction`): reads at a
   * snapshot taken now with its own writes on top, commit all or nothing,
   * `Conflict` if someone else wrote what it depends on first. It may stay
   * open across any `await`; commit or abort it (`using` aborts it).
   * `transaction(fn)` does all of that and retries.
   */
  begin(): Transaction {
    const id = this.#call(() => this.#inner.beginTransaction());
    return new Transaction({ inner: this.#inner, sync: this.#sync, afterWrite: () => this.#afterWrite(), track: (it, n) => this.#track(it, n) }, id);
  }

  /**
   * Runs `fn` in a transaction and commits it when `fn` returns (or its
   * Promise resolves: `fn` may await anything), returning what `fn`
   * returned. On a conflict `fn` runs again in a new transaction, up to
   * `retries` times with a growing backoff, then `Conflict` is thrown. If
   * `fn` throws (or calls `tx.abort()`), nothing is written and its error
   * is thrown (nothing, after an abort).
   */
  transaction<T>(fn: (tx: Transaction) => T | Promise<T>, options?: TransactionOptions): Promise<T> {
    return callAsync(() => {
      if (typeof fn !== 'function') throw new SiltError('InvalidArgument', `transaction() takes a function, got ${show(fn)}`);
      return withRetries(options, (commit) => {
        const tx = this.begin();
        const done = (result: T): T => {
          try {
            if (!tx.ended) tx.commit(commit);
            return result;
          } finally {
            tx.abort();
          }
        };
        let result: T | Promise<T>;
        try {
          result = fn(tx);
        } catch (e) {
          tx.abort();
          throw e;
        }
        // A synchronous fn commits at once, with no await in between.
        if (!(result instanceof Promise)) return done(result);
        return result.then(done, (e: unknown) => {
          tx.abort();
          throw e;
        });
      });
    });
  }

  /**
   * Reads `key`, passes its value (a copy, or `undefined`) to `f`, and
   * writes what `f` returns (a value; `null` deletes the key; `undefined`
   * leaves it), in a transaction retried on conflict. Resolves to the new
   * value. For a counter, `merge` with `mergeOperator: 'u64add'` needs no
   * read at all.
   */
  update(key: Key, f: (value: Uint8Array | undefined) => UpdateResult, options?: TransactionOptions): Promise<Uint8Array | undefined> {
    return callAsync(() => {
      const k = keyBytes(key);
      if (typeof f !== 'function') throw new SiltError('InvalidArgument', `update() takes a function, got ${show(f)}`);
      return this.transaction((tx) => updateIn(tx, k, f), options);
    });
  }

  /** A snapshot of the current state; release it when done. */
  snapshot(): Snapshot {
    const id = this.#call(() => this.#inner.snapshot());
    return new Snapshot(this.#inner, id, this);
  }

  /** An iterator over the keys within `options`' bounds (sync and async). */
  iterator(options: IteratorOptions = {}): Iterator {
    const { lower, upper, batchSize, reverse, autoRefresh } = iteratorOptions(options);
    const snapshot = this.#snapshotOf(options);
    const inner = this.#call(() => this.#inner.iterator(lower, upper, reverse, snapshot, autoRefresh));
    return this.#track(inner, batchSize);
  }

  /** An iterator of the package around `inner`, closed with the database. */
  #track(inner: WasmIterator, batchSize: number | undefined): Iterator {
    // The engine deletes the files only an old version held as soon as the
    // iterator lets go of it: at a refresh, or when it is released.
    const it: Iterator = new Iterator(inner, batchSize, () => this.#liveIterators.delete(it));
    this.#liveIterators.add(it);
    return it;
  }

  /** Flushes every memtable to table files and waits for it. */
  flush(): void {
    this.#call(() => this.#inner.flush());
    this.#afterWrite();
  }

  /**
   * Compacts every key from `begin` to `end` (both included; either may be
   * left out) down to the last level: afterwards deleted and overwritten
   * data there takes no space, unless a snapshot still needs it. The
   * compaction runs in short steps between other work, so the worker goes
   * on serving requests (and reads see every write) while it runs; the
   * promise resolves once it is done and background work has caught up.
   */
  async compactRange(begin?: Key, end?: Key): Promise<void> {
    const b = begin === undefined ? undefined : keyBytes(begin, 'begin');
    const e = end === undefined ? undefined : keyBytes(end, 'end');
    this.#call(() => this.#inner.startCompactRange(b, e));
    this.#afterWrite();
    await this.idle();
  }

  /**
   * Reads every block of every table file and checks every checksum and
   * every key. Returns what it checked, or throws the first damage found
   * (`Corruption` or `ChecksumMismatch`, naming the file and offset). It
   * reads the whole database: as slow as a full scan.
   */
  verify(): VerifyReport {
    return this.#call(() => this.#inner.verify()) as VerifyReport;
  }

  /** Counters and gauges: engine, block cache, bloom filters, pool, memory, storage. */
  statistics(): Statistics {
    this.#exchange.flush(); // released results count as released
    const s = this.#call(() => this.#inner.statistics()) as Omit<Statistics, 'name' | 'persistent' | 'memory' | 'background' | 'collectedResults'>;
    const lastError = this.#pump.lastError ?? this.#keeper?.lastError;
    const storage = storageEstimate();
    return {
      name: this.#name,
      persistent: this.#keeper !== undefined,
      ...s,
      ...(storage ? { storage } : {}),
      collectedResults: collectedResults(),
      memory: { bytes: memoryBytes(), mode: memoryMode() },
      background: {
        steps: this.#pump.steps,
        ...(lastError ? { lastError: { code: lastError.code, message: lastError.message } } : {}),
      },
    };
  }

  /**
   * Resolves once background work has caught up and the file pool is
   * topped up: what a worker awaits between bursts of synchronous writes.
   */
  async idle(): Promise<void> {
    const { workLeft, waitingForPool } = contract().work;
    let failures = 0;
    for (;;) {
      if (this.closed) return;
      await this.#keeper?.topUp();
      let bits: number;
      try {
        bits = this.#inner.backgroundWork(BackgroundPump.budget);
        failures = 0;
      } catch (e) {
        // A step that may be retried: out of space, the engine drops the
        // flush or compaction and the next step does the next job (a
        // compaction started before a delete gives way to the one that
        // drops the deleted data); a file it could not create, it keeps.
        // Failing three times in a row means that no job goes through.
        if (recoveryOf(e) === 'stopWrites' || ++failures >= IDLE_RETRY_ATTEMPTS) throw fromWasm(e);
        await new Promise((r) => setTimeout(r, 0));
        continue;
      }
      if (!(bits & workLeft)) return;
      if (bits & waitingForPool) {
        // The keeper always keeps enough free files for a step; if a step
        // still waits, the top-up failed (kept in lastError).
        if (this.#keeper?.lastError) throw this.#keeper.lastError;
        throw new SiltError('PoolExhausted', 'background work is waiting for free pooled files that the pool keeper did not provide');
      }
      await new Promise((r) => setTimeout(r, 0));
    }
  }

  /**
   * Closes the database: syncs its log, releases open iterators (their
   * next step throws `Closed`) and snapshots, closes its OPFS files and
   * releases its Web Lock. Results of `get` / `multiGet` stay readable
   * until released. Closing
   * twice does nothing. If the engine reports an error while closing, the
   * database is closed anyway and the error is thrown.
   */
  close(): void {
    if (this.closed) return;
    this.#pump.stop();
    for (const it of this.#liveIterators) it.closeWithDatabase();
    this.#exchange.flush();
    const keep = this.#closer.keepFiles();
    let kept = false;
    try {
      if (keep) this.#inner.closeKeepingPool();
      else this.#inner.close();
      kept = keep;
    } catch (e) {
      throw fromWasm(e);
    } finally {
      if (!kept) this.#keeper?.close();
      this.#closer.closed(kept);
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Runs `f`, turning a synchronous throw (bad input) into a rejection. */
async function callAsync<T>(f: () => Promise<T>): Promise<T> {
  return f();
}
