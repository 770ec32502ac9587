// The app built with webpack 5, with no configuration for siltdb.
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import webpack from 'webpack';
import { page } from './page.mjs';

const out = resolve('dist-webpack');
const stats = await new Promise((done, failed) =>
  webpack({ mode: 'production', entry: './src/main.js', output: { path: out, clean: true } }, (err, s) => (err ? failed(err) : done(s))),
);
if (stats.hasErrors() || stats.hasWarnings()) {
  console.error(stats.toString({ all: false, errors: true, warnings: true }));
  if (stats.hasErrors()) process.exit(1);
}
// webpack's bundle is a classic script (it finds its chunks through document.currentScript).
await writeFile(resolve(out, 'index.html'), page('<script src="./main.js"></script>'));
