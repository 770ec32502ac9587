// The app built with esbuild: the one line siltdb needs is the plugin.
import { writeFile } from 'node:fs/promises';
import { build } from 'esbuild';
import siltdb from 'siltdb/esbuild';
import { page } from './page.mjs';

await build({
  entryPoints: ['src/main.js', 'src/app-worker.js'],
  bundle: true,
  format: 'esm',
  outdir: 'dist-esbuild',
  logLevel: 'warning',
  plugins: [siltdb()],
});
await writeFile('dist-esbuild/index.html', page('<script type="module" src="./main.js"></script>'));
