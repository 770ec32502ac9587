/**
 * Optimistic transactions in a worker (`db.transaction(fn)`, `db.begin()`,
 * `db.update()`).
 *
 * A transaction reads at a snapshot taken when it begins, with its own
 * writes on top (in `get`, `multiGet` and iterators); it stays open across
 * any `await` (it is an object, not a scope). `getForUpdate` and every
 * write track their keys, a `deleteRange` its range; `commit` applies every
 * write atomically unless something tracked was written by anyone else
 * after the snapshot: then it throws a `SiltError` with code `Conflict`
 * and writes nothing. Either way the transaction ends. The engine does the
 * work (crates/engine/src/db/transaction.rs).
 */

import type { Database as WasmDatabase, Iterator as WasmIterator } from '../../pkg/silt_wasm.js';
import { checkRangeOrder, compareBytes, show, successor, valueBytes, type Key } from '../core/bytes.js';
import { type Codec, type EncodingOptions, type KeyOf, RANGE_OPTIONS } from '../core/encoding.js';
import { checkOptionNames, optionNames } from '../core/option-names.js';
import { WRITE_OPTIONS } from '../core/call-options.js';
import { fromWasm, SiltError, type SiltErrorCode } from '../core/errors.js';
import { type EntryIterator, type IteratorOptions, iteratorOptions, TRANSACTION_ITERATOR_OPTIONS } from './iterator.js';
import { dispose } from '../core/dispose.js';
import type { Packed } from '../tabs/leader-batches.js';
import type { ChangeLog } from './change-feed.js';

/** How a commit writes (as `WriteOptions`). */
export interface CommitOptions {
  /** Durable before commit returns (default: the database's `sync`). */
  sync?: boolean;
}

/** Options of `db.transaction(fn)` and `db.update()`. */
export interface TransactionOptions extends CommitOptions {
  /** Conflicts retried (running `fn` again) before `Conflict` is thrown (default 10, 0..1000). */
  retries?: number;
  /**
   * Milliseconds to wait before the first retry (default 1); each later
   * retry waits twice as long, up to `maxBackoff`, times a random factor
   * from 0.5 to 1 (so that contenders spread out).
   */
  backoff?: number;
  /** The longest wait between retries, in milliseconds (default 100). */
  maxBackoff?: number;
}

/** The names of `TransactionOptions`. */
export const TRANSACTION_OPTIONS = optionNames<TransactionOptions>({ sync: true, retries: true, backoff: true, maxBackoff: true });

/** What `db.update(key, f)`'s function returns: a new value, `null` to delete the key, `undefined` to leave it as it is. */
export type UpdateResult<V = Uint8Array> = V | null | undefined;

/** @internal What a transaction needs of its database. */
export interface TransactionHost {
  inner: WasmDatabase;
  sync: boolean;
  afterWrite(): void;
  /** Its writes' log for the watches, if a watch is open as it begins (change-feed.ts). */
  log: ChangeLog | undefined;
  /** The commit ended (or failed): the watches' record of it (`change`, if it went through). */
  committed(change: Packed | undefined): void;
  track<K, V>(inner: WasmIterator, batchSize: number | undefined, codec: Codec, limit: number): EntryIterator<K, V>;
  /** The codec of `db`, a sublevel of the transaction's database (for `in()`). */
  codecOf(db: unknown): Codec;
}

/** What the views of one transaction (`tx`, `tx.in(sub)`) share: the engine's id for it, 0 once ended. */
interface TransactionState {
  id: number;
}

/**
 * An optimistic transaction of a worker's database (`db.begin()`,
 * `db.transaction(fn)`), in the keys and encodings of the database or
 * sublevel it began on; `tx.in(sub)` is the same transaction in another
 * sublevel's.
 */
export class Transaction<K = Key, V = Uint8Array> implements Disposable {
  #host: TransactionHost;
  #state: TransactionState;
  #codec: Codec;

  /** @internal Use `db.begin()` or `db.transaction(fn)`. */
  constructor(host: TransactionHost, id: number | TransactionState, codec: Codec) {
    this.#host = host;
    this.#state = typeof id === 'number' ? { id } : id;
    this.#codec = codec;
  }

  /**
   * This transaction, in the keys and encodings of `sublevel` (a sublevel
   * of the same database, or the database itself): its reads and writes
   * are part of this transaction, committed or aborted with it.
   */
  in<SK, SV>(sublevel: { sublevel(name: string): unknown; put(key: SK, value: SV): void }): Transaction<SK, SV> {
    return new Transaction<SK, SV>(this.#host, this.#state, this.#host.codecOf(sublevel));
  }

  /** Whether the transaction has ended (committed, aborted, or its commit failed). */
  get ended(): boolean {
    return this.#state.id === 0;
  }

  #call<T>(f: (inner: WasmDatabase, id: number) => T): T {
    const id = this.#state.id;
    if (id === 0) throw new SiltError('Released', 'this transaction has ended (committed, aborted or failed)');
    try {
      return f(this.#host.inner, id);
    } catch (e) {
      throw fromWasm(e);
    }
  }

  #decoded(v: Uint8Array | undefined): V | undefined {
    return (v === undefined || this.#codec.plainValues ? v : this.#codec.unvalue(v)) as V | undefined;
  }

  /**
   * The value of `key` as this transaction sees it, or `undefined`. A copy
   * owned by the caller (as `Database.get`): the transaction's own writes live
   * outside the memory the database pins values in. Does not track the key.
   */
  get(key: K): V | undefined {
    const k = this.#codec.key(key);
    return this.#decoded(this.#call((inner, id) => inner.transactionGet(id, k, false)));
  }

  /** `get`, and the key is tracked: the commit fails with `Conflict` if anyone else writes it first. */
  getForUpdate(key: K): V | undefined {
    const k = this.#codec.key(key);
    return this.#decoded(this.#call((inner, id) => inner.transactionGet(id, k, true)));
  }

  /**
   * The values of `keys` as this transaction sees them (copies; `undefined`
   * for a missing key), in the order given. The keys the transaction's own
   * writes do not settle are read from its snapshot in one batched lookup.
   * Tracks nothing.
   */
  multiGet(keys: K[]): (V | undefined)[] {
    if (!Array.isArray(keys)) throw new SiltError('InvalidArgument', `keys must be an array, got ${show(keys)}`);
    const bytes = keys.map((k, i) => this.#codec.key(k, `keys[${i}]`));
    const lengths = new Uint32Array(bytes.length);
    let total = 0;
    for (let i = 0; i < bytes.length; i++) {
      lengths[i] = bytes[i]!.length;
      total += bytes[i]!.length;
    }
    const joined = new Uint8Array(total);
    let at = 0;
    for (const b of bytes) {
      joined.set(b, at);
      at += b.length;
    }
    const packed = this.#call((inner, id) => inner.transactionMultiGet(id, joined, lengths));
    // Per key: u32 length (0xffffffff: none), then the bytes (transaction.rs).
    const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
    const out: (V | undefined)[] = new Array(bytes.length);
    at = 0;
    for (let i = 0; i < bytes.length; i++) {
      const len = view.getUint32(at, true);
      at += 4;
      if (len === 0xffffffff) out[i] = undefined;
      else {
        out[i] = this.#decoded(packed.subarray(at, at + len));
        at += len;
      }
    }
    return out;
  }

  /**
   * An iterator over this transaction's view within `options`' bounds: its
   * snapshot with its own writes on top, as they are when the iterator is
   * made. It may outlive the transaction (release it when done, as any
   * iterator). `snapshot` is refused: a transaction reads at its own.
   */
  iterator<IV = V>(options: Omit<IteratorOptions<K, IV>, 'snapshot'> = {}): EntryIterator<KeyOf<K>, IV> {
    checkOptionNames(options, TRANSACTION_ITERATOR_OPTIONS, 'tx.iterator()');
    const c = this.#codec.with(options as EncodingOptions<unknown, unknown>);
    const { lower, upper, batchSize, reverse, autoRefresh, limit } = iteratorOptions(options as IteratorOptions<unknown, unknown>, c);
    const inner = this.#call((db, id) => db.transactionIterator(id, lower, upper, reverse, autoRefresh));
    return this.#host.track<KeyOf<K>, IV>(inner, batchSize, c, limit);
  }

  /** Sets `key` to `value` when the transaction commits (tracked). */
  put(key: K, value: V): void {
    const k = this.#codec.key(key);
    const v = this.#codec.value(value);
    this.#call((inner, id) => inner.transactionPut(id, k, v));
    this.#host.log?.put(k);
  }

  /** Removes `key` when the transaction commits (tracked). */
  delete(key: K): void {
    const k = this.#codec.key(key);
    this.#call((inner, id) => inner.transactionDelete(id, k));
    this.#host.log?.delete(k);
  }

  /** Removes every key from `start` (included) to `end` (excluded) when the transaction commits; the range is tracked. */
  deleteRange(start: K, end: K): void {
    const s = this.#codec.key(start, 'start');
    const e = this.#codec.key(end, 'end');
    checkRangeOrder(s, e, start, end);
    this.#call((inner, id) => inner.transactionDeleteRange(id, s, e));
    this.#host.log?.deleteRange(s, e);
  }

  /**
   * Removes every key in `range` (default: every key of the sublevel, or
   * of the database) when the transaction commits, as one range delete;
   * the range is tracked. Unbounded above in the database itself, it ends
   * past the last key the transaction sees.
   */
  clear(range: { gt?: K; gte?: K; lt?: K; lte?: K } = {}): void {
    if (typeof range !== 'object' || range === null) throw new SiltError('InvalidArgument', `clear() takes a range object, got ${show(range)}`);
    checkOptionNames(range, RANGE_OPTIONS, 'tx.clear()');
    const { lower, upper } = this.#codec.bounds(range);
    const s = lower ?? new Uint8Array(0);
    let e = upper;
    if (e === undefined) {
      const it = this.#host.track<Uint8Array, Uint8Array>(
        this.#call((db, id) => db.transactionIterator(id, s, undefined, true, false)),
        1,
        this.#codec.with({ keyEncoding: 'view', valueEncoding: 'view' }),
        1,
      );
      const last = it.next();
      it.release();
      if (last.done) return;
      e = successor(last.value[0]);
    }
    const end = e;
    // Bounds that leave no key between them: nothing to remove (as the database's clear).
    if (compareBytes(s, end) >= 0) return;
    this.#call((inner, id) => inner.transactionDeleteRange(id, s, end));
    this.#host.log?.deleteRange(s, end);
  }

  /**
   * Adds a merge operand for `key` when the transaction commits (tracked);
   * the transaction's reads combine it at once. Needs the database's
   * `mergeOperator`.
   */
  merge(key: K, operand: Uint8Array): void {
    const k = this.#codec.key(key);
    const v = valueBytes(operand, 'operand');
    this.#call((inner, id) => inner.transactionMerge(id, k, v));
    this.#host.log?.merge(k);
  }

  /**
   * Applies every write atomically, or throws `Conflict` (nothing written)
   * if a tracked key or range was written by anyone else after the
   * snapshot. The transaction ends either way, except after `PoolExhausted`
   * (no free pooled file right now): await something and commit again.
   */
  commit(options?: CommitOptions): void {
    checkOptionNames(options, WRITE_OPTIONS, 'tx.commit()');
    Transaction.commitWith(this, options, undefined, undefined);
  }

  /**
   * @internal `commit`, with a bookkeeping put (a `connect()` leader's
   * write record) in the same batch.
   */
  static commitWith(
    tx: Transaction<unknown, unknown>,
    options: CommitOptions | undefined,
    recordKey: Uint8Array | undefined,
    recordValue: Uint8Array | undefined,
  ): void {
    let sync = tx.#host.sync;
    if (options?.sync !== undefined) {
      if (typeof options.sync !== 'boolean') throw new SiltError('InvalidArgument', `sync must be a boolean, got ${show(options.sync)}`);
      sync = options.sync;
    }
    try {
      tx.#call((inner, id) => inner.commitTransaction(id, sync, recordKey, recordValue));
    } catch (e) {
      // Refused for want of free pooled files, the transaction stays open
      // (await, then commit again); any other failure ended it.
      if (!(e instanceof SiltError && e.code === 'PoolExhausted')) tx.#state.id = 0;
      tx.#host.committed(undefined);
      throw e;
    }
    tx.#state.id = 0;
    // (A bookkeeping put rides along: the record would not match; none is
    // watched where one is written, a connect() leader's database.)
    tx.#host.committed(recordKey === undefined ? tx.#host.log?.packed() : undefined);
    tx.#host.afterWrite();
  }

  /** Ends the transaction without writing anything. Aborting an ended transaction does nothing. */
  abort(): void {
    if (this.#state.id === 0) return;
    this.#host.inner.releaseTransaction(this.#state.id);
    this.#state.id = 0;
  }

  /** `using tx = db.begin()`: aborted at the end of the scope unless committed. */
  [dispose](): void {
    this.abort();
  }
}

/** @internal `options`, checked: retries and the backoff between them. */
export function retryPolicy(o: TransactionOptions | undefined): { retries: number; wait(attempt: number): number; commit: CommitOptions } {
  if (o !== undefined && (typeof o !== 'object' || o === null)) throw new SiltError('InvalidArgument', `options must be an object, got ${show(o)}`);
  const int = (name: 'retries' | 'backoff' | 'maxBackoff', fallback: number, max: number): number => {
    const v = o?.[name] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) {
      throw new SiltError('InvalidArgument', `${name} must be an integer from 0 to ${max}, got ${show(v)}`);
    }
    return v;
  };
  const retries = int('retries', 10, 1000);
  const backoff = int('backoff', 1, 60_000);
  const maxBackoff = int('maxBackoff', 100, 60_000);
  if (o?.sync !== undefined && typeof o.sync !== 'boolean') throw new SiltError('InvalidArgument', `sync must be a boolean, got ${show(o.sync)}`);
  return {
    retries,
    wait: (attempt) => Math.min(maxBackoff, backoff * 2 ** attempt) * (0.5 + Math.random() / 2),
    commit: o?.sync === undefined ? {} : { sync: o.sync },
  };
}

/**
 * @internal One attempt of `db.transaction(fn)` on `tx`: runs `fn` and
 * commits with `commit` when it returns (or its Promise resolves); a
 * synchronous `fn` commits at once, with no await in between. A commit
 * refused for want of pooled files (the transaction stays open, nothing
 * written) is made again once `keeper` added some. `tx` is aborted
 * whatever happens (nothing, after a commit).
 */
export function attemptTransaction<T, K, V>(
  tx: Transaction<K, V>,
  fn: (tx: Transaction<K, V>) => T | Promise<T>,
  commit: CommitOptions,
  keeper: { topUp(): Promise<void> } | undefined,
): T | Promise<T> {
  const done = (result: T): T | Promise<T> => {
    try {
      if (!tx.ended) tx.commit(commit);
    } catch (e) {
      if (e instanceof SiltError && e.code === 'PoolExhausted' && !tx.ended && keeper) {
        return (async () => {
          try {
            await keeper.topUp();
            tx.commit(commit);
            return result;
          } finally {
            tx.abort();
          }
        })();
      }
      tx.abort();
      throw e;
    }
    tx.abort();
    return result;
  };
  let result: T | Promise<T>;
  try {
    result = fn(tx);
  } catch (e) {
    tx.abort();
    throw e;
  }
  if (!(result instanceof Promise)) return done(result);
  return result.then(done, (e: unknown) => {
    tx.abort();
    throw e;
  });
}

/**
 * @internal Runs `attempt` until it does not fail with one of `retryOn`
 * (default `Conflict`), at most `retries` times more, waiting between
 * tries; then the last such error is thrown again, its message saying how
 * many tries it took.
 */
export async function withRetries<T>(
  options: TransactionOptions | undefined,
  attempt: (commit: CommitOptions) => T | Promise<T>,
  retryOn: readonly SiltErrorCode[] = ['Conflict'],
): Promise<T> {
  const policy = retryPolicy(options);
  for (let n = 0; ; n++) {
    try {
      return await attempt(policy.commit);
    } catch (e) {
      if (!(e instanceof SiltError && retryOn.includes(e.code))) throw e;
      if (n >= policy.retries) {
        throw new SiltError(e.code, `${e.message} (gave up after ${n + 1} tries)`, { cause: e });
      }
      const ms = policy.wait(n);
      await new Promise((r) => setTimeout(r, ms));
    }
  }
}

/**
 * @internal `update`'s step in transaction `tx` (of a worker, synchronous,
 * or of `connect()`): reads `key` for update, writes what `f` makes of it,
 * and returns the new value.
 */
export function updateIn<K, V, R extends V | undefined | Promise<V | undefined>>(
  tx: {
    getForUpdate(key: K): R;
    put(key: K, value: V): void;
    delete(key: K): void;
  },
  key: K,
  f: (value: V | undefined) => UpdateResult<V>,
  bytes: boolean,
): R {
  const write = (old: V | undefined): V | undefined => {
    const next = updateResult(f(old), bytes) as UpdateResult<V>;
    if (next === undefined) return old;
    if (next === null) tx.delete(key);
    else tx.put(key, next);
    return next ?? undefined;
  };
  const old = tx.getForUpdate(key);
  return (old instanceof Promise ? old.then(write) : write(old as V | undefined)) as R;
}

/** `update`'s function's result, checked (`bytes`: values are bytes, not encoded by an encoding that checks them). */
function updateResult(r: unknown, bytes: boolean): unknown {
  if (r instanceof Promise)
    throw new SiltError('InvalidArgument', "update()'s function must return its result, not a Promise: use db.transaction() to await inside");
  if (!bytes || r === undefined || r === null || r instanceof Uint8Array) return r;
  throw new SiltError('InvalidArgument', `update()'s function must return a Uint8Array, null (delete) or undefined (leave as is), got ${show(r)}`);
}
