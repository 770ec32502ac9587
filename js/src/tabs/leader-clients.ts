/**
 * What a connection holds in the leader (leader.ts): its snapshots,
 * iterators, transactions and exports, and the line its answers go back
 * on; and what the leader counts of its connections.
 */

import { WriteBatch } from '../core/batch.js';
import { SiltError } from '../core/errors.js';
import type { EntryIterator } from '../local/iterator.js';
import type { Snapshot } from '../local/snapshot.js';
import type { Transaction } from '../local/transaction.js';
import { apply, reserved, splitAroundReserved } from './leader-batches.js';
import type { ChangeMessage, Response, TxnWrites } from './wire.js';
import { isReserved } from './write-records.js';

/**
 * A transaction a connection runs in the leader, and its writes' kinds and
 * keys for its change record (values left out: the record has none, and a
 * large transaction spills its values out of memory).
 */
export interface LeaderTransaction {
  tx: Transaction;
  writes: WriteBatch;
}

const NO_VALUE = new Uint8Array(0);

/** A connection the leader serves: its own page, or a follower. */
export interface Client {
  id: string;
  snapshots: Map<number, Snapshot>;
  iterators: Map<number, EntryIterator>;
  /** Open transactions, by the connection's numbers for them. */
  transactions: Map<number, LeaderTransaction>;
  /** Exports being read, by id. */
  exports: Map<number, ReadableStreamDefaultReader<Uint8Array>>;
  /**
   * Answers to requests it may send again, by request id (leader.ts,
   * `ANSWERS_KEPT`); `'moved'` for one that moved bytes, and the number of
   * the iterator an `iterator` request made whose first batch was moved.
   */
  answered: Map<number, Response | 'moved' | { movedIterator: number }>;
  /** The highest floor it sent: answers below it were pruned from `answered`. */
  floor: number;
  post(r: Response | Response[], transfer: Transferable[]): void;
  /** Posts a message that is not an answer (a change record) on its line. */
  send(m: ChangeMessage): void;
  /** Whether it watches: every change record goes to it (a `changes` request with `watch`). */
  watching: boolean;
  /** Whether the change records it gets carry values (a `changes` request with `values`: change-values.ts). */
  values: boolean;
  channel: BroadcastChannel | undefined;
  port: MessagePort | undefined;
  /** The protocol version it stated (protocol.ts, `PROTOCOL`): any other than this leader's has its requests refused. */
  version: number;
}

/** Counters of the leader, for tests and statistics. */
export interface LeaderCounters {
  /** Writes acknowledged without being applied: sent again after a failover, already recorded. */
  duplicateWrites: number;
  /** Followers attached, ever. */
  attached: number;
  /** Connections whose state went because they closed or died. */
  dropped: number;
  /**
   * Requests refused for their shape or version, and messages dropped as
   * no request at all (leader-inbox.ts): what another tab's older or
   * newer siltdb, or a bug, posted.
   */
  malformed: number;
}

/** Snapshot `id` of `c` as read options (0: none, read now). */
export function snapshotOf(c: Client, id: number): { snapshot?: Snapshot } {
  if (id === 0) return {};
  const s = c.snapshots.get(id);
  if (s === undefined) throw new SiltError('Released', 'this snapshot was released: take a new one (db.snapshot())');
  return { snapshot: s };
}

/**
 * Transaction `txn` of `c`, with `writes` applied to it first: each
 * update checked as `LeaderWriter.write` checks a batch's (reserved keys refused,
 * range deletes cut around them) and kept for the change record. A
 * failure ends the transaction (it may hold part of `writes`).
 */
export function transactionOf(c: Client, txn: number, writes: TxnWrites | undefined): LeaderTransaction {
  const t = c.transactions.get(txn);
  if (t === undefined) throw new SiltError('Released', 'this transaction has ended (committed, aborted or failed)');
  if (writes === undefined) return t;
  try {
    for (const op of WriteBatch.decode(splitAroundReserved(WriteBatch.decode(writes.batch)).encoded())) {
      if (op.kind !== 'deleteRange' && isReserved(op.key)) throw reserved('the key');
      apply(t.tx, op);
      apply(t.writes, op.kind === 'put' || op.kind === 'merge' ? { ...op, value: NO_VALUE } : op);
    }
  } catch (e) {
    t.tx.abort();
    c.transactions.delete(txn);
    throw e;
  }
  return t;
}
