// What siltdb does in a browser that has some of what it needs: the page
// side of tests/webkit/run.mjs (WebKitGTK's MiniBrowser, which no WebDriver
// session can give a persistent OPFS, so results are posted to the runner's
// `report` URL). Plain JavaScript that WebKitGTK 2.50 parses (no `using`).
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

function inWorker(scenario) {
  return new Promise((resolve) => {
    const w = new Worker(new URL('./webkit-worker.js', import.meta.url), { type: 'module' });
    const timer = setTimeout(() => resolve({ ok: false, error: { code: 'timeout', message: 'the worker did not answer in 20 s' } }), 20_000);
    w.onmessage = ({ data }) => {
      clearTimeout(timer);
      w.terminate();
      resolve(data);
    };
    w.onerror = (e) => {
      clearTimeout(timer);
      resolve({ ok: false, error: { code: 'worker-error', message: e.message } });
    };
    w.postMessage(scenario);
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
results.checks.push({ name: 'openMemory in a worker', ...(await inWorker('memory')) });
results.checks.push({ name: 'open in a worker', ...(await inWorker('open')) });
results.checks.push(
  await check('connect on the page', async () => {
    const db = await connect('webkit-connect', { signal: AbortSignal.timeout(15_000) });
    await db.put('k', enc.encode('v'));
    await db.close();
    return 'connected';
  }),
);

document.getElementById('out').textContent = JSON.stringify(results, null, 2);
document.body.dataset.state = 'done';
if (report !== null) await fetch(report, { method: 'POST', body: JSON.stringify(results) });
