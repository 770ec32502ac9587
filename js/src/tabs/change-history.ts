/**
 * The change records a leader (leader-writer.ts) or a worker's feed
 * (local/change-feed.ts) keeps for `watch({ since })`: the latest ones, at
 * most `HISTORY_RECORDS` of them and about `HISTORY_BYTES`, the oldest
 * going first.
 */

import { recordBytes } from './leader-batches.js';
import { type ChangeRecord, HISTORY_BYTES, HISTORY_RECORDS } from './wire.js';

export class KeptChanges {
  /** The records kept, oldest first. */
  records: ChangeRecord[] = [];
  #bytes = 0;
  /** The last sequence number before what is kept: the records cover `base + 1` on. */
  base: number;

  constructor(base: number) {
    this.base = base;
  }

  /** Keeps `record`, the oldest going past the bounds. */
  keep(record: ChangeRecord): void {
    this.records.push(record);
    this.#bytes += recordBytes(record);
    while (this.records.length > HISTORY_RECORDS || (this.#bytes > HISTORY_BYTES && this.records.length > 1)) {
      const old = this.records.shift()!;
      this.#bytes -= recordBytes(old);
      this.base = old.last;
    }
  }

  /** Starts again from `base` with nothing kept; returns what was. */
  restart(base: number): ChangeRecord[] {
    const kept = this.records;
    this.records = [];
    this.#bytes = 0;
    this.base = base;
    return kept;
  }

  /** The records after sequence number `since` (they are in order: found by a binary search, as each new watch and live query asks). */
  after(since: number): ChangeRecord[] {
    const rs = this.records;
    let lo = 0;
    let hi = rs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (rs[mid]!.last > since) hi = mid;
      else lo = mid + 1;
    }
    return rs.slice(lo);
  }
}
