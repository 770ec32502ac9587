// A module worker that owns the database: `siltdb`'s calls are synchronous,
// so they belong off the page's main thread.
import { openMemory, simd128Enabled, SiltError } from '/siltdb/dist/index.js';

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** Deterministic records: the same `i` always gives the same key and value. */
function keyOf(i) {
  return `user:${String(i).padStart(8, '0')}`;
}
function valueOf(i) {
  // A small xorshift of i, so values differ in more than their index.
  let x = (i + 1) * 2654435761;
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  const score = (x >>> 0) % 100_000;
  return JSON.stringify({ id: i, name: `user ${i}`, score });
}

function check(n, reads) {
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw new SiltError('InvalidArgument', 'records must be 1 to 1,000,000');
  if (!Number.isInteger(reads) || reads < 1 || reads > 1_000_000) throw new SiltError('InvalidArgument', 'reads must be 1 to 1,000,000');
}

async function run(n, reads) {
  check(n, reads);
  const db = await openMemory();
  try {
    let t = performance.now();
    for (let i = 0; i < n; i++) db.put(keyOf(i), utf8.encode(valueOf(i)));
    const writeMs = performance.now() - t;

    // Random reads over the written range; each value is checked against
    // what was written for that key.
    let seed = 0x9e3779b9;
    const next = () => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    let verified = 0;
    t = performance.now();
    for (let r = 0; r < reads; r++) {
      const i = next();
      const got = db.get(keyOf(i));
      if (got !== undefined && fromUtf8.decode(got) === valueOf(i)) verified++;
    }
    const readMs = performance.now() - t;

    const sample = [];
    for (let i = 0; i < Math.min(5, n); i++) {
      const got = db.get(keyOf(i));
      sample.push([keyOf(i), got === undefined ? '(missing)' : fromUtf8.decode(got)]);
    }

    db.delete(keyOf(0));
    const deleted = db.get(keyOf(0));
    const missing = db.get(keyOf(n));
    return {
      written: n,
      writeMs,
      reads,
      verified,
      readMs,
      sample,
      deletedGet: deleted === undefined ? 'undefined' : fromUtf8.decode(deleted),
      missingGet: missing === undefined ? 'undefined' : fromUtf8.decode(missing),
    };
  } finally {
    db.close();
  }
}

function reportError(e) {
  const code = e instanceof SiltError ? e.code : 'Error';
  postMessage({ type: 'error', code, message: e instanceof Error ? e.message : String(e) });
}

self.addEventListener('message', async ({ data }) => {
  if (data.type !== 'run') return;
  try {
    postMessage({ type: 'result', result: await run(data.n, data.reads) });
  } catch (e) {
    reportError(e);
  }
});

try {
  postMessage({ type: 'ready', simd128: await simd128Enabled() });
} catch (e) {
  reportError(e);
}
