/**
 * What siltdb uses of the Web Locks API (`navigator.locks`): the database's
 * own lock (opfs/lock.ts), and a connection's lead and client locks
 * (tabs/connection.ts). Apart from both so that the lock and parking
 * (opfs/parking.ts), which parks a held lock, need not import each other.
 */

/** What siltdb uses of `navigator.locks`. */
export interface LockManagerLike {
  request(name: string, options: { ifAvailable?: boolean; signal?: AbortSignal }, callback: (lock: unknown) => Promise<void> | undefined): Promise<unknown>;
}

export interface HeldLock {
  /** Releases the lock (once; later calls do nothing). */
  release(): void;
}

/**
 * Why `signal` aborted: its reason (an `AbortError` DOMException from
 * `abort()`, a `TimeoutError` from `AbortSignal.timeout()`, or what the
 * app passed to `abort(reason)`).
 */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
}
