/**
 * `siltdb`: an LSM key-value storage engine for the browser.
 *
 * ```ts
 * import { openMemory } from 'siltdb';
 * const db = await openMemory();
 * db.put('greeting', new TextEncoder().encode('hello'));
 * db.get('greeting'); // Uint8Array [104, 101, 108, 108, 111]
 * db.close();
 * ```
 */

import { Database as WasmDatabase, simd128Enabled as wasmSimd128Enabled } from '../pkg/silt_wasm.js';
import { wrapBinding, type Database } from './database.js';
import { fromWasm } from './errors.js';
import { loadWasm } from './wasm.js';

export { Database } from './database.js';
export type { Key } from './bytes.js';
export { SiltError, type EngineErrorCode, type SiltErrorCode } from './errors.js';

/**
 * Opens a new, empty database held in memory (no persistence: its data lives
 * until `close()`). Loads the WebAssembly module on first use.
 */
export async function openMemory(): Promise<Database> {
  await loadWasm();
  let inner: WasmDatabase;
  try {
    inner = WasmDatabase.openMemory();
  } catch (e) {
    throw fromWasm(e);
  }
  return wrapBinding(inner);
}

/**
 * Whether the loaded WebAssembly module was built with SIMD128 (used by the
 * bloom filter probes). Loads the module on first use.
 */
export async function simd128Enabled(): Promise<boolean> {
  await loadWasm();
  return wasmSimd128Enabled();
}
