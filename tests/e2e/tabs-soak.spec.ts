// The many-tab soak in Chromium (tests/tabs-soak.mjs; issue 40, item 4):
// three tabs doing mixed work through connect() while the leading tab is
// closed, reloaded or crashed every few seconds, in a persistent profile
// (OPFS on disk, as a user's is). CI runs a 40-second slice; a long run:
//
//   SILT_SOAK_HOURS=1 npx playwright test e2e/tabs-soak.spec.ts --global-timeout=0
//
// It writes target/reliability/tabs-soak-chromium.json (figures, every
// sample) and keeps its figures in docs/reliability.md.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, expect, test, type Page } from '@playwright/test';
import { chromiumArgs, executablePath } from '../chromium.js';
import { soakTabs } from '../tabs-soak.mjs';
import { openHarness, seedFor } from './harness.js';

const HOURS = Number(process.env.SILT_SOAK_HOURS ?? 0);
const SECONDS = HOURS > 0 ? Math.round(HOURS * 3600) : 40;
const OUT_DIR = fileURLToPath(new URL('../../target/reliability/', import.meta.url));

test('three tabs, mixed work, the leader closed, reloaded or crashed every few seconds: nothing acknowledged lost, nothing doubled, memory and files bounded', async () => {
  const budget = SECONDS * 1000 + 180_000;
  test.setTimeout(budget + 30_000);
  const seed = seedFor('tabs soak');
  const profile = mkdtempSync(join(tmpdir(), 'silt-tabs-soak-'));
  const baseURL = test.info().project.use.baseURL!;
  const watchdog = setTimeout(() => {
    console.error(`tabs soak: browser still open after ${budget} ms; ending the run`);
    process.kill(process.pid, 'SIGTERM');
  }, budget);
  let result: Awaited<ReturnType<typeof soakTabs>>;
  try {
    const ctx = await chromium.launchPersistentContext(profile, { executablePath, args: chromiumArgs, headless: true, baseURL, timeout: 30_000 });
    try {
      const newPage = async (): Promise<Page> => {
        const p = await ctx.newPage();
        await openHarness(p);
        return p;
      };
      const crash = async (p: Page) => {
        const crashed = p.waitForEvent('crash', { timeout: 10_000 });
        const cdp = await ctx.newCDPSession(p);
        void cdp.send('Page.crash').catch(() => {});
        await crashed;
      };
      result = await soakTabs({
        seconds: SECONDS,
        seed,
        newPage,
        crash,
        sampleMs: HOURS > 0 ? 10_000 : 2_000,
        failoverMs: HOURS > 0 ? [5_000, 30_000] : [2_000, 6_000],
        log: HOURS > 0 ? (line: string) => console.log(line) : () => {},
      });
    } finally {
      await ctx.close();
    }
  } finally {
    clearTimeout(watchdog);
    rmSync(profile, { recursive: true, force: true });
  }
  const { samples, ...figures } = result;
  mkdirSync(OUT_DIR, { recursive: true });
  writeFileSync(
    join(OUT_DIR, 'tabs-soak-chromium.json'),
    `${JSON.stringify({ browser: 'chromium', date: new Date().toISOString(), seed, ...figures, samples })}\n`,
  );
  console.log(`tabs soak (chromium): ${JSON.stringify({ seed, ...figures })}`);
  expect(figures.problems).toEqual([]);
  expect(figures.verified.tables).toBeGreaterThanOrEqual(0);
  expect(figures.failovers.close + figures.failovers.reload + figures.failovers.crash).toBeGreaterThan(0);
  const byKind = figures.byKind as Record<string, number>;
  expect(byKind.transaction).toBeGreaterThan(0);
  expect(byKind.scan).toBeGreaterThan(0);
});
