/**
 * The options of `open()` and `openMemory()`: their types, and the checks
 * that run before anything is opened (also on the page, for `connect()`);
 * and the options of one call of a database (a read, a write).
 */

import { OpenOptions as WasmOpenOptions } from '../../pkg/silt_wasm.js';
import { show, type Key } from '../core/bytes.js';
import { rootCodec, type EncodingOptions } from '../core/encoding.js';
import { SiltError } from '../core/errors.js';
import { checkOptionNames, optionNames, type OptionList } from '../core/option-names.js';
import type { CountRange, ValueReadOptions } from '../core/call-options.js';
import type { Snapshot } from './snapshot.js';

/** How to open a database. Every field is optional. */
export interface OpenOptions<K = Key, V = Uint8Array> extends EncodingOptions<K, V> {
  /** Create the database if it does not exist (default true). */
  createIfMissing?: boolean;
  /** Fail if the database already exists (default false). */
  errorIfExists?: boolean;
  /**
   * If another tab or worker has the database open: false (default) fails
   * at once with `DatabaseLocked`; true waits until it is closed.
   */
  wait?: boolean;
  /**
   * Gives up waiting when aborted: the call rejects with the signal's
   * reason (an `AbortError` DOMException from `abort()`, a `TimeoutError`
   * from `AbortSignal.timeout()`), as `fetch` does.
   */
  signal?: AbortSignal;
  /** Default `sync` of every write (default false). */
  sync?: boolean;
  /**
   * Where the database's files live (default `'auto'`): `'opfs'`, the
   * origin private file system through sync access handles (the fast
   * path: Chrome and Edge 102+, Firefox 111+, Safari 16.4+); `'indexeddb'`,
   * files held in memory and persisted to IndexedDB (where workers have no
   * sync access handles: WebKitGTK, Safari's private browsing, older
   * Safari; the whole database is read into memory at open, so `maxBytes`
   * defaults to 256 MiB there, and a write is durable once
   * `await db.persisted()` resolves, which `connect()` awaits for you);
   * `'auto'`, OPFS where the browser has it, else IndexedDB (a database
   * already kept in IndexedDB stays there). `db.storage` says which.
   */
  storage?: 'auto' | 'opfs' | 'indexeddb';
  /**
   * OPFS files kept open and free for new files (default 16, 4..256),
   * topped up between calls. A synchronous burst of writes with no `await`
   * cannot get new files meanwhile: once these are used, its writes wait in
   * memory (up to 8 × `writeBufferSize`) and only then get `PoolExhausted`.
   */
  poolReserve?: number;
  /**
   * OPFS sync access handles siltdb keeps open in this origin at most,
   * every database of every worker together, parked ones included
   * (default 128, 32..65536). Each file of an open database is one open
   * handle, and Safari refuses more than about 252 at once; Chromium and
   * Firefox set no such limit. An open that would need more, or a write
   * that needs a new file once the pool's free files are used, fails with
   * `PoolExhausted` naming the budget; databases only parked (closed a
   * moment ago) let go of theirs first. `poolReserve` is at most half of it.
   */
  handleBudget?: number;
  /** Bytes a memtable holds before it is flushed (default 4 MiB). */
  writeBufferSize?: number;
  /** Memtables held at most, the active one included (default 2). */
  maxWriteBufferNumber?: number;
  /** Uncompressed bytes per data block (default 4096). */
  blockSize?: number;
  /**
   * Bytes of uncompressed blocks the block cache keeps. The default is
   * sized for browser data sets and bounded by the device: 1/64 of
   * `navigator.deviceMemory` between 16 and 64 MiB (so 64 MiB on a device
   * reporting 4 GiB or more), 32 MiB where the browser does not say. The
   * cache only grows as blocks are read, but wasm memory it took is not
   * returned to the system until the worker ends.
   */
  blockCacheCapacity?: number;
  /**
   * Bytes of the row cache (default 0: none): what each table file held for
   * a key a lookup found there, so that the next lookup of the key skips
   * the file's index and block search. For apps that read a small set of
   * keys far more often than the rest (a profile, settings, the open
   * document); `rocksdb.row.cache.hit` / `.miss` count its use. Range
   * deletes, snapshots and merges read through it exactly as without it.
   */
  rowCacheCapacity?: number;
  /** Bloom filter bits per key, 0 for none (default 10). */
  bloomBitsPerKey?: number;
  /** Block compression (default `'lz4'`). */
  compression?: 'lz4' | 'none';
  /**
   * A cap on the bytes the database's OPFS files take (a whole number from
   * 1 MiB up; default none but the browser's quota). A write that would take
   * them past it fails with `QuotaExceeded`, exactly as when the browser's
   * quota is used up, and the database stays as it was before that write.
   * Puts stop a quarter short of the cap: the last quarter is kept for
   * deletes, flushes, compactions and reopening, so that a full database
   * can always be emptied (`delete` / `deleteRange`, then `compactRange`)
   * and reopened. OPFS databases only (`openMemory` refuses it).
   */
  maxBytes?: number;
  /**
   * Measure durations too: the `rocksdb.db.get.micros`, `rocksdb.db.write.micros`,
   * flush and compaction histograms of `statistics()` (default false: each
   * measurement calls `performance.now()` from wasm, which costs a point
   * lookup more than all its counters; counters are always kept).
   */
  timers?: boolean;
  /**
   * Compact a table file that lookups keep searching in vain (default
   * true): a lookup that had to search more than one file charges the
   * first, one lookup in 16 sampled, and a file past its allowance (one
   * lookup per 16 KiB of file, at least 100) is compacted into the level
   * below by the background work when nothing else is due (LevelDB's seek
   * compaction; `silt.compaction.read.triggered` counts them). Worth most
   * without bloom filters; with them a file searched in vain is rare.
   */
  readTriggeredCompaction?: boolean;
  /**
   * Compact for reads when idle (default 0: never): once no write has come
   * for a second and background work has caught up, what a random fill
   * leaves above the last level (L0 files, upper levels) is compacted down
   * into it, so that a get probes one table instead of two to four, if the
   * database's tables total at most this many bytes (the bound on what one
   * idle compaction rewrites: with random keys, about all of it, after
   * each flush followed by an idle second). It runs in the same short
   * slices as all background work (a read waits at most one).
   * `silt.compaction.idle` counts them. Off by default because with bloom
   * filters it gains nothing measurable (Chromium, 100,000 keys); without
   * them (`bloomBitsPerKey: 0`, `readTriggeredCompaction: false`) gets
   * were 1.13× faster after it (docs/bench/idle-compaction.md).
   */
  idleCompactionMaxBytes?: number;
  /**
   * Compression dictionaries (default 0: none; else 32 to 65536): each
   * table written (by flushes, compactions, `compactRange()`, `ingest()`
   * and imports of entries) whose data holds enough that recurs gets a
   * dictionary of up to this many bytes, sampled from its first MiB, that
   * each of its 4 KiB blocks is compressed with, so that what recurs
   * across records (JSON field names, common values) is stored once per
   * table, not once per block. It pays for many small, similar values:
   * with 16384, 100,000 JSON records took 40% fewer bytes than with LZ4
   * alone (docs/bench/bytes.md); writing tables costs more CPU, and a read
   * that misses the block cache decompresses with it. Tables with a
   * dictionary cannot be read by siltdb versions before it, which refuse
   * them as written by a newer version (with code `Corruption`: do not go
   * back to an older version on a database that used it, and never run an
   * older version's `repairDatabase` on it, which would drop those tables).
   */
  compressionDictBytes?: number;
  /**
   * Bytes of writes a transaction holds in memory before it spills them
   * into a file of its own in the database (default 8 MiB; 0 never
   * spills). A spilled transaction's writes stay visible only to it; its
   * commit publishes them all at once as new table files added in one
   * step, durably, or nothing of them on a conflict, an abort or a closed
   * tab. So a bulk
   * load inside a transaction does not hold every value in memory (its
   * keys are still tracked in memory, for the conflict check).
   */
  transactionSpillBytes?: number;
  /**
   * What `merge(key, operand)` does (default none: `merge` is refused):
   * `'u64add'` adds 8-byte little-endian unsigned integers (a counter;
   * `u64(n)` encodes one, `readU64(bytes)` reads one; an operand of
   * another size is refused when written, and a value of another size
   * put under the key counts as 0, as in RocksDB), `'append'` appends the
   * operand's bytes to the value. Operands are stored and combined when
   * read: open a database with the operator it was written with.
   */
  mergeOperator?: 'u64add' | 'append';
}

/** The binding's code of each merge operator (crates/wasm/src/options.rs). */
const MERGE_OPERATORS = { u64add: 1, append: 2 } as const;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** @internal Checks a database name (connect() checks it before it starts anything). */
export function checkName(name: unknown): string {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new SiltError('InvalidArgument', `a database name is 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit; got ${show(name)}`);
  }
  return name;
}

/**
 * The smallest `poolReserve`: the most free pooled files any call needs
 * (the binding's `poolNeeds`; js/test/contract.test.ts checks the two agree).
 */
export const MIN_POOL_RESERVE = 4;

/** The `poolReserve` of a database whose options name none. */
export const DEFAULT_POOL_RESERVE = 16;

/** The `maxBytes` of a database kept in IndexedDB (held in memory) whose options name none. */
export const IDB_DEFAULT_MAX_BYTES = 256 << 20;

/** Handles siltdb keeps open in an origin at most, unless `handleBudget` says otherwise (opfs/handle-budget.ts). */
export const DEFAULT_HANDLE_BUDGET = 128;

/** The smallest and largest `handleBudget`. */
export const MIN_HANDLE_BUDGET = 32;
export const MAX_HANDLE_BUDGET = 1 << 16;

function uint(o: Record<string, unknown>, key: string, min: number, max: number): number {
  const v = o[key];
  if (v === undefined) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new SiltError('InvalidArgument', `${key} must be an integer from ${min} to ${max}, got ${show(v)}`);
  }
  return v;
}

function bool(o: Record<string, unknown>, key: string, dflt: boolean): boolean {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new SiltError('InvalidArgument', `${key} must be a boolean, got ${typeof v}`);
  return v;
}

const MiB = 1 << 20;

/**
 * The block cache a database gets when its options name none: 1/64 of the
 * device's memory in GiB as the browser reports it (`navigator.deviceMemory`,
 * a rounded power of two: Chromium 156 said 16 on a 24 GiB machine),
 * clamped to 16..64 MiB; 32 MiB when the browser does not report it
 * (Firefox, Safari).
 */
export function defaultBlockCacheCapacity(deviceMemoryGiB: number | undefined): number {
  if (deviceMemoryGiB === undefined || !Number.isFinite(deviceMemoryGiB) || deviceMemoryGiB <= 0) return 32 * MiB;
  return Math.min(64 * MiB, Math.max(16 * MiB, Math.floor((deviceMemoryGiB * 1024 * MiB) / 64)));
}

function deviceMemory(): number | undefined {
  const n = (globalThis as { navigator?: { deviceMemory?: unknown } }).navigator;
  return typeof n?.deviceMemory === 'number' ? n.deviceMemory : undefined;
}

/** Engine options, checked, before the module that takes them is loaded. */
export interface Checked {
  createIfMissing: boolean;
  errorIfExists: boolean;
  writeBufferSize: number;
  maxWriteBufferNumber: number;
  blockSize: number;
  blockCacheCapacity: number;
  rowCacheCapacity: number;
  bloomBitsPerKey: number;
  noCompression: boolean;
  maxBytes: number;
  timers: boolean;
  mergeOperator: number;
  readTriggeredCompaction: boolean;
  transactionSpillBytes: number;
  idleCompactionMaxBytes: number;
  compressionDictBytes: number;
}

/** Other libraries' names for what `open()`'s options say, with siltdb's. */
const OPEN_ELSEWHERE = {
  cacheSize: 'use blockCacheCapacity (bytes of the block cache)',
  maxOpenFiles: 'use poolReserve (OPFS files kept open, free for new files)',
};

/** `importDatabase()`'s options: `open()`'s, and the form of what it reads. */
export interface ImportDatabaseOptions extends OpenOptions<unknown, unknown> {
  /**
   * `'silt'` (the default): a Silt export (`db.export()`). `'rocksdb'`:
   * RocksDB table files, as a tar archive of them or one bare table (see
   * `Database.ingestRocksdb`).
   */
  format?: 'silt' | 'rocksdb';
}

/** The names of `OpenOptions` (`open`, `openMemory`, `importDatabase`). */
export const OPEN_OPTIONS = optionNames<OpenOptions<unknown, unknown>>(
  {
    keyEncoding: true,
    valueEncoding: true,
    createIfMissing: true,
    errorIfExists: true,
    wait: true,
    signal: true,
    sync: true,
    storage: true,
    poolReserve: true,
    handleBudget: true,
    writeBufferSize: true,
    maxWriteBufferNumber: true,
    blockSize: true,
    blockCacheCapacity: true,
    rowCacheCapacity: true,
    bloomBitsPerKey: true,
    compression: true,
    maxBytes: true,
    timers: true,
    readTriggeredCompaction: true,
    transactionSpillBytes: true,
    idleCompactionMaxBytes: true,
    compressionDictBytes: true,
    mergeOperator: true,
  },
  OPEN_ELSEWHERE,
);

/** The names of `repairDatabase`'s options. */
export const REPAIR_OPTIONS = optionNames<Pick<OpenOptions, 'wait' | 'signal' | 'handleBudget'>>({ wait: true, signal: true, handleBudget: true });

/**
 * @internal Checks every option (names, types and ranges) without touching
 * wasm (connect() checks them on the page); `call` names the call in
 * messages, `known` its option names.
 */
export function checkOptions(options: unknown, call = 'open()', known: OptionList = OPEN_OPTIONS): { engine: Checked; o: OpenOptions } {
  if (options === null || typeof options !== 'object') {
    throw new SiltError('InvalidArgument', `${call}'s options must be an object, got ${show(options)}`);
  }
  checkOptionNames(options, known, call);
  const o = options as Record<string, unknown>;
  bool(o, 'wait', false);
  bool(o, 'sync', false);
  uint(o, 'poolReserve', MIN_POOL_RESERVE, 256);
  uint(o, 'handleBudget', MIN_HANDLE_BUDGET, MAX_HANDLE_BUDGET);
  const reserve = (o.poolReserve as number | undefined) ?? DEFAULT_POOL_RESERVE;
  const budget = (o.handleBudget as number | undefined) ?? DEFAULT_HANDLE_BUDGET;
  if (reserve > budget / 2) {
    throw new SiltError(
      'InvalidArgument',
      `poolReserve (${reserve}) must be at most half of handleBudget (${o.handleBudget === undefined ? `${budget}, the default` : budget}): pass a larger handleBudget, or a smaller poolReserve`,
    );
  }
  if (o.storage !== undefined && o.storage !== 'auto' && o.storage !== 'opfs' && o.storage !== 'indexeddb') {
    throw new SiltError('InvalidArgument', `storage must be 'auto', 'opfs' or 'indexeddb', got ${show(o.storage)}`);
  }
  if (o.compression !== undefined && o.compression !== 'lz4' && o.compression !== 'none') {
    throw new SiltError('InvalidArgument', `compression must be 'lz4' or 'none', got ${show(o.compression)}`);
  }
  if (o.mergeOperator !== undefined && o.mergeOperator !== 'u64add' && o.mergeOperator !== 'append') {
    throw new SiltError('InvalidArgument', `mergeOperator must be 'u64add' or 'append', got ${show(o.mergeOperator)}`);
  }
  if (o.signal !== undefined && !(typeof o.signal === 'object' && o.signal !== null && 'aborted' in o.signal)) {
    throw new SiltError('InvalidArgument', 'signal must be an AbortSignal');
  }
  rootCodec(o as EncodingOptions<unknown, unknown>); // checks the encodings
  const engine: Checked = {
    createIfMissing: bool(o, 'createIfMissing', true),
    errorIfExists: bool(o, 'errorIfExists', false),
    writeBufferSize: uint(o, 'writeBufferSize', 64 * 1024, 1 << 30),
    maxWriteBufferNumber: uint(o, 'maxWriteBufferNumber', 2, 64),
    blockSize: uint(o, 'blockSize', 256, 4 << 20),
    blockCacheCapacity: uint(o, 'blockCacheCapacity', 1, 2 ** 32 - 1) || defaultBlockCacheCapacity(deviceMemory()),
    rowCacheCapacity: uint(o, 'rowCacheCapacity', 0, 2 ** 32 - 1),
    bloomBitsPerKey: o.bloomBitsPerKey === undefined ? -1 : uint(o, 'bloomBitsPerKey', 0, 64),
    noCompression: o.compression === 'none',
    maxBytes: uint(o, 'maxBytes', 1 << 20, Number.MAX_SAFE_INTEGER),
    timers: bool(o, 'timers', false),
    mergeOperator: o.mergeOperator === undefined ? 0 : MERGE_OPERATORS[o.mergeOperator as keyof typeof MERGE_OPERATORS],
    readTriggeredCompaction: bool(o, 'readTriggeredCompaction', true),
    transactionSpillBytes: o.transactionSpillBytes === undefined ? -1 : uint(o, 'transactionSpillBytes', 0, 2 ** 31 - 1),
    idleCompactionMaxBytes: o.idleCompactionMaxBytes === undefined ? -1 : uint(o, 'idleCompactionMaxBytes', 0, Number.MAX_SAFE_INTEGER),
    compressionDictBytes: dictBytes(o),
  };
  return { engine, o: options as OpenOptions };
}

/** `compressionDictBytes`: -1 (the engine's default) if not given; 0, or 32 to 65536. */
function dictBytes(o: Record<string, unknown>): number {
  if (o.compressionDictBytes === undefined) return -1;
  return o.compressionDictBytes === 0 ? 0 : uint(o, 'compressionDictBytes', 32, 65536);
}

/** The binding's options. REQUIRES: the module is loaded. */
export function toWasm(c: Checked): WasmOpenOptions {
  const w = new WasmOpenOptions();
  w.createIfMissing = c.createIfMissing;
  w.errorIfExists = c.errorIfExists;
  w.writeBufferSize = c.writeBufferSize;
  w.maxWriteBufferNumber = c.maxWriteBufferNumber;
  w.blockSize = c.blockSize;
  w.blockCacheCapacity = c.blockCacheCapacity;
  w.rowCacheCapacity = c.rowCacheCapacity;
  w.bloomBitsPerKey = c.bloomBitsPerKey;
  w.noCompression = c.noCompression;
  w.maxBytes = c.maxBytes;
  w.timers = c.timers;
  w.mergeOperator = c.mergeOperator;
  w.readTriggeredCompaction = c.readTriggeredCompaction;
  w.transactionSpillBytes = c.transactionSpillBytes;
  w.idleCompactionMaxBytes = c.idleCompactionMaxBytes;
  w.compressionDictBytes = c.compressionDictBytes;
  return w;
}

export type { WriteOptions } from '../core/call-options.js';

/** Options of one read. */
export interface ReadOptions {
  /** Read as of this snapshot (default: the latest state). */
  snapshot?: Snapshot;
}

/** Options of one `multiGet`. */
export interface MultiGetOptions extends ReadOptions {
  /**
   * Use the engine's batched MultiGet (default true): keys grouped by the
   * table file that may hold them, each file searched once for its group,
   * its filter probed for the group at once. With false each key is looked
   * up on its own, as `get` does, still at one point in time and with one
   * call into wasm (for comparing the two, as RocksDB's benchmark does).
   */
  batched?: boolean;
}

/** The names of a worker's `multiGet` options. */
export const MULTIGET_OPTIONS = optionNames<MultiGetOptions & GetOptions<unknown>>({ snapshot: true, valueEncoding: true, batched: true });

/** Options of `get` and `multiGet`: a snapshot, and the call's own value encoding. */
export interface GetOptions<V> extends ValueReadOptions<V, Snapshot> {}

/** A range, and the snapshot to read it at (`count`). */
export interface CountOptions<K> extends CountRange<K, Snapshot> {}

/** Options of `sublevel()`: its encodings (default: those of its parent). */
export type SublevelOptions<K, V> = EncodingOptions<K, V>;
