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
import type { Database, Live, LiveResult, LiveValue, MultiGetResult, PinnedValue, RemoteDatabase } from '../src/index.js';
import { suites } from './scenarios/index.js';
import { applies } from './scenarios/run.js';
import type { Scenario } from './scenarios/scenario.js';
import { inWorker, throughConnect } from './scenario-targets.js';

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
  expectTypeOf(notes.live()).toEqualTypeOf<Live<LiveResult<string, { n: number }>>>();
  expectTypeOf(pageNotes.live({ gte: 'a' })).toEqualTypeOf<Live<LiveResult<string, { n: number }>>>();
  expectTypeOf(pageNotes.liveGet('a')).toEqualTypeOf<Live<LiveValue<{ n: number }>>>();
  // getPinned is the worker's alone.
  expectTypeOf(page).not.toHaveProperty('getPinned');
}
