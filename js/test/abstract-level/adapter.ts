// siltdb as an abstract-level 3 database (Level/abstract-level), for
// abstract-level's own test suite (test/abstract-level.test.ts): the public
// methods of `AbstractLevel` check their arguments, encode, defer while
// opening and refuse while closed; this class writes only the private
// hooks, each one call of siltdb (README.md of abstract-level, "Private
// API For Implementors"). Test-only: siltdb ships no abstract-level
// dependency.
//
// Not implemented, as the has/hasMany tests need none of them: iterators
// (`_iterator`, and so `_clear`, whose default scans), explicit snapshots
// (`_snapshot`; abstract-level requires one taken synchronously, which
// `connect()`'s `snapshot()` is not), `getSync`.

import { AbstractLevel, type AbstractDatabaseOptions } from 'abstract-level';
import type { Key, MultiGetResult, WriteBatch } from '../../src/index.js';

/** An answer of siltdb: at once in a worker, a Promise through `connect()`. */
type Answer<T> = T | Promise<T>;

/**
 * What the adapter asks of siltdb: a worker's `Database` has this shape
 * (answers at once), and so has `connect()`'s `RemoteDatabase` (answers as
 * Promises). Keys are what abstract-level encodes them to: `Uint8Array`s,
 * or strings, which siltdb stores as UTF-8 as abstract-level's `utf8` to
 * `view` transcoder would.
 */
export interface SiltHandle {
  put(key: Key, value: Uint8Array): Answer<void>;
  delete(key: Key): Answer<void>;
  batch(): WriteBatch<Key, Uint8Array>;
  write(batch: WriteBatch<Key, Uint8Array>): Answer<void>;
  get(key: Key, options: { valueEncoding: Format }): Answer<Uint8Array | string | undefined>;
  multiGet(keys: Key[]): Answer<MultiGetResult>;
  has(key: Key): Answer<boolean>;
  hasMany(keys: Key[]): Answer<boolean[]>;
  close(): Answer<void>;
}

/** The options abstract-level hands `_open`. */
export interface OpenHookOptions {
  createIfMissing: boolean;
  errorIfExists: boolean;
}

/** Opens (or, after a close, opens again) the siltdb database an adapter serves. */
export type Opener = (options: OpenHookOptions) => Promise<SiltHandle>;

/**
 * The formats the hooks take and give (the manifest's `encodings`): the
 * names are siltdb's too, so a read's format is passed on as its
 * `valueEncoding`. abstract-level transcodes every other encoding (json,
 * buffer, ...) to one of these.
 */
type Format = 'view' | 'utf8';

/** The options of the read hooks (`_get`, `_getMany`). */
interface ReadHookOptions {
  valueEncoding: Format;
}

type Operation = { type: 'put'; key: Key; value: Uint8Array | string } | { type: 'del'; key: Key };

const utf8 = new TextEncoder();

/** A value as siltdb stores it: the `utf8` format's strings as their UTF-8 bytes. */
function valueBytes(value: Uint8Array | string): Uint8Array {
  return typeof value === 'string' ? utf8.encode(value) : value;
}

/**
 * An abstract-level database over siltdb. `open` is called by each
 * `_open`: a close lets go of the siltdb database, a reopen opens it again
 * (the same data, if the opener reaches the same database).
 */
export class SiltLevel extends AbstractLevel<Uint8Array | string, string, string> {
  #open: Opener;
  #db: SiltHandle | undefined;

  constructor(open: Opener, options?: AbstractDatabaseOptions<string, string>) {
    super({ encodings: { view: true, utf8: true }, has: true }, options);
    this.#open = open;
  }

  /** The open siltdb database: abstract-level calls no other hook unless `_open` succeeded and `_close` has not. */
  get #silt(): SiltHandle {
    if (this.#db === undefined) throw new Error('SiltLevel: a hook was called while the database is not open');
    return this.#db;
  }

  async _open(options: OpenHookOptions): Promise<void> {
    this.#db = await this.#open({ createIfMissing: options.createIfMissing, errorIfExists: options.errorIfExists });
  }

  async _close(): Promise<void> {
    const db = this.#db;
    this.#db = undefined;
    await db?.close();
  }

  async _get(key: Key, options: ReadHookOptions): Promise<Uint8Array | string | undefined> {
    return this.#silt.get(key, { valueEncoding: options.valueEncoding });
  }

  async _getMany(keys: Key[], options: ReadHookOptions): Promise<(Uint8Array | string | undefined)[]> {
    const r = await this.#silt.multiGet(keys);
    try {
      return options.valueEncoding === 'utf8' ? Array.from({ length: r.length }, (_, i) => r.text(i)) : r.copies();
    } finally {
      r.release();
    }
  }

  async _has(key: Key): Promise<boolean> {
    return this.#silt.has(key);
  }

  async _hasMany(keys: Key[]): Promise<boolean[]> {
    return this.#silt.hasMany(keys);
  }

  async _put(key: Key, value: Uint8Array | string): Promise<void> {
    await this.#silt.put(key, valueBytes(value));
  }

  async _del(key: Key): Promise<void> {
    await this.#silt.delete(key);
  }

  /** The operations in order, applied atomically: one siltdb `WriteBatch`. */
  async _batch(operations: Operation[]): Promise<void> {
    const db = this.#silt;
    const batch = db.batch();
    for (const op of operations) {
      if (op.type === 'put') batch.put(op.key, valueBytes(op.value));
      else batch.delete(op.key);
    }
    await db.write(batch);
  }
}
