/**
 * The operations of `core/operations.ts`, declared once for `connect()`:
 * for each, what the page sends (`ask`, from the method's arguments, on the
 * handle's codec), how the leader serves it on its `Database` (`serve`),
 * and what it needs of the leader that was asked (`state`: a request
 * pending at a failover is sent to the new leader only if it needs
 * nothing of the old one). From this table follow: the protocol's
 * request type (`OperationRequest`, in `Request`), the leader's dispatch
 * (leader-requests.ts), the re-send rule (`leaderStateOf`, protocol.ts)
 * and `RemoteDatabase`'s methods (installed from it, remote-database.ts).
 * The table's type names every operation, so the compiler refuses one
 * left out.
 */

import { type Key, show } from '../core/bytes.js';
import { SiltError } from '../core/errors.js';
import type { Codec } from '../core/encoding.js';
import type { OperationName } from '../core/operations.js';
import type { Database } from '../local/database.js';
import type { Snapshot } from '../local/snapshot.js';

/**
 * What a request needs of the leader it was made for, for a connection
 * whose leader went with the request unanswered (connection.ts):
 * - `'none'`: it means the same to any leader: it is sent to the new one.
 * - `'uses'`: it uses, or makes, something that lives in that leader alone
 *   (a snapshot, iterator, transaction, export or import there, named by a
 *   number that leader handed out; the new leader's numbers start again
 *   and may name another thing of its own): it fails with `LeaderChanged`.
 * - `'releases'`: it only lets go of such a thing: with that leader gone,
 *   nothing is left to let go of, and it succeeds.
 */
export type LeaderState = 'none' | 'uses' | 'releases';

/** A read at snapshot `snapshot` (0: none, the latest state) uses the leader's state only with a snapshot, that leader's. */
export const atSnapshot = (r: { snapshot: number }): LeaderState => (r.snapshot === 0 ? 'none' : 'uses');

/** What an operation's page side has of its handle. */
export interface PageSide {
  codec: Codec;
  /** The number of a `RemoteSnapshot` given in options (0: none), checked, and the epoch it belongs to. */
  snapshot(s: unknown): { snapshot: number; epoch?: number };
}

/** What an operation's leader side has. */
export interface LeaderSide {
  db: Database;
  /** A key of a request, as bytes; a reserved one (connect()'s write records) is refused. */
  key(k: Key, what: string): Uint8Array;
  /** The snapshot of number `id` of the asking connection (0: none). */
  snapshotOf(id: number): { snapshot?: Snapshot };
}

/** One operation: its request's fields `W`, asked for with arguments `A`. */
export interface Operation<A extends unknown[], W extends object> {
  ask(page: PageSide, ...args: A): { wire: W; epoch?: number | undefined };
  /** The answer and the buffers to transfer with it. */
  serve(leader: LeaderSide, r: W): [unknown, Transferable[]];
  state: LeaderState | ((r: W) => LeaderState);
}

const op = <A extends unknown[], W extends object>(o: Operation<A, W>): Operation<A, W> => o;

/** Any operation (the table's type: every name of `Operations` has one). */
interface AnyOperation {
  ask(page: PageSide, ...args: never[]): { wire: object; epoch?: number | undefined };
  serve(leader: LeaderSide, r: never): [unknown, Transferable[]];
  state: LeaderState | ((r: never) => LeaderState);
}

/** A read at the snapshot in `options`, on the page. */
const at = (page: PageSide, options: { snapshot?: unknown } | undefined) => page.snapshot(options?.snapshot);

export const OPERATIONS = {
  has: op({
    ask: (page, key: unknown, options?: { snapshot?: unknown }) => {
      const { snapshot, epoch } = at(page, options);
      return { wire: { key: page.codec.key(key), snapshot }, epoch };
    },
    serve: (leader, r: { key: Key; snapshot: number }) => [leader.db.has(leader.key(r.key, 'the key'), leader.snapshotOf(r.snapshot)), []],
    state: atSnapshot,
  }),
  hasMany: op({
    ask: (page, keys: unknown, options?: { snapshot?: unknown }) => {
      if (!Array.isArray(keys)) throw new SiltError('InvalidArgument', `keys must be an array of keys, got ${show(keys)}`);
      const { snapshot, epoch } = at(page, options);
      return { wire: { keys: keys.map((k, i) => page.codec.key(k, `keys[${i}]`)), snapshot }, epoch };
    },
    serve: (leader, r: { keys: Key[]; snapshot: number }) => [
      leader.db.hasMany(
        r.keys.map((k) => leader.key(k, 'a key')),
        leader.snapshotOf(r.snapshot),
      ),
      [],
    ],
    state: atSnapshot,
  }),
} satisfies { [O in OperationName]: AnyOperation };

/** A request of an operation declared here. */
export type OperationRequest = {
  [O in OperationName]: { op: O } & ReturnType<(typeof OPERATIONS)[O]['ask']>['wire'];
}[OperationName];

/** Whether `op` names an operation declared here. */
export function isOperation(op: string): op is OperationName {
  return Object.hasOwn(OPERATIONS, op);
}
