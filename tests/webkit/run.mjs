// siltdb in WebKitGTK: Debian's MiniBrowser (libwebkit2gtk-4.1), under
// Xvfb (it has no headless mode). WebKitGTK 2.50's workers have no OPFS
// sync access handles (its storage backend refuses them), so siltdb keeps
// databases in IndexedDB there (issue 38: js/src/idb/). This suite proves
// what the support matrix (README "Browsers") says: the module loads with
// SIMD128; open() in a worker and connect() on a page work, on the
// IndexedDB storage; the API scenarios both APIs share pass through
// open(); two realms (frames) share a database through connect(), and the
// second leads when the first goes; a worker terminated while it writes loses no write that
// persisted() acknowledged; and a database written on one visit is read
// back on the next (the same profile). Run both ways: with MiniBrowser's
// defaults (no navigator.storage at all) and with its StorageAPI,
// FileSystem and AccessHandle features switched on.
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
const dog = watchdog('webkit', 8);
/** MiniBrowser's file system features: OPFS and the Storage API, but a backend that refuses sync access handles. */
const FEATURES = 'StorageAPI,StorageAPIEstimate,FileSystem,AccessHandle';

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
async function visit(listener, features, { phase, home: kept } = {}) {
  const home = kept ?? mkdtempSync(join(tmpdir(), 'silt-webkit-'));
  const url = `${BASE}/test-pages/webkit.html?report=${encodeURIComponent(listener.url)}${phase ? `&phase=${phase}` : ''}`;
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
      if (kept === undefined) rmSync(home, { recursive: true, force: true });
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

/** What both runs check: the IndexedDB storage where the workers have no sync access handles. */
function fallbackWorks(c) {
  assert.deepEqual(c.simd128, { name: 'simd128', ok: true, value: true });
  assert.equal(c['openMemory on the page'].value, 'in memory');
  assert.equal(c['openMemory in a worker'].value, 'memory');
  assert.deepEqual(c['open in a worker'].value, { value: 'open', storage: 'indexeddb' }, JSON.stringify(c['open in a worker']));
  assert.equal(c['connect on the page'].value, 'v', JSON.stringify(c['connect on the page']));
  // Two realms share one database through connect(); the leader's goes, the other leads with every write.
  assert.deepEqual(
    c['two realms through connect()'].value,
    { roles: [true, false], readByA: 300, leadsAfter: true, back: 300, inOrder: true },
    JSON.stringify(c['two realms through connect()']),
  );
  const suite = c['the shared scenarios through open()'];
  assert.equal(suite.ok, true, JSON.stringify(suite));
  assert.deepEqual(suite.value.problems, []);
  assert.ok(suite.value.ran > 50, JSON.stringify(suite.value));
  const acked = c['killed while writing'].value?.acked;
  assert.ok(acked >= 1500, JSON.stringify(c['killed while writing']));
  const after = c['after the kill'];
  assert.equal(after.ok, true, JSON.stringify(after));
  // Nothing acknowledged lost: every key up to the last acknowledged batch, without a gap.
  assert.ok(after.value.n >= acked, `${after.value.n} keys back, ${acked} acknowledged`);
  assert.equal(after.value.storage, 'indexeddb');
  return suite.value.ran;
}

/** A database written on one visit is read back on the next, with the same profile. */
async function keptAcrossVisits(listener, features) {
  const home = mkdtempSync(join(tmpdir(), 'silt-webkit-kept-'));
  try {
    const wrote = byName(await visit(listener, features, { phase: 'write', home }));
    assert.equal(wrote.write.value, 3000, JSON.stringify(wrote.write));
    const read = byName(await visit(listener, features, { phase: 'read', home }));
    assert.deepEqual(read.read.value, { n: 3000, total: 3001, storage: 'indexeddb' }, JSON.stringify(read.read));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

const checks = {
  async 'with its file system features on (OPFS without sync access handles): open() and connect() keep databases in IndexedDB; two frames share one through connect() across a failover; the shared scenarios pass; a killed worker loses nothing acknowledged'(
    listener,
  ) {
    const report = await visit(listener, FEATURES);
    seen.userAgent = report.userAgent;
    seen.env = report.env;
    assert.equal(report.env.storageApi, true);
    assert.equal(report.env.webLocks, true);
    seen.scenarios = fallbackWorks(byName(report));
  },

  async 'with its file system features on: a database written on one visit is there on the next'(listener) {
    await keptAcrossVisits(listener, FEATURES);
  },

  async 'with its defaults (no navigator.storage): open() and connect() keep databases in IndexedDB; two frames share one through connect() across a failover; the shared scenarios pass; a killed worker loses nothing acknowledged'(
    listener,
  ) {
    const report = await visit(listener, undefined);
    assert.equal(report.env.storageApi, false);
    fallbackWorks(byName(report));
  },

  async 'with its defaults: a database written on one visit is there on the next'(listener) {
    await keptAcrossVisits(listener, undefined);
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
