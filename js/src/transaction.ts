/**
 * Optimistic transactions in a worker (`db.transaction()`, `db.transact()`).
 *
 * A transaction reads at a snapshot taken when it begins, with its own
 * writes on top; it stays open across any `await` (it is an object, not a
 * scope). `getForUpdate` and every write track their keys, a `deleteRange`
 * its range; `commit` applies every write atomically unless something
 * tracked was written by anyone else after the snapshot: then it throws a
 * `SiltError` with code `Busy` and writes nothing. Either way the
 * transaction ends. The engine does the work (crates/engine/src/db/transaction.rs).
 */

import type { Database as WasmDatabase } from '../pkg/silt_wasm.js';
import { keyBytes, show, valueBytes, type Key } from './bytes.js';
import { fromWasm, SiltError } from './errors.js';

/** How a commit writes (as `WriteOptions`). */
export interface CommitOptions {
  /** Durable before commit returns (default: the database's `sync`). */
  sync?: boolean;
}

/** @internal What a transaction needs of its database. */
export interface TransactionHost {
  inner: WasmDatabase;
  sync: boolean;
  afterWrite(): void;
}

export class Transaction implements Disposable {
  #host: TransactionHost;
  #id: number;

  /** @internal Use `db.transaction()`. */
  constructor(host: TransactionHost, id: number) {
    this.#host = host;
    this.#id = id;
  }

  /** Whether the transaction has ended (committed, rolled back, or its commit failed). */
  get ended(): boolean {
    return this.#id === 0;
  }

  #call<T>(f: (inner: WasmDatabase, id: number) => T): T {
    if (this.#id === 0) throw new SiltError('Released', 'this transaction has ended (committed, rolled back or failed)');
    try {
      return f(this.#host.inner, this.#id);
    } catch (e) {
      throw fromWasm(e);
    }
  }

  /** The value of `key` as this transaction sees it (a copy), or `undefined`. */
  get(key: Key): Uint8Array | undefined {
    const k = keyBytes(key);
    return this.#call((inner, id) => inner.transactionGet(id, k, false));
  }

  /** `get`, and the key is tracked: the commit fails if anyone else writes it first. */
  getForUpdate(key: Key): Uint8Array | undefined {
    const k = keyBytes(key);
    return this.#call((inner, id) => inner.transactionGet(id, k, true));
  }

  /** Sets `key` to `value` when the transaction commits (tracked). */
  put(key: Key, value: Uint8Array): void {
    const k = keyBytes(key);
    const v = valueBytes(value);
    this.#call((inner, id) => inner.transactionPut(id, k, v));
  }

  /** Removes `key` when the transaction commits (tracked). */
  delete(key: Key): void {
    const k = keyBytes(key);
    this.#call((inner, id) => inner.transactionDelete(id, k));
  }

  /** Removes every key from `start` (included) to `end` (excluded) when the transaction commits; the range is tracked. */
  deleteRange(start: Key, end: Key): void {
    const s = keyBytes(start, 'start');
    const e = keyBytes(end, 'end');
    this.#call((inner, id) => inner.transactionDeleteRange(id, s, e));
  }

  /**
   * Applies every write atomically, or throws `Busy` (nothing written) if a
   * tracked key or range was written by anyone else after the snapshot.
   * The transaction ends either way, except after `PoolExhausted` (no free
   * pooled file right now): await something and commit again.
   */
  commit(options?: CommitOptions): void {
    let sync = this.#host.sync;
    if (options?.sync !== undefined) {
      if (typeof options.sync !== 'boolean') throw new SiltError('InvalidArgument', `sync must be a boolean, got ${show(options.sync)}`);
      sync = options.sync;
    }
    try {
      this.#call((inner, id) => inner.commitTransaction(id, sync, undefined, undefined));
    } catch (e) {
      // Refused for want of free pooled files, the transaction stays open
      // (await, then commit again); any other failure ended it.
      if (!(e instanceof SiltError && e.code === 'PoolExhausted')) this.#id = 0;
      throw e;
    }
    this.#id = 0;
    this.#host.afterWrite();
  }

  /** Ends the transaction without writing anything. Rolling back twice does nothing. */
  rollback(): void {
    if (this.#id === 0) return;
    this.#host.inner.releaseTransaction(this.#id);
    this.#id = 0;
  }

  /** `using tx = db.transaction()`: rolled back at the end of the scope unless committed. */
  [Symbol.dispose](): void {
    this.rollback();
  }
}

/** Options of `transact`. */
export interface TransactOptions extends CommitOptions {
  /** Conflicts (`Busy`) retried before the last one is thrown (default 10). */
  retries?: number;
}

export function retriesOf(o: TransactOptions | undefined): number {
  const r = o?.retries ?? 10;
  if (typeof r !== 'number' || !Number.isInteger(r) || r < 0 || r > 1000) {
    throw new SiltError('InvalidArgument', `retries must be an integer from 0 to 1000, got ${show(r)}`);
  }
  return r;
}
