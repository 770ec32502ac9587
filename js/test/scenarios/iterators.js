// Iterators and ranges, with `for await` and awaited steps: bounds in both
// directions, limit, keys() and values(), entries the caller owns, how an
// iterator ends (break, release(), exhausted, the database closed), and
// the view it keeps while the database changes. The worker's extras
// (synchronous iteration, batches, seek) are in js/test/scans.test.ts and
// js/test/api.test.ts.
import { codeOf, eq, fails, ok } from './check.js';
import { bytes, collect, key, scenario, sleep, text, textEntries, textKeys } from './scenario.js';

/** A database of a..e, each with its upper-case value. */
async function abc(t) {
  const db = await t.open();
  for (const k of ['a', 'b', 'c', 'd', 'e']) await db.put(k, bytes(k.toUpperCase()));
  return db;
}

export default [
  scenario('gt, gte, lt, lte and reverse bound a scan', async (t) => {
    const db = await abc(t);
    /** @type {[Record<string, unknown>, string[]][]} */
    const cases = [
      [{}, ['a', 'b', 'c', 'd', 'e']],
      [{ gte: 'b' }, ['b', 'c', 'd', 'e']],
      [{ gt: 'b' }, ['c', 'd', 'e']],
      [{ lt: 'd' }, ['a', 'b', 'c']],
      [{ lte: 'd' }, ['a', 'b', 'c', 'd']],
      [{ gt: 'a', lte: 'c' }, ['b', 'c']],
      [{ gte: 'bb', lt: 'dd' }, ['c', 'd']],
      [{ reverse: true }, ['e', 'd', 'c', 'b', 'a']],
      [{ reverse: true, gt: 'b', lte: 'd' }, ['d', 'c']],
      [{ gte: 'x' }, []],
      [{ gte: 'd', lt: 'b' }, []],
    ];
    for (const [options, want] of cases) {
      const got = await textEntries(db.iterator({ ...options, batchSize: 2 }));
      eq(
        got,
        want.map((k) => [k, k.toUpperCase()]),
        JSON.stringify(options),
      );
    }
  }),

  scenario('limit, keys() and values(), in both directions and within bounds', async (t) => {
    const db = await t.open({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
    for (let i = 0; i < 50; i++) await db.put(key(i, 2), `v${i}`);
    eq(await collect(db.keys({ limit: 3 })), ['k00', 'k01', 'k02'], 'keys({ limit: 3 })');
    eq(await collect(db.keys({ limit: 2, reverse: true, lt: 'k10' })), ['k09', 'k08'], 'keys({ limit: 2, reverse, lt })');
    eq(await collect(db.values({ gt: 'k47' })), ['v48', 'v49'], 'values({ gt })');
    eq(
      (await collect(db.iterator({ gte: 'k10', lte: 'k12', limit: 10 }))).map(([k]) => k),
      ['k10', 'k11', 'k12'],
      'a limit past the range',
    );
    eq(await collect(db.entries({ gt: 'k48' })), [['k49', 'v49']], 'entries()');
    eq(await collect(db.iterator({ limit: 0 })), [], 'limit: 0');
    eq((await collect(db.keys({ limit: Infinity }))).length, 50, 'limit: Infinity');
    eq((await collect(db.keys({ limit: -1 }))).length, 50, 'limit: -1');
    eq((await collect(db.keys({ limit: 40, batchSize: 7 }))).length, 40, 'limit: 40 in batches of 7');
    for (const bad of [1.5, -2, '3', Number.NaN]) await fails(() => collect(db.iterator({ limit: bad })), 'InvalidArgument', /limit must be/);
  }),

  scenario('entries are copies the caller owns: they outlive the iterator and later writes, all of a long scan', async (t) => {
    const db = await abc(t);
    const all = await collect(db.iterator());
    await db.put('a', bytes('changed'));
    eq(text(all[0][1]), 'A', 'an entry read before the write');
    const big = await t.open();
    const value = (i) => `value ${i} `.repeat(1 + (i % 4));
    const batch = big.batch();
    for (let i = 0; i < 3000; i++) batch.put(key(i), bytes(value(i)));
    await big.write(batch);
    const entries = await collect(big.iterator());
    eq(entries.length, 3000, 'entries of a long scan');
    for (const [i, [k, v]] of entries.entries()) {
      if (text(k) !== key(i) || text(v) !== value(i)) eq([text(k), text(v)], [key(i), value(i)], `entry ${i}`);
    }
  }),

  scenario('break, return() and release() end an iterator at once: its next step is the end, though its batch had more entries', async (t) => {
    const db = await abc(t);
    const broken = db.iterator();
    for await (const [k] of broken) if (text(k) === 'b') break;
    eq(await broken.next(), { done: true, value: undefined }, 'the step after break');
    const returned = db.iterator();
    await returned.next();
    eq(await returned.return(), { done: true, value: undefined }, 'return()');
    eq(await returned.next(), { done: true, value: undefined }, 'the step after return()');
    const released = db.iterator();
    await released.next();
    await released.release();
    await released.release(); // twice does nothing
    eq(await codeOf(() => released.next()), 'Released', 'the step after release()');
  }),

  scenario('a released iterator refuses to go on with Released, at every step', async (t) => {
    const db = await abc(t);
    const it = db.iterator({ batchSize: 2 });
    await it.next();
    await it.next();
    await it.release();
    await fails(() => it.next(), 'Released');
    await fails(() => collect(it), 'Released');
  }),

  scenario('an exhausted iterator has ended; a new one sees later writes', async (t) => {
    const db = await abc(t);
    const it = db.iterator();
    eq((await collect(it)).length, 5, 'entries');
    eq((await it.next()).done, true, 'a step after the end');
    await db.delete('c');
    eq(await textKeys(db.iterator()), ['a', 'b', 'd', 'e'], 'a new scan after a delete');
  }),

  scenario('an iterator keeps its view while the database changes under it: writes, a flush, a compaction', async (t) => {
    const db = await t.open({ writeBufferSize: 64 * 1024 });
    const batch = db.batch();
    for (let i = 0; i < 2000; i++) batch.put(key(i), bytes(`v${i}`));
    await db.write(batch);
    const it = db.iterator({ batchSize: 10 });
    const first = (await it.next()).value;
    const again = db.batch();
    for (let i = 0; i < 2000; i++) again.put(key(i), bytes('x'.repeat(100)));
    await db.write(again);
    await db.delete(key(1500));
    await db.flush();
    await db.compactRange();
    const rest = await collect(it);
    eq(text(first[1]), 'v0', 'the first entry');
    eq(rest.length, 1999, 'the entries after it');
    for (const [k, v] of rest) if (text(v) !== `v${Number(text(k).slice(1))}`) eq(text(v), `v${Number(text(k).slice(1))}`, text(k));
  }),

  scenario('bad iterator options are refused with InvalidArgument', async (t) => {
    const db = await abc(t);
    for (const options of [{ gt: 'a', gte: 'a' }, { lt: 'a', lte: 'a' }, { gte: 5 }, { batchSize: 0 }, { batchSize: 1.5 }, { reverse: 'yes' }]) {
      await fails(() => collect(db.iterator(options)), 'InvalidArgument');
    }
  }),

  scenario('iterator options that are not an object are refused with InvalidArgument', async (t) => {
    const db = await abc(t);
    for (const options of [null, 'a', 5]) eq(await codeOf(() => collect(db.iterator(options))), 'InvalidArgument', JSON.stringify(options));
  }),

  scenario('closing the database ends its open iterators: their next step fails with Closed', async (t) => {
    const db = await abc(t);
    const it = db.iterator({ batchSize: 2 });
    await it.next(); // a batch of two is waiting
    const done = db.iterator();
    eq((await collect(done)).length, 5, 'an iterator read to its end');
    await db.close();
    await fails(() => it.next(), 'Closed');
    await fails(() => it.next(), 'Closed'); // every step, not only the first
    eq((await done.next()).done, true, 'the one that had ended before the close');
  }),

  scenario('an async loop that outlives close() ends with a Closed SiltError at its next step', async (t) => {
    const db = await t.open();
    for (let i = 0; i < 100; i++) await db.put(key(i, 3), bytes(String(i)));
    const seen = [];
    const loop = (async () => {
      for await (const [k] of db.iterator({ batchSize: 10, autoRefresh: true })) {
        seen.push(text(k));
        if (seen.length === 15) await db.close();
        await sleep(0);
      }
    })();
    const e = await loop.then(
      () => undefined,
      (error) => error,
    );
    ok(e !== undefined, 'the loop to fail');
    eq([e.name, e.code], ['SiltError', 'Closed'], 'its error');
    eq(seen.length, 15, 'entries seen before the close');
  }),
];
