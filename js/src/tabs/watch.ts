/**
 * `watch` of a `connect()` connection (connection.ts): the events it reports,
 * and one watch's state. A connection passes each change record (a
 * committed write, which the leader posts on the line of each connection
 * that watches) to its watches, each of which checks that records come in
 * order, asks the leader for what it missed (`changes`, which also has the
 * records sent to this connection from then on), and reports each change
 * in its range once, or a `Gap` where changes could not be had.
 * docs/tabs.md, "Change events", has the design.
 */

import type { Key } from '../core/bytes.js';
import type { Codec } from '../core/encoding.js';
import { SiltError } from '../core/errors.js';
import { checkOptionNames, optionNames } from '../core/option-names.js';
import { compareBytes, show } from '../core/bytes.js';
import { asyncDispose } from '../core/dispose.js';
import type { ChangeHistory, ChangeRecord } from './wire.js';
import { RESET } from './page-cache.js';
import { valueStarts } from './change-values.js';

/**
 * A committed update of one key, as `watch` reports it: the key as the
 * watching handle reads keys (in a sublevel without its prefix, decoded by
 * its key encoding).
 */
export interface KeyChange<K = Uint8Array, V = unknown> {
  /**
   * Its sequence number: every update of the database has the next one
   * (every entry of an `ingest` shares one).
   */
  seq: number;
  kind: 'put' | 'delete' | 'merge';
  key: K;
  /**
   * With `watch({ values: true })` only: the key's value once the write
   * that made this change committed (decoded by the handle's value
   * encoding; `undefined` when it has none: a delete). For a key updated
   * more than once in one write (a batch, a transaction), each of its
   * changes carries the value after the whole write.
   */
  value?: V;
}

/**
 * A committed update of a range of keys, as `watch` reports it: a
 * `deleteRange` (or `clear`), or an `ingest()` that wrote keys from `key` up
 * to `end` (excluded). Keys as the watching handle reads them, the range cut
 * to the handle's sublevel: no `key` when it starts at or before the
 * sublevel's first key, no `end` when it goes on past its last.
 */
export interface RangeChange<K = Uint8Array> {
  seq: number;
  kind: 'deleteRange' | 'ingest';
  key?: K;
  end?: K;
}

/** A committed update, as `watch` reports it. */
export type Change<K = Uint8Array, V = unknown> = KeyChange<K, V> | RangeChange<K>;

/**
 * Changes `from..to` (sequence numbers, both included) may have happened
 * and were not seen: the leader no longer keeps them (a catch-up older than
 * its history, a tab that led went before publishing them, or a watcher
 * that fell too far behind). Read again what you show.
 */
export interface Gap {
  kind: 'gap';
  from: number;
  to: number;
}

/**
 * What a watch reports. A change whose stored key the handle's key
 * encoding cannot decode (bytes written through another handle) comes as a
 * `Gap` of its one sequence number; so does, for a watch with `values`, a
 * change whose value cannot be decoded or was not kept (made while no
 * watch asked for values, reached with a `since`; or from a leader that
 * went without handing its history over).
 */
export type WatchEvent<K = Uint8Array, V = unknown> = Change<K, V> | Gap;

/** What `watch` reports: a range of keys (bounds as iterators'), and where to start. */
export interface WatchOptions<K = Key> {
  gt?: K;
  gte?: K;
  lt?: K;
  lte?: K;
  /**
   * Start after this sequence number (a snapshot's `sequence`, or the `seq`
   * of the last change seen): changes since then come first, or a `Gap` if
   * the leader no longer has them. Default: from now on.
   */
  since?: number;
  /**
   * Report each key's value with its change (`KeyChange.value`). Default
   * false: a watch of keys does not pay for values (values are read only
   * while a watch asks for them, and through `connect()` sent only to the
   * connections whose watches do).
   */
  values?: boolean;
}

/** The names of `WatchOptions`. */
export const WATCH_OPTIONS = optionNames<WatchOptions<unknown>>({ gt: true, gte: true, lt: true, lte: true, since: true, values: true });

/** A watch: an async iterable of events, closed with `close()` (or by leaving `for await`). */
export interface Watch<K = Uint8Array, V = unknown> extends AsyncIterableIterator<WatchEvent<K, V>>, AsyncDisposable {
  close(): void;
  /**
   * Settles when the watch ends: resolves once it is closed (`close()`,
   * leaving `for await`, or its connection's `close()`); rejects with the
   * error when its connection fails (its worker died under the page that
   * led, say). What a watch with a callback has to hear of that failure
   * (`for await` throws it too, once the events had are read).
   */
  readonly ended: Promise<void>;
}

/**
 * A new watch of `host` (a connection, or a worker's feed) over
 * `options`' range in `codec`'s keys: the options checked, the `Watcher`
 * made and added to the host's watchers, and the `Watch` an app holds.
 */
export function watchOn<K, V>(
  host: WatchHost,
  codec: Codec,
  options: WatchOptions<unknown>,
  callback: ((event: WatchEvent<K, V>) => void) | undefined,
): Watch<K, V> {
  if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', `db.watch()'s options must be an object, got ${show(options)}`);
  checkOptionNames(options, WATCH_OPTIONS, 'db.watch()');
  if (callback !== undefined && typeof callback !== 'function') throw new SiltError('InvalidArgument', 'the watch callback must be a function');
  const since = options.since;
  if (since !== undefined && (typeof since !== 'number' || !Number.isSafeInteger(since) || since < 0)) {
    throw new SiltError('InvalidArgument', `since must be a sequence number (an integer from 0), got ${show(since)}`);
  }
  const values = options.values ?? false;
  if (typeof values !== 'boolean') throw new SiltError('InvalidArgument', `values must be true or false, got ${show(values)}`);
  // Both ends half-open: [lower, upper).
  const { lower, upper } = codec.bounds(options);
  const range: Range = { ...(lower ? { lower } : {}), ...(upper ? { upper } : {}) };
  return startWatch(host, codec, range, since, values, callback as ((e: WatchEvent<unknown>) => void) | undefined, false);
}

/**
 * A new watch of `host` over stored keys `range`, after `since` (undefined:
 * from now), with values or not; `raw`: keys and values as stored
 * (`RawEvent`, for a live query: live-query.ts).
 */
export function startWatch<K, V>(
  host: WatchHost,
  codec: Codec,
  range: Range,
  since: number | undefined,
  values: boolean,
  callback: ((event: WatchEvent<unknown>) => void) | undefined,
  raw: boolean,
): Watch<K, V> {
  const w = new Watcher(host, codec, range, since, callback, values, raw);
  host.watchers.add(w);
  const watch: Watch<K, V> = {
    next: () => w.next() as Promise<IteratorResult<WatchEvent<K, V>, undefined>>,
    return: async () => {
      w.close();
      return { done: true, value: undefined };
    },
    close: () => w.close(),
    ended: w.ended,
    [Symbol.asyncIterator]() {
      return watch;
    },
    [asyncDispose]: async () => w.close(),
  };
  return watch;
}

/** How many events an unread watch holds before it drops them for one `Gap`. */
export const WATCH_QUEUE_LIMIT = 10_000;

/** What a watch asks of its connection (requests of the tab protocol: leader-steps.ts, operations.ts). */
export type WatchRequest = { op: 'changes'; since: number | null; watch: boolean; values?: boolean } | { op: 'latestSequence' };

/** What a watch needs of its connection (or of a worker's feed: local/change-feed.ts). */
export interface WatchHost {
  send(request: WatchRequest): Promise<unknown>;
  readonly watchers: Set<Watcher>;
  /** Its last watch closed (`valuesOnly`: its last watch with values; others watch on): the leader may stop sending change records (values). */
  stopWatching(valuesOnly?: boolean): void;
}

/**
 * What an internal (`raw`) watch reports: keys and range ends as stored
 * (prefix included), values as stored bytes (live-query.ts decodes them);
 * a change has `last`, the last sequence number of its write (the state
 * its value is of).
 */
export type RawEvent = WatchEvent<Uint8Array, Uint8Array> & { last?: number };

/** Whether any of `watchers` asks for values (a connection's, or a worker's feed's: once per write there). */
export function wantValues(watchers: Set<Watcher>): boolean {
  for (const w of watchers) if (w.values) return true;
  return false;
}

/** A watch's keys: `[lower, upper)`, either end open. */
export type Range = { lower?: Uint8Array; upper?: Uint8Array };

/** Change kinds by their tag in a change record (`WriteBatch`'s encoding). */
const KINDS: Record<number, Change['kind']> = { 0: 'delete', 1: 'put', 2: 'merge', 3: 'deleteRange', 4: 'ingest' };

/** @internal One `watch` of a connection. */
export class Watcher {
  #connection: WatchHost;
  #range: Range;
  /** The watching handle's keys: its prefix and key encoding. */
  #codec: Codec;
  #callback: ((e: WatchEvent<unknown>) => void) | undefined;
  /** The last sequence number accounted for (undefined until the start is known). */
  #last: number | undefined;
  #syncing = false;
  #buffer: ChangeRecord[] = [];
  #queue: WatchEvent<unknown>[] = [];
  #wake: (() => void) | undefined;
  #closed = false;
  /** Why the watch cannot go on (its connection failed): thrown once its events are read. */
  #error: SiltError | undefined;
  /** A catch-up under way started before a new leader's `opened` took `#last` back: run it again from there. */
  #again = false;
  /** See `Watch.ended`. */
  readonly ended: Promise<void>;
  #end!: (error?: SiltError) => void;
  /** Whether it reports values (`WatchOptions.values`). */
  readonly values: boolean;
  /** Keys and values as stored, not decoded (`RawEvent`). */
  readonly #raw: boolean;
  /** The last sequence number of the record being applied (`RawEvent.last`). */
  #recordLast = 0;

  constructor(
    connection: WatchHost,
    codec: Codec,
    range: Range,
    since: number | undefined,
    callback: ((e: WatchEvent<unknown>) => void) | undefined,
    values = false,
    raw = false,
  ) {
    this.values = values;
    this.#raw = raw;
    this.#connection = connection;
    this.#codec = codec;
    this.#range = range;
    this.#callback = callback;
    this.ended = new Promise<void>((resolve, reject) => {
      this.#end = (error) => (error === undefined ? resolve() : reject(error));
    });
    this.ended.catch(() => {}); // (an app that does not look is not told of an unhandled rejection)
    void this.#resync(since ?? null);
  }

  get closed(): boolean {
    return this.#closed;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const watchers = this.#connection.watchers;
    watchers.delete(this);
    if (watchers.size === 0) this.#connection.stopWatching();
    else if (this.values && !wantValues(watchers)) this.#connection.stopWatching(true);
    this.#queue = [];
    this.#buffer = [];
    this.#wake?.();
    this.#end();
  }

  /** The connection failed with `error`: the events already had are read, then `next()` throws it; `ended` rejects with it. */
  fail(error: SiltError): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#error = error;
    this.#connection.watchers.delete(this);
    this.#buffer = [];
    this.#wake?.();
    this.#end(error);
  }

  /** The realm was frozen or hidden: whatever was published meanwhile may not have arrived. */
  async check(): Promise<void> {
    if (this.#closed || this.#last === undefined || this.#syncing) return;
    const latest = (await this.#connection.send({ op: 'latestSequence' }).catch(() => undefined)) as number | undefined;
    if (latest !== undefined) this.onLeader(latest);
  }

  /**
   * The connection is linked to its leader again (latest sequence number
   * `seq`): catch up from it. `opened`, when the leader is a new one: the
   * sequence number it opened the database at; writes this watch saw
   * above it were lost with the leader before (a crash of the machine
   * before they were synced). A new leader is always asked (`#resync`):
   * that is what makes it send this connection its change records (a
   * catch-up under way has no answer yet, and is sent to it again).
   */
  onLeader(seq: number, opened?: number): void {
    // The first catch-up is under way (sent again to a new leader if it has no answer yet).
    if (this.#closed || this.#last === undefined) return;
    if (opened !== undefined && opened < this.#last) {
      this.#emit({ kind: 'gap', from: opened + 1, to: this.#last });
      this.#last = opened;
      this.#buffer = this.#buffer.filter((r) => r.first > opened);
      if (this.#syncing) this.#again = true;
    }
    if (!this.#syncing && (opened !== undefined || seq > this.#last)) void this.#resync(this.#last);
  }

  onRecord(r: ChangeRecord): void {
    if (this.#closed) return;
    if (this.#syncing || this.#last === undefined) {
      if (this.#buffer.length < WATCH_QUEUE_LIMIT) this.#buffer.push(r);
      return;
    }
    this.#apply(r);
  }

  #apply(r: ChangeRecord): void {
    const last = this.#last!;
    if (r.last <= last) return;
    if (r.first > last + 1) {
      // Records in between were missed (this realm was frozen, or a leader
      // went): ask the leader for them.
      this.#buffer.push(r);
      void this.#resync(last);
      return;
    }
    const { kinds, bounds, keys } = r;
    this.#recordLast = r.last;
    const values = this.values ? r.values : undefined;
    const starts = values === undefined ? undefined : valueStarts(values);
    for (let i = 0; i < kinds.length; i++) {
      const seq = r.first + i;
      if (seq <= last) continue;
      const key = keys.subarray(bounds[2 * i]!, bounds[2 * i + 1]!);
      if (kinds[i] === RESET) {
        // An import: anything may have changed, at these sequence numbers.
        this.#emit({ kind: 'gap', from: seq, to: r.last });
        break;
      }
      const kind = KINDS[kinds[i]!];
      if (kind === undefined) continue;
      if (kind === 'deleteRange' || kind === 'ingest') {
        const end = keys.subarray(bounds[2 * i + 1]!, bounds[2 * i + 2]!);
        if (this.#matches(key, end)) this.#emit(this.#rangeChange(seq, kind, key, end));
      } else if (!this.#matches(key, undefined)) {
      } else if (!this.values) {
        this.#emit(this.#decoded(seq, () => ({ seq, kind, key: this.#unkey(key) })));
      } else if (values === undefined) {
        // The record came without values (see `WatchEvent`).
        this.#emit({ kind: 'gap', from: seq, to: seq });
      } else {
        const len = values.lens[i]!;
        const stored = len < 0 ? undefined : values.bytes.subarray(starts![i]!, starts![i]! + len);
        this.#emit(this.#decoded(seq, () => ({ seq, kind, key: this.#unkey(key), value: stored === undefined ? undefined : this.#unvalue(stored) })));
      }
    }
    this.#last = r.last;
  }

  /** A stored key as the handle reads it (a copy, as stored for a raw watch). */
  #unkey(key: Uint8Array): unknown {
    return this.#raw ? key.slice() : this.#codec.unkey(key.slice());
  }

  /** A stored value as the handle reads it (a copy: the record's bytes are shared by the watches). */
  #unvalue(stored: Uint8Array): unknown {
    return this.#raw ? stored.slice() : this.#codec.unvalue(stored.slice());
  }

  /** `[start, end)` as the handle reads keys, cut to its sublevel (see `RangeChange`; as stored for a raw watch). */
  #rangeChange(seq: number, kind: 'deleteRange' | 'ingest', start: Uint8Array, end: Uint8Array): WatchEvent<unknown> {
    if (this.#raw) return { seq, kind, key: start.slice(), end: end.slice() };
    const { prefix, end: after } = this.#codec;
    return this.#decoded(seq, () => {
      const change: RangeChange<unknown> = { seq, kind };
      if (prefix.length === 0 || compareBytes(start, prefix) > 0) change.key = this.#codec.unkey(start.slice());
      if (after === undefined || compareBytes(end, after) < 0) change.end = this.#codec.unkey(end.slice());
      return change;
    });
  }

  /** `make()`, or a gap of `seq` when a key does not decode. */
  #decoded(seq: number, make: () => Change<unknown>): WatchEvent<unknown> {
    try {
      return make();
    } catch {
      return { kind: 'gap', from: seq, to: seq };
    }
  }

  async #resync(since: number | null): Promise<void> {
    if (this.#syncing) return;
    this.#syncing = true;
    let h: ChangeHistory;
    try {
      // A connection's records carry values while any of its watches wants them.
      const values = this.values || wantValues(this.#connection.watchers);
      h = (await this.#connection.send({ op: 'changes', since, watch: true, ...(values ? { values } : {}) })) as ChangeHistory;
    } catch (e) {
      // The connection failed or closed (a closed watch ends; else it throws why).
      this.fail(e instanceof SiltError ? e : new SiltError('Internal', String(e), { cause: e }));
      return;
    }
    if (this.#closed) return;
    this.#syncing = false;
    if (this.#again) {
      this.#again = false;
      void this.#resync(this.#last ?? since);
      return;
    }
    // The leader's history covers base+1..latest; the records that arrived
    // meanwhile may cover more. Whatever neither covers is a gap.
    let last = since ?? h.latest;
    if (last > h.latest) {
      // A leader that opened the database below `since` (the one before
      // crashed with writes not yet on disk): what this watch started after
      // is lost, and the numbers after h.latest will be taken again.
      this.#emit({ kind: 'gap', from: h.latest + 1, to: last });
      last = h.latest;
    }
    const records = [...h.records, ...this.#buffer].sort((a, b) => a.first - b.first);
    this.#buffer = [];
    this.#last = last;
    for (const r of records) {
      if (r.last <= last) continue;
      if (r.first > last + 1) {
        this.#emit({ kind: 'gap', from: last + 1, to: r.first - 1 });
        this.#last = r.first - 1;
      }
      this.#apply(r);
      last = this.#last;
    }
    if (last < h.latest) {
      this.#emit({ kind: 'gap', from: last + 1, to: h.latest });
      this.#last = h.latest;
    }
  }

  /** Whether `key` (or `[key, end)`, a range delete) is in this watch's `[lower, upper)`. */
  #matches(key: Uint8Array, end: Uint8Array | undefined): boolean {
    const { lower, upper } = this.#range;
    if (upper !== undefined && compareBytes(key, upper) >= 0) return false;
    if (lower === undefined) return true;
    return end === undefined ? compareBytes(key, lower) >= 0 : compareBytes(end, lower) > 0;
  }

  #emit(e: WatchEvent<unknown>): void {
    if (this.#closed) return;
    if (this.#raw && e.kind !== 'gap') (e as RawEvent).last = this.#recordLast;
    if (this.#callback !== undefined) {
      try {
        this.#callback(e);
      } catch (err) {
        // The app's callback threw: report it, go on with the next change.
        setTimeout(() => {
          throw err;
        });
      }
      return;
    }
    if (this.#queue.length >= WATCH_QUEUE_LIMIT) {
      // Nobody reads: keep one gap for everything dropped, never more memory.
      const first = this.#queue.find((q) => q.kind !== 'gap') as Change<unknown> | undefined;
      const head = this.#queue[0]!;
      const from = head.kind === 'gap' ? head.from : (first?.seq ?? 0);
      const to = e.kind === 'gap' ? e.to : e.seq;
      this.#queue = [{ kind: 'gap', from, to }];
      this.#wake?.();
      return;
    }
    this.#queue.push(e);
    this.#wake?.();
  }

  async next(): Promise<IteratorResult<WatchEvent<unknown>, undefined>> {
    for (;;) {
      const e = this.#queue.shift();
      if (e !== undefined) return { done: false, value: e };
      if (this.#error !== undefined) {
        const error = this.#error;
        this.#error = undefined;
        throw error;
      }
      if (this.#closed) return { done: true, value: undefined };
      await new Promise<void>((r) => (this.#wake = r));
      this.#wake = undefined;
    }
  }
}

/**
 * @internal What a connection does with the change records that come on
 * its lines: passes them to its watches, in order, or keeps them
 * until the leader welcomes it (`link`).
 */
export class ChangeFeed {
  /** The connection's watches. */
  readonly watchers = new Set<Watcher>();
  /** The leader this connection was last welcomed by (or led as), and the sequence number that leader opened at. */
  #linkedTo: string | undefined;
  #opened = 0;
  /** Change records from a leader that has not welcomed this connection yet (see `hear`). */
  #early: ChangeRecord[] = [];

  /**
   * This connection now sends to `leader` (welcomed, or its own worker
   * opened the database at `opened`; latest sequence number `seq`): its
   * watches catch up, and the change records that came before are passed
   * on, in order: those of earlier leaders that this one has (at or below
   * `opened`) before, this leader's after.
   */
  link(leader: string, seq: number, opened: number): void {
    const changed = leader !== this.#linkedTo;
    this.#linkedTo = leader;
    this.#opened = opened;
    const early = this.#early;
    this.#early = [];
    const kept = early.filter((r) => r.from !== leader && r.last <= opened);
    const mine = early.filter((r) => r.from === leader);
    for (const w of this.watchers) {
      for (const r of kept) w.onRecord(r);
      w.onLeader(seq, changed ? opened : undefined);
      for (const r of mine) w.onRecord(r);
    }
  }

  /**
   * A change record: passed to the watches if it comes from the leader
   * that welcomed this connection, or from an earlier one and is in the
   * database this one opened (at or below `opened`); kept until the
   * welcome if this connection has not been welcomed yet (the welcome
   * starts the catch-up that such a record would otherwise overtake);
   * dropped if it is from a leader that went with it unsaved. `linked`:
   * whether the connection is welcomed (or leads); `leader`: the leader it
   * sends to.
   */
  hear(r: ChangeRecord, linked: boolean, leader: string | undefined): void {
    if (linked && (r.from === leader || r.last <= this.#opened)) {
      for (const w of this.watchers) w.onRecord(r);
    } else if (!linked && this.watchers.size > 0 && this.#early.length < WATCH_QUEUE_LIMIT) {
      this.#early.push(r);
    }
  }

  /** Drops the records kept for a welcome (the connection failed or closed). */
  clear(): void {
    this.#early = [];
  }
}
