/**
 * The contract with the wasm module, read from it once instead of kept in a
 * copy here (crates/wasm/src/contract.rs): the exchange buffer's offsets,
 * the bits `backgroundWork` returns, the pooled files each kind of call
 * needs free, the names of error codes and recoveries, and the fields of
 * the reports its calls return. The names are also in this package's types
 * (errors.ts; `RECOVERIES` below; `REPORT_FIELDS` in report-fields.ts,
 * checked against the report interfaces by the compiler); js/test/contract.test.ts
 * fails when the two differ.
 */

import { contract as contractJson } from '../../pkg/silt_wasm.js';

/** What a failed step of background work means (the engine's `Recovery`). */
export const RECOVERIES = ['retryLater', 'failAlone', 'stopWrites'] as const;
export type Recovery = (typeof RECOVERIES)[number];

export interface Contract {
  /** Byte offsets in the exchange buffer (crates/wasm/src/exchange.rs). */
  exchange: { releases: number; out0: number; out1: number; handles: number; releaseSlots: number; request: number; absent: number };
  /** `backgroundWork` result bits. */
  work: { didWork: number; workLeft: number; waitingForPool: number };
  /** Free pooled files a write, a step of background work and an open need. */
  poolNeeds: { write: number; background: number; open: number };
  /** Every code an error thrown by the module can have. */
  errorCodes: string[];
  /** Every recovery a failed step of background work can carry. */
  recoveries: string[];
  /** The fields of each report the module builds, by report, as `FieldName` (report-fields.ts) writes them. */
  reports: Record<string, string[]>;
}

let loaded: Contract | undefined;

/** The module's contract. REQUIRES: the module is loaded. */
export function contract(): Contract {
  loaded ??= JSON.parse(contractJson()) as Contract;
  return loaded;
}
