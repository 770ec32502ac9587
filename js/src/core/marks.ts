/**
 * User Timing marks of an open's stages (`siltdb:<stage>`), so that a
 * cold start can be read where it went: DevTools' Performance panel shows
 * them (the page's and the worker's, each on its thread), and
 * `bench/run/profile-cold.mjs` reads them from the page and its worker.
 * Set only while opening (a handful per open), never per call.
 */

/** Marks `siltdb:<stage>` now, where there is a `performance.mark` (Node's and every browser's). */
export function markStage(stage: string): void {
  try {
    (globalThis as { performance?: { mark?: (name: string) => unknown } }).performance?.mark?.(`siltdb:${stage}`);
  } catch {
    // A mark is for profiles only: nothing depends on it.
  }
}
