/**
 * One writer per database across tabs and workers: a Web Lock named after
 * the database, held from open to close.
 */

import { SiltError } from './errors.js';

/** What siltdb uses of `navigator.locks`. */
export interface LockManagerLike {
  request(name: string, options: { ifAvailable?: boolean; signal?: AbortSignal }, callback: (lock: unknown) => Promise<void> | undefined): Promise<unknown>;
}

export interface HeldLock {
  /** Releases the lock (once; later calls do nothing). */
  release(): void;
}

/**
 * Locks being released by this realm, by name: the lock manager frees a
 * lock asynchronously after its callback's promise settles, so a reopen
 * right after a close waits for that instead of seeing its own lock.
 */
const releasing = new Map<string, Promise<unknown>>();

/**
 * Takes the database's lock. Without `wait`, a lock held elsewhere fails
 * at once with `DatabaseLocked`; with it, this waits until the lock is free
 * or `signal` aborts (then `DatabaseLocked` too).
 */
export async function acquireLock(locks: LockManagerLike, name: string, wait: boolean, signal: AbortSignal | undefined): Promise<HeldLock> {
  const key = `siltdb:${name}`;
  await releasing.get(key);
  if (signal?.aborted) throw new SiltError('DatabaseLocked', `gave up waiting for database "${name}": the wait was aborted`);
  return new Promise<HeldLock>((resolve, reject) => {
    let free!: () => void;
    const held = new Promise<void>((r) => (free = r));
    const options = wait ? (signal ? { signal } : {}) : { ifAvailable: true };
    const done: Promise<unknown> = locks
      .request(key, options, (lock) => {
        if (lock === null) {
          reject(
            new SiltError('DatabaseLocked', `database "${name}" is open in another tab or worker (its Web Lock is held); open it with { wait: true } to wait`),
          );
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
        const aborted = (e as { name?: unknown }).name === 'AbortError';
        reject(
          aborted
            ? new SiltError('DatabaseLocked', `gave up waiting for database "${name}": the wait was aborted`, { cause: e })
            : new SiltError('Internal', `Web Lock request failed: ${String(e)}`, { cause: e }),
        );
      });
  });
}
