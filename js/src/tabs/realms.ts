/**
 * The connections of each realm (connection.ts: `C`), by database name, and
 * the ids they go by.
 */

import type { LockManagerLike } from '../core/web-locks.js';

/** A new connection id (its requests', its write records', its client lock's). */
export function randomId(): string {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/**
 * The connections of each realm, by database name. Keyed by the realm's
 * `navigator.locks` (each realm has its own): one map in a browser realm;
 * the Node tests run several simulated realms in one.
 */
const realms = new WeakMap<LockManagerLike, Map<string, unknown>>();

/** @internal The connections of the realm of `locks` (connect.ts finds and adds its connection there). */
export function connectionsOf<C>(locks: LockManagerLike): Map<string, C> {
  let m = realms.get(locks) as Map<string, C> | undefined;
  if (m === undefined) {
    m = new Map();
    realms.set(locks, m);
  }
  return m;
}
