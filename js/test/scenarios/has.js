// has and hasMany: whether keys have a value, with no value copied out
// (that it copies none is the worker's to show: js/test/reads.test.ts).
import { eq, fails } from './check.js';
import { bytes, scenario } from './scenario.js';

export default [
  scenario('has and hasMany say which keys have a value, deleted ones not, an empty value and the empty key included', async (t) => {
    const db = await t.open();
    await db.put('a', bytes('alpha'));
    await db.put('c', bytes('x'.repeat(10_000)));
    await db.put('e', new Uint8Array(0));
    await db.put('', bytes('the empty key'));
    await db.put('gone', bytes('soon'));
    eq(await db.has('gone'), true, 'has(gone) before its delete');
    await db.delete('gone');
    eq([await db.has('a'), await db.has('b'), await db.has('gone'), await db.has('e'), await db.has('')], [true, false, false, true, true], 'has');
    eq(await db.hasMany(['a', 'b', 'c', 'gone', 'e', '', 'a']), [true, false, true, false, true, true, true], 'hasMany');
    eq(await db.hasMany([]), [], 'hasMany of no keys');
    await db.flush();
    eq(await db.hasMany(['a', 'b', 'c']), [true, false, true], 'hasMany after a flush');
  }),

  scenario('has and hasMany refuse what is not a key, or not an array of keys', async (t) => {
    const db = await t.open();
    await fails(() => db.has(42), 'InvalidArgument');
    await fails(() => db.hasMany('a'), 'InvalidArgument');
    await fails(() => db.hasMany(['a', 7]), 'InvalidArgument', /keys\[1\]/);
  }),
];
