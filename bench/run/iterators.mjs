#!/usr/bin/env node
// The auto-refresh iterator benchmark (RocksDB PR 13354's): seekrandom with
// one explicit snapshot for all scans, with and without
// auto_refresh_iterator_with_snapshot, for seek_nexts 100, 20000 and 400000;
// runs alternate and the median of several is kept. Then the bytes a
// long-running iterator pins after a flush and a full compaction, without and
// with auto refresh. Writes docs/bench/iterators.md and docs/bench/iterators.json.
//
//   node bench/run/iterators.mjs [--num 1000000] [--reps 5] [--bin target/release/silt-bench]
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from './args.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const USAGE = 'usage: node bench/run/iterators.mjs [--num N] [--reps N] [--bin PATH]';
const { num, reps, bin } = parseArgs(process.argv.slice(2), { num: 1_000_000, reps: 5, bin: 'target/release/silt-bench' }, USAGE);
const runInfo = startRun(`cargo build --release -p silt-bench && node bench/run/iterators.mjs --num ${num} --reps ${reps}`);
const db = '/tmp/silt-bench-iterators';
const common = ['--db', db, '--num', String(num), '--key-size', '16', '--value-size', '100', '--cache-size', String(1 << 30), '--json'];
const run = (extra) =>
  execFileSync(bin, [...common, ...extra], { encoding: 'utf8', maxBuffer: 64 << 20 })
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));

run(['--benchmarks', 'fillrandom']);
const results = [];
const rows = [];
for (const nexts of [100, 20000, 400000]) {
  // About 20 million entries read per measurement.
  const reads = Math.max(5, Math.round(20_000_000 / (nexts + 1)));
  const times = { 0: [], 1: [] };
  for (let r = 0; r < reps; r++) {
    for (const auto of r % 2 ? [1, 0] : [0, 1]) {
      const [x] = run([
        '--use-existing-db',
        '1',
        '--warm-cache',
        '1',
        '--benchmarks',
        'seekrandom',
        '--seek-nexts',
        String(nexts),
        '--reads',
        String(reads),
        '--explicit-snapshot',
        '1',
        '--auto-refresh-iterator-with-snapshot',
        String(auto),
      ]);
      results.push(x);
      times[auto].push(x.micros_per_op);
      process.stderr.write(`seek_nexts ${nexts} auto_refresh ${auto}: ${x.micros_per_op.toFixed(2)} us/seek\n`);
    }
  }
  const med = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
  rows.push({ nexts, off: med(times[0]), on: med(times[1]) });
}
const [pin] = run([
  '--benchmarks',
  'fillrandom,iteratorpinning',
  '--write-buffer-size',
  String(4 << 20),
  '--target-file-size-base',
  String(4 << 20),
  '--max-bytes-for-level-base',
  String(16 << 20),
]).filter((x) => x.benchmark === 'iteratorpinning');
results.push(pin);

const meta = runInfo.finish();
let md =
  `# Iterators that refresh while keeping their snapshot\n\n## seekrandom with one explicit snapshot\n\n` +
  `${num.toLocaleString('en')} keys (16-byte keys, 100-byte values, LZ4, all cached after a warm-up read); every scan reads at one snapshot taken once ` +
  `(\`--explicit-snapshot 1\`), as RocksDB PR 13354's benchmark did; with and without \`--auto-refresh-iterator-with-snapshot\`. ` +
  `Median of ${reps} alternating runs of each, about 20 million entries read per run. Nothing writes during the scans and background work is finished before timing, so no refresh happens: ` +
  `this measures what the check costs (one atomic load per step).\n\n` +
  metaMarkdown(meta) +
  `\n` +
  `| seek_nexts | µs/seek, off | µs/seek, auto refresh | on / off |\n|---:|---:|---:|---:|\n`;
for (const r of rows) md += `| ${r.nexts.toLocaleString('en')} | ${r.off.toFixed(2)} | ${r.on.toFixed(2)} | ${(r.on / r.off).toFixed(3)} |\n`;
md +=
  `\n## Bytes a long-running iterator pins\n\nA database of ${num.toLocaleString('en')} keys (4 MiB write buffer and files); an iterator with a snapshot ` +
  `is positioned, ${(num / 10).toLocaleString('en')} more keys are written, everything is flushed and fully compacted, and the iterator takes one more step. ` +
  `Bytes held beyond what the current version needs:\n\n| | memtables | table files |\n|---|---:|---:|\n` +
  `| without auto refresh | ${pin.pinned_without_auto_refresh.memtable_bytes.toLocaleString('en')} | ${pin.pinned_without_auto_refresh.table_bytes.toLocaleString('en')} |\n` +
  `| with auto refresh | ${pin.pinned_with_auto_refresh.memtable_bytes.toLocaleString('en')} | ${pin.pinned_with_auto_refresh.table_bytes.toLocaleString('en')} |\n`;
mkdirSync('docs/bench', { recursive: true });
writeFileSync('docs/bench/iterators.json', `${[{ type: 'header', ...meta }, ...results].map((r) => JSON.stringify(r)).join('\n')}\n`);
writeFileSync('docs/bench/iterators.md', md);
process.stderr.write('wrote docs/bench/iterators.md and docs/bench/iterators.json\n');
