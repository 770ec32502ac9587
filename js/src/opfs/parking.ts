/**
 * Parking: a database closed in a worker keeps its OPFS sync access
 * handles and its Web Lock for a few seconds, so that opening it again in
 * the same worker skips what costs most in an open and a close: opening a
 * sync access handle on every pooled file (about 0.25 ms each in Chromium)
 * and closing them all again (about 0.35 ms each). A database of 40 pooled
 * files reopens in a millisecond or two instead of 30.
 *
 * Nobody else is kept waiting for it. Whoever wants a database whose lock
 * is held asks first, on the BroadcastChannel `siltdb:<name>` (`askHolder`):
 * a parked database lets go at once and answers `released`; an open one
 * answers `busy`, and if the asker means to wait, it remembers that, and
 * its `close()` lets go instead of parking. A parked database also lets go
 * after `PARK_MS` on its own, when its worker ends, and when a worker of
 * the origin needs the handles it keeps (`yieldHandles`, handle-budget.ts).
 */

import type { HeldLock } from '../core/web-locks.js';
import { holdsHandles } from './handle-budget.js';
import type { PoolKeeper } from './pool.js';

/** How long a closed database stays parked if nobody reopens it. */
export const PARK_MS = 5_000;
/** How long an asker waits for an answer. */
const ASK_MS = 250;

type Message = { t: 'ask'; id: string; wait: boolean } | { t: 'busy' | 'released'; id: string };

/** What a realm holds of one database: open, or parked after close. */
interface Holder {
  channel: BroadcastChannel | undefined;
  /** Someone waits for the lock: close lets go instead of parking. */
  wanted: boolean;
  parked: { keeper: PoolKeeper; lock: HeldLock; reserve: number; timer: ReturnType<typeof setTimeout>; unregister: () => void } | undefined;
}

const holders = new Map<string, Holder>();

function channelOf(name: string): BroadcastChannel | undefined {
  return typeof BroadcastChannel === 'function' ? new BroadcastChannel(`siltdb:${name}`) : undefined;
}

/** Lets go of a parked database: closes its files, releases its lock. */
function unparkAndRelease(name: string, h: Holder): void {
  const p = h.parked;
  if (p === undefined) return;
  h.parked = undefined;
  clearTimeout(p.timer);
  p.unregister();
  try {
    p.keeper.close();
  } finally {
    p.lock.release();
  }
  forget(name, h);
}

function forget(name: string, h: Holder): void {
  h.channel?.close();
  h.channel = undefined;
  if (holders.get(name) === h) holders.delete(name);
}

/** Lets go of every database parked in this realm (their handles and locks). */
export function releaseAllParked(): void {
  for (const [name, h] of [...holders]) if (h.parked !== undefined) unparkAndRelease(name, h);
}

/**
 * Registers the database `name` as open in this realm (its lock held):
 * answers askers until `closed` or `parked` says what became of it.
 */
export function holdOpen(name: string): Holder {
  const h: Holder = { channel: channelOf(name), wanted: false, parked: undefined };
  holders.set(name, h);
  h.channel?.addEventListener('message', (ev: MessageEvent<Message>) => {
    const m = ev.data;
    if (m?.t !== 'ask') return;
    if (h.parked !== undefined) {
      unparkAndRelease(name, h);
      // A new channel just to answer: this one is closed now.
      const reply = channelOf(name);
      reply?.postMessage({ t: 'released', id: m.id } satisfies Message);
      reply?.close();
      return;
    }
    if (m.wait) h.wanted = true;
    h.channel?.postMessage({ t: 'busy', id: m.id } satisfies Message);
  });
  return h;
}

/** Whether the database should park at close (nobody waits for it). */
export function mayPark(h: Holder): boolean {
  return !h.wanted && h.channel !== undefined;
}

/** Parks a database just closed with its files left open. */
export function park(name: string, h: Holder, keeper: PoolKeeper, lock: HeldLock, reserve: number): void {
  h.parked = {
    keeper,
    lock,
    reserve,
    timer: setTimeout(() => unparkAndRelease(name, h), PARK_MS),
    // When the handle budget runs short, here or in another worker, it lets go.
    unregister: holdsHandles({ yieldHandles: () => unparkAndRelease(name, h) }),
  };
}

/** The database closed for good: stops answering for it. */
export function closed(name: string, h: Holder): void {
  forget(name, h);
}

/**
 * Takes the parked database `name` for a reopen in this realm: its pool
 * (files open) and its lock, still held. A pool kept for another reserve
 * or handle budget is let go instead.
 */
export function takeParked(name: string, reserve: number, handleBudget: number): { keeper: PoolKeeper; lock: HeldLock } | undefined {
  const h = holders.get(name);
  const p = h?.parked;
  if (h === undefined || p === undefined) return undefined;
  if (p.reserve !== reserve || p.keeper.budgetLimit !== handleBudget) {
    unparkAndRelease(name, h);
    return undefined;
  }
  clearTimeout(p.timer);
  p.unregister();
  h.parked = undefined;
  forget(name, h);
  return { keeper: p.keeper, lock: p.lock };
}

/** Lets go of `name` if it is parked in this realm (before removing it, say). */
export function releaseParked(name: string): void {
  const h = holders.get(name);
  if (h !== undefined) unparkAndRelease(name, h);
}

/**
 * Asks whoever holds `name`'s lock to let go if it is only parked. Resolves
 * to `released` (the lock is being released), `busy` (the database is open
 * there) or `silent` (no answer in time: an older siltdb, or no
 * BroadcastChannel).
 */
export function askHolder(name: string, wait: boolean): Promise<'released' | 'busy' | 'silent'> {
  const channel = channelOf(name);
  if (channel === undefined) return Promise.resolve('silent');
  const id = `${Date.now()}-${Math.random()}`;
  return new Promise((resolve) => {
    const done = (answer: 'released' | 'busy' | 'silent') => {
      clearTimeout(timer);
      channel.close();
      resolve(answer);
    };
    const timer = setTimeout(() => done('silent'), ASK_MS);
    channel.addEventListener('message', (ev: MessageEvent<Message>) => {
      const m = ev.data;
      if ((m?.t === 'busy' || m?.t === 'released') && m.id === id) done(m.t);
    });
    channel.postMessage({ t: 'ask', id, wait } satisfies Message);
  });
}

export type { Holder };
