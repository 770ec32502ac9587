// A run's random numbers from its seed (mulberry32), for the browser tests'
// drivers in Node (tests/reliability.mjs re-exports it) and their pages
// (served as /test-pages/schedule.js): one seed replays both.

/** mulberry32: a run's random numbers from its seed. */
export function schedule(seed) {
  let a = (seed ^ 0x5bd1e995) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
