/**
 * The connection behind `connect()`: one database shared by every page,
 * iframe and worker of an origin, with Promises (its handles:
 * remote-database.ts).
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

import { SiltError } from '../core/errors.js';
import { markStage } from '../core/marks.js';
import type { HeldLock, LockManagerLike } from '../core/web-locks.js';
import type { OpenOptions } from '../local/options.js';
import { sendOpen, startWorker } from './worker-start.js';
import { BrokerLine } from './broker-line.js';
import { leaderChanged, locksRefused, openElsewhere, whatOf } from './connection-errors.js';
import { fromWire, names, PROTOCOL, versionMismatch, versionOf } from './protocol.js';
import type { ChangeRecord, Request, Response, RosterMessage, Welcome, WorkerControl, WorkerReport } from './protocol.js';
import { eachAnswer, isAnswers, type WireAnswer } from './answer-wire.js';
import { closeWorker, onResume, readLeaderMessage } from './connection-lines.js';
import { isChangeRecord, isObject, NAME } from './wire-checks.js';
import { PendingRequests } from './pending.js';
import { PageCache } from './page-cache.js';
import { connectionsOf, randomId } from './realms.js';
import { ChangeFeed, type Watcher } from './watch.js';

/** How long a new leader's worker may wait for the database's lock before a held lock is taken for an exclusive `open()`. */
const LEADER_SILENCE_MS = 1_000;
/** How long a follower waits for the leader's welcome before asking again. */
const WELCOME_MS = 1_000;

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
  #parking: BroadcastChannel;
  #own: BroadcastChannel | undefined;
  /** This realm's port to the broker (broker.ts), where SharedWorker exists. */
  #broker: BrokerLine;
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
  /** What passes the change records heard to this connection's watches (watch.ts). */
  readonly #feed = new ChangeFeed();
  /** The page cache (page-cache.ts), if asked for. */
  readonly cache: PageCache | undefined;
  /** This connection's requests that wait for answers (pending.ts). */
  readonly #requests: PendingRequests;
  #worker: Worker | undefined;
  #role: 'none' | 'follower' | 'leading' | 'leader' = 'none';
  /** The leader requests go to (this connection's id when it leads). */
  #leader: string | undefined;
  /** Numbers of this connection's transactions. */
  #nextTransaction = 1;
  /** Whether the leader has welcomed this connection (requests can go out). */
  #linked = false;
  /**
   * The number of the leader followed; snapshots and iterators remember
   * theirs. A leader followed again keeps its number: what this connection
   * made there lives on (leader.ts keeps it, and answers requests sent to
   * it again as the first time).
   */
  epoch = 0;
  #epochs = new Map<string, number>();
  #lastEpoch = 0;
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
  #offResume: () => void;
  /** Pings of `#checkExclusive` waiting for their worker's pong. */
  #pongs: (() => void)[] = [];
  refs = 0;

  constructor(name: string, options: Omit<OpenOptions, 'signal'>, given: Worker | undefined, locks: LockManagerLike, pageCacheCapacity = 0) {
    this.name = name;
    this.cache = pageCacheCapacity > 0 ? new PageCache(pageCacheCapacity) : undefined;
    this.#requests = new PendingRequests((m) => {
      // Unlinked since (its leader went in this task): sent again on the next link.
      if (!this.#linked) return;
      if (this.#role === 'leader') this.#worker?.postMessage(m);
      else if (this.#via instanceof MessagePort) this.#via.postMessage(m);
      else this.#own?.postMessage(m);
    }, this.cache !== undefined);
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
    // The broker introduces followers to the leader's worker (spawn.ts).
    this.#broker = new BrokerLine((m) => {
      if (m.t === 'attach' && this.#role === 'leader') {
        this.#worker?.postMessage({ t: 'attach', client: m.client, port: m.port, v: versionOf(m) } satisfies WorkerControl, [m.port]);
      }
    });
    // A page frozen (a hidden tab, bfcache) may have missed change records:
    // its watches check when it resumes.
    this.#offResume = onResume(() => {
      for (const w of this.watchers) void w.check();
      this.cache?.reset();
    });
    // Exclusive open()s ask whoever holds the lock to let go if only parked
    // (parking.ts): a leader is not parked.
    this.#parking = new BroadcastChannel(`siltdb:${name}`);
    this.#parking.addEventListener('message', (ev: MessageEvent<{ t?: string; id?: string }>) => {
      if (ev.data?.t === 'ask' && (this.#role === 'leader' || this.#role === 'leading')) this.#parking.postMessage({ t: 'busy', id: ev.data.id });
    });
  }

  /** This connection's watches. */
  get watchers(): Set<Watcher> {
    return this.#feed.watchers;
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
   * for `LEADER_SILENCE_MS`: if the lock is held, and not by its worker
   * (asked, not guessed from the time: a slow machine's worker may have
   * the lock with its word of it still on the way), a worker holds it with
   * `open()`. Tell the connections that wait for this one, and fail unless
   * told to wait.
   */
  async #checkExclusive(): Promise<void> {
    if (this.#role !== 'leading' || this.#workerLocked) return;
    const query = (this.#locks as { query?: () => Promise<{ held?: { name?: string }[] }> }).query;
    const state = query ? await query.call(this.#locks).catch(() => undefined) : undefined;
    const held = state?.held?.some((l) => l.name === `siltdb:${this.name}`) ?? true;
    if (!held || this.#role !== 'leading' || this.#workerLocked) return;
    // The worker of a leader before this one lives yet (a slow machine's
    // failover): the lock is its; look again later.
    const mine = this.#names.workerLock(this.client);
    const going = this.#names.workerLock('');
    if (state?.held?.some((l) => l.name !== undefined && l.name !== mine && l.name.startsWith(going))) {
      setTimeout(() => void this.#checkExclusive(), LEADER_SILENCE_MS);
      return;
    }
    // Held, maybe by this connection's own worker, whose `locked` is still
    // on its way (a slow machine: the query's answer overtook it). The
    // worker answers a ping after whatever it posted before it.
    const worker = this.#worker;
    if (worker === undefined) return;
    // (A worker of an older siltdb, given as `worker`, does not answer: then
    // the lock is taken as an open()'s after a while longer.)
    await new Promise<void>((pong) => {
      this.#pongs.push(pong);
      setTimeout(pong, 10 * LEADER_SILENCE_MS);
      worker.postMessage({ t: 'ping' } satisfies WorkerControl);
    });
    if (this.#role !== 'leading' || this.#workerLocked || this.#worker !== worker) return;
    this.#blocked = true;
    this.#roster.postMessage({ t: 'leader', leader: this.client, ready: false, blocked: true, v: PROTOCOL } satisfies RosterMessage);
    if (!this.#isReady && !this.#wait) this.#fail(openElsewhere(this.name));
  }

  #onRoster(m: RosterMessage): void {
    // Another tab's message, checked before it is read (a buggy or other siltdb may post anything).
    if (this.#dead !== undefined || !isObject(m) || ('leader' in m && NAME(m.leader) !== undefined)) return;
    switch (m.t) {
      case 'who':
        if (this.#role === 'leader' || this.#role === 'leading') {
          this.#roster.postMessage({
            t: 'leader',
            leader: this.client,
            ready: this.#role === 'leader',
            ...(this.#blocked ? { blocked: true } : {}),
            v: PROTOCOL,
          } satisfies RosterMessage);
        }
        return;
      case 'leader':
        if (m.leader === this.client) return;
        // The tab that leads waits for a worker's open(): so would this.
        if (m.blocked && !this.#isReady && !this.#wait && this.#role === 'none') this.#fail(openElsewhere(this.name));
        if (m.ready && this.#mayFollow(m.leader)) {
          // The leader followed, not welcomed yet: attempt again; another: if it lives.
          if (m.leader === this.#leader) this.#follow(m.leader);
          else this.#followIfAlive(m.leader);
        }
        return;
      case 'hello':
        if (this.#role === 'leader' && m.leader === this.client && NAME(m.client) === undefined) {
          this.#worker?.postMessage({ t: 'attach', client: m.client, v: versionOf(m) } satisfies WorkerControl);
          // A follower with a broker that did not know this leader (a new
          // instance: the one this leader told died) or did not answer.
          if (m.broker === true && !this.#closing) this.#broker.renew();
        }
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
   * has gone since: following it would leave the leader that leads now
   * for a while (coming back, requests without an answer are sent to it
   * again). A connection that leads holds its client lock until it goes,
   * so a free lock means that leader is gone (a held one may be a watcher
   * of that lock learning that it went).
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
      this.epoch = this.#epochs.get(leader) ?? ++this.#lastEpoch;
      this.#epochs.set(leader, this.epoch);
    }
    this.#role = 'follower';
    this.#linked = false;
    this.cache?.unlink();
    if (this.#via instanceof MessagePort) this.#via.close();
    this.#via = undefined;
    // An attempt before this one, not welcomed: its port goes (the leader
    // closes it anyway once this attempt's port reaches it).
    this.#attempt?.close();
    this.#attempt = undefined;
    // Once this leader is asked over the channel, always over the channel:
    // a port attached after a hello would be closed by the leader when the
    // hello reaches it, under a follower that took that port's welcome.
    if (this.#broker.available && this.#helloFor !== leader) {
      // A port straight to the leader's worker, through the broker.
      const { port1: port, port2 } = new MessageChannel();
      this.#attempt = port;
      port.addEventListener('message', (ev: MessageEvent<unknown>) =>
        readLeaderMessage(ev.data, leader, {
          answer: this.#answer,
          hear: (r) => this.#hear(r),
          welcome: (w) => port === this.#attempt && this.#welcomed(w, port),
          unknown: () => {
            if (port !== this.#attempt || this.#leader !== leader || this.#linked) return;
            // The broker does not know that leader: its channel, then.
            this.#attempt = undefined;
            port.close();
            this.#hello(leader);
          },
        }),
      );
      port.start();
      this.#broker.post({ t: 'connect', name: this.name, leader, client: this.client, port: port2, v: PROTOCOL }, [port2]);
    } else {
      this.#hello(leader);
    }
    clearTimeout(this.#welcomeTimer);
    this.#welcomeTimer = setTimeout(
      () => {
        // No welcome: that leader went meanwhile, or it is slow. Ask who
        // leads now (an answer from the same leader makes a new attempt).
        if (this.#role !== 'follower' || this.#linked || this.#dead !== undefined) return;
        if (this.#attempt !== undefined && this.#leader === leader) {
          // Nor did the broker say `unknown`, which it does within a
          // second: its instance died under this page (broker-line.ts), or
          // the leader went after the handover. A new broker for later
          // leaders; this one over the channel (it answers if it lives).
          this.#attempt.close();
          this.#attempt = undefined;
          this.#broker.renew();
          this.#hello(leader);
        }
        this.#roster.postMessage({ t: 'who' } satisfies RosterMessage);
      },
      this.#broker.available ? 2 * WELCOME_MS : WELCOME_MS,
    );
  }

  /** Asks leader `leader` to serve this connection over its BroadcastChannel. */
  #hello(leader: string): void {
    this.#helloFor = leader;
    if (this.#own === undefined) {
      const own = new BroadcastChannel(this.#names.client(this.client));
      own.addEventListener('message', (ev: MessageEvent<unknown>) =>
        readLeaderMessage(ev.data, undefined, {
          answer: this.#answer,
          hear: (r) => this.#hear(r),
          welcome: (w) => this.#attempt === undefined && this.#welcomed(w, 'channel'),
        }),
      );
      this.#own = own;
    }
    const hello: RosterMessage = { t: 'hello', client: this.client, leader, v: PROTOCOL };
    this.#roster.postMessage(this.#broker.available ? { ...hello, broker: true } : hello);
  }

  #welcomed(m: Welcome, via: MessagePort | 'channel'): void {
    if (this.#role !== 'follower' || m.leader !== this.#leader || this.#linked) return;
    if (versionOf(m) !== PROTOCOL) {
      // The tab that leads runs another siltdb: nothing it answers could be read.
      this.#fail(versionMismatch(PROTOCOL, versionOf(m), this.name));
      return;
    }
    if (typeof m.seq !== 'number' || typeof m.opened !== 'number') return;
    clearTimeout(this.#welcomeTimer);
    this.#linked = true;
    this.#via = via;
    this.#attempt = undefined;
    this.#settleReady();
    if (this.#closing) {
      // Its goodbye went out: the leader it went to may have forgotten this
      // connection's write record with it (and died before its answers
      // came), so what had no answer cannot be sent again: sent again it
      // would be applied again. It ends with the connection.
      this.#requests.failAll(new SiltError('Closed', 'the database was closed while this call waited for a new leader; it may have been applied'));
      return;
    }
    this.#requests.resend(this.epoch);
    this.#feed.link(m.leader, m.seq, m.opened);
    this.#linkCache(m.leader);
  }

  /** Linked to `leader`: the page cache starts empty there, and that leader is asked for its change records. */
  #linkCache(leader: string): void {
    if (this.cache === undefined) return;
    this.cache.link(leader);
    this.send({ op: 'changes', since: null, watch: true }).catch(() => {});
  }

  /** This connection holds the lead lock: start the worker, which opens the database, and lead. */
  #lead(lock: HeldLock): void {
    markStage('lead');
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
    this.cache?.unlink();
    this.epoch = ++this.#lastEpoch; // a new worker: nothing lives there yet
    this.#epochs.set(this.client, this.epoch);
    clearTimeout(this.#welcomeTimer);
    this.#roster.postMessage({ t: 'leader', leader: this.client, ready: false, v: PROTOCOL } satisfies RosterMessage);
    setTimeout(() => void this.#checkExclusive(), LEADER_SILENCE_MS);
    let worker: Worker;
    let modulePosted: Promise<void> | undefined;
    try {
      if (this.#given !== undefined) worker = this.#given;
      else ({ worker, modulePosted } = startWorker());
    } catch (e) {
      this.#fail(new SiltError('InitFailed', `the siltdb worker could not be started: ${String(e)}`, { cause: e }));
      return;
    }
    this.#worker = worker;
    worker.addEventListener('message', (ev: MessageEvent<WireAnswer | WireAnswer[] | WorkerReport>) => {
      // What a worker sent before this connection failed (its crash) is not news.
      if (this.#dead !== undefined) return;
      const m = ev.data;
      if (isAnswers(m)) {
        eachAnswer(m, this.client, this.#answer);
        return;
      }
      if (m.t === 'change') {
        this.#hear(m.record);
      } else if (m.t === 'pong') {
        this.#pongs.shift()?.();
      } else if (m.t === 'locked') {
        this.#workerLocked = true;
        this.#blocked = false;
      } else if (m.t === 'opened') {
        markStage('opened');
        this.#role = 'leader';
        this.#linked = true;
        this.#broker.lead(this.name, this.client);
        this.#roster.postMessage({ t: 'leader', leader: this.client, ready: true, seq: m.seq, v: PROTOCOL } satisfies RosterMessage);
        this.#settleReady();
        this.#requests.resend(this.epoch);
        this.#feed.link(this.client, m.seq, m.opened ?? m.seq);
        this.#linkCache(this.client);
      } else if (m.t === 'openFailed') {
        this.#fail(fromWire(m.error));
      }
    });
    worker.addEventListener('error', (event: ErrorEvent) => {
      event.preventDefault();
      const code = this.#role === 'leading' ? 'InitFailed' : 'Internal';
      this.#fail(new SiltError(code, `the siltdb worker failed: ${event.message || 'it could not be loaded'}`));
    });
    const open = { t: 'open', name: this.name, options: this.#options, leader: this.client, v: PROTOCOL } satisfies WorkerControl;
    const current = () => this.#worker === worker;
    sendOpen(worker, modulePosted, open, current, (e) => this.#fail(e));
  }

  readonly #answer = (r: Response): void => this.#requests.answer(r, this.#leader);

  /** A change record from a leader, on a line of this connection: for its watches (watch.ts). */
  #hear(record: ChangeRecord): void {
    if (!isChangeRecord(record)) return; // not one this package wrote: nothing can be read of it
    this.cache?.hear(record);
    this.#feed.hear(record, this.#linked, this.#leader);
  }

  /** Its last watch closed (`valuesOnly`: its last watch with values): change records need not come (a page cache still needs them), nor carry values. */
  stopWatching(valuesOnly = false): void {
    if (this.#closing || this.#dead !== undefined) return;
    this.send({ op: 'changes', since: null, watch: valuesOnly || this.cache !== undefined, values: false }).catch(() => {});
  }

  /** The id of the leader this connection sends to ('' while it knows none). */
  get leaderId(): string {
    return this.#leader ?? '';
  }

  /** Writes of this connection waiting for their answers (counted with a page cache: its reads skip it meanwhile). */
  get writing(): number {
    return this.#requests.writing;
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
    // Made for the leader followed now (or the one its snapshot or
    // iterator lives in), even if it waits for that leader's welcome.
    return this.#requests.add(request, epoch ?? this.epoch, this.#linked);
  }

  /** The connection cannot go on: every pending and later call fails with `error`. */
  #fail(error: SiltError): void {
    if (this.#dead) return;
    this.#dead = error;
    this.#settleReady(error);
    this.#teardown();
    this.#requests.failAll(error);
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
    this.#parking.close();
    this.#own?.close();
    if (this.#via instanceof MessagePort) this.#via.close();
    this.#attempt?.close();
    this.#feed.clear();
    this.cache?.unlink();
    this.#broker.unlead();
    this.#broker.close();
    this.#offResume();
    this.#forget();
  }

  /** This realm's `connect()` calls no longer find this connection. */
  #forget(): void {
    const connections = connectionsOf<Connection>(this.#locks);
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
        await closeWorker(this.#worker, 10_000);
      } else if (this.#role === 'follower' && this.#linked) {
        await Promise.race([this.send({ op: 'bye' }).catch(() => {}), new Promise((r) => setTimeout(r, 1_000))]);
      }
    } finally {
      this.#fail(new SiltError('Closed', 'the database was closed'));
    }
  }
}
