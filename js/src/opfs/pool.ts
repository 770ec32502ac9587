/**
 * Keeping the OPFS file pool of a database filled.
 *
 * The engine runs synchronously and OPFS creates files and sync access
 * handles only asynchronously, so the engine's file layer (crates/wasm,
 * `OpfsPool`) hands out files opened ahead of time. This keeper opens
 * every pooled file of the database at open, and between engine calls
 * creates new ones whenever fewer than `reserve` are free. Pooled files are
 * named `NNNNNN.pool` in the database's OPFS directory; their headers (see
 * docs/format.md) say which logical file each holds.
 */

import { OpfsPool } from '../../pkg/silt_wasm.js';
import { fromWasm, SiltError } from '../core/errors.js';
import { HANDLES_PER_SLICE, type HandleCounter, holdsHandles, UNCOUNTED } from './handle-budget.js';

/** The synchronous methods of a `FileSystemSyncAccessHandle` the pool uses. */
export interface SyncHandleLike {
  read(buffer: Uint8Array, options: { at: number }): number;
  write(buffer: Uint8Array, options: { at: number }): number;
  getSize(): number;
  truncate(size: number): void;
  flush(): void;
  close(): void;
}

/** What the keeper needs of a `FileSystemFileHandle`. */
export interface FileLike {
  createSyncAccessHandle(): Promise<SyncHandleLike>;
}

/** What the keeper needs of a `FileSystemDirectoryHandle`. */
export interface DirectoryLike {
  getFileHandle(name: string, options?: { create?: boolean }): Promise<FileLike>;
  keys(): AsyncIterable<string>;
  /** Each entry with its handle (a file's, or a directory's, which has no `createSyncAccessHandle`). */
  entries(): AsyncIterable<[string, FileLike | object]>;
  removeEntry(name: string): Promise<void>;
}

/** The handle budget a keeper opens its files within (handle-budget.ts), and for whom. */
export interface Budget {
  handles: HandleCounter;
  /** `handleBudget`: handles siltdb keeps open in the origin at most. */
  limit: number;
  /** Who asks, for messages: `database "name"`. */
  what: string;
}

const POOL_FILE = /^(\d{6})\.pool$/;

/** The most free pooled files a keeper raises its target to (and at most half the handle budget). */
const MAX_TARGET = 256;

/** The free files a pool keeps when the handle budget runs short: the most any call needs (`MIN_POOL_RESERVE`). */
const PRESSED_TARGET = 4;

/** After this long without a burst, a raised target halves (down to the reserve), and free files past it are let go. */
export const TARGET_DECAY_MS = 30_000;

/** Opening a sync access handle still held by a worker that just died. */
export const HANDLE_RETRY_MS = 3_000;

function domError(what: string, e: unknown): SiltError {
  if (e instanceof SiltError) return e;
  const errName = (e as { name?: unknown } | null)?.name;
  const detail = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  const code = errName === 'NoModificationAllowedError' ? 'DatabaseLocked' : errName === 'QuotaExceededError' ? 'QuotaExceeded' : 'IoError';
  return new SiltError(code, `${what}: ${detail}`, { cause: e });
}

async function openHandle(dir: DirectoryLike, name: string): Promise<SyncHandleLike> {
  let file: FileLike;
  try {
    file = await dir.getFileHandle(name, { create: true });
  } catch (e) {
    throw domError(`could not create pooled file ${name}`, e);
  }
  return openFile(file, name);
}

/** A sync access handle of pooled file `name`, retried while a worker that just died still holds it. */
async function openFile(file: FileLike, name: string): Promise<SyncHandleLike> {
  const deadline = Date.now() + HANDLE_RETRY_MS;
  for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
    try {
      return await file.createSyncAccessHandle();
    } catch (e) {
      // We hold the database's Web Lock, so a file still open elsewhere can
      // only belong to a context that is going away (a terminated worker
      // releases its handles shortly after its lock).
      const errName = (e as { name?: unknown }).name;
      if (errName === 'NotSupportedError') {
        // The browser has OPFS but its storage backend has no synchronous
        // access handles (WebKitGTK 2.50: "Backend does not support this
        // operation"): nothing to retry.
        throw new SiltError(
          'NotSupported',
          `this browser's origin private file system cannot open FileSystemSyncAccessHandle, which siltdb needs (${(e as Error).message ?? String(e)})`,
          { cause: e },
        );
      }
      if (errName !== 'NoModificationAllowedError' || Date.now() > deadline) {
        throw domError(`could not open pooled file ${name}`, e);
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

export class PoolKeeper {
  readonly pool: OpfsPool;
  readonly reserve: number;
  #dir: DirectoryLike;
  readonly #budget: Budget;
  /** Sync access handles this keeper has open (counted in the budget). */
  #handles = 0;
  /** Unregisters it as a holder of handles the budget can ask back (`yieldHandles`). */
  #unregister: (() => void) | undefined;
  #next: number;
  #filling: Promise<void> | undefined;
  #target: number;
  /** A call used more than half of the target since the last top-up. */
  #burst = false;
  /** When the target was last raised or lowered (`Date.now()`). */
  #targetSince = Date.now();
  #closed = false;
  lastError: SiltError | undefined;

  private constructor(dir: DirectoryLike, pool: OpfsPool, reserve: number, next: number, budget: Budget) {
    this.#dir = dir;
    this.pool = pool;
    this.reserve = reserve;
    this.#target = reserve;
    this.#next = next;
    this.#budget = budget;
  }

  /**
   * Opens every pooled file in `dir` and tops the pool up to `reserve`
   * free files, within `budget`. On failure every handle opened is closed
   * again.
   */
  static async open(dir: DirectoryLike, reserve: number, budget: Budget): Promise<PoolKeeper> {
    // Listed with their handles: no lookup of each file by name before its
    // sync access handle (20 files in Chromium: 4.4 ms instead of 7.0).
    // Something else of a pooled file's name (a directory) is looked up by
    // name, which fails as it should.
    const files = new Map<string, FileLike | undefined>();
    try {
      for await (const [name, handle] of dir.entries()) {
        if (POOL_FILE.test(name)) files.set(name, 'createSyncAccessHandle' in handle ? (handle as FileLike) : undefined);
      }
    } catch (e) {
      throw domError('could not list the pooled files', e);
    }
    const names = [...files.keys()].sort();
    const pool = new OpfsPool();
    const next = names.length === 0 ? 0 : Number(POOL_FILE.exec(names[names.length - 1]!)![1]) + 1;
    const keeper = new PoolKeeper(dir, pool, reserve, next, budget);
    try {
      await budget.handles.take(names.length, budget.limit, `opening ${budget.what} (${names.length} pooled files, each an open handle)`);
    } catch (e) {
      pool.close();
      throw e;
    }
    keeper.#handles = names.length;
    try {
      const handles = await Promise.allSettled(
        names.map((n) => {
          const file = files.get(n);
          return file === undefined ? openHandle(dir, n) : openFile(file, n);
        }),
      );
      const failed = handles.find((h): h is PromiseRejectedResult => h.status === 'rejected');
      if (failed) {
        for (const h of handles) if (h.status === 'fulfilled') h.value.close();
        throw failed.reason;
      }
      keeper.#addAll(handles as PromiseFulfilledResult<SyncHandleLike>[], names);
      if (budget.handles !== UNCOUNTED) keeper.#unregister = holdsHandles(keeper);
      await keeper.topUp();
      if (keeper.lastError) throw keeper.lastError;
    } catch (e) {
      keeper.close();
      throw e;
    }
    return keeper;
  }

  #add(handle: SyncHandleLike, name: string): void {
    try {
      this.pool.add(handle, name);
    } catch (e) {
      handle.close();
      throw fromWasm(e);
    }
  }

  /**
   * Adds every handle to the pool. If one cannot be added (its header
   * could not be read), the handles not added yet are closed too: left
   * open, they would keep their files locked until the worker ends, and
   * every later open would fail.
   */
  #addAll(handles: PromiseFulfilledResult<SyncHandleLike>[], names: string[]): void {
    let i = 0;
    try {
      for (; i < handles.length; i++) this.#add(handles[i]!.value, names[i]!);
    } catch (e) {
      for (let j = i + 1; j < handles.length; j++) handles[j]!.value.close();
      throw e;
    }
  }

  /**
   * Starts a top-up if fewer than the target are free. The target starts
   * at `reserve` and doubles (up to 256, and half the handle budget) after
   * a burst of calls used more than half of it before the keeper could add
   * files: pooled files are created only between calls, so a workload that
   * writes in bursts gets a pool sized for its bursts (a free pooled file
   * is an empty file). Without a burst for `TARGET_DECAY_MS` it halves
   * again, down to `reserve`; free files more than a slice of the budget
   * past the target are closed and removed (`#shrink`).
   */
  topUpIfLow(): void {
    if (this.#closed) return;
    const free = this.pool.freeCount();
    if (free < this.#target / 2) this.#burst = true;
    else if (this.#target > this.reserve && Date.now() - this.#targetSince > TARGET_DECAY_MS) {
      // No burst for a while: the pool need not stay sized for one.
      this.#target = Math.max(this.reserve, Math.floor(this.#target / 2));
      this.#targetSince = Date.now();
    }
    if (this.#filling === undefined && free < this.#target) {
      this.topUp().catch(() => {}); // kept in lastError
    } else if (this.#filling === undefined && free > this.#target + HANDLES_PER_SLICE) {
      this.#shrink();
    }
  }

  /**
   * The handle budget ran short (here or in another worker): the target
   * drops to the fewest free files a call needs, and the free files past it
   * are closed and removed. It grows again with the next bursts, within
   * what the budget gives.
   */
  yieldHandles(): void {
    if (this.#closed || this.#filling !== undefined) return;
    this.#target = PRESSED_TARGET;
    this.#targetSince = Date.now();
    if (this.pool.freeCount() > PRESSED_TARGET) this.#shrink();
  }

  /**
   * Closes the free pooled files past the target (left by deleted tables:
   * a compaction that merged many files into few) and removes them, so
   * that the handle budget gets them back and the next open does not open
   * them again. A removal that fails leaves a free file, which the next
   * open adds to the pool as free.
   */
  #shrink(): void {
    const names = this.pool.closeFree(this.pool.freeCount() - this.#target);
    if (names.length === 0) return;
    this.#handles -= names.length;
    this.#budget.handles.give(names.length);
    for (const n of names) this.#dir.removeEntry(n).catch(() => {});
  }

  /** Free pooled files the keeper keeps now (`reserve`, raised after bursts). */
  get target(): number {
    return this.#target;
  }

  /**
   * Creates pooled files until `target` (default: the keeper's target,
   * doubled first if a burst used more than half of it) are free.
   * Concurrent calls share the work. A failure (e.g. the storage quota) is
   * kept in `lastError` and rethrown; writes then fail with `PoolExhausted`
   * once the pool is used up, never hang.
   */
  async topUp(target?: number): Promise<void> {
    for (;;) {
      if (this.#burst) {
        this.#burst = false;
        this.#target = Math.max(this.#target, Math.min(this.#target * 2, MAX_TARGET, Math.floor(this.#budget.limit / 2)));
        this.#targetSince = Date.now();
      }
      const want = target ?? this.#target;
      if (this.#closed || this.pool.freeCount() >= want) return;
      this.#filling ??= this.#fill(want).finally(() => (this.#filling = undefined));
      await this.#filling;
    }
  }

  async #fill(target: number): Promise<void> {
    try {
      while (!this.#closed) {
        const missing = target - this.pool.freeCount();
        if (missing <= 0) break;
        const count = Math.min(missing, 8);
        try {
          await this.#budget.handles.take(count, this.#budget.limit, `${this.#budget.what} (adding free files to its pool)`);
        } catch (e) {
          // The budget is used up: enough if the reserve is there (only a raised target is not met).
          if (this.pool.freeCount() >= this.reserve) break;
          throw e;
        }
        if (this.#closed) {
          this.#budget.handles.give(count);
          break;
        }
        // Counted in the budget from here, in `#handles` once in the pool
        // (a close meanwhile gives back only what the pool holds; this
        // batch gives back its own).
        const names = Array.from({ length: count }, () => `${String(this.#next++).padStart(6, '0')}.pool`);
        const opened = await Promise.allSettled(names.map((n) => openHandle(this.#dir, n)));
        const failed = opened.find((h): h is PromiseRejectedResult => h.status === 'rejected');
        if (this.#closed || failed) {
          for (const h of opened) if (h.status === 'fulfilled') h.value.close();
          this.#budget.handles.give(count);
          if (failed) throw failed.reason;
          break;
        }
        const before = this.pool.fileCount();
        try {
          this.#addAll(opened as PromiseFulfilledResult<SyncHandleLike>[], names);
        } finally {
          // Those not added (a header that would not read) were closed.
          const added = this.pool.fileCount() - before;
          this.#handles += added;
          if (added < count) this.#budget.handles.give(count - added);
        }
      }
      this.lastError = undefined;
    } catch (e) {
      this.lastError = e instanceof SiltError ? e : fromWasm(e);
      throw this.lastError;
    }
  }

  /** Stops topping up, closes every handle and gives them back to the budget; handles opened from now on are closed at once. */
  close(): void {
    this.#closed = true;
    this.#unregister?.();
    this.#unregister = undefined;
    this.pool.close();
    const n = this.#handles;
    this.#handles = 0;
    this.#budget.handles.give(n);
  }

  /** Its handles, this worker's (every database's), and the budget (`statistics().handles`). */
  handleStats(): { database: number; worker: number; budget: number } {
    return { database: this.#handles, worker: this.#budget.handles.held, budget: this.#budget.limit };
  }

  /** The directory its files are in. */
  get directory(): DirectoryLike {
    return this.#dir;
  }

  /** The `handleBudget` it opens files within. */
  get budgetLimit(): number {
    return this.#budget.limit;
  }
}
