/**
 * Live queries (issue 39, item 2): `db.live(range)` and `db.liveGet(key)`,
 * the same through `open()` in a worker and `connect()` on a page. A live
 * query reads its range once at a snapshot, then follows the change events
 * after that snapshot (a `watch` with values, internal: keys and values as
 * stored) and keeps its window current from them (live-window.ts), reading
 * again only when the events cannot say what it shows. Each result it
 * emits is what a read at its `seq` returns. docs/tabs.md ("Live queries")
 * has the design.
 */

import type { Codec } from '../core/encoding.js';
import { SiltError } from '../core/errors.js';
import { checkOptionNames, optionNames } from '../core/option-names.js';
import { compareBytes, show } from '../core/bytes.js';
import { asyncDispose } from '../core/dispose.js';
import { LiveWindow, type Slot } from './live-window.js';
import { type RawEvent, startWatch, type Watch, type WatchHost } from './watch.js';

/** What `db.live()` shows: a range of keys (bounds as iterators'), how many, in which order. */
export interface LiveOptions<K> {
  gt?: K;
  gte?: K;
  lt?: K;
  lte?: K;
  /** At most this many entries, the first in order (default: all of the range). */
  limit?: number;
  /** Keys in descending order (the last `limit` of the range). */
  reverse?: boolean;
  /** Whether results carry values (default true); false: keys only, and no value travels for the query. */
  values?: boolean;
}

/** The names of `LiveOptions`. */
export const LIVE_OPTIONS = optionNames<LiveOptions<unknown>>({ gt: true, gte: true, lt: true, lte: true, limit: true, reverse: true, values: true });

/**
 * A live query's result: the entries of its range as of sequence number
 * `seq` (a read with a snapshot at `seq` returns the same), in the query's
 * order. An entry that did not change keeps its identity from one result to
 * the next (`[key, value]` arrays are reused): a UI can skip what did not
 * change. With `values: false`, each value is `undefined`.
 */
export interface LiveResult<K, V> {
  seq: number;
  entries: readonly (readonly [K, V])[];
}

/** An observer of a live query (the TC39 Observable shape). */
export interface LiveObserver<T> {
  next?(value: T): void;
  error?(error: SiltError): void;
  complete?(): void;
}

/** What `subscribe` returns. */
export interface LiveSubscription {
  unsubscribe(): void;
  readonly closed: boolean;
}

/**
 * A live query. It runs while it has a subscriber or an iterator (the
 * first starts it with a read; when the last one goes it stops, and starts
 * again, reading afresh, for the next). Subscribe with a function or an
 * observer (`subscribe`: RxJS's `from()`, Svelte's store contract, React's
 * `useSyncExternalStore` take it as it is), or iterate (`for await`: each
 * new result; one not read yet is replaced by a newer one). `current` is
 * the latest result (undefined before the first read).
 */
export interface Live<T> extends AsyncIterable<T>, AsyncDisposable {
  readonly current: T | undefined;
  subscribe(observer: ((value: T) => void) | LiveObserver<T>, error?: (error: SiltError) => void, complete?: () => void): LiveSubscription;
  /** Ends the query for every subscriber (each is told `complete`). */
  close(): void;
  /** How many times it read the database (its first read included): what a change it could follow from the events did not cost. */
  readonly reads: number;
}

/** A read of a live query's window, in the handle's public iterator options ('view' keys: without the handle's prefix). */
export interface WindowRead {
  range: { gte?: Uint8Array; lt?: Uint8Array; limit?: number; reverse: boolean; keyEncoding: 'view'; valueEncoding: 'view' };
  values: boolean;
}

/** What a live query needs of a database handle (local/database.ts, remote-database.ts). */
export interface LiveSource {
  /** The handle's prefix and encodings. */
  readonly codec: Codec;
  /** The feed its watches come from (a connection, or a worker's feed). */
  host(): WatchHost;
  /**
   * The entries of `read.range` in order, as of one sequence number: keys
   * as the handle's 'view' iterator gives them (no prefix), values as
   * stored (undefined when `read.values` is false).
   */
  read(read: WindowRead): Promise<{ seq: number; entries: [Uint8Array, Uint8Array | undefined][] }>;
}

/** How many times in a row a read may fail with `LeaderChanged` (a failover each time) before the query fails. */
const LEADER_CHANGES = 5;

/** How many events a query keeps while it reads; past that it reads again. */
const BUFFERED_EVENTS = 10_000;

/** @internal A live query of `source` (see `Live`); `shape` makes a result of the window. */
export class LiveQuery<T> implements Live<T> {
  readonly #source: LiveSource;
  readonly #lower: Uint8Array | undefined;
  readonly #upper: Uint8Array | undefined;
  /**
   * How many entries a read asks for: the limit, or 1 for a range of one
   * key (liveGet's), whose window holds its whole range anyway: a read
   * with a limit ends with its first batch, one without waits for the next.
   */
  readonly #readLimit: number;
  readonly #reverse: boolean;
  readonly #values: boolean;
  readonly #shape: (slots: Slot[], seq: number) => T;
  #observers = new Set<LiveObserver<T>>();
  #window: LiveWindow;
  #watch: Watch<Uint8Array, Uint8Array> | undefined;
  /** The sequence number the window is at. */
  #seq = 0;
  /** A read under way, and the events that came meanwhile (undefined: none under way). */
  #buffer: RawEvent[] | undefined;
  /** Another read is needed once the one under way ends. */
  #again = false;
  /** Bumped at every start and stop: what a stopped run's read finds is dropped. */
  #run = 0;
  #running = false;
  #closed = false;
  #scheduled = false;
  #current: T | undefined;
  /** The run `#current` was emitted in (an older run's is stale: a new subscriber waits for the new read). */
  #currentRun = 0;
  /** The window's entries when `#current` was made (a read that finds the same emits nothing). */
  #shown: Slot[] = [];
  #reads = 0;

  constructor(source: LiveSource, options: LiveOptions<unknown>, shape: (slots: Slot[], seq: number) => T) {
    if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', `db.live()'s options must be an object, got ${show(options)}`);
    checkOptionNames(options, LIVE_OPTIONS, 'db.live()');
    const { limit = Number.POSITIVE_INFINITY, reverse = false, values = true } = options;
    if (limit !== Number.POSITIVE_INFINITY && (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1)) {
      throw new SiltError('InvalidArgument', `limit must be a whole number from 1, got ${show(limit)}`);
    }
    if (typeof reverse !== 'boolean') throw new SiltError('InvalidArgument', `reverse must be true or false, got ${show(reverse)}`);
    if (typeof values !== 'boolean') throw new SiltError('InvalidArgument', `values must be true or false, got ${show(values)}`);
    const { lower, upper } = source.codec.bounds(options);
    this.#source = source;
    this.#lower = lower;
    this.#upper = upper;
    // [key, key + 0x00): one key.
    const single =
      lower !== undefined &&
      upper !== undefined &&
      upper.length === lower.length + 1 &&
      upper.at(-1) === 0 &&
      compareBytes(upper.subarray(0, lower.length), lower) === 0;
    this.#readLimit = single ? 1 : limit;
    this.#reverse = reverse;
    this.#values = values;
    this.#shape = shape;
    this.#window = new LiveWindow(limit, reverse, values);
  }

  get current(): T | undefined {
    return this.#current;
  }

  get reads(): number {
    return this.#reads;
  }

  subscribe(observer: ((value: T) => void) | LiveObserver<T>, error?: (error: SiltError) => void, complete?: () => void): LiveSubscription {
    if (typeof observer !== 'function' && (typeof observer !== 'object' || observer === null)) {
      throw new SiltError('InvalidArgument', `subscribe() takes a function or an observer, got ${show(observer)}`);
    }
    // Each subscription its own entry; an observer's methods called on it
    // (they may be on its prototype, as RxJS's Subscriber's are, and use `this`).
    const o: LiveObserver<T> =
      typeof observer === 'function'
        ? { next: observer, error: (e) => error?.(e), complete: () => complete?.() }
        : { next: (v) => observer.next?.(v), error: (e) => observer.error?.(e), complete: () => observer.complete?.() };
    if (this.#closed) {
      o.complete?.();
      return { unsubscribe() {}, closed: true };
    }
    this.#observers.add(o);
    const subscription = {
      closed: false,
      unsubscribe: () => {
        if (subscription.closed) return;
        subscription.closed = true;
        this.#observers.delete(o);
        if (this.#observers.size === 0) this.#stop();
      },
    };
    // What there is now, at once (a store's subscriber expects it).
    if (this.#current !== undefined && this.#running && this.#currentRun === this.#run) o.next?.(this.#current);
    if (!this.#running) this.#start();
    return subscription;
  }

  /** For RxJS's `from()` and other Observable libraries. */
  '@@observable'(): this {
    return this;
  }

  [Symbol.asyncIterator](): AsyncIterator<T, undefined> {
    let latest: T | undefined;
    let fresh = false;
    let failure: SiltError | undefined;
    let done = false;
    /** The `next()` calls waiting (every one is woken: each looks again). */
    let waiting: (() => void)[] = [];
    const wake = () => {
      const w = waiting;
      waiting = [];
      for (const f of w) f();
    };
    const subscription = this.subscribe({
      next: (v) => {
        latest = v;
        fresh = true;
        wake();
      },
      error: (e) => {
        failure = e;
        wake();
      },
      complete: () => {
        done = true;
        wake();
      },
    });
    return {
      next: async () => {
        for (;;) {
          if (fresh) {
            fresh = false;
            return { done: false, value: latest as T };
          }
          if (failure !== undefined) {
            const e = failure;
            failure = undefined;
            done = true;
            throw e;
          }
          if (done) return { done: true, value: undefined };
          await new Promise<void>((r) => waiting.push(r));
        }
      },
      return: async () => {
        done = true;
        fresh = false;
        subscription.unsubscribe();
        wake();
        return { done: true, value: undefined };
      },
    };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop();
    const observers = [...this.#observers];
    this.#observers.clear();
    for (const o of observers) call(() => o.complete?.());
  }

  async [asyncDispose](): Promise<void> {
    this.close();
  }

  #start(): void {
    this.#running = true;
    this.#run++;
    void this.#read();
  }

  #stop(): void {
    if (!this.#running) return;
    this.#running = false;
    this.#run++;
    this.#watch?.close();
    this.#watch = undefined;
    this.#buffer = undefined;
    this.#again = false;
  }

  /** Fails the query: every subscriber is told `error`. */
  #fail(error: unknown): void {
    if (this.#closed) return;
    const e = error instanceof SiltError ? error : new SiltError('Internal', String(error), { cause: error });
    this.#closed = true;
    this.#stop();
    const observers = [...this.#observers];
    this.#observers.clear();
    for (const o of observers) call(() => o.error?.(e));
  }

  /** Reads the window afresh, then applies what came meanwhile (again while that needs a read). */
  async #read(): Promise<void> {
    if (this.#buffer !== undefined) {
      this.#again = true;
      return;
    }
    const run = this.#run;
    this.#buffer = [];
    /** Reads that failed because the tab that led went (the next leader is asked). */
    let lost = 0;
    try {
      for (;;) {
        this.#again = false;
        this.#reads++;
        let read: { seq: number; entries: [Uint8Array, Uint8Array | undefined][] };
        try {
          read = await this.#readWindow();
        } catch (e) {
          if (!(e instanceof SiltError) || e.code !== 'LeaderChanged' || ++lost > LEADER_CHANGES) throw e;
          if (run !== this.#run) return;
          this.#again = true;
          continue;
        }
        const { seq, entries } = read;
        if (run !== this.#run) return;
        this.#window.reset(entries);
        this.#seq = seq;
        if (this.#watch === undefined) this.#follow(seq);
        const buffered = this.#buffer;
        this.#buffer = [];
        for (const e of buffered) {
          if (this.#again) break;
          if ((e.kind === 'gap' ? e.to : e.seq) <= seq) continue;
          this.#take(e);
        }
        if (!this.#again) break;
      }
    } catch (e) {
      if (run === this.#run) this.#fail(e);
      return;
    } finally {
      if (run === this.#run) this.#buffer = undefined;
    }
    this.#emitSoon();
  }

  /** The window's entries as of one sequence number, keys as stored (the handle's prefix put back). */
  async #readWindow(): Promise<{ seq: number; entries: [Uint8Array, Uint8Array | undefined][] }> {
    const { prefix, end } = this.#source.codec;
    const n = prefix.length;
    const range: WindowRead['range'] = { reverse: this.#reverse, keyEncoding: 'view', valueEncoding: 'view' };
    if (this.#readLimit !== Number.POSITIVE_INFINITY) range.limit = this.#readLimit;
    // Bounds without the prefix; the handle's own ends (its prefix, the key after its last) go without saying.
    if (this.#lower !== undefined && this.#lower.length > n) range.gte = this.#lower.subarray(n);
    if (this.#upper !== undefined && (end === undefined || compareBytes(this.#upper, end) !== 0)) range.lt = this.#upper.subarray(n);
    const { seq, entries } = await this.#source.read({ range, values: this.#values });
    if (n > 0) {
      for (const e of entries) {
        const key = new Uint8Array(n + e[0].length);
        key.set(prefix);
        key.set(e[0], n);
        e[0] = key;
      }
    }
    return { seq, entries };
  }

  /**
   * Follows the changes after `since` (the first read's sequence number:
   * nothing between the read and the events is missed) in the query's
   * range, with values if it shows them.
   */
  #follow(since: number): void {
    const range = { ...(this.#lower ? { lower: this.#lower } : {}), ...(this.#upper ? { upper: this.#upper } : {}) };
    const w = startWatch<Uint8Array, Uint8Array>(this.#source.host(), this.#source.codec, range, since, this.#values, (e) => this.#hear(e as RawEvent), true);
    this.#watch = w;
    // Its connection failed: so does the query. It ended without our
    // closing it: the database closed, and the query ends with it.
    w.ended.then(
      () => {
        if (this.#watch === w) this.close();
      },
      (e) => this.#fail(e),
    );
  }

  /** An event of the watch: taken now, or kept while a read is under way. */
  #hear(e: RawEvent): void {
    if (!this.#running) return;
    if (this.#buffer !== undefined) {
      if (this.#buffer.length < BUFFERED_EVENTS) this.#buffer.push(e);
      else this.#again = true;
      return;
    }
    this.#take(e);
  }

  #take(e: RawEvent): void {
    const applied = this.#window.apply(e);
    // A change's result is of the state after its whole write.
    this.#seq = e.kind === 'gap' ? e.to : (e.last ?? e.seq);
    if (applied === 'read') void this.#read();
    else if (applied === 'changed') this.#emitSoon();
  }

  /** Emits the window once the events of this task are taken (a write's events come together). */
  #emitSoon(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      if (!this.#running || this.#buffer !== undefined) return;
      const slots = this.#window.slots;
      if (this.#currentRun === this.#run && sameEntries(slots, this.#shown)) return;
      // A read's slots are new objects: keep the ones shown, whose decoded entries the last result holds.
      for (let i = 0, j = 0; i < slots.length && j < this.#shown.length; ) {
        const c = compareBytes(slots[i]!.key, this.#shown[j]!.key);
        if (c === 0) {
          if (sameValue(slots[i]!.value, this.#shown[j]!.value)) slots[i] = this.#shown[j]!;
          i++;
          j++;
        } else if (c < 0 !== this.#reverse) i++;
        else j++;
      }
      this.#shown = [...slots];
      try {
        this.#current = this.#shape(this.#window.slots, this.#seq);
        this.#currentRun = this.#run;
      } catch (e) {
        // A key or value the handle's encodings cannot decode.
        this.#fail(e);
        return;
      }
      // (One that an earlier observer unsubscribed is not called.)
      for (const o of [...this.#observers]) if (this.#observers.has(o)) call(() => o.next?.(this.#current as T));
    });
  }
}

/** Whether two windows hold the same keys and values. */
function sameEntries(a: Slot[], b: Slot[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    if (compareBytes(a[i]!.key, b[i]!.key) !== 0 || !sameValue(a[i]!.value, b[i]!.value)) return false;
  }
  return true;
}

function sameValue(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  return a === b || (a !== undefined && b !== undefined && compareBytes(a, b) === 0);
}

/** Calls an app's observer: what it throws is reported, and the others are still called. */
function call(f: () => void): void {
  try {
    f();
  } catch (err) {
    setTimeout(() => {
      throw err;
    });
  }
}

/** What `db.liveGet(key)` shows: the key's value as of sequence number `seq` (undefined: none). */
export interface LiveValue<V> {
  seq: number;
  value: V | undefined;
}

/** `db.live(options)` of a handle. */
export function liveRange<K, V>(source: LiveSource, options: LiveOptions<unknown>): Live<LiveResult<K, V>> {
  const codec = source.codec;
  const values = options?.values !== false;
  return new LiveQuery(source, options, (slots, seq) => ({
    seq,
    // Decoded once per entry: an entry that did not change is the same array in the next result.
    entries: slots.map((s) => {
      s.shown ??= Object.freeze([codec.unkey(s.key), values ? codec.unvalue(s.value!) : undefined]);
      return s.shown as readonly [K, V];
    }),
  }));
}

/** `db.liveGet(key)` of a handle. */
export function liveValue<V>(source: LiveSource, key: unknown): Live<LiveValue<V>> {
  const codec = source.codec;
  const stored = codec.key(key);
  // No limit: a window of the one key holds every key of its range, so its delete needs no read.
  return new LiveQuery(source, { gte: key, lte: key }, (slots, seq) => {
    const s = slots[0];
    return { seq, value: s === undefined || compareBytes(s.key, stored) !== 0 ? undefined : (codec.unvalue(s.value!) as V) };
  });
}
