// The shape of js/src (docs/architecture.md, "The package's files"): no
// import circles between its files, and no file past 600 lines (one concept
// per file; STYLE.md). Type-only imports count too: they are erased from
// the build and cannot form a circle at run time, but a circle of types
// still ties two concepts together that a reader has to take in at once.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src');
const MAX_LINES = 600;

/** Every .ts file under `dir`, as absolute paths. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/**
 * The files of js/src that `file` imports: every relative specifier of an
 * `import … from`, `export … from`, bare `import '…'`, `import('…')` or
 * `typeof import('…')`, type-only or not. Specifiers leaving js/src (the
 * generated bindings in js/pkg) are not edges of the graph.
 */
function importsOf(file: string, text: string, known: Set<string>): string[] {
  // Comments first: doc comments show imports in examples.
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
  const found = new Set<string>();
  const patterns = [/\bfrom\s*['"]([^'"]+)['"]/g, /\bimport\s*['"]([^'"]+)['"]/g, /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const pattern of patterns) {
    for (const m of code.matchAll(pattern)) {
      const spec = m[1]!;
      if (!spec.startsWith('.')) continue;
      const target = resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
      if (!target.startsWith(`${SRC}/`)) continue;
      if (!known.has(target)) throw new Error(`${relative(SRC, file)} imports ${spec}, which is not a file of js/src`);
      found.add(target);
    }
  }
  return [...found];
}

/** The circles of `graph`: one path through each strongly connected component of more than one file (or a file importing itself). */
function circles(graph: Map<string, string[]>): string[][] {
  // Tarjan's algorithm.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component);
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  // One circle through each component, from its first file back to it.
  return components.map((component) => {
    const members = new Set(component);
    const start = [...component].sort()[0]!;
    const from = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const v = queue.shift()!;
      for (const w of graph.get(v) ?? []) {
        if (!members.has(w)) continue;
        if (w === start) {
          const path = [start];
          for (let u = v; u !== start; u = from.get(u)!) path.splice(1, 0, u);
          return [...path, start];
        }
        if (!from.has(w)) {
          from.set(w, v);
          queue.push(w);
        }
      }
    }
    return component;
  });
}

describe('js/src', () => {
  const files = sources(SRC).sort();
  const texts = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));

  it('has files to check', () => {
    expect(files.length).toBeGreaterThan(10);
    expect(files.map((f) => relative(SRC, f))).toContain('index.ts');
  });

  it('has no import circles (type-only imports included)', () => {
    const known = new Set(files);
    const graph = new Map(files.map((f) => [f, importsOf(f, texts.get(f)!, known)]));
    const found = circles(graph).map((c) => c.map((f) => relative(SRC, f)).join(' -> '));
    expect(found).toEqual([]);
  });

  it(`has no file over ${MAX_LINES} lines`, () => {
    const long = files
      .map((f) => ({ file: relative(SRC, f), lines: texts.get(f)!.split('\n').length - (texts.get(f)!.endsWith('\n') ? 1 : 0) }))
      .filter((f) => f.lines > MAX_LINES)
      .map((f) => `${f.file}: ${f.lines} lines`);
    expect(long).toEqual([]);
  });

  it('finds a circle and a long file when there is one (the checks themselves)', () => {
    const a = join(SRC, 'a.ts');
    const b = join(SRC, 'b.ts');
    const c = join(SRC, 'c.ts');
    const known = new Set([a, b, c]);
    const graph = new Map([
      [a, importsOf(a, "import { b } from './b.js';\n// import { c } from './c.js';", known)],
      [b, importsOf(b, "import type { C } from './c.js';\n/** import { a } from './a.js' */", known)],
      [c, importsOf(c, "export { a } from './a.js';", known)],
    ]);
    expect(circles(graph).map((path) => path.map((f) => relative(SRC, f)).join(' -> '))).toEqual(['a.ts -> b.ts -> c.ts -> a.ts']);
    expect(importsOf(a, "const x = await import('./b.js'); import '../pkg/silt_wasm.js';", known)).toEqual([b]);
  });
});
