/**
 * Encodings of keys and values, and the prefixes that keep sublevels apart.
 *
 * The engine stores bytes. A database, a sublevel, a call or an iterator
 * may say how its keys and values become bytes (`keyEncoding`,
 * `valueEncoding`): `'view'` (bytes as they are, the default; keys may also
 * be strings, stored as UTF-8), `'utf8'` (strings), `'json'` (anything
 * `JSON.stringify` takes) or an object `{ encode, decode }` of the app's.
 *
 * A sublevel's keys are stored behind its prefix: `!name!` for each level
 * of its path (`!users!!posts!` for `db.sublevel('users').sublevel('posts')`),
 * the same layout as the Level packages' sublevels. A sublevel reads, counts,
 * clears and iterates only its own keys. Its name is text without `!`.
 */

import { foreignBytes, keyBytes, show, successor, valueBytes, type Key } from './bytes.js';
import { SiltError } from './errors.js';
import { optionNames } from './option-names.js';

/** How values of type `T` become bytes and back. */
export interface Encoding<T> {
  /** Bytes for `value`. */
  encode(value: T): Uint8Array;
  /** The value `bytes` hold (a view the caller may not keep: copy what must stay). */
  decode(bytes: Uint8Array): T;
  /** A name for error messages. */
  readonly name?: string;
}

/**
 * The type of keys read back (from iterators) when keys of type `K` are
 * written: the default `Key` (a `Uint8Array` or a string) reads back as
 * `Uint8Array`; any other type as itself.
 */
export type KeyOf<K> = [Key] extends [K] ? ([K] extends [Key] ? Uint8Array : K) : K;

/**
 * The type of keys an encoding option takes (`Fallback` when it is not
 * given): `'view'` bytes or strings, `'utf8'` strings, `'json'` anything,
 * the app's encoding its own type.
 */
export type KeyTypeOf<E, Fallback> = TypeOf<E, Key, Fallback>;

/** The type of values an encoding option makes (`Fallback` when it is not given). */
export type ValueTypeOf<E, Fallback> = TypeOf<E, Uint8Array, Fallback>;

/**
 * The type of the values a read returns: made by the call's own
 * `valueEncoding` where its options `O` give one, else the handle's `V`.
 */
export type ReadValueOf<O, V> = O extends { valueEncoding: infer E } ? ValueTypeOf<E, V> : V;

/** What encoding option `E` takes or makes, `View` for `'view'`. */
type TypeOf<E, View, Fallback> = [E] extends [undefined]
  ? Fallback
  : E extends 'view'
    ? View
    : E extends 'utf8'
      ? string
      : E extends 'json'
        ? unknown
        : E extends Encoding<infer T>
          ? T
          : Fallback;

/** An encoding: a built-in one by name, or the app's own. */
export type EncodingOption<T> = 'view' | 'utf8' | 'json' | Encoding<T>;

/** The encodings of a database, a sublevel, a call or an iterator. */
export interface EncodingOptions<K, V> {
  /**
   * How keys become bytes: `'view'` (the default: a `Uint8Array`, or a
   * string stored as UTF-8; keys read back are `Uint8Array`s), `'utf8'`
   * (strings), `'json'`, or `{ encode, decode }`. Keys sort by their bytes.
   */
  keyEncoding?: EncodingOption<K>;
  /**
   * How values become bytes: `'view'` (the default: `Uint8Array`s; in a
   * worker `multiGet` then returns views of pinned memory, no copy),
   * `'utf8'`, `'json'`, or `{ encode, decode }`.
   */
  valueEncoding?: EncodingOption<V>;
}

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

function text(bytes: Uint8Array, what: string): string {
  try {
    // TextDecoder refuses views of resizable or shared buffers.
    const plain = bytes.buffer instanceof ArrayBuffer && !(bytes.buffer as { resizable?: boolean }).resizable ? bytes : bytes.slice();
    return utf8Decoder.decode(plain);
  } catch (e) {
    throw new SiltError('InvalidArgument', `${what} is not valid UTF-8: it was not written with the 'utf8' or 'json' encoding`, { cause: e });
  }
}

/** Bytes as they are. */
export const view: Encoding<Uint8Array> = Object.freeze({
  name: 'view',
  encode: (v: Uint8Array) => valueBytes(v),
  decode: (b: Uint8Array) => b,
});

/** Strings, as UTF-8. */
export const utf8: Encoding<string> = Object.freeze({
  name: 'utf8',
  encode(v: string): Uint8Array {
    if (typeof v !== 'string') throw new SiltError('InvalidArgument', `the 'utf8' encoding takes strings, got ${show(v)}`);
    if (!v.isWellFormed()) throw new SiltError('InvalidArgument', `a string with a lone surrogate has no UTF-8 encoding`);
    return utf8Encoder.encode(v);
  },
  decode: (b: Uint8Array) => text(b, 'a stored key or value'),
});

/** Anything `JSON.stringify` takes, as its UTF-8 text. */
export const json: Encoding<unknown> = Object.freeze({
  name: 'json',
  encode(v: unknown): Uint8Array {
    let s: string | undefined;
    try {
      s = JSON.stringify(v);
    } catch (e) {
      throw new SiltError('InvalidArgument', `the 'json' encoding could not encode ${show(v)}: ${(e as Error).message}`, { cause: e });
    }
    if (typeof s !== 'string') throw new SiltError('InvalidArgument', `the 'json' encoding cannot encode ${show(v)} (JSON has no such value)`);
    return utf8Encoder.encode(s);
  },
  decode(b: Uint8Array): unknown {
    const s = text(b, 'a stored JSON value');
    try {
      return JSON.parse(s);
    } catch (e) {
      throw new SiltError('InvalidArgument', `a stored value is not JSON: it was not written with the 'json' encoding`, { cause: e });
    }
  },
});

/** The encoding `option` names (`what`: the option, for messages). */
export function encodingOf(option: unknown, what: string): Encoding<unknown> {
  if (option === undefined || option === 'view') return view as Encoding<unknown>;
  if (option === 'utf8') return utf8 as Encoding<unknown>;
  if (option === 'json') return json;
  if (typeof option === 'object' && option !== null) {
    const o = option as Partial<Encoding<unknown>>;
    if (typeof o.encode === 'function' && typeof o.decode === 'function') return custom(o as Encoding<unknown>, what);
  }
  throw new SiltError('InvalidArgument', `${what} must be 'view', 'utf8', 'json' or an object with encode and decode functions, got ${show(option)}`);
}

/** The app's encoding, with what it returns checked. */
function custom(e: Encoding<unknown>, what: string): Encoding<unknown> {
  const name = typeof e.name === 'string' ? e.name : `the custom ${what}`;
  return {
    name,
    encode(v: unknown): Uint8Array {
      let b: unknown;
      try {
        b = e.encode(v);
      } catch (err) {
        if (err instanceof SiltError) throw err;
        throw new SiltError('InvalidArgument', `${name} could not encode ${show(v)}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
      }
      if (b instanceof Uint8Array) return b;
      const foreign = foreignBytes(b); // one made in another realm
      if (foreign !== undefined) return foreign;
      throw new SiltError('InvalidArgument', `${name}'s encode must return a Uint8Array, got ${show(b)}`);
    },
    decode(b: Uint8Array): unknown {
      try {
        return e.decode(b);
      } catch (err) {
        if (err instanceof SiltError) throw err;
        throw new SiltError(
          'InvalidArgument',
          `${name} could not decode a stored ${what === 'keyEncoding' ? 'key' : 'value'}: ${(err as Error)?.message ?? String(err)}`,
          {
            cause: err,
          },
        );
      }
    },
  };
}

/** The byte that opens and closes each level of a sublevel prefix. */
const SEPARATOR = 0x21; // '!'

/** Bounds of a range: the same options everywhere a range is taken. */
export interface RangeOptions<K> {
  /** Keys greater than this. */
  gt?: K;
  /** Keys greater than or equal to this. */
  gte?: K;
  /** Keys less than this. */
  lt?: K;
  /** Keys less than or equal to this. */
  lte?: K;
}

/** Options of `export()`: a range, and the form of the stream (`docs/format.md`). */
export interface ExportOptions<K> extends RangeOptions<K> {
  /**
   * `'tables'` (the default for a whole database): its table files as they
   * are, plus what is not yet in a file as one table more. Fast to import
   * (nothing is sorted or compressed again), but what compaction has not
   * yet dropped (overwritten and deleted values) travels too, as in a copy
   * of the files; and an import needs the same `mergeOperator` where merge
   * operands are still unresolved. Of a whole database only.
   *
   * `'entries'` (the default for a range or a sublevel): only the live keys
   * and their values as reads return them. Nothing deleted travels; an
   * import builds its tables anew, so it is slower.
   *
   * `'rocksdb'`: the live keys and their values as RocksDB table files
   * (format_version 5 with a bloom filter, what RocksDB's `SstFileWriter` writes) in a tar
   * archive: `tar -xf` it and load each table into RocksDB with
   * `IngestExternalFile` (`ldb ingest_extern_sst`), or give it back to
   * `ingestRocksdb()` / `importDatabase(..., { format: 'rocksdb' })`. Keys
   * go as they are stored (a sublevel's with its prefix), merges applied,
   * deleted keys and range deletions resolved away. Not a Silt backup:
   * `import()` refuses it.
   */
  form?: 'tables' | 'entries' | 'rocksdb';
  /** With `form: 'rocksdb'`: data blocks compressed with LZ4 where it saves an eighth (`'lz4'`), or none (`'none'`, the default). */
  compression?: 'none' | 'lz4';
  /** With `form: 'rocksdb'`: each table's target size in bytes, at most 1 GiB (default 32 MiB; each table is built in memory before it is streamed, and holds one entry at least). */
  targetFileSize?: number;
}

/** The form of an export, checked (`exportForm`): what the engine's `exportStart` takes. */
export interface ExportShape {
  form?: 'tables' | 'entries' | 'rocksdb';
  lz4?: boolean;
  targetFileSize?: number;
}

/** The names of `RangeOptions` (`clear`, `approximateSize`). */
export const RANGE_OPTIONS = optionNames<RangeOptions<unknown>>({ gt: true, gte: true, lt: true, lte: true });
/** The names of `ExportOptions`. */
export const EXPORT_OPTIONS = optionNames<ExportOptions<unknown>>({
  gt: true,
  gte: true,
  lt: true,
  lte: true,
  form: true,
  compression: true,
  targetFileSize: true,
});
/** The names of `EncodingOptions` (`sublevel`). */
export const ENCODING_OPTIONS = optionNames<EncodingOptions<unknown, unknown>>({ keyEncoding: true, valueEncoding: true });

/** The form `options` asks for, checked; `form` undefined is the default for its range. */
export function exportForm(
  options: { form?: unknown; compression?: unknown; targetFileSize?: unknown },
  bounds: { lower?: Uint8Array | undefined; upper?: Uint8Array | undefined },
): ExportShape {
  const f = options.form;
  if (f !== undefined && f !== 'tables' && f !== 'entries' && f !== 'rocksdb') {
    throw new SiltError('InvalidArgument', `export form must be 'tables', 'entries' or 'rocksdb', got ${show(f)}`);
  }
  // Refused when called in both APIs (the engine refuses it too, but
  // through connect() only at the stream's first read).
  if (f === 'tables' && (bounds.lower !== undefined || bounds.upper !== undefined)) {
    throw new SiltError(
      'InvalidArgument',
      'an export in the tables form is of a whole database: leave out the range (and export the database, not a sublevel), or ask for the entries form',
    );
  }
  const { compression, targetFileSize } = options;
  if (f !== 'rocksdb' && (compression !== undefined || targetFileSize !== undefined)) {
    throw new SiltError('InvalidArgument', "export options compression and targetFileSize are for form: 'rocksdb'");
  }
  if (compression !== undefined && compression !== 'none' && compression !== 'lz4') {
    throw new SiltError('InvalidArgument', `export compression must be 'none' or 'lz4', got ${show(compression)}`);
  }
  if (targetFileSize !== undefined && !(Number.isSafeInteger(targetFileSize) && (targetFileSize as number) > 0 && (targetFileSize as number) <= 2 ** 30)) {
    throw new SiltError(
      'InvalidArgument',
      `export targetFileSize must be a whole number of bytes from 1 to 2 ** 30 (1 GiB; each table is built in memory), got ${show(targetFileSize)}`,
    );
  }
  return {
    ...(f !== undefined ? { form: f } : {}),
    ...(compression === 'lz4' ? { lz4: true } : {}),
    ...(targetFileSize !== undefined ? { targetFileSize: targetFileSize as number } : {}),
  };
}

/**
 * @internal How one database or sublevel turns keys and values into the
 * bytes the engine stores: a prefix, a key encoding and a value encoding.
 */
export class Codec {
  readonly prefix: Uint8Array;
  /** The first key after every key of the prefix (undefined for the root). */
  readonly end: Uint8Array | undefined;
  readonly keys: Encoding<unknown>;
  readonly values: Encoding<unknown>;
  /** Keys are stored as given (`view`, no prefix): the fast path of the root. */
  readonly plainKeys: boolean;
  /** Values are bytes as they are (`view`): reads can hand out pinned views. */
  readonly plainValues: boolean;
  /**
   * Decoded values may share the bytes they were decoded from (`view`, or
   * a custom encoding, which may return its input): a read owned by the
   * caller copies them into a buffer of their own first. `utf8` and `json`
   * make new values.
   */
  readonly sharesBytes: boolean;
  /**
   * Values are decoded by the app's own encoding, whose values may be
   * bytes or anything else: `multiGet` answers with an array that is also
   * a `MultiGetResult` (`decodedValues`).
   */
  readonly customValues: boolean;
  /** The path of sublevel names. */
  readonly path: readonly string[];

  constructor(path: readonly string[], prefix: Uint8Array, keys: Encoding<unknown>, values: Encoding<unknown>) {
    this.path = path;
    this.prefix = prefix;
    if (prefix.length === 0) {
      this.end = undefined;
    } else {
      const end = prefix.slice();
      end[end.length - 1]! += 1; // '!' + 1: after every key behind the prefix
      this.end = end;
    }
    this.keys = keys;
    this.values = values;
    this.plainKeys = keys === view && prefix.length === 0;
    this.plainValues = values === view;
    this.sharesBytes = values !== utf8 && values !== json;
    this.customValues = this.sharesBytes && !this.plainValues;
  }

  static root(options: EncodingOptions<unknown, unknown> | undefined): Codec {
    return new Codec([], new Uint8Array(0), encodingOf(options?.keyEncoding, 'keyEncoding'), encodingOf(options?.valueEncoding, 'valueEncoding'));
  }

  /** The codec of sublevel `name` below this one; its encodings default to this one's. */
  child(name: unknown, options: EncodingOptions<unknown, unknown> | undefined): Codec {
    if (typeof name !== 'string' || name.length === 0 || name.includes('!') || !name.isWellFormed()) {
      throw new SiltError('InvalidArgument', `a sublevel name must be a non-empty string without '!', got ${show(name)}`);
    }
    if (options !== undefined && (typeof options !== 'object' || options === null)) {
      throw new SiltError('InvalidArgument', `sublevel options must be an object, got ${show(options)}`);
    }
    const n = utf8Encoder.encode(name);
    const prefix = new Uint8Array(this.prefix.length + n.length + 2);
    prefix.set(this.prefix);
    prefix[this.prefix.length] = SEPARATOR;
    prefix.set(n, this.prefix.length + 1);
    prefix[prefix.length - 1] = SEPARATOR;
    const keys = options?.keyEncoding === undefined ? this.keys : encodingOf(options.keyEncoding, 'keyEncoding');
    const values = options?.valueEncoding === undefined ? this.values : encodingOf(options.valueEncoding, 'valueEncoding');
    return new Codec([...this.path, name], prefix, keys, values);
  }

  /** This codec with other encodings (a call's or an iterator's own). */
  with(options: EncodingOptions<unknown, unknown> | undefined): Codec {
    if (options === undefined || (options.keyEncoding === undefined && options.valueEncoding === undefined)) return this;
    const keys = options.keyEncoding === undefined ? this.keys : encodingOf(options.keyEncoding, 'keyEncoding');
    const values = options.valueEncoding === undefined ? this.values : encodingOf(options.valueEncoding, 'valueEncoding');
    return new Codec(this.path, this.prefix, keys, values);
  }

  /** The stored bytes of `key` (`what` names it in errors). */
  key(key: unknown, what = 'key'): Uint8Array {
    // The 'view' key encoding takes strings too (stored as UTF-8), with the
    // checks keyBytes makes; other encodings check what they take.
    const bytes = this.keys === view ? keyBytes(key, what) : this.keys.encode(key);
    if (this.prefix.length === 0) return bytes;
    const out = new Uint8Array(this.prefix.length + bytes.length);
    out.set(this.prefix);
    out.set(bytes, this.prefix.length);
    return out;
  }

  /** The key a stored key holds (its prefix dropped, decoded). */
  unkey(stored: Uint8Array): unknown {
    const n = this.prefix.length;
    return this.keys.decode(n === 0 ? stored : stored.subarray(n));
  }

  /** The stored bytes of `value`. */
  value(value: unknown, what = 'value'): Uint8Array {
    return this.values === view ? valueBytes(value, what) : this.values.encode(value);
  }

  /** The value stored bytes hold. */
  unvalue(stored: Uint8Array): unknown {
    return this.values.decode(stored);
  }

  /**
   * Engine bounds for `range` (lower inclusive, upper exclusive), within
   * this codec's prefix; `undefined` is unbounded (the root only).
   */
  bounds(range: RangeOptions<unknown>): { lower: Uint8Array | undefined; upper: Uint8Array | undefined } {
    if (range.gt !== undefined && range.gte !== undefined) throw new SiltError('InvalidArgument', 'give gt or gte, not both');
    if (range.lt !== undefined && range.lte !== undefined) throw new SiltError('InvalidArgument', 'give lt or lte, not both');
    const lower =
      range.gte !== undefined
        ? this.key(range.gte, 'gte')
        : range.gt !== undefined
          ? successor(this.key(range.gt, 'gt'))
          : this.prefix.length > 0
            ? this.prefix
            : undefined;
    const upper = range.lt !== undefined ? this.key(range.lt, 'lt') : range.lte !== undefined ? successor(this.key(range.lte, 'lte')) : this.end;
    return { lower, upper };
  }
}

/** The codec of a database opened with `options` (encodings checked now). */
export function rootCodec(options: EncodingOptions<unknown, unknown> | undefined): Codec {
  return Codec.root(options);
}

/** Whether `x` is a non-negative integer or `Infinity` (a `limit`). */
export function checkLimit(x: unknown): number {
  if (x === undefined || x === Number.POSITIVE_INFINITY || x === -1) return Number.POSITIVE_INFINITY;
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) {
    throw new SiltError('InvalidArgument', `limit must be an integer from 0 (or Infinity / -1 for none), got ${show(x)}`);
  }
  return x;
}

/** The codec of every database and sublevel handle (for `batch.in(sub)` and `tx.in(sub)`). */
const codecs = new WeakMap<object, Codec>();

/** @internal Records the codec of a database or sublevel handle. */
export function registerCodec(db: object, codec: Codec): void {
  codecs.set(db, codec);
}

/** @internal The codec of a database or sublevel handle (`what` names the call in errors). */
export function codecOf(db: unknown, what: string): Codec {
  const c = typeof db === 'object' && db !== null ? codecs.get(db) : undefined;
  if (c === undefined) throw new SiltError('InvalidArgument', `${what} takes a database or one of its sublevels, got ${show(db)}`);
  return c;
}
