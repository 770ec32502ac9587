// The change history a leader hands to the next (src/tabs/handover.ts):
// read back as written, the newest records within its bound, used only
// where it ends at the reading leader's first sequence number, and never
// an exception for bytes it did not write (a damaged value is ignored).
import { describe, expect, test } from 'vitest';
import { decodeHandover, encodeHandover, HANDOVER_BYTES } from '../src/tabs/handover.js';
import type { ChangeRecord } from '../src/tabs/wire.js';
import { Leader } from '../src/tabs/leader.js';
import type { ChangeHistory, Response } from '../src/tabs/protocol.js';
import { bytes, fresh } from './helpers.js';

/** A put of `key` at `first` (its write record at `first + 1`). */
function put(first: number, key: string, from = 'L1'): ChangeRecord {
  const k = bytes(key);
  return { first, last: first + 1, kinds: Uint8Array.of(1), bounds: Uint32Array.of(0, k.length, k.length), keys: k, from };
}

function chain(n: number, start = 1, key = (i: number) => `k${i}`): ChangeRecord[] {
  return Array.from({ length: n }, (_, i) => put(start + 2 * i, key(i)));
}

describe('a handed-over change history', () => {
  test('reads back as written, its last record raised to the hand-over itself', () => {
    const records = chain(3, 11);
    const value = encodeHandover(records, 17)!;
    const h = decodeHandover(value, 17)!;
    expect(h.base).toBe(10);
    expect(h.records.map((r) => [r.first, r.last, r.from])).toEqual([
      [11, 12, 'L1'],
      [13, 14, 'L1'],
      [15, 17, 'L1'],
    ]);
    expect(h.records.map((r) => new TextDecoder().decode(r.keys))).toEqual(['k0', 'k1', 'k2']);
    expect(h.records[2]!.bounds).toEqual(records[2]!.bounds);
  });

  test('is used only by the leader that begins where it ends', () => {
    const value = encodeHandover(chain(2, 1), 5)!;
    expect(decodeHandover(value, 5)).toBeDefined();
    // A later leader (another wrote after it) or a database restored to an earlier point: not this moment's.
    expect(decodeHandover(value, 6)).toBeUndefined();
    expect(decodeHandover(value, 4)).toBeUndefined();
    expect(encodeHandover([], 1)).toBeUndefined();
  });

  test('keeps the newest records within its bound', () => {
    const records = chain(4_000, 1, (i) => `key-${String(i).padStart(12, '0')}`);
    const latest = records.at(-1)!.last + 1;
    const value = encodeHandover(records, latest)!;
    expect(value.length).toBeLessThanOrEqual(HANDOVER_BYTES);
    const h = decodeHandover(value, latest)!;
    expect(h.records.length).toBeGreaterThan(100);
    expect(h.records.length).toBeLessThan(records.length);
    expect(h.records.at(-1)!.first).toBe(records.at(-1)!.first);
    expect(h.base).toBe(h.records[0]!.first - 1);
  });

  test('bytes it did not write are ignored, never thrown: every truncation, every byte changed', () => {
    const value = encodeHandover(chain(3, 1), 7)!;
    let accepted = 0;
    for (let n = 0; n < value.length; n++) expect(decodeHandover(value.subarray(0, n), 7)).toBeUndefined();
    for (let i = 0; i < value.length; i++) {
      for (const b of [0, 1, 0x7f, 0x80, 0xff, value[i]! ^ 1]) {
        const bad = value.slice();
        bad[i] = b;
        const h = decodeHandover(bad, 7);
        if (h === undefined) continue;
        accepted++;
        // What is accepted is a contiguous history ending at 7 whose bounds lie in its keys.
        let last = h.base;
        for (const r of h.records) {
          expect(r.first).toBe(last + 1);
          expect(r.bounds.length).toBe(2 * r.kinds.length + 1);
          for (const x of r.bounds) expect(x).toBeLessThanOrEqual(r.keys.length);
          last = r.last;
        }
        expect(last).toBe(7);
      }
    }
    // Changed key bytes or ids still decode: the check is of shape, not content.
    expect(accepted).toBeGreaterThan(0);
  });
});

describe('leaders hand their history over', () => {
  async function history(leader: Leader, since: number): Promise<ChangeHistory> {
    const got: Response[] = [];
    leader.addLocal('W', (r) => got.push(...[r].flat()));
    leader.receive('W', { id: 1, client: 'W', request: { op: 'changes', since } });
    while (got.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    const r = got[0]!;
    if (!r.ok) throw new Error(r.error.message);
    return r.value as ChangeHistory;
  }

  test('a leader that closes cleanly hands its records to the next; after one that halts, the next rebuilds them from the memtables, as far as they hold them', async () => {
    const db = await fresh();
    const first = new Leader(db, 'handover', 'L1', undefined);
    const got: Response[] = [];
    first.addLocal('L1', (r) => got.push(...[r].flat()));
    first.receive('L1', { id: 1, client: 'L1', request: { op: 'put', key: 'a', value: bytes('1') } });
    first.receive('L1', { id: 2, client: 'L1', request: { op: 'put', key: 'b', value: bytes('2') } });
    while (got.length < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(got.every((r) => r.ok)).toBe(true);
    await first.close();

    const second = new Leader(db, 'handover', 'L2', undefined);
    const h = await history(second, 0);
    expect(h.base).toBe(0);
    expect(h.latest).toBe(db.latestSequence());
    // Contiguous from 1 to the latest: the two puts, the record's removal, the hand-over.
    let last = 0;
    for (const r of h.records) {
      expect(r.first).toBe(last + 1);
      last = r.last;
    }
    expect(last).toBe(h.latest);
    expect(h.records.filter((r) => r.kinds.length > 0).map((r) => new TextDecoder().decode(r.keys))).toEqual(['a', 'b']);
    // Halted (a worker terminated) after a write: nothing is handed over,
    // and what the first handed over no longer ends where the next begins;
    // the next rebuilds the records from what the memtables hold (issue 40,
    // item 3): every write since the database began, here, contiguous.
    const done: Response[] = [];
    second.addLocal('L2', (r) => done.push(...[r].flat()));
    second.receive('L2', { id: 1, client: 'L2', request: { op: 'put', key: 'c', value: bytes('3') } });
    while (done.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    await second.halt();
    const third = new Leader(db, 'handover', 'L3', undefined);
    const h3 = await history(third, 0);
    expect(h3.base).toBe(0);
    last = 0;
    for (const r of h3.records) {
      expect(r.first).toBe(last + 1);
      last = r.last;
    }
    expect(last).toBe(h3.latest);
    expect(h3.records.filter((r) => r.kinds.length > 0).map((r) => [r.from, new TextDecoder().decode(r.keys)])).toEqual([
      ['L3', 'a'],
      ['L3', 'b'],
      ['L3', 'c'],
    ]);
    // What a flush moved to a table is not in memory: halted after a put
    // and a flush, the next has nothing to rebuild, and its history starts
    // where it began.
    third.addLocal('L3', () => {});
    third.receive('L3', { id: 1, client: 'L3', request: { op: 'put', key: 'd', value: bytes('4') } });
    third.receive('L3', { id: 2, client: 'L3', request: { op: 'flush' } });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await third.halt();
    const fourth = new Leader(db, 'handover', 'L4', undefined);
    const h4 = await history(fourth, 0);
    expect(h4.records).toEqual([]);
    expect(h4.base).toBe(db.latestSequence());
    await fourth.close();
  });
});
