// The handle budget (issue 38): siltdb never keeps more OPFS sync access
// handles open in an origin than `handleBudget`, every database of every
// worker together, parked ones included. On the in-memory OPFS and Web
// Locks of fakes.ts, through the real wasm build; the same in Chromium in
// tests/e2e/handle-budget.spec.ts.
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { Database } from '../src/index.js';
import { openOn, type OpenOptions } from '../src/local/open.js';
import { HANDLES_PER_SLICE, RealmHandles, realmHandles } from '../src/opfs/handle-budget.js';
import { releaseAllParked } from '../src/opfs/parking.js';
import { TARGET_DECAY_MS } from '../src/opfs/pool.js';
import { FakeDirectory, FakeLocks } from './fakes.js';
import { bytes, rejected, text } from './helpers.js';

const opened: Database[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (!db.closed) db.close();
  releaseAllParked();
});

/** A fake origin whose open sync access handles are counted. */
function origin() {
  const root = new FakeDirectory();
  root.faults.handles = { open: 0, peak: 0 };
  return { root, locks: new FakeLocks(), handles: root.faults.handles };
}

async function openIn(o: ReturnType<typeof origin>, name: string, options: OpenOptions = {}) {
  const db = await openOn({ root: o.root, locks: o.locks }, name, options);
  opened.push(db);
  return db;
}

/** Puts and flushes `tables` times: as many table files (and pooled files for them). */
function fill(db: Database, tables: number, tag = 'v') {
  for (let t = 0; t < tables; t++) {
    for (let i = 0; i < 20; i++) db.put(`k${t}-${i}`, bytes(`${tag}${t}-${i}`));
    db.flush();
  }
}

describe('the budget, counted in slices of Web Locks', () => {
  test('slices are taken as handles are counted and let go when they are given back', async () => {
    const locks = new FakeLocks();
    const h = new RealmHandles(locks);
    await h.take(3, 128, 'a test');
    expect(h.covered).toBe(HANDLES_PER_SLICE);
    await h.take(HANDLES_PER_SLICE, 128, 'a test');
    expect(h.covered).toBe(2 * HANDLES_PER_SLICE);
    expect(h.held).toBe(3 + HANDLES_PER_SLICE);
    h.give(HANDLES_PER_SLICE);
    expect(h.covered).toBe(HANDLES_PER_SLICE);
    h.give(3);
    expect(h.covered).toBe(0);
    await new Promise((r) => setTimeout(r, 0)); // a lock is let go once its holder's promise settles
    expect(locks.isHeld('siltdb-handles:0')).toBe(false);
    expect(locks.isHeld('siltdb-handles:1')).toBe(false);
  });

  test('two workers of one origin share it: past it a take fails with PoolExhausted naming the budget, and works once the other gives back', async () => {
    const locks = new FakeLocks();
    const a = new RealmHandles(locks);
    const b = new RealmHandles(locks);
    await a.take(56, 64, 'worker a'); // 7 slices of 8
    await b.take(4, 64, 'worker b'); // the last slice
    const err = await rejected(b.take(HANDLES_PER_SLICE, 64, 'database "x"'));
    expect(err.code).toBe('PoolExhausted');
    expect(err.message).toContain('database "x" needs 8 more OPFS sync access handles');
    expect(err.message).toContain('budget of 64');
    expect(err.message).toContain('handleBudget');
    expect(b.held).toBe(4);
    a.give(56);
    await b.take(HANDLES_PER_SLICE, 64, 'database "x"');
    expect(b.held).toBe(12);
    expect(a.covered + b.covered).toBeLessThanOrEqual(64);
  });

  test('a take past the whole budget fails; the count is left as it was', async () => {
    const h = new RealmHandles(new FakeLocks());
    const err = await rejected(h.take(200, 128, 'opening database "big"'));
    expect(err.code).toBe('PoolExhausted');
    expect(err.message).toMatch(/opening database "big" needs 200 more/);
    expect(h.held).toBe(0);
    await h.take(1, 128, 'after');
    expect(h.held).toBe(1);
  });

  test('takes made together are served one at a time and never cover more than the budget', async () => {
    const h = new RealmHandles(new FakeLocks());
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => h.take(7, 32, 'a test')));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(4); // 28 of 32
    expect(h.held).toBe(28);
    expect(h.covered).toBe(32);
  });
});

describe('databases within the budget', () => {
  test('many databases with heavy pools never have more handles open than the budget, and an open past it says so', async () => {
    const o = origin();
    const budget = 64;
    const options: OpenOptions = { handleBudget: budget, poolReserve: 16, writeBufferSize: 64 * 1024 };
    const dbs: Database[] = [];
    let refused: Error | undefined;
    for (let i = 0; i < 8 && refused === undefined; i++) {
      try {
        const db = await openIn(o, `db${i}`, options);
        fill(db, 6, `db${i}-`);
        await db.idle();
        dbs.push(db);
      } catch (e) {
        refused = e as Error;
      }
      expect(o.handles.peak).toBeLessThanOrEqual(budget);
    }
    expect(dbs.length).toBeGreaterThanOrEqual(2);
    expect(refused).toBeDefined();
    expect((refused as { code?: string }).code).toBe('PoolExhausted');
    expect(refused!.message).toContain(`budget of ${budget}`);
    expect(o.handles.open).toBe(realmHandles(o.locks).held);
    // Every database still reads and writes; statistics say what they hold.
    for (const [i, db] of dbs.entries()) {
      expect(text(db.get('k3-7'))).toBe(`db${i}-3-7`);
      const s = db.statistics().handles!;
      expect(s.budget).toBe(budget);
      expect(s.worker).toBe(o.handles.open);
      expect(s.database).toBe(db.statistics().pool!.files);
    }
    // Closing one for good (not parked: another open wants its handles) makes room.
    const first = dbs.shift()!;
    first.close();
    const again = await openIn(o, 'late', options);
    again.put('x', bytes('y'));
    expect(o.handles.peak).toBeLessThanOrEqual(budget);
  });

  test('bursts of writes raise the pool only within the budget', async () => {
    const o = origin();
    const budget = 32;
    const db = await openIn(o, 'bursty', { handleBudget: budget, poolReserve: 8, writeBufferSize: 64 * 1024 });
    for (let round = 0; round < 30; round++) {
      fill(db, 3, `r${round}-`); // no await: the pool cannot grow meanwhile
      await new Promise((r) => setTimeout(r, 0)); // the keeper tops up, raising its target after a burst
      expect(o.handles.peak).toBeLessThanOrEqual(budget);
    }
    await db.idle();
    expect(text(db.get('k2-19'))).toBe('r29-2-19');
    expect(o.handles.peak).toBeLessThanOrEqual(budget);
    expect(o.handles.open).toBe(db.statistics().handles!.database);
  });

  test('a parked database lets go of its handles when another open needs them', async () => {
    const o = origin();
    const options: OpenOptions = { handleBudget: 32, poolReserve: 16 }; // two pools need 3 slices each: more than 4
    const a = await openOn({ root: o.root, locks: o.locks }, 'a', options, true); // parkable, as open() is
    a.put('k', bytes('a'));
    a.close(); // parked: its handles stay open for a quick reopen
    expect(o.handles.open).toBeGreaterThan(16);
    const b = await openIn(o, 'b', options); // needs more than is left: a lets go
    b.put('k', bytes('b'));
    expect(o.handles.peak).toBeLessThanOrEqual(32);
    b.close();
    releaseAllParked();
    expect(o.handles.open).toBe(0);
    const back = await openOn({ root: o.root, locks: o.locks }, 'a', options, true);
    opened.push(back);
    expect(text(back.get('k'))).toBe('a');
  });

  test('when the budget runs short, an open database gives back its free files past what a call needs, and goes on working', async () => {
    const o = origin();
    const options: OpenOptions = { handleBudget: 48, poolReserve: 24, writeBufferSize: 64 * 1024 };
    const a = await openIn(o, 'giver', options);
    a.put('k', bytes('a'));
    const before = a.statistics().handles!.database;
    expect(before).toBeGreaterThanOrEqual(24);
    // b needs more than the budget has left: a's free files past 4 go.
    const b = await openIn(o, 'taker', options);
    b.put('k', bytes('b'));
    expect(o.handles.peak).toBeLessThanOrEqual(48);
    expect(a.statistics().handles!.database).toBeLessThan(before);
    expect(a.statistics().pool!.free).toBeLessThanOrEqual(4);
    // a still writes: its pool grows again within what the budget gives.
    for (let i = 0; i < 3; i++) {
      a.put(`more${i}`, bytes('x'));
      a.flush();
      await new Promise((r) => setTimeout(r, 0));
    }
    expect(text(a.get('more2'))).toBe('x');
    expect(text(b.get('k'))).toBe('b');
    expect(o.handles.peak).toBeLessThanOrEqual(48);
  });

  test('a pool raised for bursts shrinks back once they stop: its free files are closed and removed, and the data stays', async () => {
    const o = origin();
    const db = await openIn(o, 'shrinks', { poolReserve: 8, writeBufferSize: 64 * 1024 });
    // Bursts, each as large as the pool's free files allow: each raises the target.
    for (let round = 0; round < 4; round++) {
      let tables = 0;
      while (db.statistics().pool!.free >= 4 && tables < 40) {
        for (let i = 0; i < 20; i++) db.put(`k${round}-${tables}-${i}`, bytes(`v${round}-${tables}-${i}`));
        db.flush();
        tables++;
      }
      await db.idle(); // the keeper tops up, raising its target after a burst
    }
    const dir = o.root.dirs.get('siltdb')!.dirs.get('shrinks')!;
    const raised = db.statistics().handles!.database;
    expect(raised).toBeGreaterThan(8 + 8 + 2 * HANDLES_PER_SLICE); // the bursts raised the target
    // Later (past the decay time, several times over), calls find the target halved each time.
    const now = Date.now();
    let shift = 0;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => now + shift);
    try {
      for (let step = 1; step <= 6; step++) {
        shift = step * (TARGET_DECAY_MS + 1);
        db.put(`late${step}`, bytes('x'));
        await new Promise((r) => setTimeout(r, 0));
      }
    } finally {
      clock.mockRestore();
    }
    const after = db.statistics().handles!.database;
    expect(after).toBeLessThan(raised);
    expect(db.statistics().pool!.free).toBeLessThanOrEqual(8 + HANDLES_PER_SLICE);
    expect(after).toBe(db.statistics().pool!.files);
    expect(o.handles.open).toBe(after);
    await new Promise((r) => setTimeout(r, 0));
    expect(dir.files.size).toBe(after); // the closed ones are removed
    db.close();
    releaseAllParked();
    const again = await openIn(o, 'shrinks');
    expect(text(again.get('k3-39-19'))).toBe('v3-39-19');
    expect(text(again.get('late6'))).toBe('x');
  });

  test('poolReserve must fit in half the budget', async () => {
    const o = origin();
    const err = await rejected(openIn(o, 'x', { handleBudget: 32, poolReserve: 17 }));
    expect(err.code).toBe('InvalidArgument');
    expect(err.message).toContain('poolReserve (17) must be at most half of handleBudget (32)');
    const low = await rejected(openIn(o, 'x', { handleBudget: 8 }));
    expect(low.message).toMatch(/handleBudget must be an integer from 32/);
  });
});
