// How errors thrown by the generated bindings become SiltErrors.
import { expect, test } from 'vitest';
import { fromWasm, SiltError } from '../src/core/errors.js';

test('an Error with a string code keeps its code and message, with the next step where it has none', () => {
  const thrown = Object.assign(new Error('corruption in db/000001.log at offset 7: bad crc'), { code: 'Corruption' });
  const err = fromWasm(thrown);
  expect(err).toBeInstanceOf(SiltError);
  expect(err.code).toBe('Corruption');
  expect(err.message).toBe(
    'corruption in db/000001.log at offset 7: bad crc; the database is damaged: repairDatabase() rebuilds it from its intact parts (export() what still reads first)',
  );
  expect(err.cause).toBe(thrown);
});

test('a trap (no code) becomes Internal and keeps the message', () => {
  const trap = new WebAssembly.RuntimeError('unreachable');
  const err = fromWasm(trap);
  expect(err.code).toBe('Internal');
  expect(err.message).toMatch(/unreachable/);
  expect(err.cause).toBe(trap);
});

test('a non-string code is not taken for an engine code', () => {
  const err = fromWasm(Object.assign(new Error('odd'), { code: 5 }));
  expect(err.code).toBe('Internal');
});

test('a thrown non-Error becomes Internal', () => {
  expect(fromWasm('boom').code).toBe('Internal');
  expect(fromWasm('boom').message).toMatch(/boom/);
});

test('a SiltError passes through unchanged', () => {
  const original = new SiltError('Busy', 'held by another tab');
  expect(fromWasm(original)).toBe(original);
});

test('on a server (server-side rendering) the package imports, and connect() fails with NotSupported saying where to call it', async () => {
  // Node is such a server: no Web Locks, no Worker.
  const { connect } = await import('../src/index.js');
  const err = await connect('notes').then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SiltError);
  expect((err as SiltError).code).toBe('NotSupported');
  expect((err as SiltError).message).toMatch(/connect in the browser/);
});
