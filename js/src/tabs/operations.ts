/**
 * The operations of `core/operations.ts`, declared once for `connect()`:
 * for each, what the page sends (`ask`, from the method's arguments, on the
 * handle's codec) and how it reads the answer (`answer`), how the leader
 * serves it on its `Database` (`serve`), and what it needs of the leader
 * that was asked (`state`: a request pending at a failover is sent to the
 * new leader only if it needs nothing of the old one). From this table
 * follow: the protocol's request type (`OperationRequest`, in `Request`),
 * the leader's dispatch (leader-requests.ts), the re-send rule
 * (`leaderStateOf`, protocol.ts) and `RemoteDatabase`'s methods (installed
 * from it, remote-database.ts). The table's type names every operation, so
 * the compiler refuses one left out. The steps of sessions (iterators,
 * transactions, exports, imports) are declared the same way, without a
 * page method, in leader-steps.ts.
 */

import { decodedValues, HeldMultiGetResult } from '../boundary/results.js';
import { ingestBatch, ingestSorted, WriteBatch, type IngestOptions, type IngestReport } from '../core/batch.js';
import { checkRangeOrder, compareBytes, type Key, show, successor, valueBytes } from '../core/bytes.js';
import { type Codec, RANGE_OPTIONS, type RangeOptions } from '../core/encoding.js';
import { COUNT_OPTIONS, SNAPSHOT_OPTIONS, VALUE_READ_OPTIONS, WRITE_OPTIONS } from '../core/call-options.js';
import { checkOptionNames, type OptionList } from '../core/option-names.js';
import { SiltError } from '../core/errors.js';
import type { OperationName } from '../core/operations.js';
import type { Database } from '../local/database.js';
import type { WriteOptions } from '../local/options.js';
import type { Snapshot } from '../local/snapshot.js';
import { packValues } from './leader-batches.js';
import type { PackedValues, SnapshotInfo } from './wire.js';
import { BOOL, BYTES, COUNT, type Fields, KEY, KEYS, optional } from './wire-checks.js';
import { isReserved, RESERVED, RESERVED_END } from './write-records.js';

/**
 * What a request needs of the leader it was made for, for a connection
 * whose leader went with the request unanswered (connection.ts):
 * - `'none'`: it means the same to any leader: it is sent to the new one.
 * - `'uses'`: it uses, or makes, something that lives in that leader alone
 *   (a snapshot, iterator, transaction, export or import there, named by a
 *   number that leader handed out; the new leader's numbers start again
 *   and may name another thing of its own): it fails with `LeaderChanged`.
 * - `'releases'`: it only lets go of such a thing: with that leader gone,
 *   nothing is left to let go of, and it succeeds.
 */
export type LeaderState = 'none' | 'uses' | 'releases';

/** A read at snapshot `snapshot` (0: none, the latest state) uses the leader's state only with a snapshot, that leader's. */
export const atSnapshot = (r: { snapshot: number }): LeaderState => (r.snapshot === 0 ? 'none' : 'uses');

/** What an operation's page side has of its handle. */
export interface PageSide {
  codec: Codec;
  /** The number of a `RemoteSnapshot` given in options (0: none), checked, and the epoch it belongs to. */
  snapshot(s: unknown): { snapshot: number; epoch?: number };
  /** The `RemoteSnapshot` of a snapshot the leader made for this connection. */
  snapshotFrom(info: SnapshotInfo): unknown;
}

/** The answer to a request, and the buffers to transfer with it. */
export type Served = [unknown, Transferable[]];

/** What an operation's leader side has. */
export interface LeaderSide {
  db: Database;
  /** A key of a request, as bytes; a reserved one (connect()'s write records) is refused. */
  key(k: Key, what: string): Uint8Array;
  /** The snapshot of number `id` of the asking connection (0: none). */
  snapshotOf(id: number): { snapshot?: Snapshot };
  /** Keeps `s` for the asking connection; returns its number there. */
  keepSnapshot(s: Snapshot): number;
  /** Applies `batch` as the asking request's write: recorded with it (never applied twice) and published. */
  write(batch: WriteBatch, sync: boolean | undefined): void;
  /** Ingests an encoded batch of puts as the asking request's write. */
  ingest(batch: Uint8Array, count: number, sorted: boolean): Promise<IngestReport>;
  /** The database's statistics with a fresh storage estimate, and the leader's counters and connections (`RemoteStatistics`). */
  statistics(): Promise<object>;
}

/** What the page sends for one call: its request's fields, the epoch it belongs to, and how to read the answer. */
export interface Asked<W> {
  /** A new object each call: the request is made of it (its `op` set on it), not of a copy. */
  wire: W;
  epoch?: number | undefined;
  answer?: (value: unknown) => unknown;
}

/** One operation: its request's fields `W`, asked for with arguments `A`. */
export interface Operation<A extends unknown[], W extends object> {
  ask(page: PageSide, ...args: A): Asked<W>;
  serve(leader: LeaderSide, r: W): Served | Promise<Served>;
  /** How the leader checks each field of the request before serving it (wire-checks.ts). */
  fields: Fields<W>;
  state: LeaderState | ((r: W) => LeaderState);
  /**
   * A plain write: refused for want of pooled files (`PoolExhausted`:
   * more writes waited in memory than the engine holds, which only a
   * synchronous burst in the leader's worker can cause) it wrote nothing,
   * so the leader runs it once more after its pool keeper added files.
   */
  write?: true;
}

const op = <A extends unknown[], W extends object>(o: Operation<A, W>): Operation<A, W> => o;

/** Any operation (the table's type: every name of `Operations` has one). */
interface AnyOperation {
  ask(page: PageSide, ...args: never[]): Asked<object>;
  serve(leader: LeaderSide, r: never): Served | Promise<Served>;
  fields: object;
  state: LeaderState | ((r: never) => LeaderState);
  write?: true;
}

/** A read at the snapshot in `options`, on the page. */
const at = (page: PageSide, options: { snapshot?: unknown } | undefined) => page.snapshot(options?.snapshot);

/** The `sync` of a write's options (of `call`, for messages), checked (a transaction's commit's too: remote-database.ts). */
export function syncOf(o: WriteOptions | undefined, call: string): { sync?: boolean } {
  checkOptionNames(o, WRITE_OPTIONS, call);
  if (o?.sync === undefined) return {};
  if (typeof o.sync !== 'boolean') throw new SiltError('InvalidArgument', `sync must be a boolean, got ${show(o.sync)}`);
  return { sync: o.sync };
}

/** A range argument, checked to be an object of the options `names`. */
function rangeOf<K>(range: RangeOptions<K>, call: string, names: OptionList = RANGE_OPTIONS): RangeOptions<K> {
  if (typeof range !== 'object' || range === null) throw new SiltError('InvalidArgument', `${call}() takes a range object, got ${show(range)}`);
  checkOptionNames(range, names, `db.${call}()`);
  return range;
}

/** The codec of a read with its own value encoding (`options.valueEncoding`), else the handle's. */
function reads(page: PageSide, options: { valueEncoding?: unknown } | undefined): Codec {
  return options?.valueEncoding === undefined ? page.codec : page.codec.with(options as Parameters<Codec['with']>[0]);
}

/** A value read through `c`: bytes as they came (a copy the caller owns), else decoded. */
const decoded = (v: unknown, c: Codec): unknown => (v === undefined || c.plainValues ? v : c.unvalue(v as Uint8Array));

/** Values the leader packed (`PackedValues`), as views of its one buffer. */
export function unpack({ bytes, lens }: PackedValues): (Uint8Array | undefined)[] {
  const out: (Uint8Array | undefined)[] = [];
  let at = 0;
  for (const len of lens) {
    if (len < 0) out.push(undefined);
    else {
      out.push(bytes.subarray(at, at + len));
      at += len;
    }
  }
  return out;
}

/** A range in stored bytes: `lower` and `upper` present only when bounded. */
const bounds = (c: Codec, range: RangeOptions<unknown>) => {
  const { lower, upper } = c.bounds(range);
  return { ...(lower ? { lower } : {}), ...(upper ? { upper } : {}) };
};

/** Read options of a range's bounds in stored bytes. */
const rangeRead = (lower: Uint8Array | undefined, upper: Uint8Array | undefined) => ({ ...(lower ? { gte: lower } : {}), ...(upper ? { lt: upper } : {}) });

/** No answer (a fresh list of buffers each time: the leader may add to it). */
const none = (): Served => [undefined, []];

/** Whether `db` has no key in [lower, upper): one seek. */
function noKeyIn(db: Database, lower: Uint8Array, upper: Uint8Array): boolean {
  const it = db.keys({ gte: lower, lt: upper, limit: 1 });
  try {
    return it.next().done === true;
  } finally {
    it.release();
  }
}

export const OPERATIONS = {
  put: op({
    ask: (page, key: unknown, value: unknown, options?: WriteOptions) => ({
      wire: { key: page.codec.key(key), value: page.codec.value(value), ...syncOf(options, 'db.put()') },
    }),
    serve: (leader, r: { key: Key; value: Uint8Array; sync?: boolean }) => {
      leader.write(new WriteBatch().put(r.key, r.value), r.sync);
      return none();
    },
    fields: { key: KEY, value: BYTES, sync: optional(BOOL) },
    state: 'none', // writes: the write record answers one sent again, never applied twice
    write: true,
  }),
  delete: op({
    ask: (page, key: unknown, options?: WriteOptions) => ({ wire: { key: page.codec.key(key), ...syncOf(options, 'db.delete()') } }),
    serve: (leader, r: { key: Key; sync?: boolean }) => {
      leader.write(new WriteBatch().delete(r.key), r.sync);
      return none();
    },
    fields: { key: KEY, sync: optional(BOOL) },
    state: 'none',
    write: true,
  }),
  merge: op({
    ask: (page, key: unknown, operand: unknown, options?: WriteOptions) => ({
      wire: { key: page.codec.key(key), value: valueBytes(operand, 'operand'), ...syncOf(options, 'db.merge()') },
    }),
    serve: (leader, r: { key: Key; value: Uint8Array; sync?: boolean }) => {
      leader.write(new WriteBatch().merge(r.key, r.value), r.sync);
      return none();
    },
    fields: { key: KEY, value: BYTES, sync: optional(BOOL) },
    state: 'none',
    write: true,
  }),
  deleteRange: op({
    ask: (page, start: unknown, end: unknown, options?: WriteOptions) => {
      const s = page.codec.key(start, 'start');
      const e = page.codec.key(end, 'end');
      checkRangeOrder(s, e, start, end);
      return { wire: { start: s, end: e, ...syncOf(options, 'db.deleteRange()') } };
    },
    serve: (leader, r: { start: Key; end: Key; sync?: boolean }) => {
      leader.write(new WriteBatch().deleteRange(r.start, r.end), r.sync);
      return none();
    },
    fields: { start: KEY, end: KEY, sync: optional(BOOL) },
    state: 'none',
    write: true,
  }),
  /** A range in stored bytes, [lower, upper); upper absent: past the last key. */
  clear: op({
    ask: (page, range: RangeOptions<unknown> = {}, options?: WriteOptions) => {
      const { lower, upper } = page.codec.bounds(rangeOf(range, 'clear'));
      return { wire: { lower: lower ?? new Uint8Array(0), ...(upper === undefined ? {} : { upper }), ...syncOf(options, 'db.clear()') } };
    },
    serve: (leader, r: { lower: Uint8Array; upper?: Uint8Array; sync?: boolean }) => {
      let upper = r.upper;
      if (upper === undefined) {
        // Past the last key that is not a write record (records sort last).
        for (const [k] of leader.db.iterator({ gte: r.lower, reverse: true, batchSize: 4 })) {
          if (isReserved(k)) continue;
          upper = successor(k);
          break;
        }
      }
      const b = new WriteBatch();
      if (upper !== undefined && compareBytes(r.lower, upper) < 0) b.deleteRange(r.lower, upper);
      leader.write(b, r.sync);
      return none();
    },
    fields: { lower: BYTES, upper: optional(BYTES), sync: optional(BOOL) },
    state: 'none',
    write: true,
  }),
  write: op({
    ask: (_page, batch: unknown, options?: WriteOptions) => {
      if (!(batch instanceof WriteBatch)) throw new SiltError('InvalidArgument', 'write() takes a WriteBatch');
      return { wire: { batch: batch.encoded().slice(), count: batch.length, ...syncOf(options, 'db.write()') } };
    },
    // The request's own buffer (a clone that arrived here) becomes the batch.
    serve: (leader, r: { batch: Uint8Array; count: number; sync?: boolean }) => {
      leader.write(WriteBatch.fromEncoded(r.batch, r.count), r.sync);
      return none();
    },
    fields: { batch: BYTES, count: COUNT, sync: optional(BOOL) },
    state: 'none',
    write: true,
  }),
  ingest: op({
    ask: (page, entries: WriteBatch<unknown, unknown> | Iterable<readonly [unknown, unknown]>, options?: IngestOptions) => {
      const sorted = ingestSorted(options);
      const batch = ingestBatch(entries, () => WriteBatch.withCodec(page.codec));
      return { wire: { batch: batch.encoded().slice(), count: batch.length, sorted } };
    },
    serve: async (leader, r: { batch: Uint8Array; count: number; sorted: boolean }) => [await leader.ingest(r.batch, r.count, r.sorted), []],
    fields: { batch: BYTES, count: COUNT, sorted: BOOL },
    state: 'none',
  }),
  get: op({
    ask: (page, key: unknown, options?: { snapshot?: unknown; valueEncoding?: unknown }) => {
      checkOptionNames(options, VALUE_READ_OPTIONS, 'db.get()');
      const c = reads(page, options);
      const k = c.key(key);
      const { snapshot, epoch } = at(page, options);
      return { wire: { key: k, snapshot }, epoch, answer: (v) => decoded(v, c) };
    },
    serve: (leader, r: { key: Key; snapshot: number }) => {
      // get's copy is in a buffer of its own: transferred, not copied again.
      const v = leader.db.get(leader.key(r.key, 'the key'), leader.snapshotOf(r.snapshot));
      return v === undefined ? none() : [v, [v.buffer]];
    },
    fields: { key: KEY, snapshot: COUNT },
    state: atSnapshot, // at the latest state anywhere, or at a snapshot of that leader
  }),
  multiGet: op({
    ask: (page, keys: unknown, options?: { snapshot?: unknown; valueEncoding?: unknown }) => {
      if (!Array.isArray(keys)) throw new SiltError('InvalidArgument', `keys must be an array of keys, got ${show(keys)}`);
      checkOptionNames(options, VALUE_READ_OPTIONS, 'db.multiGet()');
      const c = reads(page, options);
      const wire = keys.map((k, i) => c.key(k, `keys[${i}]`)); // checks every key here, with its index in the message
      const { snapshot, epoch } = at(page, options);
      const answer = (v: unknown) => {
        const values = unpack(v as PackedValues);
        if (c.plainValues) return new HeldMultiGetResult(values);
        const out = values.map((x) => decoded(x, c));
        return c.customValues ? decodedValues(out) : out;
      };
      return { wire: { keys: wire, snapshot }, epoch, answer };
    },
    serve: (leader, r: { keys: Key[]; snapshot: number }) => {
      const result = leader.db.multiGet(
        r.keys.map((k) => leader.key(k, 'a key')),
        leader.snapshotOf(r.snapshot),
      );
      try {
        return packValues(Array.from({ length: result.length }, (_, i) => result.get(i)));
      } finally {
        result.release();
      }
    },
    fields: { keys: KEYS, snapshot: COUNT },
    state: atSnapshot,
  }),
  has: op({
    ask: (page, key: unknown, options?: { snapshot?: unknown }) => {
      checkOptionNames(options, SNAPSHOT_OPTIONS, 'db.has()');
      const { snapshot, epoch } = at(page, options);
      return { wire: { key: page.codec.key(key), snapshot }, epoch };
    },
    serve: (leader, r: { key: Key; snapshot: number }) => [leader.db.has(leader.key(r.key, 'the key'), leader.snapshotOf(r.snapshot)), []],
    fields: { key: KEY, snapshot: COUNT },
    state: atSnapshot,
  }),
  hasMany: op({
    ask: (page, keys: unknown, options?: { snapshot?: unknown }) => {
      if (!Array.isArray(keys)) throw new SiltError('InvalidArgument', `keys must be an array of keys, got ${show(keys)}`);
      checkOptionNames(options, SNAPSHOT_OPTIONS, 'db.hasMany()');
      const { snapshot, epoch } = at(page, options);
      return { wire: { keys: keys.map((k, i) => page.codec.key(k, `keys[${i}]`)), snapshot }, epoch };
    },
    serve: (leader, r: { keys: Key[]; snapshot: number }) => [
      leader.db.hasMany(
        r.keys.map((k) => leader.key(k, 'a key')),
        leader.snapshotOf(r.snapshot),
      ),
      [],
    ],
    fields: { keys: KEYS, snapshot: COUNT },
    state: atSnapshot,
  }),
  count: op({
    ask: (page, range: RangeOptions<unknown> & { snapshot?: unknown } = {}) => {
      const wire = bounds(page.codec, rangeOf(range, 'count', COUNT_OPTIONS));
      const { snapshot, epoch } = at(page, range);
      return { wire: { ...wire, snapshot }, epoch };
    },
    serve: (leader, r: { lower?: Uint8Array; upper?: Uint8Array; snapshot: number }) => {
      const at = leader.snapshotOf(r.snapshot);
      // Write records are not the app's keys: not counted.
      const lo = r.lower === undefined || compareBytes(r.lower, RESERVED) < 0 ? RESERVED : r.lower;
      const hi = r.upper === undefined || compareBytes(RESERVED_END, r.upper) < 0 ? RESERVED_END : r.upper;
      const records = compareBytes(lo, hi) < 0 ? leader.db.count({ gte: lo, lt: hi, ...at }) : 0;
      return [leader.db.count({ ...rangeRead(r.lower, r.upper), ...at }) - records, []];
    },
    fields: { lower: optional(BYTES), upper: optional(BYTES), snapshot: COUNT },
    state: atSnapshot,
  }),
  approximateSize: op({
    ask: (page, range: RangeOptions<unknown> = {}) => ({ wire: bounds(page.codec, rangeOf(range, 'approximateSize')) }),
    serve: (leader, r: { lower?: Uint8Array; upper?: Uint8Array }) => {
      // Write records are not the app's data: the part of the range below
      // them, and any above them.
      const size = (lower: Uint8Array | undefined, upper: Uint8Array | undefined) =>
        lower !== undefined && upper !== undefined && compareBytes(lower, upper) >= 0 ? 0 : leader.db.approximateSize(rangeRead(lower, upper));
      const below = r.upper === undefined || compareBytes(RESERVED, r.upper) < 0 ? RESERVED : r.upper;
      const above = r.lower === undefined || compareBytes(r.lower, RESERVED_END) < 0 ? RESERVED_END : r.lower;
      const over = r.upper === undefined || compareBytes(RESERVED_END, r.upper) < 0;
      // Below the records, a range with no key of the app in it is 0, as in
      // a worker (else a table block holding records could count, whole).
      const from = r.lower ?? new Uint8Array(0);
      const empty = compareBytes(from, below) >= 0 || noKeyIn(leader.db, from, below);
      return [(empty ? 0 : size(r.lower, below)) + (over ? size(above, r.upper) : 0), []];
    },
    fields: { lower: optional(BYTES), upper: optional(BYTES) },
    state: 'none',
  }),
  snapshot: op<[], object>({
    ask: (page) => ({ wire: {}, answer: (info) => page.snapshotFrom(info as SnapshotInfo) }),
    serve: (leader, _r: object) => {
      const info: SnapshotInfo = { id: leader.keepSnapshot(leader.db.snapshot()), seq: leader.db.latestSequence() };
      return [info, []];
    },
    fields: {},
    state: 'none', // makes a snapshot: its number and leader come with the answer
  }),
  latestSequence: op({
    ask: () => ({ wire: {} }),
    serve: (leader, _r: object) => [leader.db.latestSequence(), []],
    fields: {},
    state: 'none', // sequence numbers are the database's, not a leader's
  }),
  flush: op({
    ask: () => ({ wire: {} }),
    serve: (leader, _r: object) => {
      leader.db.flush();
      return none();
    },
    fields: {},
    state: 'none',
  }),
  idle: op({
    ask: () => ({ wire: {} }),
    serve: async (leader, _r: object) => {
      await leader.db.idle();
      return none();
    },
    fields: {},
    state: 'none',
  }),
  compactRange: op({
    ask: (page, begin?: unknown, end?: unknown) => {
      const c = page.codec;
      const b = begin === undefined ? (c.prefix.length > 0 ? c.prefix : undefined) : c.key(begin, 'begin');
      const e = end === undefined ? c.end : c.key(end, 'end');
      return { wire: { ...(b === undefined ? {} : { begin: b }), ...(e === undefined ? {} : { end: e }) } };
    },
    serve: async (leader, r: { begin?: Key; end?: Key }) => {
      await leader.db.compactRange(r.begin, r.end);
      return none();
    },
    fields: { begin: optional(KEY), end: optional(KEY) },
    state: 'none',
  }),
  verify: op({
    ask: () => ({ wire: {} }),
    serve: (leader, _r: object) => [leader.db.verify(), []],
    fields: {},
    state: 'none',
  }),
  statistics: op({
    ask: () => ({ wire: {} }),
    serve: async (leader, _r: object) => [await leader.statistics(), []],
    fields: {},
    state: 'none',
  }),
} satisfies { [O in OperationName | 'statistics']: AnyOperation };

/** The name of an operation of the table (`Operations`', and `statistics`, whose answer differs between the APIs). */
export type TableName = keyof typeof OPERATIONS;

/** A request of an operation declared here. */
export type OperationRequest = {
  [O in TableName]: { op: O } & ReturnType<(typeof OPERATIONS)[O]['ask']>['wire'];
}[TableName];

/** Whether `op` names an operation declared here. */
export function isOperation(op: string): op is TableName {
  return Object.hasOwn(OPERATIONS, op);
}
