// What the browser soak (reliability.spec.ts) allows memory to do, as pure
// functions of its samples, so that the same check runs on a soak and on
// recorded samples with a leak added (soak-bounds.spec.ts).
//
// Wasm memory only grows: it is the most the heap ever needed at once, so a
// block cache or memtable still filling raises it just as a leak does (a
// fresh-machine CI run failed so: wasm memory 18.3 MB in the middle third,
// 21.9 MB in the last, with a 64 MiB cache not yet full over 13 MB of
// tables). The heap's live bytes (`statistics().memory.heapBytes`, counted
// by the module's allocator) go down as well as up, and the engine says how
// many of them its caches and memtables hold. What is left over, the
// *unaccounted* bytes (table readers, iterators, snapshots' state, the
// pool's buffers, the binding's own), is bounded by the live data: a leak
// shows as that remainder rising with the operations, at its rate per
// operation, however fast or slow the machine that ran them.

export type MemorySample = {
  /** Operations done when the sample was taken. */
  ops: number;
  wasmBytes: number;
  heapBytes: number;
  blockCacheUsage: number;
  rowCacheUsage: number;
  memtableBytes: number;
  pinnedBytes: number;
};

/**
 * Heap bytes the engine does not account for: see the file's comment.
 * Pinned bytes (blocks and memtables held by values handed out) count as
 * accounted: a pinned block may be in the cache as well, counted twice,
 * but that is bounded by what views are held, and subtracting it takes out
 * most of the remainder's swing from one second to the next.
 */
export const unaccounted = (s: MemorySample) => s.heapBytes - s.blockCacheUsage - s.rowCacheUsage - s.memtableBytes - s.pinnedBytes;

/** The least-squares slope of `ys` against `xs`, and its standard error. */
export function slope(xs: number[], ys: number[]): { slope: number; error: number } {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  if (den === 0 || n < 3) return { slope: 0, error: Number.POSITIVE_INFINITY };
  const b = num / den;
  let residuals = 0;
  for (let i = 0; i < n; i++) residuals += (ys[i] - my - b * (xs[i] - mx)) ** 2;
  return { slope: b, error: Math.sqrt(residuals / (n - 2) / den) };
}

/**
 * Growth of unaccounted heap bytes allowed per operation after warm-up. A
 * leak is reported when the slope passes this *and* three standard errors
 * (a slow machine does fewer operations, so its slope is noisier: it is
 * not called a leak for noise alone). A leak of 100 bytes per operation
 * is 4x this (docs/reliability.md has the soaks' figures).
 */
export const LEAK_BYTES_PER_OP = 25;

export type MemoryFigures = {
  /** Unaccounted heap bytes gained per operation after warm-up (slope). */
  unaccountedPerOp: number;
  /** The slope's standard error. */
  unaccountedPerOpError: number;
  unaccounted: { first: number; last: number; peak: number };
  heapBytes: { middle: number; last: number };
  wasmBytes: { middle: number; last: number };
  accounted: { middle: number; last: number };
};

/**
 * The figures, and what in them is a leak, from samples taken while the
 * soak ran (not one taken after everything was released). The first third
 * of the samples is warm-up; the slope is taken over the rest. Wasm memory may grow past
 * the middle third's peak by 15% (the allocator's fragmentation) plus what
 * the heap's own peak grew by: a cache filling up grows both, a leak
 * grows the heap's unaccounted part, which the slope bounds.
 */
export function checkMemory(samples: MemorySample[]): { figures: MemoryFigures; problems: string[] } {
  const third = Math.floor(samples.length / 3);
  const middle = samples.slice(third, 2 * third);
  const last = samples.slice(2 * third);
  const after = samples.slice(third);
  const peak = (xs: MemorySample[], f: (s: MemorySample) => number) => Math.max(...xs.map(f));
  const accounted = (s: MemorySample) => s.blockCacheUsage + s.rowCacheUsage + s.memtableBytes + s.pinnedBytes;
  const fit = slope(
    after.map((s) => s.ops),
    after.map(unaccounted),
  );
  const perOp = fit.slope;
  const figures: MemoryFigures = {
    unaccountedPerOp: Math.round(perOp * 100) / 100,
    unaccountedPerOpError: Math.round(fit.error * 100) / 100,
    unaccounted: { first: unaccounted(after[0]), last: unaccounted(after.at(-1)!), peak: peak(after, unaccounted) },
    heapBytes: { middle: peak(middle, (s) => s.heapBytes), last: peak(last, (s) => s.heapBytes) },
    wasmBytes: { middle: peak(middle, (s) => s.wasmBytes), last: peak(last, (s) => s.wasmBytes) },
    accounted: { middle: peak(middle, accounted), last: peak(last, accounted) },
  };
  const problems: string[] = [];
  if (samples.length < 9) problems.push(`${samples.length} samples: too few to tell growth from noise`);
  if (perOp > LEAK_BYTES_PER_OP && perOp > 3 * fit.error) {
    problems.push(
      `unaccounted heap bytes grew ${figures.unaccountedPerOp} ± ${figures.unaccountedPerOpError} bytes per operation after warm-up (at most ${LEAK_BYTES_PER_OP}): from ${figures.unaccounted.first} to ${figures.unaccounted.last}`,
    );
  }
  const heapGrowth = Math.max(0, figures.heapBytes.last - figures.heapBytes.middle);
  const wasmLimit = figures.wasmBytes.middle * 1.15 + heapGrowth;
  if (figures.wasmBytes.last > wasmLimit) {
    problems.push(
      `wasm memory: last third's peak ${figures.wasmBytes.last} against the middle third's ${figures.wasmBytes.middle}, more than 1.15x plus the heap's growth (${heapGrowth})`,
    );
  }
  return { figures, problems };
}
