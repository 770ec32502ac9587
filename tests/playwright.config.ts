import { defineConfig } from '@playwright/test';
import { chromiumArgs, executablePath } from './chromium.js';

// Browser tests in Debian's Chromium (never a downloaded browser). The demo's
// own static server is started for the run and stopped after it.
const port = Number(process.env.SILT_TEST_PORT ?? 8787);
const baseURL = `http://127.0.0.1:${port}`;

export default defineConfig({
  testDir: './e2e',
  // Watchdogs: no single test, and no whole run, can hang CI. The whole
  // run takes about 10 minutes on the 2-core machine with other work
  // beside it (9.5 min, 2026-11-28): the global watchdog leaves room for a
  // machine twice as slow, since a watchdog that trips on a slow run is a
  // flaky gate (scripts/test.sh's JS_TEST_TIMEOUT matches it).
  timeout: 30_000,
  globalTimeout: 25 * 60_000,
  expect: { timeout: 10_000 },
  workers: 1,
  fullyParallel: false,
  forbidOnly: true,
  retries: 0,
  // The JSON report feeds the totals printed by scripts/test.sh.
  reporter: [['list'], ['json', { outputFile: '../target/test-results/playwright.json' }]],
  outputDir: '../test-results',
  use: {
    baseURL,
    browserName: 'chromium',
    headless: true,
    actionTimeout: 10_000,
    navigationTimeout: 15_000,
    trace: 'off',
    launchOptions: {
      executablePath,
      args: chromiumArgs,
      timeout: 30_000,
    },
  },
  webServer: {
    command: 'node ../demo/server.mjs',
    env: { PORT: String(port), SILT_TEST_PAGES: '1' },
    url: `${baseURL}/`,
    reuseExistingServer: false,
    timeout: 20_000,
    stdout: 'pipe',
    stderr: 'pipe',
    gracefulShutdown: { signal: 'SIGTERM', timeout: 5_000 },
  },
});
