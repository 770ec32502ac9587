// Packaging: the tarball of `npm pack` in js/ installs into a fresh Vite
// app, Vite bundles it (the .wasm found through the package's own
// `new URL(..., import.meta.url)`, no copying), and in Chromium the app's
// worker opens a database on OPFS while the page uses connect().
import { spawnSync } from 'node:child_process';
import { cpSync, createReadStream, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from '@playwright/test';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const viteVersion = (
  JSON.parse(spawnSync('node', ['-p', 'JSON.stringify(require("vite/package.json"))'], { cwd: repo, encoding: 'utf8' }).stdout) as { version: string }
).version;

let app: string;
let server: Server;
let url: string;

function sh(cmd: string, args: string[], cwd: string, timeoutMs: number): string {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

test.describe.configure({ timeout: 300_000 });

test.beforeAll(async () => {
  app = mkdtempSync(join(tmpdir(), 'silt-vite-app-'));
  const packed = JSON.parse(sh('npm', ['pack', '--json', '--pack-destination', app], join(repo, 'js'), 60_000)) as {
    filename: string;
    files: { path: string }[];
  }[];
  const tarball = packed[0]!;
  // The tarball holds the built package and the wasm, and nothing private.
  const paths = tarball.files.map((f) => f.path);
  expect(paths).toContain('pkg/silt_wasm_bg.wasm');
  expect(paths).toContain('dist/index.js');
  expect(paths).toContain('dist/worker.js');
  expect(paths.some((p) => p.startsWith('pkg/snippets/'))).toBe(true);
  expect(paths.some((p) => p.startsWith('src/') || p.startsWith('test/'))).toBe(false);

  cpSync(fileURLToPath(new URL('../package-app/', import.meta.url)), app, { recursive: true });
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify(
      { name: 'silt-vite-app', private: true, type: 'module', dependencies: { siltdb: `file:./${tarball.filename}` }, devDependencies: { vite: viteVersion } },
      null,
      2,
    ),
  );
  sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], app, 240_000);
  sh('npx', ['--no-install', 'vite', 'build', '--logLevel', 'warn'], app, 120_000);

  const dist = join(app, 'dist');
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };
  server = createServer((req, res) => {
    const path = normalize(join(dist, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)));
    const file = path.endsWith('/') ? join(path, 'index.html') : path;
    if (!file.startsWith(dist) || !statSync(file, { throwIfNoEntry: false })?.isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

test.afterAll(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  if (app) rmSync(app, { recursive: true, force: true });
});

test('a Vite app bundles siltdb; its worker opens a database on OPFS and the page uses connect()', async ({ page }) => {
  const assets = readdirSync(join(app, 'dist', 'assets'));
  expect(assets.some((f) => f.endsWith('.wasm'))).toBe(true);
  const wasmRequests: string[] = [];
  page.on('response', (r) => {
    if (r.url().endsWith('.wasm')) wasmRequests.push(`${r.status()} ${new URL(r.url()).pathname}`);
  });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));

  for (const visits of [1, 2]) {
    await page.goto(url);
    await expect(page.locator('body')).toHaveAttribute('data-state', 'done', { timeout: 20_000 });
    const out = JSON.parse((await page.locator('#out').textContent())!);
    expect(out).toEqual({ worker: { visits, persistent: true, memory: 'fixed' }, connect: 'via connect' });
  }
  expect(wasmRequests.length).toBeGreaterThan(0);
  for (const r of wasmRequests) expect(r).toMatch(/^200 \/assets\/.+\.wasm$/);
  expect(problems).toEqual([]);
});
