/**
 * What the leader of `connect()` (leader.ts) reads out of the batches it
 * applies and the results it sends: change records (`pack`: the kinds and
 * keys of a batch's updates, in three buffers), the reserved keys of write
 * records (refused in a batch, cut out of range deletes, hidden from
 * iterators' batches), an ingest's key range, and values packed for the
 * page.
 */

import { BATCH_TAGS, WriteBatch, type BatchOp } from '../core/batch.js';
import { compareBytes } from '../core/bytes.js';
import { countCopied } from '../boundary/counters.js';
import { SiltError } from '../core/errors.js';
import type { EntryBatch } from '../local/iterator.js';
import type { ChangeRecord, PackedValues } from './wire.js';
import { isReserved, RESERVED, RESERVED_END } from './write-records.js';

const utf8 = new TextEncoder();

/** A reserved key in a request: refused. */
export function reserved(what: string): SiltError {
  return new SiltError('InvalidArgument', `${what} is reserved: keys starting with eight 0xff bytes and "siltdb/" hold connect()'s write records`);
}

/** Values for the page: one buffer (one copy), transferred, and their lengths (-1: none). */
export function packValues(values: (Uint8Array | undefined)[]): [PackedValues, Transferable[]] {
  const lens = new Int32Array(values.length);
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    lens[i] = v === undefined ? -1 : v.length;
    total += v?.length ?? 0;
  }
  const bytes = new Uint8Array(total);
  countCopied(total);
  let at = 0;
  for (const v of values) {
    if (v === undefined) continue;
    bytes.set(v, at);
    at += v.length;
  }
  return [{ bytes, lens }, [bytes.buffer, lens.buffer]];
}

export function keyOf(k: string | Uint8Array): Uint8Array {
  return typeof k === 'string' ? utf8.encode(k) : k;
}

/** `batch` without the reserved keys: itself, a copy, or undefined when none is left. */
export function withoutReserved(batch: EntryBatch): { bytes: Uint8Array; offsets: Uint32Array } | undefined {
  const o = batch.offsets;
  const b = batch.bytes;
  let hidden = 0;
  for (let i = 0; i < batch.length; i++) {
    if (b[o[2 * i]!] === 0xff && isReserved(b.subarray(o[2 * i]!, o[2 * i + 1]!))) hidden++;
  }
  if (hidden === 0) return { bytes: b, offsets: o };
  if (hidden === batch.length) return undefined;
  const bytes = new Uint8Array(b.length);
  const offsets = new Uint32Array(2 * (batch.length - hidden) + 1);
  let at = 0;
  let j = 0;
  for (let i = 0; i < batch.length; i++) {
    const ks = o[2 * i]!;
    const vs = o[2 * i + 1]!;
    const ve = o[2 * i + 2]!;
    if (b[ks] === 0xff && isReserved(b.subarray(ks, vs))) continue;
    offsets[j++] = at;
    bytes.set(b.subarray(ks, vs), at);
    at += vs - ks;
    offsets[j++] = at;
    bytes.set(b.subarray(vs, ve), at);
    at += ve - vs;
  }
  offsets[j] = at;
  return { bytes: bytes.subarray(0, at), offsets };
}

export type Packed = Omit<ChangeRecord, 'first' | 'last' | 'from'>;

/** The changes of a write that changes nothing the app sees (a record dropped). */
export const NOTHING: Packed = { kinds: new Uint8Array(0), bounds: new Uint32Array(1), keys: new Uint8Array(0) };

export function recordBytes(r: ChangeRecord): number {
  return r.keys.length + r.bounds.byteLength + r.kinds.length + 32 + (r.values === undefined ? 0 : r.values.bytes.length + r.values.lens.byteLength);
}

/** A change record's kind for an ingest (a key range, as a delete range's). */
export const INGEST = 0x04;

/** A change record's one update of kind 5: anything may have changed (an import). */
export const RESET_ALL: Packed = { kinds: new Uint8Array([5]), bounds: new Uint32Array(3), keys: new Uint8Array(0) };
const { put: PUT, delete: DELETE, merge: MERGE, deleteRange: DELETE_RANGE } = BATCH_TAGS;

/** A write batch that WriteBatch did not encode. */
function malformed(): SiltError {
  return new SiltError('InvalidArgument', 'a write batch is malformed (not encoded by WriteBatch)');
}

/** The little-endian u32 of an encoded batch at `at`. */
function u32At(bytes: Uint8Array, at: number): number {
  if (at + 4 > bytes.length) throw malformed();
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
}

/**
 * The change record of an encoded batch (see `ChangeRecord`), in two passes
 * and three allocations; or 'split' when a range delete covers reserved
 * keys. Throws `InvalidArgument` for a reserved key or a malformed batch.
 */
export function pack(bytes: Uint8Array): Packed | 'split' {
  const bad = malformed;
  const u32 = (at: number): number => u32At(bytes, at);
  // Pass 1: count, size, check.
  let n = 0;
  let keyBytes = 0;
  for (let at = 0; at < bytes.length; ) {
    const tag = bytes[at]!;
    if (tag === PUT || tag === MERGE || tag === DELETE_RANGE) {
      const a = u32(at + 1);
      const b = u32(at + 5);
      const k = at + 9;
      if (k + a + b > bytes.length) throw bad();
      if (tag !== DELETE_RANGE) {
        if (bytes[k] === 0xff && isReserved(bytes.subarray(k, k + a))) throw reserved('the key');
        keyBytes += a;
      } else {
        if (overlapsReserved(bytes.subarray(k, k + a), bytes.subarray(k + a, k + a + b))) return 'split';
        keyBytes += a + b;
      }
      at = k + a + b;
    } else if (tag === DELETE) {
      const a = u32(at + 1);
      const k = at + 5;
      if (k + a > bytes.length) throw bad();
      if (bytes[k] === 0xff && isReserved(bytes.subarray(k, k + a))) throw reserved('the key');
      keyBytes += a;
      at = k + a;
    } else {
      throw bad();
    }
    n++;
  }
  // Pass 2: copy the keys.
  const kinds = new Uint8Array(n);
  const bounds = new Uint32Array(2 * n + 1);
  const keys = new Uint8Array(keyBytes);
  let w = 0;
  let i = 0;
  for (let at = 0; at < bytes.length; i++) {
    const tag = bytes[at]!;
    kinds[i] = tag;
    bounds[2 * i] = w;
    if (tag === DELETE) {
      const a = u32(at + 1);
      keys.set(bytes.subarray(at + 5, at + 5 + a), w);
      w += a;
      bounds[2 * i + 1] = w;
      at += 5 + a;
    } else {
      const a = u32(at + 1);
      const b = u32(at + 5);
      keys.set(bytes.subarray(at + 9, at + 9 + a), w);
      w += a;
      bounds[2 * i + 1] = w;
      if (tag === DELETE_RANGE) {
        keys.set(bytes.subarray(at + 9 + a, at + 9 + a + b), w);
        w += b;
      }
      at += 9 + a + b;
    }
  }
  bounds[2 * n] = w;
  return { kinds, bounds, keys };
}

function overlapsReserved(start: Uint8Array, end: Uint8Array): boolean {
  return compareBytes(start, RESERVED_END) < 0 && compareBytes(end, RESERVED) > 0;
}

/** Makes update `op` in `to` (a batch, or a transaction). */
interface Updatable {
  put(key: Uint8Array, value: Uint8Array): unknown;
  merge(key: Uint8Array, operand: Uint8Array): unknown;
  delete(key: Uint8Array): unknown;
  deleteRange(start: Uint8Array, end: Uint8Array): unknown;
}

export function apply(to: Updatable, op: BatchOp): void {
  if (op.kind === 'put') to.put(op.key, op.value);
  else if (op.kind === 'merge') to.merge(op.key, op.value);
  else if (op.kind === 'delete') to.delete(op.key);
  else to.deleteRange(op.key, op.end);
}

/**
 * The smallest and largest key of an encoded batch of puts (`undefined`
 * when empty); refuses any other update, and reserved keys, as writes do.
 */
export function putRange(bytes: Uint8Array): [Uint8Array, Uint8Array] | undefined {
  const bad = malformed;
  const u32 = (at: number): number => u32At(bytes, at);
  let lo: Uint8Array | undefined;
  let hi: Uint8Array | undefined;
  for (let at = 0; at < bytes.length; ) {
    if (bytes[at] !== PUT) throw new SiltError('InvalidArgument', 'ingest() takes puts only: apply a batch with deletes or merges with db.write(batch)');
    const a = u32(at + 1);
    const b = u32(at + 5);
    const k = at + 9;
    if (k + a + b > bytes.length) throw bad();
    const key = bytes.subarray(k, k + a);
    if (key[0] === 0xff && isReserved(key)) throw reserved('the key');
    if (lo === undefined || compareBytes(key, lo) < 0) lo = key;
    if (hi === undefined || compareBytes(key, hi) > 0) hi = key;
    at = k + a + b;
  }
  return lo === undefined ? undefined : [lo.slice(), hi!.slice()];
}

/** `ops` again, with each range delete over reserved keys cut into the parts around them. */
export function splitAroundReserved(ops: BatchOp[]): WriteBatch {
  const b = new WriteBatch();
  for (const op of ops) {
    if (op.kind !== 'deleteRange' || !overlapsReserved(op.key, op.end)) apply(b, op);
    else {
      if (compareBytes(op.key, RESERVED) < 0) b.deleteRange(op.key, RESERVED);
      if (compareBytes(op.end, RESERVED_END) > 0) b.deleteRange(compareBytes(op.key, RESERVED_END) > 0 ? op.key : RESERVED_END, op.end);
    }
  }
  return b;
}
