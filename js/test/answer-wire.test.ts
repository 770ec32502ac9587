// Answers as they travel (src/tabs/answer-wire.ts): a success as
// [id, value], naming its leader only on a shared channel; a failure as its
// object; the answers of one message as an array; and every one read back
// as the Response it was, with the leader of the link it came on.
import { describe, expect, it } from 'vitest';
import { eachAnswer, isAnswers, toWireAnswers, TRANSFER_MIN, worthTransferring } from '../src/tabs/answer-wire.js';
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

  it('only buffers of TRANSFER_MIN bytes or more are transferred', () => {
    const small = new ArrayBuffer(TRANSFER_MIN - 1);
    const big = new ArrayBuffer(TRANSFER_MIN);
    expect(worthTransferring([small, big])).toEqual([big]);
    expect(worthTransferring([])).toEqual([]);
  });
});
