// connect()'s page cache (src/tabs/page-cache.ts), case by case in the
// simulated browser of tabs-world.ts (page-cache-model.test.ts tries random
// interleavings): what it answers, what empties it, and the races it must
// not lose (a read whose key a write changed while its answer was on the
// way: a write served after the read in the same message, whose record the
// leader posts before the message's answers; a read issued while a write of
// the same connection waits).
import { afterEach, describe, expect, test } from 'vitest';
import { compareBytes } from '../src/core/bytes.js';
import { openMemory } from '../src/index.js';
import { binaryKey, PageCache } from '../src/tabs/page-cache.js';
import type { RemoteDatabase } from '../src/tabs/remote-database.js';
import type { ChangeRecord } from '../src/tabs/wire.js';
import { bytes } from './helpers.js';
import { Origin, outcome } from './tabs-harness.js';

let origin: Origin | undefined;
afterEach(async () => {
  await origin?.dispose();
  origin = undefined;
});

const text = (b: unknown) => (b === undefined ? undefined : new TextDecoder().decode(b as Uint8Array));

/** What `p` resolves to, once the world has run it. */
async function value<T>(o: Origin, p: Promise<T>): Promise<T> {
  const r = await o.world.until(p, 60_000);
  if (r === undefined) throw new Error('still pending');
  if (!r.ok) throw r.error;
  return r.value as T;
}

const hits = async (o: Origin, db: RemoteDatabase) => (await value(o, db.statistics())).pageCache!.hits;

/** Tab A leads; B follows; both with a page cache. */
async function twoTabs(seed = 1, capacity = 64 * 1024) {
  const o = await Origin.create(seed, 'fifo');
  origin = o;
  const a = o.open(o.tab('A'), { pageCacheCapacity: capacity });
  expect(await outcome(o, a.connection.ready)).toBe('ok');
  const b = o.open(o.tab('B'), { pageCacheCapacity: capacity });
  expect(await outcome(o, b.connection.ready)).toBe('ok');
  await o.world.run(100);
  return { o, a: a.db, b: b.db, aTab: o.tabs[0]!, bTab: o.tabs[1]! };
}

describe('the page cache', () => {
  test('answers a value read before from the page, as a copy the caller owns; keeps absent keys too', async () => {
    const { o, b } = await twoTabs();
    await value(o, b.put('k', bytes('v1')));
    expect(text(await value(o, b.get('k')))).toBe('v1');
    const got = (await value(o, b.get('k'))) as Uint8Array;
    got[0] = 0x78;
    expect(text(await value(o, b.get('k')))).toBe('v1');
    expect(await value(o, b.get('nothing'))).toBeUndefined();
    expect(await value(o, b.has('nothing'))).toBe(false);
    expect(await value(o, b.has('k'))).toBe(true);
    const s = (await value(o, b.statistics())).pageCache!;
    expect(s.hits).toBe(4);
    expect(s.entries).toBe(2);
  });

  test('keeps values of every encoding, sublevel and key (decoded anew for each read), under the stored bytes', async () => {
    const { o, a, b } = await twoTabs();
    const notes = b.sublevel<string, { n: number }>('notes', { keyEncoding: 'utf8', valueEncoding: 'json' });
    await value(o, notes.put('é', { n: 1 }));
    const first = await value(o, notes.get('é'));
    first!.n = 99; // (the caller's own object)
    expect(await value(o, notes.get('é'))).toEqual({ n: 1 });
    const texts = b.sublevel<string, string>('texts', { valueEncoding: 'utf8' });
    await value(o, texts.put('k', 'v'));
    expect(await value(o, texts.get('k'))).toBe('v');
    expect(await value(o, texts.get('k', { valueEncoding: 'view' }))).toEqual(bytes('v'));
    const h = await hits(o, b);
    expect(await value(o, texts.get('k'))).toBe('v');
    expect(await hits(o, b)).toBe(h + 1);
    // Another tab's write of the same stored key, through another handle, drops it.
    await value(o, a.sublevel<string, string>('texts', { valueEncoding: 'utf8' }).put('k', 'w'));
    await o.world.run(100);
    expect(await value(o, texts.get('k'))).toBe('w');
    expect(await value(o, notes.get('é'))).toEqual({ n: 1 });
    // The root's keys: a string past ASCII, and bytes, kept under their UTF-8 bytes.
    await value(o, b.put('ü', bytes('x')));
    expect(text(await value(o, b.get('ü')))).toBe('x');
    const before = await hits(o, b);
    expect(text(await value(o, b.get(bytes('ü'))))).toBe('x');
    expect(await hits(o, b)).toBe(before + 1);
    await value(o, a.put(bytes('ü'), bytes('y')));
    await o.world.run(100);
    expect(text(await value(o, b.get('ü')))).toBe('y');
  });

  test("another tab's write reaches the page's cache with its change record", async () => {
    const { o, a, b } = await twoTabs();
    await value(o, a.put('k', bytes('v1')));
    expect(text(await value(o, b.get('k')))).toBe('v1');
    expect(text(await value(o, b.get('k')))).toBe('v1');
    await value(o, a.put('k', bytes('v2')));
    await o.world.run(100);
    expect(text(await value(o, b.get('k')))).toBe('v2');
    // Every kind of write that names a range, or none.
    for (const k of ['r1', 'r2', 'r3']) await value(o, a.put(k, bytes('x')));
    for (const k of ['r1', 'r2', 'r3', 'k']) await value(o, b.get(k));
    await value(o, a.deleteRange('r1', 'r3'));
    await value(o, a.ingest([['r3', bytes('ingested')]] as [string, Uint8Array][]));
    await o.world.run(100);
    expect([await value(o, b.get('r1')), await value(o, b.get('r2'))]).toEqual([undefined, undefined]);
    expect(text(await value(o, b.get('r3')))).toBe('ingested');
    expect(text(await value(o, b.get('k')))).toBe('v2'); // (outside the range: still kept)
  });

  test('an import empties every cache: it changes keys no change record names', async () => {
    const { o, a, b } = await twoTabs();
    // (An import needs an empty database: k is kept as absent.)
    expect(await value(o, b.get('k'))).toBeUndefined();
    expect(await value(o, a.get('k'))).toBeUndefined();
    const src = await openMemory();
    src.put('k', bytes('imported'));
    const image = new Uint8Array(await new Response(src.export()).arrayBuffer());
    src.close();
    expect(await outcome(o, a.import([image]))).toBe('ok');
    expect(text(o.db.get('k'))).toBe('imported');
    expect(text(await value(o, a.get('k')))).toBe('imported');
    await o.world.run(100);
    expect(text(await value(o, b.get('k')))).toBe('imported');
  });

  test("a read's answer that a write of its key overtook is not kept (the write's record came first)", async () => {
    const { o, a, b } = await twoTabs();
    await value(o, a.put('k', bytes('old')));
    // In one task: a read of k (not kept yet), then a write of k. The
    // leader reads, writes, posts the write's record, then both answers.
    const read = b.get('k');
    const write = b.put('k', bytes('new'));
    expect(text(await value(o, read))).toBe('old');
    await value(o, write);
    expect(text(await value(o, b.get('k')))).toBe('new');
  });

  test('a read issued while a write of the same connection waits goes to the leader, after it (calls run in order)', async () => {
    const { o, b } = await twoTabs();
    await value(o, b.put('k', bytes('v1')));
    await value(o, b.get('k'));
    const before = await hits(o, b);
    const write = b.put('k', bytes('v2'));
    const read = b.get('k');
    expect(text(await value(o, read))).toBe('v2');
    await value(o, write);
    expect(await hits(o, b)).toBe(before);
  });

  test('a new leader empties the cache: records the page missed between leaders cannot stale it', async () => {
    const { o, a, b, aTab } = await twoTabs();
    await value(o, a.put('k', bytes('v1')));
    expect(text(await value(o, b.get('k')))).toBe('v1');
    o.kill(aTab);
    await o.world.run(5_000);
    expect(b.isLeader).toBe(true);
    // Written while B had no line to any leader's records.
    o.db.put('k', bytes('behind its back'));
    const c = o.open(o.tab('C'), { pageCacheCapacity: 1024 });
    expect(await outcome(o, c.connection.ready)).toBe('ok');
    expect(text(await value(o, b.get('k')))).toBe('behind its back');
    expect(text(await value(o, c.db.get('k')))).toBe('behind its back');
  });

  test('holds at most its capacity, least recently used going first; a value over a quarter of it is not kept', async () => {
    const { o, b } = await twoTabs(1, 2_000);
    for (let i = 0; i < 40; i++) await value(o, b.put(`k${i}`, bytes('x'.repeat(50))));
    await value(o, b.put('big', new Uint8Array(600)));
    for (let i = 0; i < 40; i++) await value(o, b.get(`k${i}`));
    await value(o, b.get('k39'));
    await value(o, b.get('big'));
    const s = (await value(o, b.statistics())).pageCache!;
    expect(s.bytes).toBeLessThanOrEqual(2_000);
    expect(s.entries).toBeGreaterThan(5);
    expect(s.entries).toBeLessThan(40);
    const h = s.hits;
    await value(o, b.get('k39')); // recent: kept
    await value(o, b.get('k0')); // oldest: gone
    await value(o, b.get('big')); // too big: never kept
    expect((await value(o, b.statistics())).pageCache!.hits).toBe(h + 1);
  });

  test('non-ASCII string keys and their bytes read alike, cached or not; a lone surrogate fails on the page', async () => {
    const { o, a, b } = await twoTabs();
    const keys = ['ключ', 'naïve key', '鍵', 'plain', '😀'];
    for (const k of keys) await value(o, a.put(k, bytes(`v:${k}`)));
    for (const db of [a, b]) {
      for (let round = 0; round < 2; round++) {
        for (const k of keys) {
          expect(text(await value(o, db.get(k)))).toBe(`v:${k}`);
          // The same key given as its UTF-8 bytes: the same entry.
          expect(text(await value(o, db.get(new TextEncoder().encode(k))))).toBe(`v:${k}`);
          expect(await value(o, db.has(k))).toBe(true);
        }
      }
    }
    expect(await hits(o, b)).toBeGreaterThan(0);
    // A write through bytes is seen through the string.
    await value(o, a.put(new TextEncoder().encode('ключ'), bytes('v2')));
    await o.world.run(100);
    expect(text(await value(o, b.get('ключ')))).toBe('v2');
    const bad = await o.world.until(b.get('a\ud800b'), 60_000);
    expect(bad?.ok).toBe(false);
    expect((bad as { error: { code: string } }).error.code).toBe('InvalidArgument');
  });

  test('connect() checks pageCacheCapacity', async () => {
    const { connect } = await import('../src/tabs/connect.js');
    for (const bad of [-1, 1.5, '1000', 2 ** 40]) {
      await expect(connect('x', { pageCacheCapacity: bad as number })).rejects.toMatchObject({ code: 'InvalidArgument' });
    }
  });
});

describe('the page cache alone', () => {
  test('its keys order as the bytes do', () => {
    const keys = [[], [0], [0, 0], [1], [0x7f], [0x80], [0xff], [0xff, 0], [0x61, 0x62], [0xc3, 0xa9]].map((k) => new Uint8Array(k));
    for (const x of keys)
      for (const y of keys) expect(Math.sign(compareBytes(x, y))).toBe(binaryKey(x) < binaryKey(y) ? -1 : binaryKey(x) === binaryKey(y) ? 0 : 1);
    const long = new Uint8Array(5000).map((_, i) => i % 251);
    expect(binaryKey(long).length).toBe(5000);
    expect(binaryKey(long).charCodeAt(4999)).toBe(4999 % 251);
  });

  test('a record that does not follow the last one heard from its leader empties it (records were lost)', () => {
    const c = new PageCache(10_000);
    c.link('L');
    const rec = (first: number, last: number, key?: string): ChangeRecord => {
      const k = key === undefined ? new Uint8Array(0) : bytes(key);
      return {
        first,
        last,
        kinds: new Uint8Array(key === undefined ? [] : [1]),
        bounds: new Uint32Array(key === undefined ? [0] : [0, k.length, k.length]),
        keys: k,
        from: 'L',
      };
    };
    c.hear(rec(5, 5));
    const f = c.fill('a')!;
    c.keep(f, bytes('1'));
    expect(c.lookup('a', false)).not.toBe(Symbol.for('x'));
    expect(c.statistics().entries).toBe(1);
    c.hear(rec(6, 6, 'zzz'));
    expect(c.statistics().entries).toBe(1);
    c.hear(rec(8, 8, 'zzz')); // 7 never came
    expect(c.statistics().entries).toBe(0);
    expect(c.statistics().resets).toBe(1);
  });
});
