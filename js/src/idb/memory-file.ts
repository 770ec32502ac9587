/**
 * A pooled file of the IndexedDB storage (issue 38, item 2): its bytes held
 * in memory, read and written synchronously through the methods of a
 * `FileSystemSyncAccessHandle` (`MemoryHandle`), so that the pool and the
 * engine run on it exactly as on OPFS; the chunks a write touched are
 * marked, and its directory (idb-directory.ts) persists them to IndexedDB
 * asynchronously.
 */

import type { SyncHandleLike } from '../opfs/pool.js';

/**
 * Bytes per stored chunk of a file (one IndexedDB record each). A durable
 * put rewrites the log's last chunk, a flush writes a table's every chunk.
 * Measured in Chromium (bench/run/storage.mjs, a `sync: true` put awaited
 * until committed): 1.80 ms with 32 KiB chunks, 1.04-1.18 ms with 4 KiB,
 * 0.91 ms with 1 KiB (within the runs' noise of 4 KiB, for four times the
 * records a table takes).
 */
export const CHUNK = 4 * 1024;

/** What a file tells its directory: bytes changed (`sync`: a flush asked for them to be made durable). */
export interface ChangeSink {
  changed(sync: boolean): void;
}

/** One file's bytes, its length, and what is not persisted yet. */
export class MemoryFile {
  bytes: Uint8Array;
  size: number;
  /** Chunks written since they were last persisted. */
  readonly dirty = new Set<number>();
  /** It got shorter since it was last persisted: its chunks past the end go at the next persist. */
  shrunk = false;
  /** Made since the last persist: its `files` record goes in the next. */
  created = false;
  /** A sync access handle is open on it (one at a time, as in OPFS). */
  open = false;
  readonly name: string;
  readonly #sink: ChangeSink;

  constructor(name: string, sink: ChangeSink, bytes = new Uint8Array(0)) {
    this.name = name;
    this.#sink = sink;
    this.bytes = bytes;
    this.size = bytes.length;
  }

  /** Room for `n` bytes (the buffer doubles, so appends cost amortized O(1)). */
  #reserve(n: number): void {
    if (n <= this.bytes.length) return;
    const next = new Uint8Array(Math.max(n, this.bytes.length * 2, 4096));
    next.set(this.bytes.subarray(0, this.size));
    this.bytes = next;
  }

  #mark(from: number, to: number): void {
    if (to <= from) return;
    for (let c = Math.floor(from / CHUNK), last = Math.floor((to - 1) / CHUNK); c <= last; c++) this.dirty.add(c);
  }

  read(buffer: Uint8Array, at: number): number {
    const n = Math.max(0, Math.min(buffer.length, this.size - at));
    if (n > 0) buffer.set(this.bytes.subarray(at, at + n));
    return n;
  }

  write(buffer: Uint8Array, at: number): number {
    const end = at + buffer.length;
    this.#reserve(end);
    this.bytes.set(buffer, at);
    if (end > this.size) this.size = end;
    this.#mark(at, end);
    this.#sink.changed(false);
    return buffer.length;
  }

  truncate(size: number): void {
    if (size === this.size) return;
    if (size < this.size) {
      // Bytes past the end read as zeros once the file grows again.
      this.bytes.fill(0, size, this.size);
      if (size % CHUNK !== 0) this.#mark(size - 1, size);
      this.shrunk = true;
    } else {
      // Stored as zeros: a file's length is where its last chunk ends.
      this.#reserve(size);
      this.#mark(this.size, size);
    }
    this.size = size;
    this.#sink.changed(false);
  }
}

/** A `FileSystemSyncAccessHandle`'s synchronous methods over a `MemoryFile`. */
export class MemoryHandle implements SyncHandleLike {
  readonly #file: MemoryFile;
  readonly #sink: ChangeSink;
  #closed = false;

  constructor(file: MemoryFile, sink: ChangeSink) {
    this.#file = file;
    this.#sink = sink;
  }

  #check(): MemoryFile {
    if (this.#closed) throw Object.assign(new Error('the access handle is closed'), { name: 'InvalidStateError' });
    return this.#file;
  }

  read(buffer: Uint8Array, { at }: { at: number }): number {
    return this.#check().read(buffer, at);
  }

  write(buffer: Uint8Array, { at }: { at: number }): number {
    return this.#check().write(buffer, at);
  }

  getSize(): number {
    return this.#check().size;
  }

  truncate(size: number): void {
    this.#check().truncate(size);
  }

  /** Asks for what was written to be made durable: the next persist commits strictly, and `persisted()` says when. */
  flush(): void {
    this.#check();
    this.#sink.changed(true);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#file.open = false;
  }
}
