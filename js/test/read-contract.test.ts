// The read contract of DESIGN.md ("Reads: owned values by default,
// zero-copy where asked"), one body run against a worker's `Database`
// (`openMemory`) and against `connect()`'s `RemoteDatabase` (the real
// client and leader in the simulated browser of tabs-harness.ts): `get`
// returns a value the caller owns, safe to transfer; `multiGet` returns a
// `MultiGetResult` in both; a call's own value encoding decodes; the
// worker's extra, `getPinned`, on its own. The type-level checks are
// compiled by `tsc -p js/tsconfig.test.json` (in `npm test`).
import { afterEach, describe, expect, expectTypeOf, test } from 'vitest';
import { boundaryCounters, type Database, type MultiGetResult, openMemory, PinnedValue, type RemoteDatabase } from '../src/index.js';
import { bytes, text } from './helpers.js';
import { Origin } from './tabs-harness.js';

/** What the scenario needs of either API: each call awaited. */
interface Api {
  put(key: string, value: Uint8Array): Promise<void>;
  get(key: string): Promise<Uint8Array | undefined>;
  getText(key: string): Promise<string | undefined>;
  multiGet(keys: string[]): Promise<MultiGetResult>;
  multiGetText(keys: string[]): Promise<(string | undefined)[]>;
  has(key: string): Promise<boolean>;
  hasMany(keys: string[]): Promise<boolean[]>;
  del(key: string): Promise<void>;
}

function worker(db: Database): Api {
  return {
    put: async (k, v) => db.put(k, v),
    get: async (k) => db.get(k),
    getText: async (k) => db.get(k, { valueEncoding: 'utf8' }),
    multiGet: async (ks) => db.multiGet(ks),
    multiGetText: async (ks) => db.multiGet(ks, { valueEncoding: 'utf8' }),
    has: async (k) => db.has(k),
    hasMany: async (ks) => db.hasMany(ks),
    del: async (k) => db.delete(k),
  };
}

/** A remote handle whose promises the simulated world runs to their end. */
function remote(o: Origin, db: RemoteDatabase): Api {
  const run = async <T>(p: Promise<T>): Promise<T> => {
    const r = await o.world.until(p);
    if (r === undefined) throw new Error('still pending');
    if (!r.ok) throw r.error;
    return r.value;
  };
  return {
    put: (k, v) => run(db.put(k, v)),
    get: (k) => run(db.get(k)),
    getText: (k) => run(db.get(k, { valueEncoding: 'utf8' })),
    multiGet: (ks) => run(db.multiGet(ks)),
    multiGetText: (ks) => run(db.multiGet(ks, { valueEncoding: 'utf8' })),
    has: (k) => run(db.has(k)),
    hasMany: (ks) => run(db.hasMany(ks)),
    del: (k) => run(db.delete(k)),
  };
}

let origin: Origin | undefined;
afterEach(async () => {
  await origin?.dispose();
  origin = undefined;
});

const apis: [string, () => Promise<Api>][] = [
  ['open() in a worker', async () => worker(await openMemory())],
  [
    'connect()',
    async () => {
      const o = await Origin.create(1, 'fifo');
      origin = o;
      const r = await o.world.until(o.connect(o.tab('A')));
      if (r === undefined || !r.ok) throw new Error('connect() failed');
      return remote(o, r.value);
    },
  ],
];

describe.each(apis)('reads through %s', (_, make) => {
  test('get returns a value the caller owns: a buffer of its own, which a transfer empties without touching any other value', async () => {
    const db = await make();
    await db.put('a', bytes('alpha'));
    await db.put('b', bytes('bravo'));
    const a = (await db.get('a'))!;
    const b = (await db.get('b'))!;
    expect(a).toBeInstanceOf(Uint8Array);
    expect(text(a)).toBe('alpha');
    expect(a.byteOffset).toBe(0);
    expect(a.buffer.byteLength).toBe(a.length);
    expect(a.buffer).not.toBe(b.buffer);
    structuredClone(a.buffer, { transfer: [a.buffer] });
    expect(a.length).toBe(0);
    expect(text(b)).toBe('bravo');
    expect(text(await db.get('a'))).toBe('alpha');
    expect(await db.get('missing')).toBeUndefined();
  });

  test('multiGet returns a MultiGetResult: length, get, has, text, copy, iteration, and Released after release()', async () => {
    const db = await make();
    await db.put('a', bytes('alpha'));
    await db.put('c', bytes('charlie'));
    const r = await db.multiGet(['a', 'b', 'c']);
    expect(r.length).toBe(3);
    expect(text(r.get(0))).toBe('alpha');
    expect(r.get(1)).toBeUndefined();
    expect([r.has(0), r.has(1), r.has(2)]).toEqual([true, false, true]);
    expect(r.text(2)).toBe('charlie');
    const kept = r.copy(0)!;
    expect([...r].map((v) => (v === undefined ? null : text(v)))).toEqual(['alpha', null, 'charlie']);
    expect(r.copies().map((v) => v?.length)).toEqual([5, undefined, 7]);
    expect(() => r.get(3)).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
    expect(r.released).toBe(false);
    r.release();
    r.release(); // twice does nothing
    expect(r.released).toBe(true);
    expect(() => r.get(0)).toThrow(expect.objectContaining({ code: 'Released' }));
    expect(text(kept)).toBe('alpha'); // a copy outlives its result
  });

  test('has and hasMany say which keys have a value, deleted ones not, and copy no value out', async () => {
    const db = await make();
    await db.put('a', bytes('alpha'));
    await db.put('c', bytes('x'.repeat(10_000)));
    await db.put('gone', bytes('soon'));
    expect(await db.has('gone')).toBe(true);
    await db.del('gone');
    expect(await db.has('a')).toBe(true);
    expect(await db.has('b')).toBe(false);
    expect(await db.has('gone')).toBe(false);
    expect(await db.hasMany(['a', 'b', 'c', 'gone'])).toEqual([true, false, true, false]);
    expect(await db.hasMany([])).toEqual([]);
    await expect(db.hasMany('a' as unknown as string[])).rejects.toMatchObject({ code: 'InvalidArgument' });
  });

  test("a call's own value encoding decodes get and multiGet", async () => {
    const db = await make();
    await db.put('a', bytes('alpha'));
    expect(await db.getText('a')).toBe('alpha');
    expect(await db.multiGetText(['a', 'b'])).toEqual(['alpha', undefined]);
  });
});

describe('the worker only', () => {
  test('has and hasMany copy no value out of wasm memory, and read at a snapshot', async () => {
    const db = await openMemory();
    db.put('a', bytes('x'.repeat(5_000)));
    const snap = db.snapshot();
    db.delete('a');
    const before = boundaryCounters().copiedBytes;
    expect(db.has('a')).toBe(false);
    expect(db.has('a', { snapshot: snap })).toBe(true);
    expect(db.hasMany(['a', 'b'], { snapshot: snap })).toEqual([true, false]);
    expect(boundaryCounters().copiedBytes).toBe(before);
    snap.release();
    db.close();
  });

  test('getPinned reads without a copy: a PinnedValue released by using or release()', async () => {
    const db = await openMemory();
    db.put('a', bytes('alpha'));
    {
      using v = db.getPinned('a')!;
      expect(v).toBeInstanceOf(PinnedValue);
      expect(text(v.bytes)).toBe('alpha');
      expect(v.text()).toBe('alpha');
    }
    const v = db.getPinned('a')!;
    v.release();
    expect(() => v.bytes).toThrow(expect.objectContaining({ code: 'Released' }));
    expect(db.getPinned('missing')).toBeUndefined();
    db.close();
  });
});

test('the types of both APIs are checked by tsc (readTypes below)', () => {
  expect(readTypes).toBeTypeOf('function');
});

/** Types of both APIs: compiled by tsc, never run. */
function readTypes(db: Database, notes: Database<string, { n: number }>, page: RemoteDatabase, pageNotes: RemoteDatabase<string, { n: number }>): void {
  expectTypeOf(db.get('k')).toEqualTypeOf<Uint8Array | undefined>();
  expectTypeOf(db.getPinned('k')).toEqualTypeOf<PinnedValue | undefined>();
  expectTypeOf(db.multiGet(['k'])).toEqualTypeOf<MultiGetResult>();
  expectTypeOf(db.get('k', { valueEncoding: 'utf8' })).toEqualTypeOf<string | undefined>();
  expectTypeOf(db.get('k', { valueEncoding: 'json' })).toEqualTypeOf<unknown>();
  expectTypeOf(db.multiGet(['k'], { valueEncoding: 'utf8' })).toEqualTypeOf<(string | undefined)[]>();
  expectTypeOf(notes.get('k')).toEqualTypeOf<{ n: number } | undefined>();
  expectTypeOf(notes.multiGet(['k'])).toEqualTypeOf<({ n: number } | undefined)[]>();
  expectTypeOf(notes.get('k', { valueEncoding: 'view' })).toEqualTypeOf<Uint8Array | undefined>();

  expectTypeOf(page.get('k')).toEqualTypeOf<Promise<Uint8Array | undefined>>();
  expectTypeOf(page.multiGet(['k'])).toEqualTypeOf<Promise<MultiGetResult>>();
  expectTypeOf(page.get('k', { valueEncoding: 'utf8' })).toEqualTypeOf<Promise<string | undefined>>();
  expectTypeOf(page.multiGet(['k'], { valueEncoding: 'utf8' })).toEqualTypeOf<Promise<(string | undefined)[]>>();
  expectTypeOf(pageNotes.get('k')).toEqualTypeOf<Promise<{ n: number } | undefined>>();
  expectTypeOf(pageNotes.multiGet(['k'])).toEqualTypeOf<Promise<({ n: number } | undefined)[]>>();
  // getPinned is the worker's alone.
  expectTypeOf(page).not.toHaveProperty('getPinned');
}
