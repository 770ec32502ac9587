/**
 * The page-side read cache of a `connect()` connection
 * (`connect(name, { pageCacheCapacity })`, off by default): values this
 * connection read with `get` at the latest state, kept in its own realm so
 * that reading one again costs a Map lookup and a copy instead of a round
 * trip to the leader's worker. docs/tabs.md, "The page cache", has the
 * consistency model; in short:
 *
 * - Coherence comes from the leader's change records: the connection
 *   watches (a `changes` request with `watch: true` to every leader it
 *   links to), and each record it hears drops the keys it touched (a range
 *   delete or an ingest, every key in its range; an import, everything).
 * - A value read from the leader is kept only if no record touched its key
 *   between the request going out and its answer coming back (`Fill`): a
 *   record heard meanwhile may be newer than what the leader read. Records
 *   and answers travel on one line, in the order the leader posted them,
 *   and the leader posts a write's record before any answer that could
 *   read it, so every write a kept value does not show is one whose record
 *   is still to come, and it drops the value when it comes.
 * - A connection reads its own acknowledged writes: a write's answer comes
 *   after its record. While a write of this connection waits for its
 *   answer, reads skip the cache (calls of a connection run in order).
 * - Nothing is served or kept while the connection is not linked to a
 *   leader; a new link (failover, or the same leader after a lost link),
 *   a page that resumes (records may have been lost while it was frozen),
 *   and a record that does not follow the one before empty the cache.
 *
 * Keys are kept as binary strings, one char per byte: Map keys, and ordered
 * as the engine orders the bytes (range deletes compare them as they are).
 */

import type { ChangeRecord } from './wire.js';

/** Bytes an entry costs besides its key and value (the Map's slot, the entry object, the string). */
const ENTRY_OVERHEAD = 96;

/** Record kinds (`ChangeRecord.kinds`): 3 range delete, 4 ingest (ranges); 5 reset (an import: anything may have changed). */
const RANGE_DELETE = 3;
const INGEST = 4;
export const RESET = 5;

/** A kept value: the stored bytes, or `null` for a key with no value. */
type Entry = { value: Uint8Array | null; size: number };

/** A read of `key` under way at the leader; `kept` is false once a record (or a reset) made its answer unfit to keep. */
type Fill = { key: string; kept: boolean };

/** What the cache has counted (`RemoteStatistics.pageCache`). */
export interface PageCacheStatistics {
  /** Its capacity, in bytes (`pageCacheCapacity`). */
  capacity: number;
  /** Bytes its entries hold now (keys, values and an estimate of each entry's overhead). */
  bytes: number;
  entries: number;
  /** Reads answered from the cache. */
  hits: number;
  /** Reads it could have answered that went to the leader. */
  misses: number;
  /** Reads that went to the leader because a write of this connection was under way, or no leader was linked. */
  bypassed: number;
  /** Times it was emptied: a new link to a leader, a page that resumed, an import, missed records. */
  resets: number;
}

/** `b` as a binary string (one char per byte): ordered as the bytes are. */
export function binaryKey(b: Uint8Array): string {
  if (b.length <= 1024) return String.fromCharCode.apply(null, b as unknown as number[]);
  let s = '';
  for (let at = 0; at < b.length; at += 1024) s += String.fromCharCode.apply(null, b.subarray(at, at + 1024) as unknown as number[]);
  return s;
}

/** A miss: the caller reads from the leader (through `fill`). */
export const MISS: unique symbol = Symbol('miss');

/** @internal One connection's page cache. */
export class PageCache {
  readonly capacity: number;
  /** Entries, least recently used first (a hit moves its entry to the end). */
  #entries = new Map<string, Entry>();
  #bytes = 0;
  /** Reads under way, by key. */
  #fills = new Map<string, Set<Fill>>();
  /** Whether the connection is linked and watches its leader: only then are entries served and kept. */
  #live = false;
  /** The leader linked to, and the last sequence number of its records heard since the link (undefined: none yet). */
  #leader: string | undefined;
  #last: number | undefined;
  #stats = { hits: 0, misses: 0, bypassed: 0, resets: 0 };

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /** Entries larger than this are not kept (one value must not empty the cache). */
  get #largest(): number {
    return this.capacity / 4;
  }

  statistics(): PageCacheStatistics {
    return { capacity: this.capacity, bytes: this.#bytes, entries: this.#entries.size, ...this.#stats };
  }

  /**
   * The value kept for `key` (its stored bytes, the cache's own: the caller
   * hands out a copy, or what its encoding decodes; `null`: no value), or
   * `MISS`. `writing`: a write of this connection waits for
   * its answer (the read must see it: it goes to the leader, after it).
   */
  lookup(key: string, writing: boolean): Uint8Array | null | typeof MISS {
    if (!this.#live || writing) {
      this.#stats.bypassed++;
      return MISS;
    }
    const e = this.#entries.get(key);
    if (e === undefined) {
      this.#stats.misses++;
      return MISS;
    }
    this.#stats.hits++;
    // Most recently used: to the end.
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return e.value;
  }

  /**
   * A read of `key` at the latest state goes to the leader now (after
   * `lookup` missed): `keep` with its answer keeps it, unless a record
   * touched the key meanwhile. `undefined` when nothing can be kept (no
   * leader linked).
   */
  fill(key: string): Fill | undefined {
    if (!this.#live) return undefined;
    const f: Fill = { key, kept: true };
    const set = this.#fills.get(key);
    if (set === undefined) this.#fills.set(key, new Set([f]));
    else set.add(f);
    return f;
  }

  /** The answer to `f`'s read: `value` (stored bytes, not kept by the caller) or `null` (none); `undefined`: it failed. */
  keep(f: Fill, value: Uint8Array | null | undefined): void {
    const set = this.#fills.get(f.key);
    set?.delete(f);
    if (set?.size === 0) this.#fills.delete(f.key);
    if (!f.kept || !this.#live || value === undefined) return;
    const size = f.key.length + (value?.length ?? 0) + ENTRY_OVERHEAD;
    if (size > this.#largest) return;
    this.#drop(f.key);
    this.#entries.set(f.key, { value: value === null ? null : value.slice(), size });
    this.#bytes += size;
    for (const [k, e] of this.#entries) {
      if (this.#bytes <= this.capacity) break;
      this.#entries.delete(k);
      this.#bytes -= e.size;
    }
  }

  /**
   * The connection is linked to `leader` (welcomed, or its own worker
   * opened the database) and has asked it for change records: what is kept
   * goes (records may have been missed between leaders), and from now on
   * entries are served and kept.
   */
  link(leader: string): void {
    this.reset();
    this.#leader = leader;
    this.#live = true;
  }

  /** The connection lost its leader, closed or failed: nothing is served until it links again. */
  unlink(): void {
    this.reset();
    this.#live = false;
    this.#leader = undefined;
  }

  /** Empties the cache; reads under way keep nothing. */
  reset(): void {
    if (this.#entries.size > 0 || this.#fills.size > 0) this.#stats.resets++;
    this.#entries.clear();
    this.#bytes = 0;
    for (const set of this.#fills.values()) for (const f of set) f.kept = false;
    this.#fills.clear();
    this.#last = undefined;
  }

  /** A change record heard on the connection's line (from any leader: dropping is always safe). */
  hear(r: ChangeRecord): void {
    if (r.from === this.#leader && this.#live) {
      // Records of the linked leader come one after another: one that
      // does not follow the last means some were lost (a frozen page).
      if (this.#last !== undefined && r.first > this.#last + 1) {
        this.reset();
        this.#last = r.last;
        return;
      }
      this.#last = this.#last === undefined ? r.last : Math.max(this.#last, r.last);
    }
    if (this.#entries.size === 0 && this.#fills.size === 0) return;
    const { kinds, bounds, keys } = r;
    for (let i = 0; i < kinds.length; i++) {
      const kind = kinds[i]!;
      if (kind === RESET) {
        this.reset();
        return;
      }
      const key = binaryKey(keys.subarray(bounds[2 * i]!, bounds[2 * i + 1]!));
      if (kind === RANGE_DELETE || kind === INGEST) this.#dropRange(key, binaryKey(keys.subarray(bounds[2 * i + 1]!, bounds[2 * i + 2]!)));
      else this.#touch(key);
    }
  }

  /** Key `key` changed: its entry goes, and reads of it under way keep nothing. */
  #touch(key: string): void {
    this.#drop(key);
    const set = this.#fills.get(key);
    if (set === undefined) return;
    for (const f of set) f.kept = false;
    this.#fills.delete(key);
  }

  /** Keys from `start` up to `end` (excluded) changed. */
  #dropRange(start: string, end: string): void {
    for (const k of [...this.#entries.keys()]) if (k >= start && k < end) this.#drop(k);
    for (const [k, set] of [...this.#fills]) {
      if (k < start || k >= end) continue;
      for (const f of set) f.kept = false;
      this.#fills.delete(k);
    }
  }

  #drop(key: string): void {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= e.size;
  }
}
