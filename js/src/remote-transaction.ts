/**
 * Transactions through `connect()`: the same optimistic transactions as in
 * a worker (transaction.ts), run by the leader's worker for this
 * connection (leader.ts).
 *
 * Writes are kept here until the transaction's next request, which carries
 * them (a read, an iterator, the commit): a transaction that reads two keys
 * and writes two costs three round trips to the leader, its begin riding
 * along with the first. The leader applies them in order, so every read
 * sees the transaction's writes made before it.
 *
 * Across a failover: the transaction lived in the old leader, so its reads
 * fail with `LeaderChanged`; its commit is sent again to the new leader,
 * which acknowledges it if the old one applied it (the commit's write
 * record says so) and otherwise answers `LeaderChanged` with nothing
 * written. `db.transaction(fn)` runs `fn` again in both cases of failure.
 */

import { WriteBatch } from './batch.js';
import { keyBytes, packKeys, valueBytes, type Key } from './bytes.js';
import { SiltError } from './errors.js';
import type { Entry, IteratorOptions } from './iterator.js';
import type { IteratorRequestOptions, PackedValues, Request, TxnWrites } from './protocol.js';
import type { CommitOptions } from './transaction.js';

/** @internal What a remote transaction needs of its connection. */
export interface RemoteTransactionHost {
  /** Sends a request (with `epoch`: fails with `LeaderChanged` if the leader changed since). */
  send(request: Request, epoch?: number): Promise<unknown>;
  /** An iterator opened by `request` (now), read through `next` requests. */
  iterator(request: Request, epoch: number, options: IteratorRequestOptions): AsyncIterableIterator<Entry> & AsyncDisposable;
  /** Checked iterator options. */
  iteratorOptions(options: IteratorOptions): IteratorRequestOptions;
  unpack(values: PackedValues): (Uint8Array | undefined)[];
  epoch: number;
  leader: string;
  sync(options: CommitOptions | undefined): { sync?: boolean };
}

export class RemoteTransaction implements AsyncDisposable {
  #host: RemoteTransactionHost;
  #id: number;
  #epoch: number;
  #leader: string;
  #writes = new WriteBatch();
  #ended = false;
  /** Why the transaction cannot go on (its begin failed). */
  #failed: unknown;

  /** @internal Use `db.begin()` or `db.transaction(fn)` of a `RemoteDatabase`. */
  constructor(host: RemoteTransactionHost, id: number) {
    this.#host = host;
    this.#id = id;
    this.#epoch = host.epoch;
    this.#leader = host.leader;
    host.send({ op: 'txnBegin', txn: id }, this.#epoch).catch((e: unknown) => {
      this.#failed ??= e;
    });
  }

  /** Whether the transaction has ended (committed, aborted, or its commit failed). */
  get ended(): boolean {
    return this.#ended;
  }

  #live(): void {
    if (this.#ended) throw new SiltError('Released', 'this transaction has ended (committed, aborted or failed)');
  }

  /** The writes made since the last request, for the next one. */
  #take(): { writes?: TxnWrites } {
    if (this.#writes.length === 0) return {};
    const writes = { batch: this.#writes.encoded().slice(), count: this.#writes.length };
    this.#writes.clear();
    return { writes };
  }

  async #send(request: Request): Promise<unknown> {
    try {
      return await this.#host.send(request, this.#epoch);
    } catch (e) {
      // A failed begin explains every later failure best.
      throw this.#failed ?? e;
    }
  }

  /** A copy of the value of `key` as this transaction sees it, or `undefined`. Does not track the key. */
  get(key: Key): Promise<Uint8Array | undefined> {
    return this.#get(key, false);
  }

  /** The same as `get` (every value through `connect()` is a copy). */
  getCopy(key: Key): Promise<Uint8Array | undefined> {
    return this.#get(key, false);
  }

  /** `get`, and the key is tracked: the commit fails with `Conflict` if anyone else writes it first. */
  getForUpdate(key: Key): Promise<Uint8Array | undefined> {
    return this.#get(key, true);
  }

  async #get(key: Key, forUpdate: boolean): Promise<Uint8Array | undefined> {
    this.#live();
    const k = keyBytes(key);
    return (await this.#send({ op: 'txnGet', txn: this.#id, key: k, forUpdate, ...this.#take() })) as Uint8Array | undefined;
  }

  /** Copies of the values of `keys` as this transaction sees them, in order. Tracks nothing. */
  async multiGet(keys: Key[]): Promise<(Uint8Array | undefined)[]> {
    this.#live();
    packKeys(keys); // checks every key here, with its index in the message
    const bytesKeys = keys.map((k) => keyBytes(k));
    return this.#host.unpack((await this.#send({ op: 'txnMultiGet', txn: this.#id, keys: bytesKeys, ...this.#take() })) as PackedValues);
  }

  /**
   * An async iterator over this transaction's view within `options`'
   * bounds, as of now (the transaction's later writes are not in it).
   */
  iterator(options: Omit<IteratorOptions, 'snapshot'> = {}): AsyncIterableIterator<Entry> & AsyncDisposable {
    this.#live();
    if ((options as IteratorOptions)?.snapshot !== undefined) {
      throw new SiltError('InvalidArgument', "a transaction's iterator reads at the transaction's snapshot: do not pass snapshot");
    }
    const checked = this.#host.iteratorOptions(options);
    return this.#host.iterator({ op: 'txnIterator', txn: this.#id, options: checked, ...this.#take() }, this.#epoch, checked);
  }

  /** Sets `key` to `value` when the transaction commits (tracked). Sent with the transaction's next request. */
  put(key: Key, value: Uint8Array): void {
    this.#live();
    this.#writes.put(key, value);
  }

  /** Removes `key` when the transaction commits (tracked). */
  delete(key: Key): void {
    this.#live();
    this.#writes.delete(key);
  }

  /** Removes every key from `start` (included) to `end` (excluded) when the transaction commits; the range is tracked. */
  deleteRange(start: Key, end: Key): void {
    this.#live();
    this.#writes.deleteRange(start, end);
  }

  /** Adds a merge operand for `key` (tracked; needs the database's `mergeOperator`). */
  merge(key: Key, operand: Uint8Array): void {
    this.#live();
    this.#writes.merge(key, valueBytes(operand, 'operand'));
  }

  /**
   * Applies every write atomically, or rejects with `Conflict` (nothing
   * written) if a tracked key or range was written by anyone else first,
   * or with `LeaderChanged` (nothing written) if the tab that led went
   * before the commit was applied. The transaction ends either way.
   */
  async commit(options?: CommitOptions): Promise<void> {
    this.#live();
    const sync = this.#host.sync(options);
    const request: Request = { op: 'txnCommit', txn: this.#id, leader: this.#leader, ...this.#take(), ...sync };
    this.#ended = true;
    // No epoch: sent again after a failover, as a write is (see above).
    try {
      await this.#host.send(request);
    } catch (e) {
      throw this.#failed ?? e;
    }
  }

  /** Ends the transaction without writing anything. Aborting an ended transaction does nothing. */
  abort(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#writes.clear();
    this.#host.send({ op: 'txnAbort', txn: this.#id }, this.#epoch).catch(() => {
      // The leader that held it went (and the transaction with it), or the
      // connection closed: either way nothing of it is left.
    });
  }

  /** `await using tx = db.begin()`: aborted at the end of the scope unless committed. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.abort();
  }
}
