/**
 * The fields of each report the wasm module builds (crates/wasm/src/
 * contract.rs), as this package's interfaces declare them: the compiler
 * checks each list against its interface (`fieldsOf`), and
 * js/test/contract.test.ts checks the lists against the module's
 * `contract().reports`. A file of its own: it names the interfaces of
 * several rooms, which the contract itself (contract.ts, read when the
 * module loads) must not import.
 */

import type { IngestReport } from '../core/batch.js';
import type { ImportReport } from '../local/backup.js';
import type { RepairReport } from '../local/repair.js';
import type { RocksdbIngestReport } from '../local/rocksdb.js';
import type { ModuleStatistics, Statistics, VerifyReport } from '../local/statistics.js';

/** The keys of `T` that an object of type `T` may lack. */
type OptionalKeys<T> = { [K in keyof T]-?: Record<never, never> extends Pick<T, K> ? K : never }[keyof T];

/** How the contract writes a field of `T`: `name`, or `name?` when an object may lack it. */
export type FieldName<T> = (Exclude<keyof T, OptionalKeys<T>> & string) | `${OptionalKeys<T> & string}?`;

/**
 * `fieldsOf<T>()(fields)` is `fields`, when it lists every field of `T` as
 * `FieldName<T>` writes it, and nothing else: a field of `T` left out (its
 * name in `missing` in the error), a name `T` lacks, or a `?` that does not
 * match the interface fails to compile.
 */
export function fieldsOf<T>() {
  return <const F extends readonly FieldName<T>[]>(
    fields: F & ([Exclude<FieldName<T>, F[number]>] extends [never] ? unknown : { missing: Exclude<FieldName<T>, F[number]> }),
  ): F => fields;
}

/**
 * The fields of each report the module builds, by the name `contract()`
 * gives it, as this package's interfaces declare them: the compiler checks
 * each list against its interface (`fieldsOf`), js/test/contract.test.ts
 * against the module's `reports` (crates/wasm/src/contract.rs).
 */
export const REPORT_FIELDS = {
  ingest: fieldsOf<IngestReport>()(['keys', 'files', 'bytes', 'level', 'sequence', 'flushedMemtables']),
  verify: fieldsOf<VerifyReport>()(['tables', 'entries', 'tableBytes']),
  import: fieldsOf<ImportReport>()(['entries', 'tableFiles', 'tableBytes', 'streamBytes']),
  rocksdbIngest: fieldsOf<RocksdbIngestReport>()(['keys', 'tables']),
  repair: fieldsOf<RepairReport>()([
    'tablesIntact',
    'tablesDamaged',
    'tablesLost',
    'blocksLost',
    'walRecords',
    'walsDamaged',
    'entries',
    'rangeDeletions',
    'problems',
  ]),
  statistics: fieldsOf<ModuleStatistics>()(['properties', 'tickers', 'histograms', 'pinnedResults', 'pool?']),
  pool: fieldsOf<NonNullable<Statistics['pool']>>()(['files', 'free', 'removedOpen', 'dataBytes', 'exhausted', 'bytes', 'maxBytes?', 'reserveBytes?', 'paths']),
  histogram: fieldsOf<Statistics['histograms'][string]>()(['count', 'sum', 'min', 'max', 'p50', 'p95', 'p99']),
};

/** A report the module builds, by the name `contract()` gives it. */
export type ReportName = keyof typeof REPORT_FIELDS;
