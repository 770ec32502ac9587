// Many tabs, one database: connect() from several pages shares one database
// through the tab that leads; change events (watch) everywhere; a page
// frozen, a worker and an iframe. docs/tabs.md describes the design these
// tests check; failover is in tabs-failover.spec.ts, transactions in
// tabs-transactions.spec.ts.
import { expect, test } from '@playwright/test';
import { openHarness } from './harness.js';
import { tab, type Lib } from './tabs-pages.js';

test('two connect()s in one page share one connection, and one worker', async ({ page }) => {
  await openHarness(page);
  const r = await page.evaluate(async () => {
    const lib = (await import('/siltdb/dist/index.js' as string)) as Lib;
    const a = await lib.connect('share-one');
    const b = await lib.connect('share-one');
    await a.put('k', new TextEncoder().encode('from a'));
    const seen = new TextDecoder().decode((await b.get('k'))!);
    const stats = await b.statistics();
    await a.close();
    // b still works after a's close: the connection lives while a handle does.
    await b.put('k2', new Uint8Array([1]));
    const still = (await b.get('k2'))?.[0];
    await b.close();
    let after = 'none';
    try {
      await b.get('k');
    } catch (e) {
      after = (e as { code: string }).code;
    }
    return { seen, leaders: [a.isLeader, b.isLeader], connections: stats.tabs.connections, still, after };
  });
  expect(r).toEqual({ seen: 'from a', leaders: [true, true], connections: 1, still: 1, after: 'Closed' });
});

test('three tabs share one database: every operation works from a follower, and reads see every tab', async ({ context }) => {
  const pages = [await tab(context, 'three', 'A'), await tab(context, 'three', 'B'), await tab(context, 'three', 'C')];
  const leaders = await Promise.all(pages.map((p) => p.evaluate(() => window.db!.isLeader)));
  expect(leaders.filter(Boolean)).toHaveLength(1);
  // Concurrent writers in all three, each its own keys and one shared batch key.
  await Promise.all(
    pages.map((p) =>
      p.evaluate(async () => {
        const enc = new TextEncoder();
        const { db, tab } = window;
        const work: Promise<void>[] = [];
        for (let i = 0; i < 100; i++) {
          work.push(db!.put(`k/${tab.id}/${String(i).padStart(3, '0')}`, enc.encode(`${tab.id}${i}`)));
          if (i % 10 === 0)
            work.push(db!.write(new window.lib.WriteBatch().put(`b/${tab.id}/${i}`, enc.encode('x')).delete(`k/${tab.id}/${String(i).padStart(3, '0')}`)));
        }
        await Promise.all(work);
      }),
    ),
  );
  // Every tab reads every tab's writes, with get, multiGet, iterators and snapshots.
  for (const p of pages) {
    const r = await p.evaluate(async () => {
      const { db } = window;
      const dec = new TextDecoder();
      const keys: string[] = [];
      for await (const [k] of db!.iterator({ gte: 'k/', lt: 'k0' })) keys.push(dec.decode(k));
      const snap = await db!.snapshot();
      await db!.put('after-snapshot', new Uint8Array([1]));
      const atSnap = await db!.get('after-snapshot', { snapshot: snap });
      const now = await db!.get('after-snapshot');
      const reverse: string[] = [];
      for await (const [k] of db!.iterator({ gte: 'b/', lt: 'b0', reverse: true, snapshot: snap, batchSize: 2 })) reverse.push(dec.decode(k));
      await snap.release();
      const multi = Array.from(await db!.multiGet(['k/A/001', 'k/B/002', 'k/C/099', 'k/A/000']), (v) => (v ? dec.decode(v) : null));
      // An autoRefresh iterator over its own snapshot: writes made meanwhile do not show.
      let refreshed = 0;
      for await (const _ of db!.iterator({ gte: 'k/', lt: 'k0', autoRefresh: true, batchSize: 16 })) {
        if (refreshed++ === 0) await db!.put('k/zzz-during-scan', new Uint8Array([1]));
      }
      await db!.delete('k/zzz-during-scan');
      await db!.delete('after-snapshot');
      let reserved = 'none';
      try {
        await db!.put(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, ...new TextEncoder().encode('siltdb/x')]), new Uint8Array(1));
      } catch (e) {
        reserved = (e as { code: string }).code;
      }
      // A scan of everything shows no write record.
      let all = 0;
      let hidden = 0;
      for await (const [k] of db!.iterator()) {
        all++;
        if (k[0] === 0xff) hidden++;
      }
      return { keys: keys.length, atSnap: atSnap === undefined, now: now?.[0], reverse: reverse.length, multi, reserved, all, hidden, leader: db!.isLeader };
    });
    expect(r).toMatchObject({
      keys: 270,
      atSnap: true,
      now: 1,
      reverse: 30,
      multi: ['A1', 'B2', 'C99', null],
      reserved: 'InvalidArgument',
      all: 300,
      hidden: 0,
    });
  }
  const stats = await pages[0]!.evaluate(() => window.db!.statistics());
  expect(stats.tabs.connections).toBe(3);
  // The rest of the API from a follower: flush, compaction, idle, verify, statistics.
  const follower = pages.find((_, i) => !leaders[i])!;
  const upkeep = await follower.evaluate(async () => {
    const { db } = window;
    await db!.flush();
    await db!.compactRange('k/', 'k0');
    await db!.idle();
    const verified = await db!.verify();
    const s = await db!.statistics();
    return { tables: verified.tables > 0, levels: s.properties.filesPerLevel.reduce((a, b) => a + b, 0) > 0, connections: s.tabs.connections };
  });
  expect(upkeep).toEqual({ tables: true, levels: true, connections: 3 });
  for (const p of pages) await p.evaluate(() => window.db!.close());
});

test('watch: every tab sees every change once, in order, with its kind; since catches up; a range filters', async ({ context }) => {
  const a = await tab(context, 'watched', 'A');
  const b = await tab(context, 'watched', 'B');
  await b.evaluate(() => {
    const { tab, db } = window;
    const dec = new TextDecoder();
    void (async () => {
      for await (const e of db!.watch({ gte: 'w/', lt: 'w0' })) {
        if (e.kind === 'gap') tab.gaps.push({ from: e.from, to: e.to });
        else tab.events.push({ seq: e.seq, kind: e.kind, key: dec.decode(e.key) });
      }
    })();
  });
  const start = await a.evaluate(async () => {
    const { db } = window;
    const start = await db!.latestSequence();
    const seen: string[] = [];
    db!.watch({ gte: 'w/' }, (e) => {
      if (e.kind !== 'gap') seen.push(`${e.kind} ${new TextDecoder().decode(e.key)}`);
    });
    (window as unknown as { seen: string[] }).seen = seen;
    return start;
  });
  // Writes from both tabs.
  await a.evaluate(async () => {
    await window.db!.put('w/1', new Uint8Array([1]));
    await window.db!.put('outside', new Uint8Array([1]));
  });
  await b.evaluate(async () => {
    await window.db!.write(new window.lib.WriteBatch().put('w/2', new Uint8Array([2])).delete('w/1'));
    await window.db!.deleteRange('w/0', 'w/9');
  });
  await expect.poll(() => b.evaluate(() => window.tab.events.length)).toBe(4);
  const events = await b.evaluate(() => window.tab.events);
  expect(events.map((e) => `${e.kind} ${e.key}`)).toEqual(['put w/1', 'put w/2', 'delete w/1', 'deleteRange w/0']);
  for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThan(events[i - 1]!.seq);
  await expect.poll(() => a.evaluate(() => (window as unknown as { seen: string[] }).seen.length)).toBe(4);
  // A late watcher with since gets the same changes from the leader's history.
  const caught = await b.evaluate(async (since) => {
    const out: string[] = [];
    const w = window.db!.watch({ since, gte: 'w/', lt: 'w0' });
    for await (const e of w) {
      out.push(e.kind === 'gap' ? 'gap' : `${e.kind} ${new TextDecoder().decode(e.key)}`);
      if (out.length === 4) break;
    }
    return out;
  }, start);
  expect(caught).toEqual(['put w/1', 'put w/2', 'delete w/1', 'deleteRange w/0']);
  expect(await b.evaluate(() => window.tab.gaps)).toEqual([]);
  await b.evaluate(() => window.db!.close());
  await a.evaluate(() => window.db!.close());
});

test('watch on a sublevel: keys as the sublevel reads them (no prefix, decoded), ranges cut to it, undecodable keys as one-change gaps', async ({
  context,
}) => {
  const a = await tab(context, 'watched-sublevel', 'A');
  const b = await tab(context, 'watched-sublevel', 'B');
  await b.evaluate(() => {
    const notes = window.db!.sublevel<string, unknown>('notes', { keyEncoding: 'utf8', valueEncoding: 'json' });
    const byId = window.db!.sublevel<number, unknown>('byId', { keyEncoding: 'json', valueEncoding: 'json' });
    const log: string[] = [];
    (window as unknown as { log: string[] }).log = log;
    const show = (k: unknown) => (k === undefined ? '-' : JSON.stringify(k));
    for (const [name, sub] of [
      ['notes', notes],
      ['byId', byId],
    ] as const) {
      (sub as typeof notes).watch({}, (e) => {
        if (e.kind === 'gap') log.push(`${name} gap ${e.to - e.from + 1}`);
        else if (e.kind === 'deleteRange' || e.kind === 'ingest') log.push(`${name} ${e.kind} ${show(e.key)} ${show(e.end)}`);
        else log.push(`${name} ${e.kind} ${show(e.key)}`);
      });
    }
  });
  await a.evaluate(async () => {
    const db = window.db!;
    const notes = db.sublevel<string, unknown>('notes', { keyEncoding: 'utf8', valueEncoding: 'json' });
    const byId = db.sublevel<number, unknown>('byId', { keyEncoding: 'json', valueEncoding: 'json' });
    await notes.put('n1', { title: 'one' });
    await db.put('outside', new Uint8Array([1]));
    await byId.put(7, 'seven');
    await notes.delete('n1');
    // Bytes no 'utf8' key decodes, written behind the prefix from the root.
    await db.put(new Uint8Array([...new TextEncoder().encode('!notes!'), 0xff]), new Uint8Array([1]));
    await notes.deleteRange('a', 'm');
    await db.deleteRange('!notes!p', '~');
    await notes.ingest([['q', 1]]);
    await notes.clear();
    await byId.clear();
  });
  const want = [
    'notes put "n1"',
    'byId put 7',
    'notes delete "n1"',
    'notes gap 1',
    'notes deleteRange "a" "m"',
    // From the root, on past the end of notes.
    'notes deleteRange "p" -',
    'notes ingest "q" "q\\u0000"',
    'notes deleteRange - -',
    'byId deleteRange - -',
  ];
  await expect.poll(() => b.evaluate(() => (window as unknown as { log: string[] }).log.length)).toBe(want.length);
  expect(await b.evaluate(() => (window as unknown as { log: string[] }).log)).toEqual(want);
  await b.evaluate(() => window.db!.close());
  await a.evaluate(() => window.db!.close());
});

test('a frozen page catches up when it resumes; a new leader publishes what the one before did not hand over, and what a flush moved out is a gap', async ({
  context,
}) => {
  const a = await tab(context, 'frozen', 'A');
  const b = await tab(context, 'frozen', 'B');
  await b.evaluate(() => {
    const { tab, db } = window;
    const dec = new TextDecoder();
    db!.watch({}, (e) => {
      if (e.kind === 'gap') tab.gaps.push({ from: e.from, to: e.to });
      else tab.events.push({ seq: e.seq, kind: e.kind, key: dec.decode(e.key) });
    });
  });
  await a.evaluate(() => window.db!.put('first', new Uint8Array([1])));
  await expect.poll(() => b.evaluate(() => window.tab.events.length)).toBe(1);
  const cdp = await context.newCDPSession(b);
  await cdp.send('Page.setWebLifecycleState', { state: 'frozen' });
  await a.evaluate(async () => {
    for (let i = 0; i < 5; i++) await window.db!.put(`while-frozen/${i}`, new Uint8Array([i]));
  });
  await cdp.send('Page.setWebLifecycleState', { state: 'active' });
  await expect.poll(() => b.evaluate(() => window.tab.events.map((e) => e.key))).toEqual(['first', ...[0, 1, 2, 3, 4].map((i) => `while-frozen/${i}`)]);
  expect(await b.evaluate(() => window.tab.gaps)).toEqual([]);

  // The leader's tab goes (closed: no clean close, nothing handed over).
  // The new leader rebuilds its predecessor's changes from what the
  // memtables hold (issue 40, item 3): a watch from before it began sees
  // them, with no gap.
  const before = await b.evaluate(() => window.db!.latestSequence());
  await a.evaluate(() => window.db!.put('one more', new Uint8Array([1])));
  await a.close();
  await expect.poll(() => b.evaluate(() => window.db!.isLeader)).toBe(true);
  const watchFrom = (p: typeof b, since: number) =>
    p.evaluate(async (since) => {
      const w = window.db!.watch({ since });
      const e = (await w.next()).value!;
      w.close();
      const first = e.kind === 'gap' ? e : { kind: e.kind, key: new TextDecoder().decode(e.key as Uint8Array) };
      return { first, leader: window.db!.isLeader, latest: await window.db!.latestSequence() };
    }, since);
  const rebuilt = await watchFrom(b, before);
  expect(rebuilt.leader).toBe(true);
  expect(rebuilt.first).toEqual({ kind: 'put', key: 'one more' });

  // What a flush moved to a table before the leader went is not in memory:
  // a watch from before it gets a gap, from the first change after `since`
  // to at least that write, and no further than the new leader's latest.
  const c = await tab(context, 'frozen', 'C');
  const since = await b.evaluate(() => window.db!.latestSequence());
  await b.evaluate(async () => {
    await window.db!.put('flushed', new Uint8Array([1]));
    await window.db!.flush();
  });
  await b.close();
  await expect.poll(() => c.evaluate(() => window.db!.isLeader)).toBe(true);
  const late = await watchFrom(c, since);
  expect(late.first).toMatchObject({ kind: 'gap', from: since + 1 });
  const gap = late.first as { from: number; to: number };
  expect(gap.to).toBeGreaterThanOrEqual(since + 1);
  expect(gap.to).toBeLessThanOrEqual(late.latest);
  await c.evaluate(() => window.db!.close());
});

test('connect() from a dedicated worker (over a BroadcastChannel) and from an iframe shares the database with the tabs', async ({ context }) => {
  const a = await tab(context, 'realms', 'A');
  // A worker of another tab connects: it has no SharedWorker, so no broker.
  const b = await context.newPage();
  await openHarness(b);
  await b.evaluate(() => {
    const w = new Worker('/test-pages/connect-worker.js', { type: 'module' });
    let next = 1;
    (window as unknown as { step: (step: string, args?: unknown) => Promise<unknown> }).step = (step, args) =>
      new Promise((resolve, reject) => {
        const id = next++;
        const on = ({ data }: MessageEvent<{ id: number; value?: unknown; error?: string }>) => {
          if (data.id !== id) return;
          w.removeEventListener('message', on);
          if (data.error) reject(new Error(data.error));
          else resolve(data.value);
        };
        w.addEventListener('message', on);
        w.postMessage({ id, step, args });
      });
  });
  const step = (name: string, args?: unknown) =>
    b.evaluate(([n, a]) => (window as unknown as { step: (s: string, a?: unknown) => Promise<unknown> }).step(n as string, a), [name, args] as const);
  expect(await step('connect', { name: 'realms' })).toEqual({ leader: false, broker: false });
  await a.evaluate(() => window.db!.put('page/1', new TextEncoder().encode('from A')));
  expect(await step('get', { key: 'page/1' })).toBe('from A');
  expect(await step('put', { key: 'worker/1', value: 'from the worker' })).toBe('ok');
  expect(await a.evaluate(async () => new TextDecoder().decode((await window.db!.get('worker/1'))!))).toBe('from the worker');
  expect(await step('scan')).toEqual(['page/1', 'worker/1']);

  // An iframe of a third page: a realm of its own, with the broker.
  const c = await context.newPage();
  await openHarness(c);
  await c.evaluate(async () => {
    const f = document.createElement('iframe');
    f.src = '/test-pages/harness.html';
    document.body.append(f);
    await new Promise((r) => f.addEventListener('load', r, { once: true }));
  });
  const frame = c.frames().find((f) => f !== c.mainFrame())!;
  const fromFrame = await frame.evaluate(async () => {
    const lib = (await import('/siltdb/dist/index.js' as string)) as Lib;
    const db = await lib.connect('realms');
    await db.put('page/2', new TextEncoder().encode('from the iframe'));
    const v = new TextDecoder().decode((await db.get('worker/1'))!);
    return { v, leader: db.isLeader };
  });
  expect(fromFrame).toEqual({ v: 'from the worker', leader: false });
  await expect.poll(() => step('seen')).toEqual(['page/1', 'page/2']);
  expect(await step('close')).toBe('closed');
  await a.evaluate(() => window.db!.close());
});

test('a watch nobody reads keeps at most WATCH_QUEUE_LIMIT events, then one gap for what it dropped', async ({ context }) => {
  const a = await tab(context, 'unread', 'A');
  const r = await a.evaluate(async () => {
    const { db, lib } = window;
    const w = db!.watch();
    // Let the watch learn where it starts before the burst.
    await db!.put('start', new Uint8Array([1]));
    const first = await w.next();
    const batch = new lib.WriteBatch();
    const n = lib.WATCH_QUEUE_LIMIT + 50;
    for (let i = 0; i < n; i++) batch.put(`burst/${String(i).padStart(6, '0')}`, new Uint8Array([1]));
    await db!.write(batch);
    await db!.put('after', new Uint8Array([1]));
    await new Promise((r) => setTimeout(r, 200));
    const events: string[] = [];
    for (;;) {
      const e = (await w.next()).value!;
      events.push(e.kind === 'gap' ? `gap ${e.to - e.from + 1}` : new TextDecoder().decode(e.key));
      if (events.at(-1) === 'after') break;
    }
    w.close();
    return { first: first.value?.kind, events: events.length, head: events.slice(0, 2), tail: events.slice(-2) };
  });
  // The first LIMIT + 1 updates of the burst became one gap; the other 49 and 'after' came through.
  expect(r).toEqual({ first: 'put', events: 51, head: ['gap 10001', 'burst/010001'], tail: ['burst/010049', 'after'] });
  await a.evaluate(() => window.db!.close());
});

test('a tab of another siltdb, or with a bug, posts at the leader: typed refusals, VersionMismatch for the older one, and the other tabs work on', async ({
  context,
}) => {
  const a = await tab(context, 'strangers', 'A');
  const b = await tab(context, 'strangers', 'B');
  expect(await a.evaluate(() => window.db!.isLeader)).toBe(true);
  // Page B, besides its own connection, plays two strangers: one of this
  // protocol posting malformed requests, one of the version before (no `v`).
  const got = await b.evaluate(async () => {
    const name = 'strangers';
    const roster = new BroadcastChannel(`siltdb:${name}:roster`);
    // The leader states its protocol version (`v`): the bad tab speaks it.
    const [leader, v] = await new Promise<[string, number]>((resolve) => {
      roster.onmessage = (ev) => {
        if (ev.data?.t === 'leader' && ev.data.ready) resolve([ev.data.leader, ev.data.v]);
      };
      roster.postMessage({ t: 'who' });
    });
    const answers: Record<string, unknown[]> = { bad: [], old: [] };
    for (const who of ['bad', 'old'] as const) {
      // Held while it lives, as a connection holds its own (else the leader drops it as gone).
      void navigator.locks.request(`siltdb:${name}:client:${who}-${leader}`, () => new Promise(() => {}));
      const line = new BroadcastChannel(`siltdb:${name}:c:${who}-${leader}`);
      line.onmessage = (ev) => answers[who]!.push(ev.data);
      roster.postMessage(who === 'bad' ? { t: 'hello', client: `${who}-${leader}`, leader, v } : { t: 'hello', client: `${who}-${leader}`, leader });
      await new Promise((r) => setTimeout(r, 200));
      if (who === 'bad') {
        line.postMessage({ id: 1, request: { op: 'put', key: 42, value: 'not bytes' } });
        line.postMessage([{ id: 2, request: { op: 'nope' } }, { gets: [3, 4], keys: ['a'], snapshot: 0 }, null, 'junk', { id: -1 }]);
        line.postMessage({ id: 5, request: { op: 'multiGet', keys: 'abc', snapshot: 0 } });
      } else {
        line.postMessage({ id: 1, request: { op: 'put', key: 'old', value: new Uint8Array([1]) } });
      }
      roster.postMessage({ t: 'hello', client: 7, leader });
      roster.postMessage(null);
    }
    await new Promise((r) => setTimeout(r, 500));
    const ownWorks = await window.db!.put('b-key', new Uint8Array([2])).then(() => 'ok');
    const flat = (xs: unknown[]) =>
      xs
        .flat()
        .filter((m) => (m as { ok?: boolean })?.ok === false)
        .map((m) => [(m as { id: number }).id, (m as { error: { code: string } }).error.code]);
    const stats = await window.db!.statistics();
    return {
      bad: flat(answers.bad!),
      old: flat(answers.old!),
      ownWorks,
      malformed: stats.tabs.malformed,
      oldApplied: (await window.db!.get('old')) !== undefined,
    };
  });
  expect(got.bad).toEqual([
    [1, 'InvalidArgument'],
    [2, 'InvalidArgument'],
    [3, 'InvalidArgument'],
    [4, 'InvalidArgument'],
    [5, 'InvalidArgument'],
  ]);
  expect(got.old).toEqual([[1, 'VersionMismatch']]);
  expect(got.oldApplied).toBe(false);
  expect(got.ownWorks).toBe('ok');
  expect(got.malformed).toBeGreaterThanOrEqual(7); // five refused, two dropped, and the old tab's put
  // The leader serves on: a write and a read from both tabs.
  await a.evaluate(() => window.db!.put('a-key', new Uint8Array([1])));
  expect(await b.evaluate(async () => (await window.db!.get('a-key'))?.[0])).toBe(1);
  expect(await a.evaluate(async () => (await window.db!.get('b-key'))?.[0])).toBe(2);
});
