/**
 * What a leader (leader.ts) keeps of the answers it gave a connection, for
 * the requests it may send again (after following another leader and
 * coming back), and which requests are served again instead.
 */

import type { FirstBatch } from './leader-steps.js';
import type { Request, Response } from './protocol.js';

/**
 * At most this many answers kept per connection for requests it may send
 * again (at or above its floor): a connection that follows another leader
 * and comes back to this one sends again what had no answer, and what made
 * something here (a snapshot, an iterator, a transaction, an export) must
 * not be made twice. Answers that moved bytes are not kept: those requests
 * (reads) are served again, but for those that move a position on (an
 * iterator's, an export's). Writes are answered from their write records.
 */
export const ANSWERS_KEPT = 256;

/** Kept for an answer that moved bytes (`ANSWERS_KEPT`). */
export const MOVED = 'moved';

/** What is kept of the answer to an `op` request that moved bytes: for an iterator's first batch, the iterator it made. */
export function movedOf(op: Request['op'], response: Response): 'moved' | { movedIterator: number } {
  return op === 'iterator' && response.ok ? { movedIterator: (response.value as FirstBatch).id } : MOVED;
}

/**
 * Requests served again when sent again, never answered from what was kept:
 * a watch's catch-up (`changes`), whose first answer is stale by the time
 * it is sent again (the connection went to another leader and came back),
 * while the change records published meanwhile went to its old line: the
 * first answer again would leave the watch a gap of them. Served again, it
 * has them.
 */
export const ANSWERED_AGAIN = new Set<Request['op']>(['changes']);

/** Requests that move a position on: served again, they would skip what the lost answer had. */
export const ADVANCES = new Set<Request['op']>(['next', 'exportNext']);
