// Answers as they travel (src/tabs/answer-wire.ts): a success as
// [id, value], naming its leader only on a shared channel; a failure as its
// object; the answers of one message as an array; and every one read back
// as the Response it was, with the leader of the link it came on.
import { describe, expect, it } from 'vitest';
import { eachAnswer, isAnswers, type PackedAnswers, toWireAnswers, toWireMessage, TRANSFER_MIN, worthTransferring } from '../src/tabs/answer-wire.js';
import type { Response } from '../src/tabs/protocol.js';

const ok = (id: number, value: unknown): Response => ({ id, from: 'L', ok: true, value });
const failed: Response = { id: 3, from: 'L', ok: false, error: { code: 'Released', message: 'no snapshot 9' } };

function readBack(m: unknown, leader: string | undefined): Response[] {
  const out: Response[] = [];
  if (!isAnswers(m)) throw new Error('not answers');
  eachAnswer(m, leader, (r) => out.push(r));
  return out;
}

describe('answers on the wire', () => {
  it('a success is [id, value] on a link of one leader, with the leader on a shared channel; read back as it was', () => {
    const v = new Uint8Array([1, 2]);
    expect(toWireAnswers(ok(1, v), false)).toEqual([1, v]);
    expect(toWireAnswers(ok(1, v), true)).toEqual([1, v, 'L']);
    expect(readBack(toWireAnswers(ok(1, v), false), 'L')).toEqual([ok(1, v)]);
    expect(readBack(toWireAnswers(ok(1, v), true), undefined)).toEqual([ok(1, v)]);
    // A value that is itself an array, or undefined, stays the value.
    expect(readBack(toWireAnswers(ok(2, [7, 8]), false), 'L')).toEqual([ok(2, [7, 8])]);
    expect(readBack(toWireAnswers(ok(2, undefined), false), 'L')).toEqual([ok(2, undefined)]);
  });

  it('a failure travels as its object; the answers of one message as an array, in order', () => {
    expect(toWireAnswers(failed, false)).toBe(failed);
    const batch = toWireAnswers([ok(1, 'a'), failed, ok(4, [1])], true);
    expect(readBack(batch, undefined)).toEqual([ok(1, 'a'), failed, ok(4, [1])]);
    expect(readBack(toWireAnswers([ok(1, 'a'), ok(2, 'b')], false), 'L').map((r) => r.id)).toEqual([1, 2]);
  });

  it('control messages are not answers', () => {
    expect(isAnswers({ t: 'welcome', leader: 'L', seq: 1, opened: 0 })).toBe(false);
    expect(isAnswers({ t: 'locked' })).toBe(false);
  });

  it('runs of small byte-array values travel packed, in order, each read back as a copy of its own', () => {
    const v = (n: number, len = 3) => new Uint8Array(len).fill(n);
    const answers = [ok(1, v(1)), ok(2, v(2, 0)), ok(3, undefined), failed, ok(5, v(5)), ok(6, v(6)), ok(7, v(7)), ok(8, 'x'), ok(9, v(9))];
    for (const from of [false, true]) {
      const [m, transfer] = toWireMessage(answers, from, []);
      const wire = m as unknown[];
      // [1, 2] packed; 3 (no value) alone; the failure; [5, 6, 7] packed; 8; 9 alone (a run of one).
      expect(wire).toHaveLength(6);
      expect((wire[0] as PackedAnswers).ids).toEqual([1, 2]);
      expect((wire[3] as PackedAnswers).ids).toEqual([5, 6, 7]);
      expect((wire[3] as PackedAnswers).from).toBe(from ? 'L' : undefined);
      expect(transfer).toEqual([]); // a few bytes: cloned
      const back = readBack(structuredClone(m), from ? undefined : 'L');
      expect(back).toEqual(answers);
      const values = back.filter((r) => r.ok && r.value instanceof Uint8Array).map((r) => (r as { value: Uint8Array }).value);
      expect(new Set(values.map((x) => x.buffer)).size).toBe(values.length);
    }
  });

  it('a packed run of TRANSFER_MIN bytes or more is transferred; values of TRANSFER_MIN or more are not packed', () => {
    const values = Array.from({ length: 32 }, (_, i) => ok(i + 1, new Uint8Array(100).fill(i)));
    const [m, transfer] = toWireMessage(
      values,
      false,
      values.map((r) => (r as { value: Uint8Array }).value.buffer),
    );
    expect(transfer).toEqual([((m as unknown[])[0] as PackedAnswers).bytes.buffer]);
    expect(readBack(m, 'L')).toEqual(values);
    const big = [ok(1, new Uint8Array(TRANSFER_MIN)), ok(2, new Uint8Array(TRANSFER_MIN))];
    const [m2, t2] = toWireMessage(
      big,
      false,
      big.map((r) => (r as { value: Uint8Array }).value.buffer),
    );
    expect(m2).toEqual(toWireAnswers(big, false));
    expect(t2).toHaveLength(2);
    // One answer alone is never packed.
    expect(toWireMessage(ok(1, new Uint8Array(3)), false, [])[0]).toEqual([1, new Uint8Array(3)]);
  });

  it('only buffers of TRANSFER_MIN bytes or more are transferred', () => {
    const small = new ArrayBuffer(TRANSFER_MIN - 1);
    const big = new ArrayBuffer(TRANSFER_MIN);
    expect(worthTransferring([small, big])).toEqual([big]);
    expect(worthTransferring([])).toEqual([]);
  });
});
