import { afterEach, expect } from 'vitest';
import { openMemory, SiltError, type Database, type OpenOptions } from '../src/index.js';

export const bytes = (s: string) => new TextEncoder().encode(s);
export const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

const open: Database[] = [];
/** An in-memory database closed after the test. */
export async function fresh(options?: OpenOptions): Promise<Database> {
  const db = await openMemory(options);
  open.push(db);
  return db;
}
afterEach(() => {
  for (const db of open.splice(0)) db.close();
});

/** Runs `f`, which must throw a SiltError, and returns it. */
export function caught(f: () => unknown): SiltError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(SiltError);
    return e as SiltError;
  }
  throw new Error('expected a SiltError, nothing was thrown');
}

/** Awaits `p`, which must reject with a SiltError, and returns it. */
export async function rejected(p: Promise<unknown>): Promise<SiltError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(SiltError);
    return e as SiltError;
  }
  throw new Error('expected a SiltError rejection, the promise resolved');
}

/** Runs `f`, which must throw or reject with a SiltError (synchronously or not), and returns it. */
export async function refusal(f: () => unknown): Promise<SiltError> {
  try {
    await f();
  } catch (e) {
    expect(e).toBeInstanceOf(SiltError);
    return e as SiltError;
  }
  throw new Error('expected a SiltError, the call succeeded');
}
