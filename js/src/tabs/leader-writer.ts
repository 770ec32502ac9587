/**
 * The leader's writes (leader.ts): each applied with its connection's
 * write record in the same atomic batch (write-records.ts), so that a
 * write sent again after a failover is answered from the record instead of
 * applied twice; an ingest, which cannot carry the record, written between
 * two records (`ingest`). Every committed write is published as a change
 * record (to the connections that watch: leader.ts) and kept in a bounded
 * history for `watch({ since })`.
 */

import { WriteBatch, type IngestReport } from '../core/batch.js';
import { successor } from '../core/bytes.js';
import { SiltError } from '../core/errors.js';
import type { Database } from '../local/database.js';
import { Transaction } from '../local/transaction.js';
import { type Client, transactionOf } from './leader-clients.js';
import { KeptChanges } from './change-history.js';
import { INGEST, NOTHING, pack, RESET_ALL, type Packed, putRange, splitAroundReserved } from './leader-batches.js';
import { decodeHandover, encodeHandover, HANDOVER_KEY } from './handover.js';
import { valuesOf, withoutValues } from './change-values.js';
import { recoveredChanges } from './recovered-changes.js';
import { type ChangeHistory, type ChangeRecord, HISTORY_BYTES, type TxnWrites } from './wire.js';
import { type Applied, knownReport, parseRecord, RECORDS, recordFailure, recordKey, recordValue, RESERVED_END } from './write-records.js';

/** @internal The writes of a leader, with their connections' write records, and the changes they made. */
export class LeaderWriter {
  #db: Database;
  #id: string;
  /** Write records of connections, as read or last written (write-records.ts). */
  #records = new Map<string, Applied>();
  /** The keys of those records (`#recordKey`). */
  #keys = new Map<string, Uint8Array>();
  /**
   * Connections whose record in the database is behind the one here (its
   * write failed): written before any other write, so that nothing takes
   * a sequence number while an ingest's intent there is stale.
   */
  #dirty = new Set<string>();
  /**
   * Writes of a connection that failed because its record could not be
   * read (`recordOf` threw): recorded as failed once it is, so that sent
   * again they fail again. Unrecorded, a later write's record would hold
   * an id past theirs, and one sent again would pass for applied.
   */
  #failedUnread = new Map<string, { id: number; error: unknown }[]>();
  readonly #history: KeptChanges;
  /** The latest sequence number when this leader began (before its sweep). */
  readonly #opened: number;
  /** Where each change record goes (the connections that watch). */
  #publishTo: (record: ChangeRecord) => void;
  /** Whether what this leader found in the database has been made durable (`makeDurable`). */
  #foundDurable = false;
  /**
   * Whether the changes before this leader began may still be rebuilt from
   * the memtables (recovered-changes.ts): no history was handed over, and
   * none has been asked for yet.
   */
  #recoverable = true;
  /** Whether change records carry their keys' values now: while a connection that watches asked for them. */
  readonly #values: () => boolean;

  /** Writes to `db` for leader `id`, publishing each change record to `publish`; with values while `values()`. */
  constructor(db: Database, id: string, publish: (record: ChangeRecord) => void, values: () => boolean = () => false) {
    this.#values = values;
    this.#db = db;
    this.#id = id;
    this.#opened = db.latestSequence();
    this.#history = new KeptChanges(this.#opened);
    // The history the leader before handed over (handover.ts), if it ends where this one begins.
    const handed = decodeHandover(db.get(HANDOVER_KEY), this.#opened);
    if (handed !== undefined) {
      this.#history.base = handed.base;
      for (const r of handed.records) this.#keep(r);
      this.#recoverable = false;
    }
    this.#publishTo = publish;
    this.#settleIntents();
  }

  /**
   * Settles the ingests that a leader before this one began and did not
   * record the end of: an intent at sequence number `seq` whose ingest
   * took `seq + 1` if it was applied. Nothing but that ingest can have
   * taken it (a leader writes nothing else while an intent stands: see
   * `#dirty`), so the ingest was applied if and only if the database goes
   * past `seq`.
   */
  #settleIntents(): void {
    const found: [string, Applied][] = [];
    const it = this.#db.iterator({ gte: RECORDS, lt: RESERVED_END });
    try {
      for (const [k, v] of it) {
        const a = parseRecord(v);
        if (a.pending !== undefined) found.push([new TextDecoder().decode(k.subarray(RECORDS.length)), a]);
      }
    } finally {
      it.release();
    }
    for (const [client, a] of found) {
      const p = a.pending!;
      a.pending = undefined;
      if (this.#opened > p.seq) {
        a.max = Math.max(a.max, p.id);
        // What is known of its report: its sequence number, and its entries as sent.
        const report = knownReport(p.count, p.seq + 1);
        a.outcomes = a.outcomes.filter((o) => o.to < p.id).concat([{ from: p.id, to: p.id, report }]);
      }
      this.#records.set(client, a);
      this.#dirty.add(client);
    }
    try {
      this.#writeDirty();
    } catch {
      // Written before the next write, or that write fails.
    }
  }

  /**
   * The latest sequence number of the database as this leader found it:
   * what a crash of the previous leader left. Writes a watcher saw above
   * it were lost with that leader.
   */
  get opened(): number {
    return this.#opened;
  }

  /** The keys of the write records in the database (copies: no iterator is held after this returns). */
  recordKeys(): Uint8Array[] {
    const keys: Uint8Array[] = [];
    const it = this.#db.iterator({ gte: RECORDS, lt: RESERVED_END });
    try {
      for (const [view] of it) keys.push(view.slice());
    } finally {
      it.release();
    }
    return keys;
  }

  /** Deletes the write records under `keys` (of connections that are gone); storage refusing leaves them. */
  deleteRecords(keys: Uint8Array[]): void {
    const b = new WriteBatch();
    for (const k of keys) b.delete(k);
    try {
      this.#commit(b, NOTHING);
    } catch {
      // Storage refused (the settled intents written first, or the
      // deletes): the records stay, for a later sweep; this leader serves.
    }
  }

  /** The key of `client`'s write record (made once per connection: a write's record is put under it). */
  #recordKey(client: string): Uint8Array {
    let key = this.#keys.get(client);
    if (key === undefined) {
      key = recordKey(client);
      this.#keys.set(client, key);
    }
    return key;
  }

  /** Forgets `client`'s write record here (not in the database). */
  forgetRecord(client: string): void {
    this.#keys.delete(client);
    this.#records.delete(client);
    this.#dirty.delete(client);
    this.#failedUnread.delete(client);
  }

  /** Forgets `client`'s write record, and with `record` deletes it from the database (its connection closed or went). */
  forget(client: string, record: boolean): void {
    this.forgetRecord(client);
    if (record && !this.#db.closed) {
      const b = new WriteBatch().delete(recordKey(client));
      this.#commit(b, NOTHING);
    }
  }

  /** `client`'s write record, if it has been read or written here. */
  known(client: string): Applied | undefined {
    return this.#records.get(client);
  }

  /**
   * Before a write sent again with `sync` is acknowledged from its record:
   * makes what this leader found in the database durable. The leader
   * before may have gone between putting that write in the log and
   * syncing the log, and the engine opened with the log as it found it.
   * Memtables recovered from a log that ended torn (the engine then took
   * a new log) are flushed; then the connection's record is written
   * again with `sync`, which syncs the log. Once is enough for a leader:
   * every write found applied is in what it found.
   */
  makeDurable(client: string): void {
    if (this.#foundDurable) return;
    if (this.#db.statistics().properties.immutableMemtables > 0) this.#db.flush();
    const a = this.recordOf(client);
    const key = this.#recordKey(client);
    const b = new WriteBatch();
    WriteBatch.putBookkeeping(b, key, recordValue(a, key.length, a.max, a.pending));
    this.#commit(b, NOTHING, { sync: true });
    this.#foundDurable = true;
  }

  /**
   * `client`'s write record (read from the database the first time, with
   * the failures of writes made while it could not be read).
   */
  recordOf(client: string): Applied {
    let a = this.#records.get(client);
    if (a === undefined) {
      a = parseRecord(this.#db.get(this.#recordKey(client)));
      for (const f of this.#failedUnread.get(client) ?? []) recordFailure(a, f.id, f.error);
      this.#failedUnread.delete(client);
      this.#records.set(client, a);
    }
    return a;
  }

  /** Write `id` of `client` failed with `error` because its record could not be read: recorded once it is. */
  failedUnread(client: string, id: number, error: unknown): void {
    const list = this.#failedUnread.get(client) ?? [];
    list.push({ id, error });
    this.#failedUnread.set(client, list);
  }

  /** Writes the records that are behind (`#dirty`), before any other write. */
  #writeDirty(): void {
    if (this.#dirty.size === 0) return;
    const b = new WriteBatch();
    for (const client of this.#dirty) {
      const a = this.recordOf(client);
      const key = this.#recordKey(client);
      WriteBatch.putBookkeeping(b, key, recordValue(a, key.length, a.max, a.pending));
    }
    const first = this.#db.latestSequence() + 1;
    this.#db.write(b);
    this.#dirty.clear();
    this.#publish({ first, last: this.#db.latestSequence(), ...NOTHING, from: this.#id });
  }

  /**
   * Applies `batch`, the updates of request `id` of `client`, with its
   * record, unless that request was applied already. The batch's own
   * buffer is written (the record appended to it), not a copy, unless a
   * range delete must be split around the reserved keys.
   */
  write(client: string, id: number, batch: WriteBatch, sync: boolean | undefined): void {
    let b = batch;
    let changes = pack(b.encoded());
    if (changes === 'split') {
      b = splitAroundReserved(WriteBatch.decode(b.encoded()));
      changes = pack(b.encoded()) as Packed;
    }
    const a = this.recordOf(client);
    const key = this.#recordKey(client);
    WriteBatch.putBookkeeping(b, key, recordValue(a, key.length, id));
    this.#commit(b, changes, sync === undefined ? {} : { sync });
    a.max = id;
  }

  /** Writes `b` and publishes `changes`, its updates but the record. */
  #commit(b: WriteBatch, changes: Packed, options: { sync?: boolean } = {}): void {
    this.#writeDirty();
    const first = this.#db.latestSequence() + 1;
    this.#db.write(b, options);
    this.#publish({ first, last: this.#db.latestSequence(), ...changes, from: this.#id });
  }

  /**
   * Publishes `record`, just written (nothing else has written since):
   * with its keys' values once a watch has asked for them (change-values.ts).
   */
  #publish(record: ChangeRecord): void {
    if (this.#values()) {
      const values = valuesOf(record, (key) => this.#db.get(key));
      if (values !== undefined) record.values = values;
    }
    this.#keep(record);
    this.#publishTo(record);
  }

  /** Keeps `record` in the history, the oldest going past its bounds. */
  #keep(record: ChangeRecord): void {
    this.#history.keep(record);
  }

  /** The change records after `since` that this leader keeps, for `watch({ since })` (none for `null`: the latest sequence number only). */
  history(since: number | null, values: boolean): ChangeHistory {
    const latest = this.#db.latestSequence();
    if (since === null) return { base: latest, latest, records: [] };
    if (since < this.#history.base) this.#recover();
    const records = this.#history.after(since);
    return { base: this.#history.base, latest, records: values ? records : records.map(withoutValues) };
  }

  /**
   * Puts before the history the changes of the writes a leader before this
   * one made and did not hand over (it crashed, maybe before publishing
   * its last writes), as far as the memtables still hold them
   * (recovered-changes.ts). Once: asked for by the first catch-up from
   * before this leader began, not paid by a leader nobody watches.
   */
  #recover(): void {
    if (!this.#recoverable) return;
    this.#recoverable = false;
    // History dropped for room since would leave a hole between the two.
    if (this.#history.base !== this.#opened) return;
    const found = recoveredChanges(this.#db, this.#opened, HISTORY_BYTES, this.#id);
    if (found.length === 0) return;
    const later = this.#history.restart(found[0]!.first - 1);
    for (const r of [...found, ...later]) this.#keep(r);
  }

  /**
   * Commits transaction `txn` of `c` as write request `id`: with its write
   * record, so that the commit sent again after a failover is recognised.
   */
  commitTransaction(c: Client, id: number, txn: number, leader: string, writes: TxnWrites | undefined, sync: boolean | undefined): void {
    if (leader !== this.#id) {
      throw new SiltError('LeaderChanged', 'the tab that led the database went before this transaction committed; nothing of it was written');
    }
    const t = transactionOf(c, txn, writes);
    const changes = pack(t.writes.encoded()) as Packed;
    const a = this.recordOf(c.id);
    const key = this.#recordKey(c.id);
    let first = 0;
    try {
      this.#writeDirty();
      first = this.#db.latestSequence() + 1;
      Transaction.commitWith(t.tx, sync === undefined ? {} : { sync }, key, recordValue(a, key.length, id));
    } finally {
      // The connection's transaction ends with its commit, whatever the
      // outcome (a commit refused for want of pooled files leaves the
      // engine's open: end it here too).
      t.tx.abort();
      c.transactions.delete(txn);
    }
    a.max = id;
    this.#publish({ first, last: this.#db.latestSequence(), ...changes, from: this.#id });
  }

  /**
   * Ingests `bytes` (an encoded batch of `count` puts) as request `id` of
   * `client`. The engine's ingest cannot carry the write record, so the
   * record is written around it: first an intent (this request, and the
   * sequence number the intent itself took), then the ingest (the next
   * sequence number), then the record of it done, with its report. Sent
   * again, it is answered from the record; a leader that finds an intent
   * settles it (`#settleIntents`). A record that cannot be written after
   * the ingest does not fail the ingest (its data is in): it is written
   * before the next write, and until then this leader knows it.
   */
  async ingest(client: string, id: number, bytes: Uint8Array, count: number, sorted: boolean): Promise<IngestReport> {
    const db = this.#db;
    const range = putRange(bytes);
    const a = this.recordOf(client);
    const key = this.#recordKey(client);
    if (range === undefined) {
      // Nothing to ingest: the record alone, with the (empty) report.
      const report = await db.ingest(WriteBatch.fromEncoded(bytes, count), { sorted });
      a.outcomes.push({ from: id, to: id, report });
      try {
        this.write(client, id, new WriteBatch(), undefined);
      } catch (e) {
        a.outcomes.pop();
        throw e;
      }
      return report;
    }
    this.#writeDirty();
    const seq = db.latestSequence() + 1;
    const intent = { id, seq, count };
    const b = new WriteBatch();
    WriteBatch.putBookkeeping(b, key, recordValue(a, key.length, a.max, intent));
    db.write(b);
    this.#publish({ first: seq, last: db.latestSequence(), ...NOTHING, from: this.#id });
    a.pending = intent;
    let report: IngestReport;
    try {
      report = await db.ingest(WriteBatch.fromEncoded(bytes, count), { sorted });
    } catch (e) {
      a.pending = undefined;
      const first = db.latestSequence() + 1;
      this.#rewrite(client);
      if (db.latestSequence() >= first) this.#publish({ first, last: db.latestSequence(), ...NOTHING, from: this.#id });
      throw e;
    }
    a.pending = undefined;
    a.max = id;
    a.outcomes.push({ from: id, to: id, report });
    this.#rewrite(client);
    // One change over the keys' range, not one per key; its sequence
    // numbers cover the write record too, as a write's do.
    const [lo, hi] = range;
    const end = successor(hi);
    const keys = new Uint8Array(lo.length + end.length);
    keys.set(lo);
    keys.set(end, lo.length);
    this.#publish({
      first: report.sequence,
      last: db.latestSequence(),
      kinds: new Uint8Array([INGEST]),
      bounds: new Uint32Array([0, lo.length, keys.length]),
      keys,
      from: this.#id,
    });
    return report;
  }

  /**
   * An import finished (before its answer goes; the latest sequence number
   * was `before`): it changed keys that no change record names, at the
   * sequence numbers it raised the database's to. A record of one reset
   * (kind 5: anything may have changed) covers them: watches report them as
   * a gap, page caches empty (page-cache.ts). An import that raised nothing
   * (its tables keep numbers at or below `before`) still empties the page
   * caches: its record names `before` again, which watches have seen.
   * Nothing is written for it (an imported database exports the bytes it
   * was imported from).
   */
  imported(before: number): void {
    const latest = this.#db.latestSequence();
    this.#publish({ first: Math.min(before + 1, latest), last: latest, ...RESET_ALL, from: this.#id });
  }

  /** Writes `client`'s record as it is here; if that fails, it is written before the next write. */
  #rewrite(client: string): void {
    const a = this.recordOf(client);
    const key = this.#recordKey(client);
    const b = new WriteBatch();
    WriteBatch.putBookkeeping(b, key, recordValue(a, key.length, a.max, a.pending));
    try {
      this.#db.write(b);
      this.#dirty.delete(client);
    } catch {
      this.#dirty.add(client);
    }
  }

  /**
   * Hands the change history to the next leader (handover.ts): written
   * under a reserved key when this leader closes cleanly, its sequence
   * number counted in the last record. Not while an ingest's intent
   * stands (the next leader settles it by whether the database went past
   * it) or a record is behind; storage refusing leaves the next leader
   * without it (its watches see a gap where they missed records).
   */
  handOver(): void {
    if (this.#db.closed || this.#dirty.size > 0) return;
    for (const a of this.#records.values()) if (a.pending !== undefined) return;
    const latest = this.#db.latestSequence() + 1;
    const value = encodeHandover(this.#history.records, latest);
    if (value === undefined) return;
    try {
      this.#db.write(new WriteBatch().put(HANDOVER_KEY, value));
    } catch {
      // Storage refused: nothing is handed over.
    }
  }
}
