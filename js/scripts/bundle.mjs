// The package's browser entries as shipped: esbuild bundles the three files
// a browser loads first (index.js, the page's entry; worker.js, siltdb's
// worker; broker.js, its SharedWorker) from js/src, the code they share in
// one chunk beside them (silt-<hash>.js) and the wasm-bindgen glue inside,
// into dist/ (over tsc's modules of the same names: npm run build runs tsc
// first, for the type declarations). A page then fetches a few files where
// it fetched a hundred, each import a round to the HTTP cache
// (docs/bench/page.md: 282 ms to import siltdb on a return visit before,
// under 90 ms after).
//
// The WebAssembly module is copied beside them (silt_wasm_bg.wasm), where
// the glue's `new URL('silt_wasm_bg.wasm', import.meta.url)` finds it from
// the chunk, and where bundlers (Vite, webpack) and siltdb/esbuild find it
// too. Node's path to it (boundary/wasm.ts) is rewritten to the same place;
// the build fails if that line is not found.
//
// The unbundled modules stay in dist/ for the type declarations beside
// them (and the repository's own benchmarks); the package ships the
// bundles, the wasm, esbuild.js and the declarations, not those modules
// (package.json "files").
//
//   node scripts/bundle.mjs                    (from js/; npm run build runs it after tsc)
//   node scripts/bundle.mjs --pkg DIR --out DIR (another wasm build's glue and module,
//                                                bundled elsewhere: scripts/leak-check.sh)
//   SILT_BUNDLE_NAMES=1 npm run build           (names kept: for profiles)
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const js = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({ options: { pkg: { type: 'string' }, out: { type: 'string' } } });
const pkg = resolve(args.pkg ?? join(js, 'pkg'));
const out = resolve(args.out ?? join(js, 'dist'));
const ENTRIES = ['index', 'worker', 'broker'];
/** Node's path to the wasm, as boundary/wasm.ts writes it (from src/boundary/), and as it must read from the bundle. */
const NODE_WASM = ["'../../pkg/silt_wasm_bg.wasm'", "'./silt_wasm_bg.wasm'"];

const plugin = {
  name: 'silt-bundle',
  setup(b) {
    // The glue of the wasm build being bundled.
    b.onResolve({ filter: /[/\\]pkg[/\\]silt_wasm\.js$/ }, () => ({ path: join(pkg, 'silt_wasm.js') }));
    b.onLoad({ filter: /[/\\]src[/\\]boundary[/\\]wasm\.ts$/ }, (a) => {
      const text = readFileSync(a.path, 'utf8');
      if (!text.includes(NODE_WASM[0])) throw new Error(`scripts/bundle.mjs: ${NODE_WASM[0]} is no longer in boundary/wasm.ts: update NODE_WASM`);
      return { contents: text.replace(NODE_WASM[0], NODE_WASM[1]), loader: 'ts' };
    });
  },
};

const result = await build({
  absWorkingDir: js,
  entryPoints: ENTRIES.map((e) => join(js, 'src', `${e}.ts`)),
  tsconfig: join(js, 'tsconfig.json'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  outdir: out,
  chunkNames: 'silt-[hash]',
  // Minified (44 KB gzipped against 51 KB with names kept): errors say
  // what went wrong in their messages and codes, not in stack frames.
  minifyWhitespace: true,
  minifySyntax: true,
  minifyIdentifiers: process.env.SILT_BUNDLE_NAMES !== '1',
  legalComments: 'none',
  write: false,
  logLevel: 'warning',
  plugins: [plugin],
});
mkdirSync(out, { recursive: true });
// The chunk of an earlier bundle (its hash in its name) would ship beside this one's.
for (const old of readdirSync(out)) if (/^silt-[A-Z0-9]+\.js$/.test(old)) rmSync(join(out, old));
// tsc's worker.js (its imports the other modules of dist/), kept as
// worker.modules.js before the bundle takes its name: the repository's
// profiles (bench/browser/page/timed-worker.js) run it to time the leader's
// classes, which a bundle does not expose. Not in the package.
const tscWorker = join(out, 'worker.js');
if (existsSync(tscWorker) && readFileSync(tscWorker, 'utf8').includes("from './tabs/leader.js'")) copyFileSync(tscWorker, join(out, 'worker.modules.js'));
for (const f of result.outputFiles) writeFileSync(f.path, f.contents);
copyFileSync(join(pkg, 'silt_wasm_bg.wasm'), join(out, 'silt_wasm_bg.wasm'));
const size = (f) => `${relative(out, f.path)} ${(f.contents.length / 1024).toFixed(1)} KiB`;
process.stderr.write(`[bundle] ${relative(process.cwd(), out) || '.'}: ${result.outputFiles.map(size).join(', ')}\n`);
