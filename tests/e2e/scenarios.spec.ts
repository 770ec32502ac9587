// The scenarios both APIs share (js/test/scenarios: the files vitest runs
// too) in Chromium: through open() on OPFS in a dedicated worker and
// through connect() from the page, each on databases and again on
// sublevels of them, and through open() on the IndexedDB storage (issue 38:
// where workers have no sync access handles). A scenario marked as
// differing on an API must still fail there (run.js, `problems`).
// tests/firefox/run.mjs runs the same.
import { expect, test, type Page } from '@playwright/test';
import { suites } from '../../js/test/scenarios/index.js';
import { namesOf, type Outcome, problems } from '../../js/test/scenarios/run.js';
import { newWorker, openHarness, run } from './harness.js';

/** Runs the suites named, through `api`, in `page`; resolves to every outcome. */
async function outcomes(page: Page, api: 'worker' | 'connect', sublevel: boolean, only: string[], storage?: 'indexeddb'): Promise<Outcome[]> {
  const args = { suites: only, sublevel, ...(storage === undefined ? {} : { storage }) };
  if (api === 'worker') {
    // A worker per suite, ended after it: workers left alive keep slices of
    // the origin's handle budget until their parked databases let go.
    const w = await newWorker(page);
    try {
      return await run<Outcome[]>(page, w, 'sharedSuiteInWorker', args);
    } finally {
      await page.evaluate((id) => window.silt.terminate(id), w);
    }
  }
  return page.evaluate(async (a) => {
    const m = await import('/test-pages/shared-scenarios.js' as string);
    return (await m.sharedSuiteOnPage(a)) as Outcome[];
  }, args);
}

for (const [api, through] of [
  ['worker', 'open() in a worker'],
  ['connect', 'connect() on a page'],
] as const) {
  for (const sublevel of [false, true]) {
    test(`the shared scenarios through ${through}${sublevel ? ', on sublevels' : ''}`, async ({ page }) => {
      test.setTimeout(240_000);
      await openHarness(page);
      const got: Outcome[] = [];
      // One call per suite (and in a worker, a new worker per suite).
      for (const [suite] of suites) got.push(...(await outcomes(page, api, sublevel, [suite])));
      expect(
        got.map((o) => o.name),
        'every scenario ran',
      ).toEqual(namesOf(suites, sublevel));
      expect(problems(got)).toEqual([]);
      const known = got.filter((o) => o.differs !== undefined).length;
      test.info().annotations.push({ type: 'scenarios', description: `${got.length} run, ${known} of them known differences` });
    });
  }
}

test('the shared scenarios through open() in a worker on the IndexedDB storage (storage: indexeddb)', async ({ page }) => {
  test.setTimeout(240_000);
  await openHarness(page);
  const got: Outcome[] = [];
  for (const [suite] of suites) got.push(...(await outcomes(page, 'worker', false, [suite], 'indexeddb')));
  expect(
    got.map((o) => o.name),
    'every scenario ran',
  ).toEqual(namesOf(suites, false));
  expect(problems(got)).toEqual([]);
});
