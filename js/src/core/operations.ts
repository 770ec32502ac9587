/**
 * The operations a worker's `Database` and `connect()`'s `RemoteDatabase`
 * both have, declared once: their synchronous form here (what `Database`
 * implements), their async form derived (`RemoteOperations`, what
 * `RemoteDatabase` has), so the compiler refuses a difference between the
 * two APIs. How a page asks for each and how the leader serves it is
 * declared once too, in tabs/operations.ts; the protocol's request type,
 * the leader's dispatch, the rule for a request pending at a failover and
 * the page's methods follow from that table (docs/architecture.md, "Adding
 * an operation").
 */

/** Options of a read at a snapshot: `S` is the API's snapshot (`Snapshot`, `RemoteSnapshot`). */
export interface SnapshotOption<S> {
  /** Read as of this snapshot (default: the latest state). */
  snapshot?: S;
}

/** The operations of both APIs, in a worker's synchronous form. */
export interface Operations<K, S> {
  /**
   * Whether `key` has a value (at `snapshot`, or now). No value leaves the
   * engine: in a worker nothing is copied out of wasm memory, through
   * `connect()` only the answer crosses (as abstract-level 3's `has`).
   */
  has(key: K, options?: SnapshotOption<S>): boolean;
  /**
   * Whether each of `keys` has a value, in order, read at one point in
   * time with the engine's batched MultiGet; no value copied out.
   */
  hasMany(keys: K[], options?: SnapshotOption<S>): boolean[];
}

/** The operations in `connect()`'s form: each returns a Promise. */
export type RemoteOperations<K, S> = {
  [M in keyof Operations<K, S>]: (...args: Parameters<Operations<K, S>[M]>) => Promise<ReturnType<Operations<K, S>[M]>>;
};

/** The name of an operation declared here. */
export type OperationName = keyof Operations<unknown, unknown>;
