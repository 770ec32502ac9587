// The floor of a page's call (bench/run/page.mjs): a dedicated worker that
// answers from a Map, behind the same minimal layer as SQLite (rpc.js). A
// get: the key in, the value out (the Map's Uint8Array, cloned by
// postMessage); a put: the key and value in, 0 out; a scan: the start key
// in, `n` [key, value] entries out in one message (from a sorted array of
// the keys, by binary search). Nothing a database does: what any request
// from a page to a worker costs at least.
import { keyTextOf, valueFor } from '../common.js';

const map = new Map();
let sorted = [];

function scan(start, n) {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < start) lo = mid + 1;
    else hi = mid;
  }
  return sorted.slice(lo, lo + n).map((k) => [k, map.get(k)]);
}

self.onmessage = ({ data: [op, a, b] }) => {
  if (op === 'get') self.postMessage(map.get(a));
  else if (op === 'put') {
    map.set(a, b); // the benchmark's puts overwrite keys already there: `sorted` stays right
    self.postMessage(0);
  } else if (op === 'scan') self.postMessage(scan(a, b));
  else if (op === 'fill') {
    for (let i = 0; i < a; i++) map.set(keyTextOf(i), valueFor(i));
    sorted = [...map.keys()].sort();
    self.postMessage(0);
  } else self.postMessage({ error: `map-worker: no operation ${op}` });
};
