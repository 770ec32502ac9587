// siltdb/esbuild: what the plugin does to an esbuild build's options, and
// its refusals. (tests/e2e/package.spec.ts builds and runs a real app with it.)
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import siltdb, { type EsbuildPluginBuild } from '../src/esbuild.js';

function fakeBuild(initialOptions: EsbuildPluginBuild['initialOptions']) {
  const ends: ((r: { errors: unknown[] }) => void)[] = [];
  const build: EsbuildPluginBuild = { initialOptions, onEnd: (cb) => ends.push(cb) };
  const end = (errors: unknown[] = []) => {
    for (const cb of ends) cb({ errors });
  };
  return { build, end };
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('siltdb/esbuild', () => {
  it("adds siltdb's workers as entry points and copies the .wasm into outdir after a build", () => {
    const outdir = mkdtempSync(join(tmpdir(), 'silt-esbuild-'));
    dirs.push(outdir);
    const { build, end } = fakeBuild({ entryPoints: ['src/main.js'], format: 'esm', outdir });
    siltdb().setup(build);
    const entries = build.initialOptions.entryPoints as (string | { in: string; out: string })[];
    expect(entries[0]).toBe('src/main.js');
    expect(entries.slice(1).map((e) => typeof e === 'object' && e.out)).toEqual(['worker', 'broker']);
    expect(entries.slice(1).every((e) => typeof e === 'object' && /[/\\](worker|broker)\.js$/.test(e.in))).toBe(true);
    end([{ text: 'a failed build' }]);
    expect(existsSync(join(outdir, 'silt_wasm_bg.wasm'))).toBe(false);
    end();
    const copied = readFileSync(join(outdir, 'silt_wasm_bg.wasm'));
    expect(copied.subarray(0, 4)).toEqual(Buffer.from([0, 0x61, 0x73, 0x6d]));
  });

  it('adds named entries to an object of entry points, and refuses one that would collide', () => {
    const { build } = fakeBuild({ entryPoints: { app: 'src/main.js' }, format: 'esm', outdir: 'dist', write: false });
    siltdb().setup(build);
    expect(Object.keys(build.initialOptions.entryPoints as object)).toEqual(['app', 'worker', 'broker']);
    const clash = fakeBuild({ entryPoints: { worker: 'src/worker.js' }, format: 'esm', outdir: 'dist' });
    expect(() => siltdb().setup(clash.build)).toThrow(/entry point named 'worker' would collide/);
  });

  it('says what to set when the build cannot ship siltdb', () => {
    expect(() => siltdb().setup(fakeBuild({ entryPoints: ['a.js'], format: 'esm', outfile: 'out.js' }).build)).toThrow(/set outdir, not outfile/);
    expect(() => siltdb().setup(fakeBuild({ entryPoints: ['a.js'], format: 'iife', outdir: 'dist' }).build)).toThrow(/set format: 'esm'/);
    expect(() => siltdb().setup(fakeBuild({ entryPoints: ['a.js'], format: 'esm', outdir: 'dist', entryNames: '[name]-[hash]' }).build)).toThrow(
      /entryNames '\[name\]-\[hash\]' would rename/,
    );
    // The default, spelled out, is fine.
    const named = fakeBuild({ entryPoints: ['a.js'], format: 'esm', outdir: 'dist', entryNames: '[name]', write: false });
    siltdb().setup(named.build);
  });
});
