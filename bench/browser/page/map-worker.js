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

/** Serves `[op, a, b]` messages, answering through `post`. */
function serve([op, a, b], post) {
  if (op === 'get') post(map.get(a));
  else if (op === 'put') {
    map.set(a, b); // the benchmark's puts overwrite keys already there: `sorted` stays right
    post(0);
  } else if (op === 'scan') post(scan(a, b));
  else if (op === 'fill') {
    for (let i = 0; i < a; i++) map.set(keyTextOf(i), valueFor(i));
    sorted = [...map.keys()].sort();
    post(0);
  } else post({ error: `map-worker: no operation ${op}` });
}

self.onmessage = ({ data }) => {
  // A port from a page of another tab (port-relay.js): served like this worker's own page.
  if (data?.port instanceof MessagePort) {
    const port = data.port;
    port.onmessage = ({ data: m }) => serve(m, (answer) => port.postMessage(answer));
    return;
  }
  serve(data, (answer) => self.postMessage(answer));
};
