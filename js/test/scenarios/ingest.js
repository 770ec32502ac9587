// ingest(): entries written straight into new table files and added to
// the database in one step (the worker's own on the OPFS pool:
// js/test/ingest.test.ts; through the leader, its write record:
// js/test/tabs-failover.test.ts).
import { eq, fails, ok } from './check.js';
import { bytes, collect, scenario, text, textKeys } from './scenario.js';

const key = (i) => `key-${String(i).padStart(7, '0')}`;

export default [
  scenario('an array whose later entries are far larger than its first ones: every value whole', async (t) => {
    const db = await t.open();
    const valueAt = (i) => bytes(`${i}:`.padEnd(i < 2000 ? 4 : 300 + (i % 7), String.fromCharCode(97 + (i % 26))));
    const entries = Array.from({ length: 6000 }, (_, i) => [key(i), valueAt(i)]);
    eq((await db.ingest(entries, { sorted: true })).keys, 6000, 'keys ingested');
    for (const i of [0, 1023, 1024, 1025, 1999, 2000, 4321, 5999]) eq(text(await db.get(key(i))), text(valueAt(i)), key(i));
    eq(await db.count(), 6000, 'count');
  }),

  scenario('unsorted pairs with duplicates: sorted, the last wins, at a sequence number of their own, unseen by an older snapshot', async (t) => {
    const db = await t.open();
    await db.put(key(5), bytes('before'));
    const snap = await db.snapshot();
    const before = await db.latestSequence();
    const entries = [];
    for (let i = 999; i >= 0; i--) entries.push([key(i), bytes(`first-${i}`)]);
    entries.push([key(7), bytes('second-7')]);
    const report = await db.ingest(entries);
    eq([report.keys, report.flushedMemtables], [1000, true], 'keys, and whether memtables were flushed first (key 5 was in one)');
    ok(report.files > 0, `files, got ${report.files}`);
    ok(report.sequence > before && (await db.latestSequence()) >= report.sequence, `a new sequence number (${before} before, ${report.sequence})`);
    eq([text(await db.get(key(7))), text(await db.get(key(5)))], ['second-7', 'first-5'], 'the last of equal keys, over an earlier put');
    eq([text(await db.get(key(5), { snapshot: snap })), await db.get(key(6), { snapshot: snap })], ['before', undefined], 'at the older snapshot');
    await snap.release();
    eq(await textKeys(db.keys({ limit: 3 })), [key(0), key(1), key(2)], 'the first keys');
    eq(await db.count(), 1000, 'count');
    eq((await db.statistics()).tickers['silt.ingest.keys'], 1000, 'the ingest ticker');
    await db.put(key(7), bytes('later'));
    eq(text(await db.get(key(7))), 'later', 'a put after the ingest');
  }),

  scenario('a sublevel with JSON values ingests a batch or pairs, its keys behind its prefix', async (t) => {
    const db = await t.open();
    const notes = db.sublevel('notes', { keyEncoding: 'utf8', valueEncoding: 'json' });
    const b = notes.batch();
    for (let i = 0; i < 100; i++) b.put(key(i), { n: i });
    eq((await notes.ingest(b, { sorted: true })).keys, 100, 'keys of the batch');
    await notes.ingest([[key(200), { n: 200 }]]);
    eq([await notes.get(key(42)), await notes.get(key(200))], [{ n: 42 }, { n: 200 }], 'values');
    eq((await collect(notes.keys())).length, 101, "the sublevel's keys");
    eq(await db.get(key(42)), undefined, 'the key outside the sublevel');
  }),

  scenario(
    'refused, writing nothing: out of order when said sorted, a delete, a bad entry, not iterable, bad options; an empty ingest does nothing',
    async (t) => {
      const db = await t.open();
      await fails(
        () =>
          db.ingest(
            [
              ['b', bytes('1')],
              ['a', bytes('2')],
            ],
            { sorted: true },
          ),
        'InvalidArgument',
        /out of order/,
      );
      await fails(() => db.ingest(db.batch().put('x', bytes('1')).delete('y')), 'InvalidArgument', /puts only/);
      await fails(() => db.ingest([['x']]), 'InvalidArgument', /entry 0 must be a \[key, value\] pair/);
      await fails(() => db.ingest(42), 'InvalidArgument');
      await fails(() => db.ingest([], { sorted: 'yes' }), 'InvalidArgument', /sorted must be a boolean/);
      eq([await db.get('x'), await db.count()], [undefined, 0], 'x, and the count');
      eq((await db.ingest([])).keys, 0, 'keys of an empty ingest');
      await db.close();
      await fails(() => db.ingest([['x', bytes('1')]]), 'Closed');
    },
  ),
];
