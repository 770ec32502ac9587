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
import { loadWasm } from './boundary/wasm.js';

export { type ImportDatabaseOptions, importDatabase, open, openMemory, removeDatabase, type OpenOptions } from './local/open.js';
export type { RocksdbIngestReport } from './local/rocksdb.js';
export { repairDatabase, type RepairReport } from './local/repair.js';
export type { ImportReport, ImportSource } from './local/backup.js';
export { connect, type ConnectOptions } from './tabs/connect.js';
export { RemoteDatabase, type RemoteCountOptions, type RemoteReadOptions, type RemoteStatistics } from './tabs/remote-database.js';
export type { RemoteIterator, RemoteIteratorOptions } from './tabs/remote-iterator.js';
export { RemoteSnapshot } from './tabs/remote-snapshot.js';
export { WATCH_QUEUE_LIMIT, type Change, type KeyChange, type RangeChange, type Gap, type Watch, type WatchEvent, type WatchOptions } from './tabs/watch.js';
export type { Live, LiveObserver, LiveOptions, LiveResult, LiveSubscription, LiveValue } from './tabs/live-query.js';
export { Database } from './local/database.js';
export type { CountOptions, GetOptions, MultiGetOptions, ReadOptions, SublevelOptions, WriteOptions } from './local/options.js';
export type { Statistics, VerifyReport } from './local/statistics.js';
export {
  json,
  utf8,
  view,
  type Encoding,
  type EncodingOption,
  type EncodingOptions,
  type ExportOptions,
  type KeyOf,
  type RangeOptions,
  type ReadValueOf,
} from './core/encoding.js';
export type {
  CountRange,
  OperationName,
  Operations,
  PlainOperationName,
  RemoteOperations,
  RemoteReads,
  SnapshotOption,
  ValueReadOptions,
} from './core/operations.js';
export { persist, persisted, type StorageEstimate } from './opfs/storage.js';
export { WriteBatch, type IngestOptions, type IngestReport } from './core/batch.js';
export { EntryBatch, EntryIterator, type IteratorOptions, type Entry, type KeyIterator, type ValueIterator } from './local/iterator.js';
export { PinnedValue, type MultiGetResult, type MultiGot } from './boundary/results.js';
export { Snapshot } from './local/snapshot.js';
export { Transaction, type CommitOptions, type TransactionOptions, type UpdateResult } from './local/transaction.js';
export { RemoteTransaction } from './tabs/remote-transaction.js';
export { readU64, u64 } from './core/u64.js';
export type { Key } from './core/bytes.js';
export type { Exactly } from './core/option-names.js';
export { SILT_ERROR_CODES, SiltError, type EngineErrorCode, type SiltErrorCode } from './core/errors.js';
export { configureMemory, memoryMode, type MemoryMode } from './boundary/wasm.js';
export { boundaryCounters, enableBoundaryCounters, type BoundaryCounters } from './boundary/counters.js';

/**
 * Whether the loaded WebAssembly module was built with SIMD128 (used by the
 * bloom filter probes). Loads the module on first use.
 */
export async function simd128Enabled(): Promise<boolean> {
  await loadWasm();
  return wasmSimd128Enabled();
}
