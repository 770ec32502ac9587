/**
 * Iterators through `connect()`: opened and held by the leader, their
 * entries sent over in batches (`next` requests), decoded here. A leader
 * that goes takes its iterators with it: the next step fails with
 * `LeaderChanged`.
 */

import { show, type Key } from '../core/bytes.js';
import { checkLimit, Codec, type EncodingOptions, type RangeOptions } from '../core/encoding.js';
import { SiltError } from '../core/errors.js';
import { checkBatchSize, EntryBatch, type Entry, ITERATOR_OPTIONS, MAX_AUTO_BATCH } from '../local/iterator.js';
import { optionNames } from '../core/option-names.js';
import type { IteratorRequestOptions, Request } from './protocol.js';
import type { FirstBatch } from './leader-steps.js';
import type { RemoteSnapshot } from './remote-snapshot.js';
import { asyncDispose } from '../core/dispose.js';

/** Options of the iterators of a connection (as a worker's `IteratorOptions`); the snapshot is a `RemoteSnapshot`. */
export interface RemoteIteratorOptions<K = Key, V = Uint8Array> extends RangeOptions<K>, EncodingOptions<K, V> {
  /** Largest key first. */
  reverse?: boolean;
  /** Stop after this many entries (default: no limit). */
  limit?: number;
  /**
   * Entries per batch sent over from the leader (see
   * `IteratorOptions.batchSize`). By default a `limit` of at most 1,024 is
   * the batch size, so such a scan comes in one round trip (its first batch
   * comes with the iterator); otherwise batches start at 16 and double.
   */
  batchSize?: number;
  /** See `IteratorOptions.autoRefresh`. */
  autoRefresh?: boolean;
  snapshot?: RemoteSnapshot;
}

/** The names of `RemoteIteratorOptions`: those of a worker's iterators. */
export const REMOTE_ITERATOR_OPTIONS = optionNames<RemoteIteratorOptions<unknown, unknown>>(ITERATOR_OPTIONS.record, ITERATOR_OPTIONS.elsewhere);

/** An async iterator of a connection, released by leaving `for await` or by `release()`. */
export interface RemoteIterator<T> extends AsyncIterableIterator<T>, AsyncDisposable {
  /** Lets go of the iterator in the leader. */
  release(): Promise<void>;
}

/** The codec of a database of bytes: keys and values as they are. */
export const ROOT = Codec.root(undefined);

/**
 * An iterator's options (all but the snapshot), checked here, with its
 * range turned into stored bytes by `codec` (what the leader is sent), and
 * its limit.
 */
export function checkIteratorOptions(
  rest: Omit<RemoteIteratorOptions<unknown, unknown>, 'snapshot'>,
  codec: Codec,
): { request: IteratorRequestOptions; limit: number } {
  const { lower, upper } = codec.bounds(rest);
  const limit = checkLimit(rest.limit);
  // A limit the leader can read in one batch is its first batch's size:
  // a scan of 100 is one batch, not 16, 32 and 64 (each a round trip).
  const batchSize = checkBatchSize(rest.batchSize) ?? (limit <= MAX_AUTO_BATCH ? Math.max(limit, 1) : undefined);
  for (const flag of ['reverse', 'autoRefresh'] as const) {
    const v = rest[flag];
    if (v !== undefined && typeof v !== 'boolean') throw new SiltError('InvalidArgument', `${flag} must be a boolean, got ${show(v)}`);
  }
  const request: IteratorRequestOptions = {
    ...(lower === undefined ? {} : { gte: lower }),
    ...(upper === undefined ? {} : { lt: upper }),
    ...(rest.reverse === undefined ? {} : { reverse: rest.reverse }),
    ...(rest.autoRefresh === undefined ? {} : { autoRefresh: rest.autoRefresh }),
    ...(batchSize === undefined ? {} : { batchSize }),
  };
  return { request, limit };
}

/** How a codec turns a batch's entry `i` into an entry. */
export function entryOf<K, V>(c: Codec): (b: EntryBatch, i: number) => Entry<K, V> {
  if (c.plainValues && c.keys === ROOT.keys) return (b, i) => [b.keyAt(i), b.valueAt(i)] as Entry<K, V>;
  return (b, i) => [c.keys.decode(b.keyAt(i)) as K, c.values.decode(b.valueAt(i)) as V];
}

/**
 * An iterator the leader opens for `request` (at the first step, or now
 * with `eager`), read through `next` requests made with `epoch` (through
 * `send`, on `connection`), handing out `pick(batch, i)` for each entry,
 * at most `limit`. It ends as a worker's does: once ended (read to its end,
 * its limit reached, `return()`, a `break`) every step is `done`; once
 * released, every step fails with `Released`, and once its database handle
 * is closed (`closed()`) with `Closed`, entries of a batch already fetched
 * included.
 */
export function remoteIterator<T>(
  send: (request: Request, epoch?: number) => Promise<unknown>,
  connection: { readonly epoch: number },
  request: Request,
  epoch: number | undefined,
  eager: boolean,
  pick: (b: EntryBatch, i: number) => T,
  limit: number,
  prefix: number,
  closed: () => boolean,
): RemoteIterator<T> {
  let opened: Promise<{ id: number; epoch: number }> | undefined;
  /** The first batch, come with the answer that opened the iterator (`FirstBatch`), until it is taken. */
  let first: Omit<FirstBatch, 'id'> | undefined;
  /** The leader has no more for this iterator: it let go of it after its first batch. */
  let drained = false;
  let pending: EntryBatch | undefined;
  let at = 0;
  /** `open`; `ended` (every step done); `released` (every step fails). */
  let state: 'open' | 'ended' | 'released' = 'open';
  const stateNow = () => state;
  /** The leader's iterator is let go of (or was never made, or went with its leader). */
  let gone = false;
  const open = (): Promise<{ id: number; epoch: number }> =>
    (opened ??= (async () => {
      const answer = (await send(request, epoch)) as number | FirstBatch;
      // A bare number: a transaction's iterator (`txnIterator` has no first batch).
      if (typeof answer === 'number') return { id: answer, epoch: connection.epoch };
      first = { batch: answer.batch, done: answer.done };
      return { id: answer.id, epoch: connection.epoch };
    })());
  /** Lets go of the leader's iterator, once. */
  const letGo = async (): Promise<void> => {
    pending = undefined;
    if (gone) return;
    gone = true;
    if (opened === undefined) return;
    const o = await opened.catch(() => undefined); // never opened: nothing to release
    if (o !== undefined && o.epoch === connection.epoch && !closed()) await send({ op: 'releaseIterator', iterator: o.id }, o.epoch);
  };
  const end = async (): Promise<IteratorResult<T, undefined>> => {
    if (state === 'open') state = 'ended';
    await letGo();
    return { done: true, value: undefined };
  };
  let left = limit;
  const it: RemoteIterator<T> = {
    next: async (): Promise<IteratorResult<T, undefined>> => {
      if (state === 'ended') return { done: true, value: undefined };
      if (closed()) {
        pending = undefined;
        throw new SiltError('Closed', 'the database was closed');
      }
      if (state === 'released') throw new SiltError('Released', 'this iterator was released: make a new one (db.iterator()) to read on');
      if (left <= 0) return end();
      if (pending === undefined || at >= pending.length) {
        const { id, epoch } = await open();
        let batch: { bytes: Uint8Array; offsets: Uint32Array } | undefined;
        const had = first;
        first = undefined;
        if (had !== undefined) {
          batch = had.batch;
          if (had.done) drained = gone = true; // nothing to release
        } else if (drained) {
          return end();
        } else
          try {
            batch = (await send({ op: 'next', iterator: id }, epoch)) as typeof batch;
          } catch (e) {
            // The leader let go of a failed iterator itself.
            gone = true;
            pending = undefined;
            if (state === 'open') state = 'ended';
            throw e;
          }
        if (batch === undefined) {
          // The leader let go of an exhausted iterator itself.
          gone = true;
          return end();
        }
        // Released or closed while this step waited: the batch is not handed out.
        if (closed()) throw new SiltError('Closed', 'the database was closed');
        const now = stateNow(); // (return() or release() may have changed it while this step waited)
        if (now === 'ended') return { done: true, value: undefined };
        if (now === 'released') throw new SiltError('Released', 'this iterator was released: make a new one (db.iterator()) to read on');
        at = 0;
        pending = new EntryBatch(batch.bytes, batch.offsets, prefix);
      }
      left--;
      return { done: false, value: pick(pending, at++) };
    },
    return: end,
    release: async (): Promise<void> => {
      if (state === 'open') state = 'released';
      await letGo();
    },
    [Symbol.asyncIterator]() {
      return it;
    },
    [asyncDispose]: () => it.release(),
  };
  if (eager) open().catch(() => {}); // (its failure is the first step's)
  return it;
}
