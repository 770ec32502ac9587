/**
 * `connect()`: the entry to a database shared by every page, iframe and
 * worker of an origin (connection.ts has the design). One connection per
 * database per realm, shared by every `connect()` call of that realm.
 */

import { type Key, show } from '../core/bytes.js';
import { Codec, type EncodingOptions, type KeyTypeOf, type ValueTypeOf } from '../core/encoding.js';
import { SiltError } from '../core/errors.js';
import { markStage } from '../core/marks.js';
import { abortReason, type LockManagerLike } from '../core/web-locks.js';
import { checkOptionNames, optionNames, type Exactly } from '../core/option-names.js';
import {
  checkName,
  checkOptions,
  DEFAULT_HANDLE_BUDGET,
  DEFAULT_POOL_RESERVE,
  defaultBlockCacheCapacity,
  OPEN_OPTIONS,
  type OpenOptions,
} from '../local/options.js';
import { Connection } from './connection.js';
import { connectionsOf } from './realms.js';
import { RemoteDatabase } from './remote-database.js';

/** Options of `connect`: those of `open`, and how to start the worker. */
export interface ConnectOptions<K = Key, V = Uint8Array> extends OpenOptions<K, V> {
  /** The worker to use if this connection comes to lead (default: siltdb's own worker module). */
  worker?: Worker;
  /**
   * Bytes of this realm's page cache (default 0: none): values its `get`s
   * read at the latest state, kept on the page so that reading one again
   * needs no round trip to the leader. Kept coherent by the leader's change
   * records: a cached read never goes back in time and always shows this
   * connection's own acknowledged writes, but may not yet show another
   * tab's write whose change record is still on its way (docs/tabs.md,
   * "The page cache"). Keys and values count, with about 100 bytes per
   * entry; a value over a quarter of it is not kept.
   */
  pageCacheCapacity?: number;
}

/**
 * The options of a realm's `connect()`s of one database that its
 * connection shares (all but the encodings, which are each handle's;
 * `wait`, `signal`, `createIfMissing` and `errorIfExists`, which are
 * conditions of each call's open, met by a connection that is open; and
 * `worker`, which only the call that makes the connection uses), with the
 * default of each that has one: what an option left out means.
 */
const SHARED: {
  readonly [N in Exclude<
    keyof ConnectOptions,
    'keyEncoding' | 'valueEncoding' | 'wait' | 'signal' | 'worker' | 'createIfMissing' | 'errorIfExists'
  >]: () => unknown;
} = {
  sync: () => false,
  storage: () => 'auto',
  poolReserve: () => DEFAULT_POOL_RESERVE,
  handleBudget: () => DEFAULT_HANDLE_BUDGET,
  writeBufferSize: () => 4 << 20,
  maxWriteBufferNumber: () => 2,
  blockSize: () => 4096,
  blockCacheCapacity: () => defaultBlockCacheCapacity((globalThis as { navigator?: { deviceMemory?: number } }).navigator?.deviceMemory),
  rowCacheCapacity: () => 0,
  bloomBitsPerKey: () => 10,
  compression: () => 'lz4',
  maxBytes: () => undefined,
  timers: () => false,
  readTriggeredCompaction: () => true,
  transactionSpillBytes: () => 8 << 20,
  idleCompactionMaxBytes: () => 0,
  compressionDictBytes: () => 0,
  mergeOperator: () => undefined,
  pageCacheCapacity: () => 0,
};

/** The options each realm's connection was made with (its first `connect()`'s). */
const sharedOptions = new WeakMap<Connection, ConnectOptions<unknown, unknown>>();

/**
 * Refuses a later `connect(name, later)` of a realm whose connection to
 * `name` was made with `first` if it gives a shared option a value other
 * than the connection's (an option it leaves out takes the connection's).
 */
function checkShared(name: string, first: ConnectOptions<unknown, unknown>, later: ConnectOptions<unknown, unknown>): void {
  for (const [key, fallback] of Object.entries(SHARED) as [keyof typeof SHARED, () => unknown][]) {
    const wanted = later[key];
    if (wanted === undefined) continue;
    const had = first[key] ?? fallback();
    if (wanted === had) continue;
    const shown = (v: unknown) => (v === undefined ? 'none' : show(v));
    throw new SiltError(
      'InvalidArgument',
      `connect('${name}') with ${key}: ${shown(wanted)}, but this realm (page, iframe or worker) is already connected to '${name}' with ${key}: ${shown(had)}${first[key] === undefined ? ' (the default)' : ''}. ` +
        `Every connect('${name}') of one realm shares one connection and its options: give them all the same options (or leave them out in the later calls); the encodings may differ, they are each handle's.`,
    );
  }
}

/** The names of `ConnectOptions`. */
export const CONNECT_OPTIONS = optionNames<ConnectOptions<unknown, unknown>>(
  { ...OPEN_OPTIONS.record, worker: true, pageCacheCapacity: true },
  OPEN_OPTIONS.elsewhere,
);

/**
 * Connects to the database `name`, shared by every page, iframe and worker
 * of the origin that connects to it: the first connection opens it in a
 * worker it starts, and serves the others; when it goes, another takes
 * over. Several `connect()`s of one database in one realm share one
 * connection: a later call that gives an option a value other than the
 * connection's fails with `InvalidArgument` (an option it leaves out is
 * the connection's; the encodings are each handle's own; a later call's
 * `worker` is not used). The engine
 * options of the connection that leads apply to every tab. Fails with
 * `DatabaseLocked` if a worker holds the database
 * with `open()`, which does not share it (unless `wait` is set: then this
 * waits until it is closed).
 */
export async function connect<const O extends ConnectOptions<never, never>>(
  name: string,
  options: Exactly<O, ConnectOptions<never, never>>,
): Promise<RemoteDatabase<KeyTypeOf<O['keyEncoding'], Key>, ValueTypeOf<O['valueEncoding'], Uint8Array>>>;
/** `connect(name, options)`, of the key and value types given as type parameters (`connect<string, Note>('app', ...)`). */
export async function connect<K = Key, V = Uint8Array>(name: string, options?: ConnectOptions<K, V>): Promise<RemoteDatabase<K, V>>;
export async function connect<K = Key, V = Uint8Array>(name: string, options: ConnectOptions<K, V> = {}): Promise<RemoteDatabase<K, V>> {
  if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', `connect()'s options must be an object, got ${show(options)}`);
  markStage('connect');
  checkOptionNames(options, CONNECT_OPTIONS, 'connect()');
  // The encodings stay in this realm (they may be functions): the worker stores bytes.
  const { worker: given, signal, keyEncoding, valueEncoding, pageCacheCapacity = 0, ...openOptions } = options;
  const codec = Codec.root({ keyEncoding, valueEncoding } as EncodingOptions<unknown, unknown>);
  const isSignal = (s: unknown) => typeof s === 'object' && s !== null && 'aborted' in s && typeof (s as AbortSignal).addEventListener === 'function';
  if (signal !== undefined && !isSignal(signal)) throw new SiltError('InvalidArgument', 'signal must be an AbortSignal');
  if (given !== undefined && (typeof given !== 'object' || given === null || typeof (given as Worker).postMessage !== 'function')) {
    throw new SiltError('InvalidArgument', 'worker must be a Worker');
  }
  if (typeof pageCacheCapacity !== 'number' || !Number.isInteger(pageCacheCapacity) || pageCacheCapacity < 0 || pageCacheCapacity > 2 ** 31) {
    throw new SiltError('InvalidArgument', `pageCacheCapacity must be a whole number of bytes from 0 to 2 GiB, got ${show(pageCacheCapacity)}`);
  }
  checkName(name);
  // Here, not in the worker: bad options fail this call, whoever leads.
  checkOptions(openOptions, 'connect()');
  const g = globalThis as { navigator?: { locks?: LockManagerLike }; BroadcastChannel?: unknown; Worker?: unknown };
  if (!g.navigator?.locks || typeof g.BroadcastChannel !== 'function' || (typeof g.Worker !== 'function' && given === undefined)) {
    throw new SiltError(
      'NotSupported',
      'connect() needs Web Locks, BroadcastChannel and Worker, which a browser page, iframe or worker has (on a server, connect in the browser)',
    );
  }
  if (signal?.aborted) throw abortReason(signal);
  const connections = connectionsOf<Connection>(g.navigator.locks);
  let c = connections.get(name);
  if (c === undefined) {
    c = new Connection(name, openOptions, given, g.navigator.locks, pageCacheCapacity);
    connections.set(name, c);
    // A copy: the caller may change its object later.
    sharedOptions.set(c, { ...options } as ConnectOptions<unknown, unknown>);
    void c.start();
  } else {
    checkShared(name, sharedOptions.get(c) ?? {}, options as ConnectOptions<unknown, unknown>);
  }
  const connection = c;
  connection.refs++;
  try {
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(abortReason(signal!));
      signal?.addEventListener('abort', onAbort, { once: true });
      connection.ready.then(resolve, reject).finally(() => signal?.removeEventListener('abort', onAbort));
    });
  } catch (e) {
    if (--connection.refs === 0) await connection.close().catch(() => {});
    throw e;
  }
  return new RemoteDatabase<K, V>(connection, codec);
}
