// The leader of connect() (src/tabs/leader.ts) in Node, on an in-memory
// database: write records make a write sent again after a failover count
// once, even when another connection wrote the same key in between;
// reserved keys stay hidden and whole; change history is contiguous.
import { describe, expect, it } from 'vitest';
import { WriteBatch } from '../src/core/batch.js';
import { Leader } from '../src/tabs/leader.js';
import type { FirstBatch } from '../src/tabs/leader-steps.js';
import { fromWire, names, PROTOCOL, toWire, type ChangeHistory, type Envelope, type Request, type Response } from '../src/tabs/protocol.js';
import type { Database } from '../src/local/database.js';
import { SiltError } from '../src/core/errors.js';
import { emptyRecord, parseRecord, recordKey, recordValue } from '../src/tabs/write-records.js';
import { FakeLocks } from './fakes.js';
import { bytes, fresh, text } from './helpers.js';

/** A leader with connections `names`, each collecting its responses. */
function serve(leader: Leader, names: string[]) {
  const responses = new Map<string, Response[]>();
  for (const n of names) {
    responses.set(n, []);
    leader.addLocal(n, (r) => responses.get(n)!.push(...[r].flat()));
  }
  /** Sends request `id` of `client` and waits for its answer. */
  const ask = async (client: string, id: number, request: Request): Promise<Response> => {
    const envelope: Envelope = { id, client, request };
    leader.receive(client, envelope);
    for (;;) {
      const r = responses.get(client)!.find((x) => x.id === id);
      if (r !== undefined) {
        responses.set(
          client,
          responses.get(client)!.filter((x) => x !== r),
        );
        return r;
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  };
  return ask;
}

const value = (r: Response) => {
  if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
  return r.value;
};

describe('the leader', () => {
  it('applies a write sent again (same connection, same id) once, even after another connection wrote the key', async () => {
    const db = await fresh();
    // Leaders L1 and L2 serve connections A and B (a leader's own page is a
    // connection too, whose record goes when it closes cleanly).
    const leader = new Leader(db, 'dedupe', 'L1', undefined);
    const ask = serve(leader, ['A', 'B']);
    value(await ask('A', 1, { op: 'put', key: 'k', value: bytes('a1') }));
    value(await ask('B', 1, { op: 'put', key: 'k', value: bytes('b1') }));
    // A's answer was lost with a leader; A sends the write again.
    value(await ask('A', 1, { op: 'put', key: 'k', value: bytes('a1') }));
    expect(text(db.get('k'))).toBe('b1');
    expect(leader.counters.duplicateWrites).toBe(1);

    // A new leader on the same database (a failover) knows it from the record.
    await leader.close();
    const next = new Leader(db, 'dedupe', 'L2', undefined);
    const ask2 = serve(next, ['A', 'B']);
    value(await ask2('A', 1, { op: 'put', key: 'k', value: bytes('a1') }));
    value(await ask2('A', 2, { op: 'deleteRange', start: 'a', end: 'z' }));
    value(await ask2('A', 2, { op: 'deleteRange', start: 'a', end: 'z' }));
    value(await ask2('B', 2, { op: 'put', key: 'k', value: bytes('b2') }));
    value(await ask2('A', 2, { op: 'deleteRange', start: 'a', end: 'z' }));
    expect(text(db.get('k'))).toBe('b2');
    expect(next.counters.duplicateWrites).toBe(3);
    // A write that failed records nothing: the next one with a new id applies.
    const bad = await ask2('A', 3, { op: 'put', key: new Uint8Array(70_000), value: bytes('x') });
    expect(bad.ok).toBe(false);
    value(await ask2('A', 4, { op: 'put', key: 'k2', value: bytes('a4') }));
    expect(text(db.get('k2'))).toBe('a4');
    await next.close();
    // A leader whose own page closes cleanly drops that connection's record.
    const last = new Leader(db, 'dedupe', 'A', undefined);
    const ask3 = serve(last, ['A']);
    value(await ask3('A', 4, { op: 'put', key: 'k2', value: bytes('again') }));
    expect(text(db.get('k2'))).toBe('a4');
    await last.close();
    const reserved = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...bytes('siltdb/client/')]);
    expect(db.get(Uint8Array.from([...reserved, ...bytes('A')]))).toBeUndefined();
    expect(db.get(Uint8Array.from([...reserved, ...bytes('B')]))).toBeDefined();
  });

  it('serves a plain write in the task its message arrives in; one refused for want of pooled files runs again from the queue, applied once', async () => {
    const db = await fresh();
    const leader = new Leader(db, 'now', 'L1', undefined);
    const got: Response[] = [];
    leader.addLocal('A', (r) => got.push(...[r].flat()));
    const put = (id: number, key: string | Uint8Array, v: string): Envelope => ({ id, client: 'A', request: { op: 'put', key, value: bytes(v) } });
    leader.receive('A', put(1, 'k', 'v1'));
    // Answered before this task ends: no promise on the way.
    expect(got.map((r) => [r.id, r.ok])).toEqual([[1, true]]);
    expect(text(db.get('k'))).toBe('v1');

    // Refused once for want of pooled files (nothing written): the queue runs it again.
    const write = db.write.bind(db);
    let calls = 0;
    (db as { write: typeof db.write }).write = (b, o) => {
      if (calls++ === 0) throw new SiltError('PoolExhausted', 'no free pooled file');
      return write(b, o);
    };
    leader.receive('A', put(2, 'k', 'v2'));
    expect(got).toHaveLength(1);
    while (got.length < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(got.map((r) => [r.id, r.ok])).toEqual([
      [1, true],
      [2, true],
    ]);
    expect(calls).toBe(2);
    expect(text(db.get('k'))).toBe('v2');

    // Failing otherwise, it fails now, and alone; sent again, it fails the same way (recorded), not applied.
    leader.receive('A', put(3, new Uint8Array(70_000), 'x'));
    expect(got.at(-1)).toMatchObject({ id: 3, ok: false, error: { code: 'InvalidArgument' } });
    leader.receive('A', put(4, 'k', 'v4'));
    expect(got.at(-1)).toMatchObject({ id: 4, ok: true });
    leader.receive('A', put(3, new Uint8Array(70_000), 'x'));
    while (got.length < 5) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(got.at(-1)).toMatchObject({ id: 3, ok: false, error: { code: 'InvalidArgument' } });
    // A write sent again after it was applied is answered from its record, never applied twice.
    leader.receive('A', put(2, 'k', 'v2'));
    while (got.length < 6) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(got.at(-1)).toMatchObject({ id: 2, ok: true });
    expect(text(db.get('k'))).toBe('v4');
    expect(leader.counters.duplicateWrites).toBe(1);
    await leader.close();
  });

  it('records a write that failed because its record could not be read, once it can be: sent again it fails again, not acknowledged unapplied (review 25)', async () => {
    const db = await fresh();
    const leader = new Leader(db, 'unread', 'L1', undefined);
    const ask = serve(leader, ['A']);
    // The first read of A's record fails (an OPFS read error that passes).
    const get = db.get.bind(db);
    let failing = true;
    (db as { get: typeof db.get }).get = ((k: Uint8Array, o?: object) => {
      if (failing && k instanceof Uint8Array && k[0] === 0xff) {
        failing = false;
        throw new SiltError('IoError', 'the record could not be read');
      }
      return get(k, o as never);
    }) as typeof db.get;
    const first = await ask('A', 1, { op: 'put', key: 'k', value: bytes('one') });
    expect(first).toMatchObject({ ok: false, error: { code: 'IoError' } });
    expect(failing).toBe(false);
    value(await ask('A', 2, { op: 'put', key: 'k2', value: bytes('two') }));
    expect(db.get('k')).toBeUndefined();
    // Both answers went with a link; A sends write 1 again: it fails again.
    const again = await ask('A', 1, { op: 'put', key: 'k', value: bytes('one') });
    expect(again).toMatchObject({ ok: false, error: { code: 'IoError' } });
    expect(db.get('k')).toBeUndefined();
    // A leader after it knows from the record written with write 2.
    await leader.close();
    const next = new Leader(db, 'unread', 'L2', undefined);
    const ask2 = serve(next, ['A']);
    const later = await ask2('A', 1, { op: 'put', key: 'k', value: bytes('one') });
    expect(later).toMatchObject({ ok: false, error: { code: 'IoError' } });
    expect(db.get('k')).toBeUndefined();
    await next.close();
  });

  it('keeps its write records out of reads and scans, and out of range deletes', async () => {
    const db = await fresh();
    const leader = new Leader(db, 'reserved', 'A', undefined);
    const ask = serve(leader, ['A']);
    value(await ask('A', 1, { op: 'put', key: new Uint8Array([0xff, 0xff]), value: bytes('high') }));
    value(await ask('A', 2, { op: 'put', key: 'low', value: bytes('low') }));
    const reserved = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...bytes('siltdb/client/A')]);
    // The record is there (read past connect(), straight from the database)...
    expect(db.get(reserved)).toBeDefined();
    // ...but connect() neither reads nor writes it, and scans skip it.
    for (const request of [
      { op: 'get', key: reserved, snapshot: 0 },
      { op: 'put', key: reserved, value: bytes('x') },
      { op: 'multiGet', keys: ['low', reserved], snapshot: 0 },
    ] as Request[]) {
      const r = await ask('A', 3, request);
      expect(r.ok ? 'ok' : r.error.code).toBe('InvalidArgument');
    }
    const it = value(await ask('A', 4, { op: 'iterator', options: { batchSize: 1 }, snapshot: 0 })) as number;
    const seen: string[] = [];
    for (;;) {
      const b = value(await ask('A', 5 + seen.length, { op: 'next', iterator: it })) as { bytes: Uint8Array; offsets: Uint32Array } | undefined;
      if (b === undefined) break;
      for (let i = 0; 2 * i + 1 < b.offsets.length; i++) seen.push(Array.from(b.bytes.subarray(b.offsets[2 * i]!, b.offsets[2 * i + 1]!)).join(','));
    }
    expect(seen).toEqual(['255,255', Array.from(bytes('low')).join(',')].sort());
    // A range delete of everything leaves the records: a retry is still recognised.
    value(await ask('A', 100, { op: 'deleteRange', start: new Uint8Array([0]), end: new Uint8Array(12).fill(0xff) }));
    expect(db.get('low')).toBeUndefined();
    expect(db.get(new Uint8Array([0xff, 0xff]))).toBeUndefined();
    expect(db.get(reserved)).toBeDefined();
    value(await ask('A', 100, { op: 'deleteRange', start: new Uint8Array([0]), end: new Uint8Array(12).fill(0xff) }));
    expect(leader.counters.duplicateWrites).toBe(1);
    await leader.close();
  });

  it('counts, measures and clears the keys of the app, never its write records, and a clear sent again applies once', async () => {
    const db = await fresh();
    const leader = new Leader(db, 'ranges', 'A', undefined);
    const ask = serve(leader, ['A', 'B']);
    value(await ask('A', 1, { op: 'put', key: 'a', value: bytes('1') }));
    value(await ask('B', 1, { op: 'put', key: new Uint8Array([0xff, 0xff]), value: bytes('high') }));
    value(await ask('A', 2, { op: 'put', key: 'b', value: bytes('2') }));
    expect(db.count()).toBe(5); // three keys and two records
    expect(value(await ask('A', 3, { op: 'count', snapshot: 0 }))).toBe(3);
    expect(value(await ask('A', 4, { op: 'count', lower: bytes('b'), snapshot: 0 }))).toBe(2);
    expect(value(await ask('A', 5, { op: 'count', upper: bytes('b'), snapshot: 0 }))).toBe(1);
    db.flush();
    expect(value(await ask('A', 6, { op: 'approximateSize' }))).toBeGreaterThan(0);
    // Unbounded above: through the last key, records left alone.
    value(await ask('A', 7, { op: 'clear', lower: new Uint8Array(0) }));
    expect(value(await ask('A', 8, { op: 'count', snapshot: 0 }))).toBe(0);
    expect(db.count()).toBe(2);
    value(await ask('A', 9, { op: 'put', key: 'c', value: bytes('3') }));
    // The clear sent again after a failover is recognised: 'c' stays.
    value(await ask('A', 7, { op: 'clear', lower: new Uint8Array(0) }));
    expect(text(db.get('c'))).toBe('3');
    expect(leader.counters.duplicateWrites).toBe(1);
    // Bounded, and empty.
    value(await ask('A', 10, { op: 'clear', lower: bytes('c'), upper: bytes('d') }));
    value(await ask('A', 11, { op: 'clear', lower: bytes('x') }));
    expect(db.get('c')).toBeUndefined();
    await leader.close();
  });

  it('exports entries without its write records (tables with them), imports into an empty database, and lets one connection import at a time', async () => {
    const db = await fresh();
    const leader = new Leader(db, 'backup', 'A', undefined);
    const ask = serve(leader, ['A', 'B']);
    value(await ask('A', 1, { op: 'put', key: 'a', value: bytes('1') }));
    value(await ask('B', 1, { op: 'put', key: 'b', value: bytes('2') }));
    expect(db.count()).toBe(4); // two keys, two records
    let n = 2;
    let pieces: Uint8Array[] = [];
    for (const form of ['tables', 'entries'] as const) {
      const id = value(await ask('A', n++, { op: 'exportStart', form })) as number;
      pieces = [];
      for (;;) {
        const p = value(await ask('A', n++, { op: 'exportNext', export: id })) as Uint8Array | undefined;
        if (p === undefined) break;
        pieces.push(p);
      }
      const copy = await fresh();
      await copy.import(pieces);
      // The tables form copies the files, records and all (records of
      // connections that never send to the copy).
      expect([...copy.keys()].map((k) => text(k)).filter((k) => !k?.includes('siltdb/client/'))).toEqual(['a', 'b']);
      expect(copy.count(), form).toBe(form === 'entries' ? 2 : 4);
      const after = await ask('A', n++, { op: 'exportNext', export: id });
      expect(after.ok ? 'ok' : after.error.code).toBe('Released'); // let go of at its end
    }

    // Into an empty database, one connection at a time.
    const empty = await fresh();
    const l2 = new Leader(empty, 'import', 'A', undefined);
    const ask2 = serve(l2, ['A', 'B']);
    value(await ask2('A', 1, { op: 'importStart' }));
    const busy = await ask2('B', 1, { op: 'importStart' });
    expect(busy.ok ? 'ok' : busy.error.code).toBe('Busy');
    for (const [i, p] of pieces.entries()) value(await ask2('A', 2 + i, { op: 'importPush', bytes: p }));
    const report = value(await ask2('A', 10, { op: 'importFinish' })) as { entries: number };
    expect(report.entries).toBe(2);
    expect(text(empty.get('b'))).toBe('2');
    // Not empty any more: refused.
    const again = await ask2('B', 2, { op: 'importStart' });
    expect(again.ok ? 'ok' : again.error.code).toBe('InvalidArgument');
    await leader.close();
    await l2.close();
  });

  it('keeps a contiguous history of change records, each with its updates and sequence numbers', async () => {
    const db = await fresh();
    const leader = new Leader(db, 'history', 'A', undefined);
    const ask = serve(leader, ['A']);
    const start = db.latestSequence();
    value(await ask('A', 1, { op: 'put', key: 'a', value: bytes('1') }));
    value(await ask('A', 2, { op: 'delete', key: 'a' }));
    value(await ask('A', 3, { op: 'deleteRange', start: 'a', end: 'c' }));
    const h = value(await ask('A', 4, { op: 'changes', since: start })) as ChangeHistory;
    expect(h.base).toBe(start);
    expect(h.latest).toBe(db.latestSequence());
    const kind = { 0: 'delete', 1: 'put', 3: 'deleteRange' } as Record<number, string>;
    const described = h.records.map((r) =>
      Array.from(
        r.kinds,
        (k, i) =>
          `${kind[k]} ${text(r.keys.subarray(r.bounds[2 * i]!, r.bounds[2 * i + 1]!))}..${text(r.keys.subarray(r.bounds[2 * i + 1]!, r.bounds[2 * i + 2]!))}`,
      ),
    );
    expect(described).toEqual([['put a..'], ['delete a..'], ['deleteRange a..c']]);
    let at = start;
    for (const r of h.records) {
      expect(r.first).toBe(at + 1);
      // Each write also took a sequence number for its record.
      expect(r.last).toBe(r.first + r.kinds.length);
      at = r.last;
    }
    expect(at).toBe(h.latest);
    // A batch: its updates in order, each its own sequence number; a range
    // delete over the reserved keys is cut around them.
    const batch = new WriteBatch().put('x', bytes('1')).delete('y').deleteRange('m', new Uint8Array(10).fill(0xff)).put('z', bytes('2'));
    value(await ask('A', 6, { op: 'write', batch: batch.encoded().slice(), count: batch.length }));
    const h2 = value(await ask('A', 7, { op: 'changes', since: h.latest })) as ChangeHistory;
    expect(h2.records).toHaveLength(1);
    const r = h2.records[0]!;
    expect(Array.from(r.kinds)).toEqual([1, 0, 3, 3, 1]);
    expect(r.last).toBe(r.first + 5);
    expect(text(db.get('z'))).toBe('2');
    const bad = new WriteBatch()
      .put('fine', bytes('1'))
      .put(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...bytes('siltdb/x')]), bytes('no'));
    const refused = await ask('A', 8, { op: 'write', batch: bad.encoded().slice(), count: bad.length });
    expect(refused.ok ? 'ok' : refused.error.code).toBe('InvalidArgument');
    expect(db.get('fine')).toBeUndefined();
    // An empty batch is a write too (it takes its record's sequence number).
    value(await ask('A', 10, { op: 'write', batch: new Uint8Array(0), count: 0 }));
    const now = value(await ask('A', 9, { op: 'changes', since: null })) as ChangeHistory;
    expect(now).toEqual({ base: db.latestSequence(), latest: db.latestSequence(), records: [] });
    await leader.close();
  });

  it('runs transactions per connection: own writes sent with the next request, conflicts, change records, and a commit sent again after a failover', async () => {
    const db = await fresh({ mergeOperator: 'append' });
    const leader = new Leader(db, 'txn', 'L1', undefined);
    const ask = serve(leader, ['A', 'B']);
    const writes = (b: WriteBatch) => ({ writes: { batch: b.encoded().slice(), count: b.length } });
    value(await ask('A', 1, { op: 'put', key: 'n', value: bytes('0') }));
    const start = db.latestSequence();
    // A and B both read n for update (both numbered 1: per connection).
    value(await ask('A', 2, { op: 'txnBegin', txn: 1 }));
    value(await ask('B', 1, { op: 'txnBegin', txn: 1 }));
    expect(text(value(await ask('A', 3, { op: 'txnGet', txn: 1, key: 'n', forUpdate: true })) as Uint8Array)).toBe('0');
    expect(text(value(await ask('B', 2, { op: 'txnGet', txn: 1, key: 'n', forUpdate: true })) as Uint8Array)).toBe('0');
    // A's writes travel with its next read, which sees them.
    const own = new WriteBatch().put('n', bytes('1')).merge('log', bytes('a')).deleteRange('x', new Uint8Array(10).fill(0xff));
    const seen = value(await ask('A', 4, { op: 'txnMultiGet', txn: 1, keys: ['n', 'log'], ...writes(own) })) as { bytes: Uint8Array; lens: Int32Array };
    expect(Array.from(seen.lens)).toEqual([1, 1]);
    expect(db.get('log')).toBeUndefined();
    value(await ask('A', 5, { op: 'txnCommit', txn: 1, leader: 'L1' }));
    expect(text(db.get('n'))).toBe('1');
    expect(text(db.get('log'))).toBe('a');
    // B's commit meets A's write of n: Conflict, nothing written.
    const conflict = await ask('B', 3, { op: 'txnCommit', txn: 1, leader: 'L1', ...writes(new WriteBatch().put('n', bytes('1')).put('b', bytes('1'))) });
    expect(conflict.ok ? 'ok' : conflict.error.code).toBe('Conflict');
    expect(db.get('b')).toBeUndefined();
    // The transaction ended: a later request on it is Released.
    const after = await ask('B', 4, { op: 'txnGet', txn: 1, key: 'n', forUpdate: false });
    expect(after.ok ? 'ok' : after.error.code).toBe('Released');
    // A transaction's reserved keys are refused (and end it).
    value(await ask('B', 5, { op: 'txnBegin', txn: 2 }));
    const reservedKey = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...bytes('siltdb/x')]);
    const refused = await ask('B', 6, { op: 'txnGet', txn: 2, key: 'n', forUpdate: false, ...writes(new WriteBatch().put(reservedKey, bytes('x'))) });
    expect(refused.ok ? 'ok' : refused.error.code).toBe('InvalidArgument');
    // The commit's change record: A's updates in order, the range delete cut around the reserved keys.
    const h = value(await ask('A', 6, { op: 'changes', since: start })) as ChangeHistory;
    expect(h.records).toHaveLength(1);
    expect(Array.from(h.records[0]!.kinds)).toEqual([1, 2, 3, 3]);
    expect(h.records[0]!.last).toBe(h.records[0]!.first + 4);

    // A failover: A's commit 8 was applied by L1, whose answer was lost; A's
    // commit 10 (of another transaction) was not.
    value(await ask('A', 7, { op: 'txnBegin', txn: 2 }));
    value(await ask('A', 8, { op: 'txnCommit', txn: 2, leader: 'L1', ...writes(new WriteBatch().put('t2', bytes('1'))) }));
    value(await ask('A', 9, { op: 'txnBegin', txn: 3 }));
    await leader.close();
    const next = new Leader(db, 'txn', 'L2', undefined);
    const ask2 = serve(next, ['A']);
    value(await ask2('A', 8, { op: 'txnCommit', txn: 2, leader: 'L1', ...writes(new WriteBatch().put('t2', bytes('1'))) }));
    expect(next.counters.duplicateWrites).toBe(1);
    const lost = await ask2('A', 10, { op: 'txnCommit', txn: 3, leader: 'L1', ...writes(new WriteBatch().put('t3', bytes('1'))) });
    expect(lost.ok ? 'ok' : lost.error.code).toBe('LeaderChanged');
    expect(db.get('t3')).toBeUndefined();
    await next.close();
  });

  it('serves nothing more of a connection once it is gone: a request that arrived before its drop ran leaves no snapshot and no record (review 2)', async () => {
    const db = await fresh();
    const locks = new FakeLocks();
    const n = names('drop');
    let freeF = () => {};
    void locks.request(n.clientLock('F'), {}, () => new Promise<void>((r) => (freeF = r)));
    const leader = new Leader(db, 'drop', 'A', locks);
    const ask = serve(leader, ['A']);
    const { port1, port2 } = new MessageChannel();
    try {
      leader.attach('F', port1 as unknown as MessagePort, PROTOCOL);
      value(await ask('A', 1, { op: 'put', key: 'a', value: bytes('1') }));
      // A's idle holds the queue while F goes and F's last requests arrive.
      const idle = db.idle.bind(db);
      let go = () => {};
      const gate = new Promise<void>((r) => (go = r));
      (db as { idle: Database['idle'] }).idle = async () => {
        await gate;
        return idle();
      };
      const held = ask('A', 2, { op: 'idle' });
      await new Promise((r) => setTimeout(r, 5));
      freeF(); // F's tab closed: its drop is queued behind the idle
      await new Promise((r) => setTimeout(r, 5));
      leader.receive('F', { id: 1, client: 'F', request: { op: 'snapshot' }, floor: 1 });
      leader.receive('F', { id: 2, client: 'F', request: { op: 'put', key: 'f', value: bytes('1') }, floor: 1 });
      go();
      value(await held);
      await new Promise((r) => setTimeout(r, 20));
      expect(leader.holding.clients).toEqual(['A']);
      expect(leader.holding.snapshots).toBe(0);
      expect(db.statistics().properties.liveSnapshots).toBe(0);
      expect(db.get(recordKey('F'))).toBeUndefined();
      expect(db.get('f')).toBeUndefined();
    } finally {
      port2.close();
      await leader.close();
    }
  });

  it("starts although its sweep cannot write (a settled intent, a gone connection's record): the records are left for later (review 7)", async () => {
    const db = await fresh();
    const locks = new FakeLocks();
    const n = names('sweep');
    // F lives (holds its client lock); G is gone, its record left behind.
    let freeF = () => {};
    void locks.request(n.clientLock('F'), {}, () => new Promise<void>((r) => (freeF = r)));
    const old = new Leader(db, 'sweep', 'L0', undefined);
    value(await serve(old, ['G'])('G', 1, { op: 'put', key: 'g', value: bytes('1') }));
    await old.halt();
    // F's ingest 1 left an intent, at the last sequence number: not applied.
    const key = recordKey('F');
    const b = new WriteBatch();
    WriteBatch.putBookkeeping(b, key, recordValue(emptyRecord(), key.length, 0, { id: 1, seq: db.latestSequence() + 1, count: 2 }));
    db.write(b);
    // Every write fails for now (storage said no).
    const write = db.write.bind(db);
    let failing = true;
    (db as { write: Database['write'] }).write = ((batch, o) => {
      if (failing) throw new SiltError('IoError', 'the disk said no');
      return write(batch, o);
    }) as Database['write'];
    const leader = new Leader(db, 'sweep', 'L1', locks);
    await expect(leader.sweep()).resolves.toBeUndefined();
    expect(db.get(recordKey('G'))).toBeDefined(); // left for a later sweep
    expect(parseRecord(db.get(key)).pending).toBeDefined();
    // Writes work again: F's ingest sent again runs (its intent settled first).
    failing = false;
    const ask = serve(leader, ['F']);
    const batch = new WriteBatch().put('a', bytes('1')).put('b', bytes('2'));
    value(await ask('F', 1, { op: 'ingest', batch: batch.encoded().slice(), count: batch.length, sorted: true }));
    expect(text(db.get('a'))).toBe('1');
    expect(parseRecord(db.get(key))).toMatchObject({ max: 1, pending: undefined });
    freeF();
    await leader.close();
  });

  it("sends an error's cause chain to the connection, and an unknown code arrives as Internal with the original kept", async () => {
    const db = await fresh(); // no merge operator: merge fails in the engine
    const leader = new Leader(db, 'errors', 'L1', undefined);
    const ask = serve(leader, ['A']);
    const r = await ask('A', 1, { op: 'merge', key: 'k', value: bytes('1') });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const e = fromWire(r.error);
    expect(e).toBeInstanceOf(SiltError);
    expect(e.code).toBe('InvalidArgument');
    // The engine's error, as the binding threw it, is the cause.
    expect(e.cause).toBeInstanceOf(Error);
    expect((e.cause as Error & { code?: string }).code).toBe('InvalidArgument');
    expect((e.cause as Error).message).toContain('mergeOperator');
    await leader.close();
    // A chain, and something thrown that is not an Error.
    const deep = toWire(new SiltError('IoError', 'outer', { cause: new TypeError('middle', { cause: 'innermost' }) }));
    const back = fromWire(deep);
    expect(back.cause).toMatchObject({ name: 'TypeError', message: 'middle' });
    expect((back.cause as Error).cause).toMatchObject({ name: 'string', message: 'innermost' });
    expect(fromWire(toWire(new RangeError('a bug')))).toMatchObject({ code: 'Internal', message: 'a bug', cause: { name: 'RangeError' } });
    // A code from a newer leader: Internal, the original code kept.
    const unknown = fromWire({ code: 'SomethingNew', message: 'what it said' });
    expect(unknown.code).toBe('Internal');
    expect(unknown.message).toBe('SomethingNew: what it said');
    expect((unknown.cause as Error & { code?: string }).code).toBe('SomethingNew');
  });
});

describe('a request sent again to the same leader', () => {
  // A follower that left for another leader (a late `leader` message of
  // one that had just gone) and came back sends again what had no answer.
  it('is answered as the first time: nothing is made twice, and an iterator read whose answer moved entries is not served again', async () => {
    const db = await fresh();
    for (const k of ['a', 'b', 'c']) db.put(k, bytes(k));
    const leader = new Leader(db, 'again', 'L', undefined);
    const ask = serve(leader, ['F']);
    const snap = value(await ask('F', 1, { op: 'snapshot' }));
    expect(value(await ask('F', 1, { op: 'snapshot' }))).toEqual(snap);
    const it = value(await ask('F', 2, { op: 'iterator', options: { batchSize: 1 }, snapshot: 0 }));
    expect(value(await ask('F', 2, { op: 'iterator', options: { batchSize: 1 }, snapshot: 0 }))).toBe(it);
    value(await ask('F', 3, { op: 'txnBegin', txn: 1 }));
    value(await ask('F', 3, { op: 'txnBegin', txn: 1 }));
    expect(leader.holding).toMatchObject({ snapshots: 1, iterators: 1, transactions: 1 });
    // The first batch's answer was lost (it moved its entries): sent again,
    // it fails, rather than skip them with the second batch.
    value(await ask('F', 4, { op: 'next', iterator: it as number }));
    const again = await ask('F', 4, { op: 'next', iterator: it as number });
    expect(again).toMatchObject({ ok: false, error: { code: 'LeaderChanged' } });
    // ...and the iterator goes with it (the page, told so, never releases it).
    expect(leader.holding).toMatchObject({ snapshots: 1, iterators: 0, transactions: 1 });
    // Requests below the floor will not come again: their answers go (so
    // the first snapshot's request, were it sent again, would be served again).
    const late: Envelope = { id: 6, client: 'F', request: { op: 'latestSequence' }, floor: 6 };
    leader.receive('F', late);
    await new Promise((r) => setTimeout(r, 10));
    expect(value(await ask('F', 1, { op: 'snapshot' }))).not.toEqual(snap);
    expect(leader.holding.snapshots).toBe(2);
    await leader.close();
    db.close();
  });

  it('an iterator opened with its first batch: sent again after its answer moved, LeaderChanged and the iterator goes; let go of by the leader at its limit, or empty', async () => {
    const db = await fresh();
    for (const k of ['a', 'b', 'c', 'd']) db.put(k, bytes(k));
    const leader = new Leader(db, 'first', 'L', undefined);
    const ask = serve(leader, ['F']);
    const keysOf = (b: FirstBatch['batch']) => {
      const out: string[] = [];
      for (let i = 0; b !== undefined && 2 * i + 1 < b.offsets.length; i++) out.push(text(b.bytes.subarray(b.offsets[2 * i]!, b.offsets[2 * i + 1]!)) ?? '');
      return out;
    };
    // A limit the batch does not reach: the leader keeps the iterator. Its
    // answer moved the batch: sent again, it fails, and the iterator goes.
    const open = { op: 'iterator', options: { batchSize: 2 }, snapshot: 0, first: true, limit: 3 } as Request;
    const a = value(await ask('F', 1, open)) as FirstBatch;
    expect([keysOf(a.batch), a.done]).toEqual([['a', 'b'], false]);
    expect(leader.holding.iterators).toBe(1);
    expect(await ask('F', 1, open)).toMatchObject({ ok: false, error: { code: 'LeaderChanged' } });
    expect(leader.holding.iterators).toBe(0);
    // Read on with next, and released by the page.
    const b = value(await ask('F', 2, open)) as FirstBatch;
    expect(keysOf(value(await ask('F', 3, { op: 'next', iterator: b.id })) as FirstBatch['batch'])).toEqual(['c', 'd']);
    value(await ask('F', 4, { op: 'releaseIterator', iterator: b.id }));
    expect(leader.holding.iterators).toBe(0);
    // The batch holds the limit, or the iterator is empty: let go of already.
    const held = value(await ask('F', 5, { ...open, options: { batchSize: 3 } } as Request)) as FirstBatch;
    expect([keysOf(held.batch), held.done]).toEqual([['a', 'b', 'c'], true]);
    const empty = value(await ask('F', 6, { op: 'iterator', options: { gte: bytes('z') }, snapshot: 0, first: true })) as FirstBatch;
    expect([empty.batch, empty.done]).toEqual([undefined, true]);
    expect(leader.holding.iterators).toBe(0);
    // No limit: held until the page reads its end.
    const rest = value(await ask('F', 7, { op: 'iterator', options: { gte: bytes('c') }, snapshot: 0, first: true })) as FirstBatch;
    expect([keysOf(rest.batch), rest.done]).toEqual([['c', 'd'], false]);
    expect(leader.holding.iterators).toBe(1);
    expect(value(await ask('F', 8, { op: 'next', iterator: rest.id }))).toBeUndefined();
    expect(leader.holding.iterators).toBe(0);
    // Without `first`: the number alone.
    expect(typeof value(await ask('F', 9, { op: 'iterator', options: {}, snapshot: 0 }))).toBe('number');
    await leader.close();
    db.close();
  });

  it('is recognised however long the connection has lived: answers below the floor make room for new ones', async () => {
    const db = await fresh();
    const leader = new Leader(db, 'long', 'L', undefined);
    const ask = serve(leader, ['F']);
    // Far more requests than ANSWERS_KEPT, each sent with the floor the page
    // would send (every earlier one answered).
    for (let id = 1; id <= 600; id++) {
      leader.receive('F', { id, client: 'F', request: { op: 'latestSequence' }, floor: id });
    }
    await new Promise((r) => setTimeout(r, 10));
    const snap = value(await ask('F', 601, { op: 'snapshot' }));
    expect(value(await ask('F', 601, { op: 'snapshot' }))).toEqual(snap);
    expect(leader.holding.snapshots).toBe(1);
    await leader.close();
    db.close();
  });
});
