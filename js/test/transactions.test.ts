// Optimistic transactions of the worker API (src/transaction.ts) on an
// in-memory database: own writes, conflicts, all or nothing, across awaits.
import { describe, expect, it } from 'vitest';
import { SiltError } from '../src/index.js';
import { bytes, caught, fresh, text } from './helpers.js';

describe('transactions', () => {
  it('read their snapshot with their own writes on top, and commit all or nothing', async () => {
    const db = await fresh();
    db.put('a', bytes('old'));
    db.put('gone', bytes('x'));
    const tx = db.transaction();
    db.put('late', bytes('after the snapshot'));
    expect(tx.get('late')).toBeUndefined();
    tx.put('a', bytes('mine'));
    tx.delete('gone');
    tx.deleteRange('r/', 'r0');
    tx.put('r/1', bytes('after the range delete'));
    expect(text(tx.get('a'))).toBe('mine');
    expect(tx.get('gone')).toBeUndefined();
    expect(text(tx.get('r/1'))).toBe('after the range delete');
    // Nothing outside yet.
    expect(text(db.getCopy('a'))).toBe('old');
    // It stays open across awaits.
    await new Promise((r) => setTimeout(r, 5));
    tx.commit();
    expect(tx.ended).toBe(true);
    expect(text(db.getCopy('a'))).toBe('mine');
    expect(db.getCopy('gone')).toBeUndefined();
    expect(text(db.getCopy('r/1'))).toBe('after the range delete');
    expect(caught(() => tx.put('b', bytes('1'))).code).toBe('Released');
  });

  it('fail with Busy, writing nothing, when a tracked key was written after the snapshot', async () => {
    const db = await fresh();
    db.put('counter', bytes('0'));
    const a = db.transaction();
    const b = db.transaction();
    a.put('counter', bytes(String(Number(text(a.getForUpdate('counter'))) + 1)));
    b.put('counter', bytes(String(Number(text(b.getForUpdate('counter'))) + 1)));
    b.put('other', bytes('b'));
    a.commit();
    const e = caught(() => b.commit());
    expect(e.code).toBe('Busy');
    expect(e.message).toContain('"counter"');
    expect(b.ended).toBe(true);
    expect(text(db.getCopy('counter'))).toBe('1');
    expect(db.getCopy('other')).toBeUndefined();
    // A write to an untracked key does not conflict; a range does when written into.
    const c = db.transaction();
    c.deleteRange('k/', 'k0');
    db.put('elsewhere', bytes('1'));
    c.commit();
    const d = db.transaction();
    d.deleteRange('k/', 'k0');
    db.put('k/5', bytes('1'));
    expect(caught(() => d.commit()).code).toBe('Busy');
  });

  it('transact retries on conflict, rolls back on a throw, and refuses async functions', async () => {
    const db = await fresh();
    db.put('n', bytes('0'));
    let runs = 0;
    const got = db.transact((tx) => {
      runs++;
      const n = Number(text(tx.getForUpdate('n')));
      if (runs === 1) db.put('n', bytes('10')); // someone else, mid-transaction
      tx.put('n', bytes(String(n + 1)));
      return n + 1;
    });
    expect(runs).toBe(2);
    expect(got).toBe(11);
    expect(text(db.getCopy('n'))).toBe('11');
    expect(() =>
      db.transact((tx) => {
        tx.put('never', bytes('1'));
        throw new Error('app error');
      }),
    ).toThrow('app error');
    expect(db.getCopy('never')).toBeUndefined();
    // Always conflicting: the last Busy after the retries.
    let tries = 0;
    const e = caught(() =>
      db.transact(
        (tx) => {
          tries++;
          tx.getForUpdate('n');
          db.put('n', bytes('x'));
          tx.put('n', bytes('y'));
        },
        { retries: 2 },
      ),
    );
    expect(e.code).toBe('Busy');
    expect(tries).toBe(3);
    expect(caught(() => db.transact((async () => {}) as unknown as () => void)).code).toBe('InvalidArgument');
    expect(caught(() => db.transact(() => {}, { retries: -1 })).code).toBe('InvalidArgument');
  });

  it('end with the database: rollback, using, and close', async () => {
    const db = await fresh();
    {
      using tx = db.transaction();
      tx.put('scoped', bytes('1'));
    }
    expect(db.getCopy('scoped')).toBeUndefined();
    const tx = db.transaction();
    tx.rollback();
    tx.rollback();
    const open = db.transaction();
    db.close();
    const e = caught(() => open.commit());
    expect(e).toBeInstanceOf(SiltError);
    expect(['Closed', 'Released']).toContain(e.code);
  });
});
