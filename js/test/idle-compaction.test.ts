// The idle compaction in a worker's database (src/local/background-pump.ts,
// the engine's start_idle_compaction; issue 35 item 2), asked for with
// `idleCompactionMaxBytes`: once no write has come for `idleMs` and
// background work has caught up, what a random fill left above the last
// level is compacted into it, so that a get probes one table; writes put
// it off; without the option (the default) it never runs.
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import type { Database } from '../src/index.js';
import { BackgroundPump } from '../src/local/background-pump.js';
import { bytes, fresh, rejected } from './helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sorted runs a get may probe: each L0 file, and each other level that holds data. */
function runs(db: Database): number {
  const levels = db.statistics().properties.filesPerLevel;
  return levels[0]! + levels.slice(1).filter((n) => n > 0).length;
}

/** Keys put in random order (small memtables: many flushes, L0 files over the last level). */
async function randomFill(db: Database, n: number): Promise<Map<string, string>> {
  const model = new Map<string, string>();
  let x = 12345;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const key = String(x % (n * 4)).padStart(16, '0');
    const value = `${i}`.padEnd(100, '.');
    db.put(key, bytes(value));
    model.set(key, value);
    if (i % 500 === 0) await sleep(0);
  }
  await db.idle(); // background work caught up
  if (runs(db) === 1) {
    // Its last flush let L0 compact away: one more file over it.
    for (let i = 0; i < 10; i++) {
      db.put(`last${i}`, bytes('last'));
      model.set(`last${i}`, 'last');
    }
    db.flush();
    await db.idle();
  }
  return model;
}

/** The option that turns it on: any bound above the test's few hundred KiB. */
const ON = 64 << 20;

const idleCompactions = (db: Database) => db.statistics().tickers['silt.compaction.idle'] ?? 0;

describe('the idle compaction', () => {
  const saved = BackgroundPump.idleMs;
  beforeEach(() => {
    BackgroundPump.idleMs = 200;
  });
  afterEach(() => {
    BackgroundPump.idleMs = saved;
  });

  test('after a random fill and an idle moment a get probes one table, and every value reads back', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024, idleCompactionMaxBytes: ON });
    const model = await randomFill(db, 8000);
    expect(runs(db)).toBeGreaterThan(1);
    expect(idleCompactions(db)).toBe(0);
    for (let i = 0; i < 1000 && (idleCompactions(db) === 0 || runs(db) > 1); i++) await sleep(20); // a watchdog, not a bound
    expect(idleCompactions(db)).toBe(1);
    expect(runs(db)).toBe(1);
    for (const [k, v] of model) expect(new TextDecoder().decode(db.get(k))).toBe(v);
    // Idle again, with one run: nothing more to do.
    await sleep(300);
    expect(idleCompactions(db)).toBe(1);
  });

  test('writes put it off: none while a write comes within idleMs of the last', async () => {
    const db = await fresh({ writeBufferSize: 64 * 1024, idleCompactionMaxBytes: ON });
    await randomFill(db, 4000);
    expect(runs(db)).toBeGreaterThan(1);
    // (What the code controls: if this machine stalled a whole idleMs
    // between two writes, the database was idle, and may have compacted.)
    let last = performance.now();
    let longestGap = 0;
    for (let i = 0; i < 20; i++) {
      db.put(`w${i}`, bytes('x'));
      const now = performance.now();
      longestGap = Math.max(longestGap, now - last);
      last = now;
      await sleep(10);
    }
    if (performance.now() - last < BackgroundPump.idleMs && longestGap < BackgroundPump.idleMs) expect(idleCompactions(db)).toBe(0);
    for (let i = 0; i < 1000 && idleCompactions(db) === 0; i++) await sleep(20);
    expect(idleCompactions(db)).toBe(1);
  });

  test('off by default and with idleCompactionMaxBytes: 0; the option is checked', async () => {
    for (const options of [{}, { idleCompactionMaxBytes: 0 }]) {
      const db = await fresh({ writeBufferSize: 64 * 1024, ...options });
      await randomFill(db, 4000);
      expect(runs(db)).toBeGreaterThan(1);
      await sleep(400);
      expect(idleCompactions(db)).toBe(0);
      expect(runs(db)).toBeGreaterThan(1);
    }
    expect(await rejected(fresh({ idleCompactionMaxBytes: -1 }))).toMatchObject({ code: 'InvalidArgument' });
    expect(await rejected(fresh({ idleCompactionMaxBytes: 1.5 }))).toMatchObject({ code: 'InvalidArgument' });
  });
});
