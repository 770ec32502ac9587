/**
 * `siltdb/esbuild`: the one line an esbuild build needs to ship siltdb.
 *
 * siltdb finds its workers and its `.wasm` next to the code that uses them
 * (`new URL('./worker.js', import.meta.url)`, the pattern browsers, Vite and
 * webpack understand). esbuild leaves such URLs alone (evanw/esbuild#795),
 * so after bundling they point next to the app's own output files, where
 * nothing is. This plugin puts them there: it adds siltdb's two worker
 * entry points to the build (bundled like the app's code, as `worker.js`
 * and `broker.js` in `outdir`) and copies `silt_wasm_bg.wasm` into `outdir`
 * after each successful build.
 *
 * ```js
 * import { build } from 'esbuild';
 * import siltdb from 'siltdb/esbuild';
 *
 * await build({ entryPoints: ['src/main.js', 'src/app-worker.js'], bundle: true,
 *   format: 'esm', outdir: 'dist', plugins: [siltdb()] });
 * ```
 *
 * It needs `format: 'esm'` (the code keeps `import.meta.url`), `outdir`
 * (not `outfile`: the build has several outputs), the default `entryNames`
 * (no hashes or folders in the names of siltdb's workers), and the app's
 * bundles that use siltdb written directly into `outdir`, not into folders
 * below it; an entry point of the app's own named `worker` or `broker`
 * would collide with siltdb's. It copies the `.wasm` after a build that
 * writes its files: with `write: false` (or esbuild's `serve` without a
 * `servedir`), serve `silt_wasm_bg.wasm` from the package's `dist/` yourself.
 */

/** The part of esbuild's `PluginBuild` this plugin uses. */
export interface EsbuildPluginBuild {
  initialOptions: {
    entryPoints?: (string | { in: string; out: string })[] | Record<string, string>;
    entryNames?: string;
    outdir?: string;
    outfile?: string;
    format?: string;
    write?: boolean;
    absWorkingDir?: string;
  };
  onEnd(callback: (result: { errors: unknown[] }) => void): void;
}

/** An esbuild plugin (the shape of esbuild's `Plugin`). */
export interface EsbuildPlugin {
  name: string;
  setup(build: EsbuildPluginBuild): void;
}

interface NodeModules {
  url: { fileURLToPath(url: URL): string };
  fs: { copyFileSync(from: string, to: string): void; existsSync(path: string): boolean; mkdirSync(path: string, options: { recursive: true }): unknown };
  path: { resolve(...paths: string[]): string };
}

/** Node's built-ins, without an import a browser bundler would follow (Node 20.16+). */
function node(): NodeModules {
  const proc = (globalThis as { process?: { getBuiltinModule?: (name: string) => unknown } }).process;
  const get = (name: string) => proc?.getBuiltinModule?.(name) ?? fail('it runs in Node 20.19 or later, inside esbuild');
  return { url: get('node:url'), fs: get('node:fs'), path: get('node:path') } as NodeModules;
}

function fail(message: string): never {
  throw new Error(`siltdb/esbuild: ${message}`);
}

/** The esbuild plugin that ships siltdb's workers and WebAssembly module with the app. */
export default function siltdb(): EsbuildPlugin {
  return {
    name: 'siltdb',
    setup(build) {
      const o = build.initialOptions;
      if (o.outdir === undefined) fail("set outdir, not outfile: siltdb's workers and .wasm are written next to the app's bundles");
      if (o.format !== 'esm') fail("set format: 'esm': siltdb finds its workers and .wasm through import.meta.url");
      if (o.entryNames !== undefined && o.entryNames !== '[name]' && o.entryNames !== '[dir]/[name]') {
        fail(
          `entryNames '${o.entryNames}' would rename or move siltdb's worker.js and broker.js, which its code finds by name next to it: leave entryNames unset`,
        );
      }
      const { url, fs, path } = node();
      const file = (relative: string) => url.fileURLToPath(new URL(relative, import.meta.url));
      const worker = file('./worker.js');
      const broker = file('./broker.js');
      const entries = o.entryPoints ?? [];
      if (Array.isArray(entries)) {
        o.entryPoints = [...entries, { in: worker, out: 'worker' }, { in: broker, out: 'broker' }];
      } else {
        for (const out of ['worker', 'broker']) if (out in entries) fail(`an entry point named '${out}' would collide with siltdb's ${out}.js`);
        o.entryPoints = { ...entries, worker, broker };
      }
      const outdir = path.resolve(o.absWorkingDir ?? '.', o.outdir);
      build.onEnd((result) => {
        if (result.errors.length > 0 || o.write === false) return;
        fs.mkdirSync(outdir, { recursive: true });
        // Beside this file in the package (js/scripts/bundle.mjs puts it
        // there); in the repository's sources, where the build leaves it.
        const wasm = [file('./silt_wasm_bg.wasm'), file('../pkg/silt_wasm_bg.wasm')].find((f) => fs.existsSync(f)) ?? fail('silt_wasm_bg.wasm is missing');
        fs.copyFileSync(wasm, path.resolve(outdir, 'silt_wasm_bg.wasm'));
      });
    },
  };
}
