/**
 * The database handle over the generated `Database` binding.
 */

import { Database as WasmDatabase } from '../pkg/silt_wasm.js';
import { keyBytes, valueBytes, type Key } from './bytes.js';
import { fromWasm } from './errors.js';

let wrap: (inner: WasmDatabase) => Database;

/** Wraps an open binding in the public handle. Not exported by the package. */
export function wrapBinding(inner: WasmDatabase): Database {
  return wrap(inner);
}

/**
 * An open Silt database.
 *
 * Calls are synchronous: they run the engine in the caller's thread, so in a
 * web page use it from a worker. Every failure throws a `SiltError`; after
 * `close()`, every call but `close()` throws one with code `"Closed"`.
 */
export class Database {
  #inner: WasmDatabase;

  // Private so that the generated binding type stays out of the public API:
  // handles come from `openMemory()` (through `wrapBinding`).
  private constructor(inner: WasmDatabase) {
    this.#inner = inner;
  }

  static {
    wrap = (inner) => new Database(inner);
  }

  /** Stores `value` under `key`, replacing any previous value. */
  put(key: Key, value: Uint8Array): void {
    const k = keyBytes(key);
    const v = valueBytes(value);
    try {
      this.#inner.put(k, v);
    } catch (e) {
      throw fromWasm(e);
    }
  }

  /**
   * The value stored under `key`, or `undefined` if there is none. The
   * returned array is a copy that belongs to the caller.
   */
  get(key: Key): Uint8Array | undefined {
    const k = keyBytes(key);
    try {
      return this.#inner.get(k);
    } catch (e) {
      throw fromWasm(e);
    }
  }

  /** Removes `key`; removing a missing key is not an error. */
  delete(key: Key): void {
    const k = keyBytes(key);
    try {
      this.#inner.delete(k);
    } catch (e) {
      throw fromWasm(e);
    }
  }

  /**
   * Closes the database and releases its memory; for an in-memory database
   * that is also the end of its data. Closing twice does nothing. If the
   * engine reports an error while closing, the database is closed anyway and
   * the error is thrown.
   */
  close(): void {
    try {
      this.#inner.close();
    } catch (e) {
      throw fromWasm(e);
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
