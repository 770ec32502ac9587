// What a worker's transactions have beyond the scenarios both APIs share
// (scenarios/transactions.js, merges.js): synchronous calls (commit()
// returns, and throws, at once), `using`, and the waits of
// transaction(fn)'s backoff, on an in-memory database.
import { describe, expect, it } from 'vitest';
import { SiltError } from '../src/index.js';
import { bytes, caught, fresh, rejected, text } from './helpers.js';

describe('transactions in a worker', () => {
  it('are synchronous: reads return values, commit() returns or throws Conflict at once', async () => {
    const db = await fresh();
    db.put('n', bytes('1'));
    const a = db.begin();
    const b = db.begin();
    expect(text(a.getForUpdate('n'))).toBe('1');
    b.getForUpdate('n');
    a.put('n', bytes('2'));
    b.put('n', bytes('3'));
    a.commit();
    expect(text(db.get('n'))).toBe('2');
    expect(caught(() => b.commit()).code).toBe('Conflict');
  });

  it('`using` aborts a transaction at the end of its scope; one open when the database closes cannot commit', async () => {
    const db = await fresh();
    {
      using tx = db.begin();
      tx.put('scoped', bytes('1'));
    }
    expect(db.get('scoped')).toBeUndefined();
    const open = db.begin();
    db.close();
    const e = caught(() => open.commit());
    expect(e).toBeInstanceOf(SiltError);
    expect(['Closed', 'Released']).toContain(e.code);
  });

  it('transaction(fn) waits between tries: backoff, doubled up to maxBackoff, with jitter of at most half', async () => {
    const db = await fresh();
    db.put('n', bytes('0'));
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
    expect(tries).toBe(4);
    // Waits of at least 2, 4 and 4 ms (half of 4, 8, 8); timers may fire a
    // millisecond early by Date.now().
    expect(Date.now() - started).toBeGreaterThanOrEqual(7);
  });
});
