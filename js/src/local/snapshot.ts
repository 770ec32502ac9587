/**
 * Snapshots: a consistent view of a database as of one moment.
 */

import type { Database as WasmDatabase } from '../../pkg/silt_wasm.js';
import { SiltError } from '../core/errors.js';
import { dispose } from '../core/dispose.js';

const safetyNet = new FinalizationRegistry<{ db: WasmDatabase; id: number }>(({ db, id }) => {
  db.releaseSnapshot(id);
});

/**
 * Reads given this snapshot (`{ snapshot }` in read and iterator options)
 * see exactly the writes made before it was taken. Release it when done:
 * a live snapshot keeps old versions of keys from being dropped.
 */
export class Snapshot {
  #db: WasmDatabase;
  #id: number;
  #owner: object;

  /** @internal */
  constructor(db: WasmDatabase, id: number, owner: object) {
    this.#db = db;
    this.#id = id;
    this.#owner = owner;
    safetyNet.register(this, { db, id }, this);
  }

  /** @internal The engine's id for this snapshot, checked against `owner`. */
  idFor(owner: object): number {
    if (owner !== this.#owner) throw new SiltError('InvalidArgument', 'this snapshot belongs to another database');
    if (this.#id === 0) throw new SiltError('Released', 'this snapshot was released: take a new one (db.snapshot())');
    return this.#id;
  }

  get released(): boolean {
    return this.#id === 0;
  }

  /** Lets go of the snapshot. Iterators made on it keep it until they end. */
  release(): void {
    if (this.#id === 0) return;
    safetyNet.unregister(this);
    this.#db.releaseSnapshot(this.#id);
    this.#id = 0;
  }

  [dispose](): void {
    this.release();
  }
}
