/**
 * The data that crosses between a connection and its leader besides the
 * requests themselves (protocol.ts; each request's fields are declared with
 * the operation or step that serves it: operations.ts, leader-steps.ts):
 * answers, errors, packed values, change records. Types only.
 */

import type { Key } from '../core/bytes.js';

export type IteratorRequestOptions = {
  gt?: Key;
  gte?: Key;
  lt?: Key;
  lte?: Key;
  reverse?: boolean;
  batchSize?: number;
  autoRefresh?: boolean;
};

/** The answer to request `id`, from leader `from`. */
export type Response = { id: number; from: string; ok: true; value: unknown } | { id: number; from: string; ok: false; error: WireError };

/**
 * An error as it crosses to another realm: its code and message, and its
 * `cause` chain (name, message and code of each, up to four deep; stack
 * traces stay where they were made).
 */
export type WireError = { code: string; message: string; cause?: WireCause };
export type WireCause = { name: string; message: string; code?: string; cause?: WireCause };

/** `multiGet` over the wire: every value back to back, and their lengths (-1 = none). */
export type PackedValues = { bytes: Uint8Array; lens: Int32Array };

/** A transaction's writes since its last request: an encoded `WriteBatch` of `count` updates. */
export type TxnWrites = { batch: Uint8Array; count: number };

/** A snapshot as the leader reports it: its id there, and its sequence number. */
export type SnapshotInfo = { id: number; seq: number };

/**
 * One committed write, packed: it took sequence numbers `first..last`; its
 * first `kinds.length` updates (the connection's write record, last, is not
 * reported) have kind `kinds[i]` (0 delete, 1 put, 2 merge, 3 range delete, as in
 * `WriteBatch`'s encoding; 4 an ingest's range; 5 a reset, after an import:
 * anything may have changed, no key) and sequence number `first + i`; update `i`'s key
 * is `keys[bounds[2i] .. bounds[2i+1]]` and, for a range delete, its end is
 * `keys[bounds[2i+1] .. bounds[2i+2]]` (empty otherwise). Packed so that a
 * batch of a thousand puts costs the leader three buffers, not a thousand
 * objects, to publish and keep. `from`: the leader that wrote it (a page
 * passes a leader's records to its watches once that leader has welcomed
 * it, after the catch-up the welcome starts). `values` (change-values.ts):
 * update `i`'s key's value once the write committed (`lens[i]` -1: none,
 * and for a range's update), made only while a watch asks for values and
 * posted only to connections that asked; a record without them reports its
 * key updates to such a watch as a gap.
 */
export type ChangeRecord = { first: number; last: number; kinds: Uint8Array; bounds: Uint32Array; keys: Uint8Array; from: string; values?: PackedValues };

/**
 * A change record as the leader posts it to each connection that watches
 * (a `changes` request with `watch: true`), on that connection's line: so
 * it is ordered with the answers there, and a write costs no post at all
 * while nobody watches (a BroadcastChannel post cost the leader's worker
 * 60-70 µs of a put, and every tab a task).
 */
export type ChangeMessage = { t: 'change'; record: ChangeRecord };

/**
 * What the leader keeps of recent writes: every record after `base` (the
 * sequence number before the oldest kept), and the latest sequence number.
 */
export type ChangeHistory = { base: number; latest: number; records: ChangeRecord[] };

/** How much change history a leader (or a worker's feed, local/change-feed.ts) keeps for `watch({ since })`. */
export const HISTORY_RECORDS = 10_000;
export const HISTORY_BYTES = 4 << 20;
