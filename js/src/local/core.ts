/**
 * What every view of one open database shares, the root and its sublevels
 * (database.ts): the engine, the pool keeper, the background pump, the
 * exchange buffer and the live iterators.
 */

import type { Database as WasmDatabase, Iterator as WasmIterator } from '../../pkg/silt_wasm.js';
import { Exchange } from '../boundary/exchange.js';
import { show, successor } from '../core/bytes.js';
import { Codec } from '../core/encoding.js';
import { fromWasm, SiltError } from '../core/errors.js';
import { WRITE_OPTIONS } from '../core/call-options.js';
import { checkOptionNames } from '../core/option-names.js';
import type { PoolKeeper } from '../opfs/pool.js';
import type { Packed } from '../tabs/leader-batches.js';
import { BackgroundPump } from './background-pump.js';
import { ChangeLog, changes, LocalFeed } from './change-feed.js';
import type { TransactionHost } from './transaction.js';
import { EntryIterator } from './iterator.js';
import type { WriteOptions } from './options.js';
import { Snapshot } from './snapshot.js';

/** How long after a run of reads background work looks for read-triggered compactions. */
const READ_KICK_MS = 10;

/** The codec of a database of bytes: keys and values as they are. */
export const ROOT = Codec.root(undefined);

/** @internal What happens to a database's files and lock at close (open.ts). */
/** Where a database's files live (`db.storage`): OPFS, IndexedDB, or nowhere (`openMemory`). */
export type StorageKind = 'opfs' | 'indexeddb' | 'memory';

export interface Closer {
  /** Where the database's files live (`db.storage`). */
  storage: StorageKind;
  /** Resolves once every write so far is durable where the files live (`db.persisted()`). */
  persisted(): Promise<void>;
  /** Whether to close leaving the pooled files open (to park them). */
  keepFiles(): boolean;
  /** The engine closed; `kept`: its files are still open. */
  closed(kept: boolean): void;
}

/** @internal What every view of one open database shares (the root and its sublevels). */
export class Core {
  inner: WasmDatabase;
  name: string;
  keeper: PoolKeeper | undefined;
  sync: boolean;
  pump: BackgroundPump;
  closer: Closer;
  liveIterators = new Set<EntryIterator<unknown, unknown>>();
  exchange: Exchange;
  /** The change records of the writes, from the first watch on (change-feed.ts). */
  feed: LocalFeed | undefined;

  constructor(inner: WasmDatabase, name: string, keeper: PoolKeeper | undefined, sync: boolean, closer: Closer) {
    this.inner = inner;
    this.name = name;
    this.keeper = keeper;
    this.sync = sync;
    this.closer = closer;
    this.pump = new BackgroundPump(inner, keeper);
    // Lookups that search several files mark some for read-triggered
    // compaction: let background work look, now and then, while only reads run.
    this.exchange = new Exchange(inner, () => this.pump.kick(READ_KICK_MS));
    // Memtables recovered from a WAL whose tail a crash tore are flushed
    // in the background from the start, not at the first write.
    this.pump.kick();
  }

  /** The `sync` of a write's `options` (of `call`, for messages), checked. */
  syncOf(options: WriteOptions | undefined, call: string): boolean {
    if (options === undefined) return this.sync;
    checkOptionNames(options, WRITE_OPTIONS, call);
    if (options.sync === undefined) return this.sync;
    if (typeof options.sync !== 'boolean') throw new SiltError('InvalidArgument', `sync must be a boolean, got ${show(options.sync)}`);
    return options.sync;
  }

  snapshotOf(options: { snapshot?: Snapshot } | undefined): number {
    const s = options?.snapshot;
    if (s === undefined) return 0;
    if (!(s instanceof Snapshot)) throw new SiltError('InvalidArgument', 'snapshot must be a Snapshot of this database');
    return s.idFor(this);
  }

  /** After a call that may have filled a memtable or used pooled files. */
  afterWrite(): void {
    this.pump.wrote();
    this.keeper?.topUpIfLow();
  }

  call<T>(f: () => T): T {
    try {
      return f();
    } catch (e) {
      throw fromWasm(e);
    }
  }

  /**
   * A write: `call(f)`, then `afterWrite()`, also when it failed (a write
   * refused with `PoolExhausted` starts the top-up that lets it through
   * after an await). `change`: what it changes, for the watches (asked
   * only once the database has been watched; change-feed.ts).
   */
  write<T>(f: () => T, change?: () => Packed | undefined): T {
    let done = false;
    try {
      const r = f();
      done = true;
      return r;
    } catch (e) {
      throw this.#poolCause(fromWasm(e));
    } finally {
      this.feed?.wrote(done ? listed(change) : undefined);
      this.afterWrite();
    }
  }

  /** Closes the database (see `Database.close`). */
  close(): void {
    this.pump.stop();
    this.feed?.close();
    for (const it of this.liveIterators) it.closeWithDatabase();
    this.exchange.flush();
    const keep = this.closer.keepFiles();
    let kept = false;
    try {
      if (keep) this.inner.closeKeepingPool();
      else this.inner.close();
      kept = keep;
    } catch (e) {
      throw fromWasm(e);
    } finally {
      if (!kept) this.keeper?.close();
      this.closer.closed(kept);
    }
  }

  /** What a transaction of this database needs of it; `codecOf`: the codec of a handle given to `tx.in()`. */
  transactionHost(codecOf: (db: unknown) => Codec): TransactionHost {
    return {
      inner: this.inner,
      sync: this.sync,
      afterWrite: () => this.afterWrite(),
      log: this.feed === undefined ? undefined : new ChangeLog(),
      committed: (change) => this.feed?.wrote(change),
      track: (it, n, codec, limit) => this.track(it, n, codec, limit),
      codecOf,
    };
  }

  /** The watches' feed of this database, made at its first watch. */
  feedForWatch(): LocalFeed {
    this.feed ??= new LocalFeed(
      () => this.call(() => this.inner.latestSequence),
      (key) => this.call(() => this.exchange.getCopy(key, 0, true)),
    );
    return this.feed;
  }

  /**
   * A write's `PoolExhausted` when the pool's last top-up failed (storage
   * refused new files): the engine's advice, to let the event loop run
   * for a top-up, cannot help then, so the error says why instead, with
   * the top-up's error as its cause.
   */
  #poolCause(e: SiltError): SiltError {
    const cause = this.keeper?.lastError;
    if (e.code !== 'PoolExhausted' || cause === undefined) return e;
    return new SiltError(
      'PoolExhausted',
      `a write needs a new file, no pooled OPFS file is free, and the pool could not add files: ${cause.code}: ${cause.message}`,
      { cause },
    );
  }

  /** An iterator of the package around `inner`, closed with the database. */
  track<K, V>(inner: WasmIterator, batchSize: number | undefined, codec: Codec, limit: number): EntryIterator<K, V> {
    // The engine deletes the files only an old version held as soon as the
    // iterator lets go of it: at a refresh, or when it is released.
    const it: EntryIterator<K, V> = new EntryIterator<K, V>(
      inner,
      batchSize,
      () => this.liveIterators.delete(it as EntryIterator<unknown, unknown>),
      codec,
      limit,
    );
    this.liveIterators.add(it as EntryIterator<unknown, unknown>);
    return it;
  }

  /** Deletes `[lower, upper)`, or from `lower` past the last key (`upper` undefined): one range tombstone. */
  clear(lower: Uint8Array, upper: Uint8Array | undefined, sync: boolean): void {
    let end = upper;
    if (end === undefined) {
      // Unbounded: the tombstone ends just past the last key there is.
      const last = this.call(() => this.inner.iterator(lower, undefined, true, 0, false));
      const it = new EntryIterator<Uint8Array, Uint8Array>(last, 1, () => {}, ROOT, 1);
      const first = it.next();
      it.release();
      if (first.done) return;
      end = successor(first.value[0]);
    }
    const e = end;
    this.write(
      () => this.inner.deleteRange(lower, e, sync),
      () => changes.deleteRange(lower, e),
    );
  }
}

/**
 * What a write that went through changed, for the watches; undefined (a
 * gap) if it cannot be listed: a write applied is never reported as failed
 * because its record could not be made (a batch with reserved keys).
 */
function listed(change: (() => Packed | undefined) | undefined): Packed | undefined {
  try {
    return change?.();
  } catch {
    return undefined;
  }
}
