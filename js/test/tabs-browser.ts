// The browser of a simulated origin for connect() in Node, on the
// scheduler of tabs-world.ts: BroadcastChannel, MessageChannel and
// MessagePort, a SharedWorker that runs the real broker.ts, and a page's
// dedicated worker that runs what worker.ts runs (the real Leader). Every
// message is cloned (and buffers transferred) as postMessage does.
//
// A dead worker's Leader stops at once (no request that had not started
// runs; `halt`), and the test's database refuses its writes from then on,
// so a worker killed in the middle of a request is a crash at that point.
// The database (one in-memory database per origin) passes from worker to
// worker under a lock, as `siltdb:<name>` does, once the previous worker is
// really gone.

import type { Database } from '../src/local/database.js';
import { Leader } from '../src/tabs/leader.js';
import { toWireMessage } from '../src/tabs/answer-wire.js';
import { type Envelope, PROTOCOL, versionOf } from '../src/tabs/protocol.js';
import { currentWorld, Realm, Rng, TRACE, traceLine, setCurrentWorld, type World } from './tabs-world.js';

let objects = 0;

/** A message, short, for a trace. */
export function show(m: unknown): string {
  try {
    return (
      JSON.stringify(m, (k, v) =>
        v instanceof FakePort ? `port${v.id}` : k === 'bytes' || k === 'keys' || k === 'batch' || (k === 'value' && typeof v === 'object') ? '…' : v,
      )?.slice(0, 3000) ?? ''
    );
  } catch {
    return '(unprintable)';
  }
}

/** Clones `data` as postMessage does, transferring `transfer` (fake ports are moved, not cloned). */
function clone(data: unknown, transfer: unknown[] = []): unknown {
  const ports = transfer.filter((t) => t instanceof FakePort);
  const buffers = transfer.filter((t) => !(t instanceof FakePort)) as Transferable[];
  if (ports.length === 0) return structuredClone(data, { transfer: buffers });
  const m = data as Record<string, unknown>;
  const plain: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m)) if (!(v instanceof FakePort)) plain[k] = v;
  const copy = structuredClone(plain, { transfer: buffers }) as Record<string, unknown>;
  for (const [k, v] of Object.entries(m)) if (v instanceof FakePort) copy[k] = v;
  return copy;
}

type Listener = (ev: { data?: unknown; ports?: unknown[]; message?: string; preventDefault(): void }) => void;

class Target {
  #listeners = new Map<string, Set<Listener>>();
  addEventListener(type: string, f: Listener): void {
    let s = this.#listeners.get(type);
    if (s === undefined) {
      s = new Set();
      this.#listeners.set(type, s);
    }
    s.add(f);
  }
  removeEventListener(type: string, f: Listener): void {
    this.#listeners.get(type)?.delete(f);
  }
  dispatch(world: World, type: string, ev: { data?: unknown; ports?: unknown[]; message?: string }): void {
    for (const f of [...(this.#listeners.get(type) ?? [])]) {
      try {
        f({ ...ev, preventDefault() {} });
      } catch (e) {
        if (TRACE) traceLine('listener threw', (e as Error).stack);
        world.errors.push(e);
      }
    }
  }
}

export class FakeBroadcastChannel extends Target {
  readonly id = ++objects;
  readonly realm: Realm;
  closed = false;
  readonly #world: World;
  constructor(readonly name: string) {
    super();
    this.#world = currentWorld();
    this.realm = this.#world.current ?? this.#world.broker;
    this.#world.channels.add(this);
    this.realm.owned.add(this);
  }
  postMessage(m: unknown): void {
    if (this.closed) throw Object.assign(new Error('the channel is closed'), { name: 'InvalidStateError' });
    const w = this.#world;
    // One copy for every receiver (none of them changes what it receives).
    const data = clone(m);
    if (TRACE) traceLine(`bc ${this.id} ${this.name} ${this.realm.name}`, show(m));
    for (const other of w.channels) {
      if (other === this || other.closed || other.name !== this.name) continue;
      w.enqueue(`bc:${this.id}>${other.id}`, this.realm, () => {
        if (!other.closed && !other.realm.dead) w.within(other.realm, () => other.dispatch(w, 'message', { data }));
      });
    }
  }
  close(): void {
    this.shut();
  }
  shut(): void {
    this.closed = true;
    this.#world.channels.delete(this);
    this.realm.owned.delete(this);
  }
}

export class FakePort extends Target {
  readonly id = ++objects;
  realm: Realm;
  partner!: FakePort;
  /** Closed here: nothing more is received or sent. */
  closed = false;
  /** The other end closed: what is sent from here goes nowhere (what it sent before still arrives). */
  orphaned = false;
  #started = false;
  #backlog: (() => void)[] = [];
  readonly #world: World;
  constructor(w: World) {
    super();
    this.#world = w;
    this.realm = w.current ?? w.broker;
    this.realm.owned.add(this);
  }
  postMessage(m: unknown, transfer: unknown[] = []): void {
    if (TRACE) traceLine(`port ${this.id}>${this.partner.id} ${this.realm.name}${this.closed ? ' closed' : ''}${this.orphaned ? ' orphaned' : ''}`, show(m));
    if (this.closed || this.orphaned || this.realm.dead) return;
    const w = this.#world;
    const data = clone(m, transfer);
    const moved = transfer.filter((t): t is FakePort => t instanceof FakePort);
    for (const p of moved) p.realm.owned.delete(p);
    const to = this.partner;
    w.enqueue(`port:${this.id}`, this.realm, () => {
      if (to.closed || to.realm.dead) return;
      const deliver = () => {
        for (const p of moved) {
          p.realm = to.realm;
          to.realm.owned.add(p);
        }
        w.within(to.realm, () => to.dispatch(w, 'message', { data, ports: moved }));
      };
      if (to.#started) deliver();
      else to.#backlog.push(deliver);
    });
  }
  start(): void {
    if (this.#started) return;
    this.#started = true;
    for (const d of this.#backlog.splice(0)) d();
  }
  close(): void {
    this.shut();
  }
  shut(): void {
    this.closed = true;
    this.partner.orphaned = true; // disentangled: nothing more goes either way
    this.realm.owned.delete(this);
  }
}

export class FakeMessageChannel {
  readonly port1: FakePort;
  readonly port2: FakePort;
  constructor() {
    const w = currentWorld();
    this.port1 = new FakePort(w);
    this.port2 = new FakePort(w);
    this.port1.partner = this.port2;
    this.port2.partner = this.port1;
  }
}

/** The real broker's factory (broker.ts's `startBroker`), once imported (install). */
let startBroker: (() => (e: { ports: unknown[] }) => void) | undefined;

/** The SharedWorker instance of each world: its realm and its `connect` handler; a new one once it died (`World.kill(instance.realm)`). */
const brokers = new WeakMap<World, { realm: Realm; connect: (e: { ports: unknown[] }) => void }>();
let brokerInstances = 0;

/** The world's live broker instance, started if there is none (the first SharedWorker, or one after the instance died). */
export function brokerOf(w: World): { realm: Realm; connect: (e: { ports: unknown[] }) => void } {
  let b = brokers.get(w);
  if (b === undefined || b.realm.dead) {
    const realm = new Realm(`broker${++brokerInstances}`, 'broker');
    b = { realm, connect: w.within(realm, () => startBroker!()) as (e: { ports: unknown[] }) => void };
    brokers.set(w, b);
  }
  return b;
}

export class FakeSharedWorker extends Target {
  readonly port: FakePort;
  constructor() {
    super();
    const w = currentWorld();
    const c = new FakeMessageChannel();
    this.port = c.port1;
    const theirs = c.port2;
    const b = brokerOf(w);
    b.realm.owned.add(theirs);
    theirs.realm.owned.delete(theirs);
    theirs.realm = b.realm;
    w.enqueue(`sw:${theirs.id}`, w.current ?? w.broker, () => {
      if (!b.realm.dead) w.within(b.realm, () => b.connect({ ports: [theirs] }));
    });
  }
}

/** The database of a world, passed from worker to worker; writes of a worker that died fail. */
export class Storage {
  #holder: FakeWorker | undefined;
  #waiting: (() => void)[] = [];
  constructor(readonly db: Database) {}

  get holder(): FakeWorker | undefined {
    return this.#holder;
  }

  /** Waits for the database, as `open()` waits for its lock, and holds it until `release` is called. */
  acquire(w: FakeWorker): Promise<() => void> {
    return new Promise((resolve) => {
      const take = () => {
        this.#holder = w;
        let done = false;
        resolve(() => {
          if (done) return;
          done = true;
          this.#holder = undefined;
          this.#waiting.shift()?.();
        });
      };
      if (this.#holder === undefined) take();
      else this.#waiting.push(take);
    });
  }
}

/** A page's dedicated worker, running what worker.ts runs: the real Leader, on the world's database. */
export class FakeWorker extends Target {
  readonly id = ++objects;
  readonly inner: Realm;
  leader: Leader | undefined;
  #release: (() => void) | undefined;
  #local = '';
  readonly #world: World;
  constructor(
    w: World,
    readonly page: Realm,
    readonly storage: Storage,
  ) {
    super();
    this.#world = w;
    this.inner = new Realm(`${page.name}/worker`, 'worker');
    this.inner.onKill = () => {
      const l = this.leader;
      const release = () => this.#release?.();
      if (l === undefined) release();
      else void l.halt().then(release, release);
    };
    const parentKill = page.onKill;
    page.onKill = () => {
      parentKill?.();
      w.kill(this.inner);
    };
  }

  postMessage(m: unknown, transfer: unknown[] = []): void {
    if (TRACE) traceLine(`to worker ${this.id} of ${this.page.name}`, show(m));
    if (this.page.dead || this.inner.dead) return;
    const data = clone(m, transfer);
    const moved = transfer.filter((t): t is FakePort => t instanceof FakePort);
    for (const p of moved) p.realm.owned.delete(p);
    this.#world.enqueue(`w:${this.id}>`, this.page, () => {
      if (this.inner.dead) return;
      for (const p of moved) {
        p.realm = this.inner;
        this.inner.owned.add(p);
      }
      this.#world.within(this.inner, () => this.#onMessage(data as Record<string, unknown>));
    });
  }

  terminate(): void {
    if (TRACE) traceLine('terminate', this.page.name, new Error().stack?.split('\n').slice(2, 6).join(' | '));
    this.#world.kill(this.inner, this.#closed);
  }

  /** The worker fails (an uncaught error, out of memory): it dies and its page hears `error`. */
  crash(): void {
    const w = this.#world;
    w.kill(this.inner);
    w.enqueue(`w:${this.id}<err`, w.broker, () => {
      if (!this.page.dead) w.within(this.page, () => this.dispatch(w, 'error', { message: 'crashed' }));
    });
  }

  #post(m: unknown, transfer: Transferable[] = []): void {
    if (TRACE) traceLine('worker post', this.page.name, show(m));
    if (this.inner.dead) return;
    const data = clone(m, transfer);
    this.#world.enqueue(`w:${this.id}<`, this.inner, () => {
      if (!this.page.dead) this.#world.within(this.page, () => this.dispatch(this.#world, 'message', { data }));
    });
  }

  #onMessage(data: Record<string, unknown> | unknown[]): void {
    if (Array.isArray(data)) {
      // Calls issued together (outbox.ts), as worker.ts takes them.
      const envelopes = data as Envelope[];
      if (this.leader !== undefined) this.leader.receive(this.#local, envelopes);
      else for (const e of envelopes) this.#post({ id: e.id, from: this.#local, ok: false, error: { code: 'Closed', message: 'the database is not open' } });
      return;
    }
    if (typeof data.t === 'string') {
      if (data.t === 'open') {
        if (versionOf(data) === PROTOCOL) void this.#open(data as { name: string; leader: string });
        else this.#post({ t: 'openFailed', error: { code: 'VersionMismatch', message: 'another version' } });
      } else if (data.t === 'attach') this.leader?.attach(data.client as string, data.port as MessagePort | undefined, versionOf(data));
      else if (data.t === 'close') void this.#close();
      else if (data.t === 'ping') this.#post({ t: 'pong' });
      return;
    }
    const envelope = data as unknown as Envelope;
    if (this.leader === undefined) {
      this.#post({ id: envelope.id, from: this.#local, ok: false, error: { code: 'Closed', message: 'the database is not open' } });
      return;
    }
    this.leader.receive(this.#local, envelope);
  }

  async #open(m: { name: string; leader: string }): Promise<void> {
    const release = await this.storage.acquire(this);
    this.#release = release;
    if (this.inner.dead) {
      release();
      return;
    }
    this.#post({ t: 'locked' });
    const w = this.#world;
    try {
      const leader = w.within(this.inner, () => new Leader(this.storage.db, m.name, m.leader, w.locks.view(this.inner)));
      this.leader = leader;
      this.#local = m.leader;
      leader.addLocal(
        m.leader,
        (r, transfer) => {
          const [message, t] = toWireMessage(r, false, transfer);
          this.#post(message, t);
        },
        (change) => this.#post(change, []),
      );
      await leader.sweep();
      this.#post({ t: 'opened', seq: this.storage.db.latestSequence(), opened: leader.opened });
    } catch (e) {
      if (TRACE) traceLine('openFailed', e);
      this.#post({ t: 'openFailed', error: { code: 'Internal', message: String(e) } });
    }
  }

  async #close(): Promise<void> {
    try {
      await this.leader?.close();
    } finally {
      this.#closed = true;
      this.#post({ t: 'closed' });
    }
  }

  #closed = false;
}

/** Installs the fakes as globals (and imports the real broker into them); returns how to put the originals back. */
export async function install(w: World): Promise<void> {
  setCurrentWorld(w);
  const g = globalThis as Record<string, unknown>;
  if (saved === undefined) {
    saved = {};
    for (const k of ['BroadcastChannel', 'MessageChannel', 'MessagePort', 'SharedWorker', 'setTimeout', 'clearTimeout', 'navigator', 'Worker']) saved[k] = g[k];
  }
  g.BroadcastChannel = FakeBroadcastChannel;
  g.MessageChannel = FakeMessageChannel;
  g.MessagePort = FakePort;
  g.SharedWorker = FakeSharedWorker;
  g.Worker = FakeWorker;
  // Connection ids decide the order of write records, and so of the
  // leader's sweep: drawn from the seed, so that a schedule repeats.
  const ids = new Rng(w.seed ^ 0x5eed);
  const hex = (n: number) => Array.from({ length: n }, () => ids.int(16).toString(16)).join('');
  savedUUID ??= [Object.getOwnPropertyDescriptor(globalThis.crypto, 'randomUUID')];
  Object.defineProperty(globalThis.crypto, 'randomUUID', {
    value: () => `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`,
    configurable: true,
    writable: true,
  });
  g.setTimeout = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => currentWorld().setTimeout(fn, ms, ...args);
  g.clearTimeout = (id: unknown) => currentWorld().clearTimeout(id);
  if (startBroker === undefined) {
    // (Its module registers an instance of its own: not used.)
    const add = g.addEventListener;
    g.addEventListener = () => {};
    startBroker = (await import('../src/broker.js')).startBroker as unknown as typeof startBroker;
    g.addEventListener = add;
  }
}

let saved: Record<string, unknown> | undefined;
let savedUUID: [PropertyDescriptor | undefined] | undefined;

/** Puts the globals back. */
export function uninstall(): void {
  const g = globalThis as Record<string, unknown>;
  if (saved === undefined) return;
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete g[k];
    else g[k] = v;
  }
  const own = savedUUID?.[0];
  if (own !== undefined) Object.defineProperty(globalThis.crypto, 'randomUUID', own);
  else delete (globalThis.crypto as { randomUUID?: unknown }).randomUUID; // the prototype's again
  savedUUID = undefined;
  saved = undefined;
  setCurrentWorld(undefined);
}
