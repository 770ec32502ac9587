/**
 * The handle budget (issue 38): how many OPFS sync access handles siltdb
 * keeps open in an origin at once, every database of every worker
 * together, parked ones included (`handleBudget`, default
 * `DEFAULT_HANDLE_BUDGET`: 128).
 *
 * Every pooled file of an open database is an open sync access handle
 * (pool.ts), and Safari refuses more than about 252 open at once (PGlite
 * met it: its PR 130). Chromium and Firefox set no such limit, but an app's
 * other libraries (SQLite's opfs-sahpool keeps its own) share whatever
 * limit there is. So siltdb stays within a budget, 128 by default.
 *
 * The budget is counted in slices of `HANDLES_PER_SLICE` handles, one Web
 * Lock each (`siltdb-handles:<i>`, i below budget / slice): a worker holds
 * as many slices as its databases' handles need, takes one more (if one is
 * free in the origin) before it opens handles past them, and lets go of
 * those it no longer needs. A worker that ends loses its locks with its
 * handles, so nothing is ever counted for a worker that is gone. When no
 * slice is free, databases that are only parked (closed a moment ago,
 * parking.ts) are asked to let go, and open ones to close their free files
 * past what a call needs (`yieldHandles`), in this worker and in the
 * others, and the request is tried again; then it fails with
 * `PoolExhausted` naming the budget.
 */

import { SiltError } from '../core/errors.js';
import type { HeldLock, LockManagerLike } from '../core/web-locks.js';

/** Handles one Web Lock of the budget stands for. */
export const HANDLES_PER_SLICE = 8;

const SLICE_LOCK = 'siltdb-handles:';

/** How long, after asking parked databases to let go, to keep trying for a slice (ms, each wait). */
const RETRY_MS = [25, 50, 100, 200, 400];

/** What the budget needs of `navigator.locks`: `query` where the browser has it (all current ones do). */
interface LocksWithQuery extends LockManagerLike {
  query?(): Promise<{ held?: { name?: string }[]; pending?: { name?: string }[] }>;
}

/** The handles siltdb's databases of one realm hold, and the slices of the budget that cover them. */
export class RealmHandles {
  readonly #locks: LocksWithQuery;
  readonly #slices = new Map<number, HeldLock>();
  /** Handles open (or about to be opened by a take that succeeded). */
  #held = 0;
  /** Handles a take in progress waits for: its slices must not be let go meanwhile. */
  #wanted = 0;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(locks: LockManagerLike) {
    this.#locks = locks as LocksWithQuery;
  }

  /** Handles siltdb holds open in this realm. */
  get held(): number {
    return this.#held;
  }

  /** Handles the slices this realm holds cover. */
  get covered(): number {
    return this.#slices.size * HANDLES_PER_SLICE;
  }

  /**
   * Counts `n` more handles, within `budget` for the origin, taking slices
   * of it first if those held do not cover them; rejects with
   * `PoolExhausted` (`what` says for what) when the origin has none left,
   * once the holders that can give some back (`yieldHandles`, here and in
   * the other workers) did not free enough in time. Takes are served one at
   * a time.
   */
  take(n: number, budget: number, what: string): Promise<void> {
    const run = this.#queue.then(() => this.#take(n, budget, what));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #take(n: number, budget: number, what: string): Promise<void> {
    if (n <= 0) return;
    const slices = Math.floor(budget / HANDLES_PER_SLICE);
    this.#wanted = n;
    try {
      let asked = false;
      for (let attempt = 0; ; attempt++) {
        const need = Math.ceil((this.#held + n) / HANDLES_PER_SLICE);
        if (need <= this.#slices.size) break;
        if (need <= slices && (await this.#takeSlices(need - this.#slices.size, slices))) continue;
        // None free: databases only parked let go, and open ones give back
        // the free files past what a call needs, here and in other workers.
        if (!asked) {
          asked = true;
          yieldHandles();
          askOthersToYield();
        }
        if (attempt >= RETRY_MS.length) throw this.#exhausted(n, budget, what);
        await new Promise((r) => setTimeout(r, RETRY_MS[attempt]));
      }
      this.#held += n;
    } finally {
      this.#wanted = 0;
    }
  }

  /** Takes up to `count` free slices below `slices`; whether it took any. */
  async #takeSlices(count: number, slices: number): Promise<boolean> {
    let busy = new Set<number>();
    if (typeof this.#locks.query === 'function') {
      try {
        const state = await this.#locks.query();
        for (const l of state.held ?? []) {
          if (l.name?.startsWith(SLICE_LOCK)) busy.add(Number(l.name.slice(SLICE_LOCK.length)));
        }
      } catch {
        busy = new Set();
      }
    }
    const free: number[] = [];
    for (let i = 0; i < slices && free.length < count; i++) if (!this.#slices.has(i) && !busy.has(i)) free.push(i);
    if (free.length === 0) return false;
    const got = await Promise.all(free.map((i) => tryLock(this.#locks, `${SLICE_LOCK}${i}`)));
    let any = false;
    got.forEach((lock, k) => {
      if (lock === null) return;
      this.#slices.set(free[k]!, lock);
      any = true;
    });
    if (any) return true;
    // Taken meanwhile by another worker (or `query` is missing): look at every slice, one at a time.
    for (let i = 0; i < slices; i++) {
      if (this.#slices.has(i)) continue;
      const lock = await tryLock(this.#locks, `${SLICE_LOCK}${i}`);
      if (lock !== null) {
        this.#slices.set(i, lock);
        return true;
      }
    }
    return false;
  }

  /** `n` handles were closed: slices no longer needed are let go. */
  give(n: number): void {
    this.#held = Math.max(0, this.#held - n);
    const keep = Math.ceil((this.#held + this.#wanted) / HANDLES_PER_SLICE);
    if (this.#slices.size <= keep) return;
    // The highest first, so that the low ones stay with the workers that have them.
    const mine = [...this.#slices.keys()].sort((a, b) => b - a);
    for (const i of mine.slice(0, this.#slices.size - keep)) {
      this.#slices.get(i)!.release();
      this.#slices.delete(i);
    }
  }

  #exhausted(n: number, budget: number, what: string): SiltError {
    const mine = this.#held;
    if (Math.ceil((mine + n) / HANDLES_PER_SLICE) > Math.floor(budget / HANDLES_PER_SLICE)) {
      return new SiltError(
        'PoolExhausted',
        `${what} needs ${n} more OPFS sync access handle${n === 1 ? '' : 's'}, and with the ${mine} this worker's databases hold that is more than ` +
          `siltdb's budget of ${budget} for this origin allows: close a database you no longer use, or open with a larger handleBudget ` +
          `(Safari refuses more than about 252 open handles; Chromium and Firefox set no such limit)`,
      );
    }
    return new SiltError(
      'PoolExhausted',
      `${what} needs ${n} more OPFS sync access handle${n === 1 ? '' : 's'}, and siltdb's budget of ${budget} for this origin is used up ` +
        `(this worker's databases hold ${mine}, other workers of the origin the rest): close a database you no longer use, ` +
        `or open with a larger handleBudget (Safari refuses more than about 252 open handles; Chromium and Firefox set no such limit)`,
    );
  }
}

/** One lock request that does not wait: the held lock, or null if it is taken. */
function tryLock(locks: LockManagerLike, name: string): Promise<HeldLock | null> {
  return new Promise<HeldLock | null>((resolve) => {
    locks
      .request(name, { ifAvailable: true }, (lock) => {
        if (lock === null) {
          resolve(null);
          return undefined;
        }
        let free!: () => void;
        const held = new Promise<void>((r) => (free = r));
        let released = false;
        resolve({
          release() {
            if (released) return;
            released = true;
            free();
          },
        });
        return held;
      })
      .catch(() => resolve(null));
  });
}

/** Something that holds handles it can give back when the budget runs short (a pool's free files). */
export interface Yielder {
  yieldHandles(): void;
}

const yielders = new Set<Yielder>();

/** Where a worker short of handles asks the other workers of the origin to give some back. */
const NEED_CHANNEL = 'siltdb-handles';

/** This realm's listener on `NEED_CHANNEL`, while it has a holder. */
let listener: BroadcastChannel | undefined;

/**
 * Registers `y` (a parked database, a pool's free files) while it holds
 * handles: it gives them back when the budget runs short here, or in
 * another worker (which asks on `NEED_CHANNEL`). The returned function
 * unregisters it.
 */
export function holdsHandles(y: Yielder): () => void {
  yielders.add(y);
  if (listener === undefined && typeof BroadcastChannel === 'function') {
    listener = new BroadcastChannel(NEED_CHANNEL);
    listener.addEventListener('message', () => yieldHandles());
  }
  return () => {
    yielders.delete(y);
    if (yielders.size === 0) {
      listener?.close();
      listener = undefined;
    }
  };
}

/** Every registered holder of this realm gives back what it can spare. */
export function yieldHandles(): void {
  for (const y of [...yielders]) y.yieldHandles();
}

/** Asks every other realm of the origin to give back what its holders can spare. */
function askOthersToYield(): void {
  if (typeof BroadcastChannel !== 'function') return;
  const c = new BroadcastChannel(NEED_CHANNEL);
  c.postMessage({ t: 'need' });
  c.close();
}

/** What a pool keeper counts its handles in: a realm's budget, or `UNCOUNTED`. */
export type HandleCounter = Pick<RealmHandles, 'take' | 'give' | 'held'>;

/** Handles that cost no budget: files held in memory (the IndexedDB storage). */
export const UNCOUNTED: HandleCounter = {
  take: () => Promise.resolve(),
  give: () => {},
  held: 0,
};

const realms = new WeakMap<LockManagerLike, RealmHandles>();

/** The handles of this realm counted against the budget kept with `locks` (navigator.locks in a browser). */
export function realmHandles(locks: LockManagerLike): RealmHandles {
  let r = realms.get(locks);
  if (r === undefined) {
    r = new RealmHandles(locks);
    realms.set(locks, r);
  }
  return r;
}
