#!/usr/bin/env node
// Where the time of siltdb's reads goes, in Node (the workloads are in
// bench/browser/read-workloads.js; bench/run/profile-browser.mjs does the
// same in Chromium): each workload timed, then profiled with V8's sampling
// profiler. Prints µs per operation and the functions with the most self
// time. Function names need the wasm's name section: build with
// `WASM_OPT=0 bash scripts/build.sh` (wasm-opt drops it).
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg).
//
//   node bench/run/profile-reads.mjs [--num 100000] [--reads 20000] [--top 20] [--reps 3] [--time-only] [--only get]
import { Session } from 'node:inspector/promises';
import * as silt from '../../js/dist/index.js';
import { readWorkloads, timeWorkload } from '../browser/read-workloads.js';
import { parseArgs } from './args.mjs';
import { machineText } from './machine.mjs';
import { printTop, topSelf } from './v8-profile.mjs';

const args = parseArgs(
  process.argv.slice(2),
  { num: 100_000, reads: 20_000, top: 20, reps: 3, 'time-only': false, only: '' },
  'usage: node bench/run/profile-reads.mjs [--num N] [--reads N] [--top N] [--reps N] [--time-only] [--only getPinned|get|multiGet|seek+100|count]',
);
console.log(`${machineText()}; ${new Date().toISOString()}; N = ${args.num}, ${args.reads} reads`);
const { db, workloads } = await readWorkloads(silt, { num: args.num, reads: args.reads });

const session = new Session();
session.connect();
await session.post('Profiler.enable');
// Every 50 µs (the default, 1 ms, gives a few dozen samples per run).
await session.post('Profiler.setSamplingInterval', { interval: 50 });
for (const [name, run] of Object.entries(workloads)) {
  if (args.only && args.only !== name) continue;
  const times = timeWorkload(run, args.reps);
  const unit = name === 'multiGet' ? 'key' : 'op';
  console.log(`\n${name}: ${times[Math.floor(times.length / 2)].toFixed(3)} µs per ${unit} (median of ${times.length}; fastest ${times[0].toFixed(3)})`);
  if (args['time-only']) continue;
  await session.post('Profiler.start');
  for (let rep = 0; rep < 5; rep++) run();
  const { profile } = await session.post('Profiler.stop');
  printTop(topSelf(profile, args.top));
}
db.close();
