/**
 * How the leader (leader.ts) serves each request of a connection on its
 * database: writes through its `LeaderWriter` (recorded, published), reads,
 * snapshots, iterators, transactions, exports and the one import in
 * progress. Write records are hidden from every read (`isReserved`).
 */

import type { Database as WasmDatabase } from '../../pkg/silt_wasm.js';
import { countCopied } from '../boundary/counters.js';
import { WriteBatch } from '../core/batch.js';
import { compareBytes, successor } from '../core/bytes.js';
import { fromWasm, SiltError } from '../core/errors.js';
import { exportStream } from '../local/backup.js';
import { Database } from '../local/database.js';
import type { EntryBatch } from '../local/iterator.js';
import { refreshStorageEstimate } from '../opfs/storage.js';
import { type Client, type LeaderCounters, snapshotOf, transactionOf } from './leader-clients.js';
import { keyOf, packValues, reserved, withoutReserved } from './leader-batches.js';
import type { LeaderWriter } from './leader-writer.js';
import { type LeaderSide, OPERATIONS, type OperationRequest } from './operations.js';
import type { Request, SnapshotInfo } from './protocol.js';
import { isReserved, RESERVED, RESERVED_END } from './write-records.js';

/** @internal The requests of a leader's connections, served on its database. */
export class LeaderRequests {
  #db: Database;
  #writer: LeaderWriter;
  /** The leader's counters, and the connections it serves now (for `statistics`). */
  #tabs: () => LeaderCounters & { connections: number };
  #nextId = 1;
  /** The connection whose import is in progress. */
  importer: string | undefined;

  constructor(db: Database, writer: LeaderWriter, tabs: () => LeaderCounters & { connections: number }) {
    this.#db = db;
    this.#writer = writer;
    this.#tabs = tabs;
  }

  /** The engine and pool of the database, for `c`'s import (which must be in progress). */
  #importOf(c: Client): ReturnType<typeof Database.internals> {
    if (this.importer !== c.id) throw new SiltError('InvalidArgument', 'no import of this connection is in progress');
    return Database.internals(this.#db as Database<unknown, unknown>);
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
   * `#handle`; a plain write (put, delete, deleteRange, merge, a batch)
   * refused for want of pooled files (`PoolExhausted`: more writes waited in
   * memory than the engine holds, which only a synchronous burst in this
   * worker can cause) wrote nothing, so it is run once more after the pool
   * keeper has added files. A transaction's commit is not retried here.
   */
  async handleWaitingForFiles(c: Client, id: number, r: Request): Promise<[unknown, Transferable[]]> {
    try {
      return await this.#handle(c, id, r);
    } catch (e) {
      const retried = r.op === 'put' || r.op === 'delete' || r.op === 'deleteRange' || r.op === 'merge' || r.op === 'write';
      if (!retried || !(e instanceof SiltError && e.code === 'PoolExhausted')) throw e;
      await Database.internals(this.#db as Database<unknown, unknown>).ready();
      return this.#handle(c, id, r);
    }
  }

  /** Runs one request; returns its value and the buffers to transfer. */
  async #handle(c: Client, id: number, r: Request): Promise<[unknown, Transferable[]]> {
    const db = this.#db;
    switch (r.op) {
      case 'put':
        this.#writer.write(c.id, id, new WriteBatch().put(r.key, r.value), r.sync);
        return [undefined, []];
      case 'delete':
        this.#writer.write(c.id, id, new WriteBatch().delete(r.key), r.sync);
        return [undefined, []];
      case 'deleteRange':
        this.#writer.write(c.id, id, new WriteBatch().deleteRange(r.start, r.end), r.sync);
        return [undefined, []];
      case 'merge':
        this.#writer.write(c.id, id, new WriteBatch().merge(r.key, r.value), r.sync);
        return [undefined, []];
      case 'txnBegin':
        if (c.transactions.has(r.txn)) throw new SiltError('InvalidArgument', `transaction ${r.txn} of this connection is open already`);
        c.transactions.set(r.txn, { tx: db.begin(), writes: new WriteBatch() });
        return [undefined, []];
      case 'txnGet': {
        const t = transactionOf(c, r.txn, r.writes);
        const key = keyOf(r.key);
        if (isReserved(key)) throw reserved('the key');
        const v = r.forUpdate ? t.tx.getForUpdate(key) : t.tx.get(key);
        if (v === undefined) return [undefined, []];
        countCopied(v.length);
        return [v, [v.buffer]];
      }
      case 'txnMultiGet': {
        const t = transactionOf(c, r.txn, r.writes);
        const keys = r.keys.map(keyOf);
        for (const k of keys) if (isReserved(k)) throw reserved('a key');
        return packValues(t.tx.multiGet(keys));
      }
      case 'txnIterator': {
        const t = transactionOf(c, r.txn, r.writes);
        const iid = this.#nextId++;
        c.iterators.set(iid, t.tx.iterator(r.options));
        return [iid, []];
      }
      case 'txnCommit':
        this.#writer.commitTransaction(c, id, r.txn, r.leader, r.writes, r.sync);
        return [undefined, []];
      case 'txnAbort':
        c.transactions.get(r.txn)?.tx.abort();
        c.transactions.delete(r.txn);
        return [undefined, []];
      case 'write':
        // The request's own buffer (a clone that arrived here) becomes the batch.
        this.#writer.write(c.id, id, WriteBatch.fromEncoded(r.batch, r.count), r.sync);
        return [undefined, []];
      case 'ingest':
        return [await this.#writer.ingest(c.id, id, r.batch, r.count, r.sorted), []];
      case 'compactRange':
        await db.compactRange(r.begin, r.end);
        return [undefined, []];
      case 'get': {
        const key = keyOf(r.key);
        if (isReserved(key)) throw reserved('the key');
        // get's copy is in a buffer of its own: transferred, not copied again.
        const v = db.get(key, snapshotOf(c, r.snapshot));
        return v === undefined ? [undefined, []] : [v, [v.buffer]];
      }
      case 'multiGet': {
        const keys = r.keys.map(keyOf);
        for (const k of keys) if (isReserved(k)) throw reserved('a key');
        const result = db.multiGet(keys, snapshotOf(c, r.snapshot));
        try {
          return packValues(Array.from({ length: result.length }, (_, i) => result.get(i)));
        } finally {
          result.release();
        }
      }
      case 'snapshot': {
        const sid = this.#nextId++;
        c.snapshots.set(sid, db.snapshot());
        const info: SnapshotInfo = { id: sid, seq: db.latestSequence() };
        return [info, []];
      }
      case 'releaseSnapshot':
        c.snapshots.get(r.snapshot)?.release();
        c.snapshots.delete(r.snapshot);
        return [undefined, []];
      case 'iterator': {
        const iid = this.#nextId++;
        c.iterators.set(iid, db.iterator({ ...r.options, ...snapshotOf(c, r.snapshot) }));
        return [iid, []];
      }
      case 'next': {
        const it = c.iterators.get(r.iterator);
        if (it === undefined) throw new SiltError('Released', 'this iterator was released');
        for (;;) {
          let batch: EntryBatch | undefined;
          try {
            batch = it.nextBatch();
          } catch (e) {
            it.release();
            c.iterators.delete(r.iterator);
            throw e;
          }
          if (batch === undefined) {
            it.release();
            c.iterators.delete(r.iterator);
            return [undefined, []];
          }
          const shown = withoutReserved(batch);
          if (shown === undefined) continue; // every entry was a record
          // Views of the iterator's batch memory (copied out of wasm memory):
          // transferred to the page, the iterator makes new memory.
          return [shown, [shown.bytes.buffer]];
        }
      }
      case 'releaseIterator':
        c.iterators.get(r.iterator)?.release();
        c.iterators.delete(r.iterator);
        return [undefined, []];
      case 'flush':
        db.flush();
        return [undefined, []];
      case 'idle':
        await db.idle();
        return [undefined, []];
      case 'statistics':
        await refreshStorageEstimate(); // a Promise API can afford a fresh estimate
        return [{ ...db.statistics(), tabs: this.#tabs() }, []];
      case 'verify':
        return [db.verify(), []];
      case 'latestSequence':
        return [db.latestSequence(), []];
      case 'clear': {
        let upper = r.upper;
        if (upper === undefined) {
          // Past the last key that is not a write record (records sort last).
          for (const [k] of db.iterator({ gte: r.lower, reverse: true, batchSize: 4 })) {
            if (isReserved(k)) continue;
            upper = successor(k);
            break;
          }
        }
        const b = new WriteBatch();
        if (upper !== undefined && compareBytes(r.lower, upper) < 0) b.deleteRange(r.lower, upper);
        this.#writer.write(c.id, id, b, r.sync);
        return [undefined, []];
      }
      case 'count': {
        const at = snapshotOf(c, r.snapshot);
        const range = { ...(r.lower ? { gte: r.lower } : {}), ...(r.upper ? { lt: r.upper } : {}) };
        // Write records are not the app's keys: not counted.
        const lo = r.lower === undefined || compareBytes(r.lower, RESERVED) < 0 ? RESERVED : r.lower;
        const hi = r.upper === undefined || compareBytes(RESERVED_END, r.upper) < 0 ? RESERVED_END : r.upper;
        const records = compareBytes(lo, hi) < 0 ? db.count({ gte: lo, lt: hi, ...at }) : 0;
        return [db.count({ ...range, ...at }) - records, []];
      }
      case 'exportStart': {
        const eid = this.#nextId++;
        // The write records are not the app's data: left out of the
        // entries form. The tables form copies the files, records and all
        // (records of connections of another database, never sent again).
        const { inner } = Database.internals(db as Database<unknown, unknown>);
        const tables = r.form === 'tables' || (r.form === undefined && r.lower === undefined && r.upper === undefined);
        let exp: ReturnType<WasmDatabase['exportStart']>;
        try {
          exp = tables
            ? inner.exportStart(r.lower, r.upper, undefined, undefined, r.form)
            : inner.exportStart(r.lower, r.upper, RESERVED, RESERVED_END, r.form);
        } catch (e) {
          throw fromWasm(e);
        }
        c.exports.set(eid, exportStream(exp, () => {}).getReader());
        return [eid, []];
      }
      case 'exportNext': {
        const reader = c.exports.get(r.export);
        if (reader === undefined) throw new SiltError('Released', 'this export was released');
        let piece: ReadableStreamReadResult<Uint8Array>;
        try {
          piece = await reader.read();
        } catch (e) {
          c.exports.delete(r.export);
          throw e;
        }
        if (piece.done) {
          c.exports.delete(r.export);
          return [undefined, []];
        }
        return [piece.value, [piece.value.buffer]];
      }
      case 'exportRelease':
        c.exports
          .get(r.export)
          ?.cancel()
          .catch(() => {});
        c.exports.delete(r.export);
        return [undefined, []];
      case 'importStart': {
        if (this.importer !== undefined) throw new SiltError('Busy', 'another connection is importing into this database');
        try {
          Database.internals(db as Database<unknown, unknown>).inner.importStart();
        } catch (e) {
          throw fromWasm(e);
        }
        this.importer = c.id;
        return [undefined, []];
      }
      case 'importPush': {
        const { inner, ready } = this.#importOf(c);
        await ready();
        try {
          inner.importPush(r.bytes);
        } catch (e) {
          this.importer = undefined; // the engine ended it
          throw fromWasm(e);
        }
        return [undefined, []];
      }
      case 'importFinish': {
        const { inner, ready, afterWrite } = this.#importOf(c);
        this.importer = undefined;
        await ready();
        let report: unknown;
        try {
          report = inner.importFinish();
        } catch (e) {
          throw fromWasm(e);
        }
        afterWrite();
        return [report, []];
      }
      case 'importAbort':
        if (this.importer === c.id) this.abortImport();
        return [undefined, []];
      case 'approximateSize': {
        // Write records are not the app's data: the part of the range below
        // them, and any above them.
        const size = (lower: Uint8Array | undefined, upper: Uint8Array | undefined) =>
          lower !== undefined && upper !== undefined && compareBytes(lower, upper) >= 0
            ? 0
            : db.approximateSize({ ...(lower ? { gte: lower } : {}), ...(upper ? { lt: upper } : {}) });
        const below = r.upper === undefined || compareBytes(RESERVED, r.upper) < 0 ? RESERVED : r.upper;
        const above = r.lower === undefined || compareBytes(r.lower, RESERVED_END) < 0 ? RESERVED_END : r.lower;
        const over = r.upper === undefined || compareBytes(RESERVED_END, r.upper) < 0;
        return [size(r.lower, below) + (over ? size(above, r.upper) : 0), []];
      }
      case 'changes':
        return [this.#writer.history(r.since), []];
      case 'bye':
        // Dropped once answered (enqueue).
        return [undefined, []];
      default:
        return this.#operation(c, r);
    }
  }

  /** An operation of operations.ts's table, served as it declares. */
  #operation(c: Client, r: OperationRequest): [unknown, Transferable[]] {
    const side: LeaderSide = {
      db: this.#db,
      key: (k, what) => {
        const key = keyOf(k);
        if (isReserved(key)) throw reserved(what);
        return key;
      },
      snapshotOf: (id) => snapshotOf(c, id),
    };
    const operation = OPERATIONS[r.op] as { serve(leader: LeaderSide, r: OperationRequest): [unknown, Transferable[]] };
    return operation.serve(side, r);
  }
}
