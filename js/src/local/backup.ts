/**
 * Backups: a database (or a range of it) as one versioned byte stream, and
 * a new database built from one. The format is the engine's
 * (crates/engine/src/db/backup/, `docs/format.md`): a header, chunks of
 * sorted entries each with a CRC32C, and an end record with the count; the
 * native engine reads and writes the same bytes.
 */

import type { Database as WasmDatabase, Export as WasmExport } from '../../pkg/silt_wasm.js';
import { describe, foreignBytes } from '../core/bytes.js';
import { fromWasm, SiltError } from '../core/errors.js';

/** What an import read and wrote. */
export interface ImportReport {
  /**
   * From an export in the entries form, the keys imported; in the tables
   * form, the entries of its tables (overwritten versions and deletions
   * not yet compacted away count too: `count()` says how many keys).
   */
  entries: number;
  /** Table files written (the imported data goes straight into them). */
  tableFiles: number;
  tableBytes: number;
  /** Bytes of the stream read. */
  streamBytes: number;
}

/** What an import reads: a stream (a `fetch` body, `file.stream()`), a Blob or File, bytes, or an (async) iterable of byte chunks. */
export type ImportSource = ReadableStream<Uint8Array> | Blob | Uint8Array | ArrayBuffer | AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

const NOTHING = new Uint8Array(0);

/** Every byte of an import source, in one buffer. */
export async function bytesOf(source: ImportSource): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunksOf(source)) parts.push(chunk);
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  return bytes;
}

/** Bytes of stream per crossing out of wasm when exporting. */
export const EXPORT_PIECE = 256 * 1024;

/** The chunks of `source`, whatever form it has. */
export async function* chunksOf(source: ImportSource): AsyncGenerator<Uint8Array, void, undefined> {
  const bytes = source instanceof Uint8Array ? source : foreignBytes(source);
  if (bytes !== undefined) {
    yield bytes;
    return;
  }
  // (Brands, not instanceof, as for bytes: a source may come from another realm, an iframe's.)
  const brand = Object.prototype.toString.call(source);
  if (source instanceof ArrayBuffer || brand === '[object ArrayBuffer]') {
    yield new Uint8Array(source as ArrayBuffer);
    return;
  }
  if ((typeof Blob === 'function' && source instanceof Blob) || brand === '[object Blob]' || brand === '[object File]') {
    yield* chunksOf((source as Blob).stream() as ReadableStream<Uint8Array>);
    return;
  }
  if ((typeof ReadableStream === 'function' && source instanceof ReadableStream) || brand === '[object ReadableStream]') {
    const reader = (source as ReadableStream<Uint8Array>).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield checked(value);
      }
    } finally {
      reader.releaseLock();
    }
  }
  if (typeof source === 'object' && source !== null && (Symbol.asyncIterator in source || Symbol.iterator in source)) {
    for await (const c of source as AsyncIterable<Uint8Array>) yield checked(c);
    return;
  }
  throw new SiltError('InvalidArgument', `an import reads a ReadableStream, a Blob, bytes or an iterable of Uint8Array chunks, got ${describe(source)}`);
}

function checked(c: unknown): Uint8Array {
  if (c instanceof Uint8Array) return c;
  const foreign = foreignBytes(c); // a chunk made in another realm
  if (foreign !== undefined) return foreign;
  throw new SiltError('InvalidArgument', `an import stream must yield Uint8Array chunks, got ${describe(c)}`);
}

/**
 * A `ReadableStream` of an export's bytes, pulled from `exp` piece by
 * piece; `onEnd` runs once it is done, failed or cancelled.
 */
export function exportStream(exp: WasmExport, onEnd: () => void): ReadableStream<Uint8Array> {
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    exp.release();
    exp.free();
    onEnd();
  };
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        let piece: Uint8Array | undefined;
        try {
          piece = exp.next(EXPORT_PIECE);
        } catch (e) {
          end();
          controller.error(fromWasm(e));
          return;
        }
        if (piece === undefined) {
          end();
          controller.close();
        } else {
          controller.enqueue(piece);
        }
      },
      cancel() {
        end();
      },
    },
    { highWaterMark: 1 },
  );
}

/**
 * Runs an import of `source` into `inner` (empty): each chunk is pushed
 * once `ready()` says the pool has the files a table needs; a failure at
 * any point leaves nothing of the import (the engine deletes what it
 * wrote).
 */
export async function importInto(inner: WasmDatabase, source: ImportSource, ready: () => Promise<void> | undefined): Promise<ImportReport> {
  try {
    inner.importStart();
  } catch (e) {
    throw fromWasm(e);
  }
  let pushing = true;
  try {
    for await (const chunk of chunksOf(source)) {
      await ready();
      // A piece may hold more tables than the pool has free files: the
      // engine stops before a table, keeps the rest, and is pushed again
      // once the pool is topped up.
      for (let piece = chunk; inner.importPush(piece); piece = NOTHING) {
        const topped = ready();
        if (topped === undefined) throw new SiltError('PoolExhausted', 'the import needs more free files than this database can add');
        await topped;
      }
    }
    pushing = false;
    await ready();
    return inner.importFinish() as ImportReport;
  } catch (e) {
    // A failed push or finish ended the import already; a failed stream
    // (or a closed database) ends it here.
    if (pushing) {
      try {
        inner.importAbort();
      } catch {
        // Closed: nothing of it is visible either way.
      }
    }
    // The engine's errors carry a string code; the source's own (a failed
    // fetch, a cancelled stream) are thrown as they are.
    throw typeof (e as { code?: unknown } | null)?.code === 'string' ? fromWasm(e) : e;
  }
}
