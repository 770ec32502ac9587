/**
 * A leader's change history, handed to the next leader through the
 * database (docs/tabs.md, "Change events"). A leader that closes cleanly
 * writes its newest change records under a reserved key; the next leader
 * reads them when it begins and serves them to `watch` catch-ups as its
 * own. Without it, a page whose catch-up with the new leader overtook the
 * old leader's last change records (they travel on the old leader's line,
 * the answer on the new leader's: nothing orders the two) saw a gap where
 * nothing failed. A leader that dies writes nothing: its last records may
 * still be reported as a gap, as docs/tabs.md says.
 *
 * Format (docs/format.md): version 1, then the sequence number before the
 * oldest record kept, then the records, oldest first.
 */

import { RESERVED } from './write-records.js';
import type { ChangeRecord } from './wire.js';

/** The key of a handed-over history. */
export const HANDOVER_KEY = Uint8Array.from([...RESERVED, ...new TextEncoder().encode('changes')]);

/** At most this many bytes of records are handed over (the newest first). */
export const HANDOVER_BYTES = 64 << 10;

const VERSION = 1;

/** What a leader hands over: the records after `base`, oldest first. */
export interface Handover {
  base: number;
  records: ChangeRecord[];
}

function size(r: ChangeRecord): number {
  return 16 + 4 + r.kinds.length + 4 + r.bounds.byteLength + 4 + r.keys.length + 4 + r.from.length * 3;
}

/**
 * The newest of `records` that fit in `HANDOVER_BYTES`, the last one's
 * `last` raised to `latest` (the hand-over's own sequence number: no gap
 * for it), encoded; undefined if there are none.
 */
export function encodeHandover(records: readonly ChangeRecord[], latest: number): Uint8Array | undefined {
  let total = 1 + 8 + 4;
  let from = records.length;
  while (from > 0 && total + size(records[from - 1]!) <= HANDOVER_BYTES) total += size(records[--from]!);
  if (from === records.length) return undefined;
  const kept = records.slice(from);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  const utf8 = new TextEncoder();
  let at = 0;
  out[at++] = VERSION;
  view.setFloat64(at, kept[0]!.first - 1, true);
  at += 8;
  view.setUint32(at, kept.length, true);
  at += 4;
  const bytes = (b: Uint8Array): void => {
    view.setUint32(at, b.length, true);
    out.set(b, at + 4);
    at += 4 + b.length;
  };
  for (let i = 0; i < kept.length; i++) {
    const r = kept[i]!;
    view.setFloat64(at, r.first, true);
    view.setFloat64(at + 8, i === kept.length - 1 ? Math.max(r.last, latest) : r.last, true);
    at += 16;
    bytes(r.kinds);
    view.setUint32(at, r.bounds.length, true);
    at += 4;
    for (const b of r.bounds) {
      view.setUint32(at, b, true);
      at += 4;
    }
    bytes(r.keys);
    bytes(utf8.encode(r.from));
  }
  return out.subarray(0, at);
}

/**
 * The history in `value`, if it is a well-formed one whose last record
 * ends at `opened` (the sequence number the reading leader began at:
 * anything else is a history of another moment, and is not used).
 */
export function decodeHandover(value: Uint8Array | undefined, opened: number): Handover | undefined {
  if (value === undefined || value.length < 13 || value[0] !== VERSION) return undefined;
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  let at = 1;
  const fits = (n: number): boolean => n >= 0 && at + n <= value.length;
  const base = view.getFloat64(at, true);
  const count = view.getUint32(at + 8, true);
  at += 12;
  const seqOk = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;
  if (!seqOk(base)) return undefined;
  const bytes = (): Uint8Array | undefined => {
    if (!fits(4)) return undefined;
    const n = view.getUint32(at, true);
    at += 4;
    if (!fits(n)) return undefined;
    at += n;
    return value.slice(at - n, at);
  };
  const records: ChangeRecord[] = [];
  let last = base;
  for (let i = 0; i < count; i++) {
    if (!fits(16)) return undefined;
    const first = view.getFloat64(at, true);
    const end = view.getFloat64(at + 8, true);
    at += 16;
    // Contiguous, each at least its updates long.
    if (!seqOk(first) || !seqOk(end) || first !== last + 1 || end < first) return undefined;
    const kinds = bytes();
    if (kinds === undefined || kinds.length > end - first + 1 || !fits(4)) return undefined;
    const n = view.getUint32(at, true);
    at += 4;
    if (!fits(4 * n) || n !== 2 * kinds.length + 1) return undefined;
    const bounds = new Uint32Array(n);
    for (let j = 0; j < n; j++, at += 4) bounds[j] = view.getUint32(at, true);
    const keys = bytes();
    const fromBytes = bytes();
    if (keys === undefined || fromBytes === undefined) return undefined;
    for (let j = 1; j < n; j++) if (bounds[j]! < bounds[j - 1]! || bounds[j]! > keys.length) return undefined;
    records.push({ first, last: end, kinds, bounds, keys, from: new TextDecoder().decode(fromBytes) });
    last = end;
  }
  if (at !== value.length || records.length === 0 || last !== opened) return undefined;
  return { base, records };
}
