// Live queries (src/tabs/live-query.ts) where the shared scenarios
// (scenarios/live.js) cannot look: what a query leaves behind once nobody
// listens (no watch on its connection or feed, nothing held by the leader),
// a query that follows its range across a failover, values from another
// tab, a query that fails with its connection, and the Observable shapes
// (an observer object, `@@observable`, Svelte's store contract).
import { afterEach, describe, expect, test } from 'vitest';
import { Database, type LiveResult, openMemory } from '../src/index.js';
import { bytes } from './helpers.js';
import { Origin, outcome, readyTabs } from './tabs-harness.js';

type Opened = Awaited<ReturnType<typeof readyTabs>>[number];

let origin: Origin | undefined;
afterEach(async () => {
  await origin?.dispose();
  origin = undefined;
});

const text = (b: Uint8Array | undefined) => (b === undefined ? '-' : new TextDecoder().decode(b));
const shown = (r: LiveResult<Uint8Array, Uint8Array> | undefined) => r?.entries.map(([k, v]) => `${text(k)}=${text(v)}`).join(' ');

describe('live queries through connect()', () => {
  test("another tab's writes, values included; unsubscribed, nothing is left: no watch on the connection, nothing held by the leader", async () => {
    const o = await Origin.create(11, 'fifo');
    origin = o;
    const [a, f] = (await readyTabs(o, 'A', 'F')) as [Opened, Opened];
    expect(await outcome(o, a.db.put('k1', bytes('one')))).toBe('ok');
    const live = f.db.live({ gte: 'k', lt: 'l', limit: 2 });
    const got: string[] = [];
    const sub = live.subscribe((r) => got.push(shown(r)!));
    await o.world.run(1_000);
    expect(got).toEqual(['k1=one']);
    expect(await outcome(o, a.db.put('k2', bytes('two')))).toBe('ok');
    expect(await outcome(o, a.db.put('k0', bytes('zero')))).toBe('ok');
    expect(await outcome(o, a.db.put('m', bytes('outside')))).toBe('ok');
    await o.world.run(1_000);
    expect(got).toEqual(['k1=one', 'k1=one k2=two', 'k0=zero k1=one']);
    expect(live.reads).toBe(1);
    expect(f.connection.watchers.size).toBe(1);
    // A watch of keys beside it: once the query goes, records come without values.
    const keys = f.db.watch({});
    let tabs = await o.world.until(f.db.statistics(), 10_000);
    expect(tabs?.ok && (tabs.value as { tabs: { watchingValues: number } }).tabs.watchingValues).toBe(1);
    sub.unsubscribe();
    await o.world.run(1_000);
    tabs = await o.world.until(f.db.statistics(), 10_000);
    expect(tabs?.ok && (tabs.value as { tabs: { watching: number; watchingValues: number } }).tabs).toMatchObject({ watching: 1, watchingValues: 0 });
    keys.close();
    await o.world.run(1_000);
    expect(f.connection.watchers.size).toBe(0);
    const held = o.leader!.holding;
    expect([held.snapshots, held.iterators]).toEqual([0, 0]);
    // The leader was told: it sends this connection no more change records.
    const before = f.connection.watchers.size;
    expect(await outcome(o, a.db.put('k3', bytes('three')))).toBe('ok');
    await o.world.run(1_000);
    expect(got).toHaveLength(3);
    expect(before).toBe(0);
  });

  test('a failover: the query follows the next leader, with what was written there', async () => {
    const o = await Origin.create(12, 'fifo');
    origin = o;
    const [a, b, f] = (await readyTabs(o, 'A', 'B', 'F')) as [Opened, Opened, Opened];
    const aTab = a.tab;
    expect(await outcome(o, a.db.put('k1', bytes('one')))).toBe('ok');
    const g = f.db.liveGet('k1');
    const values: string[] = [];
    g.subscribe({ next: (r) => values.push(text(r.value)), error: (e) => values.push(`error ${e.code}`) });
    await o.world.run(1_000);
    expect(values).toEqual(['one']);
    o.kill(aTab);
    await o.world.run(10_000);
    expect(await outcome(o, b.db.put('k1', bytes('after')))).toBe('ok');
    await o.world.run(2_000);
    expect(values.at(-1)).toBe('after');
    expect(values).not.toContain('error LeaderChanged');
    g.close();
  });

  test('a query whose connection closes ends: its subscribers are told complete', async () => {
    const o = await Origin.create(13, 'fifo');
    origin = o;
    const [a] = (await readyTabs(o, 'A')) as [Opened];
    const live = a.db.live();
    const seen: string[] = [];
    live.subscribe({ next: () => seen.push('next'), complete: () => seen.push('complete') });
    await o.world.run(1_000);
    expect(await outcome(o, a.db.close())).toBe('ok');
    await o.world.run(1_000);
    expect(seen).toEqual(['next', 'complete']);
    // Subscribed after its end: told at once.
    live.subscribe({ complete: () => seen.push('late complete') });
    expect(seen.at(-1)).toBe('late complete');
  });
});

describe('live queries in a worker', () => {
  test('unsubscribed or closed, the feed keeps no watch; a subscriber joining gets the current result at once; Observable and store shapes', async () => {
    const db = await openMemory();
    db.put('a', bytes('1'));
    const live = db.live();
    // Svelte's store contract: subscribe(fn) returns something to unsubscribe with; RxJS finds '@@observable'.
    expect((live as unknown as Record<string, () => unknown>)['@@observable']!()).toBe(live);
    const first: string[] = [];
    const s1 = live.subscribe((r) => first.push(shown(r)!));
    await new Promise((r) => setTimeout(r, 0));
    expect(first).toEqual(['a=1']);
    const second: string[] = [];
    const s2 = live.subscribe({ next: (r) => second.push(shown(r)!) });
    expect(second).toEqual(['a=1']);
    db.put('b', bytes('2'));
    await new Promise((r) => setTimeout(r, 0));
    expect(first).toEqual(['a=1', 'a=1 b=2']);
    expect(second).toEqual(['a=1', 'a=1 b=2']);
    expect(Database.internals(db as Database<unknown, unknown>).watches()).toBe(1);
    s1.unsubscribe();
    expect(s1.closed).toBe(true);
    s2.unsubscribe();
    expect(Database.internals(db as Database<unknown, unknown>).watches()).toBe(0);
    // Nobody listens: a write reaches no query.
    db.put('c', bytes('3'));
    await new Promise((r) => setTimeout(r, 0));
    expect(first).toHaveLength(2);
    // An observer that throws does not stop the others.
    const after: string[] = [];
    live.subscribe(() => {
      throw new Error('an app bug');
    });
    live.subscribe((r) => after.push(shown(r)!));
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    process.on('uncaughtException', onError);
    try {
      await new Promise((r) => setTimeout(r, 5));
    } finally {
      process.off('uncaughtException', onError);
    }
    expect(after).toEqual(['a=1 b=2 c=3']);
    expect(errors).toHaveLength(1);
    live.close();
    expect(Database.internals(db as Database<unknown, unknown>).watches()).toBe(0);
    db.close();
  });

  test("an observer's methods on its prototype (RxJS's Subscriber) are called on it; one unsubscribed by an earlier observer is not called; an iterator's return() ends a next() that waits, and two next() calls both resolve (review of issue 39)", async () => {
    const db = await openMemory();
    db.put('a', bytes('1'));
    const live = db.live();
    class Collect {
      seen: string[] = [];
      next(r: LiveResult<Uint8Array, Uint8Array>) {
        this.seen.push(shown(r)!);
      }
    }
    const c = new Collect();
    const s1 = live.subscribe(c);
    await new Promise((r) => setTimeout(r, 0));
    expect(c.seen).toEqual(['a=1']);
    // A unsubscribes B in its next: B is not called with that result.
    const b: string[] = [];
    let sb: { unsubscribe(): void } | undefined;
    const sa = live.subscribe(() => sb?.unsubscribe());
    sb = live.subscribe((r) => b.push(shown(r)!));
    expect(b).toEqual(['a=1']); // at once, within subscribe
    db.put('b', bytes('2'));
    await new Promise((r) => setTimeout(r, 0));
    expect(b).toEqual(['a=1']);
    expect(c.seen).toEqual(['a=1', 'a=1 b=2']);
    sa.unsubscribe();
    s1.unsubscribe();
    // An iterator: the first result, then two next() calls waiting, each resolved by a change of its own; return() ends one waiting.
    const it = live[Symbol.asyncIterator]();
    expect(shown((await it.next()).value)).toBe('a=1 b=2');
    const [p1, p2] = [it.next(), it.next()];
    db.put('c', bytes('3'));
    await new Promise((r) => setTimeout(r, 0));
    db.put('d', bytes('4'));
    const [r1, r2] = await Promise.race([
      Promise.all([p1, p2]),
      new Promise<never>((_, no) => setTimeout(() => no(new Error('a next() never resolved')), 1_000)),
    ]);
    expect([r1, r2].map((r) => shown(r.value))).toEqual(['a=1 b=2 c=3', 'a=1 b=2 c=3 d=4']);
    const waiting = it.next();
    await it.return!();
    expect(await Promise.race([waiting, new Promise((r) => setTimeout(() => r('still waiting'), 500))])).toEqual({ done: true, value: undefined });
    expect(Database.internals(db as Database<unknown, unknown>).watches()).toBe(0);
    db.close();
  });

  test('bad options are refused at once, naming what is wrong', async () => {
    const db = await openMemory();
    expect(() => db.live({ limit: 0 })).toThrow(/limit must be a whole number from 1/);
    expect(() => db.live({ reverse: 'yes' as never })).toThrow(/reverse must be true or false/);
    expect(() => db.live({ limt: 3 } as never)).toThrow(/limt.*limit/);
    db.close();
    expect(() => db.live()).toThrow(/closed/);
    expect(() => db.liveGet('a')).toThrow(/closed/);
  });
});
