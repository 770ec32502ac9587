// Writes: put, delete, deleteRange; string keys as their UTF-8 bytes; the
// empty key as a key like any other.
import { eq } from './check.js';
import { bytes, collect, key, scenario, text, textKeys } from './scenario.js';

export default [
  scenario('a key never written, or deleted, gets undefined; a deleted key can be written again; deleting a missing key is no error', async (t) => {
    const db = await t.open();
    eq(await db.get(bytes('nope')), undefined, 'a key never written');
    await db.put('k', bytes('v'));
    await db.put('other', bytes('stays'));
    await db.delete('k');
    eq(await db.get('k'), undefined, 'a deleted key');
    eq(text(await db.get('other')), 'stays', 'another key');
    await db.put('k', bytes('again'));
    eq(text(await db.get('k')), 'again', 'written again');
    await db.delete('never');
    eq(await db.get('never'), undefined, 'a key deleted but never written');
  }),

  scenario('a string key is its UTF-8 bytes, and keys differing in one byte are different keys', async (t) => {
    const db = await t.open();
    await db.put('héllo ☃ 🦀', bytes('v'));
    eq(text(await db.get(bytes('héllo ☃ 🦀'))), 'v', 'read by its bytes');
    await db.put(bytes('plain'), bytes('w'));
    eq(text(await db.get('plain')), 'w', 'written by its bytes, read by its string');
    await db.delete(bytes('héllo ☃ 🦀'));
    eq(await db.get('héllo ☃ 🦀'), undefined, 'deleted by its bytes');
    await db.put('a', bytes('1'));
    await db.put('b', bytes('2'));
    await db.put('a\u0000', bytes('3'));
    eq([text(await db.get('a')), text(await db.get('b')), text(await db.get('a\u0000'))], ['1', '2', '3'], 'a, b and a\\0');
  }),

  scenario('string keys are stored as their UTF-8 bytes, ASCII or not, short or long', async (t) => {
    const db = await t.open();
    const keys = ['', 'a', 'k'.repeat(64), 'k'.repeat(65), 'é', 'caf\u00e9', '日本語', `${'x'.repeat(63)}é`, '\u007f', '\u0080', 'a\u{1F600}b'];
    for (const [i, k] of keys.entries()) await db.put(k, bytes(String(i)));
    const stored = (await collect(db.keys())).map((k) => Array.from(k).join(','));
    const want = keys.map((k) => Array.from(bytes(k)).join(',')).sort();
    eq(stored.sort(), want, 'the stored keys');
    for (const [i, k] of keys.entries()) eq(text(await db.get(bytes(k))), String(i), `key ${JSON.stringify(k)}`);
  }),

  scenario('deleteRange removes [start, end) and nothing else, from the memtable and from flushed tables', async (t) => {
    const db = await t.open();
    for (let i = 0; i < 100; i++) await db.put(key(i, 3), bytes('v'));
    await db.flush();
    await db.put('k0500', bytes('in the memtable'));
    await db.deleteRange('k010', 'k090');
    const left = await textKeys(db.keys());
    eq(left.length, 20, 'keys left');
    eq([left.includes('k009'), left.includes('k090'), left.includes('k010')], [true, true, false], 'k009, k090 and k010 left');
    eq(await db.get('k050'), undefined, 'a key in the range');
    eq(await db.get('k0500'), undefined, 'a key in the range, in the memtable');
  }),

  scenario('the empty key is a key in every call: put, get, multiGet, iterators, delete, ranges, batches, transactions', async (t) => {
    const db = await t.open();
    await db.put('', bytes('empty'));
    await db.put(new Uint8Array(0), bytes('same key'));
    eq(text(await db.get('')), 'same key', 'get');
    const m = await db.multiGet(['', 'a']);
    eq([m.text(0), m.get(1)], ['same key', undefined], 'multiGet');
    m.release();
    await db.put('a', bytes('a'));
    eq(await textKeys(db.keys()), ['', 'a'], 'keys()');
    eq(await textKeys(db.keys({ lt: 'a' })), [''], 'keys({ lt: a })');
    eq(await textKeys(db.keys({ gt: '' })), ['a'], "keys({ gt: '' })");
    eq(await textKeys(db.keys({ reverse: true })), ['a', ''], 'keys in reverse');
    eq(await db.count({ lte: '' }), 1, "count({ lte: '' })");
    await db.deleteRange('', 'a');
    eq(await db.get(''), undefined, 'after a range delete from it');
    await db.write(db.batch().put('', bytes('batch')));
    eq(text(await db.get('')), 'batch', 'written by a batch');
    await db.transaction(async (tx) => {
      eq(text(await tx.get('')), 'batch', 'in a transaction');
      tx.delete('');
    });
    eq(await db.get(''), undefined, 'deleted by a transaction');
    // In a sublevel, the empty key is the sublevel's first.
    const s = db.sublevel('s', { keyEncoding: 'utf8' });
    await s.put('', bytes('first'));
    await s.put('b', bytes('second'));
    eq(await collect(s.keys()), ['', 'b'], "a sublevel's keys");
  }),
];
