/**
 * `siltdb`: an LSM key-value storage engine for the browser.
 *
 * In a dedicated worker, with synchronous calls and zero-copy reads:
 * ```ts
 * import { open } from 'siltdb';
 * const db = await open('notes');               // OPFS, this worker only
 * db.put('greeting', new TextEncoder().encode('hello'));
 * db.get('greeting');                            // Uint8Array [104, 101, ...], yours
 * db.close();
 * ```
 * From a page, with Promises (the database runs in a worker siltdb starts):
 * ```ts
 * import { connect } from 'siltdb';
 * const db = await connect('notes');
 * await db.put('greeting', new TextEncoder().encode('hello'));
 * await db.get('greeting');
 * ```
 */

import { simd128Enabled as wasmSimd128Enabled } from '../pkg/silt_wasm.js';
import { loadWasm } from './wasm.js';

export { importDatabase, open, openMemory, removeDatabase, repairDatabase, type OpenOptions, type RepairReport } from './open.js';
export type { ImportReport, ImportSource } from './backup.js';
export {
  connect,
  RemoteDatabase,
  RemoteSnapshot,
  WATCH_QUEUE_LIMIT,
  type Change,
  type KeyChange,
  type RangeChange,
  type ConnectOptions,
  type Gap,
  type RemoteCountOptions,
  type RemoteIterator,
  type RemoteIteratorOptions,
  type RemoteReadOptions,
  type RemoteStatistics,
  type Watch,
  type WatchEvent,
  type WatchOptions,
} from './client.js';
export {
  Database,
  type CountOptions,
  type GetOptions,
  type MultiGetOptions,
  type ReadOptions,
  type SublevelOptions,
  type WriteOptions,
  type Statistics,
  type VerifyReport,
} from './database.js';
export { json, utf8, view, type Encoding, type EncodingOption, type EncodingOptions, type ExportOptions, type KeyOf, type RangeOptions } from './encoding.js';
export { persist, persisted, type StorageEstimate } from './storage.js';
export { WriteBatch, type IngestOptions, type IngestReport } from './batch.js';
export { EntryBatch, EntryIterator, type IteratorOptions, type Entry, type KeyIterator, type ValueIterator } from './iterator.js';
export { PinnedValue, type MultiGetResult, type MultiGot } from './results.js';
export { Snapshot } from './snapshot.js';
export { Transaction, type CommitOptions, type TransactionOptions, type UpdateResult } from './transaction.js';
export { RemoteTransaction } from './remote-transaction.js';
export { readU64, u64 } from './counter.js';
export type { Key } from './bytes.js';
export { SILT_ERROR_CODES, SiltError, type EngineErrorCode, type SiltErrorCode } from './errors.js';
export { configureMemory, memoryMode, type MemoryMode } from './wasm.js';
export { boundaryCounters, enableBoundaryCounters, type BoundaryCounters } from './counters.js';

/**
 * Whether the loaded WebAssembly module was built with SIMD128 (used by the
 * bloom filter probes). Loads the module on first use.
 */
export async function simd128Enabled(): Promise<boolean> {
  await loadWasm();
  return wasmSimd128Enabled();
}
