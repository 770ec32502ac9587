#!/usr/bin/env node
// Storage bytes of one JSON data set (bench/browser/records.js: an online
// shop's orders, ~400 bytes of JSON each) in Silt with and without a
// compression dictionary, IndexedDB and SQLite-wasm, in one dedicated worker
// of Debian's Chromium with a kept profile (bench/browser/page/bytes-worker.js
// says how each is written and measured), and what a dictionary costs a get:
// random gets with a block cache that holds every block (read once before)
// and with a 1 MiB one (most gets read and decompress a block), the
// configurations taking turns; and what it costs a fill and a compaction. Writes docs/bench/bytes.{json,md} (or --out DIR).
//
// Then large values (200 of 1 MiB of noise, like media): Silt (library
// defaults) and IndexedDB, each value put alone and read back, and Silt's
// write amplification over a load that overwrites every value twice more.
//
//   node bench/run/bytes.mjs [--records 100000] [--gets 20000] [--reps 3] [--dict 16384]
//                            [--large 200] [--large-size 1048576] [--out docs/bench]
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, runMain } from './args.mjs';
import { withBenchPage } from './browser-session.mjs';
import { metaMarkdown, startRun } from './machine.mjs';

const o = parseArgs(
  process.argv.slice(2),
  { records: 100_000, gets: 20_000, reps: 3, dict: 16_384, large: 200, 'large-size': 1 << 20, out: 'docs/bench', 'timeout-min': 30 },
  'usage: node bench/run/bytes.mjs [--records N] [--gets N] [--reps N] [--dict BYTES] [--large N] [--large-size BYTES] [--out DIR]',
);
const log = (m) => process.stderr.write(`[bytes] ${m}\n`);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Silt's configurations: a name and the options over the defaults. */
const SILT = (dict) => [
  ['lz4', 'Silt, defaults (LZ4 per 4 KiB block)', {}],
  ['dict', `Silt, \`compressionDictBytes: ${dict}\``, { compressionDictBytes: dict }],
];
const SMALL_CACHE = 1 << 20;
const BIG_CACHE = 256 << 20;

async function main() {
  const info = startRun(
    `bash scripts/build.sh && node bench/run/bytes.mjs --records ${o.records} --gets ${o.gets} --reps ${o.reps} --dict ${o.dict} --large ${o.large} --large-size ${o['large-size']}`,
  );
  await withBenchPage(
    async ({ page, browser }) => {
      const result = await page.evaluate(
        async ({ records, gets, reps, configs, smallCache, bigCache, large, largeSize }) => {
          const { rpc } = await import('/bench/page/rpc.js');
          const call = rpc(new Worker('/bench/page/bytes-worker.js', { type: 'module' }));
          const out = { silt: {}, gets: {}, sample: await call(['sample', 7]) };
          const add = (row, us) => {
            out.gets[row] = [...(out.gets[row] ?? []), us];
          };
          // Bytes, and gets with the default block cache.
          for (const [name, , options] of configs)
            out.silt[name] = await call(['silt', `bench-bytes-${name}`, { ...options, blockCacheCapacity: bigCache }, records]);
          for (let rep = 0; rep < reps; rep++) {
            const order = rep % 2 === 0 ? configs : [...configs].reverse();
            for (const [name] of order) add(`${name} cached`, await call(['siltGets', `bench-bytes-${name}`, records, gets, 100 + rep]));
          }
          for (const [name] of configs) await call(['closeSilt', `bench-bytes-${name}`]);
          // Gets with a 1 MiB block cache: most read and decompress a block.
          for (const [name, , options] of configs) await call(['silt', `bench-bytes-${name}`, { ...options, blockCacheCapacity: smallCache }, records]);
          for (let rep = 0; rep < reps; rep++) {
            const order = rep % 2 === 0 ? configs : [...configs].reverse();
            for (const [name] of order) add(`${name} 1 MiB cache`, await call(['siltGets', `bench-bytes-${name}`, records, gets, 200 + rep]));
          }
          for (const [name] of configs) await call(['closeSilt', `bench-bytes-${name}`]);
          out.idb = await call(['idb', 'bench-bytes-idb', records]);
          out.sqlite = await call(['sqlite', 'bench-bytes-sqlite', records]);
          out.large = {
            silt: await call(['siltLarge', 'bench-bytes-large', {}, large, largeSize, 2]),
            idb: await call(['idbLarge', 'bench-bytes-large-idb', large, largeSize]),
          };
          return out;
        },
        {
          records: o.records,
          gets: o.gets,
          reps: o.reps,
          configs: SILT(o.dict),
          smallCache: SMALL_CACHE,
          bigCache: BIG_CACHE,
          large: o.large,
          largeSize: o['large-size'],
        },
      );
      const meta = info.finish({ browser });
      const gets = Object.fromEntries(Object.entries(result.gets).map(([k, v]) => [k, median(v)]));
      const goals = {
        dictSaving: 1 - result.silt.dict.compacted.tableBytes / result.silt.lz4.compacted.tableBytes,
        getCached: gets['dict cached'] / gets['lz4 cached'],
        getSmallCache: gets['dict 1 MiB cache'] / gets['lz4 1 MiB cache'],
        vsIdb: result.silt.dict.compacted.tableBytes / result.idb.bytes,
        vsIdbDefaults: result.silt.lz4.compacted.tableBytes / result.idb.bytes,
        largeVsIdb: (result.large.idb.writeMs + result.large.idb.readMs) / (result.large.silt.writeMs + result.large.silt.readMs),
        writeAmplification: result.large.silt.written / result.large.silt.put,
      };
      mkdirSync(o.out, { recursive: true });
      const lines = [
        { type: 'header', ...meta, options: { records: o.records, gets: o.gets, reps: o.reps, dict: o.dict, large: o.large, largeSize: o['large-size'] } },
        { type: 'result', ...result, getsMedian: gets, goals },
      ];
      writeFileSync(join(o.out, 'bytes.json'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
      const md = markdown(meta, result, gets, goals);
      writeFileSync(join(o.out, 'bytes.md'), md);
      process.stdout.write(md);
    },
    { timeoutMin: o['timeout-min'], log, path: 'bench/page/' },
  );
}

function markdown(meta, r, gets, goals) {
  const mb = (b) => `${(b / 1e6).toFixed(2)} MB`;
  const pct = (x) => `${(x * 100).toFixed(1)}%`;
  const met = (ok) => (ok ? 'yes' : '**no**');
  const n = o.records.toLocaleString('en-US');
  const user = r.silt.lz4.user;
  let md =
    `# Storage bytes of ${n} JSON records: Silt with and without a compression dictionary, IndexedDB, SQLite-wasm (Chromium)\n\n` +
    'Generated by `node bench/run/bytes.mjs` (the worker side in bench/browser/page/bytes-worker.js; the records from bench/browser/records.js). ' +
    `The data set: ${n} orders of an online shop as JSON (field names in every record, values from realistic sets, unique ids and timestamps), ` +
    `${mb(user)} of keys and JSON together (${(user / o.records).toFixed(0)} bytes a record). One of them:\n\n` +
    `\`\`\`\n${r.sample.key} ${r.sample.json}\n\`\`\`\n\n` +
    'Silt (`open()` on OPFS): the JSON\'s UTF-8 bytes, written in key order in batches of 1,000, flushed, background work done ("after the fill"), ' +
    'then `compactRange()` (every table rewritten into the bottommost level, where dictionaries are made); bytes are `statistics().properties.tableBytes`. ' +
    "IndexedDB: each record as an object (what an app stores), a readwrite transaction per 1,000; bytes are the growth of `navigator.storage.estimate()`'s IndexedDB usage, 2 s after the last commit. " +
    "SQLite-wasm (the suite's adapter: opfs-sahpool, `kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID`, no pragma): the same JSON bytes, a transaction per 1,000; bytes are page_count × page_size.\n\n" +
    metaMarkdown(meta) +
    '\n| store | bytes | of the user data | files per level | time |\n|---|---:|---:|---|---:|\n';
  for (const [name, label] of SILT(o.dict)) {
    const s = r.silt[name];
    md += `| ${label}, after the fill | ${mb(s.filled.tableBytes)} | ${pct(s.filled.tableBytes / user)} | \`[${s.filled.filesPerLevel}]\` | fill ${(s.fillMs / 1000).toFixed(2)} s |\n`;
    md += `| ${label}, after \`compactRange()\` | ${mb(s.compacted.tableBytes)} | ${pct(s.compacted.tableBytes / user)} | \`[${s.compacted.filesPerLevel}]\` | compaction ${(s.compactMs / 1000).toFixed(2)} s |\n`;
  }
  md += `| IndexedDB (objects) | ${mb(r.idb.bytes)} | ${pct(r.idb.bytes / user)} | | |\n`;
  md += `| SQLite-wasm ${r.sqlite.version} | ${mb(r.sqlite.bytes)} | ${pct(r.sqlite.bytes / user)} | ${r.sqlite.pages} pages of ${r.sqlite.pageSize} | |\n`;
  md +=
    `\nGets (\`db.get(key)\`, a copy the caller owns, every byte read), ${o.gets.toLocaleString('en-US')} random records a repetition, the configurations taking turns; median of ${o.reps}:\n\n` +
    '| get | LZ4 | with the dictionary | ratio |\n|---|---:|---:|---:|\n' +
    `| 256 MiB block cache (every block in it: read once before) | ${gets['lz4 cached'].toFixed(2)} µs | ${gets['dict cached'].toFixed(2)} µs | ${goals.getCached.toFixed(2)}× |\n` +
    `| 1 MiB block cache (most gets read and decompress a block) | ${gets['lz4 1 MiB cache'].toFixed(2)} µs | ${gets['dict 1 MiB cache'].toFixed(2)} µs | ${goals.getSmallCache.toFixed(2)}× |\n` +
    "\nIssue 36's goals for dictionaries, from this run:\n\n| goal | result | met |\n|---|---|---|\n" +
    `| table bytes ≥ 25% smaller with a dictionary than with plain LZ4 | ${pct(goals.dictSaving)} smaller | ${met(goals.dictSaving >= 0.25)} |\n` +
    `| reads no more than 10% slower | ${goals.getCached.toFixed(2)}× cached, ${goals.getSmallCache.toFixed(2)}× decompressing | ${met(goals.getCached <= 1.1 && goals.getSmallCache <= 1.1)} |\n` +
    `| Silt's bytes ≤ 0.5× IndexedDB's | ${goals.vsIdb.toFixed(2)}× with the dictionary (${goals.vsIdbDefaults.toFixed(2)}× without) | ${met(goals.vsIdb <= 0.5)} |\n`;
  const L = r.large;
  const size = o['large-size'];
  const mbs = (ms) => `${((o.large * size) / 1e6 / (ms / 1000)).toFixed(0)} MB/s`;
  md +=
    `\n## Large values: ${o.large} of ${(size / 2 ** 20).toFixed(size % 2 ** 20 === 0 ? 0 : 2)} MiB\n\n` +
    'Noise (media does not compress), each value put alone and awaited as the store allows (Silt: `db.put`, then `await db.idle()` once at the end; IndexedDB: a readwrite transaction per value, awaited until complete), then every value read back and every byte summed (Silt: `db.get`; IndexedDB: a readonly transaction per value). ' +
    "Silt's library defaults: no blob files yet, so the values live in its tables and WAL. Its write amplification is over a load that then overwrites every value twice (each pass followed by `idle()`): bytes written to its WAL, flushes and compactions (its tickers) per byte put.\n\n" +
    '| | write | read | write + read | bytes on storage |\n|---|---:|---:|---:|---:|\n' +
    `| Silt | ${(L.silt.writeMs / 1000).toFixed(2)} s (${mbs(L.silt.writeMs)}) | ${(L.silt.readMs / 1000).toFixed(2)} s (${mbs(L.silt.readMs)}) | ${((L.silt.writeMs + L.silt.readMs) / 1000).toFixed(2)} s | ${mb(L.silt.tableBytes)} of tables after the updates, \`[${L.silt.filesPerLevel}]\` |\n` +
    `| IndexedDB | ${(L.idb.writeMs / 1000).toFixed(2)} s (${mbs(L.idb.writeMs)}) | ${(L.idb.readMs / 1000).toFixed(2)} s (${mbs(L.idb.readMs)}) | ${((L.idb.writeMs + L.idb.readMs) / 1000).toFixed(2)} s | ${mb(L.idb.bytes)} |\n` +
    `\nWrite + read: Silt ${goals.largeVsIdb.toFixed(2)}× IndexedDB's speed (goal with blob files ≥ 2×). ` +
    `Write amplification without blob files: ${goals.writeAmplification.toFixed(2)} (${mb(L.silt.written)} written for ${mb(L.silt.put)} put; goal with blob files ≤ 1.5).\n`;
  return md;
}

runMain(main);
