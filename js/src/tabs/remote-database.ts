/**
 * `RemoteDatabase`: a database shared through `connect()`, used with
 * Promises. Each call checks its arguments and encodes them here, then
 * sends one request to the leader over the realm's connection
 * (connection.ts); values come back as copies the caller owns.
 */

import { bytesOf, chunksOf, type ImportReport, type ImportSource } from '../local/backup.js';
import { onSublevel, type RocksdbIngestReport } from '../local/rocksdb.js';
import { WriteBatch } from '../core/batch.js';
import { show, type Key } from '../core/bytes.js';
import {
  type Codec,
  registerCodec,
  codecOf,
  type EncodingOptions,
  exportForm,
  type ExportOptions,
  type KeyOf,
  type KeyTypeOf,
  type ValueTypeOf,
  ENCODING_OPTIONS,
  EXPORT_OPTIONS,
} from '../core/encoding.js';
import { SiltError } from '../core/errors.js';
import { checkOptionNames, type Exactly } from '../core/option-names.js';
import type { SublevelOptions } from '../local/options.js';
import { type EntryBatch, type Entry, TRANSACTION_ITERATOR_OPTIONS } from '../local/iterator.js';
import { TRANSACTION_OPTIONS, type TransactionOptions, type UpdateResult, updateIn, withRetries } from '../local/transaction.js';
import type { Connection } from './connection.js';
import { leaderChanged } from './connection-errors.js';
import type { Request } from './protocol.js';
import {
  checkIteratorOptions,
  entryOf,
  REMOTE_ITERATOR_OPTIONS,
  type RemoteIterator,
  type RemoteIteratorOptions,
  remoteIterator,
  ROOT,
} from './remote-iterator.js';
import { RemoteSnapshot } from './remote-snapshot.js';
import { type Live, type LiveOptions, type LiveResult, type LiveSource, type LiveValue, liveRange, liveValue } from './live-query.js';
import { RemoteTransaction, type RemoteTransactionHost } from './remote-transaction.js';
import { type Watch, type WatchEvent, type WatchOptions, watchOn } from './watch.js';
import { asyncDispose } from '../core/dispose.js';
import type { Operations, RemoteOperations } from '../core/operations.js';
import { type Asked, OPERATIONS, type PageSide, syncOf, type TableName, unpack } from './operations.js';
import type { RemoteStatistics } from './remote-options.js';
import { binaryKey, MISS, type PageCache } from './page-cache.js';

/** A string of printable ASCII chars alone: its UTF-8 bytes are its chars. */
const ASCII = /^[ -~]*$/;

export type { RemoteCountOptions, RemoteReadOptions, RemoteStatistics } from './remote-options.js';

/** Runs `f` and turns a synchronous throw (bad input) into a rejection. */
async function call<T>(f: () => Promise<T>): Promise<T> {
  return f();
}

/** What the handles of one `connect()` call share: the root and its sublevels. */
interface Handle {
  closed: boolean;
}

/**
 * A database shared by every tab through `connect()`, used with Promises.
 * Calls of one connection run in the order they are made. Values returned
 * are copies owned by the caller.
 */
export class RemoteDatabase<K = Key, V = Uint8Array> implements RemoteOperations<K, V, RemoteSnapshot> {
  #connection: Connection;
  #handle: Handle;
  #codec: Codec;

  // The operations of tabs/operations.ts: their types from core/operations.ts
  // (the compiler refuses one missing here: see `Operations` for what each
  // does), their methods installed from the table below, each a request
  // the leader serves as the table says.
  /** {@link Operations.put}, through the leader. */
  declare put: RemoteOperations<K, V, RemoteSnapshot>['put'];
  /** {@link Operations.delete}, through the leader. */
  declare delete: RemoteOperations<K, V, RemoteSnapshot>['delete'];
  /** {@link Operations.merge}, through the leader. */
  declare merge: RemoteOperations<K, V, RemoteSnapshot>['merge'];
  /** {@link Operations.deleteRange}, through the leader. */
  declare deleteRange: RemoteOperations<K, V, RemoteSnapshot>['deleteRange'];
  /** {@link Operations.clear}, through the leader. */
  declare clear: RemoteOperations<K, V, RemoteSnapshot>['clear'];
  /** {@link Operations.write}, through the leader. */
  declare write: RemoteOperations<K, V, RemoteSnapshot>['write'];
  /** {@link Operations.ingest}, through the leader. */
  declare ingest: RemoteOperations<K, V, RemoteSnapshot>['ingest'];
  /** {@link Operations.get}, through the leader. */
  declare get: RemoteOperations<K, V, RemoteSnapshot>['get'];
  /** {@link Operations.multiGet}, through the leader. */
  declare multiGet: RemoteOperations<K, V, RemoteSnapshot>['multiGet'];
  /** {@link Operations.has}, through the leader. */
  declare has: RemoteOperations<K, V, RemoteSnapshot>['has'];
  /** {@link Operations.hasMany}, through the leader. */
  declare hasMany: RemoteOperations<K, V, RemoteSnapshot>['hasMany'];
  /** {@link Operations.count}, through the leader. */
  declare count: RemoteOperations<K, V, RemoteSnapshot>['count'];
  /** {@link Operations.approximateSize}, through the leader. */
  declare approximateSize: RemoteOperations<K, V, RemoteSnapshot>['approximateSize'];
  /** {@link Operations.snapshot}, through the leader. */
  declare snapshot: RemoteOperations<K, V, RemoteSnapshot>['snapshot'];
  /** {@link Operations.latestSequence}, through the leader. */
  declare latestSequence: RemoteOperations<K, V, RemoteSnapshot>['latestSequence'];
  /** {@link Operations.flush}, through the leader. */
  declare flush: RemoteOperations<K, V, RemoteSnapshot>['flush'];
  /** {@link Operations.idle}, through the leader. */
  declare idle: RemoteOperations<K, V, RemoteSnapshot>['idle'];
  /** {@link Operations.compactRange}, through the leader. */
  declare compactRange: RemoteOperations<K, V, RemoteSnapshot>['compactRange'];
  /** {@link Operations.verify}, through the leader. */
  declare verify: RemoteOperations<K, V, RemoteSnapshot>['verify'];
  /** Statistics: the database's (`storage` a fresh estimate, taken for this call), and the leader's (`tabs`). */
  declare statistics: () => Promise<RemoteStatistics>;

  static {
    for (const name of Object.keys(OPERATIONS) as TableName[]) {
      Object.defineProperty(RemoteDatabase.prototype, name, {
        value(this: RemoteDatabase<unknown, unknown>, ...args: unknown[]): Promise<unknown> {
          return this.#operation(name, args);
        },
        writable: true,
        configurable: true,
      });
    }
  }

  /**
   * Operation `name` of the table, asked with `args`. Not an async method:
   * a get that the page cache answers returns a settled Promise, with no
   * more turns of the microtask queue than it must (what `ask` throws, bad
   * input, is a rejection all the same).
   */
  #operation(name: TableName, args: unknown[]): Promise<unknown> {
    const cache = this.#connection.cache;
    /** A key the page cache was asked for and missed (not asked again below). */
    let missed: string | undefined;
    if (cache !== undefined && (name === 'get' || name === 'has') && args[1] === undefined && this.#codec.plainKeys && !this.#handle.closed) {
      // The common read of a page cache, first: a printable ASCII string key of the
      // root, no options. Its stored bytes are its chars: its cache key as it is.
      const key = args[0];
      if (typeof key === 'string' && ASCII.test(key)) {
        const hit = cache.lookup(key, this.#connection.writing > 0);
        if (hit === MISS) missed = key;
        else {
          try {
            return Promise.resolve(name === 'has' ? hit !== null : this.#owned(hit));
          } catch (e) {
            return Promise.reject(e); // (a value its encoding cannot decode)
          }
        }
      }
    }
    const ask = OPERATIONS[name].ask as (page: PageSide, ...args: unknown[]) => Asked<object>;
    let asked: Asked<object>;
    try {
      asked = ask(this.#page, ...args);
    } catch (e) {
      return Promise.reject(e);
    }
    const { wire, epoch, answer } = asked;
    (wire as { op: TableName }).op = name;
    if (cache !== undefined) {
      if ((name === 'get' || name === 'has') && (wire as { snapshot: number }).snapshot === 0 && !this.#handle.closed) {
        if (missed !== undefined) return this.#fill(cache, missed, name, wire as Request, answer);
        const key = binaryKey((wire as { key: Uint8Array }).key);
        const hit = cache.lookup(key, this.#connection.writing > 0);
        if (hit === MISS) return this.#fill(cache, key, name, wire as Request, answer);
        try {
          return Promise.resolve(name === 'has' ? hit !== null : answer === undefined ? (hit?.slice() ?? undefined) : answer(hit?.slice() ?? undefined));
        } catch (e) {
          return Promise.reject(e); // (a value its encoding cannot decode)
        }
      }
      if (name === 'statistics') return this.#send(wire as Request).then((s) => ({ ...(s as object), pageCache: cache.statistics() }));
    }
    return this.#asked(wire as Request, epoch, answer);
  }

  /** A value the page cache kept (`null`: none), as this handle's get returns it: owned by the caller. */
  #owned(kept: Uint8Array | null): unknown {
    if (kept === null) return undefined;
    const c = this.#codec;
    // utf8 and json make new values of the kept bytes; other encodings get a copy.
    return c.plainValues ? kept.slice() : c.unvalue(c.sharesBytes ? kept.slice() : kept);
  }

  async #asked(request: Request, epoch: number | undefined, answer: ((v: unknown) => unknown) | undefined): Promise<unknown> {
    const value = await this.#send(request, epoch);
    return answer === undefined ? value : answer(value);
  }

  /** A get or has at the latest state that the page cache (page-cache.ts) missed: asked of the leader, its answer kept. */
  async #fill(cache: PageCache, key: string, name: 'get' | 'has', request: Request, answer: ((v: unknown) => unknown) | undefined): Promise<unknown> {
    const fill = cache.fill(key);
    let value: unknown;
    try {
      value = await this.#send(request);
    } catch (e) {
      if (fill !== undefined) cache.keep(fill, undefined);
      throw e;
    }
    // (A has that found the key has no value to keep; one that did not, the key's absence.)
    if (fill !== undefined) cache.keep(fill, name === 'has' ? (value === true ? undefined : null) : ((value as Uint8Array | undefined) ?? null));
    return answer === undefined ? value : answer(value);
  }

  /** What the operations' page side has of this handle (made once: a call allocates no more than it must). */
  readonly #page: PageSide = {
    codec: ROOT,
    snapshot: (s) => this.#snapshot(s as RemoteSnapshot | undefined),
    snapshotFrom: (info) => new RemoteSnapshot(this.#connection, info, this.#connection.epoch),
  };

  /** @internal */
  constructor(connection: Connection, codec: Codec = ROOT, handle: Handle = { closed: false }) {
    this.#connection = connection;
    this.#codec = codec;
    this.#page.codec = codec;
    this.#handle = handle;
    registerCodec(this, codec);
  }

  get name(): string {
    return this.#connection.name;
  }

  /** The names of the sublevels from the database down to this one (empty for the database itself). */
  get path(): readonly string[] {
    return this.#codec.path;
  }

  /**
   * The sublevel `name` (see `Database.sublevel`): the same connection,
   * over the keys behind the sublevel's prefix, with its own encodings
   * (default: this one's).
   */
  sublevel<const O extends EncodingOptions<never, never>>(
    name: string,
    options: Exactly<O, EncodingOptions<never, never>>,
  ): RemoteDatabase<KeyTypeOf<O['keyEncoding'], K>, ValueTypeOf<O['valueEncoding'], V>>;
  /** The sublevel `name`, of the key and value types given as type parameters. */
  sublevel<SK = K, SV = V>(name: string, options?: SublevelOptions<SK, SV>): RemoteDatabase<SK, SV>;
  sublevel<SK = K, SV = V>(name: string, options?: SublevelOptions<SK, SV>): RemoteDatabase<SK, SV> {
    checkOptionNames(options, ENCODING_OPTIONS, 'db.sublevel()');
    return new RemoteDatabase<SK, SV>(this.#connection, this.#codec.child(name, options as EncodingOptions<unknown, unknown> | undefined), this.#handle);
  }

  /** Whether this realm's worker serves the database now (for every tab), rather than another tab's. */
  get isLeader(): boolean {
    return this.#connection.isLeader;
  }

  #send(request: Request, epoch?: number): Promise<unknown> {
    if (this.#handle.closed) return Promise.reject(new SiltError('Closed', 'the database was closed'));
    return this.#connection.send(request, epoch);
  }

  #snapshot(s: RemoteSnapshot | undefined): { snapshot: number; epoch?: number } {
    if (s === undefined) return { snapshot: 0 };
    if (!(s instanceof RemoteSnapshot) || !s.connectionIs(this.#connection))
      throw new SiltError('InvalidArgument', 'snapshot must be a RemoteSnapshot of this connection');
    if (s.id === 0) throw new SiltError('Released', 'this snapshot was released: take a new one (db.snapshot())');
    if (s.epoch !== this.#connection.epoch) throw leaderChanged('this snapshot');
    return { snapshot: s.id, epoch: s.epoch };
  }

  /**
   * A backup as of now (see `Database.export`: the same forms and
   * defaults), as a stream of bytes read from the leader piece by piece.
   * If the tab that leads goes while it is read, the stream fails with
   * `LeaderChanged`: start it again.
   */
  export(options: ExportOptions<K> = {}): ReadableStream<Uint8Array> {
    if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', `export() takes an options object, got ${show(options)}`);
    checkOptionNames(options, EXPORT_OPTIONS, 'db.export()');
    if (this.#handle.closed) throw new SiltError('Closed', 'the database was closed');
    const { lower, upper } = this.#codec.bounds(options);
    const shape = exportForm(options, { lower, upper });
    const epoch = this.#connection.epoch;
    const started = this.#send({ op: 'exportStart', ...(lower ? { lower } : {}), ...(upper ? { upper } : {}), ...shape }, epoch) as Promise<number>;
    started.catch(() => {}); // (its failure is the first pull's)
    let done = false;
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          try {
            const id = await started;
            const piece = (await this.#send({ op: 'exportNext', export: id }, epoch)) as Uint8Array | undefined;
            if (piece === undefined) {
              done = true;
              controller.close();
            } else {
              controller.enqueue(piece);
            }
          } catch (e) {
            done = true;
            controller.error(e);
          }
        },
        cancel: async () => {
          if (done) return;
          done = true;
          const id = await started.catch(() => undefined);
          if (id !== undefined && epoch === this.#connection.epoch) await this.#send({ op: 'exportRelease', export: id }, epoch).catch(() => {});
        },
      },
      { highWaterMark: 1 },
    );
  }

  /**
   * Fills this database, which must be empty, from an export (see
   * `Database.import`): the pieces go to the leader, which checks every
   * chunk and makes the data visible at the end, all at once. On the
   * database itself, not a sublevel.
   */
  import(source: ImportSource): Promise<ImportReport> {
    return call(async () => {
      if (this.#codec.prefix.length > 0) {
        throw new SiltError('InvalidArgument', 'import() fills the database itself, not a sublevel: the exported keys carry their sublevel prefixes');
      }
      const epoch = this.#connection.epoch;
      await this.#send({ op: 'importStart' }, epoch);
      let pushing = true;
      try {
        for await (const chunk of chunksOf(source)) {
          const bytes = chunk.slice(); // transferred to the worker
          await this.#send({ op: 'importPush', bytes }, epoch);
        }
        pushing = false;
        return (await this.#send({ op: 'importFinish' }, epoch)) as ImportReport;
      } catch (e) {
        if (pushing) await this.#send({ op: 'importAbort' }, epoch).catch(() => {});
        throw e;
      }
    });
  }

  /**
   * Adds RocksDB table files in one step (see `Database.ingestRocksdb`):
   * read here whole, sent to the leader in one message, which verifies every
   * table and writes them as a write of this connection (never applied
   * twice, whatever the failovers). Not on a sublevel.
   */
  ingestRocksdb(source: ImportSource): Promise<RocksdbIngestReport> {
    return call(async () => {
      if (this.#codec.prefix.length > 0) throw onSublevel();
      // Bytes go at once, in order with the writes called after this one;
      // any other source once it has been read.
      const bytes = source instanceof Uint8Array ? source.slice() : await bytesOf(source);
      return (await this.#send({ op: 'ingestRocksdb', bytes })) as RocksdbIngestReport;
    });
  }

  /** A new batch of updates in this database's (or sublevel's) keys and encodings; `db.write(batch)` applies it. */
  batch(): WriteBatch<K, V> {
    return WriteBatch.withCodec<K, V>(this.#codec);
  }

  /**
   * An async iterator over the keys within `options`' bounds; entries come
   * over in batches. Breaking out of `for await` releases it. If the tab
   * that leads goes meanwhile, the next step fails with `LeaderChanged`.
   */
  iterator<IV = V>(options: RemoteIteratorOptions<K, IV> = {}): RemoteIterator<Entry<KeyOf<K>, IV>> {
    return this.#projection(options, (c) => entryOf<KeyOf<K>, IV>(c), 'db.iterator()');
  }

  /** The keys within `options`' range, in order (async). */
  keys(options: RemoteIteratorOptions<K, V> = {}): RemoteIterator<KeyOf<K>> {
    return this.#projection(options, (c) => (b, i) => c.keys.decode(b.keyAt(i)) as KeyOf<K>, 'db.keys()');
  }

  /** The values of the keys within `options`' range, in key order (async). */
  values<IV = V>(options: RemoteIteratorOptions<K, IV> = {}): RemoteIterator<IV> {
    return this.#projection(options, (c) => (b, i) => c.values.decode(b.valueAt(i)) as IV, 'db.values()');
  }

  /** The same as `iterator(options)`. */
  entries<IV = V>(options: RemoteIteratorOptions<K, IV> = {}): RemoteIterator<Entry<KeyOf<K>, IV>> {
    return this.#projection(options, (c) => entryOf<KeyOf<K>, IV>(c), 'db.entries()');
  }

  #projection<T>(options: RemoteIteratorOptions<unknown, unknown>, pick: (c: Codec) => (b: EntryBatch, i: number) => T, call: string): RemoteIterator<T> {
    if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', `${call}'s options must be an object, got ${show(options)}`);
    checkOptionNames(options, REMOTE_ITERATOR_OPTIONS, call);
    const { snapshot, ...rest } = options;
    const c = this.#codec.with(rest as EncodingOptions<unknown, unknown>);
    const { request, limit } = checkIteratorOptions(rest, c);
    const snap = this.#snapshot(snapshot);
    // Its first batch comes with the answer that opens it; the leader lets go
    // of it itself once that batch holds the limit.
    const first = { first: true, ...(Number.isFinite(limit) ? { limit } : {}) };
    return this.#iterator({ op: 'iterator', options: request, snapshot: snap.snapshot, ...first }, snap.epoch, false, pick(c), limit, c.prefix.length);
  }

  /** An iterator the leader opens for `request` (see `remoteIterator`). */
  #iterator<T>(
    request: Request,
    epoch: number | undefined,
    eager: boolean,
    pick: (b: EntryBatch, i: number) => T,
    limit: number,
    prefix: number,
  ): RemoteIterator<T> {
    return remoteIterator(
      (r, e) => this.#send(r, e),
      this.#connection,
      request,
      epoch,
      eager,
      pick,
      limit,
      prefix,
      () => this.#handle.closed,
    );
  }

  /**
   * Begins an optimistic transaction, run by the leader for this
   * connection (see `RemoteTransaction`): it may stay open across any
   * `await`; commit or abort it. `transaction(fn)` does that and retries.
   */
  begin(): RemoteTransaction<K, V> {
    if (this.#handle.closed) throw new SiltError('Closed', 'the database was closed');
    const c = this.#connection;
    const host: RemoteTransactionHost = {
      send: (request, epoch) => this.#send(request, epoch),
      iterator: (request, epoch, codec, limit) => this.#iterator(request, epoch, true, entryOf(codec), limit, codec.prefix.length),
      iteratorOptions: (o, codec) => {
        if (typeof o !== 'object' || o === null) throw new SiltError('InvalidArgument', `tx.iterator()'s options must be an object, got ${show(o)}`);
        checkOptionNames(o, TRANSACTION_ITERATOR_OPTIONS, 'tx.iterator()');
        return checkIteratorOptions(o, codec);
      },
      codecOf: (db) => {
        if (!(db instanceof RemoteDatabase) || !RemoteDatabase.#sameConnection(db, this as RemoteDatabase<unknown, unknown>)) {
          throw new SiltError('InvalidArgument', 'tx.in() takes a sublevel of the database the transaction is on');
        }
        return codecOf(db, 'tx.in()');
      },
      unpack,
      epoch: c.epoch,
      leader: c.leaderId,
      sync: (o) => syncOf(o, 'tx.commit()'),
    };
    return new RemoteTransaction<K, V>(host, c.transactionId(), this.#codec);
  }

  static #sameConnection(a: RemoteDatabase<unknown, unknown>, b: RemoteDatabase<unknown, unknown>): boolean {
    return a.#connection === b.#connection;
  }

  /**
   * Runs `fn` in a transaction and commits it when `fn` returns (or its
   * Promise resolves: `fn` may await anything), returning what `fn`
   * returned. On a conflict (`Conflict`), or when the tab that led went
   * (`LeaderChanged`), `fn` runs again in a new transaction, up to
   * `retries` times with a growing backoff; then that error is thrown. If
   * `fn` throws (or calls `tx.abort()`), nothing is written.
   */
  transaction<T>(fn: (tx: RemoteTransaction<K, V>) => T | Promise<T>, options?: TransactionOptions): Promise<T> {
    return call(async () => {
      if (typeof fn !== 'function') throw new SiltError('InvalidArgument', `transaction() takes a function, got ${show(fn)}`);
      checkOptionNames(options, TRANSACTION_OPTIONS, 'db.transaction()');
      return withRetries(
        options,
        async (commit) => {
          const tx = this.begin();
          try {
            const result = await fn(tx);
            if (!tx.ended) await tx.commit(commit);
            return result;
          } finally {
            tx.abort();
          }
        },
        ['Conflict', 'LeaderChanged'],
      );
    });
  }

  /**
   * Reads `key`, passes its value (a copy, or `undefined`) to `f`, and
   * writes what `f` returns (a value; `null` deletes the key; `undefined`
   * leaves it), in a transaction retried on conflict. Resolves to the new
   * value.
   */
  update(key: K, f: (value: V | undefined) => UpdateResult<V>, options?: TransactionOptions): Promise<V | undefined> {
    return call(async () => {
      this.#codec.key(key); // checked now
      if (typeof f !== 'function') throw new SiltError('InvalidArgument', `update() takes a function, got ${show(f)}`);
      checkOptionNames(options, TRANSACTION_OPTIONS, 'db.update()');
      return this.transaction((tx) => updateIn(tx, key, f, this.#codec.plainValues), options);
    });
  }

  /**
   * Committed changes to keys in `options`' range, from every tab, in
   * commit order: an async iterable (`for await (const e of db.watch())`),
   * or, given `callback`, calls to it. Each change once, with its sequence
   * number; a `Gap` where changes could not be had (see `Gap`). A watch that
   * is not read holds at most `WATCH_QUEUE_LIMIT` events, then one `Gap`
   * instead: it never slows writers or grows without bound. Its `ended`
   * rejects if the connection fails (`for await` throws then too). With
   * `values: true`, each change of a key carries its value (`KeyChange`).
   */
  watch(options: WatchOptions<K> = {}, callback?: (event: WatchEvent<KeyOf<K>, V>) => void): Watch<KeyOf<K>, V> {
    if (this.#handle.closed) throw new SiltError('Closed', 'the database was closed');
    return watchOn(this.#connection, this.#codec, options, callback);
  }

  /** A live query of `options`' range: its entries now, then again at each change from any tab (see `Live`, `LiveResult`). */
  live(options: LiveOptions<K> = {}): Live<LiveResult<KeyOf<K>, V>> {
    return liveRange(this.#liveSource(), options);
  }

  /** A live query of `key`'s value: now, then again at each change from any tab (see `Live`, `LiveValue`). */
  liveGet(key: K): Live<LiveValue<V>> {
    return liveValue(this.#liveSource(), key);
  }

  /** A live query's reads: its window at a snapshot (the snapshot's sequence number is the read's). */
  #liveSource(): LiveSource {
    if (this.#handle.closed) throw new SiltError('Closed', 'the database was closed');
    const db = this as RemoteDatabase<unknown, unknown>;
    return {
      codec: this.#codec,
      host: () => this.#connection,
      read: async ({ range, values }) => {
        const snapshot = await db.snapshot();
        try {
          const entries: [Uint8Array, Uint8Array | undefined][] = [];
          if (values) for await (const [k, v] of db.iterator<Uint8Array>({ ...range, snapshot })) entries.push([(k as Uint8Array).slice(), v.slice()]);
          else for await (const k of db.keys({ ...range, snapshot })) entries.push([(k as Uint8Array).slice(), undefined]);
          return { seq: snapshot.sequence, entries };
        } finally {
          // Not awaited: the result need not wait for the leader to let go of it.
          snapshot.release().catch(() => {});
        }
      },
    };
  }

  /**
   * Lets go of this handle. The connection closes with the realm's last
   * handle: a follower leaves; a leader closes the database (its Web Lock
   * is released, and another tab's connection leads). Closing twice does
   * nothing.
   */
  async close(): Promise<void> {
    if (this.#handle.closed) return;
    this.#handle.closed = true;
    if (--this.#connection.refs === 0) await this.#connection.close();
  }

  [asyncDispose](): Promise<void> {
    return this.close();
  }
}
