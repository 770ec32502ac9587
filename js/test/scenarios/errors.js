// Errors: every failure is a SiltError with a stable code, in both APIs
// (thrown by a worker's synchronous call, a rejection through connect());
// what is refused, and every call after close().
import { eq, fails, ok } from './check.js';
import { bytes, collect, scenario, text } from './scenario.js';

export default [
  scenario('keys that are neither bytes nor strings are refused with InvalidArgument by put, get, delete and multiGet', async (t) => {
    const db = await t.open();
    const bad = [
      ['a number', 42],
      ['null', null],
      ['undefined', undefined],
      ['an ArrayBuffer', new ArrayBuffer(4)],
      ['an Int8Array', new Int8Array(4)],
      ['an array', [1, 2, 3]],
    ];
    for (const [what, k] of bad) {
      for (const [call, f] of [
        ['put', () => db.put(k, bytes('v'))],
        ['get', () => db.get(k)],
        ['delete', () => db.delete(k)],
        ['multiGet', () => db.multiGet([k])],
      ]) {
        const e = await fails(f, 'InvalidArgument').catch((error) => {
          throw new Error(`${call} of ${what}: ${error.message}`);
        });
        ok(e instanceof Error, `${call} of ${what}: an Error`);
      }
    }
    eq(await collect(db.keys()), [], 'keys written');
  }),

  scenario('a value that is not a Uint8Array is refused with InvalidArgument, and nothing is half-written', async (t) => {
    const db = await t.open();
    for (const value of ['text', 7, null, undefined, new ArrayBuffer(2), [1]]) {
      await fails(() => db.put('k', value), 'InvalidArgument', /value must be a Uint8Array/);
    }
    eq(await db.get('k'), undefined, 'k');
  }),

  scenario('a string key with a lone surrogate is refused, not replaced by U+FFFD', async (t) => {
    const db = await t.open();
    await fails(() => db.put('bad\uD800', bytes('v')), 'InvalidArgument', /lone surrogate/);
    eq(await db.get('bad\uFFFD'), undefined, 'the key with U+FFFD');
  }),

  scenario("an oversize key is refused by the engine, its code and the engine's error as its cause; the database stays usable", async (t) => {
    const db = await t.open();
    const e = await fails(() => db.put(new Uint8Array(1 << 20), bytes('v')), 'InvalidArgument', /exceeds the maximum/);
    eq(e.cause?.code, 'InvalidArgument', "the cause's code");
    await db.put('after', bytes('still usable'));
    eq(text(await db.get('after')), 'still usable', 'a write after it');
  }),

  scenario('a SiltError is an Error of the package, with a name, a code and a message', async (t) => {
    const db = await t.open();
    const e = await fails(() => db.get(3), 'InvalidArgument', /key must be a Uint8Array or a string, got number/);
    ok(e instanceof Error && e instanceof t.lib.SiltError, 'an Error, and a SiltError of the package');
    eq(e.name, 'SiltError', 'name');
  }),

  scenario('multiGet refuses bad keys, naming the index, and what is not an array', async (t) => {
    const db = await t.open();
    await fails(() => db.multiGet(['a', 7]), 'InvalidArgument', /keys\[1\]/);
    await fails(() => db.multiGet('a'), 'InvalidArgument');
  }),

  scenario('every call after close() fails with Closed; bad input is still InvalidArgument; closing twice does nothing', async (t) => {
    const db = await t.open();
    await db.put('k', bytes('v'));
    await db.close();
    const calls = {
      get: () => db.get('k'),
      put: () => db.put('k', bytes('v')),
      delete: () => db.delete('k'),
      deleteRange: () => db.deleteRange('a', 'b'),
      multiGet: () => db.multiGet(['k']),
      has: () => db.has('k'),
      hasMany: () => db.hasMany(['k']),
      iterator: () => collect(db.iterator()),
      snapshot: () => db.snapshot(),
      count: () => db.count(),
      clear: () => db.clear(),
      flush: () => db.flush(),
      statistics: () => db.statistics(),
      write: () => db.write(db.batch().put('k', bytes('v'))),
      transaction: () => db.transaction((tx) => tx.get('k')),
    };
    for (const [name, call] of Object.entries(calls)) {
      const e = await fails(call, 'Closed').catch((error) => {
        throw new Error(`${name}: ${error.message}`);
      });
      ok(/closed/.test(e.message), `${name}: a message that says closed, got "${e.message}"`);
    }
    await fails(() => db.get(1), 'InvalidArgument');
    await db.close();
  }),
];
