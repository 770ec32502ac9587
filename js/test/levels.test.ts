// Encodings, sublevels and ranges in the worker API beyond the scenarios
// both APIs share (scenarios/levels.js, iterators.js, counts.js, writes.js):
// how a batch encodes string keys, zero-copy reads of bytes values
// (getPinned, views) in sublevels and of the empty key, batches that honour
// a limit, approximateSize of a whole database, and the types the generics
// give every read and write (checked by tsc).
import { describe, expect, expectTypeOf, test } from 'vitest';
import { openMemory, PinnedValue, type MultiGetResult, WriteBatch, type Database, type Encoding, type Key } from '../src/index.js';
import { bytes, fresh, text } from './helpers.js';

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

  test("with bytes values ('view', the default) reads stay zero-copy: getPinned and multiGet hand out views, in sublevels too and for the empty key", async () => {
    const db = await fresh();
    db.put('k', bytes('{"x":1}'));
    const pinned = db.getPinned('k');
    expectTypeOf(pinned).toEqualTypeOf<PinnedValue | undefined>();
    expect(pinned).toBeInstanceOf(PinnedValue);
    pinned!.release();
    const r = db.multiGet(['k']);
    expectTypeOf(r).toEqualTypeOf<MultiGetResult>();
    r.release();
    const bin = db.sublevel<Uint8Array, Uint8Array>('bin', { keyEncoding: 'view', valueEncoding: 'view' });
    bin.put(new Uint8Array([0]), new Uint8Array([1, 2]));
    using v = bin.getPinned(new Uint8Array([0]));
    expect(v?.copy()).toEqual(new Uint8Array([1, 2]));
    db.put('', bytes('the empty key'));
    using e = db.getPinned(new Uint8Array(0));
    expect(e?.text()).toBe('the empty key');
  });
});

describe('ranges', () => {
  test('batches honour a limit', async () => {
    const db = await openMemory<string, string>({ keyEncoding: 'utf8', valueEncoding: 'utf8' });
    for (let i = 0; i < 50; i++) db.put(`k${String(i).padStart(2, '0')}`, `v${i}`);
    const it = db.iterator({ limit: 20, batchSize: 8 });
    const sizes: number[] = [];
    for (const b of it.batches()) sizes.push(b.length);
    expect(sizes).toEqual([8, 8, 4]);
    db.close();
  });

  test('approximateSize() of a whole database is the bytes of its table files', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024 });
    for (let i = 0; i < 3000; i++) db.put(`k${String(i).padStart(5, '0')}`, crypto.getRandomValues(new Uint8Array(100)));
    db.flush();
    await db.idle();
    expect(db.approximateSize()).toBe(db.statistics().properties.tableBytes);
  });
});

describe('types', () => {
  test('the generics type every read and write', async () => {
    const db = await openMemory<string, Note>({ keyEncoding: 'utf8', valueEncoding: 'json' });
    expectTypeOf(db.get('n1')).toEqualTypeOf<Note | undefined>();
    expectTypeOf(db.multiGet(['n1'])).toEqualTypeOf<(Note | undefined)[]>();
    expectTypeOf([...db.iterator()]).toEqualTypeOf<[string, Note][]>();
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
