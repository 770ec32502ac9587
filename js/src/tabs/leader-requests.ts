/**
 * How the leader (leader.ts) serves each request of a connection on its
 * database: as the request's operation (operations.ts) or step
 * (leader-steps.ts) declares, given what they have of the leader
 * (`StepSide`): writes through its `LeaderWriter` (recorded, published),
 * the connection's snapshots, iterators, transactions and exports, and the
 * one import in progress. Write records are hidden from every read
 * (`isReserved`).
 */

import { SiltError } from '../core/errors.js';
import { Database } from '../local/database.js';
import { refreshStorageEstimate } from '../opfs/storage.js';
import { type Client, type LeaderCounters, snapshotOf } from './leader-clients.js';
import { keyOf, reserved } from './leader-batches.js';
import { rocksdbPlanOf, STEPS, type StepSide } from './leader-steps.js';
import type { LeaderWriter } from './leader-writer.js';
import { isOperation, OPERATIONS, type Served } from './operations.js';
import type { Envelope, Request } from './protocol.js';
import { type Applied, advanceFloor, isReserved, recordFailure, unseen } from './write-records.js';

/** An `ingestRocksdb` sent again, already applied: its report again, from its tables (nothing written). */
export function rocksdbReportOf(db: Database, bytes: Uint8Array): { keys: number; tables: number } {
  const plan = rocksdbPlanOf(Database.internals(db as Database<unknown, unknown>).inner, bytes);
  return { keys: plan.keys, tables: plan.tables };
}

/**
 * Writes whose serving waits on nothing (their operations' `serve` is
 * synchronous): served in the task their message arrives in when nothing
 * before them waits (`Leader.#servedNow`, `writeNow`). An awaited put from
 * a page went through five promises before its answer was posted.
 */
export const WRITTEN_NOW = new Set<Request['op']>(['put', 'delete', 'merge', 'deleteRange', 'clear', 'write']);

/** @internal The requests of a leader's connections, served on its database. */
export class LeaderRequests {
  #db: Database;
  #writer: LeaderWriter;
  /** The leader's counters, and the connections it serves now (for `statistics`). */
  #tabs: () => LeaderCounters & { connections: number; watching: number; watchingValues: number };
  #nextId = 1;
  /** The connection whose import is in progress. */
  importer: string | undefined;

  constructor(db: Database, writer: LeaderWriter, tabs: () => LeaderCounters & { connections: number; watching: number; watchingValues: number }) {
    this.#db = db;
    this.#writer = writer;
    this.#tabs = tabs;
  }

  /** Lets go of everything connection `c` holds here: snapshots, iterators, transactions, exports, its import, its channel and port. */
  letGo(c: Client): void {
    for (const s of c.snapshots.values()) s.release();
    for (const it of c.iterators.values()) it.release();
    for (const t of c.transactions.values()) t.tx.abort();
    for (const r of c.exports.values()) r.cancel().catch(() => {});
    if (this.importer === c.id) this.abortImport();
    c.channel?.close();
    c.port?.close();
  }

  /** Ends the import in progress, leaving nothing of it. */
  abortImport(): void {
    this.importer = undefined;
    try {
      Database.internals(this.#db as Database<unknown, unknown>).inner.importAbort();
    } catch {
      // Closed: nothing of the import is visible either way.
    }
  }

  /**
   * `#handle`; a write its operation declares plain (`write: true`)
   * refused for want of pooled files (`PoolExhausted`) wrote nothing, so it
   * is run once more after the pool keeper has added files. A
   * transaction's commit is not retried here.
   */
  async handleWaitingForFiles(c: Client, id: number, r: Request): Promise<Served> {
    try {
      return await this.#handle(c, id, r);
    } catch (e) {
      const retried = isOperation(r.op) && (OPERATIONS[r.op] as { write?: true }).write === true;
      if (!retried || !(e instanceof SiltError && e.code === 'PoolExhausted')) throw e;
      await Database.internals(this.#db as Database<unknown, unknown>).ready();
      return this.#handle(c, id, r);
    }
  }

  /**
   * A get or a plain write served now, by its operation's `serve`, which
   * waits on nothing: what it throws is thrown (a write refused for want of
   * pooled files too: the caller queues it, `handleWaitingForFiles`).
   */
  serveNow(c: Client, id: number, r: Request): Served {
    const serve = OPERATIONS[r.op as 'get' | 'put' | 'delete' | 'merge' | 'deleteRange' | 'clear' | 'write'].serve;
    return (serve as (s: StepSide, r: Request) => Served)(this.#side(c, id), r);
  }

  /**
   * A plain write (`WRITTEN_NOW`) of `c` served at once, as the leader's
   * queue would serve it: applied with its write record, or its failure
   * recorded. Undefined where it must take the queue's way: sent before
   * (answered from its record there), or refused for want of pooled files
   * (nothing was written: run again there once the pool keeper has added
   * files, `handleWaitingForFiles`).
   */
  writeNow(c: Client, envelope: Envelope): Served | Error | undefined {
    const { id, request: r } = envelope;
    const failed = (e: unknown) => (e instanceof Error ? e : new SiltError('Internal', String(e)));
    let a: Applied;
    try {
      a = this.#writer.recordOf(c.id);
    } catch (e) {
      // Its record unreadable: the write fails, as from the queue, and
      // is recorded failed once the record can be read.
      this.#writer.failedUnread(c.id, id, e);
      return failed(e);
    }
    advanceFloor(a, envelope.floor);
    if (!unseen(a, id)) return undefined;
    try {
      return this.serveNow(c, id, r);
    } catch (e) {
      if (e instanceof SiltError && e.code === 'PoolExhausted') return undefined;
      recordFailure(a, id, e);
      return failed(e);
    }
  }

  /** Runs one request as its operation or step declares; returns its value and the buffers to transfer. */
  async #handle(c: Client, id: number, r: Request): Promise<Served> {
    const side = this.#side(c, id);
    const serve = (isOperation(r.op) ? OPERATIONS[r.op].serve : STEPS[r.op].serve) as (s: StepSide, r: Request) => Served | Promise<Served>;
    return serve(side, r);
  }

  /** What the operations and steps of connection `c`'s request `id` have of this leader. */
  #side(c: Client, id: number): StepSide {
    const db = this.#db;
    const writer = this.#writer;
    return {
      db,
      key: (k, what) => {
        const key = keyOf(k);
        if (isReserved(key)) throw reserved(what);
        return key;
      },
      snapshotOf: (sid) => snapshotOf(c, sid),
      keepSnapshot: (s) => {
        const sid = this.#nextId++;
        c.snapshots.set(sid, s);
        return sid;
      },
      write: (batch, sync) => writer.write(c.id, id, batch, sync),
      ingest: (batch, count, sorted) => writer.ingest(c.id, id, batch, count, sorted),
      statistics: async () => {
        await refreshStorageEstimate(); // a Promise API can afford a fresh estimate
        return { ...db.statistics(), tabs: this.#tabs() };
      },
      client: c,
      id,
      nextId: () => this.#nextId++,
      internals: () => Database.internals(db as Database<unknown, unknown>),
      imports: this,
      commit: (txn, leader, writes, sync) => writer.commitTransaction(c, id, txn, leader, writes, sync),
      history: (since, values) => writer.history(since, values),
      imported: (before) => writer.imported(before),
    };
  }
}
