// The handle budget on real OPFS (tests/e2e/handle-budget.spec.ts): this
// worker counts the sync access handles it has open (createSyncAccessHandle
// and close, wrapped once the module loads), opens databases with heavy
// pools until the budget refuses one, and keeps them open for the test to
// look at.
import { open, SiltError } from '/siltdb/dist/index.js';

const counts = { open: 0, peak: 0 };
const proto = globalThis.FileSystemFileHandle?.prototype;
if (proto?.createSyncAccessHandle !== undefined) {
  const create = proto.createSyncAccessHandle;
  proto.createSyncAccessHandle = async function (...args) {
    const handle = await create.apply(this, args);
    counts.open++;
    counts.peak = Math.max(counts.peak, counts.open);
    const close = handle.close.bind(handle);
    let closed = false;
    handle.close = () => {
      if (!closed) {
        closed = true;
        counts.open--;
      }
      return close();
    };
    return handle;
  };
}

/** The databases `openMany` keeps open, by name. */
const kept = new Map();

const tick = () => new Promise((r) => setTimeout(r, 0));

/**
 * Opens `prefix0`, `prefix1`, ... (up to `most`) with `options`, each
 * written in `bursts` bursts of `tables` flushed tables (the pool grows for
 * them), until an open or a write is refused; keeps those opened. Returns
 * how many opened, the refusal, and the handles open now and at most.
 */
export async function openMany({ prefix, most, options, bursts = 3, tables = 6 }) {
  let refused = null;
  let opened = 0;
  for (let i = 0; i < most && refused === null; i++) {
    try {
      const db = await open(`${prefix}${i}`, options);
      kept.set(`${prefix}${i}`, db);
      opened++;
      for (let b = 0; b < bursts; b++) {
        for (let t = 0; t < tables; t++) {
          for (let k = 0; k < 50; k++) db.put(`k${b}-${t}-${k}`, new Uint8Array(64).fill(k));
          db.flush();
        }
        await tick();
      }
      await db.idle();
    } catch (e) {
      refused = e instanceof SiltError ? { code: e.code, message: e.message } : { code: 'not a SiltError', message: String(e) };
    }
  }
  const handles = [...kept.values()].map((db) => db.statistics().handles);
  return { opened, refused, open: counts.open, peak: counts.peak, handles };
}

/** Closes the databases `openMany` opened whose names start with `prefix` (parked: their handles stay open a moment). */
export async function closeMany({ prefix }) {
  let n = 0;
  for (const [name, db] of kept) {
    if (!name.startsWith(prefix)) continue;
    db.close();
    kept.delete(name);
    n++;
  }
  return { closed: n, open: counts.open };
}

/** The handles this worker has open now and at most. */
export async function handleCounts() {
  return { ...counts };
}
