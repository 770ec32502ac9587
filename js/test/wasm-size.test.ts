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

/** The names of the functions of a wasm module with a name section, and each body's size. */
function functionSizes(bytes: Uint8Array): { name: string; size: number }[] {
  let p = 8;
  const leb = () => {
    let r = 0;
    let shift = 0;
    let b: number;
    do {
      b = bytes[p++]!;
      r += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return r;
  };
  const names = new Map<number, string>();
  let imported = 0;
  let code = -1;
  while (p < bytes.length) {
    const id = bytes[p++]!;
    const size = leb();
    const end = p + size;
    if (id === 0) {
      const n = leb();
      const section = new TextDecoder().decode(bytes.subarray(p, p + n));
      p += n;
      if (section === 'name') {
        while (p < end) {
          const sub = bytes[p++]!;
          const subSize = leb();
          const subEnd = p + subSize;
          if (sub === 1) {
            for (let count = leb(); count > 0; count--) {
              const index = leb();
              const len = leb();
              names.set(index, new TextDecoder().decode(bytes.subarray(p, p + len)));
              p += len;
            }
          }
          p = subEnd;
        }
      }
    } else if (id === 2) {
      for (let count = leb(); count > 0; count--) {
        for (let part = 0; part < 2; part++) {
          const n = leb(); // the module's name, then the field's
          p += n;
        }
        const kind = bytes[p++]!;
        if (kind === 0) {
          leb();
          imported++;
        } else if (kind === 1 || kind === 2) {
          if (kind === 1) p++; // a table's element type
          const flags = bytes[p++]!;
          leb(); // minimum
          if (flags & 1) leb(); // maximum
        } else if (kind === 3) p += 2;
        else throw new Error(`import kind ${kind}`);
      }
    } else if (id === 10) code = p;
    p = end;
  }
  if (code < 0) throw new Error('no code section');
  p = code;
  const out: { name: string; size: number }[] = [];
  for (let i = 0, count = leb(); i < count; i++) {
    const size = leb();
    out.push({ name: names.get(imported + i) ?? '', size });
    p += size;
  }
  return out;
}

describe('the shipped wasm (release build, before its names are stripped)', () => {
  const fns = existsSync(BUILD) ? functionSizes(readFileSync(BUILD)) : [];

  test('has function names to check', () => {
    expect(existsSync(BUILD), `${BUILD} is missing: bash scripts/build.sh makes it`).toBe(true);
    expect(fns.filter((f) => f.name !== '').length).toBeGreaterThan(500);
  });

  test('has one copy of the standard sort: every sort goes through crates/engine/src/sort.rs', () => {
    const sorts = fns.filter((f) => /core(5slice4sort|::slice::sort)/.test(f.name) && /quicksort|drift4sort|driftsort_main|ipnsort/.test(f.name));
    // One stable sort: its quicksort, drift sort and driftsort_main.
    expect(
      sorts.map((f) => f.name).filter((n) => /quicksort/.test(n)),
      'a sort that does not go through silt_engine::sort',
    ).toHaveLength(1);
  });

  test('formats no float (an f64 in a message: format the number as an integer, or let JavaScript say it)', () => {
    expect(fns.filter((f) => /flt2dec|float_to_decimal/.test(f.name)).map((f) => f.name)).toEqual([]);
  });
});
