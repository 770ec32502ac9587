/**
 * Calls issued together travel together (issue 34): the requests a page
 * makes in one task (a `Promise.all` of gets, a component tree reading its
 * keys, writes made one after another without awaiting) go to the leader
 * as one message, an array of envelopes (runs of gets packed:
 * request-wire.ts), posted once the task's own work is done (a microtask). The leader answers the requests of one message in
 * one message too (leader.ts, `Answers`). Each request keeps its own id,
 * answer, error and place in the order; one whose arguments cannot be
 * cloned fails alone (the others are posted again one by one).
 */

import type { Envelope } from './protocol.js';
import { toWireRequests, type WireRequest } from './request-wire.js';

export class Outbox {
  #queued: Envelope[] = [];
  readonly #post: (message: Envelope | WireRequest[]) => void;
  readonly #refuse: (envelope: Envelope, error: unknown) => void;

  /**
   * `post` sends a message to the leader now (throwing what
   * `postMessage` throws); `refuse` fails a request that could not be
   * sent.
   */
  constructor(post: (message: Envelope | WireRequest[]) => void, refuse: (envelope: Envelope, error: unknown) => void) {
    this.#post = post;
    this.#refuse = refuse;
  }

  /** Sends `envelope` with the others of this task, when it ends. */
  add(envelope: Envelope): void {
    if (this.#queued.length === 0) queueMicrotask(() => this.flush());
    // Sent again in the same task (a new leader's link): once.
    const i = this.#queued.findIndex((e) => e.id === envelope.id);
    if (i >= 0) this.#queued.splice(i, 1);
    this.#queued.push(envelope);
  }

  /** Sends what waits now: one envelope as itself, more as one array. */
  flush(): void {
    const queued = this.#queued;
    if (queued.length === 0) return;
    this.#queued = [];
    if (queued.length > 1) {
      try {
        this.#post(toWireRequests(queued));
        return;
      } catch (e) {
        // One of them cannot be cloned (nothing was sent): each alone, so
        // that only that one fails.
        if (!refused(e)) return;
      }
    }
    for (const e of queued) {
      try {
        this.#post(e);
      } catch (error) {
        if (refused(error)) this.#refuse(e, error);
      }
    }
  }
}

/**
 * Whether `postMessage` threw `e` because the structured clone refused the
 * message (a function, a Symbol): the caller's arguments. Anything else
 * (the channel closed under a connection that is going) leaves the
 * requests pending: sent again on the next link, or failed with the
 * connection.
 */
function refused(e: unknown): boolean {
  return (e as { name?: unknown } | null)?.name === 'DataCloneError';
}
