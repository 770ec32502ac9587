// Snapshots: every read at a snapshot sees the database as of when it was
// taken; a released snapshot, or another database's, is refused.
import { eq, fails } from './check.js';
import { bytes, collect, scenario, text, textKeys } from './scenario.js';

export default [
  scenario('a snapshot sees the state as of when it was taken, in get, multiGet, has, hasMany, count and scans', async (t) => {
    const db = await t.open();
    await db.put('a', bytes('1'));
    await db.put('x', bytes('old'));
    const snap = await db.snapshot();
    await db.put('a', bytes('2'));
    await db.put('b', bytes('3'));
    await db.put('x', bytes('new'));
    await db.delete('x');
    const at = { snapshot: snap };
    eq(text(await db.get('a', at)), '1', 'get a');
    eq(await db.get('b', at), undefined, 'get b');
    const r = await db.multiGet(['x', 'b', 'x'], at);
    eq([...r].map(text), ['old', undefined, 'old'], 'multiGet');
    r.release();
    eq(await db.multiGet(['a', 'x'], { ...at, valueEncoding: 'utf8' }), ['1', 'old'], "multiGet with 'utf8'");
    eq([await db.has('x', at), await db.has('b', at)], [true, false], 'has');
    eq(await db.hasMany(['a', 'b', 'x'], at), [true, false, true], 'hasMany');
    eq(await db.count(at), 2, 'count');
    eq(await textKeys(db.iterator(at)), ['a', 'x'], 'a scan');
    eq(await textKeys(db.keys({ ...at, reverse: true })), ['x', 'a'], 'keys in reverse');
    // Now, without it.
    eq(text(await db.get('a')), '2', 'get a now');
    eq(await textKeys(db.iterator()), ['a', 'b'], 'a scan now');
    eq(await db.hasMany(['a', 'b', 'x']), [true, true, false], 'hasMany now');
    await snap.release();
  }),

  scenario("a released snapshot is refused with Released, and another database's or a made-up one with InvalidArgument", async (t) => {
    const db = await t.open();
    const other = await t.open();
    const snap = await db.snapshot();
    await fails(() => other.get('a', { snapshot: snap }), 'InvalidArgument');
    await snap.release();
    await snap.release(); // twice does nothing
    await fails(() => db.get('a', { snapshot: snap }), 'Released');
    await fails(() => db.multiGet(['a'], { snapshot: snap }), 'Released');
    await fails(() => db.count({ snapshot: snap }), 'Released');
    await fails(() => collect(db.iterator({ snapshot: snap })), 'Released');
    await fails(() => db.get('a', { snapshot: {} }), 'InvalidArgument');
  }),

  scenario('statistics count the snapshots held', async (t) => {
    const db = await t.open();
    const before = (await db.statistics()).properties.liveSnapshots;
    const snap = await db.snapshot();
    eq((await db.statistics()).properties.liveSnapshots, before + 1, 'while one is held');
    await snap.release();
    eq((await db.statistics()).properties.liveSnapshots, before, 'after its release');
  }),
];
