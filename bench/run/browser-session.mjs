// A browser session for the benchmark runners: the demo server on a free
// port, Debian's Chromium (or, with `browser: 'firefox'`, Debian's Firefox
// ESR through puppeteer-core) with a kept (persistent) temporary profile, and
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

/**
 * Waits until the Benchmarks page is ready (or says why it is not). Polls
 * with `evaluate`, which Playwright's and Puppeteer's pages both have.
 */
export async function waitReady(page) {
  const deadline = Date.now() + 60_000;
  let state;
  for (;;) {
    state = await page.evaluate(() => document.body?.dataset.state);
    if (state === 'ready' || state === 'error' || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  if (state !== 'ready') {
    const why = await page.evaluate(() => document.querySelector('#error')?.textContent ?? '');
    throw new Error(`the benchmark page failed to start (${state ?? 'no state'}): ${why}`);
  }
}

/** Debian's Firefox ESR through puppeteer-core (WebDriver BiDi), with `profile` kept on disk. */
async function launchFirefox(profile) {
  // puppeteer-core is a dev dependency of the root package (for bench/) and
  // of the tests' workspace (tests/firefox); resolved from here either way.
  const m = await import('puppeteer-core');
  const puppeteer = typeof m.default?.launch === 'function' ? m.default : m.default.default;
  const browser = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile, protocolTimeout: 30 * 60_000 });
  const page = (await browser.pages())[0] ?? (await browser.newPage());
  return { page, close: () => browser.close(), version: await browser.version() };
}

const FIREFOX = process.env.SILT_FIREFOX ?? '/usr/bin/firefox-esr';

/**
 * Runs `f({ page, url, browser })` on a ready Benchmarks page, then closes
 * the browser and the server and deletes the profile, whatever happened.
 * `browser` describes Chromium (version, path, user agent) for the results.
 * A watchdog ends the process after `timeoutMin` minutes, so that a wedged
 * browser never holds a machine. `path` opens another page than the
 * Benchmarks page (it must set `document.body.dataset.state` to 'ready' as
 * that one does); `httpMaxAge` lets the browser keep the served files in
 * its HTTP cache that many seconds (startDemoServer).
 */
export async function withBenchPage(f, { timeoutMin, log, browser: which = 'chromium', path = 'benchmarks/', httpMaxAge }) {
  const { server, url } = await startDemoServer({ httpMaxAge });
  const watchdog = setTimeout(() => {
    log(`watchdog: giving up after ${timeoutMin} minutes`);
    server.kill('SIGKILL');
    process.exit(2);
  }, timeoutMin * 60_000);
  const profile = mkdtempSync(join(os.tmpdir(), 'silt-bench-profile-'));
  let close;
  try {
    let page;
    let version;
    if (which === 'firefox') {
      const ff = await launchFirefox(profile);
      page = ff.page;
      close = ff.close;
      version = `Firefox ${ff.version.replace(/^firefox\//, '')} (headless, ${FIREFOX}, puppeteer-core over WebDriver BiDi`;
    } else {
      const context = await chromium.launchPersistentContext(profile, { executablePath, args: chromiumArgs, headless: true, timeout: 30_000 });
      page = context.pages()[0] ?? (await context.newPage());
      close = () => context.close();
      version = `${chromiumVersion()} (headless, ${executablePath}`;
    }
    page.on('console', (m) => {
      const t = m.text();
      if (t.startsWith('[bench] ')) log(t.slice(8));
      else if (m.type() === 'error' || m.type() === 'warning' || m.type() === 'warn') log(`console ${m.type()}: ${t}`);
    });
    page.on('pageerror', (e) => log(`page error: ${e.message}`));
    await page.goto(`${url}${path}`);
    await waitReady(page);
    const { ua, mem } = await page.evaluate(() => ({ ua: navigator.userAgent, mem: navigator.deviceMemory }));
    // deviceMemory picks siltdb's default block cache (js/src/local/open.ts).
    return await f({ page, url, browser: `${version}; ${ua}; deviceMemory ${mem ?? 'n/a'} GiB)` });
  } finally {
    clearTimeout(watchdog);
    await close?.().catch(() => {});
    server.kill('SIGTERM');
    rmSync(profile, { recursive: true, force: true });
  }
}

/**
 * Runs `src` (a module whose `PACKAGE` stands for siltdb's address) in a
 * dedicated worker of `page` made from a blob: waits for its first message
 * (ready), posts `message`, and returns the data of its next one.
 */
export function runInBlobWorker(page, src, message) {
  return page.evaluate(
    async ([code, msg]) => {
      // A rejection nobody handles (an async onmessage that threw) becomes
      // the worker's error, which fails the run below.
      const prelude = "addEventListener('unhandledrejection', (e) => { throw e.reason; });\n";
      const full = prelude + code.replace('PACKAGE', new URL('/siltdb/dist/index.js', location.href).href);
      const w = new Worker(URL.createObjectURL(new Blob([full], { type: 'text/javascript' })), { type: 'module' });
      // A worker that fails to load (or throws) fails the run at once
      // instead of leaving it waiting for the watchdog.
      const next = () =>
        new Promise((ok, fail) => {
          w.onmessage = (e) => ok(e.data);
          w.onerror = (e) => fail(new Error(`the worker failed: ${e.message ?? 'it could not load (see the page errors)'}`));
        });
      try {
        await next();
        const result = next();
        w.postMessage(msg);
        return await result;
      } finally {
        w.terminate();
      }
    },
    [src, message],
  );
}
