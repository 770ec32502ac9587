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
 * fail with `LeaderChanged` (a transaction begun while the connection
 * waits for a new leader's welcome lives in the new leader); its commit is
 * sent again to the new leader, which acknowledges it if the old one
 * applied it (the connection's write record says so), answers its failure
 * again if it failed there (`Conflict`), and otherwise answers
 * `LeaderChanged` with nothing written. `db.transaction(fn)` runs `fn`
 * again in both cases of failure.
 */

import { WriteBatch } from '../core/batch.js';
import { compareBytes, show, type Key } from '../core/bytes.js';
import { type Codec, type EncodingOptions, type KeyOf, RANGE_OPTIONS, type RangeOptions } from '../core/encoding.js';
import { checkOptionNames } from '../core/option-names.js';
import { SiltError } from '../core/errors.js';
import type { Entry } from '../local/iterator.js';
import type { IteratorRequestOptions, PackedValues, Request, TxnWrites } from './protocol.js';
import type { CommitOptions } from '../local/transaction.js';
import type { RemoteIterator, RemoteIteratorOptions } from './remote-iterator.js';
import { asyncDispose } from '../core/dispose.js';

/** @internal What a remote transaction needs of its connection. */
export interface RemoteTransactionHost {
  /** Sends a request (with `epoch`: fails with `LeaderChanged` if the leader changed since). */
  send(request: Request, epoch?: number): Promise<unknown>;
  /** An iterator opened by `request` (now), read through `next` requests, its entries decoded by `codec`. */
  iterator<K, V>(request: Request, epoch: number, codec: Codec, limit: number): RemoteIterator<Entry<K, V>>;
  /** Checked iterator options, the range in stored bytes. */
  iteratorOptions(options: RemoteIteratorOptions<unknown, unknown>, codec: Codec): { request: IteratorRequestOptions; limit: number };
  /** The codec of `db`, a sublevel of the transaction's database (for `in()`). */
  codecOf(db: unknown): Codec;
  unpack(values: PackedValues): (Uint8Array | undefined)[];
  epoch: number;
  leader: string;
  sync(options: CommitOptions | undefined): { sync?: boolean };
}

/** What the views of one transaction (`tx`, `tx.in(sub)`) share. */
interface State {
  id: number;
  epoch: number;
  leader: string;
  /** Writes since the last request, in stored bytes. */
  writes: WriteBatch<Uint8Array, Uint8Array>;
  ended: boolean;
  /** Why the transaction cannot go on (its begin failed). */
  failed: unknown;
}

/**
 * An optimistic transaction through `connect()` (see `Transaction`), in
 * the keys and encodings of the database or sublevel it began on;
 * `tx.in(sub)` is the same transaction in another sublevel's.
 */
export class RemoteTransaction<K = Key, V = Uint8Array> implements AsyncDisposable {
  #host: RemoteTransactionHost;
  #s: State;
  #codec: Codec;
  /** The same writes, taking this view's keys and values. */
  #writes: WriteBatch<K, V>;

  /** @internal Use `db.begin()` or `db.transaction(fn)` of a `RemoteDatabase`. */
  constructor(host: RemoteTransactionHost, id: number | State, codec: Codec) {
    this.#host = host;
    this.#codec = codec;
    if (typeof id === 'number') {
      const s: State = { id, epoch: host.epoch, leader: host.leader, writes: new WriteBatch(), ended: false, failed: undefined };
      this.#s = s;
      host.send({ op: 'txnBegin', txn: id }, s.epoch).catch((e: unknown) => {
        s.failed ??= e;
      });
    } else {
      this.#s = id;
    }
    this.#writes = WriteBatch.withCodec<K, V>(codec, WriteBatch.dataOf(this.#s.writes));
  }

  /** This transaction, in the keys and encodings of `sublevel` (of the same connection). */
  in<SK, SV>(sublevel: { sublevel(name: string): unknown; put(key: SK, value: SV): unknown }): RemoteTransaction<SK, SV> {
    return new RemoteTransaction<SK, SV>(this.#host, this.#s, this.#host.codecOf(sublevel));
  }

  /** Whether the transaction has ended (committed, aborted, or its commit failed). */
  get ended(): boolean {
    return this.#s.ended;
  }

  #live(): void {
    if (this.#s.ended) throw new SiltError('Released', 'this transaction has ended (committed, aborted or failed)');
  }

  /** The writes made since the last request, for the next one. */
  #take(): { writes?: TxnWrites } {
    const w = this.#s.writes;
    if (w.length === 0) return {};
    const writes = { batch: w.encoded().slice(), count: w.length };
    w.clear();
    return { writes };
  }

  async #send(request: Request): Promise<unknown> {
    try {
      return await this.#host.send(request, this.#s.epoch);
    } catch (e) {
      // A failed begin explains every later failure best.
      throw this.#s.failed ?? e;
    }
  }

  #decoded(v: Uint8Array | undefined): V | undefined {
    return (v === undefined || this.#codec.plainValues ? v : this.#codec.unvalue(v)) as V | undefined;
  }

  /** The value of `key` as this transaction sees it (a copy, or decoded), or `undefined`. Does not track the key. */
  get(key: K): Promise<V | undefined> {
    return this.#get(key, false);
  }

  /** `get`, and the key is tracked: the commit fails with `Conflict` if anyone else writes it first. */
  getForUpdate(key: K): Promise<V | undefined> {
    return this.#get(key, true);
  }

  async #get(key: K, forUpdate: boolean): Promise<V | undefined> {
    this.#live();
    const k = this.#codec.key(key);
    return this.#decoded((await this.#send({ op: 'txnGet', txn: this.#s.id, key: k, forUpdate, ...this.#take() })) as Uint8Array | undefined);
  }

  /** The values of `keys` as this transaction sees them, in order. Tracks nothing. */
  async multiGet(keys: K[]): Promise<(V | undefined)[]> {
    this.#live();
    if (!Array.isArray(keys)) throw new SiltError('InvalidArgument', `keys must be an array of keys, got ${show(keys)}`);
    const bytesKeys = keys.map((k, i) => this.#codec.key(k, `keys[${i}]`));
    const values = this.#host.unpack((await this.#send({ op: 'txnMultiGet', txn: this.#s.id, keys: bytesKeys, ...this.#take() })) as PackedValues);
    return values.map((v) => this.#decoded(v));
  }

  /**
   * An async iterator over this transaction's view within `options`'
   * range, as of now (the transaction's later writes are not in it).
   */
  iterator<IV = V>(options: Omit<RemoteIteratorOptions<K, IV>, 'snapshot'> = {}): RemoteIterator<Entry<KeyOf<K>, IV>> {
    this.#live();
    if (typeof options !== 'object' || options === null)
      throw new SiltError('InvalidArgument', `tx.iterator()'s options must be an object, got ${show(options)}`);
    const c = this.#codec.with(options as EncodingOptions<unknown, unknown>);
    const { request, limit } = this.#host.iteratorOptions(options as RemoteIteratorOptions<unknown, unknown>, c);
    return this.#host.iterator<KeyOf<K>, IV>({ op: 'txnIterator', txn: this.#s.id, options: request, ...this.#take() }, this.#s.epoch, c, limit);
  }

  /** Sets `key` to `value` when the transaction commits (tracked). Sent with the transaction's next request. */
  put(key: K, value: V): void {
    this.#live();
    this.#writes.put(key, value);
  }

  /** Removes `key` when the transaction commits (tracked). */
  delete(key: K): void {
    this.#live();
    this.#writes.delete(key);
  }

  /** Removes every key from `start` (included) to `end` (excluded) when the transaction commits; the range is tracked. */
  deleteRange(start: K, end: K): void {
    this.#live();
    this.#writes.deleteRange(start, end);
  }

  /**
   * Removes every key of `range` when the transaction commits: the whole
   * sublevel by default (a sublevel's range is bounded; in the database
   * itself give an upper bound).
   */
  clear(range: RangeOptions<K> = {}): void {
    this.#live();
    if (typeof range !== 'object' || range === null) throw new SiltError('InvalidArgument', `clear() takes a range object, got ${show(range)}`);
    checkOptionNames(range, RANGE_OPTIONS, 'tx.clear()');
    const { lower, upper } = this.#codec.bounds(range);
    if (upper === undefined) {
      throw new SiltError(
        'NotSupported',
        "a transaction's clear() through connect() needs an upper bound in the database itself (lt or lte); a sublevel's has one",
      );
    }
    const start = lower ?? new Uint8Array(0);
    // Bounds that leave no key between them: nothing to remove (as a worker's clear).
    if (compareBytes(start, upper) >= 0) return;
    this.#s.writes.deleteRange(start, upper);
  }

  /** Adds a merge operand for `key` (tracked; needs the database's `mergeOperator`). */
  merge(key: K, operand: Uint8Array): void {
    this.#live();
    this.#writes.merge(key, operand);
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
    const request: Request = { op: 'txnCommit', txn: this.#s.id, leader: this.#s.leader, ...this.#take(), ...sync };
    this.#s.ended = true;
    // No epoch: sent again after a failover, as a write is (see above).
    try {
      await this.#host.send(request);
    } catch (e) {
      throw this.#s.failed ?? e;
    }
  }

  /** Ends the transaction without writing anything. Aborting an ended transaction does nothing. */
  abort(): void {
    if (this.#s.ended) return;
    this.#s.ended = true;
    this.#s.writes.clear();
    this.#host.send({ op: 'txnAbort', txn: this.#s.id }, this.#s.epoch).catch(() => {
      // The leader that held it went (and the transaction with it), or the
      // connection closed: either way nothing of it is left.
    });
  }

  /** `await using tx = db.begin()`: aborted at the end of the scope unless committed. */
  async [asyncDispose](): Promise<void> {
    this.abort();
  }
}
