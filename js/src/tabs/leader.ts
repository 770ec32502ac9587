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
 * carry the record, is written between two records (`LeaderWriter.ingest`).
 * A record goes when its connection closes or dies (its client lock is then
 * free).
 *
 * Every committed write is published as a change record to the connections
 * that watch, each on its own line, and kept in a bounded history for
 * `watch({ since })`.
 *
 * This file keeps the connections (who is attached, on which line, what
 * each holds, whether it lives) and the queue of their requests;
 * leader-requests.ts serves each request, and leader-writer.ts writes with
 * the records and publishes the changes.
 */

import type { Database } from '../local/database.js';
import { SiltError } from '../core/errors.js';
import type { LockManagerLike } from '../core/web-locks.js';
import type { Client, LeaderCounters } from './leader-clients.js';
import { LeaderRequests, rocksdbReportOf, WRITTEN_NOW } from './leader-requests.js';
import type { Served } from './operations.js';
import { LeaderWriter } from './leader-writer.js';
import { withoutValues } from './change-values.js';
import { ADVANCES, ANSWERED_AGAIN, ANSWERS_KEPT, MOVED, movedOf } from './leader-kept.js';
import { type ChangeMessage, type ChangeRecord, names, type Envelope, PROTOCOL, type Response, toWire, type Welcome, WRITES } from './protocol.js';
import { toWireMessage } from './answer-wire.js';
import { type Inbox, readRequests, type Refusal } from './leader-inbox.js';
import { batchedGets, runsOfGets } from './leader-gets.js';
import { Answers, post } from './leader-answers.js';
import { advanceFloor, type Applied, knownReport, RECORDS, recordFailure, repeat } from './write-records.js';

export { isReserved, RESERVED } from './write-records.js';
export type { LeaderCounters } from './leader-clients.js';

export class Leader {
  #db: Database;
  #id: string;
  #names: ReturnType<typeof names>;
  #locks: LockManagerLike | undefined;
  #clients = new Map<string, Client>();
  /** The database's writes, with the connections' write records (leader-writer.ts). */
  #writer: LeaderWriter;
  /** How each request is served (leader-requests.ts). */
  #requests: LeaderRequests;
  /**
   * Connections whose client lock this leader waits for (while they live),
   * and those of them that said goodbye (already dropped).
   */
  #watched = new Set<string>();
  #gone = new Set<string>();
  #queue: Promise<void> = Promise.resolve();
  /** Tasks chained on `#queue` and not ended: at 0, gets and plain writes are served at once (`#servedNow`). */
  #queued = 0;
  #closed = false;
  readonly counters: LeaderCounters = { duplicateWrites: 0, attached: 0, dropped: 0, malformed: 0 };

  constructor(db: Database, name: string, id: string, locks: LockManagerLike | undefined) {
    this.#db = db;
    this.#id = id;
    this.#names = names(name);
    this.#locks = locks;
    this.#writer = new LeaderWriter(
      db,
      id,
      (r) => this.#publish(r),
      () => this.#valuesWanted(),
    );
    this.#requests = new LeaderRequests(db, this.#writer, () => ({ ...this.counters, connections: this.#clients.size, ...this.#watchingCount() }));
  }

  /** This leader's id (its connection's). */
  get id(): string {
    return this.#id;
  }

  /** The sequence number of the last write. */
  get latest(): number {
    return this.#db.latestSequence();
  }

  /**
   * The latest sequence number of the database as this leader found it:
   * what a crash of the previous leader left. Writes a watcher saw above
   * it were lost with that leader.
   */
  get opened(): number {
    return this.#writer.opened;
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
      importer: this.#requests.importer,
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
    const keys = this.#writer.recordKeys();
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
        this.#writer.forgetRecord(client);
      } else alive.push(client);
    }
    if (gone.length > 0) this.#writer.deleteRecords(gone);
    for (const client of alive) this.#watchLiveness(client);
  }

  /** Whether a connection that watches asked for values (change-values.ts): the writer reads them only then. */
  #valuesWanted(): boolean {
    for (const c of this.#clients.values()) if (c.watching && c.values) return true;
    return false;
  }

  /** How many connections watch, and with values (`statistics().tabs`). */
  #watchingCount(): { watching: number; watchingValues: number } {
    let watching = 0;
    let watchingValues = 0;
    for (const c of this.#clients.values()) {
      if (c.watching) watching++;
      if (c.watching && c.values) watchingValues++;
    }
    return { watching, watchingValues };
  }

  /** Posts change record `record` to every connection that watches. */
  #publish(record: ChangeRecord): void {
    const m: ChangeMessage = { t: 'change', record };
    const keysOnly: ChangeMessage = record.values === undefined ? m : { t: 'change', record: withoutValues(record) };
    for (const c of this.#clients.values()) {
      if (!c.watching) continue;
      try {
        c.send(c.values ? m : keysOnly);
      } catch {
        // Its channel closed meanwhile: it is going.
      }
    }
  }

  /** Serves this worker's own page as connection `id`: answers go to `post`, change records to `send`. */
  addLocal(id: string, post: (r: Response | Response[], transfer: Transferable[]) => void, send: (m: ChangeMessage) => void = () => {}): void {
    this.#clients.set(id, {
      id,
      snapshots: new Map(),
      iterators: new Map(),
      transactions: new Map(),
      exports: new Map(),
      answered: new Map(),
      floor: 0,
      post,
      send,
      watching: false,
      values: false,
      channel: undefined,
      port: undefined,
      version: PROTOCOL,
    });
  }

  /**
   * Attaches follower `client`: serves it over `port` (a MessagePort the
   * broker handed over), or over its BroadcastChannel, and welcomes it. A
   * follower that attaches again keeps its snapshots and iterators, on its
   * new line.
   */
  attach(client: string, port: MessagePort | undefined, version: number): void {
    if (this.#closed || typeof client !== 'string') return;
    let c = this.#clients.get(client);
    if (c === undefined) {
      c = {
        id: client,
        snapshots: new Map(),
        iterators: new Map(),
        transactions: new Map(),
        exports: new Map(),
        answered: new Map(),
        floor: 0,
        post: () => {},
        send: () => {},
        watching: false,
        values: false,
        channel: undefined,
        port: undefined,
        version,
      };
      this.#clients.set(client, c);
      this.counters.attached++;
      this.#watchLiveness(client);
    }
    const state = c;
    state.version = version;
    const serve = (ev: MessageEvent<unknown>) => this.receive(state, ev.data);
    if (port !== undefined) {
      if (state.channel !== undefined) {
        // It said hello: it keeps to its channel with this leader, and has
        // closed its attempts by port (one handed over late: a broker that
        // held it until this leader registered again, connection.ts).
        port.close();
        return;
      }
      state.port?.close();
      state.port = port;
      state.post = (r, transfer) => {
        const [m, t] = toWireMessage(r, false, transfer);
        port.postMessage(m, t);
      };
      state.send = (m) => port.postMessage(m);
      port.addEventListener('message', serve);
      port.start();
      port.postMessage({ t: 'welcome', leader: this.#id, seq: this.latest, opened: this.#writer.opened, v: PROTOCOL } satisfies Welcome);
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
    state.post = (r) => channel.postMessage(toWireMessage(r, true, [])[0]);
    state.send = (m) => channel.postMessage(m);
    channel.postMessage({ t: 'welcome', leader: this.#id, seq: this.latest, opened: this.#writer.opened, v: PROTOCOL } satisfies Welcome);
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
  #drop(client: string, record: boolean): void {
    const c = this.#clients.get(client);
    if (c !== undefined) {
      this.#requests.letGo(c);
      this.#clients.delete(client);
      this.counters.dropped++;
    }
    this.#writer.forget(client, record);
  }

  /**
   * Runs `task` once every task chained before it has ended (its promise
   * settled: a task that failed does not stop the ones after it).
   */
  #chain(task: () => void | Promise<void>): void {
    this.#queued++;
    const done = () => {
      this.#queued--;
    };
    this.#queue = this.#queue.then(task).then(done, done);
  }

  #enqueueTask(task: () => void | Promise<void>): void {
    this.#chain(async () => {
      if (this.#closed) return;
      try {
        await task();
      } catch {
        // A background task (dropping a gone connection) that fails leaves
        // the record for the next leader's sweep.
      }
    });
  }

  /**
   * Queues the requests of one message of `client` (an envelope, or the
   * envelopes of calls issued together: outbox.ts), in order; their
   * answers go back to it in one message too, once all are served.
   */
  receive(client: Client | string, message: unknown): void {
    const c = typeof client === 'string' ? this.#clients.get(client) : client;
    if (c === undefined) return;
    let inbox: Inbox;
    try {
      inbox = readRequests(message, c.version);
    } catch {
      // A message no check foresaw (a getter that throws, a revoked proxy): dropped.
      this.counters.malformed++;
      return;
    }
    const { items, refusals, dropped } = inbox;
    this.counters.malformed += dropped + refusals;
    if (items.length === 0) return;
    const answers = items.length > 1 ? new Answers(c, items.length) : undefined;
    // In order: a refused write's failure is recorded before the writes sent after it are applied.
    for (let i = 0; i < items.length; ) {
      const item = items[i]!;
      if ('refused' in item) {
        this.#chain(() => this.#refuse(c, item, answers));
        i++;
        continue;
      }
      let j = i + 1;
      while (j < items.length && !('refused' in items[j]!)) j++;
      for (const part of runsOfGets(items.slice(i, j) as Envelope[])) {
        // Nothing before them waits: gets and plain writes are served now, not in a later microtask.
        if (this.#queued === 0 && this.#servedNow(c, part, answers, true)) continue;
        this.#chain(async () => {
          // Gets (one batched MultiGet for a run of them) at once; else each
          // served alone (a write that could not be served now included:
          // tried once more there, after files are added if it waits for them).
          if (this.#servedNow(c, part, answers, false)) return;
          for (const e of Array.isArray(part) ? part : [part]) await this.#answer(c, e, answers);
        });
      }
      i = j;
    }
  }

  /**
   * Serves `part` at once if its serving waits on nothing: gets (a get, or
   * a run of them read with one MultiGet: leader-gets.ts) and a plain
   * write sent for the first time (`LeaderRequests.writeNow`, with
   * `writes`); false if it is not, or
   * cannot be served so (then it goes on the queue). Its answer is posted
   * in this task, with no promise between.
   */
  #servedNow(c: Client, part: Envelope | Envelope[], answers: Answers | undefined, writes: boolean): boolean {
    if (this.#closed || this.#clients.get(c.id) !== c) return false;
    let got: (Served | Error)[] | undefined;
    if (Array.isArray(part)) got = batchedGets(this.#db, c, part);
    else if (part.request.op === 'get') {
      try {
        got = [this.#requests.serveNow(c, part.id, part.request)];
      } catch (e) {
        got = [e instanceof Error ? e : new SiltError('Internal', String(e))];
      }
    } else if (writes && WRITTEN_NOW.has(part.request.op)) {
      const served = this.#requests.writeNow(c, part);
      if (served !== undefined) got = [served];
    }
    if (got === undefined) return false;
    const run = Array.isArray(part) ? part : [part];
    for (let k = 0; k < run.length; k++) void this.#answer(c, run[k]!, answers, got[k]).catch(() => {});
    return true;
  }

  /** Answers a request refused for its shape or version (leader-inbox.ts); a write's failure goes in its connection's record. */
  #refuse(c: Client, r: Refusal, answers: Answers | undefined): void {
    if (this.#clients.get(c.id) !== c) {
      answers?.skip();
      return;
    }
    try {
      if (r.write && !this.#closed) recordFailure(this.#writer.recordOf(c.id), r.refused, r.error);
    } catch {
      // The record could not be read: the refusal stands, recorded once it
      // can be (nothing is if the database closed meanwhile).
      this.#writer.failedUnread(c.id, r.refused, r.error);
    }
    const response: Response = { id: r.refused, from: this.#id, ok: false, error: toWire(r.error) };
    if (answers !== undefined) answers.add(response, []);
    else post(c, response, []);
  }

  /**
   * Serves one request of `c` (or answers it with `served`, what a batch
   * read for it); its response goes back to it (with the others of
   * `answers`).
   */
  async #answer(c: Client, envelope: Envelope, answers: Answers | undefined, served?: Served | Error): Promise<void> {
    // Dropped meanwhile (gone, or said goodbye): nobody waits for the
    // answer, and nothing may be made or written for it any more.
    if (!this.#closed && this.#clients.get(c.id) !== c) {
      answers?.skip();
      return;
    }
    const { id, floor } = envelope;
    // The page has every answer below its floor: those kept go (once per rise,
    // not per request: a group of requests carries one floor).
    if (floor !== undefined && floor > c.floor) {
      c.floor = floor;
      for (const n of c.answered.keys()) if (n < floor) c.answered.delete(n);
    }
    // Sent again to this leader (its connection went to another and came
    // back): answered as the first time, so that nothing is made twice.
    const kept = ANSWERED_AGAIN.has(envelope.request.op) ? undefined : c.answered.get(id);
    const movedIterator = typeof kept === 'object' && 'movedIterator' in kept ? kept.movedIterator : undefined;
    let response = kept === MOVED || movedIterator !== undefined ? undefined : (kept as Response | undefined);
    let transfer: Transferable[] = [];
    if ((kept === MOVED && ADVANCES.has(envelope.request.op)) || movedIterator !== undefined) {
      // Its answer moved entries out and was lost: served again, it would
      // skip them (or make a second iterator). The page takes the iterator
      // (or export) for gone with that error and never releases it: it goes here.
      const r = envelope.request;
      if (movedIterator !== undefined) {
        c.iterators.get(movedIterator)?.release();
        c.iterators.delete(movedIterator);
      } else if (r.op === 'next') {
        c.iterators.get(r.iterator)?.release();
        c.iterators.delete(r.iterator);
      } else if (r.op === 'exportNext') {
        c.exports
          .get(r.export)
          ?.cancel()
          .catch(() => {});
        c.exports.delete(r.export);
      }
      const error = new SiltError(
        'LeaderChanged',
        `the answer to this ${envelope.request.op === 'exportNext' ? 'export' : 'iterator'}'s read was lost with a link to the leader; open it again`,
      );
      response = { id, from: this.#id, ok: false, error: toWire(error) };
    } else if (response === undefined) {
      try {
        if (this.#closed) throw new SiltError('Closed', 'the database was closed');
        if (served instanceof Error) throw served;
        const [value, t] = served ?? (await this.#serve(c, envelope));
        response = { id, from: this.#id, ok: true, value };
        transfer = t;
      } catch (e) {
        response = { id, from: this.#id, ok: false, error: toWire(e) };
      }
      const op = envelope.request.op;
      if (!WRITES.has(op) && !ANSWERED_AGAIN.has(op) && c.answered.size < ANSWERS_KEPT)
        c.answered.set(id, transfer.length === 0 && served === undefined ? response : movedOf(op, response)); // a batch's value: a view of its buffer
      if (WRITES.has(op) && response.ok && this.#db.storage === 'indexeddb') {
        // Kept in IndexedDB: a write is answered once committed there (the
        // requests after it are served meanwhile, and commit with it).
        const applied = response;
        void this.#db.persisted().then(
          () => (answers !== undefined ? answers.add(applied, transfer) : post(c, applied, transfer)),
          (e: unknown) => {
            const failed: Response = { id, from: this.#id, ok: false, error: toWire(e) };
            if (answers !== undefined) answers.add(failed, []);
            else post(c, failed, []);
          },
        );
        return;
      }
    }
    if (answers !== undefined) answers.add(response, transfer);
    else post(c, response, transfer);
    // A follower's goodbye: answered first, then its line closes.
    if (envelope.request.op === 'bye' && response.ok && (c.channel !== undefined || c.port !== undefined) && !this.#closed) {
      answers?.flush();
      if (this.#watched.has(c.id)) this.#gone.add(c.id);
      try {
        this.#drop(c.id, true);
      } catch {
        // Its record is left for the sweep of a later leader.
      }
    }
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
      const known = this.#writer.known(c.id);
      if (known !== undefined) advanceFloor(known, envelope.floor);
      return this.#requests.handleWaitingForFiles(c, id, r);
    }
    let a: Applied;
    try {
      a = this.#writer.recordOf(c.id);
    } catch (e) {
      this.#writer.failedUnread(c.id, id, e);
      throw e;
    }
    advanceFloor(a, envelope.floor);
    const done = repeat(a, id);
    if (done !== undefined) {
      this.counters.duplicateWrites++;
      if ('sync' in r && r.sync === true) this.#writer.makeDurable(c.id);
      // An ingest whose report went for room: what is known of it.
      if (r.op === 'ingest' && done.value === undefined) return [knownReport(r.count, done.sequence), []];
      // Its report (keys, tables) again, from the tables (not written again).
      if (r.op === 'ingestRocksdb') return [rocksdbReportOf(this.#db, r.bytes), []];
      return [done.value, []];
    }
    try {
      return await this.#requests.handleWaitingForFiles(c, id, r);
    } catch (e) {
      recordFailure(a, id, e);
      throw e;
    }
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
    this.#writer.handOver();
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
    for (const c of this.#clients.values()) this.#requests.letGo(c);
    this.#clients.clear();
  }
}
