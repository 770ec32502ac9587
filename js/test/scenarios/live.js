// Live queries (db.live, db.liveGet; issue 39, item 2): the same results
// from a worker's `open()` and through `connect()`. Each result is what a
// read at its `seq` returns; a change that cannot alter what a query shows
// costs it no read (`reads` counts them). The model test
// (js/test/live-model.test.ts) checks every result against an oracle.
import { eq, ok } from './check.js';
import { bytes, scenario, sleep, text } from './scenario.js';

/** Waits until `f()` is true (a watchdog: 2 s of the clock the database runs on). */
async function until(f, what) {
  for (let i = 0; i < 400 && !f(); i++) await sleep(5);
  ok(f(), `still waiting for ${what}`);
}

/** A result's entries as text: `key=value` (keys only: `key`). */
function shown(result) {
  return result.entries.map(([k, v]) => (v === undefined ? text(k) : `${text(k)}=${text(v)}`)).join(' ');
}

export default [
  scenario('live(): a range now, then a new result at each change in it; a change outside it or beyond a full window reads nothing', async (t) => {
    const db = await t.open();
    for (const k of ['a', 'b', 'c', 'd', 'e']) await db.put(k, bytes(k.toUpperCase()));
    const live = db.live({ gte: 'b', lt: 'y', limit: 3 });
    const results = [];
    const step = async (n, want, what) => {
      await until(() => results.length >= n, `${what}: result ${n}, got ${results.map(shown).join(' | ')}`);
      eq(shown(results.at(-1)), want, what);
    };
    const sub = live.subscribe((r) => results.push(r));
    await step(1, 'b=B c=C d=D', 'the first read');
    eq(live.reads, 1, 'one read');
    await db.put('a', bytes('outside'));
    await db.put('x', bytes('beyond the window'));
    await db.put('c', bytes('C2'));
    await step(2, 'b=B c=C2 d=D', 'a value changed in the window');
    eq(results.length, 2, 'nothing for a change outside the range or beyond the full window');
    ok(results[1].entries[0] === results[0].entries[0], 'an entry that did not change is the same array');
    await db.put('bb', bytes('new'));
    await step(3, 'b=B bb=new c=C2', 'a key entered; the last left');
    eq(live.reads, 1, 'still one read: the events said it all');
    await db.delete('b');
    await step(4, 'bb=new c=C2 d=D', 'a key left a full window: the next one came in');
    eq(live.reads, 2, 'a second read, for the key after the window');
    await db.write(db.batch().put('c', bytes('C3')).delete('zz').put('bc', bytes('BC')));
    await step(5, 'bb=new bc=BC c=C3', 'a batch: one result');
    await db.deleteRange('bb', 'c');
    await step(6, 'c=C3 d=D e=E', 'a range delete');
    for (let i = 1; i < results.length; i++) ok(results[i].seq > results[i - 1].seq, `sequence numbers rise: ${results.map((r) => r.seq)}`);
    eq(results.at(-1).seq, await db.latestSequence(), 'the last result is at the latest write');
    eq(live.current, results.at(-1), 'current is the last result');
    sub.unsubscribe();
    await db.put('c', bytes('after'));
    await sleep(20);
    eq(results.length, 6, 'nothing after unsubscribe');
    live.close();
  }),

  scenario('live(): reversed, keys only, a transaction, an ingest into the window; for await, and leaving it stops the query', async (t) => {
    const db = await t.open();
    await db.put('a', bytes('1'));
    await db.put('m', bytes('2'));
    const seen = [];
    const stepDone = [];
    const it = db.live({ reverse: true, limit: 2, values: false })[Symbol.asyncIterator]();
    const next = async () => {
      const r = await it.next();
      seen.push(shown(r.value));
      return r.value;
    };
    eq(shown(await next()), 'm a', 'the last two keys, descending');
    await db.transaction((tx) => {
      tx.put('z', bytes('3'));
      tx.put('b', bytes('4'));
    });
    eq(shown(await next()), 'z m', 'a transaction: one result');
    await db.ingest([
      ['n', bytes('5')],
      ['y', bytes('6')],
    ]);
    eq(shown(await next()), 'z y', 'an ingest into the window: read again');
    stepDone.push(true);
    await it.return();
    eq(seen.length, 3, 'three results');
  }),

  scenario("liveGet(): a key's value now and at each change; values decoded by the handle's encoding", async (t) => {
    const db = await t.open({ valueEncoding: 'utf8' });
    const values = [];
    const g = db.liveGet('k');
    const sub = g.subscribe({ next: (r) => values.push(r.value) });
    await until(() => values.length >= 1, 'the first read');
    eq(values, [undefined], 'none yet');
    await db.put('k', 'one');
    await db.put('k0', 'another key');
    await db.put('k', 'two');
    await db.delete('k');
    await until(() => values.length >= 4, `4 results, got ${JSON.stringify(values)}`);
    eq(values, [undefined, 'one', 'two', undefined], 'each change of k, and no other key');
    sub.unsubscribe();
    // Subscribed again, it reads afresh; a subscriber joining a running query gets the current result at once.
    await db.put('k', 'three');
    const again = [];
    const s2 = g.subscribe((r) => again.push(r.value));
    await until(() => again.length >= 1, 'the new read');
    eq(again, ['three'], 'read afresh');
    const late = [];
    const s3 = g.subscribe((r) => late.push(r.value));
    eq(late, ['three'], 'at once, within subscribe');
    s2.unsubscribe();
    s3.unsubscribe();
    g.close();
  }),
];
