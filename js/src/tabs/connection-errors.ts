/**
 * Why calls of a `connect()` connection fail when what they need is not
 * there: Web Locks refused, or the leader that held their snapshot,
 * iterator, transaction, export or import went (`LeaderChanged`).
 */

import { show } from '../core/bytes.js';
import { SiltError } from '../core/errors.js';
import type { Request } from './protocol.js';

/** `connect()` cannot go on without Web Locks: `e` is why `navigator.locks` refused. */
export function locksRefused(e: unknown): SiltError {
  const why = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return new SiltError(
    'NotSupported',
    `connect() needs Web Locks, and navigator.locks refused (${why}). In a sandboxed iframe, add allow-same-origin to its sandbox; ` +
      "where the browser blocks this site's storage (a third-party frame, a privacy setting), open the page as a top-level site; " +
      'else open() the database in a worker of this page',
    { cause: e },
  );
}

export function leaderChanged(what: string): SiltError {
  return new SiltError('LeaderChanged', `${what} lived in the tab that led this database, and that tab went (closed, reloaded or crashed); take a new one`);
}

/**
 * Why request `r`, pending when its leader went, fails. An import's finish
 * may have been applied there (its answer lost): it is not known whether
 * the import completed.
 */
export function lostWithLeader(r: Request): SiltError {
  if (r.op === 'importFinish') {
    return new SiltError(
      'LeaderChanged',
      "the tab that led this database went (closed, reloaded or crashed) before this import's finish was answered: " +
        'the import may have completed (all of its data in) or not (none of it); check with count() or a read before importing again',
    );
  }
  return leaderChanged(whatOf(r));
}

/** What a request that uses the leader's state uses, for `LeaderChanged`'s message. */
export function whatOf(r: Request): string {
  if (r.op === 'next' || r.op === 'releaseIterator') return 'this iterator';
  if (r.op.startsWith('txn')) return 'this transaction';
  if (r.op.startsWith('export')) return 'this export';
  if (r.op.startsWith('import')) return 'this import';
  return 'this snapshot';
}

/** Request `r`, whose arguments the structured clone refused (`e`), was not sent. */
export function notSent(r: Request, e: unknown): SiltError {
  const detail = e instanceof Error ? `${e.name}: ${e.message}` : show(e);
  return new SiltError('InvalidArgument', `the arguments of ${r.op} cannot be sent to the database's worker: ${detail}`, { cause: e });
}

/** Database `name` is open with `open()` in a worker: a connection not told to wait fails with this. */
export function openElsewhere(name: string): SiltError {
  return new SiltError(
    'DatabaseLocked',
    `database "${name}" is open with open() in a worker, which keeps it to itself (its Web Lock is held, and no connect() leads it); ` +
      'connect() with { wait: true } waits until it is closed',
  );
}
