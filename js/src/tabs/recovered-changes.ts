/**
 * Change records a leader that went did not publish (issue 40, item 3). A
 * leader publishes each write right after the engine applies it; one that
 * crashes (its tab closed, its worker killed) between the two leaves
 * watchers without that write's record. The write itself is in the
 * database, and, until a flush moves it to a table, in a memtable: after
 * an open, the WAL replay put it there. A new leader that was not handed
 * the history (handover.ts: only a clean close hands it over) rebuilds
 * the records of what the memtables hold from the engine's list of them
 * (`unflushedUpdates`), so that a watch catching up from before the crash
 * sees each change and no gap. What a flush already moved to a table, an
 * ingest's range and an import are not in a memtable: those sequence
 * numbers stay missing, and a watch that needs them reports a gap, as
 * before.
 */

import { Database } from '../local/database.js';
import { isReserved } from './write-records.js';
import type { ChangeRecord } from './wire.js';

/** An update the engine holds in memory: `seq:f64le kind:u8 klen:u32le key elen:u32le end`, back to back. */
interface Update {
  seq: number;
  kind: number;
  key: Uint8Array;
  end: Uint8Array;
}

function decode(bytes: Uint8Array): Update[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Update[] = [];
  for (let at = 0; at + 13 <= bytes.length; ) {
    const seq = view.getFloat64(at, true);
    const kind = bytes[at + 8]!;
    const klen = view.getUint32(at + 9, true);
    const key = bytes.subarray(at + 13, at + 13 + klen);
    at += 13 + klen;
    const elen = view.getUint32(at, true);
    const end = bytes.subarray(at + 4, at + 4 + elen);
    at += 4 + elen;
    out.push({ seq, kind, key, end });
  }
  return out;
}

/**
 * The change records of the updates `db` holds in memory, numbered at or
 * below `upTo`, at most `maxBytes` of keys (the newest), as leader `from`
 * publishes them: one record per run of consecutive sequence numbers, each
 * ending at a write record (a connection's, which a record does not
 * report, and which ends every write of a leader); a missing number ends a
 * run. Empty if the engine has none (or cannot say).
 */
export function recoveredChanges(db: Database, upTo: number, maxBytes: number, from: string): ChangeRecord[] {
  let updates: Update[];
  try {
    updates = decode(Database.internals(db as Database<unknown, unknown>).inner.unflushedUpdates(0, maxBytes));
  } catch {
    return [];
  }
  const records: ChangeRecord[] = [];
  let run: Update[] = [];
  let first = -1; // the first sequence number of the record being made (-1: none)
  let last = -1;
  const close = () => {
    if (first >= 0) records.push(record(first, last, run, from));
    run = [];
    first = -1;
  };
  for (const u of updates) {
    if (u.seq > upTo) break;
    if (first >= 0 && u.seq !== last + 1) close(); // a number missing: not in memory
    if (first < 0) first = u.seq;
    last = u.seq;
    if (u.kind !== 3 && isReserved(u.key)) {
      // A write record: it ends its write, and is not reported.
      close();
      continue;
    }
    run.push(u);
  }
  close();
  return records;
}

/** Updates `run` (consecutive, from `first`), packed as a change record covering `first..last`. */
function record(first: number, last: number, run: Update[], from: string): ChangeRecord {
  let size = 0;
  for (const u of run) size += u.key.length + u.end.length;
  const keys = new Uint8Array(size);
  const bounds = new Uint32Array(2 * run.length + 1);
  const kinds = new Uint8Array(run.length);
  let at = 0;
  for (let i = 0; i < run.length; i++) {
    const u = run[i]!;
    kinds[i] = u.kind;
    bounds[2 * i] = at;
    keys.set(u.key, at);
    at += u.key.length;
    bounds[2 * i + 1] = at;
    keys.set(u.end, at);
    at += u.end.length;
  }
  bounds[2 * run.length] = at;
  return { first, last, kinds, bounds, keys, from };
}
