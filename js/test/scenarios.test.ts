// The shared scenario suite (scenarios/index.js) in vitest, as
// abstract-level runs its own (test/index.js): every scenario against a
// worker's `Database` (`openMemory`) and against `connect()`'s
// `RemoteDatabase` (the real client and leader in the simulated browser of
// tabs-harness.ts), each on a database and again on a sublevel of one. A
// scenario marked as differing on an API (`differs`) must fail there
// (`test.fails`), so that the fix shows. The same suite runs in Chromium
// (tests/e2e/scenarios.spec.ts) and Firefox (tests/firefox/run.mjs).
// The type-level checks at the end are compiled by `tsc -p
// js/tsconfig.test.json` (in `npm test`).
import { describe, expect, expectTypeOf, test } from 'vitest';
import * as lib from '../src/index.js';
import { type Database, type MultiGetResult, openMemory, type PinnedValue, type RemoteDatabase } from '../src/index.js';
import { suites } from './scenarios/index.js';
import { applies, runScenario, splitOptions } from './scenarios/run.js';
import type { Scenario } from './scenarios/scenario.js';
import { Origin } from './tabs-harness.js';
import { settle, type World } from './tabs-world.js';

async function inWorker(s: Scenario, sublevel: boolean): Promise<void> {
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
async function throughConnect(s: Scenario, sublevel: boolean): Promise<void> {
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

const targets: [string, 'worker' | 'connect', boolean, (s: Scenario, sublevel: boolean) => Promise<void>][] = [
  ['open() in a worker', 'worker', false, inWorker],
  ['open() in a worker, on a sublevel', 'worker', true, inWorker],
  ['connect()', 'connect', false, throughConnect],
  ['connect(), on a sublevel', 'connect', true, throughConnect],
];

for (const [title, api, sublevel, run] of targets) {
  describe(title, () => {
    for (const [file, all] of suites) {
      const scenarios = all.filter((s) => applies(s, sublevel));
      if (scenarios.length === 0) continue;
      describe(file, () => {
        for (const s of scenarios) {
          const differs = s.differs?.[api];
          const name = differs === undefined ? s.name : `${s.name} [differs: ${differs}]`;
          (differs === undefined ? test : test.fails)(name, () => run(s, sublevel), 60_000);
        }
      });
    }
  });
}

test('the types of both APIs are checked by tsc (readTypes below)', () => {
  expect(readTypes).toBeTypeOf('function');
});

/** Types of both APIs: compiled by tsc, never run. */
function readTypes(db: Database, notes: Database<string, { n: number }>, page: RemoteDatabase, pageNotes: RemoteDatabase<string, { n: number }>): void {
  expectTypeOf(db.get('k')).toEqualTypeOf<Uint8Array | undefined>();
  expectTypeOf(db.getPinned('k')).toEqualTypeOf<PinnedValue | undefined>();
  expectTypeOf(db.multiGet(['k'])).toEqualTypeOf<MultiGetResult>();
  expectTypeOf(db.get('k', { valueEncoding: 'utf8' })).toEqualTypeOf<string | undefined>();
  expectTypeOf(db.get('k', { valueEncoding: 'json' })).toEqualTypeOf<unknown>();
  expectTypeOf(db.multiGet(['k'], { valueEncoding: 'utf8' })).toEqualTypeOf<(string | undefined)[]>();
  expectTypeOf(notes.get('k')).toEqualTypeOf<{ n: number } | undefined>();
  expectTypeOf(notes.multiGet(['k'])).toEqualTypeOf<({ n: number } | undefined)[]>();
  expectTypeOf(notes.get('k', { valueEncoding: 'view' })).toEqualTypeOf<Uint8Array | undefined>();

  expectTypeOf(page.get('k')).toEqualTypeOf<Promise<Uint8Array | undefined>>();
  expectTypeOf(page.multiGet(['k'])).toEqualTypeOf<Promise<MultiGetResult>>();
  expectTypeOf(page.get('k', { valueEncoding: 'utf8' })).toEqualTypeOf<Promise<string | undefined>>();
  expectTypeOf(page.multiGet(['k'], { valueEncoding: 'utf8' })).toEqualTypeOf<Promise<(string | undefined)[]>>();
  expectTypeOf(pageNotes.get('k')).toEqualTypeOf<Promise<{ n: number } | undefined>>();
  expectTypeOf(pageNotes.multiGet(['k'])).toEqualTypeOf<Promise<({ n: number } | undefined)[]>>();
  // getPinned is the worker's alone.
  expectTypeOf(page).not.toHaveProperty('getPinned');
}
