// What the model-based tests of the tab protocol share: a backup image to
// import, and the loop over seeded schedules.
import { openMemory } from '../src/index.js';
import { bytes } from './helpers.js';

/** A backup (export stream) of a database holding `key` = `value` alone. */
export async function imageOf(key: string, value: string): Promise<Uint8Array> {
  const src = await openMemory();
  src.put(key, bytes(value));
  const image = new Uint8Array(await new Response(src.export()).arrayBuffer());
  src.close();
  return image;
}

/** An archive of RocksDB tables (`export({ form: 'rocksdb' })`) holding `entries`. */
export async function rocksdbArchiveOf(entries: [string, string][]): Promise<Uint8Array> {
  const src = await openMemory();
  for (const [k, v] of entries) src.put(k, bytes(v));
  const archive = new Uint8Array(await new Response(src.export({ form: 'rocksdb' })).arrayBuffer());
  src.close();
  return archive;
}

/**
 * `count` archives of RocksDB tables, each of two keys `i:<t>:0` and
 * `i:<t>:1` for its own `t` (from `first`), as the protocol model's
 * ingests name their keys: [t, archive].
 */
export async function rocksdbArchivesOf(first: number, count: number): Promise<[string, Uint8Array][]> {
  const out: [string, Uint8Array][] = [];
  for (let n = 0; n < count; n++) {
    const t = String(first + n);
    out.push([
      t,
      await rocksdbArchiveOf([
        [`i:${t}:0`, 'r'],
        [`i:${t}:1`, 'r'],
      ]),
    ]);
  }
  return out;
}

/**
 * Runs `schedule` on seeds `first`, `first + 1`, … (`count` of them, fewer
 * once 20 failures are found or `seconds` have passed): the failures, how
 * many ran, and the seconds they took.
 */
export async function runSeeds(
  first: number,
  count: number,
  schedule: (seed: number) => Promise<string[]>,
  seconds = Number.POSITIVE_INFINITY,
): Promise<{ failures: string[]; run: number; seconds: number }> {
  const started = performance.now();
  const failures: string[] = [];
  let run = 0;
  for (let seed = first; seed < first + count; seed++) {
    failures.push(...(await schedule(seed)));
    run++;
    if (failures.length >= 20) break;
    if (performance.now() - started > seconds * 1000) break;
  }
  return { failures, run, seconds: (performance.now() - started) / 1000 };
}
