// The app's own worker: the README's example, on OPFS.
import { open } from 'siltdb';

try {
  // The previous visit's worker may hold the lock for a moment after a reload.
  const db = await open('app', { wait: true, signal: AbortSignal.timeout(5_000) });
  const before = db.getCopy('visits');
  const visits = before === undefined ? 1 : Number(new TextDecoder().decode(before)) + 1;
  db.put('visits', new TextEncoder().encode(String(visits)), { sync: true });
  const stats = db.statistics();
  db.close();
  postMessage({ visits, persistent: stats.persistent, memory: stats.memory.mode });
} catch (e) {
  postMessage({ error: `${e.code}: ${e.message}` });
}
