// A connection that leads tells its own worker's lock from an exclusive
// open()'s by asking its worker, not by the time: on a slow machine the
// worker may hold the database's lock with its `locked` report still on the
// way when the lock query answers (found by issue 32's runs beside two CPU
// hogs: Firefox's scenarios through connect() failed with DatabaseLocked).
// Nor is the lock of an earlier leader's worker that has not ended yet (a
// slow failover), which holds a lock of its own for as long as it lives.
// A stub worker and stub locks, real timers (one second of silence).
import { describe, expect, test } from 'vitest';
import type { LockManagerLike } from '../src/core/web-locks.js';
import { Connection } from '../src/tabs/connection.js';

/** Locks granted at once; the database's own reported held (by the worker, or by an open() elsewhere), and `also`. */
function locks(also: string[] = []): LockManagerLike & { query(): Promise<{ held: { name: string }[] }> } {
  return {
    request(_name: string, ...rest: unknown[]) {
      const cb = rest.at(-1) as (lock: unknown) => unknown;
      return Promise.resolve(cb({}));
    },
    query: async () => ({ held: [{ name: 'siltdb:db' }, ...also.map((name) => ({ name }))] }),
  } as never;
}

/**
 * A worker that took the database's lock just before the connection's
 * check, its `locked` still in flight (posted before anything it posts
 * later); `answersPing: false` for one whose lock is not its own (an
 * open() elsewhere holds it): it never reports `locked`.
 */
class StubWorker extends EventTarget {
  #locked: boolean;
  constructor(locked: boolean, lockedAfterMs?: number) {
    super();
    this.#locked = locked;
    if (lockedAfterMs !== undefined) {
      setTimeout(() => {
        this.#post({ t: 'locked' });
        this.#post({ t: 'opened', seq: 0, opened: 0 });
      }, lockedAfterMs);
    }
  }
  #post(data: unknown): void {
    this.dispatchEvent(Object.assign(new Event('message'), { data }));
  }
  postMessage(m: { t?: string }): void {
    if (m.t === 'close') setTimeout(() => this.#post({ t: 'closed' }), 1);
    if (m.t !== 'ping') return;
    setTimeout(() => {
      if (this.#locked) this.#post({ t: 'locked' });
      this.#post({ t: 'pong' });
      // (Opened a while later.)
      if (this.#locked) setTimeout(() => this.#post({ t: 'opened', seq: 0, opened: 0 }), 50);
    }, 10);
  }
  terminate(): void {}
}

describe('a leading connection and the database lock', () => {
  test("its own worker's lock, reported late, is not taken for an open()'s", async () => {
    const c = new Connection('db', {}, new StubWorker(true) as unknown as Worker, locks());
    void c.start();
    await expect(c.ready).resolves.toBeUndefined();
    await c.close();
  }, 20_000);

  test("the lock of a leader's worker still going (a slow failover) is not taken for an open()'s: the connection waits for it", async () => {
    // Another leader's worker lives yet (its lock), with the database's lock; this worker has it 2.5 s later.
    const c = new Connection('db', {}, new StubWorker(false, 2_500) as unknown as Worker, locks(['siltdb:db:worker:old-leader']));
    void c.start();
    await expect(c.ready).resolves.toBeUndefined();
    await c.close();
  }, 20_000);

  test("a lock its worker does not hold is an open()'s: DatabaseLocked, saying how to wait", async () => {
    const c = new Connection('db', {}, new StubWorker(false) as unknown as Worker, locks());
    void c.start();
    await expect(c.ready).rejects.toMatchObject({ code: 'DatabaseLocked', message: expect.stringMatching(/wait: true/) });
    await c.close();
  }, 20_000);
});
