// KeptChanges (src/tabs/change-history.ts): `after(since)` is what a
// filter of the records would give, for every `since` (its binary search
// against the plain definition), as records are kept and the oldest go.
import { describe, expect, test } from 'vitest';
import { KeptChanges } from '../src/tabs/change-history.js';
import type { ChangeRecord } from '../src/tabs/wire.js';
import { Rng } from './tabs-world.js';

const record = (first: number, last: number): ChangeRecord => ({
  first,
  last,
  kinds: new Uint8Array(0),
  bounds: new Uint32Array(1),
  keys: new Uint8Array(0),
  from: '',
});

describe('KeptChanges', () => {
  test('after(since) is every record whose last sequence number is past since, in order', () => {
    const rng = new Rng(7);
    const kept = new KeptChanges(0);
    let seq = 0;
    for (let i = 0; i < 12_000; i++) {
      // Writes of one or more numbers, and records of none (a write that changed nothing the app sees).
      const n = rng.int(4);
      kept.keep(record(seq + 1, seq + n));
      seq += n;
      if (i % 997 === 0 || i > 11_990) {
        for (const since of [-1, 0, kept.base, kept.base + 1, rng.int(seq + 2), seq - 1, seq, seq + 1]) {
          expect(kept.after(since)).toEqual(kept.records.filter((r) => r.last > since));
        }
      }
    }
    expect(kept.records.length).toBeLessThanOrEqual(10_000);
  });
});
