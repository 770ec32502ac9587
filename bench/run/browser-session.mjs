// A browser session for the benchmark runners: the demo server on a free
// port, Debian's Chromium with a kept (persistent) temporary profile, and
// the demo's Benchmarks page (/benchmarks/), whose `window.bench` is the
// suite's machinery (bench/browser/runner.js).
//
// Always a persistent profile: in a fresh (incognito) context Chromium keeps
// OPFS in memory behind IPC, and a 4 KiB sync read costs ~300 µs instead of
// ~2 µs, which would measure the IPC rather than the engines.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { chromiumArgs, executablePath, startDemoServer } from '../../scripts/browser.mjs';
import { chromiumVersion } from './machine.mjs';

/** Waits until the Benchmarks page is ready (or says why it is not). */
export async function waitReady(page) {
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state), undefined, { timeout: 60_000 });
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state !== 'ready') throw new Error(`the benchmark page failed to start: ${await page.locator('#error').textContent()}`);
}

/**
 * Runs `f({ page, url, browser })` on a ready Benchmarks page, then closes
 * the browser and the server and deletes the profile, whatever happened.
 * `browser` describes Chromium (version, path, user agent) for the results.
 * A watchdog ends the process after `timeoutMin` minutes, so that a wedged
 * browser never holds a machine.
 */
export async function withBenchPage(f, { timeoutMin, log }) {
  const { server, url } = await startDemoServer();
  const watchdog = setTimeout(() => {
    log(`watchdog: giving up after ${timeoutMin} minutes`);
    server.kill('SIGKILL');
    process.exit(2);
  }, timeoutMin * 60_000);
  const profile = mkdtempSync(join(os.tmpdir(), 'silt-bench-profile-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath, args: chromiumArgs, headless: true, timeout: 30_000 });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      const t = m.text();
      if (t.startsWith('[bench] ')) log(t.slice(8));
      else if (m.type() === 'error' || m.type() === 'warning') log(`console ${m.type()}: ${t}`);
    });
    page.on('pageerror', (e) => log(`page error: ${e.message}`));
    await page.goto(`${url}benchmarks/`);
    await waitReady(page);
    const { ua, mem } = await page.evaluate(() => ({ ua: navigator.userAgent, mem: navigator.deviceMemory }));
    // deviceMemory picks siltdb's default block cache (js/src/open.ts).
    return await f({ page, url, browser: `${chromiumVersion()} (headless, ${executablePath}; ${ua}; deviceMemory ${mem ?? 'n/a'} GiB)` });
  } finally {
    clearTimeout(watchdog);
    await context?.close().catch(() => {});
    server.kill('SIGTERM');
    rmSync(profile, { recursive: true, force: true });
  }
}
