// How a connection finds and keeps its leader (src/tabs/connection.ts), in the simulated
// browser of tabs-world.ts: a follower that follows twice before a welcome
// links on the port that lives; a transaction begun during a failover
// lives on the new leader; a follower's close() does not wait for a timer;
// connect() fails, and says what to do, when Web Locks are refused
// (issue 42, items 10, 13, 14 and 15).
import { afterEach, describe, expect, test } from 'vitest';
import { connect } from '../src/tabs/connect.js';
import { SiltError } from '../src/core/errors.js';
import { names, PROTOCOL, type RosterMessage } from '../src/tabs/protocol.js';
import { bytes } from './helpers.js';
import { Origin, outcome } from './tabs-harness.js';
import { brokerOf, FakeWorker } from './tabs-browser.js';

let origin: Origin | undefined;
afterEach(async () => {
  await origin?.dispose();
  origin = undefined;
});

async function leading(seed = 1): Promise<{ o: Origin; a: ReturnType<Origin['open']> }> {
  const o = await Origin.create(seed, 'fifo');
  origin = o;
  const a = o.open(o.tab('A'));
  expect(await outcome(o, a.connection.ready)).toBe('ok');
  expect(a.connection.isLeader).toBe(true);
  return { o, a };
}

/** A leads; B is next in the queue to lead; F follows, and has put `k`. */
async function leadingWithFollower() {
  const { o, a } = await leading();
  const b = o.open(o.tab('B'));
  expect(await outcome(o, b.connection.ready)).toBe('ok');
  const f = o.open(o.tab('F'));
  expect(await outcome(o, f.connection.ready)).toBe('ok');
  expect(await outcome(o, f.db.put('k', bytes('1')))).toBe('ok');
  return { o, a, b, f };
}

describe('following a leader', () => {
  test('a follower that follows the same leader twice before its welcome (another tab asked who leads) links on the port that lives (item 10)', async () => {
    const { o } = await leading();
    // F and G ask who leads at once: A answers each, and each answer makes
    // the other, not yet welcomed, follow A again with a new port.
    const f = o.open(o.tab('F'));
    o.open(o.tab('G'));
    expect(await outcome(o, f.connection.ready)).toBe('ok');
    expect(await outcome(o, f.db.put('k', bytes('v')), 30_000)).toBe('ok');
    expect(await outcome(o, f.db.get('k'), 30_000)).toBe('ok');
  });

  test('a transaction begun while a failover is under way lives on the new leader (item 13)', async () => {
    const { o, b, f } = await leadingWithFollower();
    o.kill(o.tabs[0]!);
    // F has heard that B leads, and has not been welcomed yet.
    expect(await o.world.runUntil(() => f.connection.leaderId === b.connection.client)).toBe(true);
    const tx = f.db.begin();
    expect(await outcome(o, tx.get('k'))).toBe('ok');
    tx.put('k', bytes('2'));
    expect(await outcome(o, tx.commit())).toBe('ok');
    expect(new TextDecoder().decode(o.db.get('k'))).toBe('2');
  });

  test("a stale 'leader ready' of a leader that went does not take a follower away from the one that leads: its snapshot there stays good (review 8)", async () => {
    const { o, a, b, f } = await leadingWithFollower();
    o.kill(o.tabs[0]!);
    expect(await o.world.runUntil(() => b.connection.isLeader)).toBe(true);
    expect(await outcome(o, f.db.put('k', bytes('2')))).toBe('ok');
    expect(f.connection.leaderId).toBe(b.connection.client);
    const snapshot = await o.world.until(f.db.snapshot());
    expect(snapshot?.ok).toBe(true);
    const snap = (snapshot as { value: Awaited<ReturnType<typeof f.db.snapshot>> }).value;
    expect(o.leader!.holding.snapshots).toBe(1);
    // A's answer to some tab's `who`, sent before it went, arrives late
    // (BroadcastChannel keeps no order across senders).
    o.world.within(o.tab('X').realm, () => {
      const roster = new BroadcastChannel(names(o.name).roster);
      roster.postMessage({ t: 'leader', leader: a.connection.client, ready: true, v: PROTOCOL } satisfies RosterMessage);
      roster.close();
    });
    await o.world.run(10_000);
    expect(f.connection.leaderId).toBe(b.connection.client);
    expect(await outcome(o, f.db.get('k', { snapshot: snap }))).toBe('ok');
    expect(await outcome(o, snap.release())).toBe('ok');
    await o.world.run(1_000);
    expect(o.leader!.holding.snapshots).toBe(0);
    expect(o.leader!.counters.duplicateWrites).toBe(0); // nothing sent to B twice
  });

  test('the SharedWorker dies (a crashed renderer took it) and then the leader: a follower whose broker no longer answers links to the new leader over its channel, and new brokers learn the leader', async () => {
    // Seen in the tabs soak (seed 703122206): after crashes, a follower's
    // broker port went silent (no handover, no `unknown`), and it asked the
    // same dead broker again every two seconds, its calls pending for ever.
    const { o, b, f } = await leadingWithFollower();
    o.world.kill(brokerOf(o.world).realm); // silently: no page hears of it
    o.kill(o.tabs[0]!);
    expect(await o.world.runUntil(() => b.connection.isLeader)).toBe(true);
    const put = f.db.put('k', bytes('2'));
    expect(await outcome(o, put, 30_000)).toBe('ok');
    expect(await outcome(o, f.db.get('k'), 30_000)).toBe('ok');
    expect(new TextDecoder().decode(o.db.get('k'))).toBe('2');
    // The leader registered with a broker that died: a follower that comes
    // now starts a new instance, which does not know it. Told so by the
    // follower's hello, the leader registers with that instance: the
    // follower after it is handed a port at once.
    const g = o.open(o.tab('G'));
    expect(await outcome(o, g.connection.ready, 30_000)).toBe('ok');
    const before = o.world.now;
    const h = o.open(o.tab('H'));
    expect(await outcome(o, h.connection.ready, 30_000)).toBe('ok');
    expect(o.world.now - before).toBeLessThan(500); // no second's wait for the broker's `unknown`
    expect(await outcome(o, h.db.get('k'), 30_000)).toBe('ok');
  });

  test("a follower's close() takes a round trip, not the second it waits at most for the leader's answer (item 14)", async () => {
    const { o } = await leading();
    const f = o.open(o.tab('F'));
    expect(await outcome(o, f.connection.ready)).toBe('ok');
    const before = o.world.now;
    expect(await outcome(o, f.db.close())).toBe('ok');
    expect(o.world.now - before).toBeLessThan(100);
  });
});

describe('connect() without Web Locks', () => {
  test('rejects with a SiltError that says what to do when navigator.locks refuses (a sandboxed iframe), instead of never settling (item 15)', async () => {
    const o = await Origin.create(1, 'fifo');
    origin = o;
    const g = globalThis as Record<string, unknown>;
    g.navigator = {
      locks: {
        request: () => Promise.reject(new DOMException('The request is denied.', 'SecurityError')),
      },
    };
    try {
      const p = connect(o.name, { worker: new FakeWorker(o.world, o.tab('A').realm, o.storage) as unknown as Worker });
      expect(await outcome(o, p)).toBe('NotSupported');
      const e = await p.catch((x: unknown) => x);
      expect(e).toBeInstanceOf(SiltError);
      expect((e as Error).message).toMatch(/SecurityError/);
      expect((e as Error).message).toMatch(/allow-same-origin/);
    } finally {
      delete g.navigator;
    }
  });
});
