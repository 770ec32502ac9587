/**
 * The options of one call that both APIs share (core/operations.ts), over
 * the API's snapshot type `S` (`Snapshot` in a worker, `RemoteSnapshot`
 * through `connect()`).
 */

import type { EncodingOption, RangeOptions } from './encoding.js';

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
