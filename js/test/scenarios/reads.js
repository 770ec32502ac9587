// Reads: get and multiGet return what was put, as values the caller owns
// (a buffer of its own each); multiGet with bytes values is a
// MultiGetResult in both APIs; a call may decode with its own encoding.
// The worker's extra, getPinned (views of wasm memory), is in
// js/test/reads.test.ts.
import { eq, fails, ok } from './check.js';
import { bytes, scenario, text } from './scenario.js';

export default [
  scenario('a value put is the value got, byte for byte; the latest put wins; an empty value is a value, not a missing one', async (t) => {
    const db = await t.open();
    const value = new Uint8Array(256).map((_, i) => i);
    await db.put(bytes('k'), value);
    eq(await db.get(bytes('k')), value, 'all 256 byte values');
    eq(await db.get('k'), value, 'the same key as a string');
    await db.put('k', bytes('one'));
    await db.put('k', bytes('two'));
    eq(text(await db.get('k')), 'two', 'the latest put');
    await db.put('empty', new Uint8Array(0));
    const got = await db.get('empty');
    ok(got instanceof Uint8Array && got.length === 0, `an empty Uint8Array for the empty value, got ${got}`);
  }),

  scenario('many keys keep their own values', async (t) => {
    const db = await t.open();
    const n = 2000;
    const batch = db.batch();
    for (let i = 0; i < n; i += 2) batch.put(`key-${i}`, bytes(`value-${i * 7}`));
    await db.write(batch);
    for (let i = 1; i < n; i += 2) await db.put(`key-${i}`, bytes(`value-${i * 7}`));
    for (let i = 0; i < n; i++) {
      const v = text(await db.get(`key-${i}`));
      if (v !== `value-${i * 7}`) eq(v, `value-${i * 7}`, `key-${i}`);
    }
    eq(await db.get(`key-${n}`), undefined, 'a key never written');
  }),

  scenario("stored bytes do not alias the caller's arrays, either way", async (t) => {
    const db = await t.open();
    const value = bytes('abc');
    await db.put('k', value);
    value[0] = 0x7a; // the caller reuses its buffer
    const got = await db.get('k');
    eq(text(got), 'abc', 'after the caller changed what it put');
    got[1] = 0x7a; // the caller scribbles on the result
    eq(text(await db.get('k')), 'abc', 'after the caller changed what it got');
  }),

  scenario('databases opened separately do not share data', async (t) => {
    const a = await t.open();
    const b = await t.open();
    await a.put('k', bytes('in a'));
    eq(await b.get('k'), undefined, 'the other database');
  }),

  scenario('get returns a value the caller owns: a buffer of its own, which a transfer empties without touching any other value', async (t) => {
    const db = await t.open();
    await db.put('a', bytes('alpha'));
    await db.put('b', bytes('bravo'));
    await db.put('big', new Uint8Array(100_000).fill(7));
    const a = await db.get('a');
    const b = await db.get('b');
    ok(a instanceof Uint8Array, 'a Uint8Array');
    eq(text(a), 'alpha', 'the value');
    eq([a.byteOffset, a.buffer.byteLength], [0, a.length], 'its offset and buffer');
    ok(a.buffer !== b.buffer, 'a buffer of its own');
    structuredClone(a.buffer, { transfer: [a.buffer] });
    eq(a.length, 0, 'the transferred value');
    eq(text(b), 'bravo', 'the other value, after the transfer');
    eq(text(await db.get('a')), 'alpha', 'read again');
    eq((await db.get('big')).buffer.byteLength, 100_000, 'a large value, in a buffer of its own');
    eq(await db.get('missing'), undefined, 'a missing key');
  }),

  scenario('multiGet returns a MultiGetResult: length, get, has, text, copy, copies, iteration; Released after release()', async (t) => {
    const db = await t.open();
    await db.put('a', bytes('alpha'));
    await db.put('c', bytes('charlie'));
    const r = await db.multiGet(['a', 'b', 'c']);
    eq(r.length, 3, 'length');
    eq(text(r.get(0)), 'alpha', 'get(0)');
    eq(r.get(1), undefined, 'get(1), missing');
    eq([r.has(0), r.has(1), r.has(2)], [true, false, true], 'has');
    eq(r.text(2), 'charlie', 'text(2)');
    const kept = r.copy(0);
    eq(
      [...r].map((v) => (v === undefined ? null : text(v))),
      ['alpha', null, 'charlie'],
      'iterated',
    );
    eq(
      r.copies().map((/** @type {Uint8Array | undefined} */ v) => v?.length),
      [5, undefined, 7],
      'copies()',
    );
    await fails(() => r.get(3), 'InvalidArgument');
    await fails(() => r.get(-1), 'InvalidArgument');
    await fails(() => r.get(0.5), 'InvalidArgument');
    eq(r.released, false, 'released before release()');
    r.release();
    r.release(); // twice does nothing
    eq(r.released, true, 'released after release()');
    await fails(() => r.get(0), 'Released');
    await fails(() => [...r], 'Released');
    eq(text(kept), 'alpha', 'a copy, after its result was released');
  }),

  scenario(
    'multiGet gives each key its value in order, undefined for missing ones, an empty value and a repeated key included; no keys, an empty result',
    async (t) => {
      const db = await t.open();
      await db.put('a', bytes('1'));
      await db.put('c', bytes('333'));
      await db.put('e', new Uint8Array(0));
      const r = await db.multiGet(['a', 'b', bytes('c'), 'e', 'a']);
      eq([...r].map(text), ['1', undefined, '333', '', '1'], 'values');
      eq(r.copies().map(text), ['1', undefined, '333', '', '1'], 'copies');
      r.release();
      const none = await db.multiGet([]);
      eq(none.length, 0, 'the length of a multiGet of no keys');
      none.release();
    },
  ),

  scenario("a call's own value encoding decodes get, multiGet and an iterator; one that cannot decode the bytes is InvalidArgument", async (t) => {
    const db = await t.open();
    await db.put('k', bytes('{"x":1}'));
    await db.put('t', bytes('plain text'));
    eq(await db.get('k', { valueEncoding: 'json' }), { x: 1 }, "get with 'json'");
    eq(await db.get('k', { valueEncoding: 'utf8' }), '{"x":1}', "get with 'utf8'");
    eq(await db.multiGet(['k', 'z'], { valueEncoding: 'utf8' }), ['{"x":1}', undefined], "multiGet with 'utf8'");
    const entries = [];
    for await (const [k, v] of db.iterator({ valueEncoding: 'utf8', lt: 't' })) entries.push([text(k), v]);
    eq(entries, [['k', '{"x":1}']], "an iterator with 'utf8'");
    await fails(() => db.get('t', { valueEncoding: 'json' }), 'InvalidArgument', /not JSON/);
    await fails(() => db.get('k', { valueEncoding: 'yaml' }), 'InvalidArgument');
  }),
];
