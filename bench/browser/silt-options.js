// Silt's tuned options in the browser benchmarks: the suite's `silt` engine
// (engines/silt.js) and the A/B probes (bench/run/read-ab.mjs) open with
// these.
//
// Tuned: a block cache that holds the whole data set (SQLite gets the same
// budget as its page cache), and more free OPFS files ready for a bulk load
// (siltdb's README: PoolExhausted).
export const TUNED = {
  blockCacheCapacity: 64 << 20,
  bloomBitsPerKey: 10,
  compression: 'lz4',
  writeBufferSize: 4 << 20,
  maxWriteBufferNumber: 2,
  blockSize: 4096,
  poolReserve: 32,
  sync: false,
  // For the counter workload's merge (bench/browser/workloads.js): costs
  // nothing where no merge is written.
  mergeOperator: 'u64add',
};
