// Calls issued together travel together (issue 34): the page's outbox
// (src/tabs/outbox.ts) sends the requests of one task as one message, and
// the leader (src/tabs/leader.ts) answers them in one message; each keeps
// its own answer, error and order, and one that cannot be sent fails
// alone. End to end: a Promise.all of gets through connect() in the
// simulated browser of tabs-harness.ts is one message each way.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Leader } from '../src/tabs/leader.js';
import { runsOfGets } from '../src/tabs/leader-gets.js';
import { Outbox } from '../src/tabs/outbox.js';
import type { Envelope, Response } from '../src/tabs/protocol.js';
import { readRequests } from '../src/tabs/leader-inbox.js';
import { PROTOCOL } from '../src/tabs/protocol.js';
import type { WireRequest } from '../src/tabs/request-wire.js';
import { bytes, fresh, text } from './helpers.js';
import { Origin } from './tabs-harness.js';

const envelope = (id: number, request: Envelope['request']): Envelope => ({ id, client: 'A', request });

describe('the outbox', () => {
  it('sends the requests of one task as one message, in order, once the task is done', async () => {
    const sent: (Envelope | WireRequest[])[] = [];
    const box = new Outbox(
      (m) => sent.push(m),
      () => {},
    );
    box.add(envelope(1, { op: 'latestSequence' }));
    box.add(envelope(2, { op: 'flush' }));
    box.add(envelope(3, { op: 'latestSequence' }));
    expect(sent).toEqual([]); // not before the task ends
    await Promise.resolve();
    expect(sent).toHaveLength(1);
    expect((sent[0] as Envelope[]).map((e) => e.id)).toEqual([1, 2, 3]);
    box.add(envelope(4, { op: 'flush' }));
    await Promise.resolve();
    expect(sent[1]).toEqual(envelope(4, { op: 'flush' })); // alone: as itself
  });

  it('a request that cannot be cloned fails alone; the others of its task are sent', async () => {
    const sent: (Envelope | WireRequest[])[] = [];
    const refused: number[] = [];
    const box = new Outbox(
      (m) => sent.push(structuredClone(m)),
      (e) => refused.push(e.id),
    );
    box.add(envelope(1, { op: 'latestSequence' }));
    box.add(envelope(2, { op: 'put', key: 'k', value: (() => {}) as unknown as Uint8Array }));
    box.add(envelope(3, { op: 'flush' }));
    await Promise.resolve();
    expect(refused).toEqual([2]);
    expect(sent.map((m) => (m as Envelope).id)).toEqual([1, 3]);
  });
});

describe('the outbox, when its channel is gone', () => {
  it('a post refused for any reason but the clone fails nobody: the requests stay pending, for the next link or the connection failing', async () => {
    const refused: number[] = [];
    let posts = 0;
    const box = new Outbox(
      () => {
        posts++;
        throw new DOMException('the channel is closed', 'InvalidStateError');
      },
      (e) => refused.push(e.id),
    );
    box.add(envelope(1, { op: 'latestSequence' }));
    box.add(envelope(2, { op: 'flush' }));
    await Promise.resolve();
    box.add(envelope(3, { op: 'flush' }));
    await Promise.resolve();
    expect(posts).toBe(2);
    expect(refused).toEqual([]);
  });
});

describe('the leader', () => {
  it('answers the requests of one message in one message, each with its own answer or error, in order', async () => {
    const db = await fresh();
    const leader = new Leader(db, 'outbox', 'A', undefined);
    const posts: (Response | Response[])[] = [];
    leader.addLocal('A', (r) => posts.push(r));
    leader.receive('A', [
      envelope(1, { op: 'put', key: 'a', value: bytes('1') }),
      envelope(2, { op: 'get', key: 'a', snapshot: 9 }), // no snapshot 9: fails alone
      envelope(3, { op: 'get', key: 'a', snapshot: 0 }),
      envelope(4, { op: 'has', key: 'b', snapshot: 0 }),
    ]);
    await vi.waitFor(() => expect(posts).toHaveLength(1));
    const answers = posts[0] as Response[];
    expect(answers.map((r) => [r.id, r.ok])).toEqual([
      [1, true],
      [2, false],
      [3, true],
      [4, true],
    ]);
    expect(text((answers[2] as { value: Uint8Array }).value)).toBe('1');
    expect((answers[3] as { value: boolean }).value).toBe(false);
    leader.receive('A', [envelope(5, { op: 'get', key: 'a', snapshot: 7 }), envelope(6, { op: 'latestSequence' })]);
    await vi.waitFor(() => expect(posts).toHaveLength(2));
    const [bad, good] = posts[1] as Response[];
    expect(bad).toMatchObject({ id: 5, ok: false, error: { code: 'Released' } }); // no snapshot 7: fails alone
    expect(good).toMatchObject({ id: 6, ok: true });
    await leader.close();
    db.close();
  });
});

describe('gets sent together', () => {
  it('are read with one batched MultiGet, each with its own answer: a value, none, or its own error', async () => {
    const db = await fresh();
    for (const k of ['a', 'b', 'c']) db.put(k, bytes(`v${k}`));
    db.put('big', new Uint8Array(4096).fill(7));
    const leader = new Leader(db, 'gets', 'A', undefined);
    const posts: (Response | Response[])[] = [];
    leader.addLocal('A', (r) => posts.push(r));
    const multiGet = vi.spyOn(db, 'multiGet');
    const reservedKey = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...bytes('siltdb/client/A')]);
    leader.receive('A', [
      envelope(1, { op: 'get', key: bytes('a'), snapshot: 0 }),
      envelope(2, { op: 'get', key: bytes('zz'), snapshot: 0 }),
      envelope(3, { op: 'get', key: reservedKey, snapshot: 0 }), // fails alone
      envelope(4, { op: 'get', key: bytes('big'), snapshot: 0 }),
      envelope(5, { op: 'latestSequence' }),
      envelope(6, { op: 'get', key: bytes('c'), snapshot: 0 }),
      envelope(7, { op: 'get', key: bytes('b'), snapshot: 9 }), // another snapshot (none such): its own run, Released
      envelope(8, { op: 'get', key: bytes('b'), snapshot: 9 }),
    ]);
    await vi.waitFor(() => expect(posts).toHaveLength(1));
    const answers = posts[0] as Response[];
    expect(answers.map((r) => [r.id, r.ok])).toEqual([
      [1, true],
      [2, true],
      [3, false],
      [4, true],
      [5, true],
      [6, true],
      [7, false],
      [8, false],
    ]);
    const value = (i: number) => (answers[i] as { value: Uint8Array | undefined }).value;
    expect(text(value(0)!)).toBe('va');
    expect(value(1)).toBeUndefined();
    expect(answers[2]).toMatchObject({ error: { code: 'InvalidArgument' } });
    expect(value(3)).toEqual(new Uint8Array(4096).fill(7));
    expect(text(value(5)!)).toBe('vc');
    expect(answers[6]).toMatchObject({ error: { code: 'Released' } });
    // One MultiGet, for the run of four (the reserved key not asked); the
    // get alone after latestSequence and the Released run read nothing batched.
    expect(multiGet).toHaveBeenCalledTimes(1);
    expect(multiGet.mock.calls[0]![0]).toHaveLength(3);
    multiGet.mockRestore();
    await leader.close();
    db.close();
  });

  it('runs: gets at one snapshot, two or more in a row', () => {
    const get = (id: number, snapshot = 0) => envelope(id, { op: 'get', key: bytes('k'), snapshot });
    const shape = (runs: (Envelope | Envelope[])[]) => runs.map((r) => (Array.isArray(r) ? r.map((e) => e.id) : r.id));
    expect(shape(runsOfGets([get(1), get(2), envelope(3, { op: 'flush' }), get(4), get(5, 1), get(6, 1), get(7)]))).toEqual([[1, 2], 3, 4, [5, 6], 7]);
    expect(shape(runsOfGets([get(1)]))).toEqual([1]);
  });
});

describe('through connect()', () => {
  let origin: Origin | undefined;
  afterEach(async () => {
    await origin?.dispose();
    origin = undefined;
  });

  /** Tab A's connection, and `run` that waits for a promise of it (the test world runs until it settles). */
  async function connected() {
    const o = await Origin.create(3, 'fifo');
    origin = o;
    const r = await o.world.until(o.connect(o.tab('A')));
    if (r === undefined || !r.ok) throw new Error('connect() failed');
    const run = async <T>(p: Promise<T>): Promise<T> => {
      const x = await o.world.until(p);
      if (x === undefined || !x.ok) throw x?.error ?? new Error('still pending');
      return x.value;
    };
    return { db: r.value, run };
  }

  it('32 gets in one Promise.all reach the leader as one message and come back as one, each with its value', async () => {
    const { db, run } = await connected();
    const batch = db.batch();
    for (let i = 0; i < 32; i++) batch.put(`k${i}`, bytes(`v${i}`));
    await run(db.write(batch));
    const receive = vi.spyOn(Leader.prototype, 'receive');
    const values = await run(Promise.all(Array.from({ length: 32 }, (_, i) => db.get(`k${i % 33}`))));
    expect(values.map((v) => v && text(v))).toEqual(Array.from({ length: 32 }, (_, i) => `v${i}`));
    expect(receive).toHaveBeenCalledTimes(1);
    expect(readRequests(receive.mock.calls[0]![1], PROTOCOL).items).toHaveLength(32);
    receive.mockRestore();
  });

  it('gets issued together keep their own answers: small, large, missing and refused, each value in a buffer of its own', async () => {
    const { db, run } = await connected();
    // Sizes around TRANSFER_MIN (1,024: smaller values travel packed, larger transferred).
    const sizes = [0, 1, 100, 1023, 1024, 5000, 7, 3];
    const value = (i: number) => Uint8Array.from({ length: sizes[i]! }, (_, j) => (i * 31 + j) & 0xff);
    const batch = db.batch();
    for (let i = 0; i < sizes.length; i++) batch.put(`k${i}`, value(i));
    await run(db.write(batch));
    const reserved = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...bytes('siltdb/x')]);
    // Small values alone between others (packed runs of two or more), and in runs.
    const keys: (string | Uint8Array)[] = ['k0', 'missing', 'k1', 'gone', 'k2', 'k3', reserved, 'k4', 'k6', 'k5', 'k7'];
    const got = await run(Promise.allSettled(keys.map((k) => db.get(k as string))));
    let found = 0;
    for (const [n, k] of keys.entries()) {
      const g = got[n]!;
      if (k === reserved) {
        expect(g.status).toBe('rejected');
        continue;
      }
      expect(g.status).toBe('fulfilled');
      const v = (g as PromiseFulfilledResult<Uint8Array | undefined>).value;
      if (k === 'missing' || k === 'gone') {
        expect(v).toBeUndefined();
        continue;
      }
      expect(v).toEqual(value(Number((k as string).slice(1))));
      expect(v!.byteLength).toBe(v!.buffer.byteLength); // its own buffer: transferring it empties no other value
      found++;
    }
    expect(found).toBe(sizes.length);
  });
});
