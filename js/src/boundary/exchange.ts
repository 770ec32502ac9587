/**
 * The JavaScript side of a database's exchange buffer
 * (crates/wasm/src/exchange.rs): keys are written straight into wasm
 * memory (strings encoded in place with `encodeInto`), one export call runs
 * the read, and the answer (where the values are) is read back from the
 * same buffer. A `get`, `getPinned` or `multiGet` is therefore one crossing of
 * the boundary, whatever the number of keys, and allocates nothing but what
 * it returns.
 *
 * Releasing a result queues its handle here; the queue rides along with
 * the next read (no crossing of its own), or is sent by itself when it is
 * full or once the current task ends, so pinned memory is given back soon
 * even when no read follows.
 */

import type { Database as WasmDatabase } from '../../pkg/silt_wasm.js';
import { checkedBytes, describe, keyBytes } from '../core/bytes.js';
import { contract } from './contract.js';
import { copyOut } from './copies.js';
import { countCopied } from './counters.js';
import { fromWasm, SiltError } from '../core/errors.js';
import { isWasmMemory, memoryBuffer, memoryBytesView, memoryMode } from './wasm.js';

const utf8 = new TextEncoder();

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

/** Where the layout (offset and length of each value) of a batch is. */
export interface BatchAnswer {
  handle: number;
  layoutOffset: number;
  count: number;
}

/** Point reads (keys of a multiGet included) between two calls of an exchange's `onReads`. */
const READS_PER_CALL = 1024;

export class Exchange {
  readonly #inner: WasmDatabase;
  #offset: number;
  #size: number;
  #buffer: ArrayBuffer | undefined;
  #bytes: Uint8Array = new Uint8Array(0);
  /** The request area (from REQUEST on): `encodeInto` writes a key here. */
  #request: Uint8Array = new Uint8Array(0);
  #words: DataView = new DataView(new ArrayBuffer(0));
  #pending: number[] = [];
  #flushScheduled = false;
  /** The answer of the last `get`: where its value is (no object per get). */
  offset = 0;
  length = 0;
  /** Reads since `onReads` was last called. */
  #reads = 0;
  readonly #onReads: (() => void) | undefined;

  /**
   * REQUIRES: the module is loaded. `onReads` is called once every
   * `READS_PER_CALL` reads: lookups may have marked a file for
   * read-triggered compaction, which only background work carries out.
   */
  constructor(inner: WasmDatabase, onReads?: () => void) {
    this.#onReads = onReads;
    if (REQUEST === 0)
      ({ request: REQUEST, releaseSlots: RELEASE_SLOTS, releases: RELEASES, out0: OUT0, out1: OUT1, handles: HANDLES, absent: ABSENT } = contract().exchange);
    this.#inner = inner;
    this.#size = REQUEST + 1024;
    this.#offset = inner.exchangeBuffer(this.#size);
  }

  #read(): void {
    this.#reads = 0;
    this.#onReads?.();
  }

  /** Views of the buffer, made again after memory growth or a move. */
  #views(): void {
    const buffer = memoryBuffer();
    if (buffer === this.#buffer) return;
    this.#buffer = buffer;
    this.#bytes = new Uint8Array(buffer, this.#offset, this.#size);
    this.#request = new Uint8Array(buffer, this.#offset + REQUEST, this.#size - REQUEST);
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

  /**
   * Writes `key` (a Uint8Array or a string, checked as `keyBytes` does)
   * at the request; returns its length in bytes.
   */
  #writeKey(key: unknown): number {
    if (key instanceof Uint8Array) {
      let k = key;
      const n = k.byteLength;
      if (n === 0) {
        checkedBytes(k, 'key'); // a detached view is refused by name
        this.#views();
        return 0;
      }
      // Growing the buffer may grow wasm memory and detach a view of it
      // (a pinned value passed back as a key): copy such a key first.
      if (REQUEST + n > this.#size && isWasmMemory(k.buffer)) k = k.slice();
      this.#reserve(REQUEST + n);
      this.#bytes.set(k, REQUEST);
      return n;
    }
    if (typeof key === 'string') {
      if (!key.isWellFormed()) throw new SiltError('InvalidArgument', 'key is a string with a lone surrogate; it has no UTF-8 encoding');
      // At most 3 UTF-8 bytes per UTF-16 unit.
      this.#reserve(REQUEST + 3 * key.length);
      return encodeAt(key, this.#request);
    }
    // A Uint8Array of another realm (an iframe's); anything else is refused by name.
    const b = keyBytes(key);
    this.#reserve(REQUEST + b.byteLength);
    this.#bytes.set(b, REQUEST);
    return b.byteLength;
  }

  /**
   * The value of `key` pinned: returns its handle (0: no value) and leaves
   * where the value is in `offset` and `length`. One call into wasm.
   */
  get(key: unknown, snapshot: number): number {
    if (++this.#reads >= READS_PER_CALL) this.#read();
    const n = this.#writeKey(key);
    this.#sendReleases();
    let handle: number;
    try {
      handle = this.#inner.getPinned(n, snapshot);
    } catch (e) {
      throw fromWasm(e);
    }
    if (handle === 0) return 0;
    this.#views(); // the call may have grown memory
    this.offset = this.#words.getUint32(OUT0, true);
    this.length = this.#words.getUint32(OUT1, true);
    return handle;
  }

  /**
   * A copy of the value of `key` that belongs to the caller, or `undefined`.
   * One call into wasm (the engine keeps the value pinned until the next
   * call), then one copy out of wasm memory into a buffer of its own, safe
   * to keep and to transfer (`owned`); or, with `owned` false, into a shared
   * chunk (copies.ts), for values the caller decodes and drops at once.
   */
  getCopy(key: unknown, snapshot: number, owned: boolean): Uint8Array | undefined {
    if (++this.#reads >= READS_PER_CALL) this.#read();
    const n = this.#writeKey(key);
    this.#sendReleases();
    try {
      this.#inner.getTransient(n, snapshot);
    } catch (e) {
      throw fromWasm(e);
    }
    this.#views();
    const length = this.#words.getUint32(OUT1, true);
    if (length === ABSENT) return undefined;
    const at = this.#words.getUint32(OUT0, true);
    if (!owned) return copyOut(memoryBytesView(), at, length);
    countCopied(length);
    return memoryBytesView().slice(at, at + length);
  }

  /** The values of `keys`, pinned together. One call into wasm. */
  multiGet(keys: unknown, snapshot: number, batched: boolean): BatchAnswer {
    if (!Array.isArray(keys)) {
      throw new SiltError('InvalidArgument', `keys must be an array of keys, got ${describe(keys)}`);
    }
    const count = keys.length;
    this.#reads += count;
    if (this.#reads >= READS_PER_CALL) this.#read();
    // Room for the lengths and the keys (strings: 3 bytes per unit at most).
    let room = 0;
    for (let i = 0; i < count; i++) {
      const k: unknown = keys[i];
      room += k instanceof Uint8Array ? k.byteLength : typeof k === 'string' ? 3 * k.length : ArrayBuffer.isView(k) ? k.byteLength : 0;
    }
    const keysAt = REQUEST + 4 * count;
    let list: unknown[] = keys;
    if (keysAt + room > this.#size) {
      // Growing may detach views of wasm memory among the keys: copy those
      // (into a list of our own: the caller's array is left as it is).
      list = keys.map((k: unknown) => (k instanceof Uint8Array && k.byteLength > 0 && isWasmMemory(k.buffer) ? k.slice() : k));
    }
    this.#reserve(keysAt + room);
    const words = this.#words;
    const bytes = this.#bytes;
    let at = keysAt;
    for (let i = 0; i < count; i++) {
      const k: unknown = list[i];
      let n: number;
      if (k instanceof Uint8Array && k.byteLength > 0) {
        bytes.set(k, at);
        n = k.byteLength;
      } else if (typeof k === 'string' && k.isWellFormed()) {
        n = encodeAt(k, bytes.subarray(at));
      } else {
        // Empty, detached, a lone surrogate, or not a key: checked by name.
        const b = checkedBytesOf(k, `keys[${i}]`);
        bytes.set(b, at);
        n = b.length;
      }
      words.setUint32(REQUEST + 4 * i, n, true);
      at += n;
    }
    this.#sendReleases();
    let handle: number;
    try {
      handle = this.#inner.multiGetPinned(count, at - keysAt, snapshot, batched);
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

/**
 * Encodes `s` as UTF-8 at the start of `dst` (room for it checked by the
 * caller); returns the bytes written. `encodeInto` refuses views of a
 * resizable buffer (`configureMemory({ resizable: true })`): then encode,
 * then copy.
 */
function encodeAt(s: string, dst: Uint8Array): number {
  if (memoryMode() !== 'resizable') return utf8.encodeInto(s, dst).written;
  const b = utf8.encode(s);
  dst.set(b);
  return b.length;
}

/** A key that is not plain bytes or a well-formed string: `keyBytes`' checks and messages. */
function checkedBytesOf(k: unknown, what: string): Uint8Array {
  return keyBytes(k, what);
}
