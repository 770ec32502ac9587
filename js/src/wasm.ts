/**
 * Loading the WebAssembly module, once per JavaScript realm.
 *
 * In a browser (page or worker) the generated glue fetches the `.wasm` next
 * to itself (`new URL('silt_wasm_bg.wasm', import.meta.url)`), which bundlers
 * also understand. Node has no `fetch` for `file:` URLs, so there the bytes
 * are read from disk.
 */

import init from '../pkg/silt_wasm.js';
import { SiltError } from './errors.js';

let ready: Promise<void> | undefined;

/** Resolves once the module is instantiated. Safe to call many times. */
export function loadWasm(): Promise<void> {
  ready ??= instantiate().catch((cause: unknown) => {
    ready = undefined; // a later call may retry (e.g. after a network error)
    const detail = cause instanceof Error ? cause.message : String(cause);
    throw new SiltError('InitFailed', `could not load the siltdb WebAssembly module: ${detail}`, { cause });
  });
  return ready;
}

async function instantiate(): Promise<void> {
  if (isNode()) {
    const wasmUrl = new URL('../pkg/silt_wasm_bg.wasm', import.meta.url);
    // A non-literal specifier, so that bundlers building for the browser do
    // not try to resolve a Node built-in they will never need.
    const fsModule: string = 'node:fs/promises';
    const { readFile } = (await import(/* @vite-ignore */ fsModule)) as {
      readFile(path: URL): Promise<Uint8Array>;
    };
    await init({ module_or_path: await readFile(wasmUrl) });
  } else {
    await init(); // the glue's own `new URL('silt_wasm_bg.wasm', import.meta.url)`
  }
}

function isNode(): boolean {
  const proc = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof proc?.versions?.node === 'string';
}
