/**
 * The leader: the worker of one `connect()` connection, whose page holds
 * the database's Web Lock, serves every connection of the origin to that
 * database: its own page through the worker's port, and each follower (a
 * connection in another tab, iframe or worker) through a MessagePort the
 * broker handed over (broker.ts), or else a BroadcastChannel of its own
 * (protocol.ts). Requests run one at a time, in arrival order.
 *
 * Writes are applied exactly once across failovers: each carries its
 * connection's request id, and the leader writes that id into the same
 * atomic batch, under a reserved key of the connection, with the outcomes
 * a re-send must repeat (write-records.ts). A write sent again to a new
 * leader after the old one went (its answer lost) is answered from that
 * record: acknowledged without being applied again if it was applied, its
 * failure again if it failed, run if it was not. An ingest, which cannot
 * carry the record, is written between two records (`#ingest`). A record
 * goes when its connection closes or dies (its client lock is then free).
 *
 * Every committed write is published as a change record on the changes
 * channel and kept in a bounded history for `watch({ since })`.
 */

import { WriteBatch, type IngestReport } from './batch.js';
import { countCopied } from './counters.js';
import type { Database as WasmDatabase } from '../pkg/silt_wasm.js';
import { exportStream } from './backup.js';
import { compareBytes, Database } from './database.js';
import { successor } from './bytes.js';
import { fromWasm, SiltError } from './errors.js';
import type { EntryBatch, EntryIterator } from './iterator.js';
import type { LockManagerLike } from './lock.js';
import {
  names,
  type ChangeHistory,
  type ChangeRecord,
  type Envelope,
  type Request,
  type Response,
  type SnapshotInfo,
  toWire,
  type TxnWrites,
  type Welcome,
} from './protocol.js';
import type { Snapshot } from './snapshot.js';
import { Transaction } from './transaction.js';
import { refreshStorageEstimate } from './storage.js';
import {
  apply,
  INGEST,
  keyOf,
  NOTHING,
  pack,
  type Packed,
  packValues,
  putRange,
  recordBytes,
  reserved,
  splitAroundReserved,
  withoutReserved,
} from './leader-batches.js';
import {
  advanceFloor,
  type Applied,
  isReserved,
  knownReport,
  parseRecord,
  RECORDS,
  recordFailure,
  recordKey,
  recordValue,
  repeat,
  RESERVED,
  RESERVED_END,
} from './write-records.js';

export { isReserved, RESERVED } from './write-records.js';

/**
 * A transaction a connection runs in the leader, and its writes' kinds and
 * keys for its change record (values left out: the record has none, and a
 * large transaction spills its values out of memory).
 */
interface LeaderTransaction {
  tx: Transaction;
  writes: WriteBatch;
}

const NO_VALUE = new Uint8Array(0);

/** How much change history the leader keeps for `watch({ since })`. */
export const HISTORY_RECORDS = 10_000;
export const HISTORY_BYTES = 4 << 20;

interface Client {
  id: string;
  snapshots: Map<number, Snapshot>;
  iterators: Map<number, EntryIterator>;
  /** Open transactions, by the connection's numbers for them. */
  transactions: Map<number, LeaderTransaction>;
  /** Exports being read, by id. */
  exports: Map<number, ReadableStreamDefaultReader<Uint8Array>>;
  post(r: Response, transfer: Transferable[]): void;
  channel: BroadcastChannel | undefined;
  port: MessagePort | undefined;
}

/** Counters of the leader, for tests and statistics. */
export interface LeaderCounters {
  /** Writes acknowledged without being applied: sent again after a failover, already recorded. */
  duplicateWrites: number;
  /** Followers attached, ever. */
  attached: number;
  /** Connections whose state went because they closed or died. */
  dropped: number;
}

export class Leader {
  #db: Database;
  #id: string;
  #names: ReturnType<typeof names>;
  #locks: LockManagerLike | undefined;
  #clients = new Map<string, Client>();
  /** Write records of connections, as read or last written (write-records.ts). */
  #records = new Map<string, Applied>();
  /**
   * Connections whose record in the database is behind the one here (its
   * write failed): written before any other write, so that nothing takes
   * a sequence number while an ingest's intent there is stale.
   */
  #dirty = new Set<string>();
  /**
   * Connections whose client lock this leader waits for (while they live),
   * and those of them that said goodbye (already dropped).
   */
  #watched = new Set<string>();
  #gone = new Set<string>();
  #history: ChangeRecord[] = [];
  #historyBytes = 0;
  #base: number;
  /** The latest sequence number when this leader began (before its sweep). */
  readonly #opened: number;
  #changes: BroadcastChannel | undefined;
  #queue: Promise<void> = Promise.resolve();
  #nextId = 1;
  #closed = false;
  readonly counters: LeaderCounters = { duplicateWrites: 0, attached: 0, dropped: 0 };

  constructor(db: Database, name: string, id: string, locks: LockManagerLike | undefined) {
    this.#db = db;
    this.#id = id;
    this.#names = names(name);
    this.#locks = locks;
    this.#base = db.latestSequence;
    this.#opened = this.#base;
    this.#changes = typeof BroadcastChannel === 'function' ? new BroadcastChannel(this.#names.changes) : undefined;
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

  /** The sequence number of the last write. */
  get latest(): number {
    return this.#db.latestSequence;
  }

  /**
   * The latest sequence number of the database as this leader found it:
   * what a crash of the previous leader left. Writes a watcher saw above
   * it were lost with that leader.
   */
  get opened(): number {
    return this.#opened;
  }

  /** @internal What this leader holds for connections now (for tests: nothing may be left behind). */
  get holding(): {
    clients: string[];
    snapshots: number;
    iterators: number;
    transactions: number;
    exports: number;
    importer: string | undefined;
    watched: number;
    gone: number;
  } {
    let snapshots = 0;
    let iterators = 0;
    let transactions = 0;
    let exports = 0;
    for (const c of this.#clients.values()) {
      snapshots += c.snapshots.size;
      iterators += c.iterators.size;
      transactions += c.transactions.size;
      exports += c.exports.size;
    }
    return {
      clients: [...this.#clients.keys()],
      snapshots,
      iterators,
      transactions,
      exports,
      importer: this.#importer,
      watched: this.#watched.size,
      gone: this.#gone.size,
    };
  }

  /**
   * Drops the write records of connections that are gone (their client
   * lock is free), and watches the others'. A failure to write leaves the
   * records as they are (for the next sweep): it does not stop this
   * leader from serving.
   */
  async sweep(): Promise<void> {
    if (this.#locks === undefined) return;
    const gone: Uint8Array[] = [];
    const alive: string[] = [];
    // The records' keys first: no iterator held across the awaits below.
    const keys: Uint8Array[] = [];
    const it = this.#db.iterator({ gte: RECORDS, lt: RESERVED_END });
    try {
      for (const [view] of it) keys.push(view.slice());
    } finally {
      it.release();
    }
    for (const k of keys) {
      const client = new TextDecoder().decode(k.subarray(RECORDS.length));
      const free = await new Promise<boolean>((resolve) => {
        this.#locks!.request(this.#names.clientLock(client), { ifAvailable: true }, (lock) => {
          resolve(lock !== null);
          return undefined;
        }).catch(() => resolve(false));
      });
      if (free) {
        gone.push(k);
        this.#records.delete(client);
        this.#dirty.delete(client);
      } else alive.push(client);
    }
    if (gone.length > 0) {
      const b = new WriteBatch();
      for (const k of gone) b.delete(k);
      try {
        this.#commit(b, NOTHING);
      } catch {
        // Storage refused (the settled intents written first, or the
        // deletes): the records stay, for a later sweep; this leader serves.
      }
    }
    for (const client of alive) this.#watchLiveness(client);
  }

  /** Serves this worker's own page as connection `id`. */
  addLocal(id: string, post: (r: Response, transfer: Transferable[]) => void): void {
    this.#clients.set(id, {
      id,
      snapshots: new Map(),
      iterators: new Map(),
      transactions: new Map(),
      exports: new Map(),
      post,
      channel: undefined,
      port: undefined,
    });
  }

  /**
   * Attaches follower `client`: serves it over `port` (a MessagePort the
   * broker handed over), or over its BroadcastChannel, and welcomes it. A
   * follower that attaches again keeps its snapshots and iterators, on its
   * new line.
   */
  attach(client: string, port?: MessagePort): void {
    if (this.#closed) return;
    let c = this.#clients.get(client);
    if (c === undefined) {
      c = {
        id: client,
        snapshots: new Map(),
        iterators: new Map(),
        transactions: new Map(),
        exports: new Map(),
        post: () => {},
        channel: undefined,
        port: undefined,
      };
      this.#clients.set(client, c);
      this.counters.attached++;
      this.#watchLiveness(client);
    }
    const state = c;
    const serve = (ev: MessageEvent<Envelope>) => {
      const m = ev.data;
      if (typeof m?.id === 'number' && m.request !== undefined) this.enqueue(state, m);
    };
    if (port !== undefined) {
      state.port?.close();
      state.port = port;
      state.post = (r, transfer) => port.postMessage(r, transfer);
      port.addEventListener('message', serve);
      port.start();
      port.postMessage({ t: 'welcome', leader: this.#id, seq: this.latest, opened: this.#opened } satisfies Welcome);
      return;
    }
    if (typeof BroadcastChannel !== 'function') return;
    if (state.channel === undefined) {
      const channel = new BroadcastChannel(this.#names.client(client));
      channel.addEventListener('message', serve);
      state.channel = channel;
    }
    const channel = state.channel;
    // A follower says hello on the channel only when it has no port to this
    // leader. No transfer list on a BroadcastChannel: buffers are cloned.
    state.port?.close();
    state.port = undefined;
    state.post = (r) => channel.postMessage(r);
    channel.postMessage({ t: 'welcome', leader: this.#id, seq: this.latest, opened: this.#opened } satisfies Welcome);
  }

  /** When `client`'s lock comes free, it is gone: drop what it held. */
  #watchLiveness(client: string): void {
    if (this.#locks === undefined || this.#watched.has(client)) return;
    this.#watched.add(client);
    this.#locks
      .request(this.#names.clientLock(client), {}, () => {
        // Gone: nothing of it is kept here any more (a goodbye dropped it already).
        this.#watched.delete(client);
        const bye = this.#gone.delete(client);
        if (!this.#closed && (!bye || this.#clients.has(client))) this.#enqueueTask(() => this.#drop(client, true));
        return undefined;
      })
      .catch(() => {
        this.#watched.delete(client);
        this.#gone.delete(client);
      });
  }

  /** Forgets connection `client`: its snapshots, iterators, channel and (with `record`) its write record. */
  /** The connection whose import is in progress. */
  #importer: string | undefined;

  #importOf(c: Client): ReturnType<typeof Database.internals> {
    if (this.#importer !== c.id) throw new SiltError('InvalidArgument', 'no import of this connection is in progress');
    return Database.internals(this.#db as Database<unknown, unknown>);
  }

  #abortImport(): void {
    this.#importer = undefined;
    try {
      Database.internals(this.#db as Database<unknown, unknown>).inner.importAbort();
    } catch {
      // Closed: nothing of the import is visible either way.
    }
  }

  #drop(client: string, record: boolean): void {
    const c = this.#clients.get(client);
    if (c !== undefined) {
      for (const s of c.snapshots.values()) s.release();
      for (const it of c.iterators.values()) it.release();
      for (const t of c.transactions.values()) t.tx.abort();
      for (const r of c.exports.values()) r.cancel().catch(() => {});
      if (this.#importer === c.id) this.#abortImport();
      c.channel?.close();
      c.port?.close();
      this.#clients.delete(client);
      this.counters.dropped++;
    }
    this.#records.delete(client);
    this.#dirty.delete(client);
    if (record && !this.#db.closed) {
      const b = new WriteBatch().delete(recordKey(client));
      this.#commit(b, NOTHING);
    }
  }

  #enqueueTask(task: () => void | Promise<void>): void {
    this.#queue = this.#queue.then(async () => {
      if (this.#closed) return;
      try {
        await task();
      } catch {
        // A background task (dropping a gone connection) that fails leaves
        // the record for the next leader's sweep.
      }
    });
  }

  /** Queues one request of `client`; its response goes back to it. */
  enqueue(client: Client | string, envelope: Envelope): void {
    const c = typeof client === 'string' ? this.#clients.get(client) : client;
    if (c === undefined) return;
    this.#queue = this.#queue.then(async () => {
      // Dropped meanwhile (gone, or said goodbye): nobody waits for the
      // answer, and nothing may be made or written for it any more.
      if (!this.#closed && this.#clients.get(c.id) !== c) return;
      let response: Response;
      let transfer: Transferable[] = [];
      try {
        if (this.#closed) throw new SiltError('Closed', 'the database was closed');
        const [value, t] = await this.#serve(c, envelope);
        response = { id: envelope.id, from: this.#id, ok: true, value };
        transfer = t;
      } catch (e) {
        response = { id: envelope.id, from: this.#id, ok: false, error: toWire(e) };
      }
      try {
        c.post(response, transfer);
      } catch {
        // The follower's channel was closed meanwhile.
      }
      // A follower's goodbye: answered first, then its line closes.
      if (envelope.request.op === 'bye' && response.ok && (c.channel !== undefined || c.port !== undefined) && !this.#closed) {
        if (this.#watched.has(c.id)) this.#gone.add(c.id);
        try {
          this.#drop(c.id, true);
        } catch {
          // Its record is left for the sweep of a later leader.
        }
      }
    });
  }

  /**
   * Serves request `id` of `c`. A write sent before (again, after a
   * failover, or twice) is answered from the connection's write record
   * (write-records.ts): its recorded outcome again, acknowledged if it was
   * applied, or run if it was not. A write that fails is recorded as
   * failed, so that sent again it fails again.
   */
  async #serve(c: Client, envelope: Envelope): Promise<[unknown, Transferable[]]> {
    const { id, request: r } = envelope;
    if (!WRITES.has(r.op)) {
      const known = this.#records.get(c.id);
      if (known !== undefined) advanceFloor(known, envelope.floor);
      return this.#handleWaitingForFiles(c, id, r);
    }
    const a = this.#recordOf(c.id);
    advanceFloor(a, envelope.floor);
    const done = repeat(a, id);
    if (done !== undefined) {
      this.counters.duplicateWrites++;
      if ('sync' in r && r.sync === true) this.#makeDurable(c.id);
      // An ingest whose report went for room: what is known of it.
      if (r.op === 'ingest' && done.value === undefined) return [knownReport(r.count, done.sequence), []];
      return [done.value, []];
    }
    try {
      return await this.#handleWaitingForFiles(c, id, r);
    } catch (e) {
      recordFailure(a, id, e);
      throw e;
    }
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
  #makeDurable(client: string): void {
    if (this.#foundDurable) return;
    if (this.#db.statistics().properties.immutableMemtables > 0) this.#db.flush();
    const a = this.#recordOf(client);
    const key = recordKey(client);
    const b = new WriteBatch();
    WriteBatch.putBookkeeping(b, key, recordValue(a, key.length, a.max, a.pending));
    this.#commit(b, NOTHING, { sync: true });
    this.#foundDurable = true;
  }

  /** Whether what this leader found in the database has been made durable (`#makeDurable`). */
  #foundDurable = false;

  /** Stops serving: every connection's state goes (the database is closed next). */
  async close(): Promise<void> {
    await this.#queue;
    // This worker's own page closes cleanly: its write record goes (a
    // follower's goes with its goodbye, or when it is gone).
    try {
      if (!this.#db.closed) this.#drop(this.#id, true);
    } catch {
      // Left for the next leader's sweep.
    }
    this.#stop();
  }

  /**
   * Stops at once, as a worker that is terminated does: requests that have
   * not started are not served, nothing more is answered or written, and
   * what connections held here (snapshots, iterators, transactions, an
   * export or import) is let go; write records stay, for the next leader.
   * Resolves once the request being served, if any, has ended.
   */
  async halt(): Promise<void> {
    this.#stop();
    await this.#queue;
  }

  #stop(): void {
    if (this.#closed && this.#clients.size === 0) return;
    this.#closed = true;
    for (const c of this.#clients.values()) {
      for (const s of c.snapshots.values()) s.release();
      for (const it of c.iterators.values()) it.release();
      for (const t of c.transactions.values()) t.tx.abort();
      for (const r of c.exports.values()) r.cancel().catch(() => {});
      if (this.#importer === c.id) this.#abortImport();
      c.channel?.close();
      c.port?.close();
    }
    this.#clients.clear();
    this.#changes?.close();
  }

  /** `client`'s write record (read from the database the first time). */
  #recordOf(client: string): Applied {
    let a = this.#records.get(client);
    if (a === undefined) {
      a = parseRecord(this.#db.get(recordKey(client)));
      this.#records.set(client, a);
    }
    return a;
  }

  /** Writes the records that are behind (`#dirty`), before any other write. */
  #writeDirty(): void {
    if (this.#dirty.size === 0) return;
    const b = new WriteBatch();
    for (const client of this.#dirty) {
      const a = this.#recordOf(client);
      const key = recordKey(client);
      WriteBatch.putBookkeeping(b, key, recordValue(a, key.length, a.max, a.pending));
    }
    const first = this.#db.latestSequence + 1;
    this.#db.write(b);
    this.#dirty.clear();
    this.#publish({ first, last: this.#db.latestSequence, ...NOTHING, from: this.#id });
  }

  /**
   * Applies `batch`, the updates of request `id` of `client`, with its
   * record, unless that request was applied already. The batch's own
   * buffer is written (the record appended to it), not a copy, unless a
   * range delete must be split around the reserved keys.
   */
  #write(client: string, id: number, batch: WriteBatch, sync: boolean | undefined): void {
    let b = batch;
    let changes = pack(b.encoded());
    if (changes === 'split') {
      b = splitAroundReserved(WriteBatch.decode(b.encoded()));
      changes = pack(b.encoded()) as Packed;
    }
    const a = this.#recordOf(client);
    const key = recordKey(client);
    WriteBatch.putBookkeeping(b, key, recordValue(a, key.length, id));
    this.#commit(b, changes, sync === undefined ? {} : { sync });
    a.max = id;
  }

  /** Writes `b` and publishes `changes`, its updates but the record. */
  #commit(b: WriteBatch, changes: Packed, options: { sync?: boolean } = {}): void {
    this.#writeDirty();
    const first = this.#db.latestSequence + 1;
    this.#db.write(b, options);
    this.#publish({ first, last: this.#db.latestSequence, ...changes, from: this.#id });
  }

  #publish(record: ChangeRecord): void {
    this.#history.push(record);
    this.#historyBytes += recordBytes(record);
    while (this.#history.length > HISTORY_RECORDS || (this.#historyBytes > HISTORY_BYTES && this.#history.length > 1)) {
      const old = this.#history.shift()!;
      this.#historyBytes -= recordBytes(old);
      this.#base = old.last;
    }
    try {
      this.#changes?.postMessage(record);
    } catch {
      // Closed: the leader is stopping.
    }
  }

  #history_(since: number | null): ChangeHistory {
    const latest = this.latest;
    if (since === null) return { base: latest, latest, records: [] };
    return { base: this.#base, latest, records: this.#history.filter((r) => r.last > since) };
  }

  #snapshotOf(c: Client, id: number): { snapshot?: Snapshot } {
    if (id === 0) return {};
    const s = c.snapshots.get(id);
    if (s === undefined) throw new SiltError('Released', 'this snapshot was released');
    return { snapshot: s };
  }

  /**
   * Transaction `txn` of `c`, with `writes` applied to it first: each
   * update checked as `#write` checks a batch's (reserved keys refused,
   * range deletes cut around them) and kept for the change record. A
   * failure ends the transaction (it may hold part of `writes`).
   */
  #transaction(c: Client, txn: number, writes: TxnWrites | undefined): LeaderTransaction {
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

  /**
   * Commits transaction `txn` of `c` as write request `id`: with its write
   * record, so that the commit sent again after a failover is recognised.
   */
  #commitTransaction(c: Client, id: number, txn: number, leader: string, writes: TxnWrites | undefined, sync: boolean | undefined): void {
    if (leader !== this.#id) {
      throw new SiltError('LeaderChanged', 'the tab that led the database went before this transaction committed; nothing of it was written');
    }
    const t = this.#transaction(c, txn, writes);
    const changes = pack(t.writes.encoded()) as Packed;
    const a = this.#recordOf(c.id);
    const key = recordKey(c.id);
    let first = 0;
    try {
      this.#writeDirty();
      first = this.#db.latestSequence + 1;
      Transaction.commitWith(t.tx, sync === undefined ? {} : { sync }, key, recordValue(a, key.length, id));
    } finally {
      // The connection's transaction ends with its commit, whatever the
      // outcome (a commit refused for want of pooled files leaves the
      // engine's open: end it here too).
      t.tx.abort();
      c.transactions.delete(txn);
    }
    a.max = id;
    this.#publish({ first, last: this.#db.latestSequence, ...changes, from: this.#id });
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
  async #ingest(client: string, id: number, bytes: Uint8Array, count: number, sorted: boolean): Promise<IngestReport> {
    const db = this.#db;
    const range = putRange(bytes);
    const a = this.#recordOf(client);
    const key = recordKey(client);
    if (range === undefined) {
      // Nothing to ingest: the record alone, with the (empty) report.
      const report = await db.ingest(WriteBatch.fromEncoded(bytes, count), { sorted });
      a.outcomes.push({ from: id, to: id, report });
      try {
        this.#write(client, id, new WriteBatch(), undefined);
      } catch (e) {
        a.outcomes.pop();
        throw e;
      }
      return report;
    }
    this.#writeDirty();
    const seq = db.latestSequence + 1;
    const intent = { id, seq, count };
    const b = new WriteBatch();
    WriteBatch.putBookkeeping(b, key, recordValue(a, key.length, a.max, intent));
    db.write(b);
    this.#publish({ first: seq, last: db.latestSequence, ...NOTHING, from: this.#id });
    a.pending = intent;
    let report: IngestReport;
    try {
      report = await db.ingest(WriteBatch.fromEncoded(bytes, count), { sorted });
    } catch (e) {
      a.pending = undefined;
      const first = db.latestSequence + 1;
      this.#rewrite(client);
      if (db.latestSequence >= first) this.#publish({ first, last: db.latestSequence, ...NOTHING, from: this.#id });
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
      last: db.latestSequence,
      kinds: new Uint8Array([INGEST]),
      bounds: new Uint32Array([0, lo.length, keys.length]),
      keys,
      from: this.#id,
    });
    return report;
  }

  /** Writes `client`'s record as it is here; if that fails, it is written before the next write. */
  #rewrite(client: string): void {
    const a = this.#recordOf(client);
    const key = recordKey(client);
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
   * `#handle`; a plain write (put, delete, deleteRange, merge, a batch)
   * refused for want of pooled files (`PoolExhausted`: more writes waited in
   * memory than the engine holds, which only a synchronous burst in this
   * worker can cause) wrote nothing, so it is run once more after the pool
   * keeper has added files. A transaction's commit is not retried here.
   */
  async #handleWaitingForFiles(c: Client, id: number, r: Request): Promise<[unknown, Transferable[]]> {
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
        this.#write(c.id, id, new WriteBatch().put(r.key, r.value), r.sync);
        return [undefined, []];
      case 'delete':
        this.#write(c.id, id, new WriteBatch().delete(r.key), r.sync);
        return [undefined, []];
      case 'deleteRange':
        this.#write(c.id, id, new WriteBatch().deleteRange(r.start, r.end), r.sync);
        return [undefined, []];
      case 'merge':
        this.#write(c.id, id, new WriteBatch().merge(r.key, r.value), r.sync);
        return [undefined, []];
      case 'txnBegin':
        if (c.transactions.has(r.txn)) throw new SiltError('InvalidArgument', `transaction ${r.txn} of this connection is open already`);
        c.transactions.set(r.txn, { tx: db.begin(), writes: new WriteBatch() });
        return [undefined, []];
      case 'txnGet': {
        const t = this.#transaction(c, r.txn, r.writes);
        const key = keyOf(r.key);
        if (isReserved(key)) throw reserved('the key');
        const v = r.forUpdate ? t.tx.getForUpdate(key) : t.tx.get(key);
        if (v === undefined) return [undefined, []];
        countCopied(v.length);
        return [v, [v.buffer]];
      }
      case 'txnMultiGet': {
        const t = this.#transaction(c, r.txn, r.writes);
        const keys = r.keys.map(keyOf);
        for (const k of keys) if (isReserved(k)) throw reserved('a key');
        return packValues(t.tx.multiGet(keys));
      }
      case 'txnIterator': {
        const t = this.#transaction(c, r.txn, r.writes);
        const iid = this.#nextId++;
        c.iterators.set(iid, t.tx.iterator(r.options));
        return [iid, []];
      }
      case 'txnCommit':
        this.#commitTransaction(c, id, r.txn, r.leader, r.writes, r.sync);
        return [undefined, []];
      case 'txnAbort':
        c.transactions.get(r.txn)?.tx.abort();
        c.transactions.delete(r.txn);
        return [undefined, []];
      case 'write':
        // The request's own buffer (a clone that arrived here) becomes the batch.
        this.#write(c.id, id, WriteBatch.fromEncoded(r.batch, r.count), r.sync);
        return [undefined, []];
      case 'ingest':
        return [await this.#ingest(c.id, id, r.batch, r.count, r.sorted), []];
      case 'compactRange':
        await db.compactRange(r.begin, r.end);
        return [undefined, []];
      case 'get': {
        const key = keyOf(r.key);
        if (isReserved(key)) throw reserved('the key');
        // get's copy is in a buffer of its own: transferred, not copied again.
        const v = db.get(key, this.#snapshotOf(c, r.snapshot));
        return v === undefined ? [undefined, []] : [v, [v.buffer]];
      }
      case 'multiGet': {
        const keys = r.keys.map(keyOf);
        for (const k of keys) if (isReserved(k)) throw reserved('a key');
        using result = db.multiGet(keys, this.#snapshotOf(c, r.snapshot));
        return packValues(Array.from({ length: result.length }, (_, i) => result.get(i)));
      }
      case 'snapshot': {
        const sid = this.#nextId++;
        c.snapshots.set(sid, db.snapshot());
        const info: SnapshotInfo = { id: sid, seq: db.latestSequence };
        return [info, []];
      }
      case 'releaseSnapshot':
        c.snapshots.get(r.snapshot)?.release();
        c.snapshots.delete(r.snapshot);
        return [undefined, []];
      case 'iterator': {
        const iid = this.#nextId++;
        c.iterators.set(iid, db.iterator({ ...r.options, ...this.#snapshotOf(c, r.snapshot) }));
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
        return [{ ...db.statistics(), tabs: { ...this.counters, connections: this.#clients.size } }, []];
      case 'verify':
        return [db.verify(), []];
      case 'latestSequence':
        return [db.latestSequence, []];
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
        this.#write(c.id, id, b, r.sync);
        return [undefined, []];
      }
      case 'count': {
        const at = this.#snapshotOf(c, r.snapshot);
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
        if (this.#importer !== undefined) throw new SiltError('Busy', 'another connection is importing into this database');
        try {
          Database.internals(db as Database<unknown, unknown>).inner.importStart();
        } catch (e) {
          throw fromWasm(e);
        }
        this.#importer = c.id;
        return [undefined, []];
      }
      case 'importPush': {
        const { inner, ready } = this.#importOf(c);
        await ready();
        try {
          inner.importPush(r.bytes);
        } catch (e) {
          this.#importer = undefined; // the engine ended it
          throw fromWasm(e);
        }
        return [undefined, []];
      }
      case 'importFinish': {
        const { inner, ready, afterWrite } = this.#importOf(c);
        this.#importer = undefined;
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
        if (this.#importer === c.id) this.#abortImport();
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
        return [this.#history_(r.since), []];
      case 'bye':
        // Dropped once answered (enqueue).
        return [undefined, []];
    }
  }
}

/** Requests that write: recorded with the connection's write record, answered from it when sent again. */
const WRITES = new Set<Request['op']>(['put', 'delete', 'deleteRange', 'merge', 'write', 'clear', 'ingest', 'txnCommit']);
