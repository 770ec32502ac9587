#!/usr/bin/env node
// Where the time of siltdb's reads goes: the browser suite's data set
// (bench/browser/common.js: 16-byte keys, 100-byte values) in an in-memory
// database (openMemory: the same engine, bindings and JS as in the browser,
// minus OPFS, whose files the block cache keeps out of these reads anyway),
// read with get / multiGet / seek+100 as the suite's Silt adapter does, each
// timed and then profiled with V8's sampling profiler (the V8 of Chromium).
// Prints µs per operation and the functions with the most self time.
//
// REQUIRES: bash scripts/build.sh (js/dist, js/pkg).
//
//   node bench/run/profile-reads.mjs [--num 100000] [--reads 20000] [--top 20]
import { Session } from 'node:inspector/promises';
import { openMemory, WriteBatch } from '../../js/dist/index.js';
import { keyOf, valueFor, checksum, rng, below } from '../browser/common.js';
import { parseArgs } from './args.mjs';
import { machineText } from './machine.mjs';

const args = parseArgs(
  process.argv.slice(2),
  { num: 100_000, reads: 20_000, top: 20, reps: 3, 'time-only': false, only: '' },
  'usage: node bench/run/profile-reads.mjs [--num N] [--reads N] [--top N] [--reps N] [--time-only] [--only get|multiGet|seek+100]',
);
const N = args.num;
const READS = args.reads;
const TOP = args.top;
console.log(`${machineText()}; ${new Date().toISOString()}; N = ${N}, ${READS} reads`);

const db = await openMemory({ blockCacheCapacity: 64 << 20, writeBufferSize: 4 << 20 });
const batch = new WriteBatch();
for (let i = 0; i < N; i += 1000) {
  batch.clear();
  for (let j = i; j < Math.min(N, i + 1000); j++) batch.put(keyOf(j), valueFor(j));
  db.write(batch);
}
await db.idle();
const r = rng(7);
const keys = Array.from({ length: READS }, () => keyOf(below(r, N)));

const workloads = {
  get() {
    let s = 0;
    for (const k of keys) {
      const v = db.get(k);
      s += checksum(v.bytes);
      v.release();
    }
    return [s, keys.length];
  },
  multiGet() {
    let s = 0;
    for (let i = 0; i + 32 <= keys.length; i += 32) {
      const res = db.multiGet(keys.slice(i, i + 32));
      for (let j = 0; j < res.length; j++) s += checksum(res.get(j));
      res.release();
    }
    return [s, keys.length];
  },
  'seek+100'() {
    let s = 0;
    const seeks = Math.max(1, Math.floor(keys.length / 10));
    for (let i = 0; i < seeks; i++) {
      let n = 0;
      for (const [, v] of db.iterator({ gte: keys[i], batchSize: 101 })) {
        s += checksum(v);
        if (++n >= 101) break;
      }
    }
    return [s, seeks];
  },
};

const session = new Session();
session.connect();
await session.post('Profiler.enable');
// Every 50 µs (the default, 1 ms, gives a few dozen samples per run).
await session.post('Profiler.setSamplingInterval', { interval: 50 });
for (const [name, run] of Object.entries(workloads)) {
  if (args.only && args.only !== name) continue;
  run(); // warm: every block in the cache, the code optimized
  const times = [];
  for (let rep = 0; rep < args.reps; rep++) {
    const t = performance.now();
    const [, ops] = run();
    times.push(((performance.now() - t) * 1000) / ops);
  }
  times.sort((a, b) => a - b);
  const unit = name === 'multiGet' ? 'key' : 'op';
  console.log(`\n${name}: ${times[Math.floor(times.length / 2)].toFixed(3)} µs per ${unit} (median of ${times.length}; fastest ${times[0].toFixed(3)})`);
  if (args['time-only']) continue;
  await session.post('Profiler.start');
  for (let rep = 0; rep < 5; rep++) run();
  const { profile } = await session.post('Profiler.stop');
  for (const [fn, share] of topSelf(profile)) console.log(`  ${(share * 100).toFixed(1).padStart(5)}%  ${fn}`);
}
db.close();

/**
 * The functions with the most self time, as shares of the profile. Samples
 * under the inspector's own `post` (the profiler stopping and serializing
 * its profile, shown as `dispatch`) are not the workload's and are left out.
 */
function topSelf(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inInspector = (id) => {
    for (let n = byId.get(id); n !== undefined; n = byId.get(parent.get(n.id))) {
      if (n.callFrame.url === 'node:inspector') return true;
    }
    return false;
  };
  const self = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    if (inInspector(id)) return;
    const f = byId.get(id).callFrame;
    const where = f.url ? ` (${f.url.split('/').pop()})` : '';
    const key = `${f.functionName || '(anonymous)'}${where}`.replace(/::h[0-9a-f]{16}/, '');
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  });
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .map(([k, v]) => [k, v / total]);
}
