// The public API of `siltdb` against the real wasm build, in Node.
import { describe, expect, test } from 'vitest';
import { openMemory, simd128Enabled, WriteBatch, type Database } from '../src/index.js';
import { bytes, caught, fresh, text } from './helpers.js';

describe('round trips', () => {
  test('a value put is the value got, byte for byte', async () => {
    const db = await fresh();
    const value = new Uint8Array(256).map((_, i) => i);
    db.put(bytes('k'), value);
    expect(db.get(bytes('k'))).toEqual(value);
  });

  test('the latest put wins', async () => {
    const db = await fresh();
    db.put(bytes('k'), bytes('one'));
    db.put(bytes('k'), bytes('two'));
    expect(text(db.get(bytes('k')))).toBe('two');
  });

  test('an empty value is stored and is not "missing"', async () => {
    const db = await fresh();
    db.put(bytes('empty'), new Uint8Array(0));
    const got = db.get(bytes('empty'));
    expect(got).toBeInstanceOf(Uint8Array);
    expect(got?.length).toBe(0);
  });

  test('many keys keep their own values', async () => {
    const db = await fresh();
    const n = 5_000;
    for (let i = 0; i < n; i++) db.put(`key-${i}`, bytes(`value-${i * 7}`));
    for (let i = 0; i < n; i += 1) expect(text(db.get(`key-${i}`))).toBe(`value-${i * 7}`);
    expect(db.get(`key-${n}`)).toBeUndefined();
  });

  test("stored bytes do not alias the caller's arrays", async () => {
    const db = await fresh();
    const value = bytes('abc');
    db.put('k', value);
    value[0] = 0x7a; // the caller reuses its buffer
    const got = db.get('k');
    expect(text(got)).toBe('abc');
    got![1] = 0x7a; // the caller scribbles on the result
    expect(text(db.get('k'))).toBe('abc');
  });

  test('databases opened separately do not share data', async () => {
    const a = await fresh();
    const b = await fresh();
    a.put('k', bytes('in a'));
    expect(b.get('k')).toBeUndefined();
  });
});

describe('missing keys and deletes', () => {
  test('a key never written gets undefined', async () => {
    const db = await fresh();
    expect(db.get(bytes('nope'))).toBeUndefined();
  });

  test('a deleted key gets undefined and can be written again', async () => {
    const db = await fresh();
    db.put('k', bytes('v'));
    db.put('other', bytes('stays'));
    db.delete('k');
    expect(db.get('k')).toBeUndefined();
    expect(text(db.get('other'))).toBe('stays');
    db.put('k', bytes('again'));
    expect(text(db.get('k'))).toBe('again');
  });

  test('deleting a missing key is not an error', async () => {
    const db = await fresh();
    expect(() => db.delete('never')).not.toThrow();
    expect(db.get('never')).toBeUndefined();
  });
});

describe('string keys', () => {
  test('a string key is its UTF-8 bytes', async () => {
    const db = await fresh();
    db.put('héllo ☃ 🦀', bytes('v'));
    expect(text(db.get(bytes('héllo ☃ 🦀')))).toBe('v');
    db.put(bytes('plain'), bytes('w'));
    expect(text(db.get('plain'))).toBe('w');
    db.delete(bytes('héllo ☃ 🦀'));
    expect(db.get('héllo ☃ 🦀')).toBeUndefined();
  });

  test('keys differing in one byte are different keys', async () => {
    const db = await fresh();
    db.put('a', bytes('1'));
    db.put('b', bytes('2'));
    db.put('a\u0000', bytes('3'));
    expect(text(db.get('a'))).toBe('1');
    expect(text(db.get('b'))).toBe('2');
    expect(text(db.get('a\u0000'))).toBe('3');
  });
});

describe('bad input', () => {
  test.each([
    ['a number key', () => 42],
    ['a null key', () => null],
    ['an undefined key', () => undefined],
    ['an ArrayBuffer key', () => new ArrayBuffer(4)],
    ['an Int8Array key', () => new Int8Array(4)],
    ['a plain array key', () => [1, 2, 3]],
  ])('%s is refused with InvalidArgument', async (_name, make) => {
    const db = await fresh();
    const key = make() as unknown as string;
    expect(caught(() => db.put(key, bytes('v'))).code).toBe('InvalidArgument');
    expect(caught(() => db.get(key)).code).toBe('InvalidArgument');
    expect(caught(() => db.delete(key)).code).toBe('InvalidArgument');
  });

  test('a value that is not a Uint8Array is refused with InvalidArgument', async () => {
    const db = await fresh();
    for (const value of ['text', 7, null, undefined, new ArrayBuffer(2), [1]]) {
      const err = caught(() => db.put('k', value as unknown as Uint8Array));
      expect(err.code).toBe('InvalidArgument');
      expect(err.message).toMatch(/value must be a Uint8Array/);
    }
    expect(db.get('k')).toBeUndefined(); // nothing half-written
  });

  test('string keys are stored as their UTF-8 bytes, ASCII or not, short or long', async () => {
    const db = await fresh();
    const keys = ['', 'a', 'k'.repeat(64), 'k'.repeat(65), 'é', 'caf\u00e9', '日本語', 'x'.repeat(63) + 'é', '\u007f', '\u0080', 'a\u{1F600}b'];
    for (const [i, k] of keys.entries()) db.put(k, bytes(String(i)));
    const stored = [...db.keys()].map((k) => Array.from(k as Uint8Array).join(','));
    const want = keys.map((k) => Array.from(new TextEncoder().encode(k)).join(',')).sort();
    expect(stored.sort()).toEqual(want);
    for (const [i, k] of keys.entries()) expect(text(db.get(new TextEncoder().encode(k)))).toBe(String(i));
  });

  test('a string key with a lone surrogate is refused, not replaced by U+FFFD', async () => {
    const db = await fresh();
    const err = caught(() => db.put('bad\uD800', bytes('v')));
    expect(err.code).toBe('InvalidArgument');
    expect(err.message).toMatch(/lone surrogate/);
    expect(db.get('bad\uFFFD')).toBeUndefined();
  });

  test('an oversize key is refused by the engine, and its code crosses the boundary', async () => {
    const db = await fresh();
    const err = caught(() => db.put(new Uint8Array(1 << 20), bytes('v')));
    expect(err.code).toBe('InvalidArgument');
    expect(err.message).toMatch(/exceeds the maximum/);
    expect((err.cause as { code?: unknown }).code).toBe('InvalidArgument');
    db.put('after', bytes('still usable'));
    expect(text(db.get('after'))).toBe('still usable');
  });

  test('a SiltError is an Error with a name, a code and a message', async () => {
    const db = await fresh();
    const err = caught(() => db.get(3 as unknown as string));
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('SiltError');
    expect(err.message).toMatch(/key must be a Uint8Array or a string, got number/);
  });
});

describe('close', () => {
  test('every call after close throws Closed, from the engine binding', async () => {
    const db = await openMemory();
    db.put('k', bytes('v'));
    db.close();
    const calls = [
      () => db.get('k'),
      () => db.get('k'),
      () => db.put('k', bytes('v')),
      () => db.delete('k'),
      () => db.multiGet(['k']),
      () => db.iterator(),
      () => db.snapshot(),
      () => db.flush(),
      () => db.statistics(),
      () => db.write(new WriteBatch().put('k', bytes('v'))),
    ];
    for (const call of calls) {
      const err = caught(call);
      expect(err.code).toBe('Closed');
      expect(err.message).toMatch(/closed/);
      // The code came across the wasm boundary on an Error from the bindings.
      expect(err.cause).toBeInstanceOf(Error);
      expect((err.cause as { code?: unknown }).code).toBe('Closed');
    }
  });

  test('closing twice does nothing', async () => {
    const db = await openMemory();
    db.close();
    expect(() => db.close()).not.toThrow();
  });

  test('bad input is reported as such even after close', async () => {
    const db = await openMemory();
    db.close();
    expect(caught(() => db.get(1 as unknown as string)).code).toBe('InvalidArgument');
  });

  test('`using` closes the database at the end of the scope', async () => {
    let escaped: Database;
    {
      using db = await openMemory();
      db.put('k', bytes('v'));
      escaped = db;
    }
    expect(caught(() => escaped.get('k')).code).toBe('Closed');
  });
});

test('the module was built with SIMD128', async () => {
  expect(await simd128Enabled()).toBe(true);
});
