// Where the shared scenarios (scenarios/index.js) run in vitest: a
// worker's `Database` (`openMemory`), and `connect()`'s `RemoteDatabase`
// (the real client and leader in the simulated browser of
// tabs-harness.ts). Used by scenarios.test.ts and by model tests written as
// scenarios (live-model.test.ts), so that both run against both APIs.
import * as lib from '../src/index.js';
import { type Database, openMemory, type RemoteDatabase } from '../src/index.js';
import { runScenario, splitOptions } from './scenarios/run.js';
import type { Scenario } from './scenarios/scenario.js';
import { Origin } from './tabs-harness.js';
import { settle, type World } from './tabs-world.js';

export async function inWorker(s: Scenario, sublevel: boolean): Promise<void> {
  await runScenario(s, {
    api: 'worker',
    sublevel,
    lib,
    openRoot: (options) => openMemory(options),
    closeRoot: (db: Database) => {
      if (!db.closed) db.close();
    },
  });
}

/**
 * Runs `world` until `p` settles. The world has nothing left to do while
 * a database works between its own tasks (a compactRange() in slices, on
 * setImmediate), so it is run again after each real task, until `p`
 * settles or 30 s have passed.
 */
async function settled<T>(world: World, p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown } | undefined> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await world.until(p, 10 * 60_000);
    if (r !== undefined || Date.now() > deadline) return r;
    await settle();
  }
}

/**
 * Runs `s` in one simulated browser until it settles: each database it
 * opens is an in-memory database of its own (a sibling of the first
 * origin's), reached by `connect()` from a tab of its own.
 */
export async function throughConnect(s: Scenario, sublevel: boolean): Promise<void> {
  const base = await Origin.create(1, 'fifo');
  const siblings: Origin[] = [];
  try {
    const run = runScenario(s, {
      api: 'connect',
      sublevel,
      lib,
      openRoot: async (options) => {
        // The encodings stay on the page; the rest opens the leader's database.
        const { encodings, engine } = splitOptions(options);
        const o = await base.sibling(engine);
        siblings.push(o);
        return o.connect(o.tab(), encodings);
      },
      closeRoot: (db: RemoteDatabase) => db.close(),
    });
    const r = await settled(base.world, run);
    if (r === undefined) throw new Error('still pending after 30 s, the simulated browser having nothing left to do');
    if (!r.ok) throw r.error;
  } finally {
    for (const o of siblings) if (!o.db.closed) o.db.close();
    await base.dispose();
  }
}
