/**
 * Where `open()` keeps a database in this browser (issue 38): OPFS through
 * sync access handles where the workers have them, else IndexedDB
 * (idb/idb-directory.ts), as the `storage` option asks; and the storage
 * environment open.ts opens on (tests substitute it).
 */

import { SiltError, storageError } from '../core/errors.js';
import type { LockManagerLike } from '../core/web-locks.js';
import type { IdbFactoryLike } from '../idb/idb-directory.js';

/** The IndexedDB storage, loaded only where it is used (a page that only connect()s, or a worker on OPFS, never loads it). */
export const idbStorage = (): Promise<typeof import('../idb/idb-directory.js')> => import('../idb/idb-directory.js');
import type { StorageKind } from './core.js';

/** Where `open` finds OPFS and Web Locks (tests substitute both). */
export interface StorageEnv {
  root: { getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<unknown> };
  locks: LockManagerLike;
  /** What `root` is: OPFS (the default), or the IndexedDB storage's (idb/idb-directory.ts). */
  kind?: StorageKind;
}

/** The OPFS directory that holds one directory per database. */
export const ROOT_DIR = 'siltdb';

/** This worker's storage for `open()` (`wanted`: the `storage` option), and its Web Locks, or a clear refusal. */
export function browserStorage(wanted: 'auto' | 'opfs' | 'indexeddb' = 'auto'): {
  locks: LockManagerLike;
  kind: 'opfs' | 'indexeddb';
  rootDirectory(): Promise<StorageEnv['root']>;
} {
  const g = globalThis as {
    navigator?: { storage?: { getDirectory?: () => Promise<StorageEnv['root']> }; locks?: LockManagerLike };
    FileSystemFileHandle?: { prototype: object };
    indexedDB?: IdbFactoryLike;
  };
  const hasSyncHandles = g.FileSystemFileHandle !== undefined && 'createSyncAccessHandle' in g.FileSystemFileHandle.prototype && !opfsRefused;
  const inDedicatedWorker = typeof (globalThis as { DedicatedWorkerGlobalScope?: unknown }).DedicatedWorkerGlobalScope === 'function';
  const missing = !g.navigator?.storage?.getDirectory
    ? 'the origin private file system (navigator.storage.getDirectory)'
    : !hasSyncHandles
      ? 'OPFS sync access handles (FileSystemFileHandle.prototype.createSyncAccessHandle)'
      : undefined;
  if (!inDedicatedWorker) {
    throw new SiltError(
      'NotSupported',
      'open() needs a dedicated worker in a browser (its storage is synchronous): ' +
        'call open() in a worker, connect() from a page, or openMemory() anywhere',
    );
  }
  const locks = g.navigator?.locks;
  if (!locks) throw new SiltError('NotSupported', 'open() needs Web Locks (navigator.locks), which this browser lacks');
  const idb = g.indexedDB;
  if (wanted !== 'indexeddb' && missing === undefined) {
    const storage = g.navigator!.storage!;
    return { locks, kind: 'opfs', rootDirectory: () => storage.getDirectory!() };
  }
  if (wanted !== 'opfs' && idb !== undefined) {
    return { locks, kind: 'indexeddb', rootDirectory: async () => new (await idbStorage()).IdbRoot(idb) };
  }
  throw new SiltError(
    'NotSupported',
    wanted === 'indexeddb'
      ? `open() with storage: 'indexeddb' needs IndexedDB, which this worker lacks`
      : `open() needs ${missing}, which this browser's workers lack${wanted === 'opfs' ? '' : ', and IndexedDB, which it lacks too'}: ` +
          `use Chrome or Edge 102+, Firefox 111+ or Safari 16.4+${wanted === 'opfs' ? `, open with storage: 'auto' (IndexedDB where OPFS cannot be used)` : ''}, or openMemory() for a database that is not kept`,
  );
}

/** This realm's OPFS refused a sync access handle (its backend has none: WebKitGTK 2.50): 'auto' uses IndexedDB from then on. */
let opfsRefused = false;

export async function domCall<T>(what: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw storageError(what, e);
  }
}

/**
 * @internal `f` on the storage `browserStorage(wanted)` chose (its root `root`):
 * with `'auto'` where OPFS is chosen, a database already kept in IndexedDB
 * stays there, and a backend that refuses sync access handles once asked
 * (WebKitGTK 2.50 with its file system features on) makes this realm use
 * IndexedDB.
 */
export async function onBrowserStorage<T>(
  name: string,
  wanted: 'auto' | 'opfs' | 'indexeddb',
  storage: ReturnType<typeof browserStorage>,
  root: StorageEnv['root'],
  f: (env: StorageEnv) => Promise<T>,
): Promise<T> {
  const idb = (globalThis as { indexedDB?: IdbFactoryLike }).indexedDB;
  if (storage.kind !== 'opfs' || wanted !== 'auto' || idb === undefined) return f({ root, locks: storage.locks, kind: storage.kind });
  const inIdb = async (): Promise<StorageEnv> => ({ root: new (await idbStorage()).IdbRoot(idb), locks: storage.locks, kind: 'indexeddb' });
  // A database kept in IndexedDB (made where this browser's workers had no sync access handles) stays there.
  if (await keptInIndexedDb(root, idb, name)) return f(await inIdb());
  try {
    return await f({ root, locks: storage.locks, kind: 'opfs' });
  } catch (e) {
    if (!(e instanceof SiltError && e.code === 'NotSupported' && /FileSystemSyncAccessHandle/.test(e.message))) throw e;
    opfsRefused = true;
    // The attempt made a directory of empty files there: gone, so that
    // the next worker finds the database where it is (IndexedDB).
    await removeIfEmpty(root, name);
    return f(await inIdb());
  }
}

/** Removes database `name`'s OPFS directory if every file in it is empty (made by an attempt that could open none). */
async function removeIfEmpty(root: StorageEnv['root'], name: string): Promise<void> {
  type Dir = {
    getDirectoryHandle(n: string): Promise<Dir>;
    entries(): AsyncIterable<[string, { kind?: string; getFile?: () => Promise<{ size: number }> }]>;
    removeEntry(n: string, o: { recursive: boolean }): Promise<void>;
  };
  try {
    const top = (await root.getDirectoryHandle(ROOT_DIR)) as Dir;
    const dir = await top.getDirectoryHandle(name);
    for await (const [, entry] of dir.entries()) {
      if (entry.kind !== 'file' || typeof entry.getFile !== 'function' || (await entry.getFile()).size !== 0) return;
    }
    await top.removeEntry(name, { recursive: true });
  } catch {
    // Left: the database is kept in IndexedDB all the same, found there once this directory is gone.
  }
}

/** Whether database `name` is not on OPFS (`root`) and is in IndexedDB. */
async function keptInIndexedDb(root: StorageEnv['root'], idb: IdbFactoryLike, name: string): Promise<boolean> {
  try {
    const top = (await root.getDirectoryHandle(ROOT_DIR, { create: true })) as StorageEnv['root'];
    await top.getDirectoryHandle(name);
    return false;
  } catch (e) {
    if ((e as { name?: unknown }).name !== 'NotFoundError') return false;
  }
  // Asked without loading the IndexedDB storage's module where the browser lists its databases (all current ones do).
  const list = (idb as { databases?: () => Promise<{ name?: string }[]> }).databases;
  if (typeof list === 'function') {
    try {
      const wanted = `siltdb:${name}`;
      return (await list.call(idb)).some((d) => d.name === wanted);
    } catch {
      // Asked the other way below.
    }
  }
  return (await idbStorage()).idbHas(idb, name);
}
