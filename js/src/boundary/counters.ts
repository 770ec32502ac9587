/**
 * Counters of what crosses the boundary between JavaScript and wasm: how
 * many times JavaScript called into wasm (per export), how many times wasm
 * called out to JavaScript (per import), and how many bytes were copied
 * out of wasm memory into JavaScript-owned memory (returned byte arrays,
 * strings, and siltdb's own `copy()` / `text()` / `get`).
 *
 * The counts are taken where the crossings happen: the generated glue calls
 * wasm's exports through the wrappers installed here, and counts each copy
 * it makes (scripts/patch-glue.mjs). They are what a test asserts to prove
 * that a read is one crossing and copies no value bytes, and they would move
 * if a change added a crossing or a copy.
 *
 * Copied bytes are always counted (an addition per copy). Calls are counted
 * only after `enableBoundaryCounters()`, which must run before the module is
 * loaded, because wrapping every export costs a little on every call.
 */

import { __siltInstrument } from '../../pkg/silt_wasm.js';
import { SiltError } from '../core/errors.js';
import { isLoaded } from './wasm.js';

/** What `boundaryCounters()` returns. */
export interface BoundaryCounters {
  /** Whether calls are being counted (`enableBoundaryCounters()`). */
  enabled: boolean;
  /** Calls from JavaScript into wasm exports, in all. */
  calls: number;
  /** Calls from wasm into JavaScript imports, in all. */
  callbacks: number;
  /** Calls per export / import name (only names called at least once). */
  byName: Record<string, number>;
  /** Bytes copied out of wasm memory into JavaScript memory. */
  copiedBytes: number;
}

let enabled = false;
let calls = 0;
let callbacks = 0;
const byName = new Map<string, number>();

function counted<F extends (...args: never[]) => unknown>(name: string, f: F, kind: 'call' | 'callback'): F {
  return function (this: unknown, ...args: Parameters<F>) {
    if (kind === 'call') calls++;
    else callbacks++;
    byName.set(name, (byName.get(name) ?? 0) + 1);
    return f.apply(this, args);
  } as F;
}

/**
 * Starts counting calls across the boundary. Call it before anything opens
 * a database (before the WebAssembly module loads); afterwards it throws
 * `InvalidArgument`. Meant for tests and diagnostics: it makes every call
 * into wasm a little slower.
 */
export function enableBoundaryCounters(): void {
  if (enabled) return;
  if (isLoaded()) {
    throw new SiltError('InvalidArgument', 'enableBoundaryCounters() must be called before the WebAssembly module loads');
  }
  enabled = true;
  __siltInstrument.wrapExports = (exports) => {
    const out: Record<string, unknown> = {};
    for (const [name, v] of Object.entries(exports)) {
      out[name] = typeof v === 'function' ? counted(name, v as (...a: never[]) => unknown, 'call') : v;
    }
    return out;
  };
  __siltInstrument.wrapImports = (imports) => {
    const out: Record<string, Record<string, unknown>> = {};
    for (const [module, fns] of Object.entries(imports)) {
      const wrapped: Record<string, unknown> = {};
      for (const [name, v] of Object.entries(fns)) {
        wrapped[name] = typeof v === 'function' ? counted(name, v as (...a: never[]) => unknown, 'callback') : v;
      }
      out[module] = wrapped;
    }
    return out;
  };
}

/** The counts so far (since the module loaded). */
export function boundaryCounters(): BoundaryCounters {
  return {
    enabled,
    calls,
    callbacks,
    byName: Object.fromEntries(byName),
    copiedBytes: __siltInstrument.copiedBytes,
  };
}

/** @internal siltdb's own copies out of wasm memory (views it copies). */
export function countCopied(bytes: number): void {
  __siltInstrument.copiedBytes += bytes;
}
