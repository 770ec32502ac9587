/**
 * How the leader posts answers (leader.ts): one at a time, or the answers
 * to the requests of one message together, once each is answered.
 */

import type { Client } from './leader-clients.js';
import type { Response } from './wire.js';

/** Posts `r` to `c`: gone meanwhile (its channel closed), nobody waits for it. */
export function post(c: Client, r: Response | Response[], transfer: Transferable[]): void {
  try {
    c.post(r, transfer);
  } catch {
    // The follower's channel was closed meanwhile.
  }
}

/** The answers to the requests of one message, posted together once each is answered or skipped. */
export class Answers {
  #responses: Response[] = [];
  #transfer: Transferable[] = [];
  #left: number;
  readonly #client: Client;

  constructor(client: Client, count: number) {
    this.#client = client;
    this.#left = count;
  }

  add(r: Response, transfer: Transferable[]): void {
    this.#responses.push(r);
    this.#transfer.push(...transfer);
    this.skip();
  }

  /** One request needs no answer (its connection was dropped). */
  skip(): void {
    if (--this.#left === 0) this.flush();
  }

  /** Posts what is answered so far. */
  flush(): void {
    if (this.#responses.length === 0) return;
    const responses = this.#responses;
    const transfer = this.#transfer;
    this.#responses = [];
    this.#transfer = [];
    post(this.#client, responses.length === 1 ? responses[0]! : responses, transfer);
  }
}
