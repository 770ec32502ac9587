// Optimistic transactions and merges of the worker API (src/local/transaction.ts,
// src/core/u64.ts) on an in-memory database: own writes in every read API,
// conflicts, all or nothing, retries across awaits, update, merge.
import { describe, expect, it } from 'vitest';
import { readU64, SiltError, u64, WriteBatch, type Entry, type EntryIterator } from '../src/index.js';
import { bytes, caught, fresh, rejected, text } from './helpers.js';

const entries = (it: EntryIterator): [string, string][] => {
  const out: [string, string][] = [];
  for (const [k, v] of it as Iterable<Entry>) out.push([text(k)!, text(v)!]);
  it.release();
  return out;
};

describe('transactions', () => {
  it('read their snapshot with their own writes on top in get, multiGet and iterators both ways, and commit all or nothing', async () => {
    const db = await fresh({ mergeOperator: 'append' });
    db.put('a', bytes('old'));
    db.put('gone', bytes('x'));
    db.put('log', bytes('1'));
    db.put('r/0', bytes('in range'));
    const tx = db.begin();
    db.put('late', bytes('after the snapshot'));
    expect(tx.get('late')).toBeUndefined();
    tx.put('a', bytes('mine'));
    tx.delete('gone');
    tx.deleteRange('r/', 'r0');
    tx.put('r/1', bytes('after the range delete'));
    tx.merge('log', bytes('2'));
    tx.merge('new', bytes('n'));
    expect(text(tx.get('a'))).toBe('mine');
    expect(text(tx.get('log'))).toBe('12');
    expect(tx.get('gone')).toBeUndefined();
    expect(text(tx.get('r/1'))).toBe('after the range delete');
    expect(tx.multiGet(['a', 'gone', 'late', 'log', 'new', 'r/0', 'r/1', 'nothing']).map(text)).toEqual([
      'mine',
      undefined,
      undefined,
      '12',
      'n',
      undefined,
      'after the range delete',
      undefined,
    ]);
    const view: [string, string][] = [
      ['a', 'mine'],
      ['log', '12'],
      ['new', 'n'],
      ['r/1', 'after the range delete'],
    ];
    expect(entries(tx.iterator())).toEqual(view);
    expect(entries(tx.iterator({ reverse: true }))).toEqual([...view].reverse());
    expect(entries(tx.iterator({ gt: 'a', lte: 'new' }))).toEqual(view.slice(1, 3));
    expect(entries(tx.iterator({ gte: 'b', reverse: true, batchSize: 1 }))).toEqual(view.slice(1).reverse());
    expect(caught(() => tx.iterator({ snapshot: db.snapshot() } as object)).code).toBe('InvalidArgument');
    // Nothing outside yet.
    expect(text(db.get('a'))).toBe('old');
    // It stays open across awaits.
    await new Promise((r) => setTimeout(r, 5));
    tx.commit();
    expect(tx.ended).toBe(true);
    expect(text(db.get('a'))).toBe('mine');
    expect(db.get('gone')).toBeUndefined();
    expect(text(db.get('log'))).toBe('12');
    expect(text(db.get('r/1'))).toBe('after the range delete');
    expect(db.get('r/0')).toBeUndefined();
    for (const use of [() => tx.put('b', bytes('1')), () => tx.get('a'), () => tx.iterator(), () => tx.commit()]) {
      expect(caught(use).code).toBe('Released');
    }
  });

  it('spill past transactionSpillBytes into files of their own, seen only by them, and publish them at commit', async () => {
    const db = await fresh({ transactionSpillBytes: 8192 });
    db.put('k0001', bytes('before'));
    const key = (i: number) => `k${String(i).padStart(4, '0')}`;
    const value = 'v'.repeat(100);
    const load = async (tx: ReturnType<typeof db.begin>) => {
      for (let i = 0; i < 2000; i++) {
        tx.put(key(i), bytes(value));
        if (i % 500 === 0) await new Promise((r) => setTimeout(r, 0));
      }
      tx.deleteRange(key(100), key(200));
    };
    const aborted = db.begin();
    await load(aborted);
    aborted.abort();
    expect(text(db.get('k0001'))).toBe('before');
    expect(db.get(key(1500))).toBeUndefined();
    const tx = db.begin();
    await load(tx);
    const spills = db.statistics().tickers['silt.transaction.spills'];
    expect(spills).toBeGreaterThan(20);
    // Only the transaction sees its spilled writes.
    expect(db.get(key(1500))).toBeUndefined();
    expect(db.count()).toBe(1);
    expect(text(tx.get(key(1500)))).toBe(value);
    expect(tx.get(key(150))).toBeUndefined();
    expect(tx.multiGet([key(0), key(150), key(1999)]).map(text)).toEqual([value, undefined, value]);
    expect(entries(tx.iterator({ gte: key(98), lt: key(202) })).map(([k]) => k)).toEqual([key(98), key(99), key(200), key(201)]);
    tx.commit();
    expect(db.statistics().tickers['silt.transaction.published.from.files']).toBe(1);
    expect(db.count()).toBe(1900);
    expect(text(db.get(key(1)))).toBe(value);
    expect(db.get(key(150))).toBeUndefined();
  });

  it('fail with Conflict, writing nothing, when a tracked key or range was written after the snapshot', async () => {
    const db = await fresh({ mergeOperator: 'u64add' });
    db.put('counter', u64(0));
    const a = db.begin();
    const b = db.begin();
    a.put('counter', u64(readU64(a.getForUpdate('counter')!) + 1n));
    b.put('counter', u64(readU64(b.getForUpdate('counter')!) + 1n));
    b.put('other', bytes('b'));
    a.commit();
    const e = caught(() => b.commit());
    expect(e.code).toBe('Conflict');
    expect(e.message).toContain('"counter"');
    expect(b.ended).toBe(true);
    expect(readU64(db.get('counter')!)).toBe(1n);
    expect(db.get('other')).toBeUndefined();
    // A merge by someone else is a write too.
    const m = db.begin();
    m.getForUpdate('counter');
    db.merge('counter', u64(5));
    m.put('counter', u64(0));
    expect(caught(() => m.commit()).code).toBe('Conflict');
    expect(readU64(db.get('counter')!)).toBe(6n);
    // A write to an untracked key does not conflict; a range does when written into.
    const c = db.begin();
    c.deleteRange('k/', 'k0');
    db.put('elsewhere', bytes('1'));
    c.commit();
    const d = db.begin();
    d.deleteRange('k/', 'k0');
    db.put('k/5', bytes('1'));
    expect(caught(() => d.commit()).code).toBe('Conflict');
    // Plain reads track nothing.
    const r = db.begin();
    r.get('counter');
    r.multiGet(['counter']);
    r.iterator().release();
    db.put('counter', u64(1));
    r.put('unrelated', bytes('1'));
    r.commit();
  });

  it('transaction(fn) awaits fn, commits, retries on conflict with backoff, and aborts on a throw', async () => {
    const db = await fresh();
    db.put('n', bytes('0'));
    let runs = 0;
    const got = await db.transaction(async (tx) => {
      runs++;
      const n = Number(text(tx.getForUpdate('n')));
      await new Promise((r) => setTimeout(r, 2)); // anything awaited: a fetch, a timer
      if (runs === 1) db.put('n', bytes('10')); // someone else, meanwhile
      tx.put('n', bytes(String(n + 1)));
      return n + 1;
    });
    expect(runs).toBe(2);
    expect(got).toBe(11);
    expect(text(db.get('n'))).toBe('11');
    const thrown = await db
      .transaction(async (tx) => {
        tx.put('never', bytes('1'));
        await Promise.resolve();
        throw new Error('app error');
      })
      .catch((e: unknown) => e);
    expect((thrown as Error).message).toBe('app error');
    expect(db.get('never')).toBeUndefined();
    // abort() inside: nothing written, fn's result returned.
    expect(
      await db.transaction((tx) => {
        tx.put('never', bytes('1'));
        tx.abort();
        return 'aborted';
      }),
    ).toBe('aborted');
    expect(db.get('never')).toBeUndefined();
    // Always conflicting: Conflict after the retries, saying how many tries.
    let tries = 0;
    const started = Date.now();
    const e = await rejected(
      db.transaction(
        (tx) => {
          tries++;
          tx.getForUpdate('n');
          db.put('n', bytes('x'));
          tx.put('n', bytes('y'));
        },
        { retries: 3, backoff: 4, maxBackoff: 8 },
      ),
    );
    expect(e.code).toBe('Conflict');
    expect(e.message).toContain('gave up after 4 tries');
    expect(tries).toBe(4);
    // Waits of at least 2, 4 and 4 ms (half of 4, 8, 8); timers may fire a
    // millisecond early by Date.now().
    expect(Date.now() - started).toBeGreaterThanOrEqual(7);
    expect((await rejected(db.transaction(() => {}, { retries: -1 }))).code).toBe('InvalidArgument');
    expect((await rejected(db.transaction('not a function' as unknown as () => void))).code).toBe('InvalidArgument');
  });

  it('update: concurrent read-modify-writes across awaits lose no increment', async () => {
    const db = await fresh();
    const N = 40;
    const bump = async (i: number) => {
      await new Promise((r) => setTimeout(r, i % 3));
      return db.update('hits', (v) => bytes(String(Number(text(v) ?? '0') + 1)), { retries: 1000, backoff: 0 });
    };
    // Each update runs alone (its function is synchronous); interleave them
    // with transactions that await between the read and the write.
    const slow = async () =>
      db.transaction(
        async (tx) => {
          const n = Number(text(tx.getForUpdate('hits')) ?? '0');
          await new Promise((r) => setTimeout(r, 1));
          tx.put('hits', bytes(String(n + 1)));
        },
        { retries: 1000, backoff: 1 },
      );
    await Promise.all([...Array.from({ length: N }, (_, i) => bump(i)), ...Array.from({ length: 10 }, slow)]);
    expect(text(db.get('hits'))).toBe(String(N + 10));
    // null deletes, undefined leaves the value.
    expect(text(await db.update('hits', () => undefined))).toBe(String(N + 10));
    expect(await db.update('hits', () => null)).toBeUndefined();
    expect(db.get('hits')).toBeUndefined();
    expect((await rejected(db.update('k', (() => 'text') as unknown as () => Uint8Array))).code).toBe('InvalidArgument');
    expect((await rejected(db.update('k', (async () => bytes('1')) as unknown as () => Uint8Array))).code).toBe('InvalidArgument');
  });

  it('end with the database: abort, using, and close', async () => {
    const db = await fresh();
    {
      using tx = db.begin();
      tx.put('scoped', bytes('1'));
    }
    expect(db.get('scoped')).toBeUndefined();
    const tx = db.begin();
    tx.abort();
    tx.abort();
    expect(caught(() => tx.get('a')).code).toBe('Released');
    const open = db.begin();
    db.close();
    const e = caught(() => open.commit());
    expect(e).toBeInstanceOf(SiltError);
    expect(['Closed', 'Released']).toContain(e.code);
  });
});

describe('merge', () => {
  it('u64add counts without reading, in puts, batches and transactions; u64 and readU64 round-trip', async () => {
    const db = await fresh({ mergeOperator: 'u64add' });
    for (let i = 0; i < 10; i++) db.merge('c', u64(1));
    db.merge('c', u64(-3));
    expect(readU64(db.get('c')!)).toBe(7n);
    db.write(new WriteBatch().merge('c', u64(3)).merge('d', u64(2n ** 64n - 1n)));
    expect(readU64(db.get('c')!)).toBe(10n);
    expect(readU64(db.get('d')!)).toBe(2n ** 64n - 1n);
    db.flush();
    db.merge('c', u64(5));
    expect(readU64(db.get('c')!)).toBe(15n);
    // A bad operand is refused when written, naming the operator.
    const e = caught(() => db.merge('c', bytes('abc')));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('u64add');
    expect(caught(() => db.write(new WriteBatch().put('x', bytes('1')).merge('c', bytes('abc')))).code).toBe('InvalidArgument');
    expect(db.get('x')).toBeUndefined();
    expect(caught(() => u64(1.5)).code).toBe('InvalidArgument');
    expect(caught(() => u64(2n ** 64n)).code).toBe('InvalidArgument');
    expect(caught(() => readU64(bytes('abc'))).code).toBe('InvalidArgument');
    expect(readU64(u64(-1))).toBe(2n ** 64n - 1n);
  });

  it('append appends; without a merge operator merge is refused; a bad option is refused', async () => {
    const db = await fresh({ mergeOperator: 'append' });
    db.put('log', bytes('a'));
    db.merge('log', bytes('b'));
    db.write(new WriteBatch().merge('log', bytes('c')).merge('log', bytes('')));
    expect(text(db.get('log'))).toBe('abc');
    const plain = await fresh();
    const e = caught(() => plain.merge('log', bytes('x')));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toContain('merge_operator');
    expect((await rejected(fresh({ mergeOperator: 'sum' as 'append' }))).code).toBe('InvalidArgument');
  });
});
