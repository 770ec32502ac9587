// Write batches: puts, deletes and range deletes applied in order and
// atomically; a bad update writes nothing. (Batches across sublevels:
// levels.js.)
import { eq, fails } from './check.js';
import { bytes, scenario, text, textKeys } from './scenario.js';

export default [
  scenario('a batch applies puts, deletes and range deletes in order, atomically', async (t) => {
    const db = await t.open();
    for (const k of ['a', 'b', 'c', 'd', 'e']) await db.put(k, bytes('old'));
    const batch = db.batch().put('a', bytes('new')).delete('b').deleteRange('c', 'e').put('d', bytes('again'));
    eq(batch.length, 4, 'length');
    await db.write(batch);
    eq(await textKeys(db.iterator()), ['a', 'd', 'e'], 'keys');
    eq([text(await db.get('a')), text(await db.get('d'))], ['new', 'again'], 'a and d');
  }),

  scenario('a batch with one bad key writes nothing', async (t) => {
    const db = await t.open();
    const batch = db.batch().put('ok', bytes('1')).put(new Uint8Array(70_000), bytes('2'));
    await fails(() => db.write(batch), 'InvalidArgument');
    eq(await db.get('ok'), undefined, 'the good put of the batch');
  }),

  scenario('write refuses what is not a WriteBatch; a batch refuses bad updates as they are added', async (t) => {
    const db = await t.open();
    await fails(() => db.write([]), 'InvalidArgument');
    await fails(() => db.write({ length: 0 }), 'InvalidArgument');
    await fails(() => db.batch().put('k', 'v'), 'InvalidArgument');
    await fails(() => db.batch().delete(1), 'InvalidArgument');
    await fails(() => db.batch().deleteRange('a', undefined), 'InvalidArgument');
  }),

  scenario('a batch grows past its first buffer, and can be cleared and used again', async (t) => {
    const db = await t.open();
    const batch = db.batch();
    for (let i = 0; i < 1000; i++) batch.put(`k${i}`, bytes(`v${i}`));
    await db.write(batch);
    batch.clear();
    eq(batch.length, 0, 'length after clear()');
    await db.write(batch.put('k5', bytes('x')));
    eq([text(await db.get('k999')), text(await db.get('k5'))], ['v999', 'x'], 'k999 and k5');
    eq(await db.count(), 1000, 'count');
  }),
];
