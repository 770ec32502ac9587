#!/usr/bin/env node
// Makes wasm-bindgen's generated glue (js/pkg/silt_wasm.js) work when wasm
// memory is a resizable ArrayBuffer, which siltdb switches it to where the
// engine has WebAssembly.Memory.prototype.toResizableBuffer (so that views
// of pinned values survive memory growth). Web APIs such as TextDecoder.decode
// and TextEncoder.encodeInto refuse views of resizable buffers, and the glue
// passes them such views for every string crossing the boundary. Each
// replacement below copies through a fixed-length buffer instead; strings
// crossing the boundary are short (error messages, property names).
//
// Exact replacements, each required to match once: a wasm-bindgen upgrade
// that changes the glue fails the build here instead of failing at run time.
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.argv[2] ?? 'js/pkg/silt_wasm.js';
const replacements = [
  [
    'return cachedTextDecoder.decode(getUint8ArrayMemory0().subarray(ptr, ptr + len));',
    'return cachedTextDecoder.decode(getUint8ArrayMemory0().slice(ptr, ptr + len)); // siltdb: resizable memory',
  ],
  [
    'const ret = cachedTextEncoder.encodeInto(arg, view);',
    'const encoded = cachedTextEncoder.encode(arg); view.set(encoded); const ret = { read: arg.length, written: encoded.length }; // siltdb: resizable memory',
  ],
];

let text = readFileSync(file, 'utf8');
for (const [from, to] of replacements) {
  const count = text.split(from).length - 1;
  if (count !== 1) {
    console.error(`patch-glue: expected exactly one "${from}" in ${file}, found ${count}`);
    process.exit(1);
  }
  text = text.replace(from, to);
}
writeFileSync(file, text);
console.log(`patch-glue: ${file}: ${replacements.length} replacements`);
