/**
 * The options of one call that both APIs share (core/operations.ts), over
 * the API's snapshot type `S` (`Snapshot` in a worker, `RemoteSnapshot`
 * through `connect()`).
 */

import type { EncodingOption, RangeOptions } from './encoding.js';
import { optionNames } from './option-names.js';

/** Options of one write. */
export interface WriteOptions {
  /**
   * Make the write durable before the call returns (default: the
   * database's `sync` open option, itself false by default). Without it a
   * crash may lose the latest writes, never part of a batch and never an
   * older write while keeping a newer one.
   */
  sync?: boolean;
}

/** Options of a read at a snapshot: `S` is the API's snapshot (`Snapshot`, `RemoteSnapshot`). */
export interface SnapshotOption<S> {
  /** Read as of this snapshot (default: the latest state). */
  snapshot?: S;
}

/** Options of a read that returns values: a snapshot, and the call's own value encoding. */
export interface ValueReadOptions<V, S> extends SnapshotOption<S> {
  /** Decode the value(s) with this encoding instead of the database's. */
  valueEncoding?: EncodingOption<V>;
}

/** A range, and the snapshot to read it at (`count`). */
export interface CountRange<K, S> extends RangeOptions<K>, SnapshotOption<S> {}

/** Other libraries' names for what a write's options say, with siltdb's. */
const WRITE_ELSEWHERE = { durability: "use sync: true for a durable write (leave it out for IndexedDB's 'relaxed')" };
/** Other libraries' names for what a read's options say, with siltdb's. */
const READ_ELSEWHERE = {
  fillCache: 'siltdb needs none: every read fills the block cache',
  keyEncoding: "a read takes a valueEncoding of its own only; its keys are in the database's or the sublevel's keyEncoding",
};

/** The names of `WriteOptions` (a write's, a commit's). */
export const WRITE_OPTIONS = optionNames<WriteOptions>({ sync: true }, WRITE_ELSEWHERE);
/** The names of `SnapshotOption` (`has`, `hasMany`, `getPinned`). */
export const SNAPSHOT_OPTIONS = optionNames<SnapshotOption<unknown>>({ snapshot: true }, READ_ELSEWHERE);
/** The names of `ValueReadOptions` (`get`, `multiGet` through `connect()`). */
export const VALUE_READ_OPTIONS = optionNames<ValueReadOptions<unknown, unknown>>({ snapshot: true, valueEncoding: true }, READ_ELSEWHERE);
/** The names of `CountRange` (`count`). */
export const COUNT_OPTIONS = optionNames<CountRange<unknown, unknown>>({ gt: true, gte: true, lt: true, lte: true, snapshot: true });
