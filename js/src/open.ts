/**
 * Opening databases: on OPFS in a dedicated worker (`open`), or in memory
 * anywhere (`openMemory`).
 */

import { Database as WasmDatabase, OpenOptions as WasmOpenOptions } from '../pkg/silt_wasm.js';
import { type ImportReport, type ImportSource, importInto } from './backup.js';
import { show, type Key } from './bytes.js';
import { rootCodec, type EncodingOptions, type KeyTypeOf, type ValueTypeOf } from './encoding.js';
import { Database, type Closer } from './database.js';
import { fromWasm, SiltError } from './errors.js';
import { acquireLock, type HeldLock, type LockManagerLike } from './lock.js';
import { closed as closedForGood, holdOpen, mayPark, park, releaseParked, takeParked } from './parking.js';
import { HANDLE_RETRY_MS, PoolKeeper, type DirectoryLike } from './pool.js';
import { refreshStorageEstimate } from './storage.js';
import { loadWasm } from './wasm.js';

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
   * OPFS files kept open and free for new files (default 16, 4..256),
   * topped up between calls. A synchronous burst of writes with no `await`
   * cannot get new files meanwhile: once these are used, its writes wait in
   * memory (up to 8 × `writeBufferSize`) and only then get `PoolExhausted`.
   */
  poolReserve?: number;
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
   * another size is refused when written), `'append'` appends the
   * operand's bytes to the value. Operands are stored and combined when
   * read: open a database with the operator it was written with.
   */
  mergeOperator?: 'u64add' | 'append';
}

/** The binding's code of each merge operator (crates/wasm/src/options.rs). */
const MERGE_OPERATORS = { u64add: 1, append: 2 } as const;

/** Where `open` finds OPFS and Web Locks (tests substitute both). */
export interface StorageEnv {
  root: { getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<unknown> };
  locks: LockManagerLike;
}

/** An OPFS directory as the marker of an unfinished import uses it. */
interface MarkableDirectory {
  getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<MarkableDirectory>;
  getFileHandle(name: string, options?: { create?: boolean }): Promise<unknown>;
  removeEntry(name: string, options?: { recursive?: boolean }): Promise<void>;
}

/**
 * A file in a database's directory while `importDatabase()` fills it (the
 * pool ignores every name but `NNNNNN.pool`): a database that still has it
 * was left by an import that never finished (its tab or worker went), and
 * the next `open()` removes it, as if it had never been made.
 */
const IMPORT_MARKER = 'import-unfinished';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** The OPFS directory that holds one directory per database. */
const ROOT_DIR = 'siltdb';
/** The engine's directory inside the pool (a path prefix only). */
const ENGINE_DIR = 'db';

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
interface Checked {
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
}

/** @internal Checks every option (types and ranges) without touching wasm (connect() checks them on the page). */
export function checkOptions(options: unknown): { engine: Checked; o: OpenOptions } {
  if (options === null || typeof options !== 'object') {
    throw new SiltError('InvalidArgument', 'options must be an object');
  }
  const o = options as Record<string, unknown>;
  bool(o, 'wait', false);
  bool(o, 'sync', false);
  uint(o, 'poolReserve', MIN_POOL_RESERVE, 256);
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
  };
  return { engine, o: options as OpenOptions };
}

/** The binding's options. REQUIRES: the module is loaded. */
function toWasm(c: Checked): WasmOpenOptions {
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
  return w;
}

/** OPFS and Web Locks of this dedicated worker, or a clear refusal. */
function browserStorage(): { locks: LockManagerLike; rootDirectory(): Promise<StorageEnv['root']> } {
  const g = globalThis as {
    navigator?: { storage?: { getDirectory?: () => Promise<StorageEnv['root']> }; locks?: LockManagerLike };
    FileSystemFileHandle?: { prototype: object };
  };
  const hasSyncHandles = g.FileSystemFileHandle !== undefined && 'createSyncAccessHandle' in g.FileSystemFileHandle.prototype;
  const inDedicatedWorker = typeof (globalThis as { DedicatedWorkerGlobalScope?: unknown }).DedicatedWorkerGlobalScope === 'function';
  const missing = !g.navigator?.storage?.getDirectory
    ? 'the origin private file system (navigator.storage.getDirectory)'
    : !hasSyncHandles
      ? 'OPFS sync access handles (FileSystemFileHandle.prototype.createSyncAccessHandle)'
      : undefined;
  if (inDedicatedWorker && missing !== undefined) {
    throw new SiltError(
      'NotSupported',
      `open() needs ${missing}, which this browser's workers lack: ` +
        'use Chrome or Edge 102+, Firefox 111+ or Safari 16.4+, or openMemory() for a database that is not kept',
    );
  }
  if (missing !== undefined) {
    throw new SiltError(
      'NotSupported',
      'open() needs OPFS sync access handles, which only a dedicated worker in a browser has: ' +
        'call open() in a worker, connect() from a page, or openMemory() anywhere',
    );
  }
  const { locks, storage } = g.navigator!;
  if (!locks) throw new SiltError('NotSupported', 'open() needs Web Locks (navigator.locks), which this browser lacks');
  return { locks, rootDirectory: () => storage!.getDirectory!() };
}

async function domCall<T>(what: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof SiltError) throw e;
    const name = (e as { name?: unknown }).name;
    const detail = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    const code = name === 'QuotaExceededError' ? 'QuotaExceeded' : 'IoError';
    throw new SiltError(code, `${what}: ${detail}`, { cause: e });
  }
}

/**
 * Opens (or creates) the database `name` on OPFS. Call it in a dedicated
 * worker; every method of the returned `Database` is synchronous. The
 * database's Web Lock is held until `close()`: opening it in another tab
 * or worker meanwhile fails with `DatabaseLocked`, or waits if `wait` is set.
 */
export async function open<const O extends OpenOptions<never, never>>(
  name: string,
  options: O,
): Promise<Database<KeyTypeOf<O['keyEncoding'], Key>, ValueTypeOf<O['valueEncoding'], Uint8Array>>>;
/** `open(name, options)`, of the key and value types given as type parameters (`open<string, Note>('app', ...)`). */
export async function open<K = Key, V = Uint8Array>(name: string, options?: OpenOptions<K, V>): Promise<Database<K, V>>;
export async function open<K = Key, V = Uint8Array>(name: string, options: OpenOptions<K, V> = {}): Promise<Database<K, V>> {
  return (await openInBrowser(name, options as OpenOptions<unknown, unknown>, true)) as unknown as Database<K, V>;
}

/** `open` on this browser's OPFS and Web Locks. */
async function openInBrowser(name: string, options: OpenOptions<unknown, unknown>, parkable: boolean, onLocked?: () => void): Promise<Database> {
  checkName(name);
  checkOptions(options);
  await loadWasm();
  const storage = browserStorage();
  const root = await domCall('opening the origin private file system', () => storage.rootDirectory());
  // Started now, never awaited: statistics() has the origin's usage and
  // quota once the browser answers (usually before open returns).
  refreshStorageEstimate().catch(() => {});
  return openOn({ root, locks: storage.locks }, name, options, parkable, onLocked);
}

/**
 * @internal `open` for the worker of the `connect()` connection that leads
 * (client.ts): it waits for the database's lock (the worker that led before
 * may still be ending), and a close does not park.
 */
export function openLeader(name: string, options: OpenOptions, onLocked: () => void): Promise<Database> {
  return openInBrowser(name, { ...options, wait: true }, false, onLocked);
}

/**
 * @internal `open` on the given storage (the Node tests use fakes). With
 * `parkable`, a close keeps the files open and the lock held for a moment
 * for a reopen in this realm (parking.ts). `onLocked` is called once the
 * database's lock is held.
 */
export async function openOn(
  env: StorageEnv,
  name: string,
  options: OpenOptions<unknown, unknown> = {},
  parkable = false,
  onLocked?: () => void,
): Promise<Database> {
  checkName(name);
  const { engine, o } = checkOptions(options);
  await loadWasm();
  const wasm = toWasm(engine);
  const reserve = o.poolReserve ?? 16;
  const parked = parkable ? takeParked(name, reserve) : undefined;
  const lock: HeldLock = parked?.lock ?? (await acquireLock(env.locks, name, o.wait ?? false, o.signal));
  onLocked?.();
  let keeper: PoolKeeper | undefined = parked?.keeper;
  try {
    if (keeper === undefined) {
      const create = o.createIfMissing ?? true;
      let dir = await directoryOf(env, name, create);
      if (await importUnfinished(dir)) {
        await removeUnfinishedImport(env, name);
        dir = await directoryOf(env, name, create);
      }
      keeper = await PoolKeeper.open(dir, reserve);
    }
    const k = keeper;
    let inner: WasmDatabase;
    try {
      inner = WasmDatabase.openPool(k.pool, ENGINE_DIR, wasm);
    } catch (e) {
      throw fromWasm(e);
    }
    // Opening may have used pooled files (a log, a manifest after a
    // crash): start with a full reserve.
    try {
      await keeper.topUp();
    } catch (e) {
      inner.close();
      throw e;
    }
    const holder = parkable ? holdOpen(name) : undefined;
    const closer: Closer = {
      keepFiles: () => holder !== undefined && mayPark(holder),
      closed(kept) {
        if (holder !== undefined && kept) {
          park(name, holder, k, lock, reserve);
          return;
        }
        if (holder !== undefined) closedForGood(name, holder);
        lock.release();
      },
    };
    return new Database(inner, name, keeper, o.sync ?? false, closer, rootCodec(o as EncodingOptions<unknown, unknown>));
  } catch (e) {
    keeper?.close();
    lock.release();
    throw e;
  }
}

/** @internal The OPFS directory that holds every database (for `removeDatabase`). */
export { ROOT_DIR };

/** Whether the database in `dir` was left by an import that never finished (`IMPORT_MARKER`). */
async function importUnfinished(dir: DirectoryLike): Promise<boolean> {
  return domCall('checking the database for an unfinished import', async () => {
    try {
      await dir.getFileHandle(IMPORT_MARKER);
      return true;
    } catch (e) {
      if ((e as { name?: unknown }).name === 'NotFoundError') return false;
      throw e;
    }
  });
}

/** Removes database `name`, which an import left unfinished. REQUIRES: its lock held. */
async function removeUnfinishedImport(env: StorageEnv, name: string): Promise<void> {
  await domCall(`removing database "${name}", left by an import that never finished`, async () => {
    const top = (await env.root.getDirectoryHandle(ROOT_DIR, { create: true })) as MarkableDirectory;
    // We hold its lock: a file still open can only belong to the context
    // that went (a terminated worker lets go of its handles shortly after).
    const deadline = Date.now() + HANDLE_RETRY_MS;
    for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
      try {
        await top.removeEntry(name, { recursive: true });
        return;
      } catch (e) {
        if ((e as { name?: unknown }).name !== 'NoModificationAllowedError' || Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  });
}

/** Marks database `name` as being imported into (`IMPORT_MARKER`), or clears the mark. REQUIRES: its lock held. */
async function markImport(env: StorageEnv, name: string, on: boolean): Promise<void> {
  await domCall(`${on ? 'marking' : 'unmarking'} database "${name}" as being imported`, async () => {
    const top = (await env.root.getDirectoryHandle(ROOT_DIR, { create: true })) as MarkableDirectory;
    const dir = await top.getDirectoryHandle(name);
    if (on) await dir.getFileHandle(IMPORT_MARKER, { create: true });
    else await dir.removeEntry(IMPORT_MARKER);
  });
}

/** The OPFS directory of database `name` (`NotFound` if it is missing and `create` is off). */
async function directoryOf(env: StorageEnv, name: string, create: boolean): Promise<DirectoryLike> {
  return domCall(`opening the directory of database "${name}"`, async () => {
    const top = (await env.root.getDirectoryHandle(ROOT_DIR, { create: true })) as StorageEnv['root'];
    try {
      return (await top.getDirectoryHandle(name, { create })) as unknown as DirectoryLike;
    } catch (e) {
      if ((e as { name?: unknown }).name === 'NotFoundError' && !create) {
        throw new SiltError('NotFound', `database "${name}" does not exist (createIfMissing is off): open it with createIfMissing: true to create it`);
      }
      throw e;
    }
  });
}

/** What `repairDatabase` salvaged and lost. */
export interface RepairReport {
  /** Table files read whole. */
  tablesIntact: number;
  /** Table files with blocks that failed their checksum (their other blocks kept). */
  tablesDamaged: number;
  /** Table files that could not be read at all: their data is lost. */
  tablesLost: number;
  /** Data blocks left out because they failed their checksum. */
  blocksLost: number;
  /** Log records replayed. */
  walRecords: number;
  /** Logs that ended in damage (records after it are lost). */
  walsDamaged: number;
  /** Versions of keys in the rebuilt database. */
  entries: number;
  rangeDeletions: number;
  /** What went wrong where, one line per damaged file. */
  problems: string[];
}

/**
 * Rebuilds database `name` from whatever of it is intact, in this worker,
 * when `open()` fails with `Corruption` or `ChecksumMismatch`: every table
 * file and log is read, damaged blocks and records are left out, and the
 * rest becomes a database `open()` opens. The database must not be open
 * anywhere (its Web Lock is taken; `wait` as for `open()`). Returns what was
 * salvaged and what was lost. Export what you can first if the data
 * matters: a repair keeps only what it can read.
 */
export async function repairDatabase(name: string, options: Pick<OpenOptions, 'wait' | 'signal'> = {}): Promise<RepairReport> {
  const storage = browserStorage();
  const root = await domCall('opening the origin private file system', () => storage.rootDirectory());
  return repairOn({ root, locks: storage.locks }, name, options);
}

/** @internal `repairDatabase` on the given storage (the Node tests use fakes). */
export async function repairOn(env: StorageEnv, name: string, options: Pick<OpenOptions, 'wait' | 'signal'> = {}): Promise<RepairReport> {
  checkName(name);
  const { engine, o } = checkOptions(options);
  await loadWasm();
  const lock = await acquireLock(env.locks, name, o.wait ?? false, o.signal);
  let keeper: PoolKeeper | undefined;
  try {
    keeper = await PoolKeeper.open(await directoryOf(env, name, false), o.poolReserve ?? 16);
    try {
      return keeper.pool.repair(ENGINE_DIR, toWasm(engine)) as RepairReport;
    } catch (e) {
      throw fromWasm(e);
    }
  } finally {
    keeper?.close();
    lock.release();
  }
}

/**
 * Creates database `name` from an export (`db.export()`: a stream, a Blob
 * or File, bytes, or an iterable of chunks), in this worker, and closes it.
 * Every chunk's checksum and the end record are checked before the data
 * becomes visible; on any failure (a damaged or truncated export:
 * `Corruption` or `ChecksumMismatch`) the new database is removed, so
 * `name` is left as it was: absent. A database of that name must not exist
 * (`AlreadyExists`). `options` are `open()`'s (`errorIfExists` is implied).
 */
export async function importDatabase(name: string, source: ImportSource, options: OpenOptions<unknown, unknown> = {}): Promise<ImportReport> {
  checkName(name);
  checkOptions(options);
  await loadWasm();
  const storage = browserStorage();
  const root = await domCall('opening the origin private file system', () => storage.rootDirectory());
  return importDatabaseOn({ root, locks: storage.locks }, name, source, options, removeDatabase);
}

/** The pool an `importDatabase` keeps (see `importDatabaseOn`). */
const IMPORT_POOL_RESERVE = 8;

/**
 * @internal `importDatabase` on the given storage; `remove` deletes the
 * database after a failed import. The database is marked
 * (`IMPORT_MARKER`) from its creation until its import is durable, so that
 * a tab closed in between leaves nothing the next `open()` would find.
 */
export async function importDatabaseOn(
  env: StorageEnv,
  name: string,
  source: ImportSource,
  options: OpenOptions<unknown, unknown>,
  remove: (name: string) => Promise<void>,
): Promise<ImportReport> {
  // A small pool: the import tops it up whenever it runs short (before
  // each piece, and when the engine stops before a table for want of
  // files), and the database is closed at the end, so a full reserve would
  // only cost time to create and to close (a millisecond or two per file).
  const poolReserve = Math.min(options.poolReserve ?? IMPORT_POOL_RESERVE, IMPORT_POOL_RESERVE);
  const db = await openOn(env, name, { ...options, poolReserve, errorIfExists: true, createIfMissing: true });
  let report: ImportReport;
  try {
    // Marked once made, never before: a mark put on a database that turned
    // out to exist already would have the next open() remove it.
    await markImport(env, name, true);
    // As db.import(), but with no background work started after it: the
    // database is closed next, and a compaction the imported levels call
    // for would only be abandoned (it runs when the database is next open).
    const { inner, ready } = Database.internals(db as Database<unknown, unknown>);
    report = await importInto(inner, source, ready);
    // Durable now: the mark goes while the lock is still held.
    await markImport(env, name, false);
  } catch (e) {
    try {
      db.close();
      await remove(name);
    } catch {
      // The import's own error says more.
    }
    throw e;
  }
  // Closed at once: the import is durable, and whatever compaction its
  // tables call for runs when the database is next open.
  db.close();
  return report;
}

/**
 * Opens a new, empty database on an in-memory file system, anywhere (Node
 * included), with the same API as `open()`; its data lives until `close()`.
 */
export async function openMemory<const O extends OpenOptions<never, never>>(
  options: O,
): Promise<Database<KeyTypeOf<O['keyEncoding'], Key>, ValueTypeOf<O['valueEncoding'], Uint8Array>>>;
/** `openMemory(options)`, of the key and value types given as type parameters. */
export async function openMemory<K = Key, V = Uint8Array>(options?: OpenOptions<K, V>): Promise<Database<K, V>>;
export async function openMemory<K = Key, V = Uint8Array>(options: OpenOptions<K, V> = {}): Promise<Database<K, V>> {
  const { engine, o } = checkOptions(options);
  if (engine.maxBytes !== 0) {
    throw new SiltError('NotSupported', 'maxBytes caps the OPFS files of a database opened with open(); an in-memory database has none');
  }
  await loadWasm();
  const wasm = toWasm(engine);
  let inner: WasmDatabase;
  try {
    inner = WasmDatabase.openMemory(wasm);
  } catch (e) {
    throw fromWasm(e);
  }
  return new Database<K, V>(
    inner,
    'memory',
    undefined,
    o.sync ?? false,
    { keepFiles: () => false, closed() {} },
    rootCodec(o as EncodingOptions<unknown, unknown>),
  );
}

/**
 * Deletes the database `name` and all its files from OPFS. Fails with
 * `DatabaseLocked` if it is still open anywhere after two seconds (a
 * database just closed by a worker is released shortly after). Works in a
 * page or a worker.
 */
export async function removeDatabase(name: string): Promise<void> {
  checkName(name);
  const g = globalThis as { navigator?: { storage?: { getDirectory?: () => Promise<unknown> }; locks?: LockManagerLike } };
  if (!g.navigator?.storage?.getDirectory || !g.navigator.locks) {
    throw new SiltError('NotSupported', 'removeDatabase() needs OPFS and Web Locks (a browser)');
  }
  const storage = g.navigator.storage;
  releaseParked(name);
  const lock = await acquireLock(g.navigator.locks, name, true, AbortSignal.timeout(2_000));
  try {
    await domCall(`removing database "${name}"`, async () => {
      const root = (await storage.getDirectory!()) as FileSystemDirectoryHandle;
      const top = await root.getDirectoryHandle(ROOT_DIR, { create: true });
      try {
        await top.removeEntry(name, { recursive: true });
      } catch (e) {
        if ((e as { name?: unknown }).name !== 'NotFoundError') throw e;
      }
    });
  } finally {
    lock.release();
  }
}
