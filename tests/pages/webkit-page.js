// What siltdb does in a browser whose workers have no OPFS sync access
// handles: the page side of tests/webkit/run.mjs (WebKitGTK's MiniBrowser,
// which no WebDriver session can give a persistent profile, so results are
// posted to the runner's `report` URL). `?phase=write` writes a database
// that `?phase=read`, the next visit with the same profile, reads back.
// Plain JavaScript that WebKitGTK 2.50 parses (no `using`).
import { connect, openMemory, simd128Enabled } from '/siltdb/dist/index.js';

const params = new URLSearchParams(location.search);
const report = params.get('report');
const enc = new TextEncoder();
const dec = new TextDecoder();
const failure = (e) => ({ code: e?.code ?? 'none', message: String(e?.message ?? e), cause: e?.cause?.name });

async function check(name, fn) {
  try {
    return { name, ok: true, value: await fn() };
  } catch (e) {
    return { name, ok: false, error: failure(e) };
  }
}

/** Runs `scenario` in a new worker; with `killAt`, terminates it once it reported that much progress. */
function inWorker(scenario, args, killAt) {
  return new Promise((resolve) => {
    const w = new Worker(new URL('./webkit-worker.js', import.meta.url), { type: 'module' });
    const timer = setTimeout(() => resolve({ ok: false, error: { code: 'timeout', message: 'the worker did not answer in 60 s' } }), 60_000);
    w.onmessage = ({ data }) => {
      if (data.progress !== undefined) {
        if (killAt !== undefined && data.progress >= killAt) {
          clearTimeout(timer);
          w.terminate();
          resolve({ ok: true, value: { acked: data.progress } });
        }
        return;
      }
      clearTimeout(timer);
      w.terminate();
      resolve(data);
    };
    w.onerror = (e) => {
      clearTimeout(timer);
      resolve({ ok: false, error: { code: 'worker-error', message: e.message } });
    };
    w.postMessage({ scenario, args });
  });
}

const results = {
  userAgent: navigator.userAgent,
  env: {
    webLocks: typeof navigator.locks?.request === 'function',
    storageApi: typeof navigator.storage?.getDirectory === 'function',
    sharedWorker: typeof SharedWorker === 'function',
    resizableMemory: typeof WebAssembly.Memory.prototype.toResizableBuffer === 'function',
  },
  checks: [],
};
results.checks.push(await check('simd128', () => simd128Enabled()));
results.checks.push(
  await check('openMemory on the page', async () => {
    const db = await openMemory();
    db.put('k', enc.encode('in memory'));
    const v = dec.decode(db.get('k'));
    db.close();
    return v;
  }),
);
const phase = params.get('phase');
if (phase === 'write') {
  results.checks.push({ name: 'write', ...(await inWorker('write', { name: 'webkit-kept', n: 3000 })) });
} else if (phase === 'read') {
  results.checks.push({ name: 'read', ...(await inWorker('count', { name: 'webkit-kept' })) });
} else {
  results.checks.push({ name: 'openMemory in a worker', ...(await inWorker('memory')) });
  results.checks.push({ name: 'open in a worker', ...(await inWorker('open')) });
  results.checks.push(
    await check('connect on the page', async () => {
      const db = await connect('webkit-connect', { signal: AbortSignal.timeout(15_000) });
      await db.put('k', enc.encode('v'));
      const v = dec.decode(await db.get('k'));
      await db.close();
      return v;
    }),
  );
  results.checks.push({ name: 'the shared scenarios through open()', ...(await inWorker('suite')) });
  // A worker killed while it writes: every batch persisted() acknowledged is there.
  const killed = await inWorker('stream', { name: 'webkit-killed' }, 1500);
  results.checks.push({ name: 'killed while writing', ...killed });
  results.checks.push({ name: 'after the kill', ...(await inWorker('count', { name: 'webkit-killed' })) });
}

document.getElementById('out').textContent = JSON.stringify(results, null, 2);
document.body.dataset.state = 'done';
if (report !== null) await fetch(report, { method: 'POST', body: JSON.stringify(results) });
