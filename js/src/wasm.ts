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

import init from '../pkg/silt_wasm.js';
import { SiltError } from './errors.js';

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
  if (ready !== undefined) {
    throw new SiltError('InvalidArgument', 'configureMemory() must be called before the WebAssembly module loads');
  }
  preferResizable = options.resizable;
}

/** Whether loading the module has started (or finished). */
export function isLoaded(): boolean {
  return ready !== undefined;
}

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
  let exports: { memory: WebAssembly.Memory };
  if (isNode()) {
    const wasmUrl = new URL('../pkg/silt_wasm_bg.wasm', import.meta.url);
    // A non-literal specifier, so that bundlers building for the browser do
    // not try to resolve a Node built-in they will never need.
    const fsModule: string = 'node:fs/promises';
    const { readFile } = (await import(/* @vite-ignore */ fsModule)) as {
      readFile(path: URL): Promise<Uint8Array>;
    };
    exports = await init({ module_or_path: await readFile(wasmUrl) });
  } else {
    exports = await init(); // the glue's own `new URL('silt_wasm_bg.wasm', import.meta.url)`
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

function isNode(): boolean {
  const proc = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof proc?.versions?.node === 'string';
}
