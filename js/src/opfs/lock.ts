/**
 * One writer per database across tabs and workers: a Web Lock named after
 * the database, held from open to close.
 */

import { SiltError } from '../core/errors.js';
import { abortReason, type HeldLock, type LockManagerLike } from '../core/web-locks.js';
import { askHolder } from './parking.js';

/**
 * Locks being released by this realm, by name: the lock manager frees a
 * lock asynchronously after its callback's promise settles, so a reopen
 * right after a close waits for that instead of seeing its own lock.
 */
const releasing = new Map<string, Promise<unknown>>();

/**
 * Takes the database's lock. Without `wait`, a lock held elsewhere fails
 * at once with `DatabaseLocked`; with it, this waits until the lock is free
 * or `signal` aborts (then it throws the signal's reason, as `fetch` does). A holder that only keeps
 * the database parked after closing it (parking.ts) is asked to let go
 * first, and does.
 */
export async function acquireLock(locks: LockManagerLike, name: string, wait: boolean, signal: AbortSignal | undefined): Promise<HeldLock> {
  const key = `siltdb:${name}`;
  await releasing.get(key);
  if (signal?.aborted) throw abortReason(signal);
  const now = await requestLock(locks, key, name, { ifAvailable: true });
  if (now !== null) return now;
  const answer = await askHolder(name, wait);
  if (answer === 'released') {
    // Being released there: wait for it, but not for ever.
    const soon = AbortSignal.timeout(RELEASE_WAIT_MS);
    const both = signal && typeof AbortSignal.any === 'function' ? AbortSignal.any([signal, soon]) : soon;
    try {
      const got = await requestLock(locks, key, name, { signal: both });
      if (got !== null) return got;
    } catch {
      // The caller gave up; otherwise it took too long: held after all.
      if (signal?.aborted) throw abortReason(signal);
    }
  }
  if (!wait) throw locked(name);
  let got: HeldLock | null;
  try {
    got = await requestLock(locks, key, name, signal ? { signal } : {});
  } catch (e) {
    if (signal?.aborted) throw abortReason(signal);
    throw e;
  }
  if (got === null) throw locked(name);
  return got;
}

/**
 * `lock`, released only once `ready()` settles: a database kept in
 * IndexedDB lets go of its lock once its last writes are committed there,
 * so that whoever takes the lock next reads them. A reopen in this realm
 * meanwhile waits for that (`releasing`).
 */
export function releasedAfter(lock: HeldLock, name: string, ready: () => Promise<unknown>): HeldLock {
  const key = `siltdb:${name}`;
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      releasing.set(
        key,
        ready()
          .catch(() => {})
          .then(() => {
            lock.release();
            return releasing.get(key);
          }),
      );
    },
  };
}

/** How long to wait for a parked holder that said it lets go. */
const RELEASE_WAIT_MS = 2_000;

function locked(name: string): SiltError {
  return new SiltError(
    'DatabaseLocked',
    `database "${name}" is open in another tab or worker (its Web Lock is held): to share it, call connect("${name}") everywhere ` +
      `(pages and workers alike; open() holds a database for one worker alone); else close it there, or pass { wait: true } to wait until it is closed`,
  );
}

/**
 * One lock request: the lock, or null when `ifAvailable` found it held.
 * An aborted wait is `DatabaseLocked`.
 */
function requestLock(locks: LockManagerLike, key: string, name: string, options: { ifAvailable?: boolean; signal?: AbortSignal }): Promise<HeldLock | null> {
  return new Promise<HeldLock | null>((resolve, reject) => {
    let free!: () => void;
    const held = new Promise<void>((r) => (free = r));
    const done: Promise<unknown> = locks
      .request(key, options, (lock) => {
        if (lock === null) {
          resolve(null);
          return undefined;
        }
        let released = false;
        resolve({
          release() {
            if (released) return;
            released = true;
            releasing.set(key, done);
            free();
          },
        });
        return held;
      })
      .catch((e: unknown) => {
        const aborted = (e as { name?: unknown }).name === 'AbortError' || (e as { name?: unknown }).name === 'TimeoutError';
        reject(
          aborted
            ? new SiltError('DatabaseLocked', `gave up waiting for database "${name}": the wait was aborted`, { cause: e })
            : new SiltError('Internal', `Web Lock request failed: ${String(e)}`, { cause: e }),
        );
      });
  });
}
