/**
 * The one error type of `siltdb`.
 *
 * Every failure the package reports, whether caught at the boundary (wrong
 * argument types, lone surrogates in a string key) or reported by the engine
 * (a corrupt file, a closed database), is a `SiltError` whose `code` is a
 * stable name to branch on. Messages are for people and may change.
 */

/** Codes the engine reports (`silt_engine::Error::code`). */
export type EngineErrorCode =
  | 'InvalidArgument'
  | 'Corruption'
  | 'ChecksumMismatch'
  | 'IoError'
  | 'QuotaExceeded'
  | 'Busy'
  | 'Closed'
  | 'NotSupported';

/**
 * Codes of `SiltError`: the engine's, plus the binding's and the package's.
 * - `PoolExhausted`: creating a file needs a free pooled OPFS file and none
 *   is left. siltdb tops the pool up between calls; a tight synchronous
 *   loop of writes can outrun it. Await something and retry, or open with
 *   a larger `poolReserve`.
 * - `Released`: a result, snapshot or iterator was used after `release()`.
 * - `DatabaseLocked`: another tab or worker has the database open (its Web
 *   Lock is held); pass `wait: true` to wait for it instead.
 * - `InitFailed`: the WebAssembly module could not be fetched, compiled or
 *   instantiated (for example, a browser without SIMD128).
 * - `Internal`: the engine trapped (a bug), or the worker behind a
 *   connection died; the module should not be used any further.
 */
export type SiltErrorCode =
  | EngineErrorCode
  | 'PoolExhausted'
  | 'Released'
  | 'DatabaseLocked'
  | 'InitFailed'
  | 'Internal';

export class SiltError extends Error {
  readonly code: SiltErrorCode;

  constructor(code: SiltErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SiltError';
    this.code = code;
  }
}

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
      // The engine's enum is non-exhaustive: a newer code passes through as is.
      return new SiltError(code as SiltErrorCode, thrown.message, { cause: thrown });
    }
    return new SiltError('Internal', `engine failure: ${thrown.message}`, { cause: thrown });
  }
  return new SiltError('Internal', `engine failure: ${String(thrown)}`, { cause: thrown });
}
