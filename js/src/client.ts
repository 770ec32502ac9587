/**
 * `connect()`: the database from a page's main thread. It starts a worker
 * (worker.ts) that opens the database with `open()`, and sends it every
 * call; each call returns a Promise, and values come back as copies the
 * caller owns (transferred, not copied twice).
 */

import { WriteBatch } from './batch.js';
import { keyBytes, packKeys, show, valueBytes, type Key } from './bytes.js';
import type { Statistics, VerifyReport, WriteOptions } from './database.js';
import { SiltError, type SiltErrorCode } from './errors.js';
import { bounds, checkBatchSize, EntryBatch, type Entry } from './iterator.js';
import type { OpenOptions } from './open.js';
import type { Envelope, IteratorRequestOptions, PackedValues, Request, Response } from './protocol.js';

/** Iterator options of a connection; the snapshot is a `RemoteSnapshot`. */
export interface RemoteIteratorOptions extends IteratorRequestOptions {
  snapshot?: RemoteSnapshot;
}

/** Read options of a connection. */
export interface RemoteReadOptions {
  snapshot?: RemoteSnapshot;
}

class Channel {
  #worker: Worker;
  #pending = new Map<number, { resolve(v: unknown): void; reject(e: SiltError): void }>();
  #next = 1;
  #dead: SiltError | undefined;

  constructor(worker: Worker) {
    this.#worker = worker;
    worker.addEventListener('message', (event: MessageEvent<Response>) => {
      const r = event.data;
      const p = this.#pending.get(r.id);
      if (!p) return;
      this.#pending.delete(r.id);
      if (r.ok) p.resolve(r.value);
      else p.reject(new SiltError(r.error.code as SiltErrorCode, r.error.message));
    });
    worker.addEventListener('error', (event: ErrorEvent) => {
      event.preventDefault();
      this.kill(new SiltError('Internal', `the siltdb worker failed: ${event.message || 'it could not be loaded'}`));
    });
  }

  send(request: Request): Promise<unknown> {
    if (this.#dead) return Promise.reject(this.#dead);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      const envelope: Envelope = { id, request };
      try {
        this.#worker.postMessage(envelope);
      } catch (e) {
        // What the structured clone refuses (a function, a Symbol) never
        // reached the worker, which goes on serving.
        const detail = e instanceof Error ? `${e.name}: ${e.message}` : show(e);
        reject(new SiltError('InvalidArgument', `the arguments of ${request.op} cannot be sent to the worker: ${detail}`, { cause: e }));
        return;
      }
      this.#pending.set(id, { resolve, reject });
    });
  }

  /** Stops the worker; every pending and later call fails with `error`. */
  kill(error: SiltError): void {
    if (this.#dead) return;
    this.#dead = error;
    this.#worker.terminate();
    for (const p of this.#pending.values()) p.reject(error);
    this.#pending.clear();
  }
}

/** A snapshot held by the worker of a connection. */
export class RemoteSnapshot {
  /** @internal */
  id: number;
  #channel: Channel;

  /** @internal */
  constructor(channel: Channel, id: number) {
    this.#channel = channel;
    this.id = id;
  }

  async release(): Promise<void> {
    if (this.id === 0) return;
    const id = this.id;
    this.id = 0;
    await this.#channel.send({ op: 'releaseSnapshot', snapshot: id });
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

function snapshotId(s: RemoteSnapshot | undefined): number {
  if (s === undefined) return 0;
  if (!(s instanceof RemoteSnapshot)) throw new SiltError('InvalidArgument', 'snapshot must be a RemoteSnapshot of this connection');
  if (s.id === 0) throw new SiltError('Released', 'this snapshot was released');
  return s.id;
}

function syncOf(o: WriteOptions | undefined): { sync?: boolean } {
  if (o?.sync === undefined) return {};
  if (typeof o.sync !== 'boolean') throw new SiltError('InvalidArgument', `sync must be a boolean, got ${show(o.sync)}`);
  return { sync: o.sync };
}

/** Runs `f` and turns a synchronous throw (bad input) into a rejection. */
async function call<T>(f: () => Promise<T>): Promise<T> {
  return f();
}

/**
 * A database opened in a worker, used from here with Promises. Calls run
 * in the order they are made. Values returned are copies owned by the
 * caller.
 */
export class RemoteDatabase {
  #channel: Channel;
  #name: string;
  #closed = false;

  /** @internal */
  constructor(channel: Channel, name: string) {
    this.#channel = channel;
    this.#name = name;
  }

  get name(): string {
    return this.#name;
  }

  #send(request: Request): Promise<unknown> {
    if (this.#closed) return Promise.reject(new SiltError('Closed', 'the database was closed'));
    return this.#channel.send(request);
  }

  put(key: Key, value: Uint8Array, options?: WriteOptions): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'put', key: keyBytes(key), value: valueBytes(value), ...syncOf(options) });
    });
  }

  delete(key: Key, options?: WriteOptions): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'delete', key: keyBytes(key), ...syncOf(options) });
    });
  }

  /** Removes every key from `start` (included) to `end` (excluded). */
  deleteRange(start: Key, end: Key, options?: WriteOptions): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'deleteRange', start: keyBytes(start, 'start'), end: keyBytes(end, 'end'), ...syncOf(options) });
    });
  }

  /** Compacts every key from `begin` to `end` (both included, both optional). */
  compactRange(begin?: Key, end?: Key): Promise<void> {
    return call(async () => {
      await this.#send({
        op: 'compactRange',
        ...(begin === undefined ? {} : { begin: keyBytes(begin, 'begin') }),
        ...(end === undefined ? {} : { end: keyBytes(end, 'end') }),
      });
    });
  }

  /** Applies every update of `batch` atomically. */
  write(batch: WriteBatch, options?: WriteOptions): Promise<void> {
    return call(async () => {
      if (!(batch instanceof WriteBatch)) throw new SiltError('InvalidArgument', 'write() takes a WriteBatch');
      await this.#send({ op: 'write', batch: batch.encoded().slice(), count: batch.length, ...syncOf(options) });
    });
  }

  /** A copy of the value of `key`, or `undefined`. */
  get(key: Key, options?: RemoteReadOptions): Promise<Uint8Array | undefined> {
    return call(async () => (await this.#send({ op: 'get', key: keyBytes(key), snapshot: snapshotId(options?.snapshot) })) as Uint8Array | undefined);
  }

  /** Copies of the values of `keys` (read at one point in time), in order. */
  multiGet(keys: Key[], options?: RemoteReadOptions): Promise<(Uint8Array | undefined)[]> {
    return call(async () => {
      packKeys(keys); // checks every key here, with its index in the message
      const bytesKeys = keys.map((k) => keyBytes(k));
      const { bytes, lens } = (await this.#send({ op: 'multiGet', keys: bytesKeys, snapshot: snapshotId(options?.snapshot) })) as PackedValues;
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
    });
  }

  snapshot(): Promise<RemoteSnapshot> {
    return call(async () => new RemoteSnapshot(this.#channel, (await this.#send({ op: 'snapshot' })) as number));
  }

  /**
   * An async iterator over the keys within `options`' bounds; entries come
   * over in batches. Breaking out of `for await` releases it.
   */
  iterator(options: RemoteIteratorOptions = {}): AsyncIterableIterator<Entry> & AsyncDisposable {
    if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', 'iterator options must be an object');
    const { snapshot, ...rest } = options;
    bounds(rest); // checks the bounds here
    checkBatchSize(rest.batchSize);
    for (const flag of ['reverse', 'autoRefresh'] as const) {
      const v = rest[flag];
      if (v !== undefined && typeof v !== 'boolean') throw new SiltError('InvalidArgument', `${flag} must be a boolean, got ${show(v)}`);
    }
    const request: Request = { op: 'iterator', options: rest, snapshot: snapshotId(snapshot) };
    let id: Promise<number> | undefined;
    let pending: EntryBatch | undefined;
    let at = 0;
    let done = false;
    const release = async (): Promise<void> => {
      if (done) return;
      done = true;
      if (id !== undefined) await this.#send({ op: 'releaseIterator', iterator: await id });
    };
    const it: AsyncIterableIterator<Entry> & AsyncDisposable = {
      next: async (): Promise<IteratorResult<Entry, undefined>> => {
        if ((pending === undefined || at >= pending.length) && !done) {
          id ??= this.#send(request) as Promise<number>;
          const batch = (await this.#send({ op: 'next', iterator: await id })) as { bytes: Uint8Array; offsets: Uint32Array } | undefined;
          at = 0;
          pending = batch === undefined ? undefined : new EntryBatch(batch.bytes, batch.offsets);
          // The worker let go of an exhausted (or failed) iterator itself.
          if (batch === undefined) done = true;
        }
        if (pending === undefined || at >= pending.length) return { done: true, value: undefined };
        const i = at++;
        return { done: false, value: [pending.keyAt(i), pending.valueAt(i)] };
      },
      return: async (): Promise<IteratorResult<Entry, undefined>> => {
        await release();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]() {
        return it;
      },
      [Symbol.asyncDispose]: release,
    };
    return it;
  }

  flush(): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'flush' });
    });
  }

  /** Resolves when the worker's background work has caught up. */
  idle(): Promise<void> {
    return call(async () => {
      await this.#send({ op: 'idle' });
    });
  }

  /** Statistics; `storage` is a fresh estimate, taken for this call. */
  statistics(): Promise<Statistics> {
    return call(async () => (await this.#send({ op: 'statistics' })) as Statistics);
  }

  /**
   * Reads every table file and checks every checksum and key (see
   * `Database.verify`); rejects with the first damage found.
   */
  verify(): Promise<VerifyReport> {
    return call(async () => (await this.#send({ op: 'verify' })) as VerifyReport);
  }

  /**
   * Closes the database (its Web Lock is released) and stops the worker.
   * Closing twice does nothing.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#channel.send({ op: 'close' });
    } finally {
      this.#channel.kill(new SiltError('Closed', 'the database was closed'));
    }
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Options of `connect`: those of `open`, and how to start the worker. */
export interface ConnectOptions extends OpenOptions {
  /** The worker to use (default: siltdb's own worker module). */
  worker?: Worker;
}

/**
 * Opens the database `name` in a new worker and connects to it from this
 * thread (a page's main thread, typically). Fails like `open()`: with
 * `DatabaseLocked` if another tab has it open (unless `wait` is set).
 */
export async function connect(name: string, options: ConnectOptions = {}): Promise<RemoteDatabase> {
  if (typeof options !== 'object' || options === null) throw new SiltError('InvalidArgument', 'options must be an object');
  const { worker: given, signal, ...openOptions } = options;
  const isSignal = (s: unknown) => typeof s === 'object' && s !== null && 'aborted' in s && typeof (s as AbortSignal).addEventListener === 'function';
  if (signal !== undefined && !isSignal(signal)) throw new SiltError('InvalidArgument', 'signal must be an AbortSignal');
  if (given !== undefined && (typeof given !== 'object' || given === null || typeof (given as Worker).postMessage !== 'function')) {
    throw new SiltError('InvalidArgument', 'worker must be a Worker');
  }
  if (signal?.aborted) throw new SiltError('DatabaseLocked', `gave up opening database "${name}": the signal was aborted`);
  const worker = given ?? new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'siltdb' });
  const channel = new Channel(worker);
  const onAbort = () => channel.kill(new SiltError('DatabaseLocked', `gave up opening database "${name}": the signal was aborted`));
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await channel.send({ op: 'open', name, options: openOptions });
  } catch (e) {
    channel.kill(e instanceof SiltError ? e : new SiltError('Internal', String(e)));
    throw e;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  return new RemoteDatabase(channel, name);
}
