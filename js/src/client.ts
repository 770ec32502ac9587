/**
 * `connect()`: one database shared by every page, iframe and worker of an
 * origin, with Promises.
 *
 * Each realm has one connection per database, however many `connect()`
 * calls share it. Every connection queues for the database's Web Lock; the
 * one whose realm holds it starts a worker (worker.ts) that opens the
 * database and leads: it serves its own page through the worker's port and
 * every other connection (a follower) through a MessagePort that a
 * SharedWorker (broker.ts) handed over, or, where there is none, a
 * BroadcastChannel of that follower's (protocol.ts, leader.ts). When the leader's realm goes, the
 * lock passes to the next connection in the queue, which leads from then
 * on; followers attach to it and send again what had no answer. Writes are
 * recorded with their request ids, so nothing is applied twice. Snapshots
 * and iterators lived in the old leader: using one afterwards fails with
 * `LeaderChanged`. docs/tabs.md has the whole design.
 *
 * Values come back as copies the caller owns.
 */

import { chunksOf, type ImportReport, type ImportSource } from './backup.js';
import { ingestBatch, ingestSorted, WriteBatch, type IngestOptions, type IngestReport } from './batch.js';
import { show, valueBytes, type Key } from './bytes.js';
import type { Statistics, SublevelOptions, VerifyReport, WriteOptions } from './database.js';
import {
  checkLimit,
  Codec,
  registerCodec,
  codecOf,
  type EncodingOption,
  type EncodingOptions,
  exportForm,
  type ExportOptions,
  type KeyOf,
  type KeyTypeOf,
  type RangeOptions,
  type ReadValueOf,
  type ValueTypeOf,
} from './encoding.js';
import { SiltError } from './errors.js';
import { checkBatchSize, EntryBatch, type Entry } from './iterator.js';
import { abortReason, type HeldLock, type LockManagerLike } from './lock.js';
import { checkName, checkOptions, type OpenOptions } from './open.js';
import { RemoteTransaction, type RemoteTransactionHost } from './remote-transaction.js';
import { HeldMultiGetResult, type MultiGot } from './results.js';
import { type Range, WATCH_QUEUE_LIMIT, type Watch, type WatchEvent, Watcher, type WatchOptions } from './watch.js';
import { type TransactionOptions, type UpdateResult, updateIn, withRetries } from './transaction.js';
import {
  fromWire,
  leaderStateOf,
  names,
  type BrokerMessage,
  type ChangeRecord,
  type Envelope,
  type IteratorRequestOptions,
  type PackedValues,
  type Request,
  type Response,
  type RosterMessage,
  type SnapshotInfo,
  type Welcome,
  type WorkerReport,
} from './protocol.js';

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

/** Read options of a connection. */
export interface RemoteReadOptions<V = Uint8Array> {
  snapshot?: RemoteSnapshot;
  /** Decode the value(s) with this encoding instead of the database's. */
  valueEncoding?: EncodingOption<V>;
}

/** A range, and the snapshot to count it at. */
export interface RemoteCountOptions<K> extends RangeOptions<K> {
  snapshot?: RemoteSnapshot;
}

/** An async iterator of a connection, released by leaving `for await` or by `release()`. */
export interface RemoteIterator<T> extends AsyncIterableIterator<T>, AsyncDisposable {
  /** Lets go of the iterator in the leader. */
  release(): Promise<void>;
}

/** Statistics of a connection: the database's, and the leader's. */
export interface RemoteStatistics extends Statistics {
  tabs: {
    /** Writes sent again after a failover and found already applied (acknowledged, not applied twice). */
    duplicateWrites: number;
    /** Followers that attached to this leader. */
    attached: number;
    /** Connections the leader forgot because they closed or went. */
    dropped: number;
    /** Connections the leader serves now, its own page included. */
    connections: number;
  };
}

export type { Change, Gap, KeyChange, RangeChange, Watch, WatchEvent, WatchOptions } from './watch.js';
export { WATCH_QUEUE_LIMIT } from './watch.js';
/** How long a new leader's worker may wait for the database's lock before a held lock is taken for an exclusive `open()`. */
const LEADER_SILENCE_MS = 1_000;
/** How long a follower waits for the leader's welcome before asking again. */
const WELCOME_MS = 1_000;

/** A request: `epoch`, the leader it was made for (its snapshot's or iterator's, or the one followed when it was made). */
type Pending = { id: number; request: Request; epoch: number; resolve(v: unknown): void; reject(e: SiltError): void };

function randomId(): string {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/** `connect()` cannot go on without Web Locks: `e` is why `navigator.locks` refused. */
function locksRefused(e: unknown): SiltError {
  const why = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return new SiltError(
    'NotSupported',
    `connect() needs Web Locks, and navigator.locks refused (${why}). In a sandboxed iframe, add allow-same-origin to its sandbox; ` +
      "where the browser blocks this site's storage (a third-party frame, a privacy setting), open the page as a top-level site; " +
      'else open() the database in a worker of this page',
    { cause: e },
  );
}

function leaderChanged(what: string): SiltError {
  return new SiltError('LeaderChanged', `${what} lived in the tab that led this database, and that tab went (closed, reloaded or crashed); take a new one`);
}

/**
 * Why request `r`, pending when its leader went, fails. An import's finish
 * may have been applied there (its answer lost): it is not known whether
 * the import completed.
 */
function lostWithLeader(r: Request): SiltError {
  if (r.op === 'importFinish') {
    return new SiltError(
      'LeaderChanged',
      "the tab that led this database went (closed, reloaded or crashed) before this import's finish was answered: " +
        'the import may have completed (all of its data in) or not (none of it); check with count() or a read before importing again',
    );
  }
  return leaderChanged(whatOf(r));
}

/** What a request that uses the leader's state uses, for `LeaderChanged`'s message. */
function whatOf(r: Request): string {
  if (r.op === 'next' || r.op === 'releaseIterator') return 'this iterator';
  if (r.op.startsWith('txn')) return 'this transaction';
  if (r.op.startsWith('export')) return 'this export';
  if (r.op.startsWith('import')) return 'this import';
  return 'this snapshot';
}

/**
 * The connections of each realm, by database name. Keyed by the realm's
 * `navigator.locks` (each realm has its own): one map in a browser realm;
 * the Node tests run several simulated realms in one.
 */
const realms = new WeakMap<LockManagerLike, Map<string, Connection>>();

function connectionsOf(locks: LockManagerLike): Map<string, Connection> {
  let m = realms.get(locks);
  if (m === undefined) {
    m = new Map();
    realms.set(locks, m);
  }
  return m;
}

/** @internal One realm's connection to one database; `RemoteDatabase`s share it. */
export class Connection {
  readonly name: string;
  /** This connection's id (its requests', its write records', its client lock's). */
  readonly client = randomId();
  #names: ReturnType<typeof names>;
  #options: Omit<OpenOptions, 'signal' | 'wait'>;
  #wait: boolean;
  #given: Worker | undefined;
  #locks: LockManagerLike;
  #roster: BroadcastChannel;
  #changes: BroadcastChannel;
  #parking: BroadcastChannel;
  #own: BroadcastChannel | undefined;
  /** This realm's port to the broker (broker.ts), where SharedWorker exists. */
  #broker: MessagePort | undefined;
  /** The follower's line to the leader's worker: a port from the broker, or `own`. */
  #via: MessagePort | 'channel' | undefined;
  /**
   * The port of the latest attempt to follow, until it is welcomed: an
   * attempt made again (a `leader` heard again before the welcome) closes
   * the one before, and a welcome on any other port is not taken.
   */
  #attempt: MessagePort | undefined;
  /** The leader this connection asked to serve it over its channel (it keeps to the channel with that leader). */
  #helloFor: string | undefined;
  /** The leader this connection was last welcomed by (or led as), and the sequence number that leader opened at. */
  #linkedTo: string | undefined;
  #opened = 0;
  /** Change records from a leader that has not welcomed this connection yet (see `#onChange`). */
  #early: ChangeRecord[] = [];
  #worker: Worker | undefined;
  #role: 'none' | 'follower' | 'leading' | 'leader' = 'none';
  /** The leader requests go to (this connection's id when it leads). */
  #leader: string | undefined;
  /** Numbers of this connection's transactions. */
  #nextTransaction = 1;
  /** Whether the leader has welcomed this connection (requests can go out). */
  #linked = false;
  /** Grows at each change of leader; snapshots and iterators remember theirs. */
  epoch = 0;
  #pending = new Map<number, Pending>();
  #nextId = 1;
  #dead: SiltError | undefined;
  #lock: HeldLock | undefined;
  #candidacy = new AbortController();
  #releaseClientLock: (() => void) | undefined;
  #welcomeTimer: ReturnType<typeof setTimeout> | undefined;
  #ready: Promise<void>;
  #settleReady!: (error?: SiltError) => void;
  #isReady = false;
  #closing = false;
  /** While leading: whether the worker holds the database's lock, and whether an `open()` keeps it. */
  #workerLocked = false;
  #blocked = false;
  #onResume: (() => void) | undefined;
  refs = 0;
  readonly watchers = new Set<Watcher>();

  constructor(name: string, options: Omit<OpenOptions, 'signal'>, given: Worker | undefined, locks: LockManagerLike) {
    this.name = name;
    this.#names = names(name);
    const { wait, ...rest } = options;
    this.#options = rest;
    this.#wait = wait ?? false;
    this.#given = given;
    this.#locks = locks;
    this.#ready = new Promise<void>((resolve, reject) => {
      this.#settleReady = (error) => {
        if (this.#isReady) return;
        this.#isReady = true;
        if (error) reject(error);
        else resolve();
      };
    });
    this.#ready.catch(() => {});
    this.#roster = new BroadcastChannel(this.#names.roster);
    this.#roster.addEventListener('message', (ev: MessageEvent<RosterMessage>) => this.#onRoster(ev.data));
    this.#changes = new BroadcastChannel(this.#names.changes);
    this.#changes.addEventListener('message', (ev: MessageEvent<ChangeRecord>) => this.#onChange(ev.data));
    // The broker introduces followers to the leader's worker with a
    // MessagePort: measured about three times faster than a BroadcastChannel.
    // Written out as `new SharedWorker(new URL(...))`, the pattern bundlers
    // recognise to bundle broker.js as a worker of its own.
    if (typeof SharedWorker === 'function') {
      try {
        const shared = new SharedWorker(new URL('./broker.js', import.meta.url), { type: 'module', name: 'siltdb-broker' });
        shared.addEventListener('error', () => {
          this.#broker = undefined;
        });
        shared.port.addEventListener('message', (ev: MessageEvent<BrokerMessage>) => {
          const m = ev.data;
          if (m.t === 'attach' && this.#role === 'leader') this.#worker?.postMessage({ t: 'attach', client: m.client, port: m.port }, [m.port]);
        });
        shared.port.start();
        this.#broker = shared.port;
      } catch {
        // No broker (a bundler that did not ship broker.js): the channel it is.
      }
    }
    // A page frozen (a hidden tab, bfcache) may have missed change records:
    // its watches check when it resumes.
    const doc = (globalThis as { document?: EventTarget & { visibilityState?: string } }).document;
    if (doc !== undefined) {
      this.#onResume = () => {
        if (doc.visibilityState !== 'hidden') for (const w of this.watchers) void w.check();
      };
      doc.addEventListener('resume', this.#onResume);
      doc.addEventListener('visibilitychange', this.#onResume);
    }
    // Exclusive open()s ask whoever holds the lock to let go if only parked
    // (parking.ts): a leader is not parked.
    this.#parking = new BroadcastChannel(`siltdb:${name}`);
    this.#parking.addEventListener('message', (ev: MessageEvent<{ t?: string; id?: string }>) => {
      if (ev.data?.t === 'ask' && (this.#role === 'leader' || this.#role === 'leading')) this.#parking.postMessage({ t: 'busy', id: ev.data.id });
    });
  }

  /** Whether this connection's worker leads. */
  get isLeader(): boolean {
    return this.#role === 'leader';
  }

  /** Resolves once requests can be served (this connection leads, or a leader welcomed it). */
  get ready(): Promise<void> {
    return this.#ready;
  }

  /** Takes this connection's locks and looks for the leader; a failure fails the connection (and `ready`). */
  async start(): Promise<void> {
    // Held while this connection lives: the leader learns it went when the
    // lock comes free.
    try {
      await new Promise<void>((granted, failed) => {
        this.#locks
          .request(this.#names.clientLock(this.client), {}, () => {
            granted();
            return new Promise<void>((r) => (this.#releaseClientLock = r));
          })
          .catch(failed);
      });
    } catch (e) {
      this.#fail(locksRefused(e));
      return;
    }
    if (this.#dead !== undefined) {
      this.#releaseClientLock?.();
      return;
    }
    // In the queue to lead: the connection that holds `siltdb:<name>:lead`
    // leads. Its worker then takes the database's own lock, which the worker
    // that led before holds until it is really gone: two workers never have
    // the database open at once, even while a closed tab's worker ends.
    try {
      this.#locks
        .request(this.#names.leadLock, { signal: this.#candidacy.signal }, () => {
          if (this.#closing || this.#dead !== undefined) return undefined;
          return new Promise<void>((release) => this.#lead({ release }));
        })
        .catch((e: unknown) => {
          if (!this.#candidacy.signal.aborted) this.#fail(locksRefused(e));
        });
    } catch (e) {
      this.#fail(locksRefused(e));
      return;
    }
    this.#roster.postMessage({ t: 'who' } satisfies RosterMessage);
  }

  /**
   * This connection leads, but its worker has not had the database's lock
   * for `LEADER_SILENCE_MS`: a worker holds it with `open()`. Tell the
   * connections that wait for this one, and fail unless told to wait.
   */
  async #checkExclusive(): Promise<void> {
    if (this.#role !== 'leading' || this.#workerLocked) return;
    const query = (this.#locks as { query?: () => Promise<{ held?: { name?: string }[] }> }).query;
    const state = query ? await query.call(this.#locks).catch(() => undefined) : undefined;
    const held = state?.held?.some((l) => l.name === `siltdb:${this.name}`) ?? true;
    if (!held || this.#role !== 'leading' || this.#workerLocked) return;
    this.#blocked = true;
    this.#roster.postMessage({ t: 'leader', leader: this.client, ready: false, blocked: true } satisfies RosterMessage);
    if (!this.#isReady && !this.#wait) this.#fail(this.#exclusive());
  }

  #exclusive(): SiltError {
    return new SiltError(
      'DatabaseLocked',
      `database "${this.name}" is open with open() in a worker, which keeps it to itself (its Web Lock is held, and no connect() leads it); ` +
        'connect() with { wait: true } waits until it is closed',
    );
  }

  #onRoster(m: RosterMessage): void {
    if (this.#dead !== undefined) return;
    switch (m.t) {
      case 'who':
        if (this.#role === 'leader' || this.#role === 'leading') {
          this.#roster.postMessage({
            t: 'leader',
            leader: this.client,
            ready: this.#role === 'leader',
            ...(this.#blocked ? { blocked: true } : {}),
          } satisfies RosterMessage);
        }
        return;
      case 'leader':
        if (m.leader === this.client) return;
        // The tab that leads waits for a worker's open(): so would this.
        if (m.blocked && !this.#isReady && !this.#wait && this.#role === 'none') this.#fail(this.#exclusive());
        if (m.ready && this.#mayFollow(m.leader)) {
          // The leader followed, not welcomed yet: attempt again; another: if it lives.
          if (m.leader === this.#leader) this.#follow(m.leader);
          else this.#followIfAlive(m.leader);
        }
        return;
      case 'hello':
        if (this.#role === 'leader' && m.leader === this.client) this.#worker?.postMessage({ t: 'attach', client: m.client });
        return;
    }
  }

  /** Whether a `leader` message of `leader` (ready) would make this connection follow it. */
  #mayFollow(leader: string): boolean {
    return this.#dead === undefined && (this.#role === 'none' || this.#role === 'follower') && (leader !== this.#leader || !this.#linked);
  }

  /**
   * Follows `leader`, another than the one followed now, if it lives (its
   * client lock is held). A `leader` message may arrive late (a
   * BroadcastChannel keeps no order across senders), from a leader that
   * has gone since: following it would leave the leader that leads now,
   * and coming back to that one would count as a change of leader (its
   * snapshots and iterators failing with `LeaderChanged`, requests sent to
   * it twice). A connection that leads holds its client lock until it
   * goes, so a free lock means that leader is gone.
   */
  #followIfAlive(leader: string): void {
    try {
      this.#locks
        .request(this.#names.clientLock(leader), { ifAvailable: true }, (lock) => {
          if (lock === null && this.#mayFollow(leader)) this.#follow(leader);
          return undefined;
        })
        .catch(() => {});
    } catch {
      // Locks refused now: the connection learns it where it takes its own.
    }
  }

  /** Sends requests to leader `leader` from now on (once it welcomes this connection). */
  #follow(leader: string): void {
    if (this.#leader !== leader) {
      this.#leader = leader;
      this.#helloFor = undefined;
      this.epoch++;
    }
    this.#role = 'follower';
    this.#linked = false;
    if (this.#via instanceof MessagePort) this.#via.close();
    this.#via = undefined;
    // An attempt before this one, not welcomed: its port goes (the leader
    // closes it anyway once this attempt's port reaches it).
    this.#attempt?.close();
    this.#attempt = undefined;
    // Once this leader is asked over the channel, always over the channel:
    // a port attached after a hello would be closed by the leader when the
    // hello reaches it, under a follower that took that port's welcome.
    if (this.#broker !== undefined && this.#helloFor !== leader) {
      // A port straight to the leader's worker, through the broker.
      const { port1: port, port2 } = new MessageChannel();
      this.#attempt = port;
      port.addEventListener('message', (ev: MessageEvent<Response | Welcome | { t: 'unknown' }>) => {
        const m = ev.data;
        if (!('t' in m)) this.#onResponse(m);
        else if (m.t === 'welcome') {
          if (port === this.#attempt) this.#welcomed(m, port);
        } else if (m.t === 'unknown' && port === this.#attempt && this.#leader === leader && !this.#linked) {
          // The broker does not know that leader: its channel, then.
          this.#attempt = undefined;
          port.close();
          this.#hello(leader);
        }
      });
      port.start();
      this.#broker.postMessage({ t: 'connect', name: this.name, leader, client: this.client, port: port2 } satisfies BrokerMessage, [port2]);
    } else {
      this.#hello(leader);
    }
    clearTimeout(this.#welcomeTimer);
    this.#welcomeTimer = setTimeout(
      () => {
        // No welcome: that leader went meanwhile, or it is slow. Ask who
        // leads now (an answer from the same leader makes a new attempt).
        if (this.#role === 'follower' && !this.#linked && this.#dead === undefined) {
          this.#roster.postMessage({ t: 'who' } satisfies RosterMessage);
        }
      },
      this.#broker !== undefined ? 2 * WELCOME_MS : WELCOME_MS,
    );
  }

  /** Asks leader `leader` to serve this connection over its BroadcastChannel. */
  #hello(leader: string): void {
    this.#helloFor = leader;
    if (this.#own === undefined) {
      const own = new BroadcastChannel(this.#names.client(this.client));
      own.addEventListener('message', (ev: MessageEvent<Response | Welcome>) => {
        const m = ev.data;
        if ('t' in m) {
          if (m.t === 'welcome' && this.#attempt === undefined) this.#welcomed(m, 'channel');
        } else this.#onResponse(m);
      });
      this.#own = own;
    }
    this.#roster.postMessage({ t: 'hello', client: this.client, leader } satisfies RosterMessage);
  }

  #welcomed(m: Welcome, via: MessagePort | 'channel'): void {
    if (this.#role !== 'follower' || m.leader !== this.#leader || this.#linked) return;
    clearTimeout(this.#welcomeTimer);
    this.#linked = true;
    this.#via = via;
    this.#attempt = undefined;
    this.#settleReady();
    this.#resend();
    this.#linkWatchers(m.leader, m.seq, m.opened);
  }

  /**
   * This connection now sends to `leader` (welcomed, or its own worker
   * opened the database at `opened`; latest sequence number `seq`): its
   * watches catch up, and the change records that came before are passed
   * on, in order: those of earlier leaders that this one has (at or below
   * `opened`) before, this leader's after.
   */
  #linkWatchers(leader: string, seq: number, opened: number): void {
    const changed = leader !== this.#linkedTo;
    this.#linkedTo = leader;
    this.#opened = opened;
    const early = this.#early;
    this.#early = [];
    const kept = early.filter((r) => r.from !== leader && r.last <= opened);
    const mine = early.filter((r) => r.from === leader);
    for (const w of this.watchers) {
      for (const r of kept) w.onRecord(r);
      w.onLeader(seq, changed ? opened : undefined);
      for (const r of mine) w.onRecord(r);
    }
  }

  /**
   * A change record: passed to the watches if it comes from the leader
   * that welcomed this connection, or from an earlier one and is in the
   * database this one opened (at or below `opened`); kept until the
   * welcome if this connection has not been welcomed yet (the welcome
   * starts the catch-up that such a record would otherwise overtake);
   * dropped if it is from a leader that went with it unsaved.
   */
  #onChange(r: ChangeRecord): void {
    if (this.#linked && (r.from === this.#leader || r.last <= this.#opened)) {
      for (const w of this.watchers) w.onRecord(r);
    } else if (!this.#linked && this.watchers.size > 0 && this.#early.length < WATCH_QUEUE_LIMIT) {
      this.#early.push(r);
    }
  }

  /** This connection holds the lead lock: start the worker, which opens the database, and lead. */
  #lead(lock: HeldLock): void {
    if (this.#closing || this.#dead !== undefined) {
      lock.release();
      return;
    }
    this.#lock = lock;
    this.#role = 'leading';
    this.#workerLocked = false;
    this.#blocked = false;
    this.#leader = this.client;
    this.#linked = false;
    this.epoch++;
    clearTimeout(this.#welcomeTimer);
    this.#roster.postMessage({ t: 'leader', leader: this.client, ready: false } satisfies RosterMessage);
    setTimeout(() => void this.#checkExclusive(), LEADER_SILENCE_MS);
    let worker: Worker;
    try {
      worker = this.#given ?? new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'siltdb' });
    } catch (e) {
      this.#fail(new SiltError('InitFailed', `the siltdb worker could not be started: ${String(e)}`, { cause: e }));
      return;
    }
    this.#worker = worker;
    worker.addEventListener('message', (ev: MessageEvent<Response | WorkerReport>) => {
      // What a worker sent before this connection failed (its crash) is not news.
      if (this.#dead !== undefined) return;
      const m = ev.data;
      if (!('t' in m)) {
        this.#onResponse(m);
        return;
      }
      if (m.t === 'locked') {
        this.#workerLocked = true;
        this.#blocked = false;
      } else if (m.t === 'opened') {
        this.#role = 'leader';
        this.#linked = true;
        this.#broker?.postMessage({ t: 'lead', name: this.name, leader: this.client } satisfies BrokerMessage);
        this.#roster.postMessage({ t: 'leader', leader: this.client, ready: true, seq: m.seq } satisfies RosterMessage);
        this.#settleReady();
        this.#resend();
        this.#linkWatchers(this.client, m.seq, m.opened ?? m.seq);
      } else if (m.t === 'openFailed') {
        this.#fail(fromWire(m.error));
      }
    });
    worker.addEventListener('error', (event: ErrorEvent) => {
      event.preventDefault();
      const code = this.#role === 'leading' ? 'InitFailed' : 'Internal';
      this.#fail(new SiltError(code, `the siltdb worker failed: ${event.message || 'it could not be loaded'}`));
    });
    try {
      worker.postMessage({ t: 'open', name: this.name, options: this.#options, leader: this.client });
    } catch (e) {
      this.#fail(new SiltError('InvalidArgument', `the options cannot be sent to the database's worker: ${String(e)}`, { cause: e }));
    }
  }

  #onResponse(r: Response): void {
    // An answer from a leader that has since been replaced: the request was
    // sent again to the new one, whose answer counts.
    if (r.from !== this.#leader) return;
    const p = this.#pending.get(r.id);
    if (p === undefined) return;
    this.#pending.delete(r.id);
    if (r.ok) p.resolve(r.value);
    else p.reject(fromWire(r.error));
  }

  /**
   * Sends every unanswered request to the (new) leader, in order; those
   * made for a leader before it that use what lived there fail (or, to let
   * go of it, resolve) instead (`leaderStateOf`, protocol.ts).
   */
  #resend(): void {
    for (const p of [...this.#pending.values()].sort((a, b) => a.id - b.id)) {
      const state = p.epoch === this.epoch ? 'none' : leaderStateOf(p.request);
      if (state !== 'none') {
        this.#pending.delete(p.id);
        if (state === 'releases') p.resolve(undefined);
        else p.reject(lostWithLeader(p.request));
        continue;
      }
      this.#post(p);
    }
  }

  #post(p: Pending): void {
    // Every request below the first still pending has its answer.
    const floor = this.#pending.keys().next().value ?? p.id;
    const envelope: Envelope = { id: p.id, client: this.client, request: p.request, floor };
    try {
      if (this.#role === 'leader') this.#worker!.postMessage(envelope);
      else if (this.#via instanceof MessagePort) this.#via.postMessage(envelope);
      else this.#own!.postMessage(envelope);
    } catch (e) {
      // What the structured clone refuses (a function, a Symbol) never
      // reached the leader, which goes on serving.
      this.#pending.delete(p.id);
      const detail = e instanceof Error ? `${e.name}: ${e.message}` : show(e);
      p.reject(new SiltError('InvalidArgument', `the arguments of ${p.request.op} cannot be sent to the database's worker: ${detail}`, { cause: e }));
    }
  }

  /** The id of the leader this connection sends to ('' while it knows none). */
  get leaderId(): string {
    return this.#leader ?? '';
  }

  /** A number for a new transaction of this connection. */
  transactionId(): number {
    return this.#nextTransaction++;
  }

  /** Sends `request` to the leader; `epoch` (for snapshot and iterator requests) is the leader they were made on. */
  send(request: Request, epoch?: number): Promise<unknown> {
    if (this.#dead) return Promise.reject(this.#dead);
    if (epoch !== undefined && epoch !== this.epoch) {
      return Promise.reject(leaderChanged(whatOf(request)));
    }
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      // Made for the leader followed now (or the one its snapshot or
      // iterator lives in), even if it waits for that leader's welcome.
      const p: Pending = { id, request, epoch: epoch ?? this.epoch, resolve, reject };
      this.#pending.set(id, p);
      if (this.#linked) this.#post(p);
    });
  }

  /** The connection cannot go on: every pending and later call fails with `error`. */
  #fail(error: SiltError): void {
    if (this.#dead) return;
    this.#dead = error;
    this.#settleReady(error);
    this.#teardown();
    for (const p of this.#pending.values()) p.reject(error);
    this.#pending.clear();
    // A watch closed by its app (or with the connection) ends; one whose
    // connection failed throws why.
    for (const w of [...this.watchers]) w.fail(error);
  }

  #teardown(): void {
    clearTimeout(this.#welcomeTimer);
    this.#candidacy.abort();
    this.#worker?.terminate();
    this.#worker = undefined;
    this.#lock?.release();
    this.#lock = undefined;
    this.#releaseClientLock?.();
    this.#roster.close();
    this.#changes.close();
    this.#parking.close();
    this.#own?.close();
    if (this.#via instanceof MessagePort) this.#via.close();
    this.#attempt?.close();
    this.#early = [];
    if (this.#role === 'leader') this.#broker?.postMessage({ t: 'unlead', name: this.name, leader: this.client } satisfies BrokerMessage);
    this.#broker?.close();
    if (this.#onResume !== undefined) {
      const doc = (globalThis as { document?: EventTarget }).document;
      doc?.removeEventListener('resume', this.#onResume);
      doc?.removeEventListener('visibilitychange', this.#onResume);
    }
    this.#forget();
  }

  /** This realm's `connect()` calls no longer find this connection. */
  #forget(): void {
    const connections = connectionsOf(this.#locks);
    if (connections.get(this.name) === this) connections.delete(this.name);
  }

  /** Closes the connection: a follower says goodbye; a leader closes the database and lets the next connection lead. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#forget();
    for (const w of [...this.watchers]) w.close();
    try {
      if (this.#role === 'leader' && this.#worker !== undefined) {
        const worker = this.#worker;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 10_000);
          worker.addEventListener('message', (ev: MessageEvent<WorkerReport>) => {
            if ((ev.data as { t?: string }).t === 'closed') {
              clearTimeout(timer);
              resolve();
            }
          });
          worker.postMessage({ t: 'close' });
        });
      } else if (this.#role === 'follower' && this.#linked) {
        await Promise.race([this.send({ op: 'bye' }).catch(() => {}), new Promise((r) => setTimeout(r, 1_000))]);
      }
    } finally {
      this.#fail(new SiltError('Closed', 'the database was closed'));
    }
  }
}

/** A snapshot held by the leader of a connection. */
export class RemoteSnapshot {
  /** @internal */
  id: number;
  /** @internal */
  readonly epoch: number;
  /** The sequence number of the last write the snapshot sees (for `watch({ since })`). */
  readonly sequence: number;
  #connection: Connection;

  /** @internal */
  constructor(connection: Connection, info: SnapshotInfo, epoch: number) {
    this.#connection = connection;
    this.id = info.id;
    this.sequence = info.seq;
    this.epoch = epoch;
  }

  /** @internal */
  connectionIs(c: Connection): boolean {
    return this.#connection === c;
  }

  async release(): Promise<void> {
    if (this.id === 0) return;
    const id = this.id;
    this.id = 0;
    // A snapshot of a leader that went is gone with it: nothing to release.
    if (this.epoch !== this.#connection.epoch) return;
    await this.#connection.send({ op: 'releaseSnapshot', snapshot: id }, this.epoch);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

function syncOf(o: WriteOptions | undefined): { sync?: boolean } {
  if (o?.sync === undefined) return {};
  if (typeof o.sync !== 'boolean') throw new SiltError('InvalidArgument', `sync must be a boolean, got ${show(o.sync)}`);
  return { sync: o.sync };
}

/** Runs `f` and turns a synchronous throw (bad input) into a rejection. */
async function call<T>(f: () => Promise<T>): Promise<T> {
  return f();
}

/** Values the leader packed (`PackedValues`), as views of its one buffer. */
function unpack({ bytes, lens }: PackedValues): (Uint8Array | undefined)[] {
  const out: (Uint8Array | undefined)[] = [];
  let at = 0;
  for (const len of lens) {
    if (len < 0) out.push(undefined);
    else {
      out.push(bytes.subarray(at, at + len));
      at += len;
    }
  }
  return out;
}

/**
 * An iterator's options (all but the snapshot), checked here, with its
 * range turned into stored bytes by `codec` (what the leader is sent), and
 * its limit.
 */
function checkIteratorOptions(
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
function entryOf<K, V>(c: Codec): (b: EntryBatch, i: number) => Entry<K, V> {
  if (c.plainValues && c.keys === ROOT.keys) return (b, i) => [b.keyAt(i), b.valueAt(i)] as Entry<K, V>;
  return (b, i) => [c.keys.decode(b.keyAt(i)) as K, c.values.decode(b.valueAt(i)) as V];
}

function watchRange(o: WatchOptions<unknown>, codec: Codec): Range {
  // Both ends half-open: [lower, upper).
  const { lower, upper } = codec.bounds(o);
  return { ...(lower ? { lower } : {}), ...(upper ? { upper } : {}) };
}

const ROOT = Codec.root(undefined);

/** What the handles of one `connect()` call share: the root and its sublevels. */
interface Handle {
  closed: boolean;
}

/**
 * A database shared by every tab through `connect()`, used with Promises.
 * Calls of one connection run in the order they are made. Values returned
 * are copies owned by the caller.
 */
export class RemoteDatabase<K = Key, V = Uint8Array> {
  #connection: Connection;
  #handle: Handle;
  #codec: Codec;

  /** @internal */
  constructor(connection: Connection, codec: Codec = ROOT, handle: Handle = { closed: false }) {
    this.#connection = connection;
    this.#codec = codec;
    this.#handle = handle;
    registerCodec(this, codec);
  }

  get name(): string {
    return this.#connection.name;
  }

  /** The names of the sublevels from the database down to this one (empty for the database itself). */
  get path(): readonly string[] {
    return this.#codec.path;
  }

  /**
   * The sublevel `name` (see `Database.sublevel`): the same connection,
   * over the keys behind the sublevel's prefix, with its own encodings
   * (default: this one's).
   */
  sublevel<const O extends EncodingOptions<never, never>>(
    name: string,
    options: O,
  ): RemoteDatabase<KeyTypeOf<O['keyEncoding'], K>, ValueTypeOf<O['valueEncoding'], V>>;
  /** The sublevel `name`, of the key and value types given as type parameters. */
  sublevel<SK = K, SV = V>(name: string, options?: SublevelOptions<SK, SV>): RemoteDatabase<SK, SV>;
  sublevel<SK = K, SV = V>(name: string, options?: SublevelOptions<SK, SV>): RemoteDatabase<SK, SV> {
    return new RemoteDatabase<SK, SV>(this.#connection, this.#codec.child(name, options as EncodingOptions<unknown, unknown> | undefined), this.#handle);
  }

  #decoded<T>(v: Uint8Array | undefined, c: Codec): T | undefined {
    return (v === undefined || c.plainValues ? v : c.unvalue(v)) as T | undefined;
  }

  #reads(options: RemoteReadOptions<unknown> | undefined): Codec {
    return options?.valueEncoding === undefined ? this.#codec : this.#codec.with(options as EncodingOptions<unknown, unknown>);
  }

  /** Whether this realm's worker serves the database now (for every tab), rather than another tab's. */
  get isLeader(): boolean {
    return this.#connection.isLeader;
  }

  #send(request: Request, epoch?: number): Promise<unknown> {
    if (this.#handle.closed) return Promise.reject(new SiltError('Closed', 'the database was closed'));
    return this.#connection.send(request, epoch);
  }

  #snapshot(s: RemoteSnapshot | undefined): { snapshot: number; epoch?: number } {
    if (s === undefined) return { snapshot: 0 };
    if (!(s instanceof RemoteSnapshot) || !s.connectionIs(this.#connection))
      throw new SiltError('InvalidArgument', 'snapshot must be a RemoteSnapshot of this connection');
    if (s.id === 0) throw new SiltError('Released', 'this snapshot was released');
    if (s.epoch !== this.#connection.epoch) throw leaderChanged('this snapshot');
    return { snapshot: s.id, epoch: s.epoch };
  }

  put(key: K, value: V, options?: WriteOptions): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'put', key: this.#codec.key(key), value: this.#codec.value(value), ...syncOf(options) });
    });
  }

  delete(key: K, options?: WriteOptions): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'delete', key: this.#codec.key(key), ...syncOf(options) });
    });
  }

  /** Records a merge operand for `key` (needs the database's `mergeOperator`; see `Database.merge`). */
  merge(key: K, operand: Uint8Array, options?: WriteOptions): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'merge', key: this.#codec.key(key), value: valueBytes(operand, 'operand'), ...syncOf(options) });
    });
  }

  /** Removes every key from `start` (included) to `end` (excluded). */
  deleteRange(start: K, end: K, options?: WriteOptions): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'deleteRange', start: this.#codec.key(start, 'start'), end: this.#codec.key(end, 'end'), ...syncOf(options) });
    });
  }

  /** Removes every key in `range` (default: every key of this database or sublevel) with one range tombstone. */
  clear(range: RangeOptions<K> = {}, options?: WriteOptions): Promise<void> {
    return call(async () => {
      if (typeof range !== 'object' || range === null) throw new SiltError('InvalidArgument', `clear() takes a range object, got ${show(range)}`);
      const { lower, upper } = this.#codec.bounds(range);
      await this.#send({ op: 'clear', lower: lower ?? new Uint8Array(0), ...(upper === undefined ? {} : { upper }), ...syncOf(options) });
    });
  }

  /** The number of keys in `range` (default: every key of this database or sublevel), exact (see `Database.count`). */
  count(range: RemoteCountOptions<K> = {}): Promise<number> {
    return call(async () => {
      if (typeof range !== 'object' || range === null) throw new SiltError('InvalidArgument', `count() takes a range object, got ${show(range)}`);
      const { lower, upper } = this.#codec.bounds(range);
      const { snapshot, epoch } = this.#snapshot(range.snapshot);
      return (await this.#send({ op: 'count', ...(lower ? { lower } : {}), ...(upper ? { upper } : {}), snapshot }, epoch)) as number;
    });
  }

  /** About how many bytes of storage the keys in `range` take, from the indexes (see `Database.approximateSize`). */
  approximateSize(range: RangeOptions<K> = {}): Promise<number> {
    return call(async () => {
      if (typeof range !== 'object' || range === null) throw new SiltError('InvalidArgument', `approximateSize() takes a range object, got ${show(range)}`);
      const { lower, upper } = this.#codec.bounds(range);
      return (await this.#send({ op: 'approximateSize', ...(lower ? { lower } : {}), ...(upper ? { upper } : {}) })) as number;
    });
  }

  /**
   * A backup as of now (see `Database.export`: the same forms and
   * defaults), as a stream of bytes read from the leader piece by piece.
   * If the tab that leads goes while it is read, the stream fails with
   * `LeaderChanged`: start it again.
   */
  export(options: ExportOptions<K> = {}): ReadableStream<Uint8Array> {
    if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', `export() takes an options object, got ${show(options)}`);
    if (this.#handle.closed) throw new SiltError('Closed', 'the database was closed');
    const form = exportForm(options);
    const { lower, upper } = this.#codec.bounds(options);
    const epoch = this.#connection.epoch;
    const started = this.#send(
      { op: 'exportStart', ...(lower ? { lower } : {}), ...(upper ? { upper } : {}), ...(form ? { form } : {}) },
      epoch,
    ) as Promise<number>;
    started.catch(() => {}); // (its failure is the first pull's)
    let done = false;
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          try {
            const id = await started;
            const piece = (await this.#send({ op: 'exportNext', export: id }, epoch)) as Uint8Array | undefined;
            if (piece === undefined) {
              done = true;
              controller.close();
            } else {
              controller.enqueue(piece);
            }
          } catch (e) {
            done = true;
            controller.error(e);
          }
        },
        cancel: async () => {
          if (done) return;
          done = true;
          const id = await started.catch(() => undefined);
          if (id !== undefined && epoch === this.#connection.epoch) await this.#send({ op: 'exportRelease', export: id }, epoch).catch(() => {});
        },
      },
      { highWaterMark: 1 },
    );
  }

  /**
   * Fills this database, which must be empty, from an export (see
   * `Database.import`): the pieces go to the leader, which checks every
   * chunk and makes the data visible at the end, all at once. On the
   * database itself, not a sublevel.
   */
  import(source: ImportSource): Promise<ImportReport> {
    return call(async () => {
      if (this.#codec.prefix.length > 0) {
        throw new SiltError('InvalidArgument', 'import() fills the database itself, not a sublevel: the exported keys carry their sublevel prefixes');
      }
      const epoch = this.#connection.epoch;
      await this.#send({ op: 'importStart' }, epoch);
      let pushing = true;
      try {
        for await (const chunk of chunksOf(source)) {
          const bytes = chunk.slice(); // transferred to the worker
          await this.#send({ op: 'importPush', bytes }, epoch);
        }
        pushing = false;
        return (await this.#send({ op: 'importFinish' }, epoch)) as ImportReport;
      } catch (e) {
        if (pushing) await this.#send({ op: 'importAbort' }, epoch).catch(() => {});
        throw e;
      }
    });
  }

  /** Compacts every key from `begin` to `end` (both included, both optional: the first or last key of this database or sublevel). */
  compactRange(begin?: K, end?: K): Promise<void> {
    return call(async () => {
      const c = this.#codec;
      const b = begin === undefined ? (c.prefix.length > 0 ? c.prefix : undefined) : c.key(begin, 'begin');
      const e = end === undefined ? c.end : c.key(end, 'end');
      await this.#send({ op: 'compactRange', ...(b === undefined ? {} : { begin: b }), ...(e === undefined ? {} : { end: e }) });
    });
  }

  /** A new batch of updates in this database's (or sublevel's) keys and encodings; `db.write(batch)` applies it. */
  batch(): WriteBatch<K, V> {
    return WriteBatch.withCodec<K, V>(this.#codec);
  }

  /** Applies every update of `batch` atomically (it may span sublevels). */
  write(batch: WriteBatch<unknown, unknown>, options?: WriteOptions): Promise<void> {
    return call(async () => {
      if (!(batch instanceof WriteBatch)) throw new SiltError('InvalidArgument', 'write() takes a WriteBatch');
      await this.#send({ op: 'write', batch: batch.encoded().slice(), count: batch.length, ...syncOf(options) });
    });
  }

  /**
   * Loads `entries` (pairs `[key, value]`, or a `WriteBatch` of puts) as new
   * table files in one atomic, durable step, as `Database.ingest` does in
   * the worker (see there). Watchers see it as one change of kind
   * `'ingest'` over the range of its keys.
   */
  ingest(entries: WriteBatch<K, V> | Iterable<readonly [K, V]>, options?: IngestOptions): Promise<IngestReport> {
    return call(async () => {
      const sorted = ingestSorted(options);
      const batch = ingestBatch(entries, () => this.batch());
      return (await this.#send({ op: 'ingest', batch: batch.encoded().slice(), count: batch.length, sorted })) as IngestReport;
    });
  }

  /**
   * The value of `key`, or `undefined`: a value the caller owns, as in a
   * worker. Bytes come in a buffer of their own, safe to keep and to
   * transfer; with a value encoding, the decoded value.
   */
  get<const O extends RemoteReadOptions<unknown> = RemoteReadOptions<V>>(key: K, options?: O): Promise<ReadValueOf<O, V> | undefined> {
    return call(async () => {
      const c = this.#reads(options as RemoteReadOptions<unknown>);
      const k = c.key(key);
      const { snapshot, epoch } = this.#snapshot(options?.snapshot);
      return this.#decoded<ReadValueOf<O, V>>((await this.#send({ op: 'get', key: k, snapshot }, epoch)) as Uint8Array | undefined, c);
    });
  }

  /**
   * The values of `keys`, read at one point in time, in order, as in a
   * worker: with bytes values a `MultiGetResult` (here its values are
   * copies, sent in one buffer; release it or `using` as in a worker), with
   * a value encoding an array of decoded values.
   */
  multiGet<const O extends RemoteReadOptions<unknown> = RemoteReadOptions<V>>(keys: K[], options?: O): Promise<MultiGot<ReadValueOf<O, V>>> {
    return call(async () => {
      if (!Array.isArray(keys)) throw new SiltError('InvalidArgument', `keys must be an array of keys, got ${show(keys)}`);
      const c = this.#reads(options as RemoteReadOptions<unknown>);
      const bytesKeys = keys.map((k, i) => c.key(k, `keys[${i}]`)); // checks every key here, with its index in the message
      const { snapshot, epoch } = this.#snapshot(options?.snapshot);
      const values = unpack((await this.#send({ op: 'multiGet', keys: bytesKeys, snapshot }, epoch)) as PackedValues);
      return (c.plainValues ? new HeldMultiGetResult(values) : values.map((v) => this.#decoded<unknown>(v, c))) as MultiGot<ReadValueOf<O, V>>;
    });
  }

  snapshot(): Promise<RemoteSnapshot> {
    return call(async () => {
      const info = (await this.#send({ op: 'snapshot' })) as SnapshotInfo;
      return new RemoteSnapshot(this.#connection, info, this.#connection.epoch);
    });
  }

  /** The sequence number of the last write (for `watch({ since })`). */
  latestSequence(): Promise<number> {
    return call(async () => (await this.#send({ op: 'latestSequence' })) as number);
  }

  /**
   * An async iterator over the keys within `options`' bounds; entries come
   * over in batches. Breaking out of `for await` releases it. If the tab
   * that leads goes meanwhile, the next step fails with `LeaderChanged`.
   */
  iterator<IV = V>(options: RemoteIteratorOptions<K, IV> = {}): RemoteIterator<Entry<KeyOf<K>, IV>> {
    if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', 'iterator options must be an object');
    const { snapshot, ...rest } = options;
    const c = this.#codec.with(rest as EncodingOptions<unknown, unknown>);
    const { request, limit } = checkIteratorOptions(rest as RemoteIteratorOptions<unknown, unknown>, c);
    const snap = this.#snapshot(snapshot);
    return this.#iterator({ op: 'iterator', options: request, snapshot: snap.snapshot }, snap.epoch, false, entryOf<KeyOf<K>, IV>(c), limit, c.prefix.length);
  }

  /** The keys within `options`' range, in order (async). */
  keys(options: RemoteIteratorOptions<K, V> = {}): RemoteIterator<KeyOf<K>> {
    return this.#projection(options, (c) => (b, i) => c.keys.decode(b.keyAt(i)) as KeyOf<K>);
  }

  /** The values of the keys within `options`' range, in key order (async). */
  values<IV = V>(options: RemoteIteratorOptions<K, IV> = {}): RemoteIterator<IV> {
    return this.#projection(options, (c) => (b, i) => c.values.decode(b.valueAt(i)) as IV);
  }

  /** The same as `iterator(options)`. */
  entries<IV = V>(options: RemoteIteratorOptions<K, IV> = {}): RemoteIterator<Entry<KeyOf<K>, IV>> {
    return this.iterator<IV>(options);
  }

  #projection<T>(options: RemoteIteratorOptions<unknown, unknown>, pick: (c: Codec) => (b: EntryBatch, i: number) => T): RemoteIterator<T> {
    if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', 'iterator options must be an object');
    const { snapshot, ...rest } = options;
    const c = this.#codec.with(rest as EncodingOptions<unknown, unknown>);
    const { request, limit } = checkIteratorOptions(rest, c);
    const snap = this.#snapshot(snapshot);
    return this.#iterator({ op: 'iterator', options: request, snapshot: snap.snapshot }, snap.epoch, false, pick(c), limit, c.prefix.length);
  }

  /**
   * An iterator the leader opens for `request` (at the first step, or now
   * with `eager`), read through `next` requests made with `epoch`, handing
   * out `pick(batch, i)` for each entry, at most `limit`.
   */
  #iterator<T>(
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
        const id = (await this.#send(request, epoch)) as number;
        return { id, epoch: this.#connection.epoch };
      })());
    const release = async (): Promise<void> => {
      if (done) return;
      done = true;
      if (opened === undefined) return;
      const o = await opened.catch(() => undefined); // never opened: nothing to release
      if (o !== undefined && o.epoch === this.#connection.epoch) await this.#send({ op: 'releaseIterator', iterator: o.id }, o.epoch);
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
            batch = (await this.#send({ op: 'next', iterator: id }, epoch)) as typeof batch;
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
      [Symbol.asyncDispose]: release,
    };
    if (eager) open().catch(() => {}); // (its failure is the first step's)
    return it;
  }

  /**
   * Begins an optimistic transaction, run by the leader for this
   * connection (see `RemoteTransaction`): it may stay open across any
   * `await`; commit or abort it. `transaction(fn)` does that and retries.
   */
  begin(): RemoteTransaction<K, V> {
    if (this.#handle.closed) throw new SiltError('Closed', 'the database was closed');
    const c = this.#connection;
    const host: RemoteTransactionHost = {
      send: (request, epoch) => this.#send(request, epoch),
      iterator: (request, epoch, codec, limit) => this.#iterator(request, epoch, true, entryOf(codec), limit, codec.prefix.length),
      iteratorOptions: (o, codec) => {
        if (typeof o !== 'object' || o === null) throw new SiltError('InvalidArgument', 'iterator options must be an object');
        return checkIteratorOptions(o, codec);
      },
      codecOf: (db) => {
        if (!(db instanceof RemoteDatabase) || !RemoteDatabase.#sameConnection(db, this as RemoteDatabase<unknown, unknown>)) {
          throw new SiltError('InvalidArgument', 'tx.in() takes a sublevel of the database the transaction is on');
        }
        return codecOf(db, 'tx.in()');
      },
      unpack,
      epoch: c.epoch,
      leader: c.leaderId,
      sync: (o) => {
        if (o?.sync !== undefined && typeof o.sync !== 'boolean') throw new SiltError('InvalidArgument', `sync must be a boolean, got ${show(o.sync)}`);
        return syncOf(o);
      },
    };
    return new RemoteTransaction<K, V>(host, c.transactionId(), this.#codec);
  }

  static #sameConnection(a: RemoteDatabase<unknown, unknown>, b: RemoteDatabase<unknown, unknown>): boolean {
    return a.#connection === b.#connection;
  }

  /**
   * Runs `fn` in a transaction and commits it when `fn` returns (or its
   * Promise resolves: `fn` may await anything), returning what `fn`
   * returned. On a conflict (`Conflict`), or when the tab that led went
   * (`LeaderChanged`), `fn` runs again in a new transaction, up to
   * `retries` times with a growing backoff; then that error is thrown. If
   * `fn` throws (or calls `tx.abort()`), nothing is written.
   */
  transaction<T>(fn: (tx: RemoteTransaction<K, V>) => T | Promise<T>, options?: TransactionOptions): Promise<T> {
    return call(async () => {
      if (typeof fn !== 'function') throw new SiltError('InvalidArgument', `transaction() takes a function, got ${show(fn)}`);
      return withRetries(
        options,
        async (commit) => {
          const tx = this.begin();
          try {
            const result = await fn(tx);
            if (!tx.ended) await tx.commit(commit);
            return result;
          } finally {
            tx.abort();
          }
        },
        ['Conflict', 'LeaderChanged'],
      );
    });
  }

  /**
   * Reads `key`, passes its value (a copy, or `undefined`) to `f`, and
   * writes what `f` returns (a value; `null` deletes the key; `undefined`
   * leaves it), in a transaction retried on conflict. Resolves to the new
   * value.
   */
  update(key: K, f: (value: V | undefined) => UpdateResult<V>, options?: TransactionOptions): Promise<V | undefined> {
    return call(async () => {
      this.#codec.key(key); // checked now
      if (typeof f !== 'function') throw new SiltError('InvalidArgument', `update() takes a function, got ${show(f)}`);
      return this.transaction((tx) => updateIn(tx, key, f, this.#codec.plainValues), options);
    });
  }

  /**
   * Committed changes to keys in `options`' range, from every tab, in
   * commit order: an async iterable (`for await (const e of db.watch())`),
   * or, given `callback`, calls to it. Each change once, with its sequence
   * number; a `Gap` where changes could not be had (see `Gap`). A watch that
   * is not read holds at most `WATCH_QUEUE_LIMIT` events, then one `Gap`
   * instead: it never slows writers or grows without bound. Its `ended`
   * rejects if the connection fails (`for await` throws then too).
   */
  watch(options: WatchOptions<K> = {}, callback?: (event: WatchEvent<KeyOf<K>>) => void): Watch<KeyOf<K>> {
    if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', 'watch options must be an object');
    if (this.#handle.closed) throw new SiltError('Closed', 'the database was closed');
    if (callback !== undefined && typeof callback !== 'function') throw new SiltError('InvalidArgument', 'the watch callback must be a function');
    const since = options.since;
    if (since !== undefined && (typeof since !== 'number' || !Number.isSafeInteger(since) || since < 0)) {
      throw new SiltError('InvalidArgument', `since must be a sequence number (an integer from 0), got ${show(since)}`);
    }
    const w = new Watcher(this.#connection, this.#codec, watchRange(options, this.#codec), since, callback as ((e: WatchEvent<unknown>) => void) | undefined);
    this.#connection.watchers.add(w);
    const watch: Watch<KeyOf<K>> = {
      next: () => w.next() as Promise<IteratorResult<WatchEvent<KeyOf<K>>, undefined>>,
      return: async () => {
        w.close();
        return { done: true, value: undefined };
      },
      close: () => w.close(),
      ended: w.ended,
      [Symbol.asyncIterator]() {
        return watch;
      },
      [Symbol.asyncDispose]: async () => w.close(),
    };
    return watch;
  }

  flush(): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'flush' });
    });
  }

  /** Resolves when the leader's background work has caught up. */
  idle(): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'idle' });
    });
  }

  /** Statistics; `storage` is a fresh estimate, taken for this call. */
  statistics(): Promise<RemoteStatistics> {
    return call(async () => (await this.#send({ op: 'statistics' })) as RemoteStatistics);
  }

  /**
   * Reads every table file and checks every checksum and key (see
   * `Database.verify`); rejects with the first damage found.
   */
  verify(): Promise<VerifyReport> {
    return call(async () => (await this.#send({ op: 'verify' })) as VerifyReport);
  }

  /**
   * Lets go of this handle. The connection closes with the realm's last
   * handle: a follower leaves; a leader closes the database (its Web Lock
   * is released, and another tab's connection leads). Closing twice does
   * nothing.
   */
  async close(): Promise<void> {
    if (this.#handle.closed) return;
    this.#handle.closed = true;
    if (--this.#connection.refs === 0) await this.#connection.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Options of `connect`: those of `open`, and how to start the worker. */
export interface ConnectOptions<K = Key, V = Uint8Array> extends OpenOptions<K, V> {
  /** The worker to use if this connection comes to lead (default: siltdb's own worker module). */
  worker?: Worker;
}

/**
 * Connects to the database `name`, shared by every page, iframe and worker
 * of the origin that connects to it: the first connection opens it in a
 * worker it starts, and serves the others; when it goes, another takes
 * over. Several `connect()`s in one realm share one connection (the first
 * one's options apply; the engine options of the connection that leads
 * apply to all). Fails with `DatabaseLocked` if a worker holds the database
 * with `open()`, which does not share it (unless `wait` is set: then this
 * waits until it is closed).
 */
export async function connect<const O extends ConnectOptions<never, never>>(
  name: string,
  options: O,
): Promise<RemoteDatabase<KeyTypeOf<O['keyEncoding'], Key>, ValueTypeOf<O['valueEncoding'], Uint8Array>>>;
/** `connect(name, options)`, of the key and value types given as type parameters (`connect<string, Note>('app', ...)`). */
export async function connect<K = Key, V = Uint8Array>(name: string, options?: ConnectOptions<K, V>): Promise<RemoteDatabase<K, V>>;
export async function connect<K = Key, V = Uint8Array>(name: string, options: ConnectOptions<K, V> = {}): Promise<RemoteDatabase<K, V>> {
  if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', 'options must be an object');
  // The encodings stay in this realm (they may be functions): the worker stores bytes.
  const { worker: given, signal, keyEncoding, valueEncoding, ...openOptions } = options;
  const codec = Codec.root({ keyEncoding, valueEncoding } as EncodingOptions<unknown, unknown>);
  const isSignal = (s: unknown) => typeof s === 'object' && s !== null && 'aborted' in s && typeof (s as AbortSignal).addEventListener === 'function';
  if (signal !== undefined && !isSignal(signal)) throw new SiltError('InvalidArgument', 'signal must be an AbortSignal');
  if (given !== undefined && (typeof given !== 'object' || given === null || typeof (given as Worker).postMessage !== 'function')) {
    throw new SiltError('InvalidArgument', 'worker must be a Worker');
  }
  checkName(name);
  // Here, not in the worker: bad options fail this call, whoever leads.
  checkOptions(openOptions);
  const g = globalThis as { navigator?: { locks?: LockManagerLike }; BroadcastChannel?: unknown; Worker?: unknown };
  if (!g.navigator?.locks || typeof g.BroadcastChannel !== 'function' || (typeof g.Worker !== 'function' && given === undefined)) {
    throw new SiltError(
      'NotSupported',
      'connect() needs Web Locks, BroadcastChannel and Worker, which a browser page, iframe or worker has (on a server, connect in the browser)',
    );
  }
  if (signal?.aborted) throw abortReason(signal);
  const connections = connectionsOf(g.navigator.locks);
  let c = connections.get(name);
  if (c === undefined) {
    c = new Connection(name, openOptions, given, g.navigator.locks);
    connections.set(name, c);
    void c.start();
  }
  const connection = c;
  connection.refs++;
  try {
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(abortReason(signal!));
      signal?.addEventListener('abort', onAbort, { once: true });
      connection.ready.then(resolve, reject).finally(() => signal?.removeEventListener('abort', onAbort));
    });
  } catch (e) {
    if (--connection.refs === 0) await connection.close().catch(() => {});
    throw e;
  }
  return new RemoteDatabase<K, V>(connection, codec);
}
