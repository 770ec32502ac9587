/**
 * Opening databases: on OPFS in a dedicated worker (`open`), or in memory
 * anywhere (`openMemory`).
 */

import { Database as WasmDatabase } from '../../pkg/silt_wasm.js';
import { type ImportReport, type ImportSource, importInto } from './backup.js';
import { ingestRocksdbInto, type RocksdbIngestReport } from './rocksdb.js';
import type { Key } from '../core/bytes.js';
import { rootCodec, type EncodingOptions, type KeyTypeOf, type ValueTypeOf } from '../core/encoding.js';
import type { Closer } from './core.js';
import { Database } from './database.js';
import { fromWasm, SiltError, storageError } from '../core/errors.js';
import type { Exactly } from '../core/option-names.js';
import type { HeldLock, LockManagerLike } from '../core/web-locks.js';
import { acquireLock, releasedAfter } from '../opfs/lock.js';
import {
  type Checked,
  checkName,
  checkOptions,
  DEFAULT_HANDLE_BUDGET,
  DEFAULT_POOL_RESERVE,
  IDB_DEFAULT_MAX_BYTES,
  type ImportDatabaseOptions,
  type OpenOptions,
  toWasm,
} from './options.js';
import { closed as closedForGood, holdOpen, mayPark, park, releaseParked, takeParked } from '../opfs/parking.js';
import { type Budget, HANDLE_RETRY_MS, PoolKeeper, type DirectoryLike } from '../opfs/pool.js';
import { realmHandles } from '../opfs/handle-budget.js';
import { refreshStorageEstimate } from '../opfs/storage.js';
import { loadWasm } from '../boundary/wasm.js';
import { markStage } from '../core/marks.js';
import type { IdbDirectory, IdbFactoryLike } from '../idb/idb-directory.js';
import { UNCOUNTED } from '../opfs/handle-budget.js';

export { checkName, checkOptions, defaultBlockCacheCapacity, type ImportDatabaseOptions, MIN_POOL_RESERVE, type OpenOptions } from './options.js';
export { browserStorage, domCall, onBrowserStorage, type StorageEnv } from './browser-storage.js';
import { browserStorage, domCall, idbStorage, onBrowserStorage, ROOT_DIR, type StorageEnv } from './browser-storage.js';

/** An OPFS directory as the markers of an unfinished import or removal use it. */
interface MarkableDirectory {
  getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<MarkableDirectory>;
  getFileHandle(name: string, options?: { create?: boolean }): Promise<unknown>;
  removeEntry(name: string, options?: { recursive?: boolean }): Promise<void>;
  keys(): AsyncIterable<string>;
}

/**
 * A file in a database's directory while `importDatabase()` fills it (the
 * pool ignores every name but `NNNNNN.pool`): a database that still has it
 * was left by an import that never finished (its tab or worker went), and
 * the next `open()` removes it, as if it had never been made.
 */
const IMPORT_MARKER = 'import-unfinished';

/**
 * A file in a database's directory while it is being removed: OPFS removes
 * a directory entry by entry, so a removal cut short (its tab or worker
 * went) would leave part of a database. Made first and removed last, it
 * tells the next `open()` to finish the removal (as `IMPORT_MARKER` does).
 */
const REMOVE_MARKER = 'remove-unfinished';

/** The engine's directory inside the pool (a path prefix only). */
export const ENGINE_DIR = 'db';

/**
 * Opens (or creates) the database `name` on OPFS. Call it in a dedicated
 * worker; every method of the returned `Database` is synchronous. The
 * database's Web Lock is held until `close()`: opening it in another tab
 * or worker meanwhile fails with `DatabaseLocked`, or waits if `wait` is set.
 */
export async function open<const O extends OpenOptions<never, never>>(
  name: string,
  options: Exactly<O, OpenOptions<never, never>>,
): Promise<Database<KeyTypeOf<O['keyEncoding'], Key>, ValueTypeOf<O['valueEncoding'], Uint8Array>>>;
/** `open(name, options)`, of the key and value types given as type parameters (`open<string, Note>('app', ...)`). */
export async function open<K = Key, V = Uint8Array>(name: string, options?: OpenOptions<K, V>): Promise<Database<K, V>>;
export async function open<K = Key, V = Uint8Array>(name: string, options: OpenOptions<K, V> = {}): Promise<Database<K, V>> {
  return (await openInBrowser(name, options as OpenOptions<unknown, unknown>, true)) as unknown as Database<K, V>;
}

/** `open` on this browser's storage (OPFS, else IndexedDB: the `storage` option) and Web Locks. */
async function openInBrowser(name: string, options: OpenOptions<unknown, unknown>, parkable: boolean, onLocked?: () => void): Promise<Database> {
  checkName(name);
  checkOptions(options);
  const wanted = options.storage ?? 'auto';
  const storage = browserStorage(wanted);
  // Asked for while the module loads: two waits at once.
  const rootAsked = domCall('opening the origin private file system', () => storage.rootDirectory());
  rootAsked.catch(() => {}); // awaited below, unless the module fails first
  await loadWasm();
  markStage('wasm');
  const root = await rootAsked;
  // Started now, never awaited: statistics() has the origin's usage and
  // quota once the browser answers (usually before open returns).
  refreshStorageEstimate().catch(() => {});
  return onBrowserStorage(name, wanted, storage, root, (env) => openOn(env, name, options, parkable, onLocked));
}

/**
 * @internal `open` for the worker of the `connect()` connection that leads
 * (tabs/connection.ts): it waits for the database's lock (the worker that led before
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
  return (await openHeld(env, name, options, { parkable, onLocked, importing: false })).db;
}

/** How `openHeld` opens. */
interface How {
  parkable: boolean;
  onLocked?: (() => void) | undefined;
  /**
   * For `importDatabase`: the database must be new, and is marked
   * (`IMPORT_MARKER`) before it is made; its lock is the caller's to
   * release (the database's close keeps it), so that a failed import is
   * removed under the same lock.
   */
  importing: boolean;
}

/** `open` on the given storage, and the database's lock (`How`). */
async function openHeld(env: StorageEnv, name: string, options: OpenOptions<unknown, unknown>, how: How): Promise<{ db: Database; lock: HeldLock }> {
  checkName(name);
  const { engine, o } = checkOptions(options);
  await loadWasm();
  const wasm = toWasm(engine);
  const reserve = o.poolReserve ?? DEFAULT_POOL_RESERVE;
  const kind = env.kind ?? 'opfs';
  // Files in memory count against no handle budget; their bytes against maxBytes (256 MiB unless given).
  const budget: Budget = {
    handles: kind === 'opfs' ? realmHandles(env.locks) : UNCOUNTED,
    limit: o.handleBudget ?? DEFAULT_HANDLE_BUDGET,
    what: `database "${name}"`,
  };
  if (kind === 'indexeddb' && o.maxBytes === undefined) wasm.maxBytes = IDB_DEFAULT_MAX_BYTES;
  const parked = how.parkable ? takeParked(name, reserve, budget.limit) : undefined;
  let keeper: PoolKeeper | undefined = parked?.keeper;
  /** Everything written is committed where the files live (IndexedDB: a persist; OPFS: at once). */
  const persisted = (): Promise<void> =>
    kind === 'indexeddb' && keeper !== undefined
      ? (keeper.directory as unknown as IdbDirectory).persisted().catch((e: unknown) => {
          throw storageError(`persisting database "${name}" to IndexedDB`, e);
        })
      : Promise.resolve();
  let lock: HeldLock = parked?.lock ?? (await acquireLock(env.locks, name, o.wait ?? false, o.signal));
  if (kind === 'indexeddb' && parked === undefined) lock = releasedAfter(lock, name, persisted);
  markStage('locked');
  how.onLocked?.();
  let marked = false;
  try {
    if (keeper === undefined) {
      const create = o.createIfMissing ?? true;
      let dir = await directoryOf(env, name, create);
      if (await leftUnfinished(dir)) {
        await removeUnfinished(env, name);
        dir = await directoryOf(env, name, create);
      }
      keeper = await PoolKeeper.open(dir, reserve, budget);
      if (how.importing) {
        mustBeNew(keeper.pool, name, engine);
        await markImport(dir as unknown as MarkableDirectory, name, true);
        marked = true;
      }
    } else {
      // Parked after a burst may have used every free file: the open
      // needs some (a log, a flush of what the log holds).
      await keeper.topUp();
    }
    markStage('files');
    const k = keeper;
    let inner: WasmDatabase;
    try {
      inner = WasmDatabase.openPool(k.pool, ENGINE_DIR, wasm);
    } catch (e) {
      throw openError(fromWasm(e), name, k);
    }
    markStage('engine');
    // Opening may have used pooled files (a log, a manifest after a
    // crash): start with a full reserve.
    try {
      await keeper.topUp();
    } catch (e) {
      inner.close();
      throw e;
    }
    const holder = how.parkable ? holdOpen(name) : undefined;
    const closer: Closer = {
      storage: kind,
      persisted,
      keepFiles: () => holder !== undefined && mayPark(holder),
      closed(kept) {
        if (holder !== undefined && kept) {
          park(name, holder, k, lock, reserve);
          return;
        }
        if (holder !== undefined) closedForGood(name, holder);
        if (!how.importing) lock.release();
      },
    };
    const db = new Database(inner, name, keeper, o.sync ?? false, closer, rootCodec(o as EncodingOptions<unknown, unknown>));
    return { db, lock };
  } catch (e) {
    keeper?.close();
    try {
      // Nothing of an import that never began is kept: removed while the
      // lock is still held (left marked if that fails: the next open removes it).
      if (marked) await removeUnfinished(env, name);
    } catch {
      // The open's own error says more.
    } finally {
      lock.release();
    }
    throw e;
  }
}

/**
 * Throws `AlreadyExists` unless the pool holds no database: the engine
 * opens it with `createIfMissing` off and `errorIfExists` on, which writes
 * nothing and fails either way (`NotFound`: nothing there).
 */
function mustBeNew(pool: PoolKeeper['pool'], name: string, engine: Checked): void {
  let probe: WasmDatabase;
  try {
    probe = WasmDatabase.openPool(pool, ENGINE_DIR, toWasm({ ...engine, createIfMissing: false, errorIfExists: true }));
  } catch (e) {
    const err = fromWasm(e);
    if (err.code === 'NotFound') return;
    throw err;
  }
  probe.closeKeepingPool();
  throw new SiltError('AlreadyExists', `database "${name}" already exists: importDatabase() makes a new database`);
}

/**
 * The error of an engine open, in the words of `open()`: the database's
 * name as given and JavaScript's options (the engine names its directory
 * and its own options); `PoolExhausted` says what an open can do about it.
 */
function openError(e: SiltError, name: string, keeper: PoolKeeper): SiltError {
  if (e.code === 'AlreadyExists') {
    return new SiltError(
      'AlreadyExists',
      `database "${name}" already exists and errorIfExists is true: open it without errorIfExists, or use another name (removeDatabase("${name}") deletes it)`,
      { cause: e },
    );
  }
  if (e.code === 'NotFound') return missingDatabase(name, undefined, e);
  if (e.code !== 'PoolExhausted') return e;
  const why = keeper.lastError ? `: storage refused new files (${keeper.lastError.message})` : '';
  return new SiltError('PoolExhausted', `opening database "${name}" needs more free pooled OPFS files than the pool could get${why}`, { cause: e });
}

/** @internal The OPFS directory that holds every database (for `removeDatabase`). */
export { ROOT_DIR };

/** Whether the database in `dir` was left by an import or a removal that never finished (`IMPORT_MARKER`, `REMOVE_MARKER`). */
async function leftUnfinished(dir: DirectoryLike): Promise<boolean> {
  return domCall('checking the database for an unfinished import or removal', async () => {
    for (const marker of [IMPORT_MARKER, REMOVE_MARKER]) {
      try {
        await dir.getFileHandle(marker);
        return true;
      } catch (e) {
        if ((e as { name?: unknown }).name !== 'NotFoundError') throw e;
      }
    }
    return false;
  });
}

/** Removes database `name`, which an import or a removal left unfinished. REQUIRES: its lock held. */
async function removeUnfinished(env: StorageEnv, name: string): Promise<void> {
  await removeDirectory(env, name, `removing database "${name}", left by an import or a removal that never finished`);
}

/**
 * Removes the directory of database `name` (gone already is fine):
 * marked `REMOVE_MARKER` first, then every other entry, the directory
 * itself last, so that a removal cut short leaves the marker and the next
 * open finishes it. A marker storage refuses to make (a full origin) does
 * not stop the removal. REQUIRES: its lock held.
 */
async function removeDirectory(env: StorageEnv, name: string, what: string): Promise<void> {
  await domCall(what, async () => {
    const top = (await env.root.getDirectoryHandle(ROOT_DIR, { create: true })) as MarkableDirectory;
    let dir: MarkableDirectory;
    try {
      dir = await top.getDirectoryHandle(name);
    } catch (e) {
      if ((e as { name?: unknown }).name === 'NotFoundError') return;
      throw e;
    }
    try {
      await dir.getFileHandle(REMOVE_MARKER, { create: true });
    } catch {
      // Removed all the same, without the marker's guard.
    }
    const names: string[] = [];
    for await (const n of dir.keys()) if (n !== REMOVE_MARKER && n !== IMPORT_MARKER) names.push(n);
    for (const n of names) await removeEntryOf(dir, n);
    await removeEntryOf(top, name);
  });
}

/**
 * `dir.removeEntry(name, { recursive: true })`, gone already being fine.
 * We hold the database's lock: a file still open can only belong to a
 * context that went (a terminated worker lets go of its handles shortly
 * after), so an open file is waited for, up to `HANDLE_RETRY_MS`.
 */
async function removeEntryOf(dir: MarkableDirectory, name: string): Promise<void> {
  const deadline = Date.now() + HANDLE_RETRY_MS;
  for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
    try {
      await dir.removeEntry(name, { recursive: true });
      return;
    } catch (e) {
      const errName = (e as { name?: unknown }).name;
      if (errName === 'NotFoundError') return;
      if (errName !== 'NoModificationAllowedError' || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** Marks the database in `dir` as being imported into (`IMPORT_MARKER`), or clears the mark. REQUIRES: its lock held. */
async function markImport(dir: MarkableDirectory, name: string, on: boolean): Promise<void> {
  await domCall(`${on ? 'marking' : 'unmarking'} database "${name}" as being imported`, async () => {
    if (on) await dir.getFileHandle(IMPORT_MARKER, { create: true });
    else await dir.removeEntry(IMPORT_MARKER);
  });
}

/**
 * `NotFound` for database `name`, saying what to do: `step`, or by default
 * what an open with `createIfMissing: false` can do.
 */
function missingDatabase(name: string, step?: string, cause?: unknown): SiltError {
  const what = step === undefined ? ' (createIfMissing is false): open it without createIfMissing: false to create it, or check the name' : `: ${step}`;
  return new SiltError('NotFound', `database "${name}" does not exist${what}`, cause === undefined ? undefined : { cause });
}

/**
 * The OPFS directory of database `name` (`NotFound` if it is missing and
 * `create` is off, saying `missing`, what to do, if the caller is not an
 * open).
 */
export async function directoryOf(env: StorageEnv, name: string, create: boolean, missing?: string): Promise<DirectoryLike> {
  return domCall(`opening the directory of database "${name}"`, async () => {
    const top = (await env.root.getDirectoryHandle(ROOT_DIR, { create: true })) as StorageEnv['root'];
    try {
      return (await top.getDirectoryHandle(name, { create })) as unknown as DirectoryLike;
    } catch (e) {
      if ((e as { name?: unknown }).name === 'NotFoundError' && !create) {
        throw missingDatabase(name, missing);
      }
      throw e;
    }
  });
}

/**
 * Creates database `name` from an export (`db.export()`: a stream, a Blob
 * or File, bytes, or an iterable of chunks), in this worker, and closes it.
 * Every chunk's checksum and the end record are checked before the data
 * becomes visible; on any failure (a damaged or truncated export:
 * `Corruption` or `ChecksumMismatch`) the new database is removed, so
 * `name` is left as it was: absent. A database of that name must not exist
 * (`AlreadyExists`). `options` are `open()`'s (`errorIfExists` is implied),
 * and `format: 'rocksdb'` reads RocksDB table files instead (every table's
 * checksums verified before anything is written).
 */
export async function importDatabase(name: string, source: ImportSource, options?: ImportDatabaseOptions & { format?: 'silt' }): Promise<ImportReport>;
export async function importDatabase(name: string, source: ImportSource, options: ImportDatabaseOptions & { format: 'rocksdb' }): Promise<RocksdbIngestReport>;
export async function importDatabase(name: string, source: ImportSource, options: ImportDatabaseOptions = {}): Promise<ImportReport | RocksdbIngestReport> {
  checkName(name);
  if (typeof options !== 'object' || options === null)
    throw new SiltError('InvalidArgument', `importDatabase() takes an options object, got ${String(options)}`);
  const { format, ...open } = options;
  if (format !== undefined && format !== 'silt' && format !== 'rocksdb') {
    throw new SiltError('InvalidArgument', `importDatabase() format must be 'silt' or 'rocksdb', got ${JSON.stringify(format)}`);
  }
  checkOptions(open, 'importDatabase()');
  await loadWasm();
  const wanted = open.storage ?? 'auto';
  const storage = browserStorage(wanted);
  const root = await domCall('opening the origin private file system', () => storage.rootDirectory());
  return onBrowserStorage(name, wanted, storage, root, (env) => importDatabaseOn(env, name, source, open, format));
}

/** The pool an `importDatabase` keeps (see `importDatabaseOn`). */
const IMPORT_POOL_RESERVE = 8;

/**
 * @internal `importDatabase` on the given storage. Under one hold of the
 * database's lock, from the check that no database of that name exists to
 * the removal after a failure: the database is marked (`IMPORT_MARKER`)
 * before it is made and until its import is durable, so that a tab closed
 * in between leaves nothing the next `open()` or `importDatabase()` would
 * find; and a failed import is removed before the lock goes, so that it
 * never removes what another context made after it.
 */
export async function importDatabaseOn(
  env: StorageEnv,
  name: string,
  source: ImportSource,
  options: OpenOptions<unknown, unknown>,
  format?: 'silt',
): Promise<ImportReport>;
export async function importDatabaseOn(
  env: StorageEnv,
  name: string,
  source: ImportSource,
  options: OpenOptions<unknown, unknown>,
  format: 'rocksdb',
): Promise<RocksdbIngestReport>;
export async function importDatabaseOn(
  env: StorageEnv,
  name: string,
  source: ImportSource,
  options: OpenOptions<unknown, unknown>,
  format?: 'silt' | 'rocksdb',
): Promise<ImportReport | RocksdbIngestReport>;
export async function importDatabaseOn(
  env: StorageEnv,
  name: string,
  source: ImportSource,
  options: OpenOptions<unknown, unknown>,
  format: 'silt' | 'rocksdb' = 'silt',
): Promise<ImportReport | RocksdbIngestReport> {
  // A small pool: the import tops it up whenever it runs short (before
  // each piece, and when the engine stops before a table for want of
  // files), and the database is closed at the end, so a full reserve would
  // only cost time to create and to close (a millisecond or two per file).
  const poolReserve = Math.min(options.poolReserve ?? IMPORT_POOL_RESERVE, IMPORT_POOL_RESERVE);
  const { db, lock } = await openHeld(env, name, { ...options, poolReserve, errorIfExists: true, createIfMissing: true }, { parkable: false, importing: true });
  try {
    let report: ImportReport | RocksdbIngestReport;
    try {
      // As db.import(), but with no background work started after it: the
      // database is closed next, and a compaction the imported levels call
      // for would only be abandoned (it runs when the database is next open).
      const { inner, ready } = Database.internals(db as unknown as Database<unknown, unknown>);
      report = format === 'rocksdb' ? await ingestRocksdbInto(inner, source, ready) : await importInto(inner, source, ready);
    } catch (e) {
      await abandonImport(env, name, db);
      throw e;
    }
    // Closed at once (whatever compaction its tables call for runs when
    // the database is next open), then unmarked, while the lock is still
    // held: a close that fails leaves it marked, and it is removed.
    try {
      db.close();
    } catch (e) {
      await abandonImport(env, name, db);
      throw e;
    }
    const dir = await directoryOf(env, name, false);
    await markImport(dir as unknown as MarkableDirectory, name, false);
    return report;
  } finally {
    lock.release();
  }
}

/**
 * A failed import, under the lock it holds: its database closed (if it is
 * not yet) and removed. Still marked, so if the removal fails too, the next
 * open removes it. Each step is tried whatever the other did; the import's
 * own error says more than theirs.
 */
async function abandonImport(env: StorageEnv, name: string, db: Database): Promise<void> {
  try {
    db.close();
  } catch {
    // Its handles are closed all the same.
  }
  try {
    await removeUnfinished(env, name);
  } catch {
    // Marked: the next open removes it.
  }
}

/**
 * Opens a new, empty database on an in-memory file system, anywhere (Node
 * included), with the same API as `open()`; its data lives until `close()`.
 */
export async function openMemory<const O extends OpenOptions<never, never>>(
  options: Exactly<O, OpenOptions<never, never>>,
): Promise<Database<KeyTypeOf<O['keyEncoding'], Key>, ValueTypeOf<O['valueEncoding'], Uint8Array>>>;
/** `openMemory(options)`, of the key and value types given as type parameters. */
export async function openMemory<K = Key, V = Uint8Array>(options?: OpenOptions<K, V>): Promise<Database<K, V>>;
export async function openMemory<K = Key, V = Uint8Array>(options: OpenOptions<K, V> = {}): Promise<Database<K, V>> {
  const { engine, o } = checkOptions(options, 'openMemory()');
  if (!engine.createIfMissing) {
    throw new SiltError('NotFound', 'openMemory() makes a new database each time, so createIfMissing: false always fails: leave it out');
  }
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
    { storage: 'memory', persisted: () => Promise.resolve(), keepFiles: () => false, closed() {} },
    rootCodec(o as EncodingOptions<unknown, unknown>),
  );
}

/** How long `removeDatabase` waits for a database still open to be closed. */
const REMOVE_WAIT_MS = 2_000;

/**
 * Deletes the database `name` and all its files from OPFS. Fails with
 * `DatabaseLocked` if it is still open anywhere after two seconds (a
 * database just closed by a worker is released shortly after). Works in a
 * page or a worker.
 */
export async function removeDatabase(name: string): Promise<void> {
  checkName(name);
  const g = globalThis as {
    navigator?: { storage?: { getDirectory?: () => Promise<StorageEnv['root']> }; locks?: LockManagerLike };
    indexedDB?: IdbFactoryLike;
  };
  const locks = g.navigator?.locks;
  const opfs = g.navigator?.storage?.getDirectory;
  if (!locks || (!opfs && !g.indexedDB)) {
    throw new SiltError('NotSupported', 'removeDatabase() needs Web Locks and OPFS or IndexedDB (a browser)');
  }
  if (opfs) {
    const root = await domCall('opening the origin private file system', () => opfs.call(g.navigator!.storage));
    await removeDatabaseOn({ root, locks }, name);
  }
  // And wherever the IndexedDB storage keeps it (a database made where workers had no sync access handles).
  if (g.indexedDB) {
    const { IdbRoot, idbHas } = await idbStorage();
    if (await idbHas(g.indexedDB, name)) await removeDatabaseOn({ root: new IdbRoot(g.indexedDB), locks, kind: 'indexeddb' }, name);
  }
}

/** @internal `removeDatabase` on the given storage, waiting `waitMs` for the lock. */
export async function removeDatabaseOn(env: StorageEnv, name: string, waitMs = REMOVE_WAIT_MS): Promise<void> {
  checkName(name);
  releaseParked(name);
  const signal = AbortSignal.timeout(waitMs);
  let lock: HeldLock;
  try {
    lock = await acquireLock(env.locks, name, true, signal);
  } catch (e) {
    // The wait ran out (acquireLock rejects with the signal's reason, a
    // TimeoutError, as for open()'s own signal): what removeDatabase
    // documents is DatabaseLocked.
    if (!signal.aborted && !(e instanceof SiltError && e.code === 'DatabaseLocked')) throw e;
    throw new SiltError(
      'DatabaseLocked',
      `database "${name}" is still open in another tab or worker after ${waitMs / 1000} s (its Web Lock is held): close it there, then remove it`,
      { cause: e },
    );
  }
  try {
    await removeDirectory(env, name, `removing database "${name}"`);
  } finally {
    lock.release();
  }
}
