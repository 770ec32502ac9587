// Change events and what the leader keeps of connections, in the simulated
// browser of tabs-world.ts: the leader forgets connections that went; a
// watch whose connection fails throws; a change record that reaches a page
// before its new leader's welcome is neither a gap nor seen twice
// (issue 42, item 17); a catch-up with a new leader that overtakes the old
// leader's last change records, after a clean close, is no gap either: the
// old leader handed its history over (handover.ts).
import { afterEach, describe, expect, test } from 'vitest';
import { Codec } from '../src/core/encoding.js';
import type { ChangeHistory } from '../src/tabs/wire.js';
import { startWatch, type Watcher, type WatchEvent, type WatchHost } from '../src/tabs/watch.js';
import { bytes } from './helpers.js';
import { Origin, outcome } from './tabs-harness.js';

let origin: Origin | undefined;
afterEach(async () => {
  await origin?.dispose();
  origin = undefined;
});

/** Tabs A (leading), B and F, opened in order; F watches everything and has seen its own put of `a`. */
async function threeTabs(seed: number) {
  const o = await Origin.create(seed, 'fifo');
  origin = o;
  const aTab = o.tab('A');
  const a = o.open(aTab);
  expect(await outcome(o, a.connection.ready)).toBe('ok');
  const bTab = o.tab('B');
  const b = o.open(bTab);
  expect(await outcome(o, b.connection.ready)).toBe('ok');
  const f = o.open(o.tab('F'));
  expect(await outcome(o, f.connection.ready)).toBe('ok');
  const events: WatchEvent[] = [];
  f.db.watch({}, (e) => events.push(e));
  expect(await outcome(o, f.db.put('a', bytes('1')))).toBe('ok');
  await o.world.run(1_000);
  expect(events.map((e) => e.kind)).toEqual(['put']);
  return { o, a, aTab, b, bTab, f, events };
}

describe('the leader and connections that come and go', () => {
  test('keeps nothing of a connection once it has gone: its liveness watch and its goodbye are forgotten', async () => {
    const o = await Origin.create(3, 'fifo');
    origin = o;
    const a = o.open(o.tab('A'));
    expect(await outcome(o, a.connection.ready)).toBe('ok');
    for (let i = 0; i < 5; i++) {
      const f = o.open(o.tab(`F${i}`));
      expect(await outcome(o, f.connection.ready)).toBe('ok');
      expect(await outcome(o, f.db.put(`k${i}`, bytes('v')))).toBe('ok');
      if (i % 2 === 0) expect(await outcome(o, f.db.close())).toBe('ok');
      else o.kill(o.tabs.at(-1)!);
    }
    await o.world.run(10_000);
    const held = o.leader!.holding;
    expect(held.clients).toEqual([a.connection.client]);
    expect(held.watched).toBe(0);
    expect(held.gone).toBe(0);
  });
});

describe('watch', () => {
  test('a watch whose connection fails (its worker died) throws from for await instead of ending quietly', async () => {
    const o = await Origin.create(4, 'fifo');
    origin = o;
    const tab = o.tab('A');
    const a = o.open(tab);
    expect(await outcome(o, a.connection.ready)).toBe('ok');
    const w = a.db.watch();
    await o.world.run(1_000);
    const next = w.next();
    tab.workers[0]!.crash();
    expect(await outcome(o, next)).toBe('Internal');
  });

  test('a watch with a callback whose connection fails is told: its `ended` rejects with the error; one closed by its app resolves (review 6)', async () => {
    const o = await Origin.create(4, 'fifo');
    origin = o;
    const tab = o.tab('A');
    const a = o.open(tab);
    expect(await outcome(o, a.connection.ready)).toBe('ok');
    const events: WatchEvent[] = [];
    const w = a.db.watch({}, (e) => events.push(e));
    const closed = a.db.watch({}, () => {});
    expect(await outcome(o, a.db.put('k', bytes('v')))).toBe('ok');
    await o.world.run(1_000);
    expect(events.map((e) => e.kind)).toEqual(['put']);
    closed.close();
    expect(await outcome(o, closed.ended)).toBe('ok');
    tab.workers[0]!.crash();
    expect(await outcome(o, w.ended)).toBe('Internal');
  });

  test('a change that reaches a page before its new leader welcomes it is reported once, with no gap', async () => {
    const { o, b, bTab, f, events } = await threeTabs(5);
    // A goes; B leads. B's worker welcomes F, but the welcome is slow:
    // meanwhile B writes, and its change record reaches F first.
    const bWorker = () => bTab.workers[0]!.inner;
    o.world.holds.push((key, from) => key.startsWith('port:') && from === bWorker());
    o.kill(o.tabs[0]!);
    expect(await outcome(o, b.connection.ready)).toBe('ok');
    // (Less than the two seconds after which F would ask who leads again.)
    await o.world.run(500);
    expect(o.leader?.holding.clients).toContain(f.connection.client); // attached, welcome held
    expect(await outcome(o, b.db.put('b', bytes('2')), 500)).toBe('ok');
    await o.world.run(500);
    o.world.holds.length = 0;
    await o.world.run(5_000);
    expect(await outcome(o, b.db.put('c', bytes('3')))).toBe('ok');
    expect(await outcome(o, f.db.put('d', bytes('4')))).toBe('ok');
    await o.world.run(5_000);
    const seqs = events.filter((e) => e.kind !== 'gap').map((e) => (e as { seq: number }).seq);
    expect(events.filter((e) => e.kind === 'gap')).toEqual([]);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(events.map((e) => ('key' in e ? new TextDecoder().decode(e.key as Uint8Array) : e.kind))).toEqual(['a', 'b', 'c', 'd']);
  });

  test("a new leader's catch-up that overtakes the old leader's last change records is no gap: a clean close hands the history over", async () => {
    const { o, a, aTab, b, f, events } = await threeTabs(6);
    // A writes; its change records to F are slow (held): F hears of them
    // only after A has closed and F has caught up with B, the new leader.
    const aWorker = aTab.workers[0]!.inner;
    o.world.holds.push((key, from) => key.startsWith('bc:') && from === aWorker);
    expect(await outcome(o, a.db.put('x', bytes('2')))).toBe('ok');
    expect(await outcome(o, a.db.put('y', bytes('3')))).toBe('ok');
    expect(await outcome(o, a.db.close())).toBe('ok');
    expect(await outcome(o, b.connection.ready)).toBe('ok');
    expect(await outcome(o, f.db.put('z', bytes('4')))).toBe('ok');
    await o.world.run(5_000);
    o.world.holds.length = 0;
    await o.world.run(5_000);
    expect(events.filter((e) => e.kind === 'gap')).toEqual([]);
    expect(events.map((e) => ('key' in e ? new TextDecoder().decode(e.key as Uint8Array) : e.kind))).toEqual(['a', 'x', 'y', 'z']);
  });
});

describe('a watch whose start is past what its leader has', () => {
  test("a leader that opened below the watch's start (the one before crashed with writes not on disk): a gap over what was lost, then the new writes at the numbers taken again (review of issue 39)", async () => {
    // A connection's side, faked: its leader's latest is 5; the watch started after 10.
    const watchers = new Set<Watcher>();
    const host: WatchHost = {
      watchers,
      send: async () => ({ base: 0, latest: 5, records: [] }) satisfies ChangeHistory,
      stopWatching: () => {},
    };
    const got: string[] = [];
    startWatch(host, Codec.root(undefined), {}, 10, false, (e) => got.push(e.kind === 'gap' ? `gap ${e.from}-${e.to}` : `${e.kind} ${e.seq}`), false);
    await new Promise((r) => setTimeout(r, 0));
    expect(got).toEqual(['gap 6-10']);
    // The new leader's next write takes 6.
    for (const w of watchers) w.onRecord({ first: 6, last: 6, kinds: new Uint8Array([1]), bounds: new Uint32Array([0, 1, 1]), keys: bytes('a'), from: 'L2' });
    expect(got).toEqual(['gap 6-10', 'put 6']);
  });
});
