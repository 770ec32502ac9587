// Loading the module fails with a code that says why: NotSupported naming
// SIMD128 in an engine without it, InitFailed for anything else (a network
// or bundling failure), and a later call may try again. The tests run in
// order: the module loads once per realm, so only the last one lets it.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadWasm } from '../src/boundary/wasm.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * Makes instantiating siltdb's module (the one whose imports are
 * wasm-bindgen's) fail with `error`, `times` times; Node's own fetch
 * instantiates a module of its own lazily, which must still work.
 */
function failSiltdbModule(error: Error, times = Number.POSITIVE_INFINITY) {
  const real = WebAssembly.instantiate.bind(WebAssembly) as (m: unknown, i?: WebAssembly.Imports) => Promise<unknown>;
  let left = times;
  return vi.spyOn(WebAssembly, 'instantiate').mockImplementation(((m: unknown, imports?: WebAssembly.Imports) => {
    const ours = imports !== undefined && Object.values(imports).some((ns) => Object.keys(ns).some((k) => k.startsWith('__wbg')));
    if (ours && left > 0) {
      left--;
      return Promise.reject(error);
    }
    return real(m, imports);
  }) as typeof WebAssembly.instantiate);
}

function failedLoad(): Promise<unknown> {
  return loadWasm().then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('loading the WebAssembly module', () => {
  it('in an engine without SIMD128: NotSupported that names it, with the engine’s error as cause', async () => {
    const compileError = new WebAssembly.CompileError('Compiling function #1 failed: Wasm SIMD unsupported');
    failSiltdbModule(compileError);
    vi.spyOn(WebAssembly, 'validate').mockReturnValue(false);
    const e = (await failedLoad()) as { code: string; message: string; cause: unknown };
    expect(e.code).toBe('NotSupported');
    expect(e.message).toMatch(/WebAssembly SIMD128/);
    expect(e.message).toMatch(/Wasm SIMD unsupported/);
    expect(e.cause).toBe(compileError);
  });

  it('the probe is a valid SIMD module in this engine (Node has SIMD128)', async () => {
    const validate = vi.spyOn(WebAssembly, 'validate');
    failSiltdbModule(new Error('not SIMD'), 1);
    const e = (await failedLoad()) as { code: string };
    expect(validate).toHaveBeenCalledTimes(1);
    expect(validate.mock.results[0]?.value).toBe(true);
    expect(e.code).toBe('InitFailed');
  });
  it('with SIMD128 but a module that fails to load: InitFailed, and a later call retries', async () => {
    failSiltdbModule(new TypeError('failed to fetch'), 1);
    const e = (await failedLoad()) as { code: string; message: string };
    expect(e.code).toBe('InitFailed');
    expect(e.message).toMatch(/failed to fetch/);
    await expect(loadWasm()).resolves.toBeUndefined();
  });
});
