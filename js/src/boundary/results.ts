/**
 * Values pinned in wasm memory, handed to JavaScript as `Uint8Array` views
 * without a copy: `db.getPinned()` gives a `PinnedValue`, `db.multiGet()` a
 * `MultiGetResult` (through `connect()` the same interface holds copies:
 * `HeldMultiGetResult`, at the end).
 *
 * A result keeps its values where they are (the engine's block cache
 * blocks or memtable memory) until `release()`, the end of a `using`
 * scope, or, as a safety net, garbage collection of the result once
 * neither it nor any view it handed out is referenced (each view keeps its
 * result alive, so a view kept after its result was dropped still reads
 * its own bytes). A view must not be read after its result is released:
 * the memory may hold other data by then. Views stay valid across wasm
 * memory growth where the engine supports resizable buffers
 * (`memoryMode() === 'resizable'`); elsewhere growth detaches earlier
 * views (they read as empty, never as other bytes) and each call of
 * `get(i)` / `.bytes` hands out a fresh, valid view.
 *
 * Some Web APIs refuse views of resizable buffers (`TextDecoder.decode`,
 * `Blob`, `crypto.subtle`): hand them `copy()`, or use `text()`.
 */

import { show } from '../core/bytes.js';
import { copyOut } from './copies.js';
import { countCopied } from './counters.js';
import { SiltError } from '../core/errors.js';
import { ABSENT, type BatchAnswer, type Exchange } from './exchange.js';
import { memoryBuffer, memoryBytesView, memoryWords } from './wasm.js';
import { dispose } from '../core/dispose.js';

/** Results freed by the safety net rather than by `release()`. */
let collected = 0;

/**
 * The result each view handed out belongs to. A view must keep its result
 * alive: were the result collected while the view is still referenced,
 * the safety net would unpin the memory under the view, the engine would
 * reuse it, and the view would read other bytes. Keyed weakly by the
 * view, so that the two are collected together once neither is referenced.
 */
const owners = new WeakMap<Uint8Array, Pinned>();

const safetyNet = new FinalizationRegistry<{ exchange: Exchange; handle: number }>(({ exchange, handle }) => {
  collected++;
  exchange.release(handle);
  exchange.flush();
});

/**
 * Results created since the last microtask checkpoint. Registering with the
 * FinalizationRegistry costs more than the rest of a small `get`, and most
 * results are released in the same synchronous run that made them; so a
 * result is registered only if it is still unreleased when the current run
 * ends (or when this list grows long). Until then the list holds it, so it
 * cannot be collected unregistered.
 */
let fresh: Pinned[] = [];
let drainQueued = false;
const FRESH_MAX = 1024;

function drainFresh(): void {
  drainQueued = false;
  const list = fresh;
  fresh = [];
  for (const p of list) p.protect();
}

/** How many results were released by garbage collection, not by code. */
export function collectedResults(): number {
  return collected;
}

const utf8 = new TextDecoder();

/**
 * UTF-8 text of a view (its bytes leave wasm memory: counted as copied);
 * copies first, as TextDecoder refuses resizable buffers.
 */
function decode(view: Uint8Array): string {
  countCopied(view.length);
  return utf8.decode(view.buffer instanceof ArrayBuffer && view.buffer.resizable ? view.slice() : view);
}

/** A copy of a view, counted as bytes copied out of wasm memory. */
function copyOf(view: Uint8Array): Uint8Array {
  return copyOut(view, 0, view.length);
}

/**
 * What every result has: its handle, its release, and the safety net that
 * releases it if it is garbage collected instead.
 */
class Pinned {
  #exchange: Exchange | undefined;
  readonly #handle: number;
  /** Whether the safety net (FinalizationRegistry) holds this result. */
  #registered = false;

  protected constructor(exchange: Exchange, handle: number) {
    this.#exchange = exchange;
    this.#handle = handle;
    fresh.push(this);
    if (fresh.length >= FRESH_MAX) {
      drainFresh();
    } else if (!drainQueued) {
      drainQueued = true;
      queueMicrotask(drainFresh);
    }
  }

  /** @internal Puts a result that is still held under the safety net. */
  protect(): void {
    const exchange = this.#exchange;
    if (exchange === undefined || this.#registered) return;
    this.#registered = true;
    safetyNet.register(this, { exchange, handle: this.#handle }, this);
  }

  /** Throws `Released` once released. */
  protected live(): void {
    if (this.#exchange === undefined)
      throw new SiltError('Released', 'this result was released, and its views with it: read (or slice()) what you keep before release()');
  }

  /** Whether `release()` has run. */
  get released(): boolean {
    return this.#exchange === undefined;
  }

  /**
   * Unpins the values. Releasing twice does nothing. The engine gets the
   * memory back with the next read of the database, or when the current
   * task ends, whichever comes first: releasing costs no call into wasm of
   * its own in a loop of reads.
   */
  release(): void {
    const exchange = this.#exchange;
    if (exchange === undefined) return;
    this.#exchange = undefined;
    this.forget();
    if (this.#registered) safetyNet.unregister(this);
    exchange.release(this.#handle);
  }

  /** Drops the views a subclass keeps. */
  protected forget(): void {}

  /** Hands out `view`, tied to this result: the result lives as long as the view does. */
  protected own(view: Uint8Array): Uint8Array {
    owners.set(view, this);
    return view;
  }

  [dispose](): void {
    this.release();
  }
}

/** The value of one key, pinned. */
export class PinnedValue extends Pinned {
  readonly #offset: number;
  readonly #length: number;
  #view: Uint8Array | undefined;

  /** @internal Use `db.getPinned()`. */
  constructor(exchange: Exchange, handle: number, offset: number, length: number) {
    super(exchange, handle);
    this.#offset = offset;
    this.#length = length;
  }

  protected override forget(): void {
    this.#view = undefined;
  }

  /** A view of the value in wasm memory (no copy). */
  get bytes(): Uint8Array {
    this.live();
    const view = this.#view;
    // A view of a buffer that growth detached ('fixed' mode) reads as
    // empty: hand out a fresh one.
    if (view !== undefined && view.buffer === memoryBuffer()) return view;
    this.#view = this.own(new Uint8Array(memoryBuffer(), this.#offset, this.#length));
    return this.#view;
  }

  /** A copy of the value that stays valid after `release()`. */
  copy(): Uint8Array {
    return copyOf(this.bytes);
  }

  /** The value decoded as UTF-8. */
  text(): string {
    return decode(this.bytes);
  }
}

/**
 * The values of the keys of one `multiGet`, in key order: the same
 * interface in a worker, where they are views of wasm memory pinned
 * together, and through `connect()`, where they are copies. Release it
 * (or `using`) when done: after `release()` every method but `release()`
 * and `released` throws `Released`, in both.
 */
export interface MultiGetResult extends Disposable, Iterable<Uint8Array | undefined> {
  /** Number of keys asked for. */
  readonly length: number;
  /** Whether `release()` has run. */
  readonly released: boolean;
  /**
   * The value of key `i`, or `undefined` if it has none: in a worker a view
   * of wasm memory (no copy), valid until `release()`.
   */
  get(i: number): Uint8Array | undefined;
  /** Whether key `i` has a value. */
  has(i: number): boolean;
  /** A copy of the value of key `i` that stays valid after `release()`. */
  copy(i: number): Uint8Array | undefined;
  /** The value of key `i` decoded as UTF-8, or `undefined`. */
  text(i: number): string | undefined;
  /** Copies of every value. */
  copies(): (Uint8Array | undefined)[];
  /** Gives the values up (in a worker: unpins them). Releasing twice does nothing. */
  release(): void;
}

/** The checked index `i` of a result of `count` values. */
function checkIndex(i: number, count: number): void {
  if (!Number.isInteger(i) || i < 0 || i >= count) {
    throw new SiltError('InvalidArgument', `index ${show(i)} is out of range 0..${count - 1}`);
  }
}

/** A `multiGet`'s values in a worker: views of wasm memory, pinned together. */
export class PinnedMultiGetResult extends Pinned implements MultiGetResult {
  readonly #count: number;
  /** Where the layout (offset and length of each value) is in wasm memory. */
  readonly #layout: number;
  #buffer: ArrayBuffer | undefined;
  #views: (Uint8Array | undefined)[] | undefined;

  /** @internal */
  static wrap(exchange: Exchange, answer: BatchAnswer): PinnedMultiGetResult {
    return new PinnedMultiGetResult(exchange, answer);
  }

  private constructor(exchange: Exchange, answer: BatchAnswer) {
    super(exchange, answer.handle);
    this.#count = answer.count;
    this.#layout = answer.layoutOffset;
  }

  protected override forget(): void {
    this.#views = undefined;
  }

  #view(i: number): Uint8Array | undefined {
    this.live();
    checkIndex(i, this.#count);
    const buffer = memoryBuffer();
    if (buffer !== this.#buffer) {
      // First access, or memory grew and detached the old buffer ('fixed'
      // mode): views of the old one are dead, make new ones.
      this.#buffer = buffer;
      this.#views = undefined;
    }
    this.#views ??= [];
    const views = this.#views;
    const cached = views[i];
    if (cached !== undefined) return cached;
    const words = memoryWords(); // the layout, read in place
    const at = (this.#layout >>> 2) + 2 * i;
    const len = words[at + 1]!;
    if (len === ABSENT) return undefined;
    const view = this.own(new Uint8Array(buffer, words[at]!, len));
    views[i] = view;
    return view;
  }

  /** Number of keys asked for. */
  get length(): number {
    return this.#count;
  }

  /** A view of the value of key `i`, or `undefined` if it has none. */
  get(i: number): Uint8Array | undefined {
    return this.#view(i);
  }

  /** Whether key `i` has a value. */
  has(i: number): boolean {
    return this.#view(i) !== undefined;
  }

  /** A copy of the value of key `i` that stays valid after `release()`. */
  copy(i: number): Uint8Array | undefined {
    const v = this.#view(i);
    return v === undefined ? undefined : copyOf(v);
  }

  /** The value of key `i` decoded as UTF-8, or `undefined`. */
  text(i: number): string | undefined {
    const v = this.#view(i);
    return v === undefined ? undefined : decode(v);
  }

  /** Copies of every value. */
  copies(): (Uint8Array | undefined)[] {
    return Array.from({ length: this.#count }, (_, i) => this.copy(i));
  }

  /**
   * @internal The values, copied out for a leader's batched gets
   * (tabs/leader-gets.ts): those under `limit` bytes into one new buffer,
   * value `i` at `bytes[starts[i] .. starts[i] + lengths[i]]`; a larger one
   * into a buffer of its own, `large.get(i)`; none where `lengths[i]` is
   * `ABSENT`. One `ArrayBuffer` for the small values, where `copy(i)` makes
   * a view and an `ArrayBuffer` per value.
   */
  copyAll(limit: number): { bytes: Uint8Array; starts: Uint32Array; lengths: Uint32Array; large: Map<number, Uint8Array> } {
    this.live();
    const words = memoryWords();
    const layout = this.#layout >>> 2;
    const starts = new Uint32Array(this.#count);
    const lengths = new Uint32Array(this.#count);
    let total = 0;
    for (let i = 0; i < this.#count; i++) {
      const len = words[layout + 2 * i + 1]!;
      lengths[i] = len;
      starts[i] = total;
      if (len !== ABSENT && len < limit) total += len;
    }
    const bytes = new Uint8Array(total);
    const large = new Map<number, Uint8Array>();
    const memory = memoryBytesView();
    for (let i = 0; i < this.#count; i++) {
      const len = lengths[i]!;
      const from = words[layout + 2 * i]!;
      if (len === ABSENT || len === 0) continue;
      if (len < limit) bytes.set(memory.subarray(from, from + len), starts[i]!);
      else large.set(i, memory.slice(from, from + len));
      countCopied(len);
    }
    return { bytes, starts, lengths, large };
  }

  *[Symbol.iterator](): IterableIterator<Uint8Array | undefined> {
    for (let i = 0; i < this.#count; i++) yield this.#view(i);
  }
}

/**
 * A `multiGet`'s values through `connect()`: copies the leader sent in one
 * buffer. Nothing is pinned, but it behaves as the worker's result does
 * (`Released` after `release()`), so code runs the same against either.
 */
export class HeldMultiGetResult implements MultiGetResult {
  #values: (Uint8Array | undefined)[] | undefined;
  readonly #count: number;

  /** @internal */
  constructor(values: (Uint8Array | undefined)[]) {
    this.#values = values;
    this.#count = values.length;
  }

  #value(i: number): Uint8Array | undefined {
    const values = this.#values;
    if (values === undefined) throw new SiltError('Released', 'this result was released: read what you keep before release()');
    checkIndex(i, this.#count);
    return values[i];
  }

  get length(): number {
    return this.#count;
  }

  get released(): boolean {
    return this.#values === undefined;
  }

  get(i: number): Uint8Array | undefined {
    return this.#value(i);
  }

  has(i: number): boolean {
    return this.#value(i) !== undefined;
  }

  copy(i: number): Uint8Array | undefined {
    return this.#value(i)?.slice();
  }

  text(i: number): string | undefined {
    const v = this.#value(i);
    return v === undefined ? undefined : utf8.decode(v);
  }

  copies(): (Uint8Array | undefined)[] {
    return Array.from({ length: this.#count }, (_, i) => this.copy(i));
  }

  release(): void {
    this.#values = undefined;
  }

  [dispose](): void {
    this.release();
  }

  *[Symbol.iterator](): IterableIterator<Uint8Array | undefined> {
    for (let i = 0; i < this.#count; i++) yield this.#value(i);
  }
}

/** What `multiGet` returns: a `MultiGetResult` for bytes, else the decoded values. */
export type MultiGot<V> = [V] extends [Uint8Array] ? MultiGetResult : (V | undefined)[];

/**
 * @internal The values of a `multiGet` decoded by the app's own value
 * encoding, as an array (what the types promise when that encoding's
 * values are not `Uint8Array`s) that also answers as a `MultiGetResult`
 * (what they promise when they are: `Encoding<Uint8Array>`, say a
 * decryption, types them like the default bytes; which one it is, only the
 * encoding's author knows, so the result is both). Releasing it only marks
 * it released: its values are the caller's.
 */
export function decodedValues<T>(values: (T | undefined)[]): (T | undefined)[] & MultiGetResult {
  let released = false;
  const at = (i: number) => {
    checkIndex(i, values.length);
    return values[i];
  };
  const bytes = (i: number): Uint8Array | undefined => {
    const v: unknown = at(i);
    if (v === undefined || v instanceof Uint8Array) return v;
    throw new SiltError('InvalidArgument', `value ${i} was decoded to ${show(v)}, not bytes: read it as values[${i}]`);
  };
  const methods: Omit<MultiGetResult, 'length' | typeof Symbol.iterator> = {
    get released() {
      return released;
    },
    get: (i) => bytes(i),
    has: (i) => at(i) !== undefined,
    copy: (i) => bytes(i)?.slice(),
    text: (i) => {
      const v = bytes(i);
      return v === undefined ? undefined : utf8.decode(v);
    },
    copies: () => values.map((_, i) => bytes(i)?.slice()),
    release: () => {
      released = true;
    },
    [dispose]: () => {
      released = true;
    },
  };
  for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(methods))) {
    Object.defineProperty(values, name, { ...d, enumerable: false });
  }
  Object.defineProperty(values, dispose, { value: methods[dispose], enumerable: false, configurable: true, writable: true });
  return values as (T | undefined)[] & MultiGetResult;
}
