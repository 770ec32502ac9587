#!/usr/bin/env node
// `npm run bench:tables`: Silt's own tables in Debian's Chromium, on real
// OPFS, in a dedicated worker, through the siltdb package (the JS/wasm
// boundary included). The scenarios are in bench/browser/scenarios.js; this
// script serves the demo, opens its Benchmarks page (bench/run/browser-session.mjs)
// and runs them in a worker of it, then writes:
//
//   docs/bench/multiget-browser.md, .json    RocksDB PR 5011's MultiGet table
//   docs/bench/iterators-browser.md, .json   seekrandom with one explicit snapshot,
//                                            auto refresh off / on, and pinned bytes (PR 13354)
//   docs/bench/block-read-browser.md, .json  what a block read from OPFS costs a get
//
// REQUIRES: bash scripts/build.sh (js/dist and js/pkg). Never downloads a
// browser. Benchmarks are not tests: npm test does not run this.
//
//   node bench/run/tables.mjs [--only multiget|iterators|blockread] [--num 2000000] [--reads 64000] [--reps 3]
//                             [--iter-num 500000] [--iter-reps 7] [--entries 2000000] [--block-num 500000]
//   node bench/run/tables.mjs --render    (the Markdown again from the JSON files)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs, runMain } from './args.mjs';
import { withBenchPage } from './browser-session.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const USAGE =
  'usage: node bench/run/tables.mjs [--only multiget|iterators|blockread] [--num N] [--reads N] [--reps N] [--iter-num N] [--iter-reps N] [--entries N] [--block-num N] [--render]';
const FLAGS = {
  only: '',
  num: 2_000_000,
  reads: 64_000,
  reps: 3,
  'iter-num': 500_000,
  'iter-reps': 7,
  entries: 2_000_000,
  'block-num': 500_000,
  render: false,
  'timeout-min': 30,
};
const log = (m) => process.stderr.write(`[bench:tables] ${m}\n`);

/** Writes the Markdown again from the JSON files (after editing the text here). */
function render() {
  const mgJson = JSON.parse(readFileSync('docs/bench/multiget-browser.json', 'utf8'));
  writeFileSync('docs/bench/multiget-browser.md', multiGetMarkdown(mgJson, mgJson));
  const itJson = JSON.parse(readFileSync('docs/bench/iterators-browser.json', 'utf8'));
  writeFileSync('docs/bench/iterators-browser.md', iteratorsMarkdown(itJson, itJson));
  const brJson = JSON.parse(readFileSync('docs/bench/block-read-browser.json', 'utf8'));
  writeFileSync('docs/bench/block-read-browser.md', blockReadMarkdown(brJson, brJson));
}

async function main() {
  const o = parseArgs(process.argv.slice(2), FLAGS, USAGE);
  if (o.render) return render();
  if (!['', 'multiget', 'iterators', 'blockread'].includes(o.only))
    throw new Error(`--only must be multiget, iterators or blockread, got ${JSON.stringify(o.only)}\n${USAGE}`);
  const mg = { num: o.num, reads: o.reads, reps: o.reps, batches: [1, 2, 4, 8, 16, 32], strides: [0, 16, 256, 4096], cacheBytes: 512 << 20 };
  const it = { num: o['iter-num'], reps: o['iter-reps'], nextsList: [100, 20_000, 400_000], entriesPerRun: o.entries, cacheBytes: 512 << 20 };
  await withBenchPage(
    async ({ page, browser }) => {
      const run = (name, params) => page.evaluate(([n, p]) => window.bench.runScenario(n, p), [name, params]);
      mkdirSync('docs/bench', { recursive: true });
      if (o.only === '' || o.only === 'multiget') {
        log(`multiGet table: ${mg.num} keys, ${mg.reads} keys per cell, ${mg.reps} reps`);
        const info = startRun(`bash scripts/build.sh && npm run bench:tables -- --only multiget --num ${mg.num} --reads ${mg.reads} --reps ${mg.reps}`);
        const t0 = Date.now();
        const r = await run('multiGetTable', { name: 'bench-multiget', ...mg });
        log(`multiGet table done in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
        const meta = info.finish({ browser });
        writeFileSync('docs/bench/multiget-browser.json', `${JSON.stringify({ ...meta, options: mg, ...r }, null, 1)}\n`);
        writeFileSync('docs/bench/multiget-browser.md', multiGetMarkdown(meta, r));
      }
      if (o.only === '' || o.only === 'iterators') {
        log(`iterators: ${it.num} keys, ${it.reps} reps, ${it.entriesPerRun} entries per run`);
        const info = startRun(
          `bash scripts/build.sh && npm run bench:tables -- --only iterators --iter-num ${it.num} --iter-reps ${it.reps} --entries ${it.entriesPerRun}`,
        );
        const t0 = Date.now();
        const r = await run('iteratorTable', { name: 'bench-iterators', ...it });
        log(`iterators done in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
        const meta = info.finish({ browser });
        writeFileSync('docs/bench/iterators-browser.json', `${JSON.stringify({ ...meta, options: it, ...r }, null, 1)}\n`);
        writeFileSync('docs/bench/iterators-browser.md', iteratorsMarkdown(meta, r));
      }
      if (o.only === '' || o.only === 'blockread') {
        const br = { num: o['block-num'], reads: 20_000, reps: o.reps };
        log(`block reads: ${br.num} keys, ${br.reads} gets per run, ${br.reps} reps`);
        const info = startRun(`bash scripts/build.sh && npm run bench:tables -- --only blockread --block-num ${br.num} --reps ${br.reps}`);
        const r = await run('blockReadTable', { name: 'bench-blockread', ...br });
        const meta = info.finish({ browser });
        writeFileSync('docs/bench/block-read-browser.json', `${JSON.stringify({ ...meta, options: br, ...r }, null, 1)}\n`);
        writeFileSync('docs/bench/block-read-browser.md', blockReadMarkdown(meta, r));
      }
    },
    { timeoutMin: o['timeout-min'], log },
  );
}

function blockReadMarkdown(meta, r) {
  const kib = (b) => `${b / 1024} KiB`;
  let md =
    `# What a block read from OPFS costs a get, in Chromium (siltdb on OPFS)\n\n` +
    `Gets of ${r.reads.toLocaleString('en')} random keys of ${r.num.toLocaleString('en')} (${r.num.toLocaleString('en')} writes of random keys, ` +
    `so about 63% of the keys exist and the gets of the others mostly end at the bloom filter; then compacted), ` +
    `through \`db.getPinned()\` in a dedicated worker, with a block cache that holds every block (\`cached\`) and with one of 1 byte ` +
    `(\`missing\`: every data block read from OPFS, its checksum checked, decompressed and parsed; indexes and filters ` +
    `stay in memory with their tables). Median of ${r.reps} runs. The bare read is a \`FileSystemSyncAccessHandle.read\` of a ` +
    `block's bytes at a random offset of a 32 MiB OPFS file, in the same worker.\n\n` +
    metaMarkdown(meta) +
    `\n| block size | compression | tables | get, cached | get, missing | block reads per get | the block read | bare OPFS read | what Silt adds |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n`;
  for (const row of r.rows) {
    const bare = r.raw.find((x) => x.bytes === row.blockSize)?.us ?? Number.NaN;
    // Per block read: the gets' difference over the block reads they made.
    const read = (row.missing.us - row.cached.us) / row.missing.blockReadsPerGet;
    md += `| ${kib(row.blockSize)} | ${row.compression} | ${(row.tableBytes / 2 ** 20).toFixed(1)} MiB | ${row.cached.us.toFixed(2)} µs | ${row.missing.us.toFixed(2)} µs | ${row.missing.blockReadsPerGet.toFixed(2)} | ${read.toFixed(2)} µs | ${bare.toFixed(2)} µs | ${(read - bare).toFixed(2)} µs |\n`;
  }
  md += `\n"The block read" is what a get with a missing block takes over a cached one, per block read (the difference of the two columns of gets over the block reads per get); "what Silt adds" is that less the bare OPFS read: the checksum, decompression, parsing the block, and the cache's insert.\n`;
  return md;
}

const fmt = (x, d = 3) => x.toFixed(d);
const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;

function multiGetMarkdown(meta, r) {
  const strideName = {
    0: 'Random pattern (stride 0)',
    16: 'Good locality (stride 16)',
    256: 'Good locality (stride 256)',
    4096: 'Medium locality (stride 4096)',
  };
  const rows = ['Get', 'MultiGet (no batching)', 'MultiGet (batched)'];
  const cell = (stride, row, batch) => r.cells.find((c) => c.stride === stride && c.row === row && c.batch === batch);
  let md =
    `## In Chromium (siltdb on OPFS)\n\n` +
    `Micros per key (lower is better), measured inside a dedicated worker with \`performance.now()\`, through the \`siltdb\` package: ` +
    `\`db.getPinned(key)\` per key, or \`db.multiGet(keys, { batched })\` per batch (one call into wasm per batch), every byte of every value found ` +
    `read through the zero-copy views, then \`release()\`. ${r.num.toLocaleString('en')} keys written at random (db_bench's fillrandom: ` +
    `16-byte keys, 100-byte values, some keys repeat, so some reads miss), ${r.reads.toLocaleString('en')} keys read per cell; ` +
    `the three rows of a cell read the same keys, in rotating order, ${r.reps} times, median kept. Compression none, bloom 10 bits, ` +
    `block cache ${mib(r.shape.blockCacheCapacity)} (holds everything: ${mib(r.shape.blockCacheUsage)} used after reading every key once), ` +
    `4 MiB write buffer and target file size, 16 MiB level base; files per level ${JSON.stringify(r.shape.filesPerLevel)} (with dynamic level sizes, a last level ` +
    `below 10 × 16 MiB is also the base level, so L0 files sit over it). ` +
    `Wasm memory ${mib(r.shape.memoryBytes)}, ${r.shape.memoryMode}. Keys in a batch: start, start+S, start+2S, … (S = 0: all random).\n\n` +
    metaMarkdown(meta) +
    `\nFill ${fmt(r.fill.settledMs / 1000, 1)} s, write stalls: ${r.fill.stalls}, writes retried after PoolExhausted: ${r.fill.poolWaits}; ` +
    `warm-up ${fmt(r.warmMs / 1000, 1)} s; measuring ${fmt(r.measureMs / 1000, 1)} s.\n`;
  for (const stride of [0, 16, 256, 4096]) {
    md += `\n### ${strideName[stride]}\n\n| row | ${[1, 2, 4, 8, 16, 32].join(' | ')} |\n|---|${[1, 2, 4, 8, 16, 32].map(() => '---:').join('|')}|\n`;
    for (const row of rows) md += `| ${row} | ${[1, 2, 4, 8, 16, 32].map((b) => fmt(cell(stride, row, b).usPerKey)).join(' | ')} |\n`;
  }
  const ratio = (stride, b) => cell(stride, 'MultiGet (batched)', b).usPerKey / cell(stride, 'Get', b).usPerKey;
  md +=
    `\nMultiGet (batched) / Get, per batch size: ` +
    [0, 16, 256, 4096].map((st) => `stride ${st}: ${[1, 2, 4, 8, 16, 32].map((b) => fmt(ratio(st, b), 2)).join(' / ')}`).join('; ') +
    '.\n';
  md +=
    `\nEvery call crosses the JS/wasm boundary once (\`tests/e2e/multiget.spec.ts\` counts it), so what a batch saves on the JS ` +
    `side is per call: the call, creating the result object, registering it with the FinalizationRegistry, queuing its release ` +
    `(value views are made per value either way). A batch of one pays for the batch's bookkeeping (key lengths, the layout of ` +
    `offsets and lengths) and shares nothing.\n`;
  return md;
}

function iteratorsMarkdown(meta, r) {
  let md =
    `# Iterators that refresh while keeping their snapshot, in Chromium (siltdb on OPFS)\n\n` +
    `## seekrandom with one explicit snapshot\n\n` +
    `Measured inside a dedicated worker with \`performance.now()\`, through the \`siltdb\` package: each seek is ` +
    `\`db.iterator({ gte, snapshot, autoRefresh })\` and a \`for...of\` loop over seek_nexts + 1 entries (keys and values come out as copies, ` +
    `in batches of up to 1,024 per call into wasm), then \`break\`. One snapshot taken once for every scan, as RocksDB PR 13354's benchmark did. ` +
    `${r.num.toLocaleString('en')} distinct keys (16-byte keys, 100-byte values, LZ4, the engine's default sizes), every block cached after a full scan; ` +
    `scans start at a random key at least seek_nexts before the end, so each reads seek_nexts + 1 entries ` +
    `(N scaled so that 400,000 fits). Median of ${r.reps} alternating runs of each, about ${r.entriesPerRun.toLocaleString('en')} entries read per run. ` +
    `Nothing writes during the scans, so no refresh happens: this measures what the check costs.\n\n` +
    metaMarkdown(meta) +
    `\n` +
    `| seek_nexts | seeks per run | µs/seek, off | µs/seek, auto refresh | on / off |\n|---:|---:|---:|---:|---:|\n`;
  for (const row of r.rows) {
    md += `| ${row.nexts.toLocaleString('en')} | ${row.seeks.toLocaleString('en')} | ${fmt(row.off, 2)} | ${fmt(row.on, 2)} | ${fmt(row.on / row.off, 3)} |\n`;
  }
  const p = r.pinning;
  md +=
    `\n## Bytes a long-running iterator pins\n\nOn the same database: two iterators on one snapshot (one without, one with auto refresh) ` +
    `are positioned; ${p.written.toLocaleString('en')} keys are written (awaiting between batches, so background work runs), everything is ` +
    `flushed and fully compacted (\`await db.compactRange()\`), and each iterator takes one more step. Bytes held beyond what the current ` +
    `version needs (engine properties), and bytes of logical data left in OPFS pool files because of the iterator:\n\n` +
    `| | memtables | table files | OPFS pool data |\n|---|---:|---:|---:|\n` +
    `| without auto refresh | ${p.off.memtables.toLocaleString('en')} | ${p.off.tables.toLocaleString('en')} | ${p.off.poolDataBytes.toLocaleString('en')} |\n` +
    `| with auto refresh | ${p.on.memtables.toLocaleString('en')} | ${p.on.tables.toLocaleString('en')} | ${p.on.poolDataBytes.toLocaleString('en')} |\n`;
  return md;
}

runMain(main, log);
