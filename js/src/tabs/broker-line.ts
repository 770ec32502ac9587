/**
 * A realm's line to the broker (broker.ts, a SharedWorker), where
 * SharedWorker exists: a leader's page registers there (`lead`), a
 * follower sends it a port for the leader it wants (`connect`), and the
 * broker hands such ports to the leader's page (`attach`).
 *
 * The broker's instance can die under its pages: a SharedWorker runs in a
 * renderer process, which can crash with another tab, and no event tells
 * the pages (in Chromium what they post to it then goes nowhere). A
 * connection that hears nothing back renews the line (connection.ts): a new
 * SharedWorker reaches the instance that lives, or starts a new one, which
 * knows no leader until a leader registers with it again.
 */

import { connectToBroker } from '../spawn.js';
import type { BrokerMessage } from './protocol.js';

/** The least time between two renewals of a line. */
const RENEW_MS = 2_000;

export class BrokerLine {
  #port: MessagePort | undefined;
  /** When the line was last renewed. */
  #renewed = Number.NEGATIVE_INFINITY;
  /** This realm's registration as a database's leader, posted again on a renewed line. */
  #lead: { name: string; leader: string } | undefined;
  readonly #onMessage: (m: BrokerMessage) => void;

  /** `onMessage`: what the broker sends this realm (`attach`, to a leader's page). */
  constructor(onMessage: (m: BrokerMessage) => void) {
    this.#onMessage = onMessage;
    this.#port = this.#connect();
  }

  /** Whether this realm has a broker (SharedWorker exists, and it has not failed to load). */
  get available(): boolean {
    return this.#port !== undefined;
  }

  post(m: BrokerMessage, transfer: Transferable[] = []): void {
    this.#port?.postMessage(m, transfer);
  }

  /** Registers this realm's connection `leader` as database `name`'s leader. */
  lead(name: string, leader: string): void {
    this.#lead = { name, leader };
    this.post({ t: 'lead', name, leader });
  }

  /** Says that the leader registered went (if one was). */
  unlead(): void {
    if (this.#lead !== undefined) this.post({ t: 'unlead', ...this.#lead });
    this.#lead = undefined;
  }

  /**
   * A new line to the instance that lives (if this realm has a broker),
   * and this realm's registration there. The old line closes at once: a
   * port the broker hands over on it now is lost (its follower asks again,
   * or over its channel), where one taken late could overtake a newer one
   * handed over on the new line (ports keep no order between them), and
   * the leader would answer on the older port, which its follower closed.
   */
  renew(): void {
    const old = this.#port;
    // At most one every RENEW_MS: a renewal loses the ports the old line
    // was handing over, whose followers then say hello too.
    if (old === undefined || performance.now() - this.#renewed < RENEW_MS) return;
    this.#renewed = performance.now();
    old.close();
    this.#port = this.#connect();
    if (this.#lead !== undefined) this.post({ t: 'lead', ...this.#lead });
  }

  close(): void {
    this.#port?.close();
    this.#port = undefined;
  }

  #connect(): MessagePort | undefined {
    const port: MessagePort | undefined = connectToBroker(this.#onMessage, () => {
      if (this.#port === port) this.#port = undefined;
    });
    return port;
  }
}
