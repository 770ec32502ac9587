// multiGet with the app's own value encoding, in both APIs: its types say a
// `MultiGetResult` when the encoding's values are `Uint8Array`s (a
// decryption, say) and an array otherwise, which the runtime cannot tell
// apart (the type parameter is gone by then); so the result is an array
// that also answers as a `MultiGetResult`, and what the types promise holds
// either way (issue 33, "types that do not match what runs").
import { afterEach, describe, expect, expectTypeOf, test } from 'vitest';
import { type Database, type Encoding, type MultiGetResult, openMemory, type RemoteDatabase } from '../src/index.js';
import { bytes, text } from './helpers.js';
import { Origin } from './tabs-harness.js';

/** Bytes in, bytes out: every byte flipped, as an encryption would change them. */
const flipped: Encoding<Uint8Array> = {
  name: 'flipped',
  encode: (v) => v.map((b) => b ^ 0xff),
  decode: (b) => b.map((x) => x ^ 0xff),
};

/** Objects in, objects out. */
const point: Encoding<{ x: number }> = {
  name: 'point',
  encode: (v) => bytes(String(v.x)),
  decode: (b) => ({ x: Number(text(b)) }),
};

/** What the test needs of either API, awaited. */
interface Api {
  put(key: string, value: Uint8Array): Promise<void>;
  flippedAtOpen(keys: string[]): Promise<MultiGetResult>;
  flippedPerCall(keys: string[]): Promise<MultiGetResult>;
  points(keys: string[]): Promise<({ x: number } | undefined)[]>;
}

function worker(db: Database): Api {
  const flippedDb = db.sublevel<string, Uint8Array>('f', { valueEncoding: flipped });
  return {
    put: async (k, v) => flippedDb.put(k, v),
    flippedAtOpen: async (ks) => flippedDb.multiGet(ks),
    flippedPerCall: async (ks) => flippedDb.multiGet(ks, { valueEncoding: flipped }),
    points: async (ks) => flippedDb.multiGet(ks, { valueEncoding: point }),
  };
}

function remote(o: Origin, db: RemoteDatabase): Api {
  const run = async <T>(p: Promise<T>): Promise<T> => {
    const r = await o.world.until(p);
    if (r === undefined) throw new Error('still pending');
    if (!r.ok) throw r.error;
    return r.value;
  };
  const flippedDb = db.sublevel<string, Uint8Array>('f', { valueEncoding: flipped });
  return {
    put: (k, v) => run(flippedDb.put(k, v)),
    flippedAtOpen: (ks) => run(flippedDb.multiGet(ks)),
    flippedPerCall: (ks) => run(flippedDb.multiGet(ks, { valueEncoding: flipped })),
    points: (ks) => run(flippedDb.multiGet(ks, { valueEncoding: point })),
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

describe.each(apis)('multiGet with an encoding of its own, through %s', (_, make) => {
  test('an Encoding<Uint8Array>, at open or per call: the MultiGetResult its type says, over the decoded bytes', async () => {
    const db = await make();
    await db.put('a', bytes('alpha'));
    await db.put('c', bytes('charlie'));
    for (const r of [await db.flippedAtOpen(['a', 'b', 'c']), await db.flippedPerCall(['a', 'b', 'c'])]) {
      expect(r.length).toBe(3);
      expect(text(r.get(0))).toBe('alpha');
      expect(r.get(1)).toBeUndefined();
      expect([r.has(0), r.has(1), r.has(2)]).toEqual([true, false, true]);
      expect(r.text(2)).toBe('charlie');
      expect(r.copies().map((v) => v && text(v))).toEqual(['alpha', undefined, 'charlie']);
      expect([...r].map((v) => v && text(v))).toEqual(['alpha', undefined, 'charlie']);
      expect(() => r.get(3)).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
      expect(r.released).toBe(false);
      r.release();
      expect(r.released).toBe(true);
    }
    {
      using r = await db.flippedAtOpen(['a']);
      expect(r.text(0)).toBe('alpha');
    }
  });

  test('an encoding of other values: the array its type says, of decoded values', async () => {
    const db = await make();
    await db.put('p', flipped.encode(bytes('12'))); // stored as '12' (put flips it)
    const r = await db.points(['p', 'q']);
    expect(Array.isArray(r)).toBe(true);
    expect(r).toEqual([{ x: 12 }, undefined]);
    expect(Object.keys(r)).toEqual(['0', '1']); // the MultiGetResult methods are not enumerable
  });
});

test('the types are checked by tsc (customTypes below)', () => {
  expect(customTypes).toBeTypeOf('function');
});

/** Types of both APIs: compiled by tsc, never run. */
function customTypes(db: Database<string, Uint8Array>, page: RemoteDatabase<string, Uint8Array>): void {
  expectTypeOf(db.multiGet(['k'], { valueEncoding: flipped })).toEqualTypeOf<MultiGetResult>();
  expectTypeOf(db.multiGet(['k'], { valueEncoding: point })).toEqualTypeOf<({ x: number } | undefined)[]>();
  expectTypeOf(db.get('k', { valueEncoding: flipped })).toEqualTypeOf<Uint8Array | undefined>();
  expectTypeOf(page.multiGet(['k'], { valueEncoding: flipped })).toEqualTypeOf<Promise<MultiGetResult>>();
  expectTypeOf(page.multiGet(['k'], { valueEncoding: point })).toEqualTypeOf<Promise<({ x: number } | undefined)[]>>();
}
