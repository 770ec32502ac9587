// The framework bindings as shipped (issue 39, item 3): each a small entry
// of its own (at most 2 KB gzipped) that imports its framework and nothing
// of siltdb's code (it works on the handle it is given), and none of them
// reached from siltdb's main entry, so an app without React loads no
// React. What they do is tested in Chromium (tests/e2e/react.spec.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
/** Each binding's file, and what it imports (Svelte's store contract needs nothing). */
const BINDINGS: Record<string, string[]> = { 'react.js': ['react'], 'vue.js': ['vue'], 'svelte.js': [] };

/** The modules a file imports (static and dynamic). */
function importsOf(code: string): string[] {
  return [...code.matchAll(/(?:import|export)\s*(?:[^'"()]*?\sfrom\s*)?\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!);
}

describe('the framework bindings', () => {
  for (const [file, framework] of Object.entries(BINDINGS)) {
    test(`${file}: at most 2 KB gzipped, imports ${framework.join(', ') || 'nothing'} alone`, () => {
      const code = readFileSync(`${dist}${file}`);
      expect(gzipSync(code, { level: 9 }).length).toBeLessThanOrEqual(2048);
      expect(importsOf(code.toString())).toEqual(framework);
    });
  }

  test("siltdb's own files import no framework", () => {
    const shipped = readdirSync(dist).filter((f) => /^(index|worker|broker)\.js$|^silt-[A-Z0-9]+\.js$/.test(f));
    expect(shipped.length).toBeGreaterThanOrEqual(4);
    for (const f of shipped) {
      // (Minified: any string naming a framework's module would be it.)
      expect(readFileSync(`${dist}${f}`, 'utf8'), f).not.toMatch(/["'](react|react-dom|vue|svelte)(\/[^"']*)?["']/);
    }
  });
});
