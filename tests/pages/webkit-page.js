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

/** A frame of this page (webkit-frame.html), once its siltdb has loaded: a realm with its own locks, channels and workers. */
async function frame() {
  const f = document.createElement('iframe');
  f.src = new URL('./webkit-frame.html', import.meta.url).href;
  document.body.append(f);
  for (let i = 0; i < 300 && f.contentDocument?.body?.dataset.state !== 'ready'; i++) await new Promise((r) => setTimeout(r, 50));
  if (f.contentWindow?.lib === undefined) throw new Error('the frame did not load siltdb in 15 s');
  return f;
}

/**
 * Two realms (frames) connect() to one database: the first leads, the
 * second writes through it; the leader's frame goes (its worker with it)
 * and the second leads, with every acknowledged write there.
 */
async function twoRealms() {
  const name = 'webkit-realms';
  const a = await frame();
  const b = await frame();
  const dbA = await a.contentWindow.lib.connect(name, { signal: AbortSignal.timeout(15_000) });
  const dbB = await b.contentWindow.lib.connect(name, { signal: AbortSignal.timeout(15_000) });
  const roles = [dbA.isLeader, dbB.isLeader];
  const n = 300;
  for (let i = 0; i < n; i++) await dbB.put(`k${String(i).padStart(4, '0')}`, enc.encode(String(i)), { sync: i % 50 === 0 });
  const readByA = await dbA.count();
  a.remove(); // the leading realm goes, and its worker with it
  let leads = false;
  for (let i = 0; i < 400 && !leads; i++) {
    leads = dbB.isLeader;
    if (!leads) await new Promise((r) => setTimeout(r, 50));
  }
  const back = [];
  for await (const [, v] of dbB.iterator()) back.push(Number(dec.decode(v)));
  await dbB.close();
  b.remove();
  const inOrder = back.every((v, i) => v === i);
  return { roles, readByA, leadsAfter: leads, back: back.length, inOrder };
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
  results.checks.push(await check('two realms through connect()', twoRealms));
  results.checks.push({ name: 'the shared scenarios through open()', ...(await inWorker('suite')) });
  // A worker killed while it writes: every batch persisted() acknowledged is there.
  const killed = await inWorker('stream', { name: 'webkit-killed' }, 1500);
  results.checks.push({ name: 'killed while writing', ...killed });
  results.checks.push({ name: 'after the kill', ...(await inWorker('count', { name: 'webkit-killed' })) });
}

document.getElementById('out').textContent = JSON.stringify(results, null, 2);
document.body.dataset.state = 'done';
if (report !== null) await fetch(report, { method: 'POST', body: JSON.stringify(results) });
