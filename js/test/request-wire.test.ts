// Requests as they travel (src/tabs/request-wire.ts): in a message of
// requests, a run of two or more plain gets at one snapshot goes packed;
// the leader reads back exactly the envelopes that were sent, in order.
import { describe, expect, it } from 'vitest';
import { Leader } from '../src/tabs/leader.js';
import type { Envelope, Response } from '../src/tabs/protocol.js';
import { readRequests } from '../src/tabs/leader-inbox.js';
import { PROTOCOL } from '../src/tabs/protocol.js';
import { type PackedGets, toWireRequests } from '../src/tabs/request-wire.js';

const fromWireRequests = (m: unknown) => readRequests(m, PROTOCOL).items;
import { bytes, fresh, text } from './helpers.js';

const get = (id: number, key: string | Uint8Array, snapshot = 0, floor = 1): Envelope => ({ id, request: { op: 'get', key, snapshot }, floor });

describe('requests on the wire', () => {
  it('packs runs of plain gets at one snapshot, keeps everything else as it is, and reads back what was sent, in order', () => {
    const sent: Envelope[] = [
      get(1, 'a'),
      get(2, bytes('b')),
      get(3, 'c', 5), // another snapshot: a run of its own (of one)
      { id: 4, request: { op: 'put', key: 'p', value: bytes('v') }, floor: 1 },
      get(5, 'd', 0, 2),
      get(6, 'e', 0, 3),
      get(7, 'f', 0, 3),
      { id: 8, request: { op: 'get', key: 'g', snapshot: 0 }, client: 'C', floor: 3 }, // not plain (names its connection)
      get(9, 'h'),
    ];
    const wire = toWireRequests(sent);
    expect(wire).toHaveLength(6);
    expect(wire[0]).toEqual({ gets: [1, 2], keys: ['a', bytes('b')], snapshot: 0, floor: 1 } satisfies PackedGets);
    expect((wire[3] as PackedGets).gets).toEqual([5, 6, 7]);
    expect((wire[3] as PackedGets).floor).toBe(2); // the lowest of the run's
    const back = fromWireRequests(structuredClone(wire)) as Envelope[];
    expect(back.map((e) => e.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(back.filter((e) => e.id !== 6 && e.id !== 7)).toEqual(sent.filter((e) => e.id !== 6 && e.id !== 7));
    expect(back[5]).toEqual(get(6, 'e', 0, 2)); // the run's floor: lower, never higher
  });

  it('leaves a message without a run as it is, and refuses each get of a packed element that does not hold together', () => {
    const one = [get(1, 'a'), { id: 2, request: { op: 'flush' }, floor: 1 } as Envelope];
    expect(toWireRequests(one)).toEqual(one);
    expect(fromWireRequests(one)).toEqual(one);
    const bad = [{ gets: [1, 2], keys: ['a'], snapshot: 0 } as PackedGets, get(3, 'c')];
    const read = fromWireRequests(bad);
    expect(read.map((e) => ('refused' in e ? -e.refused : e.id))).toEqual([-1, -2, 3]);
  });

  it('a leader serves packed gets as the gets they were, each with its own answer, in one message', async () => {
    const db = await fresh();
    db.put('a', bytes('1'));
    db.put('c', bytes('3'));
    const leader = new Leader(db, 'packed', 'L', undefined);
    const posts: (Response | Response[])[] = [];
    leader.addLocal('A', (r) => posts.push(r));
    leader.receive(
      'A',
      toWireRequests([
        get(1, 'a'),
        get(2, 'b'),
        get(3, 'c'),
        get(4, new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...bytes('siltdb/client/A')])),
      ]),
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(posts).toHaveLength(1);
    const answers = posts[0] as Response[];
    expect(answers.map((r) => r.id)).toEqual([1, 2, 3, 4]);
    expect(text((answers[0] as { value: Uint8Array }).value)).toBe('1');
    expect(answers[1]).toMatchObject({ ok: true, value: undefined });
    expect(text((answers[2] as { value: Uint8Array }).value)).toBe('3');
    expect(answers[3]).toMatchObject({ ok: false, error: { code: 'InvalidArgument' } }); // a reserved key fails alone
    await leader.close();
    db.close();
  });
});

describe('what else a follower line carries', () => {
  it("another leader's answers and control messages on a follower's channel are passed over: no answer, no count, the request of that id served as it comes", async () => {
    const db = await fresh();
    const leader = new Leader(db, 'others', 'L', undefined);
    const posts: (Response | Response[])[] = [];
    leader.addLocal('A', (r) => posts.push(r));
    // What an old leader still posts on the channel while this one listens there.
    leader.receive('A', { id: 5, from: 'L0', ok: false, error: { code: 'Closed', message: 'the database was closed' } });
    leader.receive('A', [5, bytes('v')]);
    leader.receive('A', { ids: [5, 6], bytes: bytes('ab'), ends: Uint32Array.of(1, 2) });
    leader.receive('A', { t: 'welcome', leader: 'L0', seq: 1, opened: 0, v: 1 });
    leader.receive('A', { t: 'change', record: {} });
    await new Promise((r) => setTimeout(r, 20));
    expect(posts).toEqual([]);
    expect(leader.counters.malformed).toBe(0);
    leader.receive('A', { id: 5, request: { op: 'put', key: 'k', value: bytes('v') } });
    await new Promise((r) => setTimeout(r, 20));
    expect(posts.flat().map((r) => [r.id, r.ok])).toEqual([[5, true]]);
    await leader.close();
    db.close();
  });
});
