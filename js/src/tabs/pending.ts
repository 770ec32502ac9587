/**
 * The requests of a connection (connection.ts) that wait for their
 * answers: numbered in the order they are made, sent to the leader in
 * that order (requests of one task together: outbox.ts), sent again in
 * that order to a new leader, each settled by its answer from the leader
 * it was last sent to.
 */

import type { SiltError } from '../core/errors.js';
import { lostWithLeader, notSent } from './connection-errors.js';
import { Outbox } from './outbox.js';
import { type Envelope, fromWire, leaderStateOf, type Request, type Response, WRITES } from './protocol.js';
import type { WireRequest } from './request-wire.js';

/** A request: `epoch`, the leader it was made for (its snapshot's or iterator's, or the one followed when it was made). */
type Pending = { id: number; request: Request; epoch: number; resolve(v: unknown): void; reject(e: SiltError): void };

export class PendingRequests {
  #pending = new Map<number, Pending>();
  #nextId = 1;
  /** Writes waiting for their answers, if counted (a connection with a page cache reads past it meanwhile). */
  writing = 0;
  readonly #countWrites: boolean;
  readonly #outbox: Outbox;

  /**
   * `post` sends a message to the leader now (or drops it if the
   * connection is not linked any more: `resend` sends it again);
   * `countWrites`: keep `writing`.
   */
  constructor(post: (message: Envelope | WireRequest[]) => void, countWrites: boolean) {
    this.#countWrites = countWrites;
    this.#outbox = new Outbox(post, (envelope, e) => {
      this.#pending.get(envelope.id)?.reject(notSent(envelope.request, e));
      this.#pending.delete(envelope.id);
    });
  }

  /** A new request made for leader `epoch`; sent now if `linked`, else when a leader links (`resend`). */
  add(request: Request, epoch: number, linked: boolean): Promise<unknown> {
    const id = this.#nextId++;
    const counted = this.#countWrites && WRITES.has(request.op);
    if (counted) this.writing++;
    return new Promise((resolve, reject) => {
      const p: Pending = { id, request, epoch, resolve, reject };
      if (counted) {
        p.resolve = (v) => {
          this.writing--;
          resolve(v);
        };
        p.reject = (e) => {
          this.writing--;
          reject(e);
        };
      }
      this.#pending.set(id, p);
      if (linked) this.#post(p);
    });
  }

  /** Settles the request `r` answers (an answer from a leader other than `leader`, the one sent to now, is not taken). */
  answer(r: Response, leader: string | undefined): void {
    // An answer from a leader that has since been replaced: the request was
    // sent again to the new one, whose answer counts.
    if (r.from !== leader) return;
    const p = this.#pending.get(r.id);
    if (p === undefined) return;
    this.#pending.delete(r.id);
    if (r.ok) p.resolve(r.value);
    else p.reject(fromWire(r.error));
  }

  /**
   * Sends every unanswered request to the (new) leader of `epoch`, in
   * order; those made for a leader before it that use what lived there
   * fail (or, to let go of it, resolve) instead (`leaderStateOf`,
   * protocol.ts).
   */
  resend(epoch: number): void {
    for (const p of [...this.#pending.values()].sort((a, b) => a.id - b.id)) {
      const state = p.epoch === epoch ? 'none' : leaderStateOf(p.request);
      if (state !== 'none') {
        this.#pending.delete(p.id);
        if (state === 'releases') p.resolve(undefined);
        else p.reject(lostWithLeader(p.request));
        continue;
      }
      this.#post(p);
    }
  }

  /** Fails every request with `error`. */
  failAll(error: SiltError): void {
    for (const p of this.#pending.values()) p.reject(error);
    this.#pending.clear();
  }

  #post(p: Pending): void {
    const floor = this.#pending.keys().next().value ?? p.id; // every request below it has its answer
    this.#outbox.add({ id: p.id, request: p.request, floor });
  }
}
