/**
 * A worker's `ingest` (Database.ingest): the entries encoded as a batch of
 * puts, the pooled files its tables need got first, then the engine writes
 * them as new table files added in one step.
 */

import { reserveMemory } from '../../pkg/silt_wasm.js';
import { ingestBatch, ingestSorted, type IngestOptions, type IngestReport, type WriteBatch } from '../core/batch.js';
import { changes } from './change-feed.js';
import type { Core } from './core.js';

/** Ingests `entries` into `core`'s database; `newBatch` makes a batch in the caller's keys and encodings. */
export async function ingestInto<K, V>(
  core: Core,
  entries: WriteBatch<K, V> | Iterable<readonly [K, V]>,
  options: IngestOptions | undefined,
  newBatch: () => WriteBatch<K, V>,
): Promise<IngestReport> {
  const sorted = ingestSorted(options);
  const batch = ingestBatch(entries, newBatch);
  // The caller's own batch is copied: it may change while this waits
  // for pooled files.
  const encoded = batch === entries ? batch.encoded().slice() : batch.encoded();
  // The tables it writes need free pooled files, which only appear
  // between calls: get them first.
  const keeper = core.keeper;
  if (keeper)
    await keeper.topUp(
      Math.max(
        keeper.target,
        core.call(() => core.inner.ingestFilesNeeded(encoded.length)),
      ),
    );
  // Its allocations in one growth of wasm memory: a copy of the batch,
  // and a few words per entry to sort and build tables with.
  reserveMemory(encoded.length + batch.length * 128);
  return core.write(
    () => core.inner.ingest(encoded, sorted),
    () => changes.ingest(encoded),
  ) as IngestReport;
}
