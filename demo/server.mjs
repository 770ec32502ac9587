#!/usr/bin/env node
// A tiny static server for the demo, bound to 127.0.0.1 only.
//
//   /              demo/ (index.html, main.js, style.css; benchmarks/: the Benchmarks page)
//   /siltdb/dist/  js/dist/  (the built `siltdb` package), or SILT_DIST_DIR instead (bundles
//                  of another wasm build: scripts/leak-check.sh)
//   /siltdb/pkg/   js/pkg/   (its private wasm-bindgen output, incl. the .wasm)
//   /bench/        bench/browser/ (the browser suite: workloads, engines, worker, runner;
//                  leveldb/dist/: LevelDB-in-wasm once `npm run bench:setup` built it)
//   /test-pages/   tests/pages/ (the browser tests' harness; SILT_TEST_PAGES=1)
//   /test-scenarios/  js/test/scenarios/ (the scenarios both APIs share, run by
//                  the harness as by vitest; SILT_TEST_PAGES=1)
//   /test-pkg/     target/test-pkg/ (the test-only wasm build, scripts/build.sh --tests; SILT_TEST_PAGES=1)
//   /vendor/sqlite-wasm/  @sqlite.org/sqlite-wasm's dist/ (the benchmark's SQLite engine)
//   /vendor/chart/        chart.js's dist/ (the benchmark page's charts)
//   /bench/engines/       (exactly) a JSON list of the benchmark's engine adapters,
//                         bench/browser/engines/*.js, by id
//
// PORT picks the port (default 8080; 0 = any free port). The URL is printed
// once listening, as "Silt demo: http://127.0.0.1:PORT/".
//
// Every file is sent with `cache-control: no-store` (an edit shows at once),
// unless SILT_HTTP_MAX_AGE is a number of seconds: then with
// `max-age=<that>` and its Last-Modified, so that a return visit finds the
// files in the browser's HTTP cache (bench/run/page.mjs's cold start).
// SILT_HTTP_ISOLATE=1 sends every file with COOP same-origin and COEP
// require-corp, so that its pages are cross-origin isolated
// (`crossOriginIsolated`: SharedArrayBuffer, and a 5 µs `performance.now()`
// instead of 100 µs, for bench/run/profile-page.mjs).
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const HOST = '127.0.0.1';
const demoDir = fileURLToPath(new URL('.', import.meta.url));
const jsDir = fileURLToPath(new URL('../js/', import.meta.url));
const benchDir = fileURLToPath(new URL('../bench/browser/', import.meta.url));

const mounts = [
  // SILT_DIST_DIR: siltdb's bundles made of another build of the wasm
  // (scripts/leak-check.sh's leaking one), served instead of js/dist (the
  // first mount whose prefix matches serves).
  ...(process.env.SILT_DIST_DIR ? [{ prefix: '/siltdb/dist/', dir: process.env.SILT_DIST_DIR }] : []),
  // SILT_AB_DIST_DIR: a second build of siltdb's js/dist beside the first,
  // for A/B runs in one page (bench/run/profile-page.mjs --ab).
  ...(process.env.SILT_AB_DIST_DIR ? [{ prefix: '/siltdb/dist-b/', dir: process.env.SILT_AB_DIST_DIR }] : []),
  { prefix: '/siltdb/dist/', dir: join(jsDir, 'dist') },
  { prefix: '/siltdb/pkg/', dir: join(jsDir, 'pkg') },
  { prefix: '/bench/', dir: benchDir },
  { prefix: '/', dir: demoDir },
];
// Browser builds of the benchmark page's npm dependencies (demo/package.json),
// where npm installed them. A package that is missing leaves its prefix
// unserved (404), and the benchmark page says which engine could not load.
const requireHere = createRequire(import.meta.url);
for (const [prefix, pkg] of [
  ['/vendor/sqlite-wasm/', '@sqlite.org/sqlite-wasm'],
  ['/vendor/chart/', 'chart.js'],
]) {
  try {
    mounts.unshift({ prefix, dir: dirname(requireHere.resolve(pkg)) });
  } catch {
    console.error(`demo server: ${pkg} is not installed (npm ci); ${prefix} is not served`);
  }
}
const benchEnginesDir = join(benchDir, 'engines');
// The browser tests' harness pages (tests/pages), the scenarios both APIs
// share (js/test/scenarios: plain ES modules, the same files vitest runs)
// and the test-only wasm build (scripts/build.sh --tests), only when asked
// for.
if (process.env.SILT_TEST_PAGES === '1') {
  mounts.unshift({ prefix: '/test-pages/', dir: fileURLToPath(new URL('../tests/pages/', import.meta.url)) });
  mounts.unshift({ prefix: '/test-scenarios/', dir: join(jsDir, 'test/scenarios') });
  mounts.unshift({ prefix: '/test-pkg/', dir: fileURLToPath(new URL('../target/test-pkg/', import.meta.url)) });
}

const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  // instantiateStreaming refuses anything else.
  '.wasm': 'application/wasm',
};

const maxAge = process.env.SILT_HTTP_MAX_AGE;
if (maxAge !== undefined && !/^\d+$/.test(maxAge)) {
  console.error(`SILT_HTTP_MAX_AGE must be a number of seconds, got ${JSON.stringify(maxAge)}`);
  process.exit(2);
}
/** How long the browser may keep a file (see SILT_HTTP_MAX_AGE above). */
const caching = {
  ...(maxAge === undefined ? { 'cache-control': 'no-store' } : { 'cache-control': `max-age=${maxAge}` }),
  ...(process.env.SILT_HTTP_ISOLATE === '1' ? { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' } : {}),
};

/** The file a URL path names, or undefined if it is outside every mount. */
function resolve(pathname) {
  const mount = mounts.find((m) => pathname.startsWith(m.prefix));
  if (!mount) return undefined;
  let rest = pathname.slice(mount.prefix.length);
  if (rest === '' || rest.endsWith('/')) rest += 'index.html';
  const file = normalize(join(mount.dir, rest));
  if (!file.startsWith(mount.dir.endsWith(sep) ? mount.dir : mount.dir + sep)) return undefined;
  if (mount.dir === demoDir && /(^|[/\\])(node_modules|server\.mjs|package\.json)/.test(rest)) return undefined;
  return file;
}

const server = createServer(async (req, res) => {
  const send = (status, body) => {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(body);
  };
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
  let pathname;
  try {
    pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://localhost').pathname);
  } catch {
    return send(400, 'bad request\n');
  }
  if (pathname === '/bench/engines/') {
    // The engine adapters the benchmark can run: adding an engine is adding a file.
    const names = await readdir(benchEnginesDir).catch(() => []);
    const ids = names
      .filter((n) => /^[a-z0-9][a-z0-9_-]*\.js$/.test(n))
      .map((n) => n.slice(0, -3))
      .sort();
    const body = JSON.stringify(ids);
    res.writeHead(200, { 'content-type': types['.json'], 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
    return res.end(req.method === 'HEAD' ? undefined : body);
  }
  const file = resolve(pathname);
  if (!file) return send(404, 'not found\n');
  let info;
  try {
    info = await stat(file);
  } catch {
    return send(404, 'not found\n');
  }
  if (!info.isFile()) return send(404, 'not found\n');
  res.writeHead(200, {
    'content-type': types[extname(file)] ?? 'application/octet-stream',
    'content-length': info.size,
    ...caching,
    ...(maxAge === undefined ? {} : { 'last-modified': info.mtime.toUTCString() }),
  });
  if (req.method === 'HEAD') return res.end();
  createReadStream(file)
    .on('error', () => res.destroy())
    .pipe(res);
});

const port = Number(process.env.PORT ?? 8080);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`PORT must be a port number, got ${JSON.stringify(process.env.PORT)}`);
  process.exit(2);
}
server.on('error', (err) => {
  console.error(`demo server: ${err.message}`);
  process.exit(1);
});
server.listen(port, HOST, () => {
  const { port: actual } = server.address();
  console.log(`Silt demo: http://${HOST}:${actual}/`);
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
