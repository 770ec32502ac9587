// Packaging: the tarball of `npm pack` in js/ installs into a fresh app
// (tests/package-app), which each bundler builds as its users would: Vite
// (production build and dev server) and webpack 5 with no configuration
// for siltdb, esbuild with siltdb's plugin (`siltdb/esbuild`, its one
// line). In Chromium each app's own worker opens a database on OPFS with
// open() and its page uses connect(), whose workers and .wasm the bundler
// found inside the package. The app then hides what siltdb needs (SIMD128,
// OPFS sync access handles) the way a browser without it would, and open()
// must fail with a typed NotSupported that names it, or keep the database
// in IndexedDB (sync access handles; OPFS or nothing where the app asks).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, createReadStream, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, type Page, test } from '@playwright/test';
import type { Plugin } from 'esbuild';
import siltdb from '../../js/src/esbuild.js';

// siltdb/esbuild's plugin is an esbuild Plugin to TypeScript (checked by
// tsc over the tests; the fixture app itself is JavaScript).
export const typedAsEsbuildPlugin: Plugin = siltdb();

const repo = fileURLToPath(new URL('../../', import.meta.url));
const versionOf = (name: string) =>
  (JSON.parse(spawnSync('node', ['-p', `JSON.stringify(require("${name}/package.json"))`], { cwd: repo, encoding: 'utf8' }).stdout) as { version: string })
    .version;

let app: string;

/** Runs a command; its stdout (and stderr after it, with `both`), or throws with them. */
function sh(cmd: string, args: string[], cwd: string, timeoutMs: number, both = false): string {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return both ? `${r.stdout}\n${r.stderr}` : r.stdout;
}

/** What a build printed, less npm's own notices about this machine's config. */
const buildOutput = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '' && !/^npm warn Unknown \w+ config/.test(l))
    .join('\n');

function serve(dir: string): Promise<{ server: Server; url: string }> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };
  const server = createServer((req, res) => {
    const path = normalize(join(dir, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)));
    const file = path.endsWith('/') ? join(path, 'index.html') : path;
    if (!file.startsWith(dir) || !statSync(file, { throwIfNoEntry: false })?.isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` })));
}

test.describe.configure({ mode: 'serial', timeout: 300_000 });

test.beforeAll(async () => {
  app = mkdtempSync(join(tmpdir(), 'silt-app-'));
  const packed = JSON.parse(sh('npm', ['pack', '--json', '--pack-destination', app], join(repo, 'js'), 60_000)) as {
    filename: string;
    files: { path: string }[];
  }[];
  const tarball = packed[0]!;
  // The tarball holds the built package and the wasm, and nothing private.
  const paths = tarball.files.map((f) => f.path);
  // The browser's files are bundles (js/scripts/bundle.mjs): the entries,
  // the chunks they share or load with import() where needed (the
  // IndexedDB storage) and the wasm beside them; the unbundled modules stay
  // out of it.
  expect(paths).toContain('dist/silt_wasm_bg.wasm');
  expect(paths).toContain('dist/index.js');
  expect(paths).toContain('dist/worker.js');
  expect(paths).toContain('dist/broker.js');
  expect(paths).toContain('dist/esbuild.js');
  expect(paths.filter((p) => /^dist\/silt-[A-Z0-9]+\.js$/.test(p)).length).toBeGreaterThanOrEqual(2);
  expect(paths.filter((p) => p.endsWith('.js') && !/^dist\/[^/]+\.js$/.test(p))).toEqual([]);
  expect(paths).toContain('dist/index.d.ts');
  expect(paths.some((p) => p.startsWith('src/') || p.startsWith('test/'))).toBe(false);

  cpSync(fileURLToPath(new URL('../package-app/', import.meta.url)), app, { recursive: true });
  // The bundlers at the versions the workspace locked (so the install comes
  // from npm's cache), siltdb from the tarball.
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify(
      {
        name: 'silt-app',
        private: true,
        type: 'module',
        dependencies: { siltdb: `file:./${tarball.filename}` },
        devDependencies: { vite: versionOf('vite'), webpack: versionOf('webpack'), esbuild: versionOf('esbuild') },
      },
      null,
      2,
    ),
  );
  sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], app, 240_000);
});

test.afterAll(() => {
  if (app) rmSync(app, { recursive: true, force: true });
});

/** Loads the app twice (the count of visits is kept on OPFS) and checks both round trips. */
async function roundTrips(page: Page, url: string): Promise<string[]> {
  const requests: string[] = [];
  page.on('response', (r) => {
    if (/\.(wasm|js)$/.test(new URL(r.url()).pathname)) requests.push(`${r.status()} ${new URL(r.url()).pathname}`);
  });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  for (const visits of [1, 2]) {
    await page.goto(url);
    await expect(page.locator('body')).toHaveAttribute('data-state', 'done', { timeout: 30_000 });
    const out = JSON.parse((await page.locator('#out').textContent())!);
    expect(out).toEqual({ worker: { visits, persistent: true, memory: 'fixed', storage: 'opfs' }, connect: 'via connect' });
  }
  expect(problems).toEqual([]);
  // Everything the app fetched was there: the .wasm, the app's worker,
  // siltdb's own worker and its SharedWorker broker (a missing broker
  // would only slow connect() down, so look for it).
  for (const r of requests) expect(r).toMatch(/^(200|304) /);
  expect(requests.some((r) => r.endsWith('.wasm'))).toBe(true);
  return requests;
}

/**
 * With `hide`, open() in the app's worker must fail with NotSupported
 * naming what is missing (SIMD128; sync access handles where the app
 * requires OPFS), or keep the database in IndexedDB (no sync access
 * handles, or a backend that refuses them, as WebKitGTK 2.50's does).
 */
async function refusals(page: Page, url: string): Promise<void> {
  type Out = { worker: { error?: { code: string; message: string }; storage?: string; visits?: number } };
  const visit = async (query: string): Promise<Out> => {
    await page.goto(`${url}?${query}`);
    await expect(page.locator('body')).toHaveAttribute('data-state', 'done', { timeout: 30_000 });
    return JSON.parse((await page.locator('#out').textContent())!) as Out;
  };
  const cases: [string, RegExp][] = [
    ['hide=simd', /WebAssembly SIMD128/],
    ['hide=sync-access-handles&require=opfs', /createSyncAccessHandle/],
    ['hide=sync-access-backend&require=opfs', /FileSystemSyncAccessHandle/],
  ];
  for (const [query, names] of cases) {
    const out = await visit(query);
    expect(out.worker.error?.code, `${query}: ${JSON.stringify(out)}`).toBe('NotSupported');
    expect(out.worker.error?.message).toMatch(names);
  }
  for (const hide of ['sync-access-handles', 'sync-access-backend']) {
    for (const visits of [1, 2]) {
      const out = await visit(`hide=${hide}`);
      expect(out.worker, `${hide}: ${JSON.stringify(out)}`).toMatchObject({ storage: 'indexeddb', visits, persistent: true });
    }
  }
}

// `broker`: the file the bundler made of siltdb's SharedWorker broker (a
// missing one would only slow connect() down, so each build is checked for it).
const builds: { name: string; build: string[]; out: string; broker: RegExp; warnings?: RegExp }[] = [
  { name: 'Vite build', build: ['npx', '--no-install', 'vite', 'build', '--logLevel', 'warn'], out: 'dist-vite', broker: /^assets\/broker-[\w-]+\.js$/ },
  // webpack's size hints are about any app with a 600 KB .wasm, not about siltdb.
  {
    name: 'webpack 5',
    build: ['node', 'build-webpack.mjs'],
    out: 'dist-webpack',
    // webpack names a worker's chunk by its `name` option (`siltdb-broker-<tab protocol>`).
    broker: /^siltdb-broker-\d+\.js$/,
    warnings: /asset size limit|entrypoint size limit|\(\d+ KiB\)|^Assets: |^This can impact|^ {2}\S/,
  },
  { name: 'esbuild', build: ['node', 'build-esbuild.mjs'], out: 'dist-esbuild', broker: /^broker\.js$/ },
];

for (const b of builds) {
  test.describe(b.name, () => {
    let server: Server | undefined;
    let url: string;

    test.beforeAll(async () => {
      const printed = buildOutput(sh(b.build[0]!, b.build.slice(1), app, 120_000, true));
      const unexpected = printed.split('\n').filter((l) => l !== '' && !(b.warnings?.test(l) ?? false));
      expect(unexpected, `${b.name} printed warnings`).toEqual([]);
      ({ server, url } = await serve(join(app, b.out)));
    });

    test.afterAll(async () => {
      await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    });

    test(`an app built with ${b.name}: open() in its worker, connect() on its page`, async ({ page }) => {
      const files = readdirSync(join(app, b.out), { recursive: true }).map(String);
      expect(files.some((f) => f.endsWith('.wasm'))).toBe(true);
      expect(
        files.filter((f) => b.broker.test(f)),
        `${b.name} bundled siltdb's broker: ${files.join(', ')}`,
      ).toHaveLength(1);
      const requests = await roundTrips(page, url);
      // The page's bundle, the app's worker and siltdb's worker are files of
      // their own (the broker, a SharedWorker, is not the page's request).
      expect(new Set(requests.filter((r) => r.endsWith('.js'))).size).toBeGreaterThanOrEqual(3);
    });

    test(`an app built with ${b.name}: a browser without what siltdb needs gets NotSupported, one without sync access handles IndexedDB`, async ({ page }) => {
      await refusals(page, url);
    });
  });
}

test.describe('Vite dev server', () => {
  let vite: ChildProcess | undefined;
  let url: string;
  let printed = '';

  test.beforeAll(async () => {
    const { server: probe } = await serve(app);
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    vite = spawn('npx', ['--no-install', 'vite', '--port', String(port), '--strictPort', '--host', '127.0.0.1'], {
      cwd: app,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'FORCE_COLOR')), NO_COLOR: '1' },
    });
    vite.stdout!.on('data', (d: Buffer) => (printed += d.toString()));
    vite.stderr!.on('data', (d: Buffer) => (printed += d.toString()));
    url = `http://127.0.0.1:${port}/`;
    const deadline = Date.now() + 60_000;
    while (!printed.includes(url)) {
      if (Date.now() > deadline || vite.exitCode !== null) throw new Error(`vite did not start:\n${printed}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  test.afterAll(() => {
    if (vite?.pid !== undefined && vite.exitCode === null) process.kill(-vite.pid, 'SIGKILL');
  });

  test('an app on the Vite dev server: open() in its worker, connect() on its page', async ({ page }) => {
    await roundTrips(page, url);
    expect(
      buildOutput(printed)
        .split('\n')
        .filter((l) => /warn|error/i.test(l)),
    ).toEqual([]);
  });

  test('an app on the Vite dev server: a browser without what siltdb needs gets NotSupported, one without sync access handles IndexedDB', async ({ page }) => {
    await refusals(page, url);
  });
});
