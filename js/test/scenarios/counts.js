// count (exact, now or at a snapshot), clear (one range tombstone) and
// approximateSize (bytes of table files, from their indexes).
import { eq, fails, ok } from './check.js';
import { key, scenario } from './scenario.js';

export default [
  scenario('count is exact for any range; clear() deletes a range and nothing else', async (t) => {
    const db = await t.open({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
    const batch = db.batch();
    for (let i = 0; i < 50; i++) batch.put(key(i, 2), `v${i}`);
    await db.write(batch);
    eq(await db.count(), 50, 'count()');
    eq(await db.count({ gte: 'k10', lt: 'k20' }), 10, 'count({ gte, lt })');
    eq(await db.count({ gt: 'k10', lte: 'k20' }), 10, 'count({ gt, lte })');
    eq(await db.count({ gte: 'k20', lt: 'k10' }), 0, 'an empty range');
    eq(await db.count({ gt: 'k48' }), 1, 'count({ gt })');
    await db.clear({ gt: 'k10', lte: 'k20' });
    eq(await db.count(), 40, 'after a clear of (k10, k20]');
    eq([await db.get('k10'), await db.get('k11'), await db.get('k20'), await db.get('k21')], ['v10', undefined, undefined, 'v21'], 'its edges');
    await db.clear({ lt: 'k05' });
    eq(await db.count(), 35, 'after a clear below k05');
    await fails(() => db.clear({ gt: 'a', gte: 'b' }), 'InvalidArgument', /gt or gte/);
    await fails(() => db.count(null), 'InvalidArgument');
    await fails(() => db.count({ lt: 'a', lte: 'b' }), 'InvalidArgument');
  }),

  scenario('count is exact at a snapshot, and clear() is one range tombstone however many keys it deletes', async (t) => {
    const db = await t.open({ writeBufferSize: 64 * 1024 });
    const batch = db.batch();
    for (let i = 0; i < 5000; i++) batch.put(key(i, 5), new Uint8Array(40));
    await db.write(batch);
    await db.flush();
    const snap = await db.snapshot();
    const deletes = db.batch();
    for (let i = 0; i < 5000; i += 2) deletes.delete(key(i, 5));
    await db.write(deletes);
    eq(await db.count(), 2500, 'count() after deleting half');
    eq(await db.count({ snapshot: snap }), 5000, 'count() at the snapshot');
    const written = async () => (await db.statistics()).tickers['rocksdb.number.keys.written'] ?? 0;
    const before = await written();
    await db.clear();
    eq(await db.count(), 0, 'count() after clear()');
    eq(await db.count({ snapshot: snap }), 5000, 'count() at the snapshot after clear()');
    // One update for the range delete (through connect() the leader's write record is one more).
    ok((await written()) - before <= 2, `at most two updates written by clear(), got ${(await written()) - before}`);
    await snap.release();
    await db.clear(); // nothing left: nothing to do
  }),

  scenario('approximateSize follows the data from the indexes, and a sublevel measures its own', async (t) => {
    const db = await t.open({ writeBufferSize: 64 * 1024 });
    eq(await db.approximateSize(), 0, 'an empty database');
    const big = db.sublevel('big');
    const small = db.sublevel('small');
    // Random values: lz4 would shrink repeated bytes to next to nothing.
    const random = () => crypto.getRandomValues(new Uint8Array(100));
    const b = big.batch();
    for (let i = 0; i < 3000; i++) b.put(key(i, 5), random());
    await big.write(b);
    const s = small.batch();
    for (let i = 0; i < 100; i++) s.put(key(i, 5), random());
    await small.write(s);
    await db.flush();
    await db.idle();
    const all = await db.approximateSize();
    const tables = (await db.statistics()).properties.tableBytes;
    ok(all > 0 && all <= tables, `the whole range within the table bytes (${all} of ${tables})`);
    const bigSize = await big.approximateSize();
    const smallSize = await small.approximateSize();
    ok(bigSize > 10 * smallSize, `big (${bigSize}) over ten times small (${smallSize})`);
    ok(bigSize + smallSize <= all + 8192, `big and small (${bigSize} + ${smallSize}) within the whole (${all}), give or take a block each`);
    ok((await big.approximateSize({ gte: key(1000, 5), lt: key(2000, 5) })) < bigSize / 2, 'a third of big under half of it');
  }),

  scenario('approximateSize of a range past every key is 0', async (t) => {
    const db = await t.open();
    const batch = db.batch();
    for (let i = 0; i < 3000; i++) batch.put(key(i, 5), crypto.getRandomValues(new Uint8Array(100)));
    await db.write(batch);
    await db.flush();
    ok((await db.approximateSize()) > 0, 'the size of everything above 0');
    eq(await db.approximateSize({ gte: 'z' }), 0, 'the size of [z, ...)');
  }),
];
