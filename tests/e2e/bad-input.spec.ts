// Bad input through connect() in Chromium, on real OPFS: random sequences of
// calls with arguments of every type (tests/pages/bad-input-page.js). Every
// call resolves or rejects with a SiltError whose code is known, errors
// cross postMessage as SiltErrors, the worker never dies, and the database
// equals the oracle and verifies. The larger property test runs in Node
// (js/test/bad-input.test.ts).
import { expect, test } from '@playwright/test';
import { openHarness } from './harness.js';

type Report = { calls: number; sequences: number; problems: string[]; problemCount: number };

test('random bad input through connect(): typed errors only, the worker stays alive, the data stays right', async ({ page }) => {
  test.setTimeout(120_000);
  await openHarness(page);
  const seed = Number(process.env.SILT_BAD_INPUT_SEED ?? Date.now() % 1_000_000);
  const report = await page.evaluate(
    async ({ seed }) => {
      const m = (await import('/test-pages/bad-input-page.js' as string)) as {
        runSequences(o: { seed: number; sequences: number; steps: number }): Promise<Report>;
      };
      return m.runSequences({ seed, sequences: 6, steps: 120 });
    },
    { seed },
  );
  console.log(`bad-input (Chromium, seed ${seed}): ${report.calls} calls in ${report.sequences} sequences, ${report.problemCount} problems`);
  expect(report.problems, `seed ${seed}`).toEqual([]);
  expect(report.calls).toBeGreaterThan(500);
});

test('an error thrown in the worker arrives as a SiltError with its code; junk that cannot be cloned is refused on the page', async ({ page }) => {
  await openHarness(page);
  const r = await page.evaluate(async () => {
    const { connect, SiltError } = (await import('/siltdb/dist/index.js' as string)) as typeof import('../../js/src/index.js');
    const db = await connect('bad-input-codes');
    const codeOf = async (p: () => Promise<unknown>) => {
      try {
        await p();
        return 'worked';
      } catch (e) {
        return e instanceof SiltError ? `${e.code}: ${e.message.length > 0}` : `not a SiltError: ${String(e)}`;
      }
    };
    try {
      return {
        // Checked in the worker (the engine refuses an oversize key).
        engine: await codeOf(() => db.get(new Uint8Array(70_000))),
        // Checked on the page before sending.
        page: await codeOf(() => db.put(42 as unknown as string, new Uint8Array(1))),
        // A function cannot cross postMessage: refused, and the worker goes on.
        clone: await codeOf(() => db.iterator({ reverse: (() => true) as unknown as boolean }).next()),
        openOptions: await codeOf(() => connect('bad-input-other', { blockSize: (() => 1) as unknown as number })),
        engineOption: await codeOf(() => connect('bad-input-other', { maxBytes: 12 })),
        alive: await codeOf(() => db.put('still', new Uint8Array([1]))),
      };
    } finally {
      await db.close();
    }
  });
  expect(r).toEqual({
    engine: 'InvalidArgument: true',
    page: 'InvalidArgument: true',
    clone: 'InvalidArgument: true',
    openOptions: 'InvalidArgument: true',
    engineOption: 'InvalidArgument: true',
    alive: 'worked',
  });
});
