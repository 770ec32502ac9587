#!/usr/bin/env node
// What reading a value through a view costs in Debian's Chromium, for a view
// of a fixed ArrayBuffer (wasm memory's `buffer`) and for one of a resizable
// buffer (`memory.toResizableBuffer()`, which siltdb uses only after
// `configureMemory({ resizable: true })`): creating a 100-byte view, and
// summing its bytes. Prints µs per value. Not a test: numbers only.
//
//   node bench/run/views.mjs
import { chromium } from 'playwright-core';
import { chromiumArgs, executablePath } from '../../scripts/browser.mjs';
import { machineText } from './machine.mjs';

const browser = await chromium.launch({ executablePath, args: chromiumArgs });
const watchdog = setTimeout(() => browser.close(), 120_000);
try {
  const page = await browser.newPage();
  const out = await page.evaluate(() => {
    const memory = new WebAssembly.Memory({ initial: 16, maximum: 1024 });
    const res = {};
    const N = 100_000;
    const measure = (buffer, name) => {
      for (let rep = 0; rep < 3; rep++) {
        let t = performance.now();
        const views = [];
        for (let i = 0; i < N; i++) views.push(new Uint8Array(buffer, (i * 128) & 0xfffff, 100));
        res[`${name}: create a view`] = ((performance.now() - t) * 1000) / N;
        let s = 0;
        t = performance.now();
        for (let k = 0; k < 10; k++) for (const v of views) for (let j = 0; j < v.length; j++) s += v[j];
        res[`${name}: sum 100 bytes`] = ((performance.now() - t) * 1000) / (10 * N);
        if (s < 0) throw new Error('unreachable');
      }
    };
    measure(memory.buffer, 'fixed buffer');
    measure(memory.toResizableBuffer(), 'resizable buffer');
    return res;
  });
  console.log(`Chromium ${await browser.version()}; ${machineText()}; ${new Date().toISOString()}`);
  for (const [k, v] of Object.entries(out)) console.log(`${k.padEnd(36)} ${v.toFixed(3)} µs`);
} finally {
  clearTimeout(watchdog);
  await browser.close();
}
