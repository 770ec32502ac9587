// Which keys a run of the page benchmark reads and writes (bench/run/page.mjs,
// bench/run/storage.mjs), and Silt's timed gets of them in a worker:
// the same indices for every peer in one repetition, drawn from a PRNG
// seeded by the run, uniform among the keys written.
import { below, checksum, expectedChecksum, keyTextOf, rng, valueFor } from '../common.js';

/** `n` indices in [0, keys), uniform, from `seed`. */
export function drawIndices(n, keys, seed) {
  const next = rng(seed);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = below(next, keys);
  return out;
}

/** Writes keys 0..keys-1 with their values into Silt's worker `db`, in batches of 1,000, then flushes and waits for its background work. */
export async function fillSilt(db, keys) {
  for (let b = 0; b < keys; b += 1000) {
    const batch = db.batch();
    for (let i = b; i < Math.min(keys, b + 1000); i++) batch.put(keyTextOf(i), valueFor(i));
    db.write(batch);
  }
  db.flush();
  await db.idle();
}

/**
 * `n` gets of random keys from Silt's worker `db` (values owned by the
 * caller, every byte read and checked against what the keys predict, after
 * 200 untimed): µs per get. `who` names it in the error of a wrong read.
 */
export function timeSiltGets(db, n, keys, seed, who) {
  const idx = drawIndices(n, keys, seed);
  const ks = Array.from(idx, keyTextOf);
  for (let i = 0; i < Math.min(200, n); i++) db.get(ks[i]); // warm up
  let sum = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) sum += checksum(db.get(ks[i]));
  const us = ((performance.now() - t0) * 1000) / n;
  let want = 0;
  for (const i of idx) want += expectedChecksum(i);
  if (sum !== want) throw new Error(`${who}: get read ${sum}, not ${want}`);
  return us;
}
