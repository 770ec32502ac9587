/**
 * `connect()`: the entry to a database shared by every page, iframe and
 * worker of an origin (connection.ts has the design). One connection per
 * database per realm, shared by every `connect()` call of that realm.
 */

import { type Key, show } from '../core/bytes.js';
import { Codec, type EncodingOptions, type KeyTypeOf, type ValueTypeOf } from '../core/encoding.js';
import { SiltError } from '../core/errors.js';
import { abortReason, type LockManagerLike } from '../core/web-locks.js';
import { checkName, checkOptions, type OpenOptions } from '../local/options.js';
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
 * Connects to the database `name`, shared by every page, iframe and worker
 * of the origin that connects to it: the first connection opens it in a
 * worker it starts, and serves the others; when it goes, another takes
 * over. Several `connect()`s in one realm share one connection (the first
 * one's options apply; the engine options of the connection that leads
 * apply to all). Fails with `DatabaseLocked` if a worker holds the database
 * with `open()`, which does not share it (unless `wait` is set: then this
 * waits until it is closed).
 */
export async function connect<const O extends ConnectOptions<never, never>>(
  name: string,
  options: O,
): Promise<RemoteDatabase<KeyTypeOf<O['keyEncoding'], Key>, ValueTypeOf<O['valueEncoding'], Uint8Array>>>;
/** `connect(name, options)`, of the key and value types given as type parameters (`connect<string, Note>('app', ...)`). */
export async function connect<K = Key, V = Uint8Array>(name: string, options?: ConnectOptions<K, V>): Promise<RemoteDatabase<K, V>>;
export async function connect<K = Key, V = Uint8Array>(name: string, options: ConnectOptions<K, V> = {}): Promise<RemoteDatabase<K, V>> {
  if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', 'options must be an object');
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
  checkOptions(openOptions);
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
    void c.start();
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
