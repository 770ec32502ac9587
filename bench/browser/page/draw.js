// Which keys a run of the page benchmark reads and writes (bench/run/page.mjs):
// the same indices for every peer in one repetition, drawn from a PRNG
// seeded by the run, uniform among the keys written.
import { below, rng } from '../common.js';

/** `n` indices in [0, keys), uniform, from `seed`. */
export function drawIndices(n, keys, seed) {
  const next = rng(seed);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = below(next, keys);
  return out;
}
