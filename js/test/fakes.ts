// In-memory stand-ins for OPFS and Web Locks, so that the OPFS path of
// `siltdb` (pool keeper, pooled files through the real wasm build, locks)
// runs in Node. Real OPFS is tested in Chromium (tests/e2e).
import type { LockManagerLike } from '../src/core/web-locks.js';
import type { SyncHandleLike } from '../src/opfs/pool.js';

/** The OPFS calls a fault hook can fail. */
export type FakeOp = 'getDirectoryHandle' | 'getFileHandle' | 'createSyncAccessHandle' | 'removeEntry' | 'read' | 'write' | 'truncate' | 'flush';

/**
 * Called before each OPFS call of a fake tree (`root.faults.hook`), with the
 * call and the name of its file or entry: throw (e.g. `domError(...)`) to
 * make the call fail as the browser would, before it does anything.
 */
export type FaultHook = (op: FakeOp, name: string) => void;

/** What every directory and handle of one fake tree shares. */
export interface Faults {
  hook: FaultHook | undefined;
  /** Sync access handles of the tree open now, and the most at once (set it to count them). */
  handles?: { open: number; peak: number };
}

/** An error as OPFS throws them (a DOMException-like `name`). */
export function domError(name: string, message = name): Error {
  return Object.assign(new Error(message), { name });
}

class FakeFile {
  data = new Uint8Array(0);
  /** The bytes as of the last flush: what a crash leaves. */
  durable = new Uint8Array(0);
  open = false;
  /** Removed from its directory: as in OPFS, its handles then find nothing. */
  removed = false;
}

const notFound = (what: string) => Object.assign(new Error(`${what} was removed`), { name: 'NotFoundError' });

class FakeSyncHandle implements SyncHandleLike {
  #file: FakeFile;
  #name: string;
  #faults: Faults;
  #closed = false;
  constructor(file: FakeFile, name: string, faults: Faults) {
    this.#file = file;
    this.#name = name;
    this.#faults = faults;
  }
  #check(op?: FakeOp): void {
    if (this.#closed) throw Object.assign(new Error('the handle is closed'), { name: 'InvalidStateError' });
    if (op !== undefined) this.#faults.hook?.(op, this.#name);
  }
  read(buffer: Uint8Array, { at }: { at: number }): number {
    this.#check('read');
    const n = Math.max(0, Math.min(buffer.length, this.#file.data.length - at));
    buffer.set(this.#file.data.subarray(at, at + n));
    return n;
  }
  write(buffer: Uint8Array, { at }: { at: number }): number {
    this.#check('write');
    if (at + buffer.length > this.#file.data.length) this.#resize(at + buffer.length);
    this.#file.data.set(buffer, at);
    return buffer.length;
  }
  getSize(): number {
    this.#check();
    return this.#file.data.length;
  }
  truncate(size: number): void {
    this.#check('truncate');
    this.#resize(size);
  }
  #resize(size: number): void {
    const next = new Uint8Array(size);
    next.set(this.#file.data.subarray(0, size));
    this.#file.data = next;
  }
  flush(): void {
    this.#check('flush');
    this.#file.durable = this.#file.data.slice();
  }
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#file.open = false;
    if (this.#faults.handles !== undefined) this.#faults.handles.open--;
  }
}

/** A directory of files with exclusive sync access handles, as in OPFS. */
export class FakeDirectory {
  files = new Map<string, FakeFile>();
  dirs = new Map<string, FakeDirectory>();
  /** Creates fail with QuotaExceededError once this many files exist. */
  maxFiles = Infinity;
  /** Opening a sync access handle throws this (a browser whose OPFS backend has none). */
  handleError: Error | undefined;
  /** Failures to inject, shared by every directory and handle of this tree. */
  readonly faults: Faults;
  /** Removed from its parent: as in OPFS, every call on a handle of it then fails with NotFoundError. */
  removed = false;

  constructor(faults: Faults = { hook: undefined }) {
    this.faults = faults;
  }

  async getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<FakeDirectory> {
    this.faults.hook?.('getDirectoryHandle', name);
    if (this.removed) throw notFound('the directory');
    let d = this.dirs.get(name);
    if (!d) {
      if (!options?.create) throw Object.assign(new Error(`no directory ${name}`), { name: 'NotFoundError' });
      d = new FakeDirectory(this.faults);
      this.dirs.set(name, d);
    }
    return d;
  }

  async getFileHandle(name: string, options?: { create?: boolean }) {
    this.faults.hook?.('getFileHandle', name);
    if (this.removed) throw notFound('the directory');
    let f = this.files.get(name);
    if (!f) {
      if (!options?.create) throw Object.assign(new Error(`no file ${name}`), { name: 'NotFoundError' });
      if (this.files.size >= this.maxFiles) throw Object.assign(new Error('quota'), { name: 'QuotaExceededError' });
      f = new FakeFile();
      this.files.set(name, f);
    }
    return this.#handleOf(name, f);
  }

  /** A file handle of `file` (as `getFileHandle` and `entries` give). */
  #handleOf(name: string, file: FakeFile) {
    const handleError = this.handleError;
    const faults = this.faults;
    return {
      async createSyncAccessHandle(): Promise<SyncHandleLike> {
        if (handleError) throw handleError;
        faults.hook?.('createSyncAccessHandle', name);
        if (file.removed) throw notFound(`file ${name}`);
        if (file.open) throw Object.assign(new Error('file is open'), { name: 'NoModificationAllowedError' });
        file.open = true;
        if (faults.handles !== undefined) {
          faults.handles.open++;
          faults.handles.peak = Math.max(faults.handles.peak, faults.handles.open);
        }
        return new FakeSyncHandle(file, name, faults);
      },
    };
  }

  async *keys(): AsyncIterable<string> {
    if (this.removed) throw notFound('the directory');
    yield* [...this.files.keys(), ...this.dirs.keys()];
  }

  async *entries(): AsyncIterable<[string, object]> {
    if (this.removed) throw notFound('the directory');
    for (const [n, f] of [...this.files]) {
      // A listing fails where a lookup of the file would have.
      this.faults.hook?.('getFileHandle', n);
      yield [n, this.#handleOf(n, f)];
    }
    yield* this.dirs;
  }

  /** Whether a file of this tree has an open sync access handle. */
  #anyOpen(): boolean {
    return [...this.files.values()].some((f) => f.open) || [...this.dirs.values()].some((d) => d.#anyOpen());
  }

  /** Marks this tree removed (its handles then find nothing). */
  #remove(): void {
    this.removed = true;
    for (const f of this.files.values()) f.removed = true;
    for (const d of this.dirs.values()) d.#remove();
  }

  async removeEntry(name: string, options?: { recursive?: boolean }): Promise<void> {
    this.faults.hook?.('removeEntry', name);
    if (this.removed) throw notFound('the directory');
    const f = this.files.get(name);
    if (f) {
      if (f.open) throw Object.assign(new Error('file is open'), { name: 'NoModificationAllowedError' });
      this.files.delete(name);
      f.removed = true;
      return;
    }
    const d = this.dirs.get(name);
    if (!d) throw Object.assign(new Error(`no entry ${name}`), { name: 'NotFoundError' });
    if (!options?.recursive && (d.files.size > 0 || d.dirs.size > 0)) {
      throw Object.assign(new Error('directory not empty'), { name: 'InvalidModificationError' });
    }
    // Any open file in the tree, nested ones included, refuses the removal.
    if (d.#anyOpen()) throw Object.assign(new Error('a file is open'), { name: 'NoModificationAllowedError' });
    // Not atomic, as in OPFS: entry by entry (each a call a fault can
    // fail), the directory itself last. A failure leaves what was not yet
    // removed.
    await d.#empty();
    this.dirs.delete(name);
    d.#remove();
  }

  /** Removes every entry of this directory, one call each, nested directories first emptied. */
  async #empty(): Promise<void> {
    for (const [n, sub] of [...this.dirs]) {
      await sub.#empty();
      this.faults.hook?.('removeEntry', n);
      this.dirs.delete(n);
      sub.#remove();
    }
    for (const [n, f] of [...this.files]) {
      this.faults.hook?.('removeEntry', n);
      this.files.delete(n);
      f.removed = true;
    }
  }

  /** What a crash would leave: every file's flushed bytes, nothing open (a tree of its own, sharing `faults`). */
  crashImage(faults: Faults = { hook: undefined }): FakeDirectory {
    const copy = new FakeDirectory(faults);
    for (const [name, f] of this.files) {
      const g = new FakeFile();
      g.data = f.durable.slice();
      g.durable = f.durable.slice();
      copy.files.set(name, g);
    }
    for (const [name, d] of this.dirs) copy.dirs.set(name, d.crashImage(faults));
    return copy;
  }

  /** Every handle let go of, as when the worker holding them is gone. */
  releaseAll(): void {
    for (const f of this.files.values()) f.open = false;
    for (const d of this.dirs.values()) d.releaseAll();
  }
}

/** Exclusive locks by name, with `ifAvailable` and waiting, as navigator.locks. */
export class FakeLocks implements LockManagerLike {
  #held = new Set<string>();
  #waiters = new Map<string, (() => void)[]>();

  isHeld(name: string): boolean {
    return this.#held.has(name);
  }

  async request(
    name: string,
    options: { ifAvailable?: boolean; signal?: AbortSignal },
    callback: (lock: unknown) => Promise<void> | undefined,
  ): Promise<unknown> {
    if (this.#held.has(name)) {
      if (options.ifAvailable) return callback(null);
      if (options.signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
      await new Promise<void>((resolve, reject) => {
        const list = this.#waiters.get(name) ?? [];
        list.push(resolve);
        this.#waiters.set(name, list);
        options.signal?.addEventListener('abort', () => {
          // Aborted after the grant: nothing to undo (it must not drop
          // another waiter).
          const i = list.indexOf(resolve);
          if (i < 0) return;
          list.splice(i, 1);
          reject(Object.assign(new Error('aborted'), { name: 'AbortError' }));
        });
      });
    }
    this.#held.add(name);
    try {
      return await callback({ name });
    } finally {
      // Handed straight to the next waiter, so that no ifAvailable request
      // in between gets it too; else let go.
      const next = this.#waiters.get(name)?.shift();
      if (next) next();
      else this.#held.delete(name);
    }
  }
}
