// Silt inside a worker, for the page benchmark (bench/run/page.mjs): the
// time a get and a scan of 100 entries take where connect()'s leader runs
// them, with no message at all; what a page's call costs above it is the
// page path. `open()` with the library defaults (as connect()'s leader opens
// its database), its own database filled as the page's, timed here with
// `performance.now()`. Behind the minimal layer of rpc.js.
import { open } from '/siltdb/dist/index.js';
import { checksum, keyTextOf } from '../common.js';
import { drawIndices, fillSilt, timeSiltGets } from './draw.js';

let db;

const ops = {
  async open(name, keys) {
    db = await open(name);
    await fillSilt(db, keys);
    return 0;
  },
  /** `n` gets (values owned by the caller, every byte read): µs per get. */
  get(n, keys, seed) {
    return timeSiltGets(db, n, keys, seed, 'silt in the worker');
  },
  /** `n` scans of 100 entries by `for...of` over `iterator({ gte, limit: 100 })`: µs per scan. */
  scan(n, keys, seed) {
    const ks = Array.from(drawIndices(n, keys - 100, seed), keyTextOf);
    for (let i = 0; i < Math.min(20, n); i++) for (const _ of db.iterator({ gte: ks[i], limit: 100 })); // warm up
    let entries = 0;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      for (const [, v] of db.iterator({ gte: ks[i], limit: 100 })) {
        checksum(v);
        entries++;
      }
    }
    const us = ((performance.now() - t0) * 1000) / n;
    if (entries !== n * 100) throw new Error(`silt in the worker: ${n} scans read ${entries} entries, not ${n * 100}`);
    return us;
  },
  close() {
    db.close();
    return 0;
  },
};

self.onmessage = async ({ data: [op, ...args] }) => {
  try {
    self.postMessage(await ops[op](...args));
  } catch (e) {
    self.postMessage({ error: `silt in the worker, ${op}: ${e?.message ?? e}` });
  }
};
