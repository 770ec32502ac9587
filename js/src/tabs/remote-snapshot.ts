/** Snapshots through `connect()`: held by the leader, lost with it. */

import type { SnapshotInfo } from './wire.js';
import type { Connection } from './connection.js';
import { asyncDispose } from '../core/dispose.js';

/** A snapshot held by the leader of a connection. */
export class RemoteSnapshot {
  /** @internal */
  id: number;
  /** @internal */
  readonly epoch: number;
  /** The sequence number of the last write the snapshot sees (for `watch({ since })`). */
  readonly sequence: number;
  #connection: Connection;

  /** @internal */
  constructor(connection: Connection, info: SnapshotInfo, epoch: number) {
    this.#connection = connection;
    this.id = info.id;
    this.sequence = info.seq;
    this.epoch = epoch;
  }

  /** @internal */
  connectionIs(c: Connection): boolean {
    return this.#connection === c;
  }

  async release(): Promise<void> {
    if (this.id === 0) return;
    const id = this.id;
    this.id = 0;
    // A snapshot of a leader that went is gone with it: nothing to release.
    if (this.epoch !== this.#connection.epoch) return;
    await this.#connection.send({ op: 'releaseSnapshot', snapshot: id }, this.epoch);
  }

  [asyncDispose](): Promise<void> {
    return this.release();
  }
}
