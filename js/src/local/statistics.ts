/** What a worker's database reports of itself: `statistics()` and `verify()`. */

import { heapBytes } from '../../pkg/silt_wasm.js';
import { collectedResults } from '../boundary/results.js';
import { memoryBytes, memoryMode, type MemoryMode } from '../boundary/wasm.js';
import { storageEstimate, type StorageEstimate } from '../opfs/storage.js';
import type { Core } from './core.js';

/** What `statistics()` returns. */
export interface Statistics {
  name: string;
  /** On OPFS (true) or in memory (false). */
  persistent: boolean;
  /** Gauges of the engine (camelCase names). */
  properties: {
    superVersionNumber: number;
    lastSequence: number;
    memtableBytes: number;
    immutableMemtables: number;
    filesPerLevel: number[];
    bytesPerLevel: number[];
    tableBytes: number;
    /** Bytes of every memtable in memory, flushed ones iterators still pin included. */
    allMemtableBytes: number;
    /** Bytes of every table file kept, obsolete ones iterators still pin included. */
    liveTableBytes: number;
    /** Bytes of blocks and memtable entries pinned by results of `get` / `multiGet`. */
    pinnedBytes: number;
    blockCacheUsage: number;
    blockCacheCapacity: number;
    /** Bytes the row cache holds (0 without `rowCacheCapacity`). */
    rowCacheUsage: number;
    liveSnapshots: number;
    /** 1 while a flush or compaction is in progress or due. */
    backgroundWorkPending: number;
    [name: string]: number | number[];
  };
  /** Counters by their RocksDB names, e.g. `rocksdb.block.cache.hit`. */
  tickers: Record<string, number>;
  /** Histograms by their RocksDB names, e.g. `rocksdb.db.get.micros`. */
  histograms: Record<string, { count: number; sum: number; min: number; max: number; p50: number; p95: number; p99: number }>;
  /**
   * The OPFS file pool (persistent databases only): pooled files, free
   * ones, removed ones still open, bytes of logical data, creates refused,
   * the bytes every pooled file takes on storage (`bytes`, headers
   * included: what `maxBytes` caps), the cap and the part of it kept for
   * deletes and compactions (`maxBytes`, `reserveBytes`; only with
   * `maxBytes`), and the logical files the pooled files' headers name
   * (`db/000012.sst`).
   */
  pool?: {
    files: number;
    free: number;
    removedOpen: number;
    dataBytes: number;
    exhausted: number;
    bytes: number;
    maxBytes?: number;
    reserveBytes?: number;
    paths: string[];
  };
  /**
   * The origin's storage (`navigator.storage.estimate()` and
   * `persisted()`), where the browser has the Storage API: every database
   * of the origin and all else it stores. Cached: at most about a second
   * old when statistics are read regularly (`updatedAt` says when it was
   * taken); through `connect()` it is fresh.
   */
  storage?: StorageEstimate;
  /**
   * OPFS sync access handles (persistent databases only): this database's
   * open now, those of every database of this worker (parked ones too),
   * and the `handleBudget` they are counted in (with other workers' of the
   * origin).
   */
  handles?: { database: number; worker: number; budget: number };
  /** Results pinning values right now (every database of this realm). */
  pinnedResults: number;
  /** Results released by garbage collection instead of `release()`. */
  collectedResults: number;
  /**
   * Wasm memory: `bytes` its size, which never shrinks (the most the heap
   * ever needed at once); `heapBytes` what the module's heap holds now
   * (allocated and not freed), shared by every database of the worker.
   */
  memory: { bytes: number; heapBytes: number; mode: MemoryMode };
  background: { steps: number; lastError?: { code: string; message: string } };
}

/** What `verify()` returns: what it read and checked. */
export interface VerifyReport {
  /** Table files read. */
  tables: number;
  /** Entries checked. */
  entries: number;
  /** Bytes of the table files read. */
  tableBytes: number;
}

/**
 * The part of `Statistics` the wasm module builds: its fields are checked
 * against the module's (`REPORT_FIELDS.statistics` in boundary/report-fields.ts),
 * so a field `statisticsOf` adds must be named here.
 */
export type ModuleStatistics = Omit<Statistics, 'name' | 'persistent' | 'storage' | 'handles' | 'collectedResults' | 'memory' | 'background'>;

/** The statistics of the database `core` runs (`Database.statistics`). */
export function statisticsOf(core: Core): Statistics {
  core.exchange.flush(); // released results count as released
  const s = core.call(() => core.inner.statistics()) as ModuleStatistics;
  const lastError = core.pump.lastError ?? core.keeper?.lastError;
  const storage = storageEstimate();
  return {
    name: core.name,
    persistent: core.keeper !== undefined,
    ...s,
    ...(storage ? { storage } : {}),
    ...(core.keeper && core.closer.storage === 'opfs' ? { handles: core.keeper.handleStats() } : {}),
    collectedResults: collectedResults(),
    memory: { bytes: memoryBytes(), heapBytes: heapBytes(), mode: memoryMode() },
    background: {
      steps: core.pump.steps,
      ...(lastError ? { lastError: { code: lastError.code, message: lastError.message } } : {}),
    },
  };
}
