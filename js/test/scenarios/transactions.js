// Optimistic transactions: a snapshot with the transaction's own writes on
// top in every read, all or nothing at commit, Conflict when something it
// tracked was written meanwhile, transaction(fn) with retries, update(),
// and large transactions spilled into files of their own. (Across
// sublevels: levels.js. The worker's `using`: js/test/transactions.test.ts.)
import { codeOf, eq, fails, ok } from './check.js';
import { bytes, collect, key, scenario, sleep, text, textEntries } from './scenario.js';

export default [
  scenario('a transaction reads its snapshot with its own writes on top in get, multiGet and iterators both ways, and commits all or nothing', async (t) => {
    const db = await t.open({ mergeOperator: 'append' });
    await db.put('a', bytes('old'));
    await db.put('gone', bytes('x'));
    await db.put('log', bytes('1'));
    await db.put('r/0', bytes('in range'));
    const tx = db.begin();
    await db.put('late', bytes('after the snapshot'));
    eq(await tx.get('late'), undefined, 'a key written after the snapshot');
    tx.put('a', bytes('mine'));
    tx.delete('gone');
    tx.deleteRange('r/', 'r0');
    tx.put('r/1', bytes('after the range delete'));
    tx.merge('log', bytes('2'));
    tx.merge('new', bytes('n'));
    eq(
      [text(await tx.get('a')), text(await tx.get('log')), await tx.get('gone'), text(await tx.get('r/1'))],
      ['mine', '12', undefined, 'after the range delete'],
      'gets',
    );
    eq(
      (await tx.multiGet(['a', 'gone', 'late', 'log', 'new', 'r/0', 'r/1', 'nothing'])).map(text),
      ['mine', undefined, undefined, '12', 'n', undefined, 'after the range delete', undefined],
      'multiGet',
    );
    const view = [
      ['a', 'mine'],
      ['log', '12'],
      ['new', 'n'],
      ['r/1', 'after the range delete'],
    ];
    eq(await textEntries(tx.iterator()), view, 'a scan');
    eq(await textEntries(tx.iterator({ reverse: true })), [...view].reverse(), 'a scan in reverse');
    eq(await textEntries(tx.iterator({ gt: 'a', lte: 'new' })), view.slice(1, 3), 'a scan of (a, new]');
    eq(await textEntries(tx.iterator({ gte: 'b', reverse: true, batchSize: 1 })), view.slice(1).reverse(), 'a scan from b in reverse, one at a time');
    const snap = await db.snapshot();
    await fails(() => collect(tx.iterator({ snapshot: snap })), 'InvalidArgument');
    await snap.release();
    eq(text(await db.get('a')), 'old', 'outside, before the commit');
    await sleep(5); // it stays open across awaits
    await tx.commit();
    eq(tx.ended, true, 'ended after commit()');
    eq(
      [text(await db.get('a')), await db.get('gone'), text(await db.get('log')), text(await db.get('r/1')), await db.get('r/0')],
      ['mine', undefined, '12', 'after the range delete', undefined],
      'committed',
    );
    for (const use of [() => tx.put('b', bytes('1')), () => tx.get('a'), () => collect(tx.iterator()), () => tx.commit()]) await fails(use, 'Released');
  }),

  scenario('a transaction fails with Conflict, writing nothing, when a key or range it tracked was written after its snapshot', async (t) => {
    const db = await t.open({ mergeOperator: 'u64add' });
    const { u64, readU64 } = t.lib;
    await db.put('counter', u64(0));
    const a = db.begin();
    const b = db.begin();
    a.put('counter', u64(readU64(await a.getForUpdate('counter')) + 1n));
    b.put('counter', u64(readU64(await b.getForUpdate('counter')) + 1n));
    b.put('other', bytes('b'));
    await a.commit();
    const e = await fails(() => b.commit(), 'Conflict');
    ok(e.message.includes('counter"'), `the message names the key: ${e.message}`);
    eq(b.ended, true, 'ended after a Conflict');
    eq(readU64(await db.get('counter')), 1n, 'the counter');
    eq(await db.get('other'), undefined, 'the other write of the failed commit');
    // A merge by someone else is a write too.
    const m = db.begin();
    await m.getForUpdate('counter');
    await db.merge('counter', u64(5));
    m.put('counter', u64(0));
    await fails(() => m.commit(), 'Conflict');
    eq(readU64(await db.get('counter')), 6n, 'the counter after a merge');
    // A write to a key not tracked does not conflict; one into a tracked range does.
    const c = db.begin();
    c.deleteRange('k/', 'k0');
    await db.put('elsewhere', bytes('1'));
    await c.commit();
    const d = db.begin();
    d.deleteRange('k/', 'k0');
    await db.put('k/5', bytes('1'));
    await fails(() => d.commit(), 'Conflict');
    // Plain reads track nothing.
    const r = db.begin();
    await r.get('counter');
    await r.multiGet(['counter']);
    await collect(r.iterator());
    await db.put('counter', u64(1));
    r.put('unrelated', bytes('1'));
    await r.commit();
    eq(text(await db.get('unrelated')), '1', 'a commit after plain reads of a key written since');
  }),

  scenario('transaction(fn) awaits fn, commits, runs it again on a Conflict, and writes nothing when fn throws or aborts', async (t) => {
    const db = await t.open();
    await db.put('n', bytes('0'));
    let runs = 0;
    const got = await db.transaction(async (tx) => {
      runs++;
      const n = Number(text(await tx.getForUpdate('n')));
      await sleep(2); // anything awaited: a fetch, a timer
      if (runs === 1) await db.put('n', bytes('10')); // someone else, meanwhile
      tx.put('n', bytes(String(n + 1)));
      return n + 1;
    });
    eq([runs, got, text(await db.get('n'))], [2, 11, '11'], 'runs, result and value');
    const thrown = await db
      .transaction(async (tx) => {
        tx.put('never', bytes('1'));
        await sleep(0);
        throw new Error('app error');
      })
      .catch((e) => e);
    eq(thrown.message, 'app error', "fn's error");
    eq(await db.get('never'), undefined, 'a write of a transaction whose fn threw');
    const aborted = await db.transaction((tx) => {
      tx.put('never', bytes('1'));
      tx.abort();
      return 'aborted';
    });
    eq([aborted, await db.get('never')], ['aborted', undefined], 'fn that aborted: its result, and its write');
    // Always conflicting: Conflict after the retries, saying how many tries.
    let tries = 0;
    const e = await fails(
      () =>
        db.transaction(
          async (tx) => {
            tries++;
            await tx.getForUpdate('n');
            await db.put('n', bytes('x'));
            tx.put('n', bytes('y'));
          },
          { retries: 3, backoff: 4, maxBackoff: 8 },
        ),
      'Conflict',
      /gave up after 4 tries/,
    );
    ok(e !== undefined, 'a Conflict');
    eq(tries, 4, 'tries');
    await fails(() => db.transaction(() => {}, { retries: -1 }), 'InvalidArgument');
    await fails(() => db.transaction('not a function'), 'InvalidArgument');
  }),

  scenario('update(): concurrent read-modify-writes across awaits lose no increment; null deletes, undefined leaves the value', async (t) => {
    const db = await t.open();
    const N = 30;
    const bump = async (i) => {
      await sleep(i % 3);
      return db.update('hits', (v) => bytes(String(Number(text(v) ?? '0') + 1)), { retries: 1000, backoff: 0 });
    };
    // Transactions that await between their read and their write, among the updates.
    const slow = () =>
      db.transaction(
        async (tx) => {
          const n = Number(text(await tx.getForUpdate('hits')) ?? '0');
          await sleep(1);
          tx.put('hits', bytes(String(n + 1)));
        },
        { retries: 1000, backoff: 1 },
      );
    await Promise.all([...Array.from({ length: N }, (_, i) => bump(i)), ...Array.from({ length: 8 }, slow)]);
    eq(text(await db.get('hits')), String(N + 8), 'the count');
    eq(text(await db.update('hits', () => undefined)), String(N + 8), 'update() to undefined');
    eq(await db.update('hits', () => null), undefined, 'update() to null');
    eq(await db.get('hits'), undefined, 'deleted by update()');
    await fails(() => db.update('k', () => 'text'), 'InvalidArgument');
    await fails(() => db.update('k', async () => bytes('1')), 'InvalidArgument');
  }),

  scenario('a transaction ends with abort(), and is then refused with Released; one open when its database closes cannot commit', async (t) => {
    const db = await t.open();
    const tx = db.begin();
    tx.put('a', bytes('1'));
    tx.abort();
    tx.abort(); // twice does nothing
    eq(tx.ended, true, 'ended after abort()');
    await fails(() => tx.get('a'), 'Released');
    eq(await db.get('a'), undefined, 'the write of an aborted transaction');
    const open = db.begin();
    open.put('b', bytes('1'));
    await db.close();
    const code = await codeOf(() => open.commit());
    ok(['Closed', 'Released'].includes(code), `Closed or Released, got ${code}`);
  }),

  scenario('a transaction past transactionSpillBytes spills into files of its own, seen only by it, and publishes them at its commit', async (t) => {
    const db = await t.open({ transactionSpillBytes: 8192 });
    await db.put(key(1), bytes('before'));
    const value = 'v'.repeat(100);
    const load = async (tx) => {
      for (let i = 0; i < 2000; i++) {
        tx.put(key(i), bytes(value));
        if (i % 500 === 0) await tx.get(key(0)); // an await: the spill runs between calls
      }
      tx.deleteRange(key(100), key(200));
    };
    const aborted = db.begin();
    await load(aborted);
    aborted.abort();
    eq([text(await db.get(key(1))), await db.get(key(1500))], ['before', undefined], 'after an abort');
    const tx = db.begin();
    await load(tx);
    // Only the transaction sees its spilled writes.
    eq([text(await tx.get(key(1500))), await tx.get(key(150))], [value, undefined], 'inside');
    eq([await db.get(key(1500)), await db.count()], [undefined, 1], 'outside');
    const spills = (await db.statistics()).tickers['silt.transaction.spills'];
    ok(spills > 20, `over 20 spills, got ${spills}`);
    eq((await tx.multiGet([key(0), key(150), key(1999)])).map(text), [value, undefined, value], 'multiGet inside');
    eq(
      (await textEntries(tx.iterator({ gte: key(98), lt: key(202) }))).map(([k]) => k),
      [key(98), key(99), key(200), key(201)],
      'a scan inside, over the range deleted',
    );
    await tx.commit();
    eq((await db.statistics()).tickers['silt.transaction.published.from.files'], 1, 'publications from files');
    eq([await db.count(), text(await db.get(key(1))), await db.get(key(150))], [1900, value, undefined], 'committed');
  }),
];
