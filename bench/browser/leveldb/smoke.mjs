#!/usr/bin/env node
// Smoke test of LevelDB-in-wasm in Node, through the benchmark's adapter
// (bench/browser/engines/leveldb.js) and the real build (run build.sh first):
// 10,000 keys written in batches in random order, with a 64 KiB memtable so
// that flushes and compactions really run through SingleThreadEnv; then every
// get, multiGets, scans, overwrites, a reopen (MEMFS lives as long as the
// module), and the errors a user can meet. Each checksum is compared with the
// one predicted by bench/browser/common.js. Exits non-zero on the first failure.
//
//   node bench/browser/leveldb/smoke.mjs
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// Emscripten 3.1.6's ES6 output, in Node, still uses CommonJS's `require`
// and `__dirname`, and fetches the .wasm with fetch(), which in Node does not
// read file: URLs. Give it all three, as the browser would.
const vendor = new URL('./dist/', import.meta.url);
globalThis.require = createRequire(import.meta.url);
globalThis.__dirname = fileURLToPath(vendor);
const nodeFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (url.protocol !== 'file:') return nodeFetch(input, init);
  const type = url.pathname.endsWith('.wasm') ? 'application/wasm' : 'application/json';
  try {
    return new Response(await readFile(url), { headers: { 'content-type': type } });
  } catch (e) {
    return new Response(String(e), { status: 404, statusText: 'Not Found' });
  }
};

const { default: leveldb } = await import('../engines/leveldb.js');
const { keyOf, valueFor, expectedChecksum, permutation } = await import('../common.js');

const N = 10_000;
const BATCH = 500;
const NAME = 'smoke';
let checks = 0;
const eq = (got, want, what) => {
  assert.equal(got, want, what);
  checks++;
};
const rejects = async (f, pattern, what) => {
  await assert.rejects(async () => f(), pattern, what);
  checks++;
};
const sumOf = (indexes) => indexes.reduce((s, i) => s + (i < N ? expectedChecksum(i) : 0), 0);
// A test, not a benchmark: no timings (npm run bench measures).
const phase = (what, f) => {
  f();
  console.log(`  ${what}: ok`);
};

assert.equal(typeof leveldb.options.build, 'object', `build.json was not read: ${leveldb.options.build}`);
console.log(`LevelDB smoke: ${leveldb.label}, emscripten ${leveldb.options.build.emscripten}, ${leveldb.storage}`);

await leveldb.destroy(NAME); // absent: not an error
let h = await leveldb.open(NAME, { writeBufferSize: 64 << 10 });

// --- fill: random order, 20 batches ----------------------------------------
const order = permutation(N, 7);
phase(`putBatch of ${N.toLocaleString('en')} keys, ${BATCH} per batch, random order`, () => {
  for (let b = 0; b < N; b += BATCH) {
    const idx = Array.from(order.subarray(b, b + BATCH));
    const r = leveldb.putBatch(h, idx.map(keyOf), idx.map(valueFor));
    assert.ok(!(r instanceof Promise), 'putBatch is synchronous');
  }
});
leveldb.settle(h);
const files = [0, 1, 2, 3, 4, 5, 6].map((l) => Number(leveldb.property(h, `leveldb.num-files-at-level${l}`)));
console.log(`  tables per level after settle: ${files.join(' ')}`);
assert.ok(
  files.slice(1).some((n) => n > 0),
  `no table below level 0: compactions did not run (${files})`,
);
assert.ok(files[0] < 4, `level 0 holds ${files[0]} tables after settle: its compaction did not run`);
checks += 2;

// --- reads -------------------------------------------------------------------
const readAll = () => {
  for (let i = 0; i < N; i++) eq(leveldb.get(h, keyOf(i)), expectedChecksum(i), `get key ${i}`);
};
phase('get of every key', readAll);
eq(leveldb.get(h, keyOf(N + 5)), -1, 'get of a key never written');
eq(leveldb.get(h, new Uint8Array(0)), -1, 'get of the empty key');

const next = (() => {
  let s = 12345;
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0);
})();
phase('200 multiGets of 32 random keys, ~1% absent', () => {
  for (let r = 0; r < 200; r++) {
    const idx = Array.from({ length: 32 }, () => next() % (N + 100)); // ~1% absent
    eq(leveldb.multiGet(h, idx.map(keyOf)), sumOf(idx), `multiGet round ${r}`);
  }
});
phase('200 scans of 100 from random keys', () => {
  for (let r = 0; r < 200; r++) {
    const start = next() % N;
    const idx = Array.from({ length: 100 }, (_, j) => start + j);
    eq(leveldb.scan(h, keyOf(start), 100), sumOf(idx), `scan from ${start}`);
  }
});
eq(leveldb.scan(h, keyOf(N - 10), 100), sumOf(Array.from({ length: 10 }, (_, j) => N - 10 + j)), 'scan past the end stops there');
eq(leveldb.scan(h, new Uint8Array(0), 5), sumOf([0, 1, 2, 3, 4]), 'scan from the empty key starts at the first');
eq(leveldb.scan(h, keyOf(N), 10), 0, 'scan after the last key reads nothing');
eq(leveldb.scan(h, keyOf(3), 0), 0, 'scan of 0 entries');

// --- overwrites: the newest value wins over older ones in lower levels ----
const over = Array.from({ length: 1000 }, (_, j) => j * 10);
leveldb.putBatch(
  h,
  over.map(keyOf),
  over.map((i) => valueFor(i + 1)),
);
for (const i of over) eq(leveldb.get(h, keyOf(i)), expectedChecksum(i + 1), `get of overwritten key ${i}`);
eq(leveldb.scan(h, keyOf(0), 2), expectedChecksum(1) + expectedChecksum(1), 'scan sees the overwrite');
leveldb.putBatch(h, over.map(keyOf), over.map(valueFor)); // back
eq(leveldb.multiGet(h, over.slice(0, 32).map(keyOf)), sumOf(over.slice(0, 32)), 'multiGet after restoring');

// --- reopen: recovery from the log and the tables --------------------------
await leveldb.close(h);
await leveldb.close(h); // twice: no-op
assert.throws(() => leveldb.get(h, keyOf(1)), /database smoke is closed/, 'use after close');
checks++;
h = await leveldb.open(NAME);
readAll();
console.log(`  reopened: all ${N} keys read back`);

// --- errors ------------------------------------------------------------------
await rejects(() => leveldb.open(NAME), /lock/i, 'a second open of an open database');
await rejects(() => leveldb.destroy(NAME), /destroying LevelDB at \/leveldb\/smoke/, 'destroy of an open database');
await rejects(() => leveldb.open('a/b'), /invalid database name 'a\/b'/, 'a name with a slash');
await rejects(() => leveldb.open('x', { cacheBytes: 0 }), /cacheBytes must be/, 'a zero cache');
await rejects(() => leveldb.open('x', { bloom: 1 }), /unknown option bloom/, 'an unknown option');
assert.throws(() => leveldb.putBatch(h, [keyOf(1)], []), /1 keys but 0 values/, 'keys and values of different lengths');
assert.throws(() => leveldb.property(h, 'leveldb.nope'), /unknown LevelDB property 'leveldb.nope'/, 'unknown property');
checks += 2;

// --- big batch: the scratch buffer grows ---------------------------------
const big = Array.from({ length: 5000 }, (_, j) => j);
leveldb.putBatch(
  h,
  big.map(keyOf),
  big.map(() => new Uint8Array(1000).fill(1)),
);
eq(leveldb.get(h, keyOf(4999)), 1000, 'get after a 5 MB batch');
leveldb.putBatch(h, big.map(keyOf), big.map(valueFor));
eq(leveldb.get(h, keyOf(4999)), expectedChecksum(4999), 'get after restoring');

// --- close with a flush queued: ~DBImpl waits, and the wait runs it ------
// (port_single_thread.cc: CondVar::Wait runs the queued work; with nothing
// queued it would abort.) Two 116 KB batches into a 64 KiB memtable: the
// second switches memtables and queues the flush; close right after.
{
  const name = 'smoke-close';
  await leveldb.destroy(name);
  let c = await leveldb.open(name, { writeBufferSize: 64 << 10 });
  const a = Array.from({ length: 1000 }, (_, j) => j);
  const b = Array.from({ length: 1000 }, (_, j) => 1000 + j);
  leveldb.putBatch(c, a.map(keyOf), a.map(valueFor));
  leveldb.putBatch(c, b.map(keyOf), b.map(valueFor));
  await leveldb.close(c);
  c = await leveldb.open(name);
  eq(leveldb.scan(c, new Uint8Array(0), 3000), sumOf([...a, ...b]), 'every key after a close with a flush queued');
  await leveldb.close(c);
  await leveldb.destroy(name);
}

// --- destroy: the database is gone -------------------------------------------
await leveldb.close(h);
await leveldb.destroy(NAME);
h = await leveldb.open(NAME);
eq(leveldb.get(h, keyOf(1)), -1, 'get after destroy');
eq(leveldb.scan(h, new Uint8Array(0), 10), 0, 'scan after destroy');
await leveldb.close(h);
await leveldb.destroy(NAME);

console.log(`LevelDB smoke: ok (${checks.toLocaleString('en')} checks)`);
