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
 * Change records (a committed write each) travel on the line of each
 * connection that watches (`ChangeMessage`), not on a channel of their own.
 * Web Locks: `siltdb:<name>:lead` (held by the connection that leads; the
 * others queue for it), `siltdb:<name>` (the database's, as `open()` takes
 * it: held by the leader's worker while it has the database open) and
 * `siltdb:<name>:client:<client>` (held by each connection while it lives,
 * so the leader learns when a follower is gone).
 */

import { SiltError, SILT_ERROR_CODES, type SiltErrorCode } from '../core/errors.js';
import type { OpenOptions } from '../local/open.js';
import { STEPS, type StepRequest } from './leader-steps.js';
import { isOperation, type LeaderState, OPERATIONS, type OperationRequest } from './operations.js';
import type { ChangeMessage, WireCause, WireError } from './wire.js';

export type { LeaderState } from './operations.js';
export type {
  ChangeHistory,
  ChangeMessage,
  ChangeRecord,
  IteratorRequestOptions,
  PackedValues,
  Response,
  SnapshotInfo,
  TxnWrites,
  WireCause,
  WireError,
} from './wire.js';

/**
 * Every request a connection sends its leader: an operation of
 * operations.ts's table or a step of leader-steps.ts's, each declared
 * there once with the fields it carries.
 */
export type Request = OperationRequest | StepRequest;

/**
 * Requests that write: the leader records them with the connection's write
 * record and answers them from it when sent again; a connection with a page
 * cache reads past it while one of its own waits for its answer.
 */
export const WRITES: ReadonlySet<Request['op']> = new Set<Request['op']>([
  'put',
  'delete',
  'deleteRange',
  'merge',
  'write',
  'clear',
  'ingest',
  'ingestRocksdb',
  'txnCommit',
]);

/** What request `r` needs of the leader it was made for (see `LeaderState`). */
export function leaderStateOf(r: Request): LeaderState {
  const rule = (isOperation(r.op) ? OPERATIONS[r.op].state : STEPS[r.op].state) as LeaderState | ((r: Request) => LeaderState);
  return typeof rule === 'function' ? rule(r) : rule;
}

/**
 * A request of connection `client`, numbered by it (`id` grows by one per
 * request). A write's id is recorded with the write, so the same write sent
 * again after a failover is recognised and not applied twice, and answered
 * as it was the first time. `floor`: every request of the connection below
 * it has its answer (none of them will be sent again), so the leader need
 * not keep their outcomes (write-records.ts). `client` is not sent: the
 * leader knows the connection by the line a request comes on (a port, its
 * channel, its own page's worker).
 */
export type Envelope = { id: number; client?: string; request: Request; floor?: number };

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

/**
 * The version of this protocol: every message between realms as this
 * package writes and reads it. A leader announces it (`leader`), a
 * follower states it when it asks to be served (`hello`, the broker's
 * `connect` and `attach`), a welcome repeats the leader's, and a page's
 * worker is told it with `open`. Absent means 0: a siltdb from before the
 * versions (0.1.0). Another tab of another version cannot share a
 * database with this one: each of its requests is answered
 * `VersionMismatch`, and a connection whose leader speaks another version
 * fails with it (`versionMismatch`). Raise it with any change a realm of
 * the other version would misread. 2: an `iterator` request may ask for
 * its first batch (`first`, `limit`), which a leader of 1 refuses. 3: a
 * `changes` request may ask for values (`values`), which a leader of 2
 * refuses, and change records may carry them. 4: an `exportStart` may ask
 * for the RocksDB form (`form: 'rocksdb'`, `lz4`, `targetFileSize`), and
 * `ingestRocksdb` is a write, which a leader of 3 refuses.
 */
export const PROTOCOL = 4;

/** The protocol version a message states (`v`; absent: 0). */
export function versionOf(m: { v?: unknown }): number {
  return typeof m.v === 'number' ? m.v : 0;
}

/**
 * Why a connection of protocol `mine` cannot use a leader of protocol
 * `leaders` (worded for the page of the connection, which reads it).
 */
export function versionMismatch(mine: number, leaders: number, name?: string): SiltError {
  const db = name === undefined ? 'this database' : `database ${JSON.stringify(name)}`;
  const step =
    mine < leaders
      ? 'reload this page to run the newer one'
      : 'reload the other tabs of this site that have it open (they were loaded before the site was updated), or close them; then connect() again';
  return new SiltError(
    'VersionMismatch',
    `this page runs ${mine < leaders ? 'an older' : 'a newer'} siltdb (tab protocol ${mine}) than the tab that leads ${db} (protocol ${leaders}), and the two cannot share it: ${step}`,
  );
}

/** Messages on the roster channel. */
export type RosterMessage =
  | { t: 'who' }
  /**
   * `leader` leads; `ready` once it has the database open (then `seq` is its
   * latest sequence); `blocked` while a worker's `open()` keeps the database
   * from it.
   */
  | { t: 'leader'; leader: string; ready: boolean; seq?: number; blocked?: boolean; v: number }
  /**
   * `client` asks `leader` to serve it over its channel; `broker` where the
   * client has a broker (it did not know that leader, or did not answer:
   * the leader registers again, with the instance that lives; connection.ts).
   */
  | { t: 'hello'; client: string; leader: string; broker?: boolean; v: number };

/**
 * Messages of the broker (broker.ts, a SharedWorker): a leader's page says
 * it leads (`lead`, `unlead`); a follower sends a port for a leader
 * (`connect`), which the broker hands to that leader's page (`attach`), or
 * answers `unknown` on the port itself.
 */
export type BrokerMessage =
  | { t: 'lead'; name: string; leader: string }
  | { t: 'unlead'; name: string; leader: string }
  | { t: 'connect'; name: string; leader: string; client: string; port: MessagePort; v: number }
  | { t: 'attach'; client: string; port: MessagePort; v: number };

/**
 * The leader's answer to `hello` (on the follower's own channel) or to a
 * port: its latest sequence number, and the one it opened the database at
 * (writes a page saw above it were lost with the leader before).
 */
export type Welcome = { t: 'welcome'; leader: string; seq: number; opened: number; v: number };

/**
 * The name of the worker a connection starts (spawn.ts writes it out): such
 * a worker gets its module from its page (`{ t: 'wasm' }`, before `open`)
 * and does not fetch and compile its own meanwhile. A worker of any other
 * name loads its own at once; one given with `connect()`'s `worker` under
 * this name gets no module from the page, and loads its own when `open`
 * comes (name it otherwise).
 */
export const LEADER_WORKER_NAME = 'siltdb';

/** From a connection to the worker it started, besides envelopes. */
export type WorkerControl =
  /** The module its page compiled (worker-start.ts), or none: it loads its own. Before `open`, to a worker named `LEADER_WORKER_NAME`. */
  | { t: 'wasm'; module?: WebAssembly.Module | undefined }
  | { t: 'open'; name: string; options: Omit<OpenOptions, 'signal' | 'wait'>; leader: string; v: number }
  /** Serve follower `client` (of protocol `v`): over `port` (from the broker), or its BroadcastChannel. */
  | { t: 'attach'; client: string; port?: MessagePort; v: number }
  | { t: 'close' }
  /** Answered with `pong`, after whatever the worker posted before. */
  | { t: 'ping' };

/** From the worker to its connection, besides responses. */
export type WorkerReport =
  | { t: 'locked' }
  | { t: 'pong' }
  | { t: 'opened'; seq: number; opened: number }
  | { t: 'openFailed'; error: WireError }
  | { t: 'closed' }
  | ChangeMessage;

/** The channel names and lock names of database `name`. */
export function names(name: string) {
  return {
    roster: `siltdb:${name}:roster`,
    client: (client: string) => `siltdb:${name}:c:${client}`,
    clientLock: (client: string) => `siltdb:${name}:client:${client}`,
    leadLock: `siltdb:${name}:lead`,
    /**
     * Held by the worker of the connection `leader` for as long as it
     * lives, from before it asks for the database's lock: a database lock
     * held beside another leader's is that leader's worker's (going), not
     * an `open()`'s.
     */
    workerLock: (leader: string) => `siltdb:${name}:worker:${leader}`,
  };
}
