/**
 * The one error type of `siltdb`.
 *
 * Every failure the package reports, whether caught at the boundary (wrong
 * argument types, lone surrogates in a string key) or reported by the engine
 * (a corrupt file, a closed database), is a `SiltError` whose `code` is a
 * stable name to branch on. Messages are for people and may change.
 */

/**
 * Codes the engine reports (`silt_engine::Error::CODES`). A test
 * (js/test/contract.test.ts) checks this list against the wasm module's
 * `contract()`, so it cannot drift from the engine's.
 * - `PoolExhausted`: creating a file needs a free pooled OPFS file and none
 *   is left. siltdb tops the pool up between calls, and writes that find no
 *   file wait in memory (up to 8 memtables' worth) rather than fail: a
 *   write gets this code only in a synchronous burst that writes past that
 *   without an `await`, or once the pool cannot grow (storage refused, or
 *   the origin's `handleBudget` of open OPFS handles is used up: the
 *   message says which); `flush()`, `compactRange()`, `import()` and
 *   `open()` get it when too few files are free to start, and `open()`
 *   when the budget has no handle left for the database's files. Nothing
 *   was written: await something and retry, open with a larger
 *   `poolReserve`, or close databases (or raise `handleBudget`).
 * - `NotFound`: `open()` with `createIfMissing: false` of a database that
 *   does not exist.
 * - `AlreadyExists`: `open()` with `errorIfExists: true` of a database that
 *   exists.
 */
export const ENGINE_ERROR_CODES = [
  'Corruption',
  'ChecksumMismatch',
  'IoError',
  'QuotaExceeded',
  'PoolExhausted',
  'InvalidArgument',
  'Busy',
  'Closed',
  'NotSupported',
  'NotFound',
  'AlreadyExists',
] as const;

/**
 * Codes the binding reports besides the engine's (crates/wasm/src/error.rs;
 * checked like the engine's).
 * - `Released`: a result, snapshot, iterator or transaction was used after
 *   `release()`, commit or abort.
 * - `Conflict`: a transaction's commit found that a key or range it read
 *   for update or wrote was written by someone else after it began;
 *   nothing was written. `db.transaction(fn)` runs `fn` again on a
 *   conflict, up to its `retries`, then throws this.
 */
export const BINDING_ERROR_CODES = ['Released', 'Conflict'] as const;

/**
 * Codes only this package reports.
 * - `DatabaseLocked`: another tab or worker has the database open (its Web
 *   Lock is held); pass `wait: true` to wait for it instead.
 * - `InitFailed`: the WebAssembly module could not be fetched, compiled or
 *   instantiated (for example, a browser without SIMD128).
 * - `Internal`: the engine trapped (a bug), or the worker behind a
 *   connection died; the module should not be used any further.
 * - `LeaderChanged`: a snapshot, iterator, transaction, export or import of
 *   a `connect()` connection lived in the tab that led, and that tab went
 *   (closed, reloaded, crashed); take a new one. Writes and plain reads
 *   are retried on the new leader instead, and a write fails this way only
 *   when it cannot be known whether it was applied: a transaction's commit
 *   from the old leader, a write past what its connection's record still
 *   holds, or an import's finish (the message says how to check).
 * - `VersionMismatch`: another tab of the site runs another version of
 *   siltdb (it was loaded before the site was updated, or after) and the
 *   two cannot share a `connect()` database; the message says which tab
 *   to reload.
 */
export const PACKAGE_ERROR_CODES = ['DatabaseLocked', 'InitFailed', 'Internal', 'LeaderChanged', 'VersionMismatch'] as const;

/** Every code a `SiltError` can have. */
export const SILT_ERROR_CODES: readonly SiltErrorCode[] = [...ENGINE_ERROR_CODES, ...BINDING_ERROR_CODES, ...PACKAGE_ERROR_CODES];

/** Codes the engine reports. */
export type EngineErrorCode = (typeof ENGINE_ERROR_CODES)[number];

/** Codes of `SiltError`: the engine's, the binding's and the package's (see the lists above). */
export type SiltErrorCode = EngineErrorCode | (typeof BINDING_ERROR_CODES)[number] | (typeof PACKAGE_ERROR_CODES)[number];

export class SiltError extends Error {
  readonly code: SiltErrorCode;

  constructor(code: SiltErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SiltError';
    this.code = code;
  }
}

/**
 * The next step of an engine error whose message (the engine's, about its
 * files) has none: appended by `fromWasm` unless the message already
 * names one (`HAS_STEP`). Damage is told apart by where it was found: a
 * backup being imported (the engine's "export stream") is the input's,
 * not the database's; merge operands the operator cannot combine mean
 * the database was opened with another operator than it was written with.
 */
function nextStep(code: SiltErrorCode, message: string): string | undefined {
  switch (code) {
    case 'Corruption':
    case 'ChecksumMismatch':
      if (/^(corruption|checksum mismatch) in export stream\b/.test(message)) {
        return 'the backup is damaged, cut short or not a siltdb export: nothing of it was imported; export it again from its source';
      }
      if (/^corruption in merge operator\b/.test(message)) {
        return 'the merge operands of this key do not fit the mergeOperator: open the database with the mergeOperator it was written with';
      }
      return 'the database is damaged: repairDatabase() rebuilds it from its intact parts (export() what still reads first)';
    case 'IoError':
      return "the browser refused a file operation: close the database and open it again (or reload the page); if it goes on, check the site's storage in the browser's settings";
    case 'QuotaExceeded':
      return "the site's storage is full: delete data (then compactRange()), remove databases no longer needed (removeDatabase()), or ask the browser to keep more (persist())";
    case 'Closed':
      return 'open it again to go on';
    case 'Conflict':
      return 'nothing of the transaction was written: run it again (db.transaction(fn) and db.update() retry for you)';
    default:
      return undefined;
  }
}
const HAS_STEP = /repairDatabase|compactRange|open it again|reopen|maxBytes|poolReserve|handleBudget|persist\(\)/;

/** `message` with the next step of `code` where it has none. */
function withNextStep(code: SiltErrorCode, message: string): string {
  const step = nextStep(code, message);
  return step === undefined || HAS_STEP.test(message) ? message : `${message}; ${step}`;
}

/** What an `Internal` error of the engine tells the user to do. */
const REPORT = ' (a bug in siltdb: close the database and open it again, or reload the page; please report this message)';

/**
 * Turns anything the generated bindings threw into a `SiltError`, keeping
 * the engine's code and message. The bindings throw an `Error` with a string
 * `code` for engine errors (crates/wasm/src/error.rs); anything else is a
 * trap or a bug in the glue.
 */
export function fromWasm(thrown: unknown): SiltError {
  if (thrown instanceof SiltError) return thrown;
  if (thrown instanceof Error) {
    const code = (thrown as Error & { code?: unknown }).code;
    if (typeof code === 'string') {
      // Every code the module throws is in SILT_ERROR_CODES (the contract
      // test checks it); anything else is a bug in the glue.
      if (!(SILT_ERROR_CODES as readonly string[]).includes(code)) {
        return new SiltError('Internal', `engine failure with an unknown code ${code}: ${thrown.message}${REPORT}`, { cause: thrown });
      }
      return new SiltError(code as SiltErrorCode, withNextStep(code as SiltErrorCode, thrown.message), { cause: thrown });
    }
    return new SiltError('Internal', `engine failure: ${thrown.message}${REPORT}`, { cause: thrown });
  }
  return new SiltError('Internal', `engine failure: ${String(thrown)}${REPORT}`, { cause: thrown });
}

/**
 * An error of the browser's storage (a DOMException from OPFS or
 * IndexedDB) as a SiltError: `QuotaExceeded` for a full quota, else
 * `IoError`, saying during `what`; a SiltError as it is.
 */
export function storageError(what: string, e: unknown): SiltError {
  if (e instanceof SiltError) return e;
  const name = (e as { name?: unknown } | null)?.name;
  const detail =
    e instanceof Error || (typeof e === 'object' && e !== null && 'message' in e) ? `${String(name)}: ${(e as { message: unknown }).message}` : String(e);
  return new SiltError(name === 'QuotaExceededError' ? 'QuotaExceeded' : 'IoError', `${what}: ${detail}`, { cause: e });
}
