// ingest(): entries become table files in one atomic step (the engine's
// Db::ingest, crates/engine/tests/ingest.rs), here through the package: in
// the worker API, its sequence numbers and the OPFS pool (stand-ins), and
// through the leader that serves connect(). What both APIs share (sorting,
// the last of equal keys, sublevels, what is refused) is in
// scenarios/ingest.js.
import { afterEach, describe, expect, test } from 'vitest';
import { WriteBatch, type Database, type IngestReport } from '../src/index.js';
import { Leader } from '../src/tabs/leader.js';
import { openOn } from '../src/local/open.js';
import type { ChangeHistory, Envelope, Response } from '../src/tabs/protocol.js';
import { FakeDirectory, FakeLocks } from './fakes.js';
import { bytes, fresh, rejected, text } from './helpers.js';

const opened: Database[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (!db.closed) db.close();
});

const key = (i: number) => `key-${String(i).padStart(7, '0')}`;

describe('ingest in the worker', () => {
  test('takes the next sequence number, one for all its entries; a refused ingest takes none', async () => {
    const db = await fresh();
    opened.push(db);
    db.put(key(5), bytes('before'));
    const report = await db.ingest([
      [key(2), bytes('2')],
      [key(1), bytes('1')],
    ]);
    expect(report.sequence).toBe(2);
    expect(db.latestSequence()).toBe(2);
    expect((await rejected(db.ingest([['x']] as unknown as [string, Uint8Array][]))).code).toBe('InvalidArgument');
    expect(
      (
        await rejected(
          db.ingest(
            [
              ['b', bytes('1')],
              ['a', bytes('2')],
            ],
            { sorted: true },
          ),
        )
      ).code,
    ).toBe('InvalidArgument');
    expect(db.latestSequence()).toBe(2);
  });

  test('on the OPFS pool: the pool grows to hold the new files first, and a reopen finds everything', async () => {
    const root = new FakeDirectory();
    const locks = new FakeLocks();
    const db = await openOn({ root, locks }, 'ing', { poolReserve: 4 });
    opened.push(db);
    // Incompressible values: 20 MB of tables.
    let x = 1;
    const random = () =>
      Uint8Array.from({ length: 1000 }, () => {
        x = (Math.imul(x, 1103515245) + 12345) >>> 0;
        return x >>> 24;
      });
    const entries = Array.from({ length: 20_000 }, (_, i) => [key(i), random()] as [string, Uint8Array]);
    const report = await db.ingest(entries, { sorted: true });
    expect(report.files).toBeGreaterThanOrEqual(5); // 20 MB at 4 MiB per file
    expect(report.level).toBe(6);
    expect(db.statistics().pool!.exhausted).toBe(0);
    db.close();
    const again = await openOn({ root, locks }, 'ing', { poolReserve: 4 });
    opened.push(again);
    expect(again.get(key(19_999))?.length).toBe(1000);
    expect(again.count()).toBe(20_000);
    expect(again.verify().tables).toBe(report.files);
  });
});

describe('ingest through the leader (connect)', () => {
  test('answers the report and publishes one change over the range of its keys', async () => {
    const db = await fresh();
    opened.push(db);
    const leader = new Leader(db, 'ingest', 'A', undefined);
    const responses: Response[] = [];
    leader.addLocal('A', (r) => responses.push(...[r].flat()));
    const ask = async (id: number, request: Envelope['request']): Promise<unknown> => {
      leader.receive('A', { id, client: 'A', request });
      for (;;) {
        const at = responses.findIndex((x) => x.id === id);
        if (at >= 0) {
          const r = responses.splice(at, 1)[0]!;
          if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
          return r.value;
        }
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    };
    const start = db.latestSequence();
    const b = new WriteBatch();
    for (const k of ['m', 'c', 'x']) b.put(k, bytes(`v-${k}`));
    const report = (await ask(1, { op: 'ingest', batch: b.encoded().slice(), count: b.length, sorted: false })) as IngestReport;
    expect(report.keys).toBe(3);
    expect(text(db.get('c'))).toBe('v-c');
    const h = (await ask(2, { op: 'changes', since: start })) as ChangeHistory;
    // The intent (its write record, saying the ingest is under way: it
    // changes nothing the app sees), then the ingest and its record.
    expect(h.records.length).toBe(2);
    expect(h.records[0]!).toMatchObject({ first: start + 1, last: start + 1 });
    expect(h.records[0]!.kinds.length).toBe(0);
    const r = h.records[1]!;
    // The ingest's sequence number, then its write record's.
    expect([r.first, r.last]).toEqual([report.sequence, report.sequence + 1]);
    expect(h.latest).toBe(report.sequence + 1);
    expect(Array.from(r.kinds)).toEqual([4]);
    expect(text(r.keys.subarray(r.bounds[0], r.bounds[1]))).toBe('c');
    expect(Array.from(r.keys.subarray(r.bounds[1], r.bounds[2]))).toEqual([...bytes('x'), 0]);
    // Sent again after a failover (same connection, same id), after a later
    // write: not applied again, which would undo that write.
    await ask(10, { op: 'put', key: 'c', value: bytes('later') });
    const again = (await ask(1, { op: 'ingest', batch: b.encoded().slice(), count: b.length, sorted: false })) as IngestReport;
    expect(again).toEqual(report); // its own report again
    expect(text(db.get('c'))).toBe('later');
    expect(leader.counters.duplicateWrites).toBe(1);
    // Reserved keys and other updates are refused before anything is written.
    const del = new WriteBatch();
    del.delete('c');
    await expect(ask(11, { op: 'ingest', batch: del.encoded().slice(), count: 1, sorted: false })).rejects.toThrow(/puts only/);
    expect(text(db.get('c'))).toBe('later');
    await leader.close();
  });
});
