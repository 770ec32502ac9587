// The floor of a page's call (bench/run/page.mjs): a dedicated worker that
// answers from a Map, behind the same minimal layer as SQLite (rpc.js). A
// get: the key in, the value out (the Map's Uint8Array, cloned by
// postMessage); a put: the key and value in, 0 out; a scan: the start key
// in, `n` [key, value] entries out in one message (from a sorted array of
// the keys, by binary search). Nothing a database does: what any request
// from a page to a worker costs at least.
// `putLogged` is the floor of a put that outlives its tab: the same put, its
// key and value first appended to an OPFS file through a sync access handle
// (as a write-ahead log is, not flushed: a put of default durability), the
// file opened by `openLog`.
import { keyTextOf, valueFor } from '../common.js';

const map = new Map();
let sorted = [];
/** The OPFS file `putLogged` appends to, and where its end is. */
let log;
let logEnd = 0;
const enc = new TextEncoder();

/** Appends `key` and `value` to the log, a length-prefixed record in one write. */
function append(key, value) {
  const k = enc.encode(key);
  const rec = new Uint8Array(8 + k.length + value.length);
  const dv = new DataView(rec.buffer);
  dv.setUint32(0, k.length, true);
  dv.setUint32(4, value.length, true);
  rec.set(k, 8);
  rec.set(value, 8 + k.length);
  logEnd += log.write(rec, { at: logEnd });
}

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
  } else if (op === 'putLogged') {
    append(a, b);
    map.set(a, b);
    post(0);
  } else if (op === 'scan') post(scan(a, b));
  else if (op === 'openLog') {
    navigator.storage
      .getDirectory()
      .then((root) => root.getFileHandle(`map-worker-log-${a}`, { create: true }))
      .then((f) => f.createSyncAccessHandle())
      .then((h) => {
        log = h;
        log.truncate(0);
        logEnd = 0;
        post(0);
      })
      .catch((e) => post({ error: `map-worker: openLog: ${e}` }));
  } else if (op === 'fill') {
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
