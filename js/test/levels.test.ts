// Encodings, sublevels, ranges (limit, keys/values), count, approximateSize,
// clear and the empty key, through the worker API (`open`/`openMemory`).
// The same behaviour through `connect()` is in levels-remote.test.ts (the
// leader in Node) and tests/e2e/connect.spec.ts (real tabs).
import { describe, expect, expectTypeOf, test } from 'vitest';
import { openMemory, PinnedValue, type MultiGetResult, WriteBatch, type Database, type Encoding, type Key } from '../src/index.js';
import { bytes, caught, fresh, text } from './helpers.js';

interface Note {
  title: string;
  tags: string[];
}

describe('encodings', () => {
  test('a batch encodes a string key as its UTF-8 bytes, whatever the path: short ASCII, longer, non-ASCII, empty, in a sublevel, as utf8 keys', async () => {
    const db = await openMemory();
    const sub = db.sublevel('s');
    const utf8Keys = (await openMemory({ keyEncoding: 'utf8' })).sublevel('t', { keyEncoding: 'utf8' });
    const keys = ['', 'k', 'a'.repeat(64), 'b'.repeat(65), 'caf\u00e9', 'x\u007f', '\u{1f600}z', `${'c'.repeat(63)}\u00e9`];
    const v = bytes('v');
    for (const [handle, prefix] of [
      [db, ''],
      [sub, '!s!'],
      [utf8Keys, '!t!'],
    ] as const) {
      const fromStrings = handle.batch();
      const fromBytes = new WriteBatch();
      for (const k of keys) {
        (fromStrings as WriteBatch<string, Uint8Array>).put(k, v);
        fromBytes.put(new TextEncoder().encode(prefix + k), v);
      }
      expect([...fromStrings.encoded()], prefix).toEqual([...fromBytes.encoded()]);
    }
    // And written, each is read back by its string.
    const b = db.batch();
    for (const k of keys) b.put(k, bytes(`=${k}`));
    db.write(b);
    for (const k of keys) expect(text(db.get(k))).toBe(`=${k}`);
  });

  test("'utf8' and 'json' values and keys round-trip; reads are typed by the generics", async () => {
    const db = await openMemory<string, Note>({ keyEncoding: 'utf8', valueEncoding: 'json' });
    db.put('n1', { title: 'first', tags: ['a'] });
    db.put('n2', { title: 'second', tags: [] });
    const got = db.get('n1');
    expectTypeOf(got).toEqualTypeOf<Note | undefined>();
    expect(got).toEqual({ title: 'first', tags: ['a'] });
    expect(db.get('n2')).toEqual({ title: 'second', tags: [] });
    expect(db.get('nope')).toBeUndefined();
    const many = db.multiGet(['n2', 'nope', 'n1']);
    expectTypeOf(many).toEqualTypeOf<(Note | undefined)[]>();
    expect(many.map((n) => n?.title)).toEqual(['second', undefined, 'first']);
    const entries = [...db.iterator()];
    expectTypeOf(entries).toEqualTypeOf<[string, Note][]>();
    expect(entries).toEqual([
      ['n1', { title: 'first', tags: ['a'] }],
      ['n2', { title: 'second', tags: [] }],
    ]);
    expect([...db.keys()]).toEqual(['n1', 'n2']);
    expect([...db.values({ reverse: true })].map((n) => n.title)).toEqual(['second', 'first']);
    // Stored as JSON text, UTF-8 keys: the bytes underneath are plain.
    const raw = await rawOf(db);
    expect(raw).toEqual([
      ['n1', '{"title":"first","tags":["a"]}'],
      ['n2', '{"title":"second","tags":[]}'],
    ]);
  });

  test("bytes stay zero-copy with the default 'view' encoding, and a call may decode differently", async () => {
    const db = await fresh();
    db.put('k', bytes('{"x":1}'));
    const pinned = db.getPinned('k');
    expectTypeOf(pinned).toEqualTypeOf<PinnedValue | undefined>();
    expect(pinned).toBeInstanceOf(PinnedValue);
    pinned!.release();
    const r = db.multiGet(['k']);
    expectTypeOf(r).toEqualTypeOf<MultiGetResult>();
    r.release();
    expect(db.get('k', { valueEncoding: 'json' })).toEqual({ x: 1 });
    expect(db.get('k', { valueEncoding: 'utf8' })).toBe('{"x":1}');
    expect(db.multiGet(['k', 'z'], { valueEncoding: 'utf8' })).toEqual(['{"x":1}', undefined]);
    expect([...db.iterator({ valueEncoding: 'utf8' })]).toEqual([[bytes('k'), '{"x":1}']]);
  });

  test('a custom encoding is used both ways, and what it gets wrong is a typed error', async () => {
    const u32: Encoding<number> = {
      name: 'u32',
      encode: (n) => new Uint8Array(new Uint32Array([n]).buffer),
      decode: (b) => new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(0, true),
    };
    const db = await openMemory<string, number>({ keyEncoding: 'utf8', valueEncoding: u32 });
    db.put('a', 7);
    expect(db.get('a')).toBe(7);
    const broken: Encoding<number> = { encode: () => 'no' as unknown as Uint8Array, decode: () => 0 };
    const bad = db.sublevel<string, number>('bad', { valueEncoding: broken });
    expect(caught(() => bad.put('x', 1)).message).toMatch(/encode must return a Uint8Array/);
    const throwing: Encoding<number> = {
      encode: () => new Uint8Array(1),
      decode: () => {
        throw new RangeError('boom');
      },
    };
    const t = db.sublevel<string, number>('t', { valueEncoding: throwing });
    t.put('x', 1);
    const e = caught(() => t.get('x'));
    expect(e.code).toBe('InvalidArgument');
    expect(e.message).toMatch(/could not decode a stored value: boom/);
    expect(e.cause).toBeInstanceOf(RangeError);
  });

  test('wrong values for an encoding, bad encodings, and bytes a decoder cannot read are InvalidArgument', async () => {
    const db = await openMemory<string, unknown>({ keyEncoding: 'utf8', valueEncoding: 'json' });
    expect(caught(() => db.put('f', () => 1)).message).toMatch(/'json' encoding cannot encode/);
    expect(caught(() => db.put('u', undefined)).code).toBe('InvalidArgument');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(caught(() => db.put('c', cyclic)).code).toBe('InvalidArgument');
    expect(caught(() => db.put(7 as unknown as string, 1)).message).toMatch(/'utf8' encoding takes strings/);
    await expect(openMemory({ valueEncoding: 'yaml' as never })).rejects.toMatchObject({ code: 'InvalidArgument' });
    await expect(openMemory({ keyEncoding: { encode: 1 } as never })).rejects.toMatchObject({ code: 'InvalidArgument' });
    // Bytes written without the encoding.
    db.sublevel('raw', { valueEncoding: 'view' }).put('x', new Uint8Array([0xff, 0xfe]));
    expect(caught(() => db.sublevel('raw').get('x')).message).toMatch(/not valid UTF-8/);
    db.sublevel('raw', { valueEncoding: 'utf8' }).put('y', 'not json');
    expect(caught(() => db.sublevel('raw').get('y')).message).toMatch(/not JSON/);
  });
});

describe('sublevels', () => {
  test('keep their keys apart, nest, and each reads, iterates, counts and clears only its own', async () => {
    const db = await openMemory<string, string>({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
    const users = db.sublevel('users');
    const posts = db.sublevel('posts');
    const drafts = posts.sublevel('drafts');
    const userz = db.sublevel('users2'); // a name that extends another's
    db.put('top', 'root value');
    users.put('ann', 'u-ann');
    users.put('bob', 'u-bob');
    userz.put('ann', 'u2-ann');
    posts.put('p1', 'post 1');
    drafts.put('p1', 'draft 1');
    expect(users.get('ann')).toBe('u-ann');
    expect(userz.get('ann')).toBe('u2-ann');
    expect(posts.get('p1')).toBe('post 1');
    expect(drafts.get('p1')).toBe('draft 1');
    expect(db.get('ann')).toBeUndefined();
    expect([...users.keys()]).toEqual(['ann', 'bob']);
    // A parent's range holds its nested sublevels' keys, as in the Level packages.
    expect([...posts.iterator()]).toEqual([
      ['!drafts!p1', 'draft 1'],
      ['p1', 'post 1'],
    ]);
    expect([...drafts.entries()]).toEqual([['p1', 'draft 1']]);
    expect(users.count()).toBe(2);
    expect(userz.count()).toBe(1);
    expect(posts.count()).toBe(2);
    expect(db.count()).toBe(6);
    expect(drafts.path).toEqual(['posts', 'drafts']);
    // Prefixes as documented in docs/format.md.
    expect((await rawOf(db)).map(([k]) => k)).toEqual(['!posts!!drafts!p1', '!posts!p1', '!users!ann', '!users!bob', '!users2!ann', 'top']);
    users.clear();
    expect(users.count()).toBe(0);
    expect(userz.get('ann')).toBe('u2-ann');
    posts.clear();
    expect(drafts.get('p1')).toBeUndefined(); // a nested sublevel is inside its parent's range
    expect(db.get('top')).toBe('root value');
    // A sublevel's own encodings; the parent's by default.
    const bin = db.sublevel<Uint8Array, Uint8Array>('bin', { keyEncoding: 'view', valueEncoding: 'view' });
    bin.put(new Uint8Array([0]), new Uint8Array([1, 2]));
    using v = bin.getPinned(new Uint8Array([0]));
    expect(v?.copy()).toEqual(new Uint8Array([1, 2]));
    expect(db.sublevel('inherit').sublevel('x').count()).toBe(0);
  });

  test('names are checked', async () => {
    const db = await fresh();
    for (const bad of ['', 'a!b', '!', 3, undefined, '\ud800'])
      expect(caught(() => db.sublevel(bad as string)).message).toMatch(/sublevel name must be a non-empty string without '!'/);
  });

  test('a batch and a transaction span sublevels atomically', async () => {
    const db = await openMemory<string, string>({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
    const a = db.sublevel('a');
    const b = db.sublevel<string, number>('b', { valueEncoding: 'json' });
    const batch = a.batch().put('x', 'ax').put('y', 'ay');
    batch.in(b).put('x', 42).delete('gone');
    batch.in(db).put('root', 'r');
    expect(batch.length).toBe(5);
    db.write(batch);
    expect(a.get('x')).toBe('ax');
    expect(b.get('x')).toBe(42);
    expect(db.get('root')).toBe('r');
    // A bad update anywhere in the batch: nothing of it is written.
    expect(
      caught(() =>
        a
          .batch()
          .put('z', 'az')
          .in(b)
          .put('z', undefined as unknown as number),
      ).code,
    ).toBe('InvalidArgument');
    expect(a.get('z')).toBeUndefined();

    await db.transaction((tx) => {
      const tb = tx.in(b);
      const n = tb.getForUpdate('x') ?? 0;
      tb.put('x', n + 1);
      tx.in(a).put('x', `ax${n + 1}`);
      expect(tb.get('x')).toBe(43); // own writes, decoded
      expect([...tx.in(a).iterator()]).toEqual([
        ['x', 'ax43'],
        ['y', 'ay'],
      ]);
    });
    expect(b.get('x')).toBe(43);
    expect(a.get('x')).toBe('ax43');
    const other = await openMemory();
    await expect(db.transaction((tx) => tx.in(other as never))).rejects.toMatchObject({ code: 'InvalidArgument' });
    other.close();
    // update() with decoded values.
    expect(await b.update('x', (n) => (n ?? 0) * 2)).toBe(86);
    expect(await b.update('x', () => null)).toBeUndefined();
    expect(b.get('x')).toBeUndefined();
  });

  test("merge and deleteRange take a sublevel's keys", async () => {
    const db = await openMemory({ mergeOperator: 'append', keyEncoding: 'utf8' });
    const log = db.sublevel('log');
    log.merge('l', bytes('a'));
    log.merge('l', bytes('b'));
    expect(text(log.get('l'))).toBe('ab');
    expect(db.get('l')).toBeUndefined();
    log.put('m', bytes('1'));
    log.put('n', bytes('2'));
    log.deleteRange('l', 'n');
    expect([...log.keys()]).toEqual(['n']);
  });
});

describe('ranges', () => {
  test('limit, keys() and values() in both directions, and gt/gte/lt/lte everywhere', async () => {
    const db = await openMemory<string, string>({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
    for (let i = 0; i < 50; i++) db.put(`k${String(i).padStart(2, '0')}`, `v${i}`);
    expect([...db.keys({ limit: 3 })]).toEqual(['k00', 'k01', 'k02']);
    expect([...db.keys({ limit: 2, reverse: true, lt: 'k10' })]).toEqual(['k09', 'k08']);
    expect([...db.values({ gt: 'k47' })]).toEqual(['v48', 'v49']);
    expect([...db.iterator({ gte: 'k10', lte: 'k12', limit: 10 })].map(([k]) => k)).toEqual(['k10', 'k11', 'k12']);
    expect([...db.iterator({ limit: 0 })]).toEqual([]);
    expect([...db.keys({ limit: Infinity })].length).toBe(50);
    expect([...db.keys({ limit: -1 })].length).toBe(50);
    let seen = 0;
    for await (const k of db.keys({ limit: 40 })) {
      expect(typeof k).toBe('string');
      seen++;
    }
    expect(seen).toBe(40);
    // Batches honour the limit too.
    const it = db.iterator({ limit: 20, batchSize: 8 });
    const sizes: number[] = [];
    for (const b of it.batches()) sizes.push(b.length);
    expect(sizes).toEqual([8, 8, 4]);
    for (const bad of [1.5, -2, '3', Number.NaN]) expect(caught(() => db.iterator({ limit: bad as number })).message).toMatch(/limit must be/);
    expect(db.count({ gte: 'k10', lt: 'k20' })).toBe(10);
    expect(db.count({ gt: 'k10', lte: 'k20' })).toBe(10);
    expect(db.count({ gte: 'k20', lt: 'k10' })).toBe(0);
    db.clear({ gt: 'k10', lte: 'k20' });
    expect(db.count()).toBe(40);
    expect(db.get('k10')).toBe('v10');
    expect(db.get('k21')).toBe('v21');
  });

  test('count is exact at a snapshot, and clear() is one range tombstone', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024 });
    for (let i = 0; i < 5000; i++) db.put(`key${String(i).padStart(5, '0')}`, new Uint8Array(40));
    db.flush();
    const snap = db.snapshot();
    for (let i = 0; i < 5000; i += 2) db.delete(`key${String(i).padStart(5, '0')}`);
    expect(db.count()).toBe(2500);
    expect(db.count({ snapshot: snap })).toBe(5000);
    const before = db.statistics().tickers['rocksdb.number.keys.written'] ?? 0;
    db.clear();
    expect(db.count()).toBe(0);
    expect(db.count({ snapshot: snap })).toBe(5000);
    // One update written (a range delete), not one per key.
    expect((db.statistics().tickers['rocksdb.number.keys.written'] ?? 0) - before).toBeLessThanOrEqual(1);
    snap.release();
    db.clear(); // nothing left: nothing to do
    expect(caught(() => db.clear({ gt: 'a', gte: 'b' })).message).toMatch(/gt or gte/);
    expect(caught(() => db.count(null as never)).code).toBe('InvalidArgument');
  });

  test('approximateSize follows the data from the indexes, and a sublevel measures its own', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024 });
    expect(db.approximateSize()).toBe(0);
    const big = db.sublevel('big');
    const small = db.sublevel('small');
    // Random values: lz4 would shrink repeated bytes to next to nothing.
    const random = () => crypto.getRandomValues(new Uint8Array(100));
    for (let i = 0; i < 3000; i++) big.put(`k${String(i).padStart(5, '0')}`, random());
    for (let i = 0; i < 100; i++) small.put(`k${String(i).padStart(5, '0')}`, random());
    db.flush();
    await db.idle();
    const all = db.approximateSize();
    expect(all).toBe(db.statistics().properties.tableBytes);
    const b = big.approximateSize();
    const s = small.approximateSize();
    expect(b).toBeGreaterThan(10 * s);
    expect(b + s).toBeLessThanOrEqual(all + 8192);
    expect(big.approximateSize({ gte: 'k01000', lt: 'k02000' })).toBeLessThan(b / 2);
    expect(db.approximateSize({ gte: 'z' })).toBe(0);
  });
});

describe('the empty key', () => {
  test('is a key in every call: put, get, getPinned, multiGet, iterators, delete, ranges, batches, transactions', async () => {
    const db = await fresh();
    db.put('', bytes('empty'));
    db.put(new Uint8Array(0), bytes('same key'));
    expect(text(db.get(''))).toBe('same key');
    using v = db.getPinned(new Uint8Array(0));
    expect(v?.text()).toBe('same key');
    using m = db.multiGet(['', 'a']);
    expect(text(m.get(0))).toBe('same key');
    db.put('a', bytes('a'));
    expect([...db.keys()].map((k) => text(k))).toEqual(['', 'a']);
    expect([...db.keys({ lt: 'a' })].map((k) => text(k))).toEqual(['']);
    expect([...db.keys({ gt: '' })].map((k) => text(k))).toEqual(['a']);
    expect(db.count({ lte: '' })).toBe(1);
    db.deleteRange('', 'a');
    expect(db.get('')).toBeUndefined();
    db.write(new WriteBatch().put('', bytes('batch')));
    expect(text(db.get(''))).toBe('batch');
    await db.transaction((tx) => {
      expect(text(tx.get(''))).toBe('batch');
      tx.delete('');
    });
    expect(db.get('')).toBeUndefined();
    // In a sublevel, the empty key is the sublevel's first.
    const s = db.sublevel('s', { keyEncoding: 'utf8' });
    s.put('', bytes('first'));
    s.put('b', bytes('second'));
    expect([...s.keys()]).toEqual(['', 'b']);
  });
});

describe('types', () => {
  test('the generics type every read and write', async () => {
    const db = await openMemory<string, Note>({ keyEncoding: 'utf8', valueEncoding: 'json' });
    expectTypeOf(db).toEqualTypeOf<Database<string, Note>>();
    expectTypeOf(db.put).parameter(1).toEqualTypeOf<Note>();
    expectTypeOf(db.sublevel('x')).toEqualTypeOf<Database<string, Note>>();
    expectTypeOf(db.sublevel<number, string>('y', { keyEncoding: 'json', valueEncoding: 'utf8' }).get(1)).toEqualTypeOf<string | undefined>();
    expectTypeOf(db.batch()).toEqualTypeOf<WriteBatch<string, Note>>();
    expectTypeOf(db.update).parameter(1).parameter(0).toEqualTypeOf<Note | undefined>();
    await db.transaction((tx) => {
      expectTypeOf(tx.get('k')).toEqualTypeOf<Note | undefined>();
    });
    const plain = await fresh();
    expectTypeOf([...plain.keys()]).toEqualTypeOf<Uint8Array[]>();
    // Named encodings type a sublevel without type arguments.
    expectTypeOf(plain.sublevel('t', { keyEncoding: 'utf8', valueEncoding: 'utf8' })).toEqualTypeOf<Database<string, string>>();
    expectTypeOf(plain.sublevel('j', { valueEncoding: 'json' })).toEqualTypeOf<Database<Key, unknown>>();
    expectTypeOf(plain.sublevel('v', { keyEncoding: 'utf8' })).toEqualTypeOf<Database<string, Uint8Array>>();
    const u32: Encoding<number> = { encode: (n) => new Uint8Array([n]), decode: (b) => b[0]! };
    expectTypeOf(plain.sublevel('n', { valueEncoding: u32 })).toEqualTypeOf<Database<Key, number>>();
    expectTypeOf(plain.sublevel('same')).toEqualTypeOf<Database<Key, Uint8Array>>();
    const typed = await openMemory({ keyEncoding: 'utf8', valueEncoding: 'utf8', writeBufferSize: 1 << 20 });
    expectTypeOf(typed).toEqualTypeOf<Database<string, string>>();
    typed.close();
    const opts = { sync: false };
    const untyped = await openMemory(opts);
    expectTypeOf(untyped).toEqualTypeOf<Database<Key, Uint8Array>>();
    untyped.close();
    // @ts-expect-error: a Note database takes Notes
    expect(() => db.put('k', new Uint8Array(1))).not.toThrow(); // (JSON encodes a Uint8Array as an object)
  });
});

/** Every stored key and value of the database `db` (the root, not a sublevel), as text. */
async function rawOf(db: object): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (const [k, v] of (db as Database).iterator({ keyEncoding: 'view', valueEncoding: 'view' })) out.push([text(k)!, text(v)!]);
  return out;
}
