/**
 * The IndexedDB storage (issue 38, item 2): where a browser's workers have
 * no OPFS sync access handles (WebKitGTK, Safari's private browsing, older
 * Safari, embedded WebKit), a database's pooled files are `MemoryFile`s,
 * held in memory and persisted to IndexedDB, behind the same directory
 * shape as OPFS (`getDirectoryHandle`, `getFileHandle`,
 * `createSyncAccessHandle`, `entries`, `removeEntry`), so that open.ts,
 * the pool keeper and the engine run on it unchanged.
 *
 * Each database is an IndexedDB database `siltdb:<name>` with two stores:
 * `files` (the names of its files) and `chunks` ([name, index] to the bytes
 * of 4 KiB of the file; a file's length is where its last chunk ends;
 * docs/format.md). A write marks the chunks it
 * touched; at the end of the task (a microtask) the directory persists what
 * is marked in one readwrite transaction, which commits all of it or
 * nothing: what IndexedDB holds is always the directory as it was at the
 * end of some task, every file at once, and the engine recovers from that
 * as from a crash at that moment. One persist runs at a time; writes made
 * meanwhile go in the next. A persist after a `flush()` (a sync write, a
 * new file's header, a manifest) commits with `durability: 'strict'`.
 * `persisted()` resolves once everything written before it is committed.
 * Directory changes (a file made or removed) are persisted before their
 * promise resolves. The whole database is read into memory when its
 * directory is opened: its size is bounded by memory (`maxBytes`).
 */

import { CHUNK, type ChangeSink, MemoryFile, MemoryHandle } from './memory-file.js';
import type { SyncHandleLike } from '../opfs/pool.js';

/** What the IndexedDB storage needs of `indexedDB` (Node's tests give fake-indexeddb's). */
export type IdbFactoryLike = Pick<IDBFactory, 'open' | 'deleteDatabase'>;

/** `IDBKeyRange.bound` of the realm (or of fake-indexeddb). */
type Bound = (lower: unknown, upper: unknown) => IDBKeyRange;

function realmBound(): Bound {
  const r = (globalThis as { IDBKeyRange?: typeof IDBKeyRange }).IDBKeyRange;
  if (r === undefined) throw new Error('IDBKeyRange is missing');
  return (lower, upper) => r.bound(lower, upper);
}

/** The IndexedDB database that holds database `name`'s files. */
export const idbName = (name: string): string => `siltdb:${name}`;

const FILES = 'files';
const CHUNKS = 'chunks';

function domError(name: string, message: string): Error {
  return Object.assign(new Error(message), { name });
}

const aborted = () => domError('AbortError', 'the IndexedDB transaction was aborted');

function done(request: IDBRequest): Promise<unknown> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? aborted());
  });
}

/** Resolves when `tx` commits; rejects when it aborts (a failed request aborts it too: its error is the transaction's). */
function committed(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? aborted());
  });
}

/** Opens `siltdb:<name>`; without `create`, one that does not exist fails with NotFoundError (and is not made). */
function openIdb(factory: IdbFactoryLike, name: string, create: boolean): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = factory.open(idbName(name), 1);
    let missing = false;
    request.onupgradeneeded = () => {
      if (!create) {
        missing = true;
        request.transaction?.abort();
        return;
      }
      const db = request.result;
      db.createObjectStore(FILES);
      db.createObjectStore(CHUNKS);
    };
    request.onsuccess = () => {
      const db = request.result;
      // Another worker removes the database: let it (this one no longer holds its lock).
      db.onversionchange = () => db.close();
      resolve(db);
    };
    request.onerror = () => {
      reject(missing ? domError('NotFoundError', `no database ${name}`) : request.error);
    };
    request.onblocked = () => {};
  });
}

/** Whether IndexedDB holds database `name` (nothing is made if it does not). */
export async function idbHas(factory: IdbFactoryLike & { databases?: () => Promise<{ name?: string }[]> }, name: string): Promise<boolean> {
  if (typeof factory.databases === 'function') {
    try {
      return (await factory.databases()).some((d) => d.name === idbName(name));
    } catch {
      // Asked the other way below.
    }
  }
  try {
    (await openIdb(factory, name, false)).close();
    return true;
  } catch {
    return false;
  }
}

/** The root of the IndexedDB storage, shaped as OPFS's root directory. */
export class IdbRoot {
  readonly #factory: IdbFactoryLike;
  readonly #bound: Bound | undefined;
  /** `keyRange`: the realm's `IDBKeyRange` unless given (fake-indexeddb's, in Node). */
  constructor(factory: IdbFactoryLike, keyRange?: typeof IDBKeyRange) {
    this.#factory = factory;
    this.#bound = keyRange === undefined ? undefined : (lower, upper) => keyRange.bound(lower, upper);
  }
  /** The one directory open.ts asks for (`siltdb`): every database is under it. */
  async getDirectoryHandle(_name: string, _options?: { create?: boolean }): Promise<IdbTop> {
    return new IdbTop(this.#factory, this.#bound);
  }
}

/** The directory of every database (`siltdb/`): one IndexedDB database each. */
export class IdbTop {
  readonly #factory: IdbFactoryLike;
  readonly #bound: Bound;
  constructor(factory: IdbFactoryLike, bound?: Bound) {
    this.#factory = factory;
    this.#bound = bound ?? realmBound();
  }

  /** Database `name`'s directory, its files read into memory (NotFoundError without `create` if it does not exist). */
  async getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<IdbDirectory> {
    return IdbDirectory.load(await openIdb(this.#factory, name, options?.create === true), name, this.#bound);
  }

  /** Removes database `name` and every file of it. */
  async removeEntry(name: string, _options?: { recursive?: boolean }): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const request = this.#factory.deleteDatabase(idbName(name));
      request.onsuccess = () => resolve();
      request.onerror = () => reject(request.error);
    });
  }
}

/** One database's files: in memory, persisted to its IndexedDB database. */
export class IdbDirectory implements ChangeSink {
  readonly name: string;
  readonly #db: IDBDatabase;
  readonly #bound: Bound;
  readonly #files = new Map<string, MemoryFile>();
  /** Files removed since the last persist (their records go in the next). */
  readonly #removed = new Set<string>();
  /** Bumped by every change; `#committed` is the last one IndexedDB holds. */
  #generation = 0;
  #committed = 0;
  #strict = false;
  #running: Promise<void> | undefined;
  #scheduled = false;
  readonly #waiters: { generation: number; resolve(): void; reject(e: unknown): void }[] = [];
  /** Why the last persist failed (kept until one succeeds). */
  lastError: unknown;

  private constructor(db: IDBDatabase, name: string, bound: Bound) {
    this.#db = db;
    this.name = name;
    this.#bound = bound;
  }

  static async load(db: IDBDatabase, name: string, bound: Bound): Promise<IdbDirectory> {
    const dir = new IdbDirectory(db, name, bound);
    const tx = db.transaction([FILES, CHUNKS], 'readonly');
    const [names, keys, chunks] = (await Promise.all([
      done(tx.objectStore(FILES).getAllKeys()),
      done(tx.objectStore(CHUNKS).getAllKeys()),
      done(tx.objectStore(CHUNKS).getAll()),
    ])) as [string[], [string, number][], Uint8Array[]];
    // A file's length is where its last chunk ends (0 without chunks).
    const sizes = new Map<string, number>(names.map((n) => [n, 0]));
    keys.forEach(([n, c], i) => {
      const size = sizes.get(n);
      // (A file's chunks and its record are removed in one commit: a chunk without one is never left.)
      if (size !== undefined) sizes.set(n, Math.max(size, c * CHUNK + chunks[i]!.length));
    });
    const bytes = new Map<string, Uint8Array<ArrayBuffer>>();
    for (const [n, size] of sizes) bytes.set(n, new Uint8Array(size));
    keys.forEach(([n, c], i) => {
      bytes.get(n)?.set(chunks[i]!, c * CHUNK);
    });
    for (const [n, b] of bytes) dir.#files.set(n, new MemoryFile(n, dir, b));
    return dir;
  }

  changed(sync: boolean): void {
    this.#generation++;
    if (sync) this.#strict = true;
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(() => {
        this.#scheduled = false;
        this.#start();
      });
    }
  }

  /** Resolves once everything written so far is committed to IndexedDB; rejects if a persist fails meanwhile. */
  persisted(): Promise<void> {
    if (this.#committed >= this.#generation) return Promise.resolve();
    const generation = this.#generation;
    const p = new Promise<void>((resolve, reject) => this.#waiters.push({ generation, resolve, reject }));
    this.#start();
    return p;
  }

  #start(): void {
    if (this.#running !== undefined || this.#committed >= this.#generation) return;
    this.#running = this.#persist().finally(() => {
      this.#running = undefined;
      // Written meanwhile: the next persist, unless the storage just failed
      // and nobody waits (then the next write or persisted() tries again).
      if (this.#committed < this.#generation && (this.lastError === undefined || this.#waiters.length > 0)) this.#start();
    });
  }

  async #persist(): Promise<void> {
    const generation = this.#generation;
    const strict = this.#strict;
    this.#strict = false;
    // What is marked now, copied: the state at the end of this task, for one commit.
    const puts: [[string, number], Uint8Array][] = [];
    const made: string[] = [];
    const shrunk: [string, number][] = [];
    const taken: [MemoryFile, number[], boolean, boolean][] = [];
    for (const f of this.#files.values()) {
      if (f.dirty.size === 0 && !f.shrunk && !f.created) continue;
      const chunks = [...f.dirty];
      for (const c of chunks) {
        const at = c * CHUNK;
        if (at < f.size) puts.push([[f.name, c], f.bytes.slice(at, Math.min(at + CHUNK, f.size))]);
      }
      if (f.created) made.push(f.name);
      if (f.shrunk) shrunk.push([f.name, Math.ceil(f.size / CHUNK)]);
      taken.push([f, chunks, f.shrunk, f.created]);
      f.dirty.clear();
      f.shrunk = false;
      f.created = false;
    }
    const removed = [...this.#removed];
    this.#removed.clear();
    try {
      const tx = this.#db.transaction([FILES, CHUNKS], 'readwrite', { durability: strict ? 'strict' : 'relaxed' });
      const files = tx.objectStore(FILES);
      const store = tx.objectStore(CHUNKS);
      for (const n of removed) {
        files.delete(n);
        store.delete(this.#bound([n, 0], [n, Number.MAX_SAFE_INTEGER]));
      }
      for (const n of made) files.put(0, n);
      for (const [n, chunks] of shrunk) store.delete(this.#bound([n, chunks], [n, Number.MAX_SAFE_INTEGER]));
      for (const [key, bytes] of puts) store.put(bytes, key);
      await committed(tx);
    } catch (e) {
      // Nothing of it was committed: marked again, for the next persist.
      for (const [f, chunks, wasShrunk, wasCreated] of taken) {
        for (const c of chunks) f.dirty.add(c);
        if (wasShrunk) f.shrunk = true;
        if (wasCreated) f.created = true;
      }
      for (const n of removed) if (!this.#files.has(n)) this.#removed.add(n);
      if (strict) this.#strict = true;
      this.lastError = e;
      // Those waiting for what this commit held learn that it failed;
      // those waiting for later writes wait for the next one.
      for (let i = this.#waiters.length - 1; i >= 0; i--) {
        const w = this.#waiters[i]!;
        if (w.generation <= generation) {
          this.#waiters.splice(i, 1);
          w.reject(e);
        }
      }
      return;
    }
    this.lastError = undefined;
    this.#committed = Math.max(this.#committed, generation);
    for (let i = this.#waiters.length - 1; i >= 0; i--) {
      const w = this.#waiters[i]!;
      if (w.generation <= this.#committed) {
        this.#waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  async getFileHandle(name: string, options?: { create?: boolean }): Promise<{ createSyncAccessHandle(): Promise<SyncHandleLike> }> {
    let f = this.#files.get(name);
    if (f === undefined) {
      if (!options?.create) throw domError('NotFoundError', `no file ${name} in database ${this.name}`);
      f = new MemoryFile(name, this);
      f.created = true;
      // Old chunks of a file of this name removed earlier in this persist's window: gone with it.
      f.shrunk = this.#removed.has(name);
      this.#files.set(name, f);
      this.#removed.delete(name);
      this.changed(true);
      await this.persisted();
    }
    return this.#handleOf(f);
  }

  #handleOf(f: MemoryFile): { createSyncAccessHandle(): Promise<SyncHandleLike> } {
    return {
      createSyncAccessHandle: async () => {
        if (this.#files.get(f.name) !== f) throw domError('NotFoundError', `file ${f.name} was removed`);
        if (f.open) throw domError('NoModificationAllowedError', `file ${f.name} is open`);
        f.open = true;
        return new MemoryHandle(f, this);
      },
    };
  }

  async *keys(): AsyncIterable<string> {
    yield* [...this.#files.keys()];
  }

  async *entries(): AsyncIterable<[string, { createSyncAccessHandle(): Promise<SyncHandleLike> }]> {
    for (const f of [...this.#files.values()]) yield [f.name, this.#handleOf(f)];
  }

  /** Removes file `name` (open: NoModificationAllowedError), durably before it resolves. */
  async removeEntry(name: string, _options?: { recursive?: boolean }): Promise<void> {
    const f = this.#files.get(name);
    if (f === undefined) throw domError('NotFoundError', `no file ${name} in database ${this.name}`);
    if (f.open) throw domError('NoModificationAllowedError', `file ${name} is open`);
    this.#files.delete(name);
    this.#removed.add(name);
    this.changed(true);
    await this.persisted();
  }
}
