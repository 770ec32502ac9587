/**
 * Copies out of wasm memory that belong to the caller, cut from shared
 * chunks the way Node's `Buffer.allocUnsafe` cuts small buffers from its
 * pool.
 *
 * Why: every `ArrayBuffer` of its own costs far more than the bytes it
 * holds. In Chromium 156 on the benchmark machine a `new ArrayBuffer(100)`
 * took 0.7 µs and one of 13,000 bytes 10 µs (the allocation is reported to
 * the garbage collector as external memory, which drives collections),
 * against 0.06 µs for a view of an existing buffer
 * (docs/bench/browser-findings.md). A value copied into a chunk costs one
 * `set` and one view.
 *
 * What it means for the caller: a copy's `.buffer` may be shared with other
 * copies (its `byteOffset` says where it starts), as with Node's Buffers.
 * Use `copy.slice()` for a buffer of its own, e.g. before transferring it to
 * another worker: transferring a shared chunk detaches every copy in it
 * (they then read as empty; the pool notices and starts a new chunk). A copy
 * keeps its whole chunk (64 KiB) alive while it is reachable.
 *
 * Fresh memory is what costs: on the benchmark machine (a Firecracker VM)
 * the first write to each new 4 KiB page costs about 2.5 µs, so copying
 * 13 KB into a new chunk costs 10 µs against 0.4 µs into memory written
 * before. Hence transient batches (iterator.ts), which reuse theirs.
 */

import { countCopied } from './counters.js';

/** Chunks of one size, cut front to back; a new chunk when one is full. */
class Pool {
  #chunk = new Uint8Array(0);
  #used = 0;

  constructor(
    readonly chunkBytes: number,
    /** Larger copies get a buffer of their own. */
    readonly maxCopy: number,
  ) {}

  copy(src: Uint8Array, start: number, length: number): Uint8Array {
    countCopied(length);
    if (length > this.maxCopy) return src.slice(start, start + length);
    // A transferred chunk reads 0 bytes long: start a new one.
    if (this.#used + length > this.#chunk.byteLength) {
      this.#chunk = new Uint8Array(this.chunkBytes);
      this.#used = 0;
    }
    const at = this.#used;
    this.#chunk.set(src.subarray(start, start + length), at);
    // 8-byte aligned starts: a copy can be viewed as wider words.
    this.#used = (at + length + 7) & ~7;
    return new Uint8Array(this.#chunk.buffer, at, length);
  }
}

/** 64 KiB chunks; copies up to 16 KiB (values, batches of entries). */
const pool = new Pool(64 * 1024, 16 * 1024);

/** The largest copy cut from a shared chunk. */
export const MAX_POOLED = pool.maxCopy;

/** A caller-owned copy of `src[start .. start + length)` (wasm memory). */
export function copyOut(src: Uint8Array, start: number, length: number): Uint8Array {
  return pool.copy(src, start, length);
}
