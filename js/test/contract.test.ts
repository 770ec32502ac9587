// The contract between the wasm module and this package
// (crates/wasm/src/contract.rs, js/src/boundary/contract.ts): what the TypeScript
// names must be exactly what the module says, so that neither side can
// change alone.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, test } from 'vitest';
import { contract, RECOVERIES } from '../src/boundary/contract.js';
import { BATCH_TAGS } from '../src/core/batch.js';
import { BINDING_ERROR_CODES, ENGINE_ERROR_CODES, PACKAGE_ERROR_CODES, SILT_ERROR_CODES } from '../src/core/errors.js';
import { MIN_POOL_RESERVE } from '../src/local/open.js';
import { loadWasm } from '../src/boundary/wasm.js';

beforeAll(loadWasm);

describe('the contract with the wasm module', () => {
  test("the error-code union is exactly the engine's and the binding's codes, plus the package's own", () => {
    expect(contract().errorCodes).toEqual([...ENGINE_ERROR_CODES, ...BINDING_ERROR_CODES]);
    for (const code of PACKAGE_ERROR_CODES) expect(contract().errorCodes).not.toContain(code);
    expect(new Set(SILT_ERROR_CODES).size).toBe(SILT_ERROR_CODES.length);
  });

  test("the recoveries are exactly the engine's", () => {
    expect(contract().recoveries).toEqual([...RECOVERIES]);
  });

  test('the exchange layout has every offset this package reads, and a request starts after the release slots', () => {
    const x = contract().exchange;
    expect(Object.keys(x).sort()).toEqual(['absent', 'handles', 'out0', 'out1', 'releaseSlots', 'releases', 'request']);
    for (const v of Object.values(x)) expect(Number.isInteger(v) && v >= 0).toBe(true);
    expect(x.request).toBe(x.handles + 4 * x.releaseSlots);
    // Header words are distinct and 4-aligned.
    const words = [x.releases, x.out0, x.out1];
    expect(new Set(words).size).toBe(3);
    for (const w of [...words, x.handles]) expect(w % 4).toBe(0);
    expect(x.absent).toBe(0xffff_ffff);
  });

  test('the background-work bits are distinct single bits', () => {
    const w = contract().work;
    expect(Object.keys(w).sort()).toEqual(['didWork', 'waitingForPool', 'workLeft']);
    const bits = Object.values(w);
    for (const b of bits) expect(b > 0 && (b & (b - 1)) === 0).toBe(true);
    expect(new Set(bits).size).toBe(bits.length);
  });

  test('the smallest poolReserve is what the busiest call needs free', () => {
    const needs = contract().poolNeeds;
    expect(Object.keys(needs).sort()).toEqual(['background', 'open', 'write']);
    expect(MIN_POOL_RESERVE).toBe(Math.max(...Object.values(needs)));
  });
});

describe('the batch encoding', () => {
  test("the tags of a batch's updates are the wasm module's (crates/wasm/src/batch.rs)", () => {
    const rust = readFileSync(new URL('../../crates/wasm/src/batch.rs', import.meta.url), 'utf8');
    const consts = Object.fromEntries([...rust.matchAll(/^const ([A-Z_]+): u8 = (0x[0-9a-f]+);$/gm)].map((m) => [m[1], Number(m[2])]));
    expect(consts).toEqual({
      DELETE: BATCH_TAGS.delete,
      PUT: BATCH_TAGS.put,
      MERGE: BATCH_TAGS.merge,
      DELETE_RANGE: BATCH_TAGS.deleteRange,
      BOOKKEEPING_PUT: BATCH_TAGS.bookkeepingPut,
    });
  });
});

describe('the shipped module', () => {
  test('exports no test entry point (the fs contract runner is in the test-only build)', () => {
    const wasm = readFileSync(new URL('../pkg/silt_wasm_bg.wasm', import.meta.url));
    const names = WebAssembly.Module.exports(new WebAssembly.Module(wasm)).map((e) => e.name);
    // The check reads the real export list: the product's own entry points are in it.
    expect(names).toEqual(expect.arrayContaining(['contract', 'opfspool_add', 'database_getPinned']));
    expect(names.filter((n) => /runfscontract|fuzz|testkit/i.test(n))).toEqual([]);
    const glue = readFileSync(new URL('../pkg/silt_wasm.d.ts', import.meta.url), 'utf8');
    expect(glue).not.toMatch(/runFsContract/);
  });
});
