#!/usr/bin/env node
// Patches wasm-bindgen's generated glue (js/pkg/silt_wasm.js and its .d.ts)
// for two things siltdb needs:
//
// 1. Resizable memory. siltdb switches wasm memory to a resizable
//    ArrayBuffer where the engine has WebAssembly.Memory.prototype.toResizableBuffer
//    (so that views of pinned values survive memory growth). Web APIs such
//    as TextDecoder.decode and TextEncoder.encodeInto refuse views of
//    resizable buffers, and the glue passes them such views for every string
//    crossing the boundary. Each replacement copies through a fixed-length
//    buffer instead; strings crossing the boundary are short (error
//    messages, property names).
//
// 2. Boundary counters (js/src/boundary/counters.ts). The glue gets an exported
//    `__siltInstrument` object: every copy the glue makes out of wasm memory
//    (a returned Vec<u8>/Vec<u32>, a string) adds its bytes to
//    `copiedBytes`, and when siltdb sets `wrapExports` / `wrapImports`
//    before the module is instantiated, the glue calls wasm exports and
//    hands wasm its imports through those wrappers, so that every crossing
//    of the boundary, either way, can be counted.
//
// Exact replacements, each required to match a stated number of times, and
// a check that no copy out of wasm memory is left uncounted: a wasm-bindgen
// upgrade that changes the glue fails the build here instead of failing (or
// counting wrong) at run time.
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.argv[2] ?? 'js/pkg/silt_wasm.js';
const dts = file.replace(/\.js$/, '.d.ts');

const fail = (message) => {
  console.error(`patch-glue: ${file}: ${message}`);
  process.exit(1);
};

const instrument = `/** siltdb: counters of the boundary (scripts/patch-glue.mjs, js/src/boundary/counters.ts). */
export const __siltInstrument = { copiedBytes: 0, wrapExports: null, wrapImports: null };
function __siltCopied(array) {
    __siltInstrument.copiedBytes += array.byteLength;
    return array;
}
`;

// [from, to, expected number of matches]
const replacements = [
  [
    'return cachedTextDecoder.decode(getUint8ArrayMemory0().subarray(ptr, ptr + len));',
    'return cachedTextDecoder.decode(__siltCopied(getUint8ArrayMemory0().slice(ptr, ptr + len))); // siltdb: resizable memory',
    1,
  ],
  [
    'const ret = cachedTextEncoder.encodeInto(arg, view);',
    'const encoded = cachedTextEncoder.encode(arg); view.set(encoded); const ret = { read: arg.length, written: encoded.length }; // siltdb: resizable memory',
    1,
  ],
  ['let wasmModule, wasmInstance, wasm;', `${instrument}let wasmModule, wasmInstance, wasm;`, 1],
  ['wasm = instance.exports;', 'wasm = __siltInstrument.wrapExports === null ? instance.exports : __siltInstrument.wrapExports(instance.exports);', 1],
  [
    'const imports = __wbg_get_imports();',
    'const imports = __siltInstrument.wrapImports === null ? __wbg_get_imports() : __siltInstrument.wrapImports(__wbg_get_imports());',
    2,
  ],
];

let text = readFileSync(file, 'utf8');
if (text.includes('__siltInstrument')) fail('already patched');
for (const [from, to, times] of replacements) {
  const count = text.split(from).length - 1;
  if (count !== times) fail(`expected ${times} of "${from}", found ${count}`);
  text = text.replaceAll(from, to);
}

// Every Vec<u8>/Vec<u32> the glue returns is copied out with .slice()
// (today no export returns one: siltdb copies batches out itself).
const copies = /(getArray(?:U8|U32)FromWasm0\([^()]*\))\.slice\(\)/g;
const counted = (text.match(copies) ?? []).length;
text = text.replace(copies, '__siltCopied($1.slice())');
const uncounted = text.split('\n').filter((l) => /Memory0\(\)\.slice\(|FromWasm0\([^)]*\)\.slice\(/.test(l) && !l.includes('__siltCopied('));
if (uncounted.length > 0) fail(`copies out of wasm memory left uncounted:\n${uncounted.join('\n')}`);
writeFileSync(file, text);

let types = readFileSync(dts, 'utf8');
if (!types.includes('__siltInstrument')) {
  types += `
/** siltdb: counters of the boundary (added by scripts/patch-glue.mjs). */
export const __siltInstrument: {
    copiedBytes: number;
    wrapExports: ((exports: Record<string, unknown>) => Record<string, unknown>) | null;
    wrapImports: ((imports: Record<string, Record<string, unknown>>) => Record<string, Record<string, unknown>>) | null;
};
`;
  writeFileSync(dts, types);
}
console.log(`patch-glue: ${file}: ${replacements.length} replacements, ${counted} copies counted`);
