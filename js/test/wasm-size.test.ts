// What keeps the shipped wasm small (issue 34: every page loads it before
// its first read), checked on the release build's function names (cargo's
// output before wasm-bindgen and wasm-opt strip them; scripts/build.sh
// leaves it in target/wasm):
// - one copy of the standard library's sort (crates/engine/src/sort.rs):
//   each call site of `sort_by` with its own closure was a copy of driftsort
//   or ipnsort, 126 KB of code in all;
// - no float formatting (`{}` of an f64 in a message brings 16 KB of it).
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

// SILT_WASM_BUILD: another build to check (a test of this test).
const BUILD = process.env.SILT_WASM_BUILD ?? fileURLToPath(new URL('../../target/wasm/wasm32-unknown-unknown/release/silt_wasm.wasm', import.meta.url));

/** The names of the functions of a wasm module, from its name section (the function-names subsection, 1). */
function functionNames(bytes: Uint8Array<ArrayBuffer>): string[] {
  const [section] = WebAssembly.Module.customSections(new WebAssembly.Module(bytes), 'name');
  if (section === undefined) return [];
  const b = new Uint8Array(section);
  let p = 0;
  const leb = () => {
    let r = 0;
    let shift = 0;
    let x: number;
    do {
      x = b[p++]!;
      r += (x & 0x7f) * 2 ** shift;
      shift += 7;
    } while (x & 0x80);
    return r;
  };
  const names: string[] = [];
  while (p < b.length) {
    const sub = b[p++]!;
    const end = leb() + p;
    if (sub === 1) {
      for (let count = leb(); count > 0; count--) {
        leb(); // the function's index
        const n = leb();
        names.push(new TextDecoder().decode(b.subarray(p, p + n)));
        p += n;
      }
    }
    p = end;
  }
  return names;
}

describe('the shipped wasm (release build, before its names are stripped)', () => {
  const names = existsSync(BUILD) ? functionNames(readFileSync(BUILD)) : [];

  test('has function names to check', () => {
    expect(existsSync(BUILD), `${BUILD} is missing: bash scripts/build.sh makes it`).toBe(true);
    expect(names.length).toBeGreaterThan(500);
  });

  test('has one copy of the standard sort: every sort goes through crates/engine/src/sort.rs', () => {
    const sorts = names.filter((n) => /core(5slice4sort|::slice::sort)/.test(n) && /quicksort|drift4sort|driftsort_main|ipnsort/.test(n));
    // One stable sort: its quicksort, drift sort and driftsort_main.
    expect(
      sorts.filter((n) => /quicksort/.test(n)),
      'a sort that does not go through silt_engine::sort',
    ).toHaveLength(1);
  });

  test('formats no float (an f64 in a message: format the number as an integer, or let JavaScript say it)', () => {
    expect(names.filter((n) => /flt2dec|float_to_decimal/.test(n))).toEqual([]);
  });
});
