/**
 * Gets sent together, served together (issue 34, item 2): a run of gets of
 * one message (outbox.ts) at one snapshot goes to the engine as one batched
 * MultiGet, which reads each table's blocks once for keys that share them
 * and keeps its caches warm from the first key to the last, where gets one
 * by one, between which the page runs, each start cold. Each get keeps its
 * own answer: a value, none, or its own error (a reserved key). The values
 * are copied out of the engine once: small ones into one buffer of the run,
 * which travels packed (answer-wire.ts: the page makes each value a buffer
 * of its own), a large one into a buffer of its own, transferred. Nothing can write between gets queued
 * together (the leader serves its queue in order), so serving them as one
 * read at one moment is what serving them one by one would have read.
 */

import type { Database } from '../local/database.js';
import { ABSENT } from '../boundary/exchange.js';
import { PinnedMultiGetResult } from '../boundary/results.js';
import { TRANSFER_MIN } from './answer-wire.js';
import { type Client, snapshotOf } from './leader-clients.js';
import { keyOf, reserved } from './leader-batches.js';
import type { Served } from './operations.js';
import type { Envelope } from './protocol.js';
import { isReserved } from './write-records.js';
import type { GetRequest } from './request-wire.js';

/** The runs of `envelopes`: gets at one snapshot, two or more in a row, as arrays; any other request alone. */
export function runsOfGets(envelopes: Envelope[]): (Envelope | Envelope[])[] {
  const out: (Envelope | Envelope[])[] = [];
  for (let i = 0; i < envelopes.length; ) {
    const r = envelopes[i]!.request;
    let j = i + 1;
    if (r.op === 'get') {
      const at = (r as GetRequest).snapshot;
      while (j < envelopes.length && envelopes[j]!.request.op === 'get' && (envelopes[j]!.request as GetRequest).snapshot === at) j++;
    }
    out.push(j - i > 1 ? envelopes.slice(i, j) : envelopes[i]!);
    i = j;
  }
  return out;
}

/**
 * The answers of the gets of `run` (of connection `c`), from one MultiGet:
 * each a value or its own error; undefined where the run cannot be read as
 * one (its snapshot is gone, a key the engine refuses): then each is
 * served alone, and fails alone. It never throws: a task of the leader's
 * queue that rejected would stop the queue.
 */
export function batchedGets(db: Database, c: Client, run: Envelope[]): (Served | Error)[] | undefined {
  try {
    return read(db, c, run);
  } catch {
    // Whatever went wrong (a result that would not read): each alone, as if never batched.
    return undefined;
  }
}

function read(db: Database, c: Client, run: Envelope[]): (Served | Error)[] | undefined {
  let at: ReturnType<typeof snapshotOf>;
  try {
    at = snapshotOf(c, (run[0]!.request as GetRequest).snapshot);
  } catch {
    return undefined;
  }
  const out: (Served | Error)[] = new Array(run.length);
  const keys: Uint8Array[] = [];
  const where: number[] = [];
  for (let i = 0; i < run.length; i++) {
    const key = keyOf((run[i]!.request as GetRequest).key);
    if (isReserved(key)) out[i] = reserved('the key');
    else {
      keys.push(key);
      where.push(i);
    }
  }
  if (keys.length === 0) return out;
  let result: ReturnType<Database['multiGet']>;
  try {
    result = db.multiGet(keys, at);
  } catch {
    return undefined;
  }
  let all: ReturnType<PinnedMultiGetResult['copyAll']>;
  try {
    if (!(result instanceof PinnedMultiGetResult)) return undefined;
    all = result.copyAll(TRANSFER_MIN);
  } finally {
    result.release();
  }
  // Small values are views of one buffer (one allocation for the run),
  // packed into one answer (answer-wire.ts); a large one is a buffer of
  // its own, transferred.
  const { bytes, starts, lengths, large } = all;
  for (let j = 0; j < keys.length; j++) {
    const len = lengths[j]!;
    const own = large.get(j);
    if (len === ABSENT) out[where[j]!] = [undefined, []];
    else if (own !== undefined) out[where[j]!] = [own, [own.buffer]];
    else out[where[j]!] = [bytes.subarray(starts[j]!, starts[j]! + len), []];
  }
  return out;
}
