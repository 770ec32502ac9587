#!/usr/bin/env node
// Cargo runner for wasm32-wasip1 test binaries: runs them in Node's WASI,
// so the engine's unit tests run as WebAssembly (with SIMD128 when built
// with it) on the same V8 that Chromium uses. Arguments after the .wasm
// file go to the test harness.
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';
import process from 'node:process';

const [file, ...args] = process.argv.slice(2);
if (!file) {
  console.error('usage: wasi-run.mjs TEST.wasm [harness args]');
  process.exit(2);
}
const wasi = new WASI({
  version: 'preview1',
  args: [file, ...args],
  env: { RUST_BACKTRACE: '1' },
  // proc_exit unwinds out of the wasm and start() returns the program's
  // exit code; the process then ends from JavaScript. (With false, Node
  // ends the process from inside the wasm call, and Node 20 once crashed
  // with SIGSEGV there, after every test had passed.)
  returnOnExit: true,
});
const module = await WebAssembly.compile(await readFile(file));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
