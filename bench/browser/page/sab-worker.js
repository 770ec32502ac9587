// The worker of sab-probe.js: answers gets from a Map over postMessage
// (['get', key] -> the value) and over the SharedArrayBuffer the page hands
// it ({ sab, keys }), on which it waits with `Atomics.waitAsync`, so that
// its event loop stays free for messages. The buffer: an Int32Array of 16
// at byte 0 ([0] requests, bumped by the page; [1] answers, bumped here;
// [2] the byte length of what follows), then the key or the value at byte 64.
import { keyTextOf } from '/bench/common.js';

const map = new Map();
const dec = new TextDecoder();

function valueOfKey(i) {
  const v = new Uint8Array(100);
  for (let j = 0; j < 100; j++) v[j] = (i + j) & 255;
  return v;
}

async function serve(ctl, data) {
  let seen = 0;
  for (;;) {
    const w = Atomics.waitAsync(ctl, 0, seen);
    if (w.async) await w.value;
    seen = Atomics.load(ctl, 0);
    // TextDecoder refuses a view of shared memory: a copy of the key's bytes.
    const v = map.get(dec.decode(data.slice(0, ctl[2])));
    data.set(v, 0);
    ctl[2] = v.byteLength;
    Atomics.add(ctl, 1, 1);
    Atomics.notify(ctl, 1);
  }
}

self.onmessage = ({ data: m }) => {
  if (m.sab !== undefined) {
    for (let i = 0; i < m.keys; i++) map.set(keyTextOf(i), valueOfKey(i));
    serve(new Int32Array(m.sab, 0, 16), new Uint8Array(m.sab, 64));
    postMessage('ready');
    return;
  }
  postMessage(map.get(m[1]));
};
