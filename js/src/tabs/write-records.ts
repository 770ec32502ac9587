/**
 * Write records: what the leader of `connect()` (leader.ts) keeps, in the
 * database, of each connection's writes, so that a write sent again after a
 * failover is answered as it was the first time, and never applied twice.
 *
 * A connection's record is one key, `RECORDS + <connection id>`, put in the
 * same atomic batch as each of its writes (a bookkeeping put, at most
 * `BOOKKEEPING_MAX` bytes with its key). Its value:
 * - bytes 0..8: the highest request id applied (float64le);
 * - bytes 8..16: when it was written (ms since 1970, float64le);
 * - then, when there is more to say, UTF-8 JSON (`Extra`): the outcomes a
 *   re-send must repeat (writes that failed, an ingest's report) of the
 *   requests the connection may still send again (those at or above its
 *   floor: every request below has its answer), an ingest under way, and a
 *   horizon at or below which failures were dropped for room.
 *
 * A write `id` sent again is answered from the record: a recorded outcome
 * is repeated (its failure thrown again, an ingest's report returned); else
 * `id` at or below the highest applied was applied (the connection's writes
 * are applied in order, and every failure at or above its floor is
 * recorded by the next write that is applied); else it was not, and it
 * runs (whatever the horizon). Where a failure was dropped for room (more
 * than fit of failures answered nowhere), a write at or below both the
 * highest applied and the horizon that has no outcome is answered
 * `LeaderChanged`: whether it was applied is not known, and it is not
 * acknowledged. An ingest's report dropped for room leaves no doubt
 * (the ingest was applied): first only its sequence number is kept, then
 * nothing, and the ingest sent again is acknowledged with what is known.
 */

import type { IngestReport } from '../core/batch.js';
import { SiltError, SILT_ERROR_CODES } from '../core/errors.js';

const utf8 = new TextEncoder();

/**
 * Keys from these bytes on (eight 0xff bytes, then `siltdb/`) are the
 * package's own in a database shared through `connect()`: its write
 * records. `connect()` refuses to read or write them and hides them from
 * iterators; a range delete over them leaves them be.
 */
export const RESERVED = Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...utf8.encode('siltdb/')]);
/** The first key after every reserved key. */
export const RESERVED_END = RESERVED.slice();
RESERVED_END[RESERVED_END.length - 1]! += 1;
export const RECORDS = Uint8Array.from([...RESERVED, ...utf8.encode('client/')]);

export function isReserved(key: Uint8Array): boolean {
  if (key.length < RESERVED.length || key[0] !== 0xff) return false;
  for (let i = 0; i < RESERVED.length; i++) if (key[i] !== RESERVED[i]) return false;
  return true;
}

export function recordKey(client: string): Uint8Array {
  const id = utf8.encode(client);
  const k = new Uint8Array(RECORDS.length + id.length);
  k.set(RECORDS);
  k.set(id, RECORDS.length);
  return k;
}

/** The engine's limit on a bookkeeping put (key and value), `silt_engine::BOOKKEEPING_MAX`. */
const BOOKKEEPING_MAX = 1024;
/** How long a recorded failure's message may be. */
const MESSAGE_MAX = 120;

/**
 * What a re-send of requests `from..to` (ids) must repeat: their failure,
 * or an ingest's report (or, kept in less room, its sequence number).
 */
export type Outcome =
  | { from: number; to: number; code: string; message: string }
  | { from: number; to: number; report: IngestReport }
  | { from: number; to: number; sequence: number };

/** An ingest under way: request `id`, whose intent (this record) took sequence number `seq`; `count` entries. */
export interface Intent {
  id: number;
  seq: number;
  count: number;
}

/** A connection's write record, as the leader keeps it in memory. */
export interface Applied {
  /** The highest request id applied. */
  max: number;
  /** Failures at or below this id may have been dropped for room. */
  horizon: number;
  outcomes: Outcome[];
  pending: Intent | undefined;
  /** Every request below this id has been answered (the connection said so). */
  floor: number;
}

/**
 * The JSON after the first 16 bytes. `o`: a failure `[from, to, code,
 * message]`, an ingest's report `[id, report]`, or only its sequence
 * number `[id, sequence]`.
 */
type Extra = { h?: number; o?: ([number, number, string, string] | [number, IngestReport | number])[]; p?: [number, number, number] };

export function emptyRecord(): Applied {
  return { max: 0, horizon: 0, outcomes: [], pending: undefined, floor: 0 };
}

/** A record's value read back (one written by an older siltdb has the first 16 bytes only). */
export function parseRecord(value: Uint8Array | undefined): Applied {
  const a = emptyRecord();
  if (value === undefined || value.length < 8) return a;
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  a.max = view.getFloat64(0, true);
  if (value.length <= 16) return a;
  try {
    const x = JSON.parse(new TextDecoder().decode(value.subarray(16))) as Extra;
    a.horizon = x.h ?? 0;
    for (const o of x.o ?? []) {
      if (o.length === 2) {
        if (typeof o[1] === 'number') a.outcomes.push({ from: o[0], to: o[0], sequence: o[1] });
        else a.outcomes.push({ from: o[0], to: o[0], report: o[1] });
      } else a.outcomes.push({ from: o[0], to: o[1], code: o[2], message: o[3] });
    }
    if (x.p !== undefined) a.pending = { id: x.p[0], seq: x.p[1], count: x.p[2] };
  } catch {
    // Unreadable: every outcome below the highest applied is unknown.
    a.horizon = a.max;
  }
  return a;
}

function extraOf(a: Applied, pending: Intent | undefined): Extra | undefined {
  const x: Extra = {};
  if (a.horizon > 0) x.h = a.horizon;
  if (a.outcomes.length > 0) {
    x.o = a.outcomes.map((o) => ('report' in o ? [o.from, o.report] : 'sequence' in o ? [o.from, o.sequence] : [o.from, o.to, o.code, o.message]));
  }
  if (pending !== undefined) x.p = [pending.id, pending.seq, pending.count];
  return x.h === undefined && x.o === undefined && x.p === undefined ? undefined : x;
}

/**
 * The value of `client`'s record once request `max` is applied (with
 * `pending`, an ingest's intent). What does not fit the engine's limit on
 * a bookkeeping put goes (from `a` too: memory keeps what the database
 * keeps): first the failures' messages (their codes stay), then the
 * ingests' reports but their sequence numbers (oldest first), then the
 * oldest outcomes.
 * A failure dropped raises the horizon (a write at or below it with no
 * outcome may have failed); a report dropped does not (its ingest was
 * applied, and is acknowledged when sent again).
 */
export function recordValue(a: Applied, keyLength: number, max: number, pending?: Intent): Uint8Array {
  for (let messages = true; ; ) {
    const x = extraOf(a, pending);
    const json = x === undefined ? new Uint8Array(0) : utf8.encode(JSON.stringify(x));
    if (keyLength + 16 + json.length <= BOOKKEEPING_MAX || a.outcomes.length === 0) {
      const v = new Uint8Array(16 + json.length);
      const view = new DataView(v.buffer);
      view.setFloat64(0, max, true);
      view.setFloat64(8, Date.now(), true);
      v.set(json, 16);
      return v;
    }
    if (messages) {
      messages = false;
      for (const o of a.outcomes) if ('message' in o) o.message = '';
      continue;
    }
    const oldest = a.outcomes.findIndex((o) => 'report' in o);
    if (oldest >= 0) {
      const o = a.outcomes[oldest] as { from: number; to: number; report: IngestReport };
      a.outcomes[oldest] = { from: o.from, to: o.to, sequence: o.report.sequence };
      continue;
    }
    const dropped = a.outcomes.shift()!;
    if ('code' in dropped) a.horizon = Math.max(a.horizon, dropped.to);
  }
}

/**
 * The report of an ingest of `keys` entries (as sent) that was applied at
 * `sequence` (0: not known), when its own report is gone: no file figures.
 */
export function knownReport(keys: number, sequence: number | undefined): IngestReport {
  return { keys, files: 0, bytes: 0, level: 0, sequence: sequence ?? 0, flushedMemtables: false };
}

/** The connection says every request below `floor` has its answer: their outcomes can go. */
export function advanceFloor(a: Applied, floor: number | undefined): void {
  if (typeof floor !== 'number' || !(floor > a.floor)) return;
  a.floor = floor;
  a.outcomes = a.outcomes.filter((o) => o.to >= floor);
  if (a.horizon < floor) a.horizon = 0;
}

/** Whether write `id` was never applied nor failed here: neither `repeat` answers it (sent for the first time). */
export function unseen(a: Applied, id: number): boolean {
  return id > a.max && !a.outcomes.some((o) => id >= o.from && id <= o.to);
}

/**
 * What write `id` sent again gets: `undefined` when it was not applied
 * (run it), `{ value }` when it was (its answer again: an ingest's report;
 * `sequence` alone when only that was kept of it, nothing when not even
 * that); throws its failure again, or `LeaderChanged` when whether it was
 * applied is not known.
 */
export function repeat(a: Applied, id: number): { value: unknown; sequence?: number } | undefined {
  if (unseen(a, id)) return undefined;
  for (const o of a.outcomes) {
    if (id < o.from || id > o.to) continue;
    if ('report' in o) return { value: o.report };
    if ('sequence' in o) return { value: undefined, sequence: o.sequence };
    const code = (SILT_ERROR_CODES as readonly string[]).includes(o.code) ? (o.code as SiltError['code']) : 'Internal';
    throw new SiltError(code, o.message || `this write failed (${o.code}) on the tab that led, which went before its answer arrived`);
  }
  if (id > a.max) return undefined;
  if (id <= a.horizon) {
    throw new SiltError(
      'LeaderChanged',
      'the tab that led the database went before this write was answered, and whether it was applied is no longer known (more writes of this connection had failed unanswered than its record holds): read to check',
    );
  }
  return { value: undefined };
}

/** Write `id` failed with `e`, nothing of it applied: a re-send must fail the same way. */
export function recordFailure(a: Applied, id: number, e: unknown): void {
  if (id <= a.max) return;
  const code = e instanceof SiltError ? e.code : 'Internal';
  const message = (e instanceof Error ? e.message : String(e)).slice(0, MESSAGE_MAX);
  const last = a.outcomes.at(-1);
  // Failures with nothing applied between them and the same answer share one entry.
  if (last !== undefined && 'code' in last && last.code === code && (last.message === message || last.message === '') && last.to > a.max) {
    last.to = id;
    return;
  }
  a.outcomes.push({ from: id, to: id, code, message });
}
