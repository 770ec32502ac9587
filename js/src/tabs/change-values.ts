/**
 * Values in change records (issue 39, item 1): what `watch({ values: true })`
 * reports with each update of a key. Made by the writer (a `connect()`
 * leader's LeaderWriter, or a worker's LocalFeed) right after the write,
 * before anything else can write: each updated key's value once the write
 * committed, read from the database (a put's own bytes would do for a put,
 * but a merge's result is only known to the engine, and one rule is simpler
 * to state: for a key updated twice in one batch, both updates carry the
 * value after the batch). Only while a watch asks for values: a database
 * nobody watches that way pays nothing.
 */

import { binaryKey } from './page-cache.js';
import type { ChangeRecord, PackedValues } from './wire.js';

/** Update kinds of one key (delete, put, merge): the kinds that carry a value. */
export function isKeyKind(kind: number): boolean {
  return kind <= 2;
}

/**
 * The values of `record`'s key updates as `read` finds them now (a copy the
 * record keeps, or undefined: none), packed as `PackedValues`; undefined
 * when the record updates no key one by one (a range, an import) or a read
 * fails (its updates are then reported as a gap).
 */
export function valuesOf(record: Pick<ChangeRecord, 'kinds' | 'bounds' | 'keys'>, read: (key: Uint8Array) => Uint8Array | undefined): PackedValues | undefined {
  const { kinds, bounds, keys } = record;
  const n = kinds.length;
  const lens = new Int32Array(n).fill(-1);
  const found: (Uint8Array | undefined)[] = new Array(n);
  let total = 0;
  let any = false;
  // A key read once per record, whatever the updates of it.
  const seen = new Map<string, Uint8Array | undefined>();
  try {
    for (let i = 0; i < n; i++) {
      if (!isKeyKind(kinds[i]!)) continue;
      any = true;
      const key = keys.subarray(bounds[2 * i]!, bounds[2 * i + 1]!);
      const id = binaryKey(key);
      let v: Uint8Array | undefined;
      if (seen.has(id)) v = seen.get(id);
      else {
        v = read(key);
        seen.set(id, v);
      }
      found[i] = v;
      if (v !== undefined) {
        lens[i] = v.length;
        total += v.length;
      }
    }
  } catch {
    return undefined;
  }
  if (!any) return undefined;
  const bytes = new Uint8Array(total);
  let at = 0;
  for (let i = 0; i < n; i++) {
    const v = found[i];
    if (v === undefined) continue;
    bytes.set(v, at);
    at += v.length;
  }
  return { bytes, lens };
}

/** Where each update's value starts in `values.bytes`. */
export function valueStarts(values: PackedValues): Uint32Array {
  const { lens } = values;
  const starts = new Uint32Array(lens.length);
  let at = 0;
  for (let i = 0; i < lens.length; i++) {
    starts[i] = at;
    if (lens[i]! > 0) at += lens[i]!;
  }
  return starts;
}

/** `record` without its values (for a connection that did not ask for them). */
export function withoutValues(record: ChangeRecord): ChangeRecord {
  if (record.values === undefined) return record;
  const { values: _, ...rest } = record;
  return rest;
}
