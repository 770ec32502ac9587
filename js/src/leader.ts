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
 * atomic batch, under a reserved key of the connection
 * (`RESERVED` + `client/<id>`). A write sent again to a new leader after the
 * old one went (its answer lost) finds its id recorded and is acknowledged
 * without being applied again. A record goes when its connection closes or
 * dies (its client lock is then free).
 *
 * Every committed write is published as a change record on the changes
 * channel and kept in a bounded history for `watch({ since })`.
 */

import { WriteBatch, type BatchOp } from './batch.js';
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
  type PackedValues,
  type Request,
  type Response,
  type SnapshotInfo,
  toWire,
  type TxnWrites,
} from './protocol.js';
import type { Snapshot } from './snapshot.js';
import { Transaction } from './transaction.js';
import { refreshStorageEstimate } from './storage.js';

const utf8 = new TextEncoder();

/**
 * Keys from these bytes on (eight 0xff bytes, then `siltdb/`) are the
 * package's own in a database shared through `connect()`: its write
 * records. `connect()` refuses to read or write them and hides them from
 * iterators; a range delete over them leaves them be.
 */
export const RESERVED = Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...utf8.encode('siltdb/')]);
/** The first key after every reserved key. */
const RESERVED_END = RESERVED.slice();
RESERVED_END[RESERVED_END.length - 1]! += 1;
const RECORDS = Uint8Array.from([...RESERVED, ...utf8.encode('client/')]);

export function isReserved(key: Uint8Array): boolean {
  if (key.length < RESERVED.length || key[0] !== 0xff) return false;
  for (let i = 0; i < RESERVED.length; i++) if (key[i] !== RESERVED[i]) return false;
  return true;
}

function compare(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

function recordKey(client: string): Uint8Array {
  const id = utf8.encode(client);
  const k = new Uint8Array(RECORDS.length + id.length);
  k.set(RECORDS);
  k.set(id, RECORDS.length);
  return k;
}

/** A write record's value: the request id and the time it was written (ms), as float64s. */
function recordValue(id: number): Uint8Array {
  const v = new Float64Array([id, Date.now()]);
  return new Uint8Array(v.buffer);
}

function recordId(value: Uint8Array): number {
  if (value.length < 8) return 0;
  return new DataView(value.buffer, value.byteOffset, value.byteLength).getFloat64(0, true);
}

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

function reserved(what: string): SiltError {
  return new SiltError('InvalidArgument', `${what} is reserved: keys starting with eight 0xff bytes and "siltdb/" hold connect()'s write records`);
}

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
  #applied = new Map<string, number>();
  /** Connections whose client lock this leader waits for, and those it dropped. */
  #watched = new Set<string>();
  #gone = new Set<string>();
  #history: ChangeRecord[] = [];
  #historyBytes = 0;
  #base: number;
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
    this.#changes = typeof BroadcastChannel === 'function' ? new BroadcastChannel(this.#names.changes) : undefined;
  }

  /** The sequence number of the last write. */
  get latest(): number {
    return this.#db.latestSequence;
  }

  /**
   * Drops the write records of connections that are gone (their client
   * lock is free), and watches the others'.
   */
  async sweep(): Promise<void> {
    const gone: Uint8Array[] = [];
    const alive: string[] = [];
    const it = this.#db.iterator({ gte: RECORDS, lt: RESERVED_END });
    try {
      for (const [view] of it) {
        const k = view.slice();
        const client = new TextDecoder().decode(k.subarray(RECORDS.length));
        if (this.#locks === undefined) continue;
        const free = await new Promise<boolean>((resolve) => {
          this.#locks!.request(this.#names.clientLock(client), { ifAvailable: true }, (lock) => {
            resolve(lock !== null);
            return undefined;
          }).catch(() => resolve(false));
        });
        if (free) gone.push(k);
        else alive.push(client);
      }
    } finally {
      it.release();
    }
    if (gone.length > 0) {
      const b = new WriteBatch();
      for (const k of gone) b.delete(k);
      this.#commit(b, NOTHING);
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
      port.postMessage({ t: 'welcome', leader: this.#id, seq: this.latest });
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
    channel.postMessage({ t: 'welcome', leader: this.#id, seq: this.latest });
  }

  /** When `client`'s lock comes free, it is gone: drop what it held. */
  #watchLiveness(client: string): void {
    if (this.#watched.has(client)) return;
    this.#watched.add(client);
    this.#locks
      ?.request(this.#names.clientLock(client), {}, () => {
        if (!this.#closed) this.#enqueueTask(() => this.#drop(client, true));
        return undefined;
      })
      .catch(() => {});
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
    // Once: a follower that said goodbye also frees its client lock later.
    if (this.#gone.has(client)) return;
    this.#gone.add(client);
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
    this.#applied.delete(client);
    if (record && !this.#db.closed) {
      const b = new WriteBatch().delete(recordKey(client));
      this.#commit(b, NOTHING);
    }
  }

  #enqueueTask(task: () => void | Promise<void>): void {
    this.#queue = this.#queue.then(async () => {
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
      let response: Response;
      let transfer: Transferable[] = [];
      try {
        if (this.#closed) throw new SiltError('Closed', 'the database was closed');
        const [value, t] = await this.#handleWaitingForFiles(c, envelope.id, envelope.request);
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
    });
  }

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

  #appliedOf(client: string): number {
    let id = this.#applied.get(client);
    if (id === undefined) {
      const v = this.#db.getCopy(recordKey(client));
      id = v === undefined ? 0 : recordId(v);
      this.#applied.set(client, id);
    }
    return id;
  }

  /**
   * Applies `batch`, the updates of request `id` of `client`, with its
   * record, unless that request was applied already. The batch's own
   * buffer is written (the record appended to it), not a copy, unless a
   * range delete must be split around the reserved keys.
   */
  #write(client: string, id: number, batch: WriteBatch, sync: boolean | undefined): void {
    if (id <= this.#appliedOf(client)) {
      this.counters.duplicateWrites++;
      return;
    }
    let b = batch;
    let changes = pack(b.encoded());
    if (changes === 'split') {
      b = splitAroundReserved(WriteBatch.decode(b.encoded()));
      changes = pack(b.encoded()) as Packed;
    }
    WriteBatch.putBookkeeping(b, recordKey(client), recordValue(id));
    this.#commit(b, changes, sync === undefined ? {} : { sync });
    this.#applied.set(client, id);
  }

  /** Writes `b` and publishes `changes`, its updates but the record. */
  #commit(b: WriteBatch, changes: Packed, options: { sync?: boolean } = {}): void {
    const first = this.#db.latestSequence + 1;
    this.#db.write(b, options);
    this.#publish({ first, last: this.#db.latestSequence, ...changes });
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
    if (id <= this.#appliedOf(c.id)) {
      this.counters.duplicateWrites++;
      return;
    }
    if (leader !== this.#id) {
      throw new SiltError('LeaderChanged', 'the tab that led the database went before this transaction committed; nothing of it was written');
    }
    const t = this.#transaction(c, txn, writes);
    const changes = pack(t.writes.encoded()) as Packed;
    const first = this.#db.latestSequence + 1;
    try {
      Transaction.commitWith(t.tx, sync === undefined ? {} : { sync }, recordKey(c.id), recordValue(id));
    } finally {
      // The connection's transaction ends with its commit, whatever the
      // outcome (a commit refused for want of pooled files leaves the
      // engine's open: end it here too).
      t.tx.abort();
      c.transactions.delete(txn);
    }
    this.#publish({ first, last: this.#db.latestSequence, ...changes });
    this.#applied.set(c.id, id);
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
      case 'ingest': {
        if (id <= this.#appliedOf(c.id)) {
          // Sent again after a failover and already applied: applying it
          // again would overwrite whatever was written since.
          this.counters.duplicateWrites++;
          return [{ keys: 0, files: 0, bytes: 0, level: 0, sequence: 0, flushedMemtables: false }, []];
        }
        const range = putRange(r.batch);
        const report = await db.ingest(WriteBatch.fromEncoded(r.batch, r.count), { sorted: r.sorted });
        const first = report.keys > 0 ? report.sequence : db.latestSequence + 1;
        // Its write record, right after it (an ingest takes puts only): a
        // crash between the two leaves the one case where a resent ingest
        // is applied twice.
        const record = new WriteBatch();
        WriteBatch.putBookkeeping(record, recordKey(c.id), recordValue(id));
        db.write(record);
        this.#applied.set(c.id, id);
        // One change over the keys' range, not one per key; its sequence
        // numbers cover the write record too, as a write's do.
        let keys = new Uint8Array(0);
        let kinds = new Uint8Array(0);
        let bounds = new Uint32Array([0]);
        if (range !== undefined && report.keys > 0) {
          const [lo, hi] = range;
          const end = successor(hi);
          keys = new Uint8Array(lo.length + end.length);
          keys.set(lo);
          keys.set(end, lo.length);
          kinds = new Uint8Array([INGEST]);
          bounds = new Uint32Array([0, lo.length, keys.length]);
        }
        this.#publish({ first, last: db.latestSequence, kinds, bounds, keys });
        return [report, []];
      }
      case 'compactRange':
        await db.compactRange(r.begin, r.end);
        return [undefined, []];
      case 'get': {
        const key = keyOf(r.key);
        if (isReserved(key)) throw reserved('the key');
        // A copy in a buffer of its own, to transfer (getCopy's copies may
        // share a chunk with others, copies.ts).
        using v = db.get(key, this.#snapshotOf(c, r.snapshot));
        if (v === undefined) return [undefined, []];
        const copy = v.bytes.slice();
        countCopied(copy.length);
        return [copy, [copy.buffer]];
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
        if (c.channel !== undefined || c.port !== undefined) this.#drop(c.id, true);
        return [undefined, []];
    }
  }
}

/** Values for the page: one buffer (one copy), transferred, and their lengths (-1: none). */
function packValues(values: (Uint8Array | undefined)[]): [PackedValues, Transferable[]] {
  const lens = new Int32Array(values.length);
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    lens[i] = v === undefined ? -1 : v.length;
    total += v?.length ?? 0;
  }
  const bytes = new Uint8Array(total);
  countCopied(total);
  let at = 0;
  for (const v of values) {
    if (v === undefined) continue;
    bytes.set(v, at);
    at += v.length;
  }
  return [{ bytes, lens }, [bytes.buffer, lens.buffer]];
}

function keyOf(k: string | Uint8Array): Uint8Array {
  return typeof k === 'string' ? utf8.encode(k) : k;
}

/** `batch` without the reserved keys: itself, a copy, or undefined when none is left. */
function withoutReserved(batch: EntryBatch): { bytes: Uint8Array; offsets: Uint32Array } | undefined {
  const o = batch.offsets;
  const b = batch.bytes;
  let hidden = 0;
  for (let i = 0; i < batch.length; i++) {
    if (b[o[2 * i]!] === 0xff && isReserved(b.subarray(o[2 * i]!, o[2 * i + 1]!))) hidden++;
  }
  if (hidden === 0) return { bytes: b, offsets: o };
  if (hidden === batch.length) return undefined;
  const bytes = new Uint8Array(b.length);
  const offsets = new Uint32Array(2 * (batch.length - hidden) + 1);
  let at = 0;
  let j = 0;
  for (let i = 0; i < batch.length; i++) {
    const ks = o[2 * i]!;
    const vs = o[2 * i + 1]!;
    const ve = o[2 * i + 2]!;
    if (b[ks] === 0xff && isReserved(b.subarray(ks, vs))) continue;
    offsets[j++] = at;
    bytes.set(b.subarray(ks, vs), at);
    at += vs - ks;
    offsets[j++] = at;
    bytes.set(b.subarray(vs, ve), at);
    at += ve - vs;
  }
  offsets[j] = at;
  return { bytes: bytes.subarray(0, at), offsets };
}

type Packed = Omit<ChangeRecord, 'first' | 'last'>;

/** The changes of a write that changes nothing the app sees (a record dropped). */
const NOTHING: Packed = { kinds: new Uint8Array(0), bounds: new Uint32Array(1), keys: new Uint8Array(0) };

function recordBytes(r: ChangeRecord): number {
  return r.keys.length + r.bounds.byteLength + r.kinds.length + 32;
}

/** A change record's kind for an ingest (a key range, as a delete range's). */
const INGEST = 0x04;
const PUT = 0x01;
const DELETE = 0x00;
const MERGE = 0x02;
const DELETE_RANGE = 0x03;

/** A write batch that WriteBatch did not encode. */
function malformed(): SiltError {
  return new SiltError('InvalidArgument', 'a write batch is malformed (not encoded by WriteBatch)');
}

/** The little-endian u32 of an encoded batch at `at`. */
function u32At(bytes: Uint8Array, at: number): number {
  if (at + 4 > bytes.length) throw malformed();
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
}

/**
 * The change record of an encoded batch (see `ChangeRecord`), in two passes
 * and three allocations; or 'split' when a range delete covers reserved
 * keys. Throws `InvalidArgument` for a reserved key or a malformed batch.
 */
function pack(bytes: Uint8Array): Packed | 'split' {
  const bad = malformed;
  const u32 = (at: number): number => u32At(bytes, at);
  // Pass 1: count, size, check.
  let n = 0;
  let keyBytes = 0;
  for (let at = 0; at < bytes.length; ) {
    const tag = bytes[at]!;
    if (tag === PUT || tag === MERGE || tag === DELETE_RANGE) {
      const a = u32(at + 1);
      const b = u32(at + 5);
      const k = at + 9;
      if (k + a + b > bytes.length) throw bad();
      if (tag !== DELETE_RANGE) {
        if (bytes[k] === 0xff && isReserved(bytes.subarray(k, k + a))) throw reserved('the key');
        keyBytes += a;
      } else {
        if (overlapsReserved(bytes.subarray(k, k + a), bytes.subarray(k + a, k + a + b))) return 'split';
        keyBytes += a + b;
      }
      at = k + a + b;
    } else if (tag === DELETE) {
      const a = u32(at + 1);
      const k = at + 5;
      if (k + a > bytes.length) throw bad();
      if (bytes[k] === 0xff && isReserved(bytes.subarray(k, k + a))) throw reserved('the key');
      keyBytes += a;
      at = k + a;
    } else {
      throw bad();
    }
    n++;
  }
  // Pass 2: copy the keys.
  const kinds = new Uint8Array(n);
  const bounds = new Uint32Array(2 * n + 1);
  const keys = new Uint8Array(keyBytes);
  let w = 0;
  let i = 0;
  for (let at = 0; at < bytes.length; i++) {
    const tag = bytes[at]!;
    kinds[i] = tag;
    bounds[2 * i] = w;
    if (tag === DELETE) {
      const a = u32(at + 1);
      keys.set(bytes.subarray(at + 5, at + 5 + a), w);
      w += a;
      bounds[2 * i + 1] = w;
      at += 5 + a;
    } else {
      const a = u32(at + 1);
      const b = u32(at + 5);
      keys.set(bytes.subarray(at + 9, at + 9 + a), w);
      w += a;
      bounds[2 * i + 1] = w;
      if (tag === DELETE_RANGE) {
        keys.set(bytes.subarray(at + 9 + a, at + 9 + a + b), w);
        w += b;
      }
      at += 9 + a + b;
    }
  }
  bounds[2 * n] = w;
  return { kinds, bounds, keys };
}

function overlapsReserved(start: Uint8Array, end: Uint8Array): boolean {
  return compare(start, RESERVED_END) < 0 && compare(end, RESERVED) > 0;
}

/** Makes update `op` in `to` (a batch, or a transaction). */
interface Updatable {
  put(key: Uint8Array, value: Uint8Array): unknown;
  merge(key: Uint8Array, operand: Uint8Array): unknown;
  delete(key: Uint8Array): unknown;
  deleteRange(start: Uint8Array, end: Uint8Array): unknown;
}

function apply(to: Updatable, op: BatchOp): void {
  if (op.kind === 'put') to.put(op.key, op.value);
  else if (op.kind === 'merge') to.merge(op.key, op.value);
  else if (op.kind === 'delete') to.delete(op.key);
  else to.deleteRange(op.key, op.end);
}

/**
 * The smallest and largest key of an encoded batch of puts (`undefined`
 * when empty); refuses any other update, and reserved keys, as writes do.
 */
function putRange(bytes: Uint8Array): [Uint8Array, Uint8Array] | undefined {
  const bad = malformed;
  const u32 = (at: number): number => u32At(bytes, at);
  let lo: Uint8Array | undefined;
  let hi: Uint8Array | undefined;
  for (let at = 0; at < bytes.length; ) {
    if (bytes[at] !== PUT) throw new SiltError('InvalidArgument', 'ingest takes puts only');
    const a = u32(at + 1);
    const b = u32(at + 5);
    const k = at + 9;
    if (k + a + b > bytes.length) throw bad();
    const key = bytes.subarray(k, k + a);
    if (key[0] === 0xff && isReserved(key)) throw reserved('the key');
    if (lo === undefined || compare(key, lo) < 0) lo = key;
    if (hi === undefined || compare(key, hi) > 0) hi = key;
    at = k + a + b;
  }
  return lo === undefined ? undefined : [lo.slice(), hi!.slice()];
}

/** `ops` again, with each range delete over reserved keys cut into the parts around them. */
function splitAroundReserved(ops: BatchOp[]): WriteBatch {
  const b = new WriteBatch();
  for (const op of ops) {
    if (op.kind !== 'deleteRange' || !overlapsReserved(op.key, op.end)) apply(b, op);
    else {
      if (compare(op.key, RESERVED) < 0) b.deleteRange(op.key, RESERVED);
      if (compare(op.end, RESERVED_END) > 0) b.deleteRange(compare(op.key, RESERVED_END) > 0 ? op.key : RESERVED_END, op.end);
    }
  }
  return b;
}
