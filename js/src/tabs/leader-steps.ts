/**
 * The steps of a connection's sessions in the leader, declared as the
 * operations are (operations.ts), each once: its request's fields, how the
 * leader serves it, and what it needs of the leader it was made for. They
 * have no page method of their own: the page's iterators
 * (remote-iterator.ts), transactions (remote-transaction.ts), snapshots,
 * exports and imports (remote-database.ts) send them. Their bodies reach
 * the leader's state through `StepSide` alone, so that the page, which
 * needs only their `state`, loads no code of the worker's database. With the
 * operations' table they make the protocol's `Request`, the leader's
 * dispatch and the re-send rule (protocol.ts).
 */

import type { Database as WasmDatabase } from '../../pkg/silt_wasm.js';
import { countCopied } from '../boundary/counters.js';
import { WriteBatch } from '../core/batch.js';
import type { Key } from '../core/bytes.js';
import { fromWasm, SiltError } from '../core/errors.js';
import { exportStream } from '../local/backup.js';
import type { Database } from '../local/database.js';
import type { EntryBatch } from '../local/iterator.js';
import { type Client, transactionOf } from './leader-clients.js';
import { keyOf, packValues, reserved, withoutReserved } from './leader-batches.js';
import { atSnapshot, type LeaderSide, type LeaderState, type Served } from './operations.js';
import type { IteratorRequestOptions, TxnWrites } from './wire.js';
import { BOOL, BYTES, COUNT, type Fields, KEY, KEYS, NAME, nullable, oneOf, optional, record } from './wire-checks.js';
import { isReserved, RESERVED, RESERVED_END } from './write-records.js';

/** An iterator's options as the page sends them (`IteratorRequestOptions`). */
const ITERATOR_OPTIONS = record({
  gt: optional(KEY),
  gte: optional(KEY),
  lt: optional(KEY),
  lte: optional(KEY),
  reverse: optional(BOOL),
  batchSize: optional(COUNT),
  autoRefresh: optional(BOOL),
} satisfies Fields<IteratorRequestOptions>);

/** A transaction's writes since its last request (`TxnWrites`). */
const TXN_WRITES = record({ batch: BYTES, count: COUNT } satisfies Fields<TxnWrites>);

/** What a step's leader side has besides an operation's. */
export interface StepSide extends LeaderSide {
  /** The asking connection, and the number of its request. */
  client: Client;
  id: number;
  /** A new number for something the leader keeps for a connection. */
  nextId(): number;
  /** The engine and pool under the leader's database (`Database.internals`). */
  internals(): ReturnType<typeof Database.internals>;
  /** The import in progress: the connection that runs it. */
  imports: { importer: string | undefined; abortImport(): void };
  /** Commits transaction `txn` of the asking connection, as its request's write. */
  commit(txn: number, leader: string, writes: TxnWrites | undefined, sync: boolean | undefined): void;
  /** The change records after `since` (see `LeaderWriter.history`); `values`: with their keys' values (from now on, too). */
  history(since: number | null, values: boolean): unknown;
  /** The asking connection's import finished; the latest sequence number was `before` (see `LeaderWriter.imported`). */
  imported(before: number): void;
}

/** One step: its request's fields `W`. */
interface Step<W extends object> {
  serve(leader: StepSide, r: W): Served | Promise<Served>;
  /** How the leader checks each field of the request before serving it (wire-checks.ts). */
  fields: Fields<W>;
  state: LeaderState | ((r: W) => LeaderState);
}

const step = <W extends object>(s: Step<W>): Step<W> => s;

/**
 * The answer to an `iterator` request with `first`: the iterator's number,
 * its first batch (none: it was empty), and whether the leader has let go
 * of it (it ended, or the batch holds the entries the page will take).
 */
export interface FirstBatch {
  id: number;
  batch: { bytes: Uint8Array; offsets: Uint32Array } | undefined;
  done: boolean;
}

/** Lets go of `client`'s iterator `iid`, if it has it. */
function releaseOf(client: Client, iid: number): void {
  client.iterators.get(iid)?.release();
  client.iterators.delete(iid);
}

/**
 * The next batch of `client`'s iterator `iid`, records left out, as views
 * of the iterator's batch memory (copied out of wasm memory) transferred to
 * the page (the iterator makes new memory); none once it ends. An iterator
 * that ends or fails is let go of.
 */
function nextBatch(client: Client, iid: number): Served {
  const it = client.iterators.get(iid);
  if (it === undefined) throw new SiltError('Released', 'this iterator was released: make a new one (db.iterator()) to read on');
  for (;;) {
    let batch: EntryBatch | undefined;
    try {
      batch = it.nextBatch();
    } catch (e) {
      releaseOf(client, iid);
      throw e;
    }
    if (batch === undefined) {
      releaseOf(client, iid);
      return none();
    }
    const shown = withoutReserved(batch);
    if (shown === undefined) continue; // every entry was a record
    return [shown, [shown.bytes.buffer]];
  }
}

const none = (): Served => [undefined, []];

/** The engine and pool of the database, for the asking connection's import (which must be in progress). */
function importOf(s: StepSide): ReturnType<typeof Database.internals> {
  if (s.imports.importer !== s.client.id) throw new SiltError('InvalidArgument', 'no import of this connection is in progress');
  return s.internals();
}

export const STEPS = {
  releaseSnapshot: step({
    serve: (s, r: { snapshot: number }) => {
      s.client.snapshots.get(r.snapshot)?.release();
      s.client.snapshots.delete(r.snapshot);
      return none();
    },
    fields: { snapshot: COUNT },
    state: 'releases',
  }),
  /**
   * Opens an iterator at the latest state (its number comes with the
   * answer, from whichever leader), or at a snapshot. With `first`, the
   * answer also holds its first batch (`FirstBatch`): a scan's first
   * entries come in one round trip. The batch is transferred, as `next`'s
   * are: sent again after its answer was lost, the request fails with
   * `LeaderChanged` and the iterator goes (leader.ts), as a lost `next`'s
   * does. The leader lets go of the iterator itself when it is empty or
   * that batch holds the `limit` entries the page will take.
   */
  iterator: step({
    serve: (s, r: { options: IteratorRequestOptions; snapshot: number; first?: boolean; limit?: number }) => {
      const iid = s.nextId();
      s.client.iterators.set(iid, s.db.iterator({ ...r.options, ...s.snapshotOf(r.snapshot) }));
      if (r.first !== true) return [iid, []];
      const shown = nextBatch(s.client, iid)[0] as FirstBatch['batch'];
      if (shown === undefined) return [{ id: iid, batch: undefined, done: true } satisfies FirstBatch, []];
      if (r.limit === undefined || (shown.offsets.length - 1) / 2 < r.limit) {
        return [{ id: iid, batch: shown, done: false } satisfies FirstBatch, [shown.bytes.buffer]];
      }
      // Copied before the release, which ends the iterator's batch memory.
      const batch = { bytes: shown.bytes.slice(), offsets: shown.offsets.slice() };
      releaseOf(s.client, iid);
      return [{ id: iid, batch, done: true } satisfies FirstBatch, [batch.bytes.buffer]];
    },
    fields: { options: ITERATOR_OPTIONS, snapshot: COUNT, first: optional(BOOL), limit: optional(COUNT) },
    state: atSnapshot,
  }),
  next: step({
    serve: (s, r: { iterator: number }) => nextBatch(s.client, r.iterator),
    fields: { iterator: COUNT },
    state: 'uses',
  }),
  releaseIterator: step({
    serve: (s, r: { iterator: number }) => {
      releaseOf(s.client, r.iterator);
      return none();
    },
    fields: { iterator: COUNT },
    state: 'releases',
  }),
  /** Backups: an export read piece by piece, an import pushed piece by piece, on the leader that started it. */
  exportStart: step({
    serve: (s, r: { lower?: Uint8Array; upper?: Uint8Array; form?: 'tables' | 'entries' | 'rocksdb'; lz4?: boolean; targetFileSize?: number }) => {
      const eid = s.nextId();
      // The write records are not the app's data: left out of the
      // entries form. The tables form copies the files, records and all
      // (records of connections of another database, never sent again).
      const { inner } = s.internals();
      const tables = r.form === 'tables' || (r.form === undefined && r.lower === undefined && r.upper === undefined);
      let exp: ReturnType<WasmDatabase['exportStart']>;
      try {
        exp = tables
          ? inner.exportStart(r.lower, r.upper, undefined, undefined, r.form, r.lz4, r.targetFileSize)
          : inner.exportStart(r.lower, r.upper, RESERVED, RESERVED_END, r.form, r.lz4, r.targetFileSize);
      } catch (e) {
        throw fromWasm(e);
      }
      s.client.exports.set(eid, exportStream(exp, () => {}).getReader());
      return [eid, []];
    },
    fields: {
      lower: optional(BYTES),
      upper: optional(BYTES),
      form: optional(oneOf('tables', 'entries', 'rocksdb')),
      lz4: optional(BOOL),
      targetFileSize: optional(COUNT),
    },
    state: 'uses',
  }),
  exportNext: step({
    serve: async (s, r: { export: number }) => {
      const exports = s.client.exports;
      const reader = exports.get(r.export);
      if (reader === undefined) throw new SiltError('Released', 'this export was released: start a new one (db.export())');
      let piece: ReadableStreamReadResult<Uint8Array>;
      try {
        piece = await reader.read();
      } catch (e) {
        exports.delete(r.export);
        throw e;
      }
      if (piece.done) {
        exports.delete(r.export);
        return none();
      }
      return [piece.value, [piece.value.buffer]];
    },
    fields: { export: COUNT },
    state: 'uses',
  }),
  exportRelease: step({
    serve: (s, r: { export: number }) => {
      s.client.exports
        .get(r.export)
        ?.cancel()
        .catch(() => {});
      s.client.exports.delete(r.export);
      return none();
    },
    fields: { export: COUNT },
    state: 'releases',
  }),
  /**
   * RocksDB tables (an archive of them, or one, whole: `ingestRocksdb`) as
   * this request's write: read and verified by the engine, then an ingest
   * of their values, or a synced write of their deletions, merges and range
   * deletions, each recorded as writes are (never applied twice).
   */
  ingestRocksdb: step({
    serve: async (s, r: { bytes: Uint8Array }) => {
      const plan = rocksdbPlanOf(s.internals().inner, r.bytes);
      // A plan of values only is in key order, one entry per key.
      if (plan.valuesOnly) await s.ingest(plan.batch, plan.count, true);
      else s.write(WriteBatch.fromEncoded(plan.batch, plan.count), true);
      return [{ keys: plan.keys, tables: plan.tables }, []];
    },
    fields: { bytes: BYTES },
    state: 'none',
  }),
  importStart: step({
    serve: (s, _r: object) => {
      if (s.imports.importer !== undefined) throw new SiltError('Busy', 'another connection is importing into this database: wait for its import() to end');
      try {
        s.internals().inner.importStart();
      } catch (e) {
        throw fromWasm(e);
      }
      s.imports.importer = s.client.id;
      return none();
    },
    fields: {},
    state: 'uses',
  }),
  importPush: step({
    serve: async (s, r: { bytes: Uint8Array }) => {
      const { inner, ready } = importOf(s);
      await ready();
      try {
        inner.importPush(r.bytes);
      } catch (e) {
        s.imports.importer = undefined; // the engine ended it
        throw fromWasm(e);
      }
      return none();
    },
    fields: { bytes: BYTES },
    state: 'uses',
  }),
  importFinish: step({
    serve: async (s, _r: object) => {
      const { inner, ready, afterWrite } = importOf(s);
      s.imports.importer = undefined;
      await ready();
      let report: unknown;
      const before = s.db.latestSequence();
      try {
        report = inner.importFinish();
      } catch (e) {
        throw fromWasm(e);
      }
      afterWrite();
      s.imported(before);
      return [report, []];
    },
    fields: {},
    state: 'uses',
  }),
  importAbort: step({
    serve: (s, _r: object) => {
      if (s.imports.importer === s.client.id) s.imports.abortImport();
      return none();
    },
    fields: {},
    state: 'releases',
  }),
  /**
   * Change records after `since` (null: none, only where history starts
   * now); sequence numbers are the database's. `watch`: whether every
   * change record from now on goes to the connection, on its line
   * (`ChangeMessage`), after this answer. `values`: whether the records
   * (these and those sent from now on) carry their keys' values
   * (change-values.ts).
   */
  changes: step({
    serve: (s, r: { since: number | null; watch?: boolean; values?: boolean }) => {
      if (r.watch !== undefined) s.client.watching = r.watch;
      // A connection that stops watching wants no values either.
      if (r.values !== undefined) s.client.values = r.values;
      else if (r.watch === false) s.client.values = false;
      return [s.history(r.since, s.client.values), []];
    },
    fields: { since: nullable(COUNT), watch: optional(BOOL), values: optional(BOOL) },
    state: 'none',
  }),
  /**
   * Transactions (remote-transaction.ts): numbered by the connection, and
   * living in the leader they began on. `writes` (a `WriteBatch`
   * encoding, with `count` updates) are the transaction's writes made
   * since its last request, applied to it first.
   */
  txnBegin: step({
    serve: (s, r: { txn: number }) => {
      const c = s.client;
      if (c.transactions.has(r.txn)) throw new SiltError('InvalidArgument', `transaction ${r.txn} of this connection is open already`);
      c.transactions.set(r.txn, { tx: s.db.begin(), writes: new WriteBatch() });
      return none();
    },
    fields: { txn: COUNT },
    state: 'uses',
  }),
  txnGet: step({
    serve: (s, r: { txn: number; key: Key; forUpdate: boolean; writes?: TxnWrites }) => {
      const t = transactionOf(s.client, r.txn, r.writes);
      const key = keyOf(r.key);
      if (isReserved(key)) throw reserved('the key');
      const v = r.forUpdate ? t.tx.getForUpdate(key) : t.tx.get(key);
      if (v === undefined) return none();
      countCopied(v.length);
      return [v, [v.buffer]];
    },
    fields: { txn: COUNT, key: KEY, forUpdate: BOOL, writes: optional(TXN_WRITES) },
    state: 'uses',
  }),
  txnMultiGet: step({
    serve: (s, r: { txn: number; keys: Key[]; writes?: TxnWrites }) => {
      const t = transactionOf(s.client, r.txn, r.writes);
      const keys = r.keys.map(keyOf);
      for (const k of keys) if (isReserved(k)) throw reserved('a key');
      return packValues(t.tx.multiGet(keys));
    },
    fields: { txn: COUNT, keys: KEYS, writes: optional(TXN_WRITES) },
    state: 'uses',
  }),
  txnIterator: step({
    serve: (s, r: { txn: number; options: IteratorRequestOptions; writes?: TxnWrites }) => {
      const t = transactionOf(s.client, r.txn, r.writes);
      const iid = s.nextId();
      s.client.iterators.set(iid, t.tx.iterator(r.options));
      return [iid, []];
    },
    fields: { txn: COUNT, options: ITERATOR_OPTIONS, writes: optional(TXN_WRITES) },
    state: 'uses',
  }),
  /**
   * `leader`: the leader the transaction began on. Sent again to a new
   * leader after a failover (as writes are): answered from its write
   * record (acknowledged if applied, its failure again if it failed), else
   * `LeaderChanged` (nothing applied).
   */
  txnCommit: step({
    serve: (s, r: { txn: number; leader: string; writes?: TxnWrites; sync?: boolean }) => {
      s.commit(r.txn, r.leader, r.writes, r.sync);
      return none();
    },
    fields: { txn: COUNT, leader: NAME, writes: optional(TXN_WRITES), sync: optional(BOOL) },
    state: 'none',
  }),
  txnAbort: step({
    serve: (s, r: { txn: number }) => {
      s.client.transactions.get(r.txn)?.tx.abort();
      s.client.transactions.delete(r.txn);
      return none();
    },
    fields: { txn: COUNT },
    state: 'releases',
  }),
  /** The follower leaves: its snapshots, iterators and write record go (dropped once answered: leader.ts). */
  bye: step({
    serve: (_s, _r: object) => none(),
    fields: {},
    state: 'none',
  }),
};

/** A request of a step declared here. */
export type StepRequest = {
  [O in keyof typeof STEPS]: { op: O } & Parameters<(typeof STEPS)[O]['serve']>[1];
}[keyof typeof STEPS];

/** What the engine plans of RocksDB tables (crates/wasm/src/rocksdb.rs, `rocksdbPlan`). */
export interface RocksdbPlan {
  batch: Uint8Array;
  count: number;
  valuesOnly: boolean;
  keys: number;
  tables: number;
}

/** The engine's plan of the RocksDB tables in `bytes` (their damage: the engine's error). */
export function rocksdbPlanOf(inner: WasmDatabase, bytes: Uint8Array): RocksdbPlan {
  try {
    return inner.rocksdbPlan(bytes) as RocksdbPlan;
  } catch (e) {
    throw fromWasm(e);
  }
}
