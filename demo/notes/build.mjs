// Bundles Silt Notes (demo/notes/app.jsx) into demo/notes/dist/ with
// esbuild and siltdb/esbuild (which ships siltdb's workers and .wasm beside
// the app's bundle), as an app using siltdb from npm builds. Run by
// scripts/build.sh after the package is built.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import siltdb from 'siltdb/esbuild';

const here = fileURLToPath(new URL('.', import.meta.url));
rmSync(`${here}dist`, { recursive: true, force: true });
await build({
  absWorkingDir: here,
  entryPoints: ['app.jsx'],
  bundle: true,
  format: 'esm',
  outdir: 'dist',
  jsx: 'automatic',
  target: 'es2022',
  minify: true,
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
  plugins: [siltdb()],
});
