/**
 * The worker `connect()` starts: it opens the database with `open()` and
 * serves the page's requests one at a time. Background work and pool
 * top-ups run on this worker's event loop between requests.
 */

import { WriteBatch } from './batch.js';
import { countCopied } from './counters.js';
import { releaseParked } from './parking.js';
import type { Database } from './database.js';
import { SiltError } from './errors.js';
import type { EntryBatch, Iterator } from './iterator.js';
import { open } from './open.js';
import type { Envelope, PackedValues, Request, Response } from './protocol.js';
import type { Snapshot } from './snapshot.js';
import { refreshStorageEstimate } from './storage.js';

interface WorkerScope {
  addEventListener(type: 'message', listener: (event: { data: Envelope }) => void): void;
  postMessage(message: Response, transfer: Transferable[]): void;
}
const scope = globalThis as unknown as WorkerScope;

let db: Database | undefined;
const snapshots = new Map<number, Snapshot>();
const iterators = new Map<number, Iterator>();
let nextId = 1;

function opened(): Database {
  if (db === undefined) throw new SiltError('Closed', 'the database is not open');
  return db;
}

function snapshotOf(id: number): { snapshot?: Snapshot } {
  if (id === 0) return {};
  const s = snapshots.get(id);
  if (s === undefined) throw new SiltError('Released', 'this snapshot was released');
  return { snapshot: s };
}

/** Runs one request; returns its value and the buffers to transfer. */
async function handle(r: Request): Promise<[unknown, Transferable[]]> {
  switch (r.op) {
    case 'open':
      if (db !== undefined) throw new SiltError('InvalidArgument', 'this connection already has its database open');
      db = await open(r.name, r.options);
      return [undefined, []];
    case 'put':
      opened().put(r.key, r.value, r.sync === undefined ? {} : { sync: r.sync });
      return [undefined, []];
    case 'delete':
      opened().delete(r.key, r.sync === undefined ? {} : { sync: r.sync });
      return [undefined, []];
    case 'deleteRange':
      opened().deleteRange(r.start, r.end, r.sync === undefined ? {} : { sync: r.sync });
      return [undefined, []];
    case 'compactRange':
      await opened().compactRange(r.begin, r.end);
      return [undefined, []];
    case 'write':
      opened().write(WriteBatch.fromEncoded(r.batch, r.count), r.sync === undefined ? {} : { sync: r.sync });
      return [undefined, []];
    case 'get': {
      // A copy in a buffer of its own, to transfer (getCopy's copies may
      // share a chunk with others, copies.ts).
      using v = opened().get(r.key, snapshotOf(r.snapshot));
      if (v === undefined) return [undefined, []];
      const copy = v.bytes.slice();
      countCopied(copy.length);
      return [copy, [copy.buffer]];
    }
    case 'multiGet': {
      using result = opened().multiGet(r.keys, snapshotOf(r.snapshot));
      const lens = new Int32Array(result.length);
      let total = 0;
      for (let i = 0; i < result.length; i++) {
        const v = result.get(i);
        lens[i] = v === undefined ? -1 : v.length;
        total += v?.length ?? 0;
      }
      const bytes = new Uint8Array(total); // one copy for the page, transferred
      countCopied(total);
      let at = 0;
      for (let i = 0; i < result.length; i++) {
        const v = result.get(i);
        if (v === undefined) continue;
        bytes.set(v, at);
        at += v.length;
      }
      const packed: PackedValues = { bytes, lens };
      return [packed, [bytes.buffer, lens.buffer]];
    }
    case 'snapshot': {
      const id = nextId++;
      snapshots.set(id, opened().snapshot());
      return [id, []];
    }
    case 'releaseSnapshot':
      snapshots.get(r.snapshot)?.release();
      snapshots.delete(r.snapshot);
      return [undefined, []];
    case 'iterator': {
      const id = nextId++;
      iterators.set(id, opened().iterator({ ...r.options, ...snapshotOf(r.snapshot) }));
      return [id, []];
    }
    case 'next': {
      const it = iterators.get(r.iterator);
      if (it === undefined) throw new SiltError('Released', 'this iterator was released');
      let batch: EntryBatch | undefined;
      try {
        batch = it.nextBatch();
      } catch (e) {
        it.release();
        iterators.delete(r.iterator);
        throw e;
      }
      if (batch === undefined) {
        it.release();
        iterators.delete(r.iterator);
        return [undefined, []];
      }
      // Both arrays are views of the iterator's batch memory (copied out of
      // wasm memory): transferred to the page, the iterator makes new memory.
      return [{ bytes: batch.bytes, offsets: batch.offsets }, [batch.bytes.buffer]];
    }
    case 'releaseIterator':
      iterators.get(r.iterator)?.release();
      iterators.delete(r.iterator);
      return [undefined, []];
    case 'flush':
      opened().flush();
      return [undefined, []];
    case 'idle':
      await opened().idle();
      return [undefined, []];
    case 'statistics':
      opened();
      await refreshStorageEstimate(); // a Promise API can afford a fresh estimate
      return [opened().statistics(), []];
    case 'verify':
      return [opened().verify(), []];
    case 'close':
      snapshots.clear();
      iterators.clear();
      if (db !== undefined) {
        const name = db.name;
        db.close();
        // The page terminates this worker next: parking its files would
        // only delay their release.
        releaseParked(name);
      }
      db = undefined;
      return [undefined, []];
  }
}

// Requests run one at a time, in order: an `open` that waits for the Web
// Lock holds back the requests sent after it.
let queue: Promise<void> = Promise.resolve();
scope.addEventListener('message', ({ data }) => {
  queue = queue.then(async () => {
    let response: Response;
    let transfer: Transferable[] = [];
    try {
      const [value, t] = await handle(data.request);
      response = { id: data.id, ok: true, value };
      transfer = t;
    } catch (e) {
      const err = e instanceof SiltError ? e : new SiltError('Internal', e instanceof Error ? e.message : String(e));
      response = { id: data.id, ok: false, error: { code: err.code, message: err.message } };
    }
    scope.postMessage(response, transfer);
  });
});
