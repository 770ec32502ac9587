// The scheduler of a simulated origin for connect() in Node (the browser's
// pieces are in tabs-browser.ts): realms, and one loop that delivers every
// message, grants every lock and fires every timer, in an order that a
// seeded random number generator picks (or the order of posting). Each
// link keeps its messages in order, as browsers do; links are interleaved
// freely. Timers run on a virtual clock: a schedule of many seconds takes
// milliseconds. After each event every microtask runs (and the database's
// own immediate tasks), as a browser runs them after each task.
//
// A realm can be killed (a tab closed or crashed): its channels and ports
// close, its locks go, messages it had in flight are cut at a random point,
// and its worker dies with it (tabs-browser.ts).

import { appendFileSync } from 'node:fs';
import type { LockManagerLike } from '../src/core/web-locks.js';
import type { FakeBroadcastChannel } from './tabs-browser.js';

/** Whether to trace every event (SILT_WORLD_TRACE=1): read once, process.env is slow. */
export const TRACE = process.env.SILT_WORLD_TRACE === '1';

/** A line of a trace (SILT_WORLD_TRACE, SILT_MODEL_TRACE), to /tmp/silt-trace.log. */
export function traceLine(...parts: unknown[]): void {
  if (!TRACE && !process.env.SILT_MODEL_TRACE) return;
  appendFileSync('/tmp/silt-trace.log', `${parts.map((p) => (typeof p === 'string' ? p : String(p))).join(' ')}\n`);
}

/** A small seeded PRNG (mulberry32). */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0;
  }
  next(): number {
    this.#s = (this.#s + 0x6d2b79f5) >>> 0;
    let t = this.#s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(a: readonly T[]): T {
    return a[this.int(a.length)]!;
  }
}

export class Realm {
  dead = false;
  readonly owned = new Set<{ shut(): void }>();
  onKill: (() => void) | undefined;
  constructor(
    readonly name: string,
    readonly kind: 'page' | 'worker' | 'broker',
  ) {}
}

interface Delivery {
  from: Realm;
  order: number;
  run(): void;
}

interface Timer {
  id: number;
  at: number;
  order: number;
  realm: Realm | undefined;
  run(): void;
}

/** How far ahead a timer may fire while messages wait (`slow`). */
const SLOW_MS = 2_500;

export class World {
  readonly rng: Rng;
  /** 'random': a seeded pick among links; 'fifo': the oldest message first. */
  mode: 'random' | 'fifo';
  now = 0;
  /** How often a due message waits while a timer fires first (a slow or frozen realm). */
  slow = 0;
  #order = 0;
  #queues = new Map<string, Delivery[]>();
  #timers = new Map<number, Timer>();
  #nextTimer = 1;
  current: Realm | undefined;
  /** Links whose messages wait (a test's hold), by a test of their key and the realm the next one is from. */
  holds: ((key: string, from: Realm) => boolean)[] = [];
  /** Every open BroadcastChannel (tabs-browser.ts). */
  readonly channels = new Set<FakeBroadcastChannel>();
  readonly errors: unknown[] = [];
  readonly locks = new LockHub(this);
  readonly broker = new Realm('broker', 'broker');
  steps = 0;

  constructor(
    readonly seed: number,
    mode: 'random' | 'fifo' = 'random',
  ) {
    this.rng = new Rng(seed);
    this.mode = mode;
  }

  enqueue(key: string, from: Realm, run: () => void): void {
    if (from.dead) return;
    let q = this.#queues.get(key);
    if (q === undefined) {
      q = [];
      this.#queues.set(key, q);
    }
    q.push({ from, order: this.#order++, run });
  }

  /** Runs `f` as code of `realm` (what it creates is the realm's). */
  within<T>(realm: Realm | undefined, f: () => T): T {
    const before = this.current;
    this.current = realm;
    try {
      return f();
    } finally {
      this.current = before;
    }
  }

  setTimeout = (fn: (...a: unknown[]) => void, ms = 0, ...args: unknown[]): number => {
    const id = this.#nextTimer++;
    const realm = this.current;
    this.#timers.set(id, { id, at: this.now + Math.max(0, ms), order: this.#order++, realm, run: () => fn(...args) });
    return id;
  };

  clearTimeout = (id: unknown): void => {
    if (typeof id === 'number') this.#timers.delete(id);
  };

  /**
   * Kills `realm`: a tab (or worker) gone at once. What it had in flight is
   * cut at a random point, unless `clean` (a worker terminated by its page
   * once it said it closed: what it posted before has left).
   */
  kill(realm: Realm, clean = false): void {
    if (realm.dead) return;
    if (TRACE) traceLine('kill', realm.name);
    realm.dead = true;
    for (const o of [...realm.owned]) o.shut();
    realm.owned.clear();
    this.locks.killRealm(realm);
    for (const [id, t] of this.#timers) if (t.realm === realm && realm.kind === 'page') this.#timers.delete(id);
    // What it had in flight: a random prefix of each link still arrives.
    for (const q of clean ? [] : this.#queues.values()) {
      const mine = q.filter((d) => d.from === realm);
      if (mine.length === 0) continue;
      const cut = mine[this.rng.int(mine.length + 1)];
      if (cut === undefined) continue;
      const at = q.indexOf(cut);
      const drop = new Set(q.slice(at).filter((d) => d.from === realm));
      const kept = q.filter((d) => !drop.has(d));
      q.length = 0;
      q.push(...kept);
    }
    realm.onKill?.();
  }

  #ready(): [string, Delivery[]][] {
    const out: [string, Delivery[]][] = [];
    for (const e of this.#queues) {
      if (e[1].length === 0) continue;
      if (this.holds.some((h) => h(e[0], e[1][0]!.from))) continue;
      out.push(e);
    }
    return out;
  }

  /** Pending messages (not held). */
  get pending(): number {
    let n = 0;
    for (const [, q] of this.#ready()) n += q.length;
    return n;
  }

  #fire(t: Timer): void {
    this.#timers.delete(t.id);
    if (t.realm?.dead && t.realm.kind === 'page') return;
    this.within(t.realm, () => {
      try {
        t.run();
      } catch (e) {
        this.errors.push(e);
      }
    });
  }

  /** The timer due first (by time, then by when it was set). */
  #earliest(): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.#timers.values()) if (best === undefined || t.at < best.at || (t.at === best.at && t.order < best.order)) best = t;
    return best;
  }

  /**
   * One event: a message delivered, a lock granted or a due timer fired;
   * else the clock moves to the next timer (not past `until`). False when
   * nothing is left to do.
   */
  async step(until = Number.POSITIVE_INFINITY): Promise<boolean> {
    const ready = this.#ready();
    const due: Timer[] = [];
    for (const t of this.#timers.values()) if (t.at <= this.now) due.push(t);
    if (ready.length > 0 || due.length > 0) {
      if (this.slow > 0 && this.#timers.size > 0 && this.rng.chance(this.slow)) {
        // A realm slow for a second or two (busy, or frozen in the background).
        const t = this.#earliest()!;
        if (t.at <= until && t.at - this.now <= SLOW_MS) {
          this.now = Math.max(this.now, t.at);
          this.#fire(t);
          await settle();
          this.steps++;
          return true;
        }
      }
      let choice: Delivery[] | Timer;
      if (this.mode === 'fifo') {
        const all: (Delivery[] | Timer)[] = [...ready.map((e) => e[1]), ...due];
        choice = all.reduce((a, b) => (orderOf(b) < orderOf(a) ? b : a));
      } else {
        const n = ready.length + due.length;
        const i = this.rng.int(n);
        choice = i < ready.length ? ready[i]![1] : due[i - ready.length]!;
      }
      if (Array.isArray(choice)) {
        const d = choice.shift()!;
        if (TRACE) traceLine('deliver', [...this.#queues].find((e) => e[1] === choice)?.[0], d.from.name);
        try {
          d.run();
        } catch (e) {
          this.errors.push(e);
        }
      } else this.#fire(choice);
      await settle();
      this.steps++;
      return true;
    }
    const t = this.#earliest();
    if (t === undefined || t.at > until) return false;
    this.now = t.at;
    this.#fire(t);
    await settle();
    this.steps++;
    return true;
  }

  /** Runs until nothing is left to do, or the clock would pass `now + ms`. */
  async run(ms = 60_000, maxSteps = 1_000_000): Promise<void> {
    const until = this.now + ms;
    for (let i = 0; i < maxSteps; i++) {
      if (await this.step(until)) continue;
      // The database's own tasks (setImmediate) may post more.
      await settle();
      await settle();
      if (!(await this.step(until))) return;
    }
    throw new Error(`no quiescence after ${maxSteps} steps`);
  }

  /** Runs until `p` settles (or nothing is left to do), then returns how it settled. */
  async until<T>(p: Promise<T>, ms = 60_000): Promise<{ ok: true; value: T } | { ok: false; error: unknown } | undefined> {
    let out: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    p.then(
      (value) => (out = { ok: true, value }),
      (error: unknown) => (out = { ok: false, error }),
    );
    const until = this.now + ms;
    await settle();
    while (out === undefined) {
      if (!(await this.step(until))) {
        await settle();
        if (out !== undefined || !(await this.step(until))) break;
      }
    }
    return out;
  }

  /** Runs until `pred()` holds (true), or nothing is left to do (false). */
  async runUntil(pred: () => boolean, ms = 60_000): Promise<boolean> {
    const until = this.now + ms;
    await settle();
    while (!pred()) {
      if (!(await this.step(until))) {
        await settle();
        if (pred()) return true;
        if (!(await this.step(until))) return false;
      }
    }
    return true;
  }

  /** A new page. */
  page(name: string): Realm {
    return new Realm(name, 'page');
  }
}

function orderOf(x: Delivery[] | Timer): number {
  return Array.isArray(x) ? x[0]!.order : x.order;
}

const realSetImmediate = globalThis.setImmediate;
/** Lets every microtask (and the database's own immediate tasks) run. */
export function settle(): Promise<void> {
  return new Promise((r) => realSetImmediate(r));
}

/** The world whose fakes `new BroadcastChannel()` and friends make now (tabs-browser.ts). */
let world: World | undefined;
export function setCurrentWorld(w: World | undefined): void {
  world = w;
}
export function currentWorld(): World {
  if (world === undefined) throw new Error('no world');
  return world;
}

/** Locks of one origin, with a view per realm; a killed realm's locks go, its waits with them. */
export class LockHub {
  #held = new Map<string, Req>();
  #waiting = new Map<string, Req[]>();
  constructor(readonly world: World) {}

  isHeld(name: string): boolean {
    return this.#held.has(name);
  }

  view(realm: Realm): LockManagerLike & { query(): Promise<{ held: { name: string }[] }> } {
    return {
      request: (name, options, callback) => this.#request(realm, name, options, callback),
      query: async () => ({ held: [...this.#held.keys()].map((name) => ({ name })) }),
    };
  }

  #request(
    realm: Realm,
    name: string,
    options: { ifAvailable?: boolean; signal?: AbortSignal },
    cb: (lock: unknown) => Promise<void> | undefined,
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (realm.dead) return;
      const req: Req = { realm, name, cb, resolve, reject };
      const queue = this.#waiting.get(name) ?? [];
      if (!this.#held.has(name) && queue.length === 0) {
        this.#grant(req);
        return;
      }
      if (options.ifAvailable) {
        this.world.enqueue(`lock:${name}`, realm, () => {
          if (realm.dead) return;
          this.world.within(realm, () => this.#run(req, null));
        });
        return;
      }
      if (options.signal?.aborted) {
        reject(Object.assign(new Error('aborted'), { name: 'AbortError' }));
        return;
      }
      queue.push(req);
      this.#waiting.set(name, queue);
      options.signal?.addEventListener('abort', () => {
        const at = queue.indexOf(req);
        if (at < 0) return;
        queue.splice(at, 1);
        reject(Object.assign(new Error('aborted'), { name: 'AbortError' }));
      });
    });
  }

  #grant(req: Req): void {
    this.#held.set(req.name, req);
    this.world.enqueue(`lock:${req.name}`, this.world.broker, () => {
      if (this.#held.get(req.name) !== req || req.realm.dead) return;
      this.world.within(req.realm, () => this.#run(req, { name: req.name }));
    });
  }

  #run(req: Req, lock: unknown): void {
    let r: Promise<void> | undefined;
    try {
      r = req.cb(lock);
    } catch (e) {
      if (lock !== null) this.#release(req);
      req.reject(e);
      return;
    }
    Promise.resolve(r).then(
      (v) => {
        if (lock !== null) this.#release(req);
        req.resolve(v);
      },
      (e: unknown) => {
        if (lock !== null) this.#release(req);
        req.reject(e);
      },
    );
  }

  #release(req: Req): void {
    if (this.#held.get(req.name) !== req) return;
    this.#held.delete(req.name);
    const queue = this.#waiting.get(req.name) ?? [];
    const next = queue.shift();
    if (queue.length === 0) this.#waiting.delete(req.name);
    if (next !== undefined) this.#grant(next);
  }

  killRealm(realm: Realm): void {
    for (const [name, q] of this.#waiting) {
      const left = q.filter((r) => r.realm !== realm);
      if (left.length > 0) this.#waiting.set(name, left);
      else this.#waiting.delete(name);
    }
    for (const req of [...this.#held.values()]) if (req.realm === realm) this.#release(req);
  }
}

interface Req {
  realm: Realm;
  name: string;
  cb: (lock: unknown) => Promise<void> | undefined;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}
