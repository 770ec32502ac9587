/**
 * The JavaScript side of a database's exchange buffer
 * (crates/wasm/src/exchange.rs): keys are written straight into wasm
 * memory, one export call runs the read, and the answer (where the values
 * are) is read back from the same buffer. A `get` or a `multiGet` is
 * therefore one crossing of the boundary, whatever the number of keys.
 *
 * Releasing a result queues its handle here; the queue rides along with
 * the next read (no crossing of its own), or is sent by itself when it is
 * full or once the current task ends, so pinned memory is given back soon
 * even when no read follows.
 */

import type { Database as WasmDatabase } from '../pkg/silt_wasm.js';
import { keyBytes, describe } from './bytes.js';
import { contract } from './contract.js';
import { fromWasm, SiltError } from './errors.js';
import { isWasmMemory, memoryBuffer } from './wasm.js';

// The buffer's layout, from the module's contract (set by the first
// Exchange, once the module is loaded; module-level for the hot paths).
let REQUEST = 0;
let RELEASE_SLOTS = 0;
let RELEASES = 0;
let OUT0 = 0;
let OUT1 = 0;
let HANDLES = 0;
/** The length in a layout that marks a key with no value. */
export let ABSENT = 0;

/** Where one pinned value is. */
export interface ValueAnswer {
  handle: number;
  offset: number;
  length: number;
}

/** Where the layout (offset and length of each value) of a batch is. */
export interface BatchAnswer {
  handle: number;
  layoutOffset: number;
  count: number;
}

export class Exchange {
  readonly #inner: WasmDatabase;
  #offset: number;
  #size: number;
  #buffer: ArrayBuffer | undefined;
  #bytes: Uint8Array = new Uint8Array(0);
  #words: DataView = new DataView(new ArrayBuffer(0));
  #pending: number[] = [];
  #flushScheduled = false;
  /** Scratch for the keys of one multiGet (no array allocated per call). */
  #parts: Uint8Array[] = [];

  /** REQUIRES: the module is loaded. */
  constructor(inner: WasmDatabase) {
    if (REQUEST === 0)
      ({ request: REQUEST, releaseSlots: RELEASE_SLOTS, releases: RELEASES, out0: OUT0, out1: OUT1, handles: HANDLES, absent: ABSENT } = contract().exchange);
    this.#inner = inner;
    this.#size = REQUEST + 1024;
    this.#offset = inner.exchangeBuffer(this.#size);
  }

  /** Views of the buffer, made again after memory growth or a move. */
  #views(): void {
    const buffer = memoryBuffer();
    if (buffer === this.#buffer) return;
    this.#buffer = buffer;
    this.#bytes = new Uint8Array(buffer, this.#offset, this.#size);
    this.#words = new DataView(buffer, this.#offset, this.#size);
  }

  #reserve(size: number): void {
    if (size > this.#size) {
      this.#size = Math.max(size, this.#size * 2);
      this.#offset = this.#inner.exchangeBuffer(this.#size);
      this.#buffer = undefined;
    }
    this.#views();
  }

  /** Moves the queued releases into the header (the next call drains them). */
  #sendReleases(): void {
    const n = this.#pending.length;
    this.#words.setUint32(RELEASES, n, true);
    for (let i = 0; i < n; i++) this.#words.setUint32(HANDLES + 4 * i, this.#pending[i]!, true);
    this.#pending.length = 0;
  }

  /** The value of `key` pinned, or `undefined`. One call into wasm. */
  get(key: Uint8Array, snapshot: number): ValueAnswer | undefined {
    this.#reserve(REQUEST + key.length);
    this.#bytes.set(key, REQUEST);
    this.#sendReleases();
    let handle: number;
    try {
      handle = this.#inner.getPinned(key.length, snapshot);
    } catch (e) {
      throw fromWasm(e);
    }
    if (handle === 0) return undefined;
    this.#views(); // the call may have grown memory
    return { handle, offset: this.#words.getUint32(OUT0, true), length: this.#words.getUint32(OUT1, true) };
  }

  /** The values of `keys`, pinned together. One call into wasm. */
  multiGet(keys: unknown, snapshot: number, batched: boolean): BatchAnswer {
    if (!Array.isArray(keys)) {
      throw new SiltError('InvalidArgument', `keys must be an array of keys, got ${describe(keys)}`);
    }
    const count = keys.length;
    const parts = this.#parts;
    let keyBytesTotal = 0;
    for (let i = 0; i < count; i++) {
      const k: unknown = keys[i];
      // A plain view goes as it is; the rest (strings, views of wasm memory
      // or of a detached buffer) through keyBytes.
      const b = k instanceof Uint8Array && k.byteLength > 0 && !isWasmMemory(k.buffer) ? k : keyBytes(k, `keys[${i}]`);
      parts[i] = b;
      keyBytesTotal += b.length;
    }
    const keysAt = REQUEST + 4 * count;
    this.#reserve(keysAt + keyBytesTotal);
    const words = this.#words;
    const bytes = this.#bytes;
    let at = keysAt;
    for (let i = 0; i < count; i++) {
      const k = parts[i]!;
      words.setUint32(REQUEST + 4 * i, k.length, true);
      bytes.set(k, at);
      at += k.length;
    }
    parts.length = 0; // keep no caller's keys alive
    this.#sendReleases();
    let handle: number;
    try {
      handle = this.#inner.multiGetPinned(count, keyBytesTotal, snapshot, batched);
    } catch (e) {
      throw fromWasm(e);
    }
    this.#views();
    return { handle, layoutOffset: this.#words.getUint32(OUT0, true), count };
  }

  /**
   * Queues the release of a result: it is let go at the start of the next
   * read, or by a call of its own when the queue is full or when the
   * current task ends.
   */
  release(handle: number): void {
    this.#pending.push(handle);
    if (this.#pending.length >= RELEASE_SLOTS) {
      this.flush();
    } else if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setTimeout(() => {
        this.#flushScheduled = false;
        this.flush();
      }, 0);
    }
  }

  /** Lets go of every queued result now (one call, if any are queued). */
  flush(): void {
    if (this.#pending.length === 0) return;
    this.#views();
    this.#sendReleases();
    this.#inner.releasePinned();
  }
}
