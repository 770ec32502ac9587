/**
 * The entries a live query shows (live-query.ts), kept current from change
 * events without reading the database: a window of at most `limit` keys of
 * the query's range, in the query's order, with their values as stored.
 * `apply` takes one event (raw: keys as stored, each key's value once its
 * write committed) and says whether the window changed, stayed, or must be
 * read again: only when what the window shows can no longer be known from
 * the events (an entry left a full window, so the next one beyond it must
 * come in; an ingest into what the window covers, whose keys the event
 * does not list; a gap). A change beyond a full window costs nothing.
 */

import { compareBytes } from '../core/bytes.js';
import type { KeyChange, RawEvent } from './watch.js';

/** One entry of the window: its stored key and value, and its decoded form once asked (live-query.ts). */
export interface Slot {
  key: Uint8Array;
  value: Uint8Array | undefined;
  shown?: unknown;
}

/** What an event did to the window. */
export type Applied = 'changed' | 'same' | 'read';

export class LiveWindow {
  /** The entries, in the query's order (keys descending when `reverse`). */
  slots: Slot[] = [];
  /** Whether the slots are every key of the range (else: exactly `limit`, the first in order). */
  all = true;
  readonly #limit: number;
  readonly #reverse: boolean;
  /** Whether events carry values (else: keys only, `value` stays undefined). */
  readonly #values: boolean;

  constructor(limit: number, reverse: boolean, values: boolean) {
    this.#limit = limit;
    this.#reverse = reverse;
    this.#values = values;
  }

  /** The window as read at a snapshot: the first entries of the range in order, at most `limit`. */
  reset(entries: [Uint8Array, Uint8Array | undefined][]): void {
    this.slots = entries.map(([key, value]) => ({ key, value }));
    this.all = entries.length < this.#limit;
  }

  /** `a` before `b` in the query's order: negative. */
  #order(a: Uint8Array, b: Uint8Array): number {
    return this.#reverse ? compareBytes(b, a) : compareBytes(a, b);
  }

  /** Where `key` is, or would go. */
  #find(key: Uint8Array): { at: number; found: boolean } {
    let lo = 0;
    let hi = this.slots.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = this.#order(this.slots[mid]!.key, key);
      if (c === 0) return { at: mid, found: true };
      if (c < 0) lo = mid + 1;
      else hi = mid;
    }
    return { at: lo, found: false };
  }

  /** Takes event `e` (in the query's range: the watch filters). */
  apply(e: RawEvent): Applied {
    if (e.kind === 'gap') return 'read';
    if (e.kind === 'deleteRange') return this.#deleteRange(e.key!, e.end!);
    if (e.kind === 'ingest') return this.#covers(e.key!, e.end!) ? 'read' : 'same';
    return this.#key(e as KeyChange<Uint8Array, Uint8Array>);
  }

  /** A put, merge or delete of one key. */
  #key(e: KeyChange<Uint8Array, Uint8Array>): Applied {
    const gone = this.#values ? e.value === undefined : e.kind === 'delete';
    const { at, found } = this.#find(e.key);
    if (gone) {
      if (!found) return 'same';
      this.slots.splice(at, 1);
      // The entry after the last one shown comes in: not known here.
      return this.all ? 'changed' : 'read';
    }
    if (found) {
      const slot = this.slots[at]!;
      if (!this.#values) return 'same';
      if (slot.value !== undefined && compareBytes(slot.value, e.value!) === 0) return 'same';
      this.slots[at] = { key: slot.key, value: e.value };
      return 'changed';
    }
    // A new key: in the window if it sorts before the last shown, or if
    // the window shows every key; the last one then leaves a window past its limit.
    if (!this.all && at >= this.slots.length) return 'same';
    this.slots.splice(at, 0, { key: e.key, value: this.#values ? e.value : undefined });
    if (this.slots.length > this.#limit) {
      this.slots.pop();
      this.all = false;
    }
    return 'changed';
  }

  /** A range delete of `[start, end)`: the entries in it leave. */
  #deleteRange(start: Uint8Array, end: Uint8Array): Applied {
    const before = this.slots.length;
    this.slots = this.slots.filter((s) => compareBytes(s.key, start) < 0 || compareBytes(s.key, end) >= 0);
    if (this.slots.length === before) return 'same';
    return this.all ? 'changed' : 'read';
  }

  /** Whether keys in `[start, end)` could be in the window (an ingest's, whose keys are not listed). */
  #covers(start: Uint8Array, end: Uint8Array): boolean {
    if (this.all) return true;
    const last = this.slots.at(-1);
    if (last === undefined) return true;
    // The window covers the range's start up to its last key (down to it, reversed).
    return this.#reverse ? compareBytes(end, last.key) > 0 : compareBytes(start, last.key) <= 0;
  }
}
