// Tabs of two siltdb versions on one database (issue 40, item 2), in the
// simulated browser of tabs-world.ts with the real src/tabs/: a tab of the
// version before the handshake (its messages carry no `v`) is told, on
// each request, that it runs an older siltdb and must reload; a tab whose
// leader runs another version fails its connect() with `VersionMismatch`,
// saying which tabs to reload, and nothing it sent is applied.
import { afterEach, describe, expect, test } from 'vitest';
import { SiltError } from '../src/core/errors.js';
import { names, PROTOCOL } from '../src/tabs/protocol.js';
import { bytes } from './helpers.js';
import { Origin, outcome } from './tabs-harness.js';

let origin: Origin | undefined;
afterEach(async () => {
  await origin?.dispose();
  origin = undefined;
});

describe('tabs of another version', () => {
  test("an older tab's requests are each answered VersionMismatch, with its next step, and none is applied", async () => {
    const o = await Origin.create(1, 'fifo');
    origin = o;
    const a = o.open(o.tab('A'));
    expect(await outcome(o, a.connection.ready)).toBe('ok');
    const leader = a.connection.client;
    const n = names(o.name);
    const old = o.tab('Old');
    const answers: unknown[] = [];
    const welcomes: unknown[] = [];
    // The version before the handshake: a hello without `v`, then a put and a get.
    void o.world.locks.view(old.realm).request(n.clientLock('old-tab'), {}, () => new Promise(() => {}));
    const line = o.world.within(old.realm, () => {
      const own = new BroadcastChannel(n.client('old-tab'));
      own.addEventListener('message', (ev) => ((ev.data as { t?: string }).t === 'welcome' ? welcomes : answers).push(ev.data));
      new BroadcastChannel(n.roster).postMessage({ t: 'hello', client: 'old-tab', leader });
      return own;
    });
    await o.world.run(5_000);
    expect(welcomes).toHaveLength(1); // welcomed (an old tab waits for it), with this leader's version in it
    expect(welcomes[0]).toMatchObject({ v: PROTOCOL });
    o.world.within(old.realm, () => {
      line.postMessage({ id: 1, request: { op: 'put', key: 'k', value: bytes('old') } });
      line.postMessage([
        { id: 2, request: { op: 'get', key: 'k', snapshot: 0 } },
        { gets: [3, 4], keys: ['a', 'b'], snapshot: 0 },
      ]);
    });
    await o.world.run(5_000);
    const refused = answers.flat() as { id: number; ok: boolean; error: { code: string; message: string } }[];
    expect(refused.map((r) => [r.id, r.ok, r.error.code])).toEqual([
      [1, false, 'VersionMismatch'],
      [2, false, 'VersionMismatch'],
      [3, false, 'VersionMismatch'],
      [4, false, 'VersionMismatch'],
    ]);
    expect(refused[0]!.error.message).toMatch(/older siltdb .*reload this page/);
    expect(await outcome(o, a.db.get('k'))).toBe('ok');
    expect(o.db.get('k')).toBeUndefined(); // nothing of it applied
    expect(o.leader!.counters.malformed).toBe(4);
  });

  test('a tab whose leader runs the version before fails its connect() with VersionMismatch, saying to reload the other tabs', async () => {
    const o = await Origin.create(2, 'fifo');
    origin = o;
    const n = names(o.name);
    // A leader of the version before: it holds the lead lock and answers as
    // that version did (no `v` in what it posts).
    const old = o.tab('Old');
    const locks = o.world.locks.view(old.realm);
    void locks.request(n.leadLock, {}, () => new Promise(() => {}));
    void locks.request(n.clientLock('old-leader'), {}, () => new Promise(() => {}));
    const got: unknown[] = [];
    o.world.within(old.realm, () => {
      const roster = new BroadcastChannel(n.roster);
      roster.addEventListener('message', (ev) => {
        const m = ev.data as { t: string; client?: string };
        if (m.t === 'who') roster.postMessage({ t: 'leader', leader: 'old-leader', ready: true, seq: 0 });
        if (m.t === 'hello' && typeof m.client === 'string') {
          const line = new BroadcastChannel(n.client(m.client));
          line.addEventListener('message', (e) => got.push(e.data));
          line.postMessage({ t: 'welcome', leader: 'old-leader', seq: 0, opened: 0 });
        }
      });
    });
    const b = o.open(o.tab('B'));
    const put = b.db.put('k', bytes('new'));
    put.catch(() => {});
    const ready = await o.world.until(b.connection.ready, 30_000);
    expect(ready?.ok).toBe(false);
    const e = (ready as { error: SiltError }).error;
    expect(e).toBeInstanceOf(SiltError);
    expect(e.code).toBe('VersionMismatch');
    expect(e.message).toMatch(/newer siltdb .*reload the other tabs/);
    expect(await outcome(o, put)).toBe('VersionMismatch');
    expect(got).toEqual([]); // nothing was sent to the old leader
  });
});
