// watch(): the changes committed to a range of keys, in commit order, the
// same events from a worker's `open()` (its own feed: src/local/change-feed.ts)
// and through `connect()` (the leader's change records); issue 39, item 1.
// connect()'s failover, frozen pages and leader changes are tested on their
// own (js/test/tabs-watch.test.ts).
import { eq, ok } from './check.js';
import { bytes, scenario, sleep, text } from './scenario.js';

/** Waits until `f()` is true (a watchdog: 2 s of the clock the database runs on). */
async function until(f, what) {
  for (let i = 0; i < 400 && !f(); i++) await sleep(5);
  ok(f(), `still waiting for ${what}`);
}

/** An event as text: kind, then its key (and a range's end). */
function shown(e) {
  if (e.kind === 'gap') return 'gap';
  return [e.kind, text(e.key), ...(e.end === undefined ? [] : [text(e.end)])].join(' ');
}

export default [
  scenario(
    'each committed change in the range, in order, with its kind: puts, deletes, merges, batches, range deletes, clears, transactions, ingests',
    async (t) => {
      const db = await t.open({ mergeOperator: 'u64add' });
      const events = [];
      const w = await db.watch({ gte: 'a', lt: 'm' }, (e) => events.push(e));
      await db.put('b', bytes('1'));
      await db.put('z', bytes('out of the range'));
      await db.delete('b');
      await db.merge('c', t.lib.u64(1));
      await db.write(db.batch().put('d', bytes('2')).put('x', bytes('3')).delete('e'));
      await db.deleteRange('f', 'h');
      await db.transaction((tx) => {
        tx.put('i', bytes('4'));
        tx.delete('j');
      });
      await db.ingest([
        ['k', bytes('5')],
        ['l', bytes('6')],
      ]);
      await db.clear({ gte: 'a', lt: 'b' });
      const want = ['put b', 'delete b', 'merge c', 'put d', 'delete e', 'deleteRange f h', 'put i', 'delete j', 'ingest k l\0', 'deleteRange a b'];
      await until(() => events.length >= want.length, `${want.length} events, got ${events.map(shown)}`);
      eq(events.map(shown), want, 'the events');
      for (let i = 1; i < events.length; i++) ok(events[i].seq > events[i - 1].seq, `sequence numbers rise: ${events.map((e) => e.seq)}`);
      ok(events.at(-1).seq <= (await db.latestSequence()), 'no event past the latest sequence number');
      // No event comes inside the write's call: a callback that writes runs after it.
      const before = events.length;
      await db.put('c', bytes('7'));
      await until(() => events.length > before, 'the put of c');
      eq(shown(events.at(-1)), 'put c', 'the last event');
      w.close();
      await w.ended;
      await db.put('d', bytes('8'));
      await sleep(20);
      eq(events.length, before + 1, 'nothing after close()');
    },
  ),

  scenario('since: the changes after a sequence number come first, then the new ones; for await, and leaving it closes the watch', async (t) => {
    const db = await t.open();
    // (A worker's history starts at its first watch; a connect() leader's at its start.)
    const first = await db.watch();
    first.close();
    const s0 = await db.latestSequence();
    await db.put('a', bytes('1'));
    await db.put('b', bytes('2'));
    const s1 = await db.latestSequence();
    await db.put('c', bytes('3'));
    const events = [];
    const w = await db.watch({ since: s1 }, (e) => events.push(e));
    await until(() => events.length >= 1, 'the change after since');
    await db.put('d', bytes('4'));
    await until(() => events.length >= 2, 'the new change');
    eq(events.map(shown), ['put c', 'put d'], 'after s1');
    w.close();
    const got = [];
    for await (const e of await db.watch({ since: s0, gte: 'b' })) {
      got.push(shown(e));
      if (got.length === 3) break;
    }
    eq(got, ['put b', 'put c', 'put d'], 'after s0, from b, with for await');
  }),

  scenario('values: true: each change of a key carries its value once its write committed; a watch of keys gets none', async (t) => {
    const db = await t.open({ mergeOperator: 'u64add' });
    // Made before any watch asked for values: a values watch from before then has them as gaps.
    (await db.watch()).close();
    const s0 = await db.latestSequence();
    await db.put('a', bytes('before'));
    const withValues = [];
    const keysOnly = [];
    const w = await db.watch({ gte: 'a', lt: 'm', values: true }, (e) => withValues.push(e));
    const k = await db.watch({ gte: 'a', lt: 'm' }, (e) => keysOnly.push(e));
    await db.put('b', bytes('1'));
    await db.merge('c', t.lib.u64(2));
    await db.merge('c', t.lib.u64(3));
    await db.delete('b');
    // One batch updates d twice: both changes carry the value after the batch.
    await db.write(db.batch().put('d', bytes('x')).put('d', bytes('y')).put('z', bytes('out')));
    await db.transaction((tx) => {
      tx.put('e', bytes('in a transaction'));
    });
    await db.deleteRange('a', 'b');
    const want = ['put b 1', 'merge c 2', 'merge c 5', 'delete b -', 'put d y', 'put d y', 'put e in a transaction', 'deleteRange a b'];
    const shownWithValue = (e) => {
      if (e.kind === 'gap' || e.kind === 'deleteRange' || e.kind === 'ingest') return shown(e);
      ok('value' in e, `a value with ${shown(e)}`);
      const v = e.value === undefined ? '-' : e.kind === 'merge' ? String(t.lib.readU64(e.value)) : text(e.value);
      return `${shown(e)} ${v}`;
    };
    await until(() => withValues.length >= want.length, `${want.length} events, got ${withValues.map(shownWithValue)}`);
    eq(withValues.map(shownWithValue), want, 'the events with values');
    await until(() => keysOnly.length >= want.length, 'the keys-only events');
    ok(
      keysOnly.every((e) => !('value' in e)),
      'a watch of keys gets no values',
    );
    w.close();
    k.close();
    // Changes from before the first values watch: the value was not kept, a gap.
    const old = [];
    const again = await db.watch({ since: s0, lt: 'b', values: true }, (e) => old.push(e));
    await until(() => old.length >= 2, 'the catch-up');
    eq(
      old.slice(0, 2).map((e) => (e.kind === 'gap' ? `gap ${e.from}-${e.to}` : shown(e))),
      [`gap ${s0 + 1}-${s0 + 1}`, 'deleteRange a b'],
      'from before values were asked: a gap',
    );
    again.close();
  }),

  scenario(
    'an import is one gap over its sequence numbers',
    async (t) => {
      const src = await t.open();
      await src.put('k', bytes('v'));
      const exported = new Uint8Array(await new Response(await src.export()).arrayBuffer());
      const db = await t.open();
      const events = [];
      const w = await db.watch({}, (e) => events.push(e));
      await db.import(exported);
      await until(() => events.length >= 1, 'the gap');
      eq(events.map(shown), ['gap'], 'the events');
      ok(events[0].to >= events[0].from && events[0].to <= (await db.latestSequence()), `the gap's numbers: ${JSON.stringify(events[0])}`);
      w.close();
    },
    { rootOnly: true },
  ),
];
