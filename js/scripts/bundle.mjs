// The package's browser entries as shipped: `tsc` writes one module per
// source file into dist/, then this bundles the three files a browser
// loads first (index.js, the page's entry; worker.js, siltdb's worker;
// broker.js, its SharedWorker) over them with esbuild, the code the entries
// share in one chunk beside them (dist/silt-<hash>.js), and the wasm-bindgen
// glue inside. A page then fetches three files where it fetched a hundred,
// each import a round to the HTTP cache (docs/bench/page.md: from 282 ms
// to under 90 ms to import siltdb on a return visit).
//
// The WebAssembly module is copied beside them (dist/silt_wasm_bg.wasm),
// where the glue's `new URL('silt_wasm_bg.wasm', import.meta.url)` finds it
// from the chunk, and where bundlers (Vite, webpack) and siltdb/esbuild
// find it too. Node's path to it (boundary/wasm.ts) is rewritten to the
// same place; the build fails if that line is not found.
//
// The unbundled modules stay in dist/ for the type declarations beside
// them (and the repository's own benchmarks); the package ships only the
// bundles (package.json "files").
//
//   node scripts/bundle.mjs            (from js/, after tsc; npm run build does both)
//   SILT_BUNDLE_NAMES=1 npm run build   (names kept: for profiles)
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const js = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(js, 'dist');
const ENTRIES = ['index', 'worker', 'broker'];
/** Node's path to the wasm, as boundary/wasm.ts writes it (from dist/boundary/), and as it must read from dist/. */
const NODE_WASM = ["'../../pkg/silt_wasm_bg.wasm'", "'./silt_wasm_bg.wasm'"];

const rewriteNodeWasm = {
  name: 'silt-node-wasm',
  setup(b) {
    b.onLoad({ filter: /[/\\]dist[/\\]boundary[/\\]wasm\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes(NODE_WASM[0])) throw new Error(`scripts/bundle.mjs: ${NODE_WASM[0]} is no longer in boundary/wasm.js: update NODE_WASM`);
      return { contents: text.replace(NODE_WASM[0], NODE_WASM[1]), loader: 'js' };
    });
  },
};

const result = await build({
  absWorkingDir: js,
  entryPoints: ENTRIES.map((e) => join(dist, `${e}.js`)),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  outdir: dist,
  chunkNames: 'silt-[hash]',
  // Minified (44 KB gzipped against 51 KB with names kept): errors say
  // what went wrong in their messages and codes, not in stack frames.
  // SILT_BUNDLE_NAMES=1 keeps the names, for a profile that reads.
  minifyWhitespace: true,
  minifySyntax: true,
  minifyIdentifiers: process.env.SILT_BUNDLE_NAMES !== '1',
  legalComments: 'none',
  write: false,
  metafile: true,
  logLevel: 'warning',
  plugins: [rewriteNodeWasm],
});
const written = [];
for (const f of result.outputFiles) {
  writeFileSync(f.path, f.contents);
  written.push(relative(dist, f.path));
}
copyFileSync(join(js, 'pkg', 'silt_wasm_bg.wasm'), join(dist, 'silt_wasm_bg.wasm'));
const size = (w) => `${w} ${(result.outputFiles.find((f) => relative(dist, f.path) === w).contents.length / 1024).toFixed(1)} KiB`;
process.stderr.write(`[bundle] ${written.map(size).join(', ')}\n`);
