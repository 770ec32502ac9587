#!/usr/bin/env node
// db_bench's workloads natively (bench/native, `silt-bench`) on Silt, and on
// RocksDB when silt-bench was built with --features rocksdb, in one run.
// Writes docs/bench/native.md and docs/bench/native.json.
//
//   node bench/run/native.mjs [--num 1000000] [--reads N] [--engines silt,rocksdb] [--bin target/release/silt-bench]
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { list, parseArgs } from './args.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const USAGE = 'usage: node bench/run/native.mjs [--num N] [--reads N] [--engines silt,rocksdb] [--bin PATH]';
const o = parseArgs(process.argv.slice(2), { num: 1_000_000, reads: 0, engines: 'silt', bin: 'target/release/silt-bench' }, USAGE);
const num = o.num;
const reads = o.reads || Math.min(num, 500_000);
const engines = list(o.engines);
const bin = o.bin;
const build = `cargo build --release -p silt-bench${engines.includes('rocksdb') ? ' --features rocksdb' : ''}`;
const runInfo = startRun(`${build} && node bench/run/native.mjs --num ${num} --reads ${reads} --engines ${engines.join(',')}`);
const common = [
  '--key-size',
  '16',
  '--value-size',
  '100',
  '--compression',
  'lz4',
  '--bloom-bits',
  '10',
  '--cache-size',
  String(1 << 30),
  '--num',
  String(num),
  '--json',
  '--statistics',
  '1',
];

function run(engine, db, extra) {
  const out = execFileSync(bin, ['--engine', engine, '--db', db, ...common, ...extra], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

const MEMTABLE_KEYS = 200_000;
const results = [];
const cell = {};
const note = (engine, name, r) => {
  results.push(r);
  cell[`${engine}|${name}`] = r;
  process.stderr.write(`${engine} ${name}: ${r.micros_per_op.toFixed(3)} us/op, ${Math.round(r.ops_per_sec)} ops/s\n`);
};
for (const engine of engines) {
  const db = `/tmp/silt-bench-native-${engine}`;
  note(engine, 'fillseq', run(engine, db, ['--benchmarks', 'fillseq'])[0]);
  note(engine, 'fillrandom', run(engine, db, ['--benchmarks', 'fillrandom'])[0]);
  const reading = ['--use-existing-db', '1', '--warm-cache', '1', '--reads', String(reads)];
  note(engine, 'readrandom', run(engine, db, [...reading, '--benchmarks', 'readrandom'])[0]);
  note(engine, 'readseq', run(engine, db, ['--use-existing-db', '1', '--benchmarks', 'readseq'])[0]);
  note(
    engine,
    'seekrandom (seek_nexts 100)',
    run(engine, db, [...reading, '--reads', String(Math.floor(reads / 10)), '--benchmarks', 'seekrandom', '--seek-nexts', '100'])[0],
  );
  note(
    engine,
    'multireadrandom (batched, 32)',
    run(engine, db, [...reading, '--benchmarks', 'multireadrandom', '--batch-size', '32', '--multiread-batched', '1'])[0],
  );
  note(engine, 'readwhilewriting', run(engine, db, [...reading, '--benchmarks', 'readwhilewriting'])[0]);
  // Get with 1,000 range tombstones of width 100 present, against none: two
  // databases filled the same way (one with the tombstones), then read in
  // alternation; the median of three reads of each.
  const plain = `/tmp/silt-bench-native-plain-${engine}`;
  const rt = `/tmp/silt-bench-native-rt-${engine}`;
  run(engine, plain, ['--benchmarks', 'fillrandom']);
  run(engine, rt, [
    '--benchmarks',
    'fillrandom',
    '--writes-per-range-tombstone',
    String(Math.floor(num / 1000)),
    '--max-num-range-tombstones',
    '1000',
    '--range-tombstone-width',
    '100',
  ]);
  const a = [];
  const b = [];
  for (let i = 0; i < 3; i++) {
    a.push(run(engine, plain, [...reading, '--benchmarks', 'readrandom'])[0]);
    b.push(run(engine, rt, [...reading, '--benchmarks', 'readrandom'])[0]);
  }
  const median = (v) => [...v].sort((x, y) => x.micros_per_op - y.micros_per_op)[1];
  note(engine, 'readrandom (no range tombstones, median of 3)', median(a));
  note(engine, 'readrandom (1,000 range tombstones, median of 3)', median(b));
  // The data still in the memtable, as most browser databases are: 200,000
  // keys into the 64 MiB write buffer, then read in the same process (a
  // reopen would replay or flush it).
  const inMem = run(engine, `/tmp/silt-bench-native-mem-${engine}`, [
    '--num',
    String(MEMTABLE_KEYS),
    '--reads',
    String(MEMTABLE_KEYS),
    '--seek-nexts',
    '100',
    '--benchmarks',
    'fillrandom,readrandom,seekrandom',
  ]);
  note(
    engine,
    `memtable, ${MEMTABLE_KEYS.toLocaleString('en')} keys: readrandom`,
    inMem.find((r) => r.benchmark === 'readrandom'),
  );
  note(
    engine,
    `memtable, ${MEMTABLE_KEYS.toLocaleString('en')} keys: seekrandom (seek_nexts 100)`,
    inMem.find((r) => r.benchmark === 'seekrandom'),
  );
}

const fp = (r) => {
  const s = r.statistics ?? {};
  const useful = s['rocksdb.bloom.filter.useful'] ?? 0;
  const pos = s['rocksdb.bloom.filter.full.positive'] ?? 0;
  const tp = s['rocksdb.bloom.filter.full.true.positive'] ?? 0;
  return useful + pos - tp > 0 ? (pos - tp) / (useful + pos - tp) : NaN;
};
const names = Object.keys(cell)
  .filter((k) => k.startsWith(`${engines[0]}|`))
  .map((k) => k.split('|')[1]);
const meta = runInfo.finish();
let md =
  `# Native benchmarks (silt-bench)\n\n${num.toLocaleString('en')} keys of 16 bytes, values of 100 bytes; LZ4; bloom 10 bits/key; ` +
  `1 GiB block cache (everything cached after a warm-up read); db_bench's default sizes (64 MiB write buffer and target file, 256 MiB level base); ` +
  `WAL on, no sync; one thread (readwhilewriting: one reader, one writer). Files on /tmp.\n\n` +
  metaMarkdown(meta) +
  `\n` +
  `| benchmark | ${engines.map((e) => `${e} µs/op | ${e} ops/s`).join(' | ')}${engines.length > 1 ? ' | silt / rocksdb (µs) |' : ' |'}\n` +
  `|---|${engines.map(() => '---:|---:').join('|')}${engines.length > 1 ? '|---:|' : '|'}\n`;
for (const n of names) {
  const cols = engines.map((e) => {
    const r = cell[`${e}|${n}`];
    return `${r.micros_per_op.toFixed(3)} | ${Math.round(r.ops_per_sec).toLocaleString('en')}`;
  });
  const ratio = engines.length > 1 ? ` | ${(cell[`silt|${n}`].micros_per_op / cell[`rocksdb|${n}`].micros_per_op).toFixed(2)} |` : ' |';
  md += `| ${n} | ${cols.join(' | ')}${ratio}\n`;
}
md +=
  `\nMeasured bloom false-positive rate in readrandom (from rocksdb.bloom.filter.* statistics): ` +
  engines.map((e) => `${e} ${(100 * fp(cell[`${e}|readrandom`])).toFixed(2)}%`).join(', ') +
  '.\n';
md +=
  `\nGet with 1,000 range tombstones against none (two databases filled alike, read in alternation): ` +
  engines
    .map(
      (e) =>
        `${e} ${(cell[`${e}|readrandom (1,000 range tombstones, median of 3)`].micros_per_op / cell[`${e}|readrandom (no range tombstones, median of 3)`].micros_per_op).toFixed(3)}×`,
    )
    .join(', ') +
  '.\n';
mkdirSync('docs/bench', { recursive: true });
writeFileSync('docs/bench/native.json', `${[{ type: 'header', ...meta }, ...results].map((r) => JSON.stringify(r)).join('\n')}\n`);
writeFileSync('docs/bench/native.md', md);
process.stderr.write('wrote docs/bench/native.md and docs/bench/native.json\n');
