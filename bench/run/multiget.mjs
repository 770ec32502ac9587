#!/usr/bin/env node
// RocksDB PR 5011's MultiGet table, natively: rows Get / MultiGet (no
// batching) / MultiGet (batched), columns batch sizes 1..32, blocks for
// strides 0, 16, 256, 4096; micros per key. Runs silt-bench, and RocksDB's
// rows too when silt-bench was built with --features rocksdb.
// Writes docs/bench/multiget.md and docs/bench/multiget.json.
//
//   node bench/run/multiget.mjs [--num 2000000] [--reads 100000] [--engines silt,rocksdb] [--bin target/release/silt-bench]
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { list, parseArgs } from './args.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const USAGE = 'usage: node bench/run/multiget.mjs [--num N] [--reads N] [--engines silt,rocksdb] [--bin PATH]';
const o = parseArgs(process.argv.slice(2), { num: 2_000_000, reads: 100_000, engines: 'silt', bin: 'target/release/silt-bench' }, USAGE);
const { num, reads, bin } = o;
const engines = list(o.engines);
const runInfo = startRun(
  `cargo build --release -p silt-bench${engines.includes('rocksdb') ? ' --features rocksdb' : ''} && node bench/run/multiget.mjs --num ${num} --reads ${reads} --engines ${engines.join(',')}`,
);
const batches = [1, 2, 4, 8, 16, 32];
const strides = [0, 16, 256, 4096];
const rows = [
  ['Get', ['--multiread-get', '1']],
  ['MultiGet (no batching)', ['--multiread-batched', '0']],
  ['MultiGet (batched)', ['--multiread-batched', '1']],
];
// PR 5011's database shape: several levels, no compression, all cached.
const shape = [
  '--key-size',
  '16',
  '--value-size',
  '100',
  '--compression',
  'none',
  '--bloom-bits',
  '10',
  '--cache-size',
  String(4 << 30),
  '--write-buffer-size',
  String(4 << 20),
  '--target-file-size-base',
  String(4 << 20),
  '--max-bytes-for-level-base',
  String(16 << 20),
];

function run(engine, extra) {
  const out = execFileSync(bin, ['--engine', engine, '--db', `/tmp/silt-bench-multiget-${engine}`, '--num', String(num), ...shape, '--json', ...extra], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  return out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

const lines = [];
const table = {};
for (const engine of engines) {
  process.stderr.write(`${engine}: fillrandom ${num}\n`);
  lines.push(...run(engine, ['--benchmarks', 'fillrandom', '--batch-size', '1000']));
  for (const stride of strides) {
    for (const [row, flags] of rows) {
      for (const b of batches) {
        const r = run(engine, [
          // Every entry read once first: the block cache holds everything,
          // as after PR 5011's readseq.
          '--use-existing-db',
          '1',
          '--warm-cache',
          '1',
          '--benchmarks',
          'multireadrandom',
          '--reads',
          String(reads),
          '--batch-size',
          String(b),
          '--multiread-stride',
          String(stride),
          ...flags,
        ]).find((x) => x.benchmark === 'multireadrandom');
        lines.push(r);
        table[`${engine}|${stride}|${row}|${b}`] = r.micros_per_op;
        process.stderr.write(`${engine} stride ${stride} ${row} batch ${b}: ${r.micros_per_op.toFixed(3)} us/key\n`);
      }
    }
  }
}

const meta = runInfo.finish();
let md =
  `# MultiGet: RocksDB PR 5011's table, native\n\nMicros per key (lower is better), ${num.toLocaleString('en')} keys of 16 bytes, values of 100 bytes, ` +
  `${reads.toLocaleString('en')} keys read per cell; compression none, bloom 10 bits, cache holds everything, 4 MiB write buffer and target file size, ` +
  `16 MiB level base; single thread. Keys in a batch: start, start+S, start+2S, … (S = 0: all random).\n\n` +
  metaMarkdown(meta);
md += '\nThe same table in Chromium, through the `siltdb` package on OPFS: [multiget-browser.md](multiget-browser.md).\n';
const strideName = {
  0: 'Random pattern (stride 0)',
  16: 'Good locality (stride 16)',
  256: 'Good locality (stride 256)',
  4096: 'Medium locality (stride 4096)',
};
for (const stride of strides) {
  md += `\n### ${strideName[stride]}\n\n| engine | row | ${batches.join(' | ')} |\n|---|---|${batches.map(() => '---:').join('|')}|\n`;
  for (const engine of engines) {
    for (const [row] of rows) {
      md += `| ${engine} | ${row} | ${batches.map((b) => table[`${engine}|${stride}|${row}|${b}`].toFixed(3)).join(' | ')} |\n`;
    }
  }
}
mkdirSync('docs/bench', { recursive: true });
writeFileSync('docs/bench/multiget.json', `${[{ type: 'header', ...meta }, ...lines].map((l) => JSON.stringify(l)).join('\n')}\n`);
writeFileSync('docs/bench/multiget.md', md);
process.stderr.write('wrote docs/bench/multiget.md and docs/bench/multiget.json\n');
