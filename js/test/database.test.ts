// What the worker API's database has beyond the scenarios both APIs share
// (scenarios/index.js: round trips, deletes, string keys, bad input,
// Closed after close): the engine binding's error under a Closed, `using`,
// and the module's SIMD128, against the real wasm build in Node.
import { expect, test } from 'vitest';
import { openMemory, simd128Enabled, type Database } from '../src/index.js';
import { bytes, caught } from './helpers.js';

test("a call after close throws Closed from the engine binding: its cause is the binding's Error, with the same code", async () => {
  const db = await openMemory();
  db.put('k', bytes('v'));
  db.close();
  for (const call of [() => db.get('k'), () => db.put('k', bytes('v')), () => db.iterator(), () => db.snapshot(), () => db.statistics()]) {
    const err = caught(call);
    expect(err.code).toBe('Closed');
    // The code came across the wasm boundary on an Error from the bindings.
    expect(err.cause).toBeInstanceOf(Error);
    expect((err.cause as { code?: unknown }).code).toBe('Closed');
  }
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

test('the module was built with SIMD128', async () => {
  expect(await simd128Enabled()).toBe(true);
});
