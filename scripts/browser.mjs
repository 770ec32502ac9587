// What the scripts and the browser tests share about the browser side:
// how Chromium starts (Debian's build, never a downloaded one, with nothing
// that reaches the network; tests/chromium.ts re-exports it), and starting
// the demo server (demo/server.mjs) on a free port.
import { spawn } from 'node:child_process';

export const executablePath = '/usr/bin/chromium';
export const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Starts demo/server.mjs (from the repository root) on a free port; with
 * `testPages`, tests/pages is served at /test-pages/ too; with `httpMaxAge`
 * (seconds), files may be kept in the browser's HTTP cache that long
 * (otherwise never). Resolves to the server process and its URL once it
 * listens.
 */
export function startDemoServer({ testPages = false, httpMaxAge } = {}) {
  return new Promise((resolve, reject) => {
    const env = {
      ...process.env,
      PORT: '0',
      ...(testPages ? { SILT_TEST_PAGES: '1' } : {}),
      ...(httpMaxAge === undefined ? {} : { SILT_HTTP_MAX_AGE: String(httpMaxAge) }),
    };
    const server = spawn(process.execPath, ['demo/server.mjs'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = /Silt demo: (http:\/\/\S+)/.exec(out);
      if (m) resolve({ server, url: m[1] });
    });
    server.on('exit', (code) => reject(new Error(`the demo server exited (${code}) before listening`)));
  });
}
