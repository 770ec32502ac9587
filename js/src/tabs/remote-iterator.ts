/**
 * Iterators through `connect()`: opened and held by the leader, their
 * entries sent over in batches (`next` requests), decoded here. A leader
 * that goes takes its iterators with it: the next step fails with
 * `LeaderChanged`.
 */

import { show, type Key } from '../core/bytes.js';
import { checkLimit, Codec, type EncodingOptions, type RangeOptions } from '../core/encoding.js';
import { SiltError } from '../core/errors.js';
import { checkBatchSize, EntryBatch, type Entry } from '../local/iterator.js';
import type { IteratorRequestOptions, Request } from './protocol.js';
import type { RemoteSnapshot } from './remote-snapshot.js';
import { asyncDispose } from '../core/dispose.js';

/** Options of the iterators of a connection (as a worker's `IteratorOptions`); the snapshot is a `RemoteSnapshot`. */
export interface RemoteIteratorOptions<K = Key, V = Uint8Array> extends RangeOptions<K>, EncodingOptions<K, V> {
  /** Largest key first. */
  reverse?: boolean;
  /** Stop after this many entries (default: no limit). */
  limit?: number;
  /** Entries per batch sent over from the leader (see `IteratorOptions.batchSize`). */
  batchSize?: number;
  /** See `IteratorOptions.autoRefresh`. */
  autoRefresh?: boolean;
  snapshot?: RemoteSnapshot;
}

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
  const batchSize = checkBatchSize(rest.batchSize) ?? (limit < 16 ? Math.max(limit, 1) : undefined);
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
 * at most `limit`.
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
): RemoteIterator<T> {
  let opened: Promise<{ id: number; epoch: number }> | undefined;
  let pending: EntryBatch | undefined;
  let at = 0;
  let done = false;
  const open = (): Promise<{ id: number; epoch: number }> =>
    (opened ??= (async () => {
      const id = (await send(request, epoch)) as number;
      return { id, epoch: connection.epoch };
    })());
  const release = async (): Promise<void> => {
    if (done) return;
    done = true;
    if (opened === undefined) return;
    const o = await opened.catch(() => undefined); // never opened: nothing to release
    if (o !== undefined && o.epoch === connection.epoch) await send({ op: 'releaseIterator', iterator: o.id }, o.epoch);
  };
  let left = limit;
  const it: RemoteIterator<T> = {
    next: async (): Promise<IteratorResult<T, undefined>> => {
      if (left <= 0) {
        await release();
        return { done: true, value: undefined };
      }
      if ((pending === undefined || at >= pending.length) && !done) {
        const { id, epoch } = await open();
        let batch: { bytes: Uint8Array; offsets: Uint32Array } | undefined;
        try {
          batch = (await send({ op: 'next', iterator: id }, epoch)) as typeof batch;
        } catch (e) {
          done = true;
          throw e;
        }
        at = 0;
        pending = batch === undefined ? undefined : new EntryBatch(batch.bytes, batch.offsets, prefix);
        // The leader let go of an exhausted (or failed) iterator itself.
        if (batch === undefined) done = true;
      }
      if (pending === undefined || at >= pending.length) return { done: true, value: undefined };
      left--;
      return { done: false, value: pick(pending, at++) };
    },
    return: async (): Promise<IteratorResult<T, undefined>> => {
      await release();
      return { done: true, value: undefined };
    },
    release,
    [Symbol.asyncIterator]() {
      return it;
    },
    [asyncDispose]: release,
  };
  if (eager) open().catch(() => {}); // (its failure is the first step's)
  return it;
}
