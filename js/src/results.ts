/**
 * Values pinned in wasm memory, handed to JavaScript as `Uint8Array` views
 * without a copy: `db.get()` gives a `PinnedValue`, `db.multiGet()` a
 * `MultiGetResult`.
 *
 * A result keeps its values where they are (the engine's block cache
 * blocks or memtable memory) until `release()`, the end of a `using`
 * scope, or, as a safety net, garbage collection of the result. A view
 * must not be read after its result is released: the memory may hold
 * other data by then. Views stay valid across wasm memory growth where
 * the engine supports resizable buffers (`memoryMode() === 'resizable'`);
 * elsewhere growth detaches earlier views (they read as empty, never as
 * other bytes) and each call of `get(i)` / `.bytes` hands out a fresh,
 * valid view.
 *
 * Some Web APIs refuse views of resizable buffers (`TextDecoder.decode`,
 * `Blob`, `crypto.subtle`): hand them `copy()`, or use `text()`.
 */

import type { MultiGetResult as WasmResult } from '../pkg/silt_wasm.js';
import { SiltError } from './errors.js';
import { memoryBuffer } from './wasm.js';

/** Results freed by the safety net rather than by `release()`. */
let collected = 0;

const safetyNet = new FinalizationRegistry<WasmResult>((inner) => {
  collected++;
  inner.free();
});

/** How many results were released by garbage collection, not by code. */
export function collectedResults(): number {
  return collected;
}

const ABSENT = 0xffff_ffff;
const utf8 = new TextDecoder();

/** UTF-8 text of a view; copies first, as TextDecoder refuses resizable buffers. */
function decode(view: Uint8Array): string {
  return utf8.decode(view.buffer instanceof ArrayBuffer && view.buffer.resizable ? view.slice() : view);
}

class Pinned {
  #inner: WasmResult | undefined;
  readonly #layout: Uint32Array;
  #buffer: ArrayBuffer | undefined;
  #views: (Uint8Array | undefined)[] = [];

  protected constructor(inner: WasmResult) {
    this.#inner = inner;
    this.#layout = inner.layout(); // offsets and lengths: one crossing
    safetyNet.register(this, inner, this);
  }

  protected get count(): number {
    return this.#layout.length / 2;
  }

  protected view(i: number): Uint8Array | undefined {
    if (this.#inner === undefined) throw new SiltError('Released', 'this result was released; its views are no longer valid');
    if (!Number.isInteger(i) || i < 0 || i >= this.count) {
      throw new SiltError('InvalidArgument', `index ${String(i)} is out of range 0..${this.count - 1}`);
    }
    const len = this.#layout[2 * i + 1]!;
    if (len === ABSENT) return undefined;
    const buffer = memoryBuffer();
    if (buffer !== this.#buffer) {
      // First access, or memory grew and detached the old buffer ('fixed'
      // mode): views of the old one are dead, make new ones.
      this.#buffer = buffer;
      this.#views = [];
    }
    return (this.#views[i] ??= new Uint8Array(buffer, this.#layout[2 * i]!, len));
  }

  /** Whether `release()` has run. */
  get released(): boolean {
    return this.#inner === undefined;
  }

  /** Unpins the values. Releasing twice does nothing. */
  release(): void {
    const inner = this.#inner;
    if (inner === undefined) return;
    this.#inner = undefined;
    this.#views = [];
    safetyNet.unregister(this);
    inner.free(); // drops the pinned values on the Rust side
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

/** The value of one key, pinned. */
export class PinnedValue extends Pinned {
  /** @internal */
  static wrap(inner: WasmResult): PinnedValue {
    return new PinnedValue(inner);
  }

  /** A view of the value in wasm memory (no copy). */
  get bytes(): Uint8Array {
    return this.view(0)!;
  }

  /** A copy of the value that stays valid after `release()`. */
  copy(): Uint8Array {
    return this.bytes.slice();
  }

  /** The value decoded as UTF-8. */
  text(): string {
    return decode(this.bytes);
  }
}

/** The values of the keys of one `multiGet`, pinned, in key order. */
export class MultiGetResult extends Pinned {
  /** @internal */
  static wrap(inner: WasmResult): MultiGetResult {
    return new MultiGetResult(inner);
  }

  /** Number of keys asked for. */
  get length(): number {
    return this.count;
  }

  /** A view of the value of key `i`, or `undefined` if it has none. */
  get(i: number): Uint8Array | undefined {
    return this.view(i);
  }

  /** Whether key `i` has a value. */
  has(i: number): boolean {
    return this.view(i) !== undefined;
  }

  /** A copy of the value of key `i` that stays valid after `release()`. */
  copy(i: number): Uint8Array | undefined {
    return this.view(i)?.slice();
  }

  /** The value of key `i` decoded as UTF-8, or `undefined`. */
  text(i: number): string | undefined {
    const v = this.view(i);
    return v === undefined ? undefined : decode(v);
  }

  /** Copies of every value. */
  copies(): (Uint8Array | undefined)[] {
    return Array.from({ length: this.count }, (_, i) => this.copy(i));
  }

  *[Symbol.iterator](): IterableIterator<Uint8Array | undefined> {
    for (let i = 0; i < this.count; i++) yield this.view(i);
  }
}
