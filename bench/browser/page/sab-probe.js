// Issue 34, item 3: what a SharedArrayBuffer channel would save a page's
// get against postMessage, measured bare (no engine, no Silt): a page's
// main thread asks a dedicated worker (sab-worker.js) for the 100-byte value
// of a 16-character key, awaited one at a time, over each channel in turn.
// Over postMessage as the floor of bench:page does (['get', key] out, the
// value cloned back); over the shared buffer with `Atomics.waitAsync` on
// both sides (the page must not block; the worker must stay free for its
// other messages, as a leader is): the key's bytes written in, a counter
// bumped and notified, the answer's bytes copied out. Needs a
// cross-origin-isolated page (SharedArrayBuffer).
import { keyTextOf } from '/bench/common.js';

export const KEYS = 10_000;

/** Mean µs a get over each channel, `n` gets a repetition, `reps` repetitions (the order of the channels alternating). */
export async function run(n, reps) {
  if (!globalThis.crossOriginIsolated) throw new Error('the page is not cross-origin isolated: serve it with SILT_HTTP_ISOLATE=1');
  const w = new Worker('/bench/page/sab-worker.js', { type: 'module' });
  try {
    const sab = new SharedArrayBuffer(64 + 4096);
    const ctl = new Int32Array(sab, 0, 16);
    const data = new Uint8Array(sab, 64);
    let resolveNext;
    w.onmessage = ({ data: d }) => resolveNext(d);
    const next = () =>
      new Promise((r) => {
        resolveNext = r;
      });
    const ready = next();
    w.postMessage({ sab, keys: KEYS });
    await ready;
    const enc = new TextEncoder();
    const post = (k) => {
      const p = next();
      w.postMessage(['get', k]);
      return p;
    };
    let answered = 0;
    const shared = async (k) => {
      const b = enc.encode(k);
      data.set(b);
      ctl[2] = b.length;
      Atomics.add(ctl, 0, 1);
      Atomics.notify(ctl, 0);
      const a = Atomics.waitAsync(ctl, 1, answered);
      if (a.async) await a.value;
      answered = Atomics.load(ctl, 1);
      return data.slice(0, ctl[2]);
    };
    const channels = [
      ['postMessage', post],
      ['SharedArrayBuffer', shared],
    ];
    const out = { postMessage: [], SharedArrayBuffer: [] };
    for (let rep = 0; rep < reps; rep++) {
      const order = rep % 2 === 0 ? channels : [...channels].reverse();
      for (const [name, get] of order) {
        for (let i = 0; i < 200; i++) await get(keyTextOf(i));
        const keys = Array.from({ length: n }, () => Math.floor(Math.random() * KEYS));
        let sum = 0;
        let want = 0;
        const t0 = performance.now();
        for (const i of keys) {
          const v = await get(keyTextOf(i));
          sum += v[0] + v[99];
        }
        const us = ((performance.now() - t0) * 1000) / n;
        for (const i of keys) want += (i & 255) + ((i + 99) & 255);
        if (sum !== want) throw new Error(`${name}: the values read back do not match their keys`);
        out[name].push(us);
      }
    }
    return out;
  } finally {
    w.terminate();
  }
}
