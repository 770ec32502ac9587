/**
 * Messages of `connect()`: between a connection and the worker that leads
 * (worker.ts, leader.ts), and between the connections of one database in
 * every tab, iframe and worker of the origin (connection.ts). docs/tabs.md
 * describes the protocol as a whole.
 *
 * Channels (BroadcastChannel names; `<name>` is the database's):
 * - `siltdb:<name>:roster`: who leads. `who` asks, `leader` answers and
 *   announces a new leader; `hello` asks the leader to attach a follower.
 * - `siltdb:<name>:c:<client>`: one follower's requests and their responses
 *   (only the follower and the leader open it, so nobody else receives them),
 *   where the follower has no MessagePort to the leader's worker: in realms
 *   without SharedWorker (workers; Chrome on Android), or when the broker
 *   (broker.ts) does not know the leader.
 * - `siltdb:<name>:changes`: every committed write's change record.
 * Web Locks: `siltdb:<name>:lead` (held by the connection that leads; the
 * others queue for it), `siltdb:<name>` (the database's, as `open()` takes
 * it: held by the leader's worker while it has the database open) and
 * `siltdb:<name>:client:<client>` (held by each connection while it lives,
 * so the leader learns when a follower is gone).
 */

import type { Key } from '../core/bytes.js';
import { SiltError, SILT_ERROR_CODES, type SiltErrorCode } from '../core/errors.js';
import type { OperationName } from '../core/operations.js';
import type { OpenOptions } from '../local/open.js';
import { atSnapshot, isOperation, type LeaderState, OPERATIONS, type OperationRequest } from './operations.js';

export type { LeaderState } from './operations.js';

export type IteratorRequestOptions = {
  gt?: Key;
  gte?: Key;
  lt?: Key;
  lte?: Key;
  reverse?: boolean;
  batchSize?: number;
  autoRefresh?: boolean;
};

export type Request =
  | { op: 'put'; key: Key; value: Uint8Array; sync?: boolean }
  | { op: 'delete'; key: Key; sync?: boolean }
  | { op: 'deleteRange'; start: Key; end: Key; sync?: boolean }
  | { op: 'merge'; key: Key; value: Uint8Array; sync?: boolean }
  | { op: 'compactRange'; begin?: Key; end?: Key }
  | { op: 'write'; batch: Uint8Array; count: number; sync?: boolean }
  | { op: 'ingest'; batch: Uint8Array; count: number; sorted: boolean }
  | { op: 'get'; key: Key; snapshot: number }
  | { op: 'multiGet'; keys: Key[]; snapshot: number }
  | { op: 'snapshot' }
  | { op: 'releaseSnapshot'; snapshot: number }
  | { op: 'iterator'; options: IteratorRequestOptions; snapshot: number }
  | { op: 'next'; iterator: number }
  | { op: 'releaseIterator'; iterator: number }
  | { op: 'flush' }
  | { op: 'idle' }
  | { op: 'statistics' }
  | { op: 'verify' }
  | { op: 'latestSequence' }
  /** Ranges in stored bytes ([lower, upper), upper absent: past the last key). */
  | { op: 'clear'; lower: Uint8Array; upper?: Uint8Array; sync?: boolean }
  | { op: 'count'; lower?: Uint8Array; upper?: Uint8Array; snapshot: number }
  | { op: 'approximateSize'; lower?: Uint8Array; upper?: Uint8Array }
  /** Backups: an export read piece by piece, an import pushed piece by piece (leader-requests.ts). */
  | { op: 'exportStart'; lower?: Uint8Array; upper?: Uint8Array; form?: 'tables' | 'entries' }
  | { op: 'exportNext'; export: number }
  | { op: 'exportRelease'; export: number }
  | { op: 'importStart' }
  | { op: 'importPush'; bytes: Uint8Array }
  | { op: 'importFinish' }
  | { op: 'importAbort' }
  /** Change records after `since` (null: none, only where history starts now). */
  | { op: 'changes'; since: number | null }
  /**
   * Transactions (remote-transaction.ts): numbered by the connection.
   * `writes` (a `WriteBatch` encoding, with `count` updates) are the
   * transaction's writes made since its last request, applied to it first.
   */
  | { op: 'txnBegin'; txn: number }
  | { op: 'txnGet'; txn: number; key: Key; forUpdate: boolean; writes?: TxnWrites }
  | { op: 'txnMultiGet'; txn: number; keys: Key[]; writes?: TxnWrites }
  | { op: 'txnIterator'; txn: number; options: IteratorRequestOptions; writes?: TxnWrites }
  /**
   * `leader`: the leader the transaction began on. Sent again to a new
   * leader after a failover (as writes are): answered from its write
   * record (acknowledged if applied, its failure again if it failed), else
   * `LeaderChanged` (nothing applied).
   */
  | { op: 'txnCommit'; txn: number; leader: string; writes?: TxnWrites; sync?: boolean }
  | { op: 'txnAbort'; txn: number }
  /** The follower leaves: its snapshots, iterators and write record go. */
  | { op: 'bye' }
  /** The operations declared in operations.ts (has, hasMany). */
  | OperationRequest;

/** The kinds of request written here by hand (not in operations.ts's table). */
type HandWrittenOp = Exclude<Request['op'], OperationName>;

/**
 * `LeaderState` of every kind of request, or how to tell it from the
 * request: one entry per `op`, so a new kind of request cannot go without
 * (the compiler refuses a table that lacks one).
 */
const LEADER_STATE: { readonly [O in HandWrittenOp]: LeaderState | ((r: Extract<Request, { op: O }>) => LeaderState) } = {
  // Writes: the write record answers one sent again, never applied twice.
  put: 'none',
  delete: 'none',
  deleteRange: 'none',
  merge: 'none',
  write: 'none',
  clear: 'none',
  ingest: 'none',
  compactRange: 'none',
  // Reads: at the latest state anywhere, or at a snapshot of that leader.
  get: atSnapshot,
  multiGet: atSnapshot,
  count: atSnapshot,
  // Opens an iterator at the latest state (its number comes with the answer, from whichever leader), or at a snapshot.
  iterator: atSnapshot,
  approximateSize: 'none',
  latestSequence: 'none',
  // Sequence numbers are the database's, not a leader's.
  changes: 'none',
  statistics: 'none',
  verify: 'none',
  flush: 'none',
  idle: 'none',
  // Makes a snapshot: its number and leader come with the answer.
  snapshot: 'none',
  releaseSnapshot: 'releases',
  next: 'uses',
  releaseIterator: 'releases',
  // An export or import is read or pushed on the leader that started it.
  exportStart: 'uses',
  exportNext: 'uses',
  exportRelease: 'releases',
  importStart: 'uses',
  importPush: 'uses',
  importFinish: 'uses',
  importAbort: 'releases',
  // A transaction lives in the leader it began on, but its commit: sent again, as a write is (remote-transaction.ts).
  txnBegin: 'uses',
  txnGet: 'uses',
  txnMultiGet: 'uses',
  txnIterator: 'uses',
  txnCommit: 'none',
  txnAbort: 'releases',
  bye: 'none',
};

/** What request `r` needs of the leader it was made for (see `LeaderState`). */
export function leaderStateOf(r: Request): LeaderState {
  const rule = (isOperation(r.op) ? OPERATIONS[r.op].state : LEADER_STATE[r.op]) as LeaderState | ((r: Request) => LeaderState);
  return typeof rule === 'function' ? rule(r) : rule;
}

/**
 * A request of connection `client`, numbered by it (`id` grows by one per
 * request). A write's id is recorded with the write, so the same write sent
 * again after a failover is recognised and not applied twice, and answered
 * as it was the first time. `floor`: every request of the connection below
 * it has its answer (none of them will be sent again), so the leader need
 * not keep their outcomes (write-records.ts).
 */
export type Envelope = { id: number; client: string; request: Request; floor?: number };

/** The answer to request `id`, from leader `from`. */
export type Response = { id: number; from: string; ok: true; value: unknown } | { id: number; from: string; ok: false; error: WireError };

/**
 * An error as it crosses to another realm: its code and message, and its
 * `cause` chain (name, message and code of each, up to four deep; stack
 * traces stay where they were made).
 */
export type WireError = { code: string; message: string; cause?: WireCause };
export type WireCause = { name: string; message: string; code?: string; cause?: WireCause };

function causeOf(e: unknown, depth: number): WireCause | undefined {
  if (e === undefined || e === null || depth > 4) return undefined;
  if (!(e instanceof Error)) return { name: typeof e, message: String(e) };
  const code = (e as { code?: unknown }).code;
  const inner = causeOf(e.cause, depth + 1);
  return { name: e.name, message: e.message, ...(typeof code === 'string' ? { code } : {}), ...(inner ? { cause: inner } : {}) };
}

/** `e` for the wire (anything not a `SiltError` is `Internal`, and kept as the cause). */
export function toWire(e: unknown): WireError {
  const err = e instanceof SiltError ? e : new SiltError('Internal', e instanceof Error ? e.message : String(e), { cause: e });
  const cause = causeOf(err.cause, 1);
  return { code: err.code, message: err.message, ...(cause ? { cause } : {}) };
}

function fromCause(c: WireCause | undefined): Error | undefined {
  if (c === undefined) return undefined;
  const inner = fromCause(c.cause);
  const e = new Error(c.message, inner ? { cause: inner } : undefined);
  e.name = c.name;
  if (c.code !== undefined) (e as Error & { code?: string }).code = c.code;
  return e;
}

/**
 * The `SiltError` of a wire error, its cause chain rebuilt as `Error`s. A
 * code this package does not know (a newer leader's) becomes `Internal`,
 * the original code kept in the message and as the cause's `code`.
 */
export function fromWire(w: WireError): SiltError {
  const known = (SILT_ERROR_CODES as readonly string[]).includes(w.code);
  if (known) {
    const cause = fromCause(w.cause);
    return new SiltError(w.code as SiltErrorCode, w.message, cause ? { cause } : undefined);
  }
  const original = fromCause({ name: 'SiltError', message: w.message, code: w.code, ...(w.cause ? { cause: w.cause } : {}) });
  return new SiltError('Internal', `${w.code}: ${w.message}`, { cause: original });
}

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
 * `WriteBatch`'s encoding) and sequence number `first + i`; update `i`'s key
 * is `keys[bounds[2i] .. bounds[2i+1]]` and, for a range delete, its end is
 * `keys[bounds[2i+1] .. bounds[2i+2]]` (empty otherwise). Packed so that a
 * batch of a thousand puts costs the leader three buffers, not a thousand
 * objects, to publish and keep. `from`: the leader that wrote it (a page
 * passes a leader's records to its watches once that leader has welcomed
 * it, after the catch-up the welcome starts).
 */
export type ChangeRecord = { first: number; last: number; kinds: Uint8Array; bounds: Uint32Array; keys: Uint8Array; from: string };

/**
 * What the leader keeps of recent writes: every record after `base` (the
 * sequence number before the oldest kept), and the latest sequence number.
 */
export type ChangeHistory = { base: number; latest: number; records: ChangeRecord[] };

/** Messages on the roster channel. */
export type RosterMessage =
  | { t: 'who' }
  /**
   * `leader` leads; `ready` once it has the database open (then `seq` is its
   * latest sequence); `blocked` while a worker's `open()` keeps the database
   * from it.
   */
  | { t: 'leader'; leader: string; ready: boolean; seq?: number; blocked?: boolean }
  | { t: 'hello'; client: string; leader: string };

/**
 * Messages of the broker (broker.ts, a SharedWorker): a leader's page says
 * it leads (`lead`, `unlead`); a follower sends a port for a leader
 * (`connect`), which the broker hands to that leader's page (`attach`), or
 * answers `unknown` on the port itself.
 */
export type BrokerMessage =
  | { t: 'lead'; name: string; leader: string }
  | { t: 'unlead'; name: string; leader: string }
  | { t: 'connect'; name: string; leader: string; client: string; port: MessagePort }
  | { t: 'attach'; client: string; port: MessagePort };

/**
 * The leader's answer to `hello` (on the follower's own channel) or to a
 * port: its latest sequence number, and the one it opened the database at
 * (writes a page saw above it were lost with the leader before).
 */
export type Welcome = { t: 'welcome'; leader: string; seq: number; opened: number };

/** From a connection to the worker it started, besides envelopes. */
export type WorkerControl =
  | { t: 'open'; name: string; options: Omit<OpenOptions, 'signal' | 'wait'>; leader: string }
  /** Serve follower `client`: over `port` (from the broker), or its BroadcastChannel. */
  | { t: 'attach'; client: string; port?: MessagePort }
  | { t: 'close' };

/** From the worker to its connection, besides responses. */
export type WorkerReport = { t: 'locked' } | { t: 'opened'; seq: number; opened: number } | { t: 'openFailed'; error: WireError } | { t: 'closed' };

/** The channel names and lock names of database `name`. */
export function names(name: string) {
  return {
    roster: `siltdb:${name}:roster`,
    changes: `siltdb:${name}:changes`,
    client: (client: string) => `siltdb:${name}:c:${client}`,
    clientLock: (client: string) => `siltdb:${name}:client:${client}`,
    leadLock: `siltdb:${name}:lead`,
  };
}
