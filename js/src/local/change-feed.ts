/**
 * `watch` in a worker (issue 39, item 1): the change records of a
 * database opened with `open()`, for the same watches (`Watcher`,
 * tabs/watch.ts) that `connect()` feeds from its leader, so that both APIs
 * report the same events. Each write of the database says what it changed
 * (its keys as stored, in the record layout of tabs/leader-batches.ts:
 * `Packed`); the feed numbers it with the sequence numbers the write took
 * and passes it to the watches in a microtask (never inside the write's
 * call: a callback that writes does not run in the middle of a write). A
 * write that cannot say exactly what it changed (an import, a transaction
 * begun before the first watch, a batch with reserved keys) is reported as
 * a gap over its sequence numbers. The feed is made at the database's
 * first `watch()` and keeps a bounded history for `watch({ since })` from
 * then on (a `connect()` leader keeps one from its start): a database
 * never watched pays one branch per write.
 */

import { successor } from '../core/bytes.js';
import { KeptChanges } from '../tabs/change-history.js';
import { INGEST, type Packed, pack, putRange, RESET_ALL } from '../tabs/leader-batches.js';
import { type ChangeHistory, type ChangeRecord, HISTORY_BYTES } from '../tabs/wire.js';
import { type WatchHost, type Watcher, type WatchRequest, wantValues } from '../tabs/watch.js';
import { valuesOf } from '../tabs/change-values.js';

/** Update tags of a change record (a write batch's). */
const DELETE = 0;
const PUT = 1;
const MERGE = 2;
const DELETE_RANGE = 3;

/** The record of one update of `key` (and `end`, a range's). */
function one(kind: number, key: Uint8Array, end?: Uint8Array): Packed {
  if (end === undefined) return { kinds: new Uint8Array([kind]), bounds: new Uint32Array([0, key.length, key.length]), keys: key.slice() };
  const keys = new Uint8Array(key.length + end.length);
  keys.set(key);
  keys.set(end, key.length);
  return { kinds: new Uint8Array([kind]), bounds: new Uint32Array([0, key.length, keys.length]), keys };
}

/** What each kind of write changed, as the feed takes it (undefined: not known exactly: a gap). */
export const changes = {
  put: (key: Uint8Array): Packed => one(PUT, key),
  delete: (key: Uint8Array): Packed => one(DELETE, key),
  merge: (key: Uint8Array): Packed => one(MERGE, key),
  deleteRange: (start: Uint8Array, end: Uint8Array): Packed => one(DELETE_RANGE, start, end),
  /** An encoded write batch's updates. */
  batch: (bytes: Uint8Array): Packed | undefined => {
    const p = pack(bytes);
    return p === 'split' ? undefined : p;
  },
  /** An ingest of an encoded batch of puts: one change over the range of its keys. */
  ingest: (bytes: Uint8Array): Packed | undefined => {
    const range = putRange(bytes);
    if (range === undefined) return undefined;
    const [lo, hi] = range;
    return one(INGEST, lo, successor(hi));
  },
};

/** Bytes of keys a transaction's log keeps for the watches before it gives up (its commit is then a gap). */
const TRANSACTION_LOG_BYTES = HISTORY_BYTES;

/**
 * @internal What a transaction begun while a watch was open writes, in
 * order, for its commit's change record; undefined once past
 * `TRANSACTION_LOG_BYTES` (its commit is reported as a gap).
 */
export class ChangeLog {
  #kinds: number[] = [];
  #parts: Uint8Array[] = [];
  #bytes = 0;
  #over = false;

  put(key: Uint8Array): void {
    this.#add(PUT, key);
  }
  delete(key: Uint8Array): void {
    this.#add(DELETE, key);
  }
  merge(key: Uint8Array): void {
    this.#add(MERGE, key);
  }
  deleteRange(start: Uint8Array, end: Uint8Array): void {
    this.#add(DELETE_RANGE, start, end);
  }

  #add(kind: number, key: Uint8Array, end?: Uint8Array): void {
    if (this.#over) return;
    this.#bytes += key.length + (end?.length ?? 0);
    if (this.#bytes > TRANSACTION_LOG_BYTES) {
      this.#over = true;
      this.#kinds = [];
      this.#parts = [];
      return;
    }
    this.#kinds.push(kind);
    this.#parts.push(key.slice(), end?.slice() ?? new Uint8Array(0));
  }

  /** The record of what was written, or undefined if the log gave up. */
  packed(): Packed | undefined {
    if (this.#over) return undefined;
    const n = this.#kinds.length;
    const keys = new Uint8Array(this.#bytes);
    const bounds = new Uint32Array(2 * n + 1);
    let at = 0;
    for (let i = 0; i < n; i++) {
      const key = this.#parts[2 * i]!;
      const end = this.#parts[2 * i + 1]!;
      bounds[2 * i] = at;
      keys.set(key, at);
      at += key.length;
      bounds[2 * i + 1] = at;
      keys.set(end, at);
      at += end.length;
    }
    bounds[2 * n] = at;
    return { kinds: Uint8Array.from(this.#kinds), bounds, keys };
  }
}

/** @internal The change records of one open database, for its watches. */
export class LocalFeed implements WatchHost {
  readonly watchers = new Set<Watcher>();
  readonly #latest: () => number;
  /** A stored key's value now (change-values.ts). */
  readonly #read: (key: Uint8Array) => Uint8Array | undefined;

  /** What `since` can reach: base+1..last; nothing before base is kept. */
  readonly #history: KeptChanges;
  /** The last sequence number accounted for (in the history, or before its base). */
  #last: number;
  #pending: ChangeRecord[] = [];
  #scheduled = false;

  /** `latest`: the database's latest sequence number; `read`: a stored key's value (a copy). */
  constructor(latest: () => number, read: (key: Uint8Array) => Uint8Array | undefined) {
    this.#latest = latest;
    this.#read = read;
    this.#last = latest();
    this.#history = new KeptChanges(this.#last);
  }

  /**
   * A write ended (or failed): its updates took the sequence numbers after
   * the last accounted for, up to the database's latest. `change`: what
   * it changed, if known; any mismatch with the numbers taken is a gap.
   * Called right after the write, before anything else writes: the values
   * read for the record are the ones it left.
   */
  wrote(change: Packed | undefined): void {
    const latest = this.#latest();
    if (latest <= this.#last) return;
    const first = this.#last + 1;
    this.#last = latest;
    // A write's updates take one number each (an ingest's record is one
    // update, and its entries share one number).
    const count = latest - first + 1;
    const exact = change !== undefined && change.kinds.length === count;
    const record: ChangeRecord = { first, last: latest, ...(exact ? change : RESET_ALL), from: '' };
    // Values only while a watch asks for them.
    if (exact && wantValues(this.watchers)) {
      const values = valuesOf(record, this.#read);
      if (values !== undefined) record.values = values;
    }
    this.#add(record);
  }

  #add(record: ChangeRecord): void {
    this.#history.keep(record);
    this.#pending.push(record);
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(() => this.#deliver());
    }
  }

  #deliver(): void {
    this.#scheduled = false;
    const records = this.#pending;
    this.#pending = [];
    for (const w of [...this.watchers]) for (const r of records) w.onRecord(r);
  }

  /** What a watch asks of its connection: the history since a sequence number, or the latest. */
  send(request: WatchRequest): Promise<unknown> {
    // A write made before the first watch (or outside any write call):
    // numbers not accounted for are a gap.
    this.wrote(undefined);
    if (request.op === 'latestSequence') return Promise.resolve(this.#last);
    const since = request.since;
    const history: ChangeHistory =
      since === null
        ? { base: this.#last, latest: this.#last, records: [] }
        : { base: this.#history.base, latest: this.#last, records: this.#history.after(since) };
    return Promise.resolve(history);
  }

  /** Its last watch closed (the history is kept for the next `watch({ since })`). */
  stopWatching(): void {}

  /** The database closed: what was written reaches the watches, then every watch ends. */
  close(): void {
    this.#deliver();
    for (const w of [...this.watchers]) w.close();
  }
}
