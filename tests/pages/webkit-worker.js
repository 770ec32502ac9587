// The worker side of webkit-page.js: open() on OPFS, or openMemory().
import { open, openMemory } from '/siltdb/dist/index.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

self.onmessage = async ({ data: scenario }) => {
  try {
    const db = scenario === 'memory' ? await openMemory() : await open('webkit-open', { signal: AbortSignal.timeout(10_000) });
    db.put('k', enc.encode(scenario));
    const value = dec.decode(db.get('k'));
    db.close();
    postMessage({
      ok: true,
      value,
      env: { syncAccessHandles: typeof FileSystemFileHandle === 'function' && 'createSyncAccessHandle' in FileSystemFileHandle.prototype },
    });
  } catch (e) {
    postMessage({ ok: false, error: { code: e?.code ?? 'none', message: String(e?.message ?? e), cause: e?.cause?.name } });
  }
};
