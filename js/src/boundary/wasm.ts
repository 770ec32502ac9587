/**
 * Loading the WebAssembly module, once per JavaScript realm, and reading
 * its linear memory.
 *
 * In a browser (page or worker) the generated glue fetches the `.wasm` next
 * to itself (`new URL('silt_wasm_bg.wasm', import.meta.url)`), which bundlers
 * also understand. Node has no `fetch` for `file:` URLs, so there the bytes
 * are read from disk.
 *
 * Memory growth: growing a WebAssembly memory detaches its old
 * `ArrayBuffer`, and with it every `Uint8Array` view of it. By default
 * (`memoryMode() === 'fixed'`) views die on growth: a detached view reads as
 * empty, never as other bytes, and result objects hand out fresh views of
 * the current buffer on each access (`result.get(i)`, `value.bytes`), so
 * take the view when you read it rather than keeping it across other calls.
 *
 * `configureMemory({ resizable: true })` (where the engine has
 * `WebAssembly.Memory.prototype.toResizableBuffer`) switches the memory to a
 * resizable buffer once, right after loading: growth then resizes that one
 * buffer in place and views stay valid (`'resizable'`). It is not the
 * default because reading a view of a resizable buffer is slow: summing the
 * 100 bytes of a value took 0.53 µs against 0.11 µs for a fixed buffer in
 * Chromium 156 (docs/bench/browser.md), and OPFS refuses such views, so
 * every file read and write then goes through a bounce buffer.
 */

import init from '../../pkg/silt_wasm.js';
import { SiltError } from '../core/errors.js';
import { checkOptionNames, optionNames } from '../core/option-names.js';

/** How views of wasm memory behave when it grows (see the module doc). */
export type MemoryMode = 'resizable' | 'fixed';

let ready: Promise<void> | undefined;
let memory: WebAssembly.Memory | undefined;
let mode: MemoryMode = 'fixed';
let preferResizable = false;

/**
 * Chooses, before the module loads, whether to use a resizable buffer when
 * the engine offers one (default: no, see the module doc). Views then stay
 * valid across memory growth, at a cost on every read of them; the tests
 * use it to check both.
 */
export function configureMemory(options: { resizable: boolean }): void {
  checkOptionNames(options, MEMORY_OPTIONS, 'configureMemory()');
  if (typeof options?.resizable !== 'boolean') throw new SiltError('InvalidArgument', 'configureMemory() takes { resizable: true } or { resizable: false }');
  if (ready !== undefined) {
    throw new SiltError('InvalidArgument', 'configureMemory() must be called before the WebAssembly module loads');
  }
  preferResizable = options.resizable;
}

/** The names of `configureMemory`'s options. */
const MEMORY_OPTIONS = optionNames<{ resizable: boolean }>({ resizable: true });

/** Whether loading the module has started (or finished). */
export function isLoaded(): boolean {
  return ready !== undefined;
}

/** @internal The error of a module that would not load (`detail`: why), and what to do. */
export function initFailed(detail: string, cause?: unknown): SiltError {
  return new SiltError(
    'InitFailed',
    `could not load the siltdb WebAssembly module: ${detail}: serve siltdb's silt_wasm_bg.wasm beside its JavaScript (with esbuild, siltdb/esbuild copies it), then call again`,
    { cause },
  );
}

let given: WebAssembly.Module | undefined;

/**
 * The module compiled elsewhere (by the page that started this worker:
 * tabs/worker-start.ts), which `loadWasm` instantiates instead of fetching
 * and compiling its own. Only before loading starts.
 */
export function provideModule(module: WebAssembly.Module): void {
  if (ready === undefined) given = module;
}

/** Resolves once the module is instantiated. Safe to call many times. */
export function loadWasm(): Promise<void> {
  ready ??= instantiate().catch((cause: unknown) => {
    ready = undefined; // a later call may retry (e.g. after a network error)
    const detail = cause instanceof Error ? cause.message : String(cause);
    if (!hasSimd128()) {
      throw new SiltError(
        'NotSupported',
        `siltdb needs WebAssembly SIMD128 (fixed-width SIMD), which this browser lacks: use Chrome or Edge 91+, Firefox 89+ or Safari 16.4+ (${detail})`,
        { cause },
      );
    }
    throw initFailed(detail, cause);
  });
  return ready;
}

/**
 * The smallest module that uses SIMD128: one function returning a
 * `v128.const`. Validated only after loading failed, to tell a browser
 * without SIMD from a network or bundling failure.
 */
const SIMD_PROBE = new Uint8Array([
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00, // magic, version 1
  0x01,
  0x05,
  0x01,
  0x60,
  0x00,
  0x01,
  0x7b, // types: () -> v128
  0x03,
  0x02,
  0x01,
  0x00, // functions: one of type 0
  0x0a,
  0x16,
  0x01,
  0x14,
  0x00,
  0xfd,
  0x0c,
  ...new Array<number>(16).fill(0),
  0x0b, // code: v128.const 0, end
]);

function hasSimd128(): boolean {
  try {
    return WebAssembly.validate(SIMD_PROBE);
  } catch {
    return false;
  }
}

async function instantiate(): Promise<void> {
  let exports: { memory: WebAssembly.Memory };
  if (isNode()) {
    const wasmUrl = new URL('../../pkg/silt_wasm_bg.wasm', import.meta.url);
    // Not an import, which bundlers building for the browser would try to
    // resolve (and warn about) though the browser never takes this path.
    const { readFile } = nodeBuiltin<{ readFile(path: URL): Promise<Uint8Array> }>('node:fs/promises');
    exports = await init({ module_or_path: await readFile(wasmUrl) });
  } else {
    // The module given, else the glue's own `new URL('silt_wasm_bg.wasm', import.meta.url)`.
    exports = given !== undefined ? await init({ module_or_path: given }).catch(() => init()) : await init();
  }
  memory = exports.memory;
  const resizable = (memory as WebAssembly.Memory & { toResizableBuffer?: () => ArrayBuffer }).toResizableBuffer;
  if (preferResizable && typeof resizable === 'function') {
    try {
      resizable.call(memory);
      mode = 'resizable';
    } catch {
      // A memory without a declared maximum cannot be resizable (the build
      // declares one, see scripts/build.sh); views then stay 'fixed'.
    }
  }
}

let buffer: ArrayBuffer | undefined;

/** The buffer of wasm memory right now. REQUIRES: the module is loaded. */
export function memoryBuffer(): ArrayBuffer {
  // The `buffer` getter costs more than a view of it: keep it until growth
  // detaches it (a fixed buffer then reads 0 bytes long; a resizable one is
  // never replaced).
  if (buffer !== undefined && buffer.byteLength !== 0) return buffer;
  if (memory === undefined) throw new SiltError('Internal', 'the WebAssembly module is not loaded');
  buffer = memory.buffer;
  return buffer;
}

let words: Uint32Array | undefined;
let bytesView: Uint8Array | undefined;

/**
 * All of wasm memory as bytes, for copying values out without making a
 * view per value (made again when growth replaced the buffer). REQUIRES:
 * the module is loaded.
 */
export function memoryBytesView(): Uint8Array {
  const buffer = memoryBuffer();
  if (bytesView === undefined || bytesView.buffer !== buffer) bytesView = new Uint8Array(buffer);
  return bytesView;
}

/**
 * All of wasm memory as `u32`s, for reading layouts without making a view
 * per result. With a resizable buffer the array tracks growth; otherwise it
 * is made again when growth replaced the buffer. REQUIRES: the module is
 * loaded.
 */
export function memoryWords(): Uint32Array {
  const buffer = memoryBuffer();
  if (words === undefined || words.buffer !== buffer) words = new Uint32Array(buffer);
  return words;
}

/**
 * Whether `buffer` is wasm memory (a view of it is a pinned value handed
 * out by `get` / `multiGet`). Such a view must be copied before it is given
 * back to wasm: the call may grow memory, which in `'fixed'` mode detaches
 * the view before its bytes are read.
 */
export function isWasmMemory(buffer: ArrayBufferLike): boolean {
  return memory !== undefined && buffer === memoryBuffer();
}

/** How views behave on growth; `'fixed'` until the module has loaded. */
export function memoryMode(): MemoryMode {
  return mode;
}

/** The size of wasm memory in bytes (0 before the module loads). */
export function memoryBytes(): number {
  return memory?.buffer.byteLength ?? 0;
}

/** A Node built-in module, without an import (Node 20.16+). */
function nodeBuiltin<T>(name: string): T {
  const proc = (globalThis as { process?: { getBuiltinModule?: (name: string) => unknown } }).process;
  const module = proc?.getBuiltinModule?.(name);
  if (module === undefined) throw new Error(`this Node has no process.getBuiltinModule('${name}'): siltdb needs Node 20.19 or later`);
  return module as T;
}

function isNode(): boolean {
  const proc = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof proc?.versions?.node === 'string';
}
