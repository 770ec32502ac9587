/**
 * RocksDB table files into a database (`Database.ingestRocksdb`, and
 * `importDatabase(..., { format: 'rocksdb' })`): a tar archive of tables
 * (as `export({ form: 'rocksdb' })` writes it, or `tar --format=ustar` of
 * what RocksDB's `SstFileWriter` wrote) or one bare table, read from any
 * import source. The engine reads each table whole and verifies every
 * block's checksum before anything is written, then writes all of it in
 * one step (crates/engine/src/db/backup/rocksdb_ingest.rs).
 */

import type { Database as WasmDatabase } from '../../pkg/silt_wasm.js';
import { fromWasm, SiltError } from '../core/errors.js';
import { chunksOf, type ImportSource } from './backup.js';
import type { Core } from './core.js';

/** What an ingest of RocksDB tables wrote. */
export interface RocksdbIngestReport {
  /** Distinct keys written. */
  keys: number;
  /** Tables read. */
  tables: number;
}

/**
 * Ingests the RocksDB tables of `source` into `inner`. `topUp(files)`
 * makes that many pooled files free (the tables the ingest writes), or is
 * undefined where there is no pool.
 */
export async function ingestRocksdbInto(
  inner: WasmDatabase,
  source: ImportSource,
  topUp: (files: number) => Promise<void> | undefined,
): Promise<RocksdbIngestReport> {
  try {
    inner.rocksdbIngestStart();
  } catch (e) {
    throw fromWasm(e);
  }
  let pending = true;
  try {
    for await (const chunk of chunksOf(source)) inner.rocksdbIngestPush(chunk);
    await topUp(inner.rocksdbIngestFilesNeeded());
    pending = false;
    return inner.rocksdbIngestFinish() as RocksdbIngestReport;
  } catch (e) {
    // A failed push or finish ended the ingest already; a failed source
    // (or a closed database) ends it here. Nothing was written either way.
    if (pending) {
      try {
        inner.rocksdbIngestAbort();
      } catch {
        // Closed.
      }
    }
    throw typeof (e as { code?: unknown } | null)?.code === 'string' ? fromWasm(e) : e;
  }
}

/** `ingestRocksdb` on a sublevel, refused in both APIs: the tables' keys go as they are. */
export function onSublevel(): SiltError {
  return new SiltError('InvalidArgument', "ingestRocksdb() writes the tables' keys as they are: call it on the database, not a sublevel");
}

/** `Database.ingestRocksdb` of a handle whose keys have `prefix` (refused unless empty). */
export async function ingestRocksdbOn(core: Core, prefix: Uint8Array, source: ImportSource): Promise<RocksdbIngestReport> {
  if (prefix.length > 0) throw onSublevel();
  const keeper = core.keeper;
  const report = await ingestRocksdbInto(core.inner, source, (n) => keeper?.topUp(Math.max(keeper.target, n)));
  core.feed?.wrote(undefined); // its keys are not listed: a gap
  core.afterWrite();
  return report;
}
