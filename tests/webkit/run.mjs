// siltdb in WebKitGTK: Debian's MiniBrowser (libwebkit2gtk-4.1), under
// Xvfb (it has no headless mode). WebKitGTK 2.50's storage backend refuses
// OPFS sync access handles, so siltdb cannot keep a database there; this
// suite proves what the support matrix (README "Browsers") says: the module
// loads with SIMD128 and in-memory databases work on a page and in a worker,
// while open() and connect() fail at once with a typed NotSupported that
// names the missing API and carries the browser's own error, never a hang.
// Run twice: with MiniBrowser's defaults (no navigator.storage at all) and
// with its StorageAPI, FileSystem and AccessHandle features switched on.
//
// WebKitWebDriver's sessions are ephemeral (OPFS fails there with
// UnknownError), so the browser is started directly and the test page posts
// its results to a listener of this script.
//
//   node tests/webkit/run.mjs [--only name]
//
// Writes target/test-results/webkit.json (totals for scripts/test.sh). A
// watchdog ends a run that hangs; browsers and servers stop in `finally`.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adopt, runChecks, startServer, watchdog, writeReport } from '../browser-run.mjs';

/** Where Debian's libwebkit2gtk-4.1-0 put MiniBrowser (its folder names the architecture). */
function miniBrowser() {
  const files = spawnSync('dpkg', ['-L', 'libwebkit2gtk-4.1-0'], { encoding: 'utf8' }).stdout ?? '';
  return files.split('\n').find((f) => f.endsWith('/webkit2gtk-4.1/MiniBrowser')) ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
}
const MINIBROWSER = process.env.SILT_MINIBROWSER ?? miniBrowser();
const PORT = Number(process.env.SILT_WEBKIT_PORT ?? 8789);
const BASE = `http://127.0.0.1:${PORT}`;
const dog = watchdog('webkit', 4);

/** A listener the page posts its results to; `next()` resolves with the next report. */
function startListener() {
  let waiting;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      res.writeHead(204, { 'access-control-allow-origin': '*' }).end();
      if (req.method === 'POST') waiting?.(JSON.parse(body));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        server,
        url: `http://127.0.0.1:${server.address().port}/report`,
        next: () => new Promise((r) => (waiting = r)),
      }),
    ),
  );
}

/**
 * Opens webkit.html in a MiniBrowser of its own (own Xvfb display, own
 * profile) and returns what the page reported.
 */
async function visit(listener, features) {
  const home = mkdtempSync(join(tmpdir(), 'silt-webkit-'));
  const url = `${BASE}/test-pages/webkit.html?report=${encodeURIComponent(listener.url)}`;
  const args = ['-a', '-s', '-screen 0 1280x800x24', MINIBROWSER, ...(features ? [`--features=${features}`] : []), url];
  const browser = adopt(
    spawn('xvfb-run', args, {
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, HOME: home, XDG_DATA_HOME: join(home, 'data'), XDG_CACHE_HOME: join(home, 'cache') },
    }),
    true,
  );
  let stderr = '';
  browser.stderr.on('data', (d) => (stderr += d));
  try {
    const timeout = new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`no report from MiniBrowser in 60 s; its stderr:\n${stderr.slice(-2000)}`)), 60_000),
    );
    const exited = new Promise((_, reject) => browser.on('exit', (code) => reject(new Error(`MiniBrowser exited (${code}): ${stderr.slice(-2000)}`))));
    lastReport = await Promise.race([listener.next(), timeout, exited]);
    return lastReport;
  } finally {
    await stop(browser);
    try {
      rmSync(home, { recursive: true, force: true });
    } catch {
      // a WebKit helper still writing there: the folder is in tmp
    }
  }
}

/**
 * Ends xvfb-run's process group: SIGTERM first, so that xvfb-run removes its
 * X server's lock and socket files, then SIGKILL for whatever is left.
 */
async function stop(browser) {
  const group = (signal) => {
    try {
      process.kill(-browser.pid, signal);
      return true;
    } catch {
      return false; // the group is gone
    }
  };
  if (browser.exitCode === null && group('SIGTERM')) {
    const exited = new Promise((r) => browser.once('exit', r));
    await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))]);
  }
  group('SIGKILL');
}

let lastReport;
const byName = (report) => Object.fromEntries(report.checks.map((c) => [c.name, c]));

/** What the suite saw, for the support matrix. */
const seen = {};

const checks = {
  async 'with its features on: SIMD128 and in-memory databases work; open() and connect() fail with NotSupported naming FileSystemSyncAccessHandle'(listener) {
    const report = await visit(listener, 'StorageAPI,StorageAPIEstimate,FileSystem,AccessHandle');
    seen.userAgent = report.userAgent;
    seen.env = report.env;
    const c = byName(report);
    assert.deepEqual(c.simd128, { name: 'simd128', ok: true, value: true });
    assert.equal(c['openMemory on the page'].value, 'in memory');
    assert.equal(c['openMemory in a worker'].value, 'memory');
    assert.equal(report.env.storageApi, true);
    assert.equal(report.env.webLocks, true);
    // The browser's own refusal, kept as the cause.
    const open = c['open in a worker'];
    assert.equal(open.ok, false, JSON.stringify(open));
    assert.equal(open.error.code, 'NotSupported', JSON.stringify(open));
    assert.match(open.error.message, /FileSystemSyncAccessHandle/);
    assert.equal(open.error.cause, 'NotSupportedError');
    const connect = c['connect on the page'];
    assert.equal(connect.ok, false, JSON.stringify(connect));
    assert.equal(connect.error.code, 'NotSupported', JSON.stringify(connect));
    assert.match(connect.error.message, /FileSystemSyncAccessHandle/);
    seen.open = open.error.message;
    seen.connect = connect.error.message;
  },

  async 'with its defaults (no navigator.storage): in-memory databases work; open() and connect() fail with NotSupported'(listener) {
    const report = await visit(listener, undefined);
    const c = byName(report);
    assert.equal(report.env.storageApi, false);
    assert.equal(c['openMemory on the page'].value, 'in memory');
    assert.equal(c['openMemory in a worker'].value, 'memory');
    for (const name of ['open in a worker', 'connect on the page']) {
      assert.equal(c[name].ok, false, JSON.stringify(c[name]));
      assert.equal(c[name].error.code, 'NotSupported', JSON.stringify(c[name]));
      assert.match(c[name].error.message, /navigator\.storage\.getDirectory/);
    }
  },
};

let results = [];
let server;
let listener;
try {
  if (!existsSync(MINIBROWSER)) throw new Error(`no MiniBrowser at ${MINIBROWSER} (scripts/setup.sh installs libwebkit2gtk-4.1-0)`);
  server = await startServer(PORT);
  listener = await startListener();
  // "libwebkit2gtk-4.1-0:amd64<TAB>2.50.6-1~deb12u2"
  seen.version = spawnSync('dpkg-query', ['-W', 'libwebkit2gtk-4.1-0'], { encoding: 'utf8' }).stdout.trim().split('\t')[1] ?? 'unknown';
  console.log(`webkit: WebKitGTK ${seen.version}, ${MINIBROWSER} under Xvfb`);
  results = await runChecks(checks, listener, {
    context: () => `the page reported: ${JSON.stringify(lastReport)}`,
    after: () => {
      lastReport = undefined;
    },
  });
} finally {
  listener?.server.close();
  server?.kill();
}
const code = writeReport('webkit', results, seen);
console.log(`webkit: ${results.filter((r) => r.ok).length} passed, ${results.filter((r) => !r.ok).length} failed`);
clearTimeout(dog);
process.exit(code);
